// qmatmul (MatMulInteger / QLinearMatMul), DynamicQuantizeLinear, and the two linear layers.
#include "core/error.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/parallel.hpp"
#include "ops/qops.hpp"
#include "ops/quantize.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace qnt::ops {
namespace {

// Rows per task: enough work per task to pay for a thread's start, at least one row.
size_t row_grain(int64_t n, int64_t k) {
  const int64_t work = std::max<int64_t>(1, n) * std::max<int64_t>(1, k);
  return static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 16) / work));
}

// For each index of the broadcast batch shape `out`, the flat index into batch shape `in`
// (numpy broadcasting: shapes aligned at the right, size-1 dimensions repeat).
std::vector<int64_t> broadcast_index(const std::vector<int64_t> &in,
                                     const std::vector<int64_t> &out) {
  int64_t count = 1;
  for (int64_t d : out) count *= d;
  std::vector<int64_t> idx(static_cast<size_t>(count));
  const size_t shift = out.size() - in.size();
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t rest = flat, offset = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      const int64_t i = rest % out[d];
      rest /= out[d];
      if (d >= shift) {
        const int64_t size = in[d - shift];
        offset += (size == 1 ? 0 : i) * stride;
        stride *= size;
      }
    }
    idx[static_cast<size_t>(flat)] = offset;
  }
  return idx;
}

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t> &a,
                                      const std::vector<int64_t> &b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(QNT_ERR_SHAPE_MISMATCH, "batch dimensions ", shape_string(a), " and ", shape_string(b),
           " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Writes one row of accumulators to y in the requested mode, for output channels indexed by
// column n.
struct Epilogue {
  OutputMode mode = OutputMode::Int32;
  const int32_t *bias_i32 = nullptr;
  const float *bias_f32 = nullptr;
  std::vector<float> multiplier;  // Requantize: per column; Float: per column scale sa * sb[n]
  int32_t zy = 0, qmin = 0, qmax = 0;

  void row(const int32_t *acc, int64_t n_count, uint8_t *y_row_bytes) const {
    for (int64_t n = 0; n < n_count; ++n) {
      const auto c = static_cast<size_t>(n);
      const int32_t a = bias_i32 != nullptr ? ref::wrap_add(acc[n], bias_i32[n]) : acc[n];
      switch (mode) {
        case OutputMode::Int32:
          std::memcpy(y_row_bytes + 4 * n, &a, 4);
          break;
        case OutputMode::Requantize:
          ref::store_element(y_row_bytes, c, 8, ref::requantize(a, multiplier[c], zy, qmin, qmax));
          break;
        case OutputMode::Float: {
          const float v =
              ref::acc_to_float(a, multiplier[c], bias_f32 != nullptr ? bias_f32[n] : 0.0f);
          std::memcpy(y_row_bytes + 4 * n, &v, 4);
          break;
        }
      }
    }
  }
};

Epilogue make_epilogue(OutputMode mode, const Tensor &y, const Tensor *bias, float sa,
                       const std::vector<float> &sb) {
  Epilogue e;
  e.mode = mode;
  if (bias != nullptr) {
    if (bias->dtype() == QNT_DTYPE_I32)
      e.bias_i32 = reinterpret_cast<const int32_t *>(bias->data());
    else
      e.bias_f32 = reinterpret_cast<const float *>(bias->data());
  }
  if (mode == OutputMode::Requantize) {
    const float sy = y.qparams()->scales()[0];
    e.zy = y.qparams()->zero_points()[0];
    e.qmin = y.info().qmin;
    e.qmax = y.info().qmax;
    for (float s : sb) e.multiplier.push_back(ref::requant_multiplier(sa, s, sy));
  } else if (mode == OutputMode::Float) {
    for (float s : sb) e.multiplier.push_back(sa * s);
  }
  return e;
}

ref::Int8Matrix int8_matrix(const Tensor &t, int64_t offset_elems, int64_t row_stride,
                            int64_t col_stride) {
  ref::Int8Matrix m;
  m.data = t.data() + offset_elems;
  m.is_signed = t.info().is_signed;
  m.row_stride = row_stride;
  m.col_stride = col_stride;
  return m;
}

// x [..., K] as rows of K: the row count, checking y is [..., N].
int64_t linear_rows(const Tensor &x, const Tensor &w, const Tensor &y, int64_t &k, int64_t &n) {
  if (x.rank() < 1) fail(QNT_ERR_SHAPE_MISMATCH, "x must have at least one dimension");
  if (w.rank() != 2) fail(QNT_ERR_SHAPE_MISMATCH, "w must be [N, K], not ", shape_string(w.dims()));
  n = w.dims()[0];
  k = w.dims()[1];
  if (x.dims().back() != k)
    fail(QNT_ERR_SHAPE_MISMATCH, "x ", shape_string(x.dims()), " does not end in K = ", k, " of w ",
         shape_string(w.dims()));
  std::vector<int64_t> want = x.dims();
  want.back() = n;
  if (y.dims() != want)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(want));
  return k == 0 ? static_cast<int64_t>(y.element_count()) / std::max<int64_t>(n, 1)
                : static_cast<int64_t>(x.element_count()) / k;
}

// The checks both linear layers share: shapes (returns the row count), an f32 bias of [N], and
// an output apart from every input.
int64_t check_linear(const Tensor &x, const Tensor &w, const Tensor *bias, const Tensor &y,
                     int64_t &k, int64_t &n) {
  const int64_t rows = linear_rows(x, w, y, k, n);
  check_bias(bias, n, true);
  if (bias != nullptr && bias->dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, "bias must be f32 here, not ", bias->info().name);
  require_disjoint(y, x, "y", "x");
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
  return rows;
}

}  // namespace

void qmatmul(const Context &ctx, const Tensor &a, const Tensor &b, const Tensor *bias, Tensor &y) {
  require_int8(a, "a");
  require_int8(b, "b");
  if (a.rank() < 2 || b.rank() < 2)
    fail(QNT_ERR_SHAPE_MISMATCH, "a and b need at least two dimensions, got ",
         shape_string(a.dims()), " and ", shape_string(b.dims()));
  const OutputMode mode = output_mode(y);
  const auto &ad = a.dims(), &bd = b.dims();
  const int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  if (bd[bd.size() - 2] != K)
    fail(QNT_ERR_SHAPE_MISMATCH, "a ", shape_string(ad), " and b ", shape_string(bd),
         " disagree on K");
  const std::vector<int64_t> a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  const std::vector<int64_t> batch = broadcast_shapes(a_batch, b_batch);
  std::vector<int64_t> want = batch;
  want.push_back(M);
  want.push_back(N);
  if (y.dims() != want)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(want));
  const bool scales = mode != OutputMode::Int32;
  const ChannelParams pa = channel_params(a, "a", 0, 1, false, scales);
  const ChannelParams pb =
      channel_params(b, "b", static_cast<int64_t>(b.rank()) - 1, N, true, scales);
  check_bias(bias, N, mode == OutputMode::Float);
  require_disjoint(y, a, "y", "a");
  require_disjoint(y, b, "y", "b");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");

  const Epilogue epi = make_epilogue(mode, y, bias, scales ? pa.scales[0] : 0.0f, pb.scales);
  const std::vector<int64_t> a_index = broadcast_index(a_batch, batch);
  const std::vector<int64_t> b_index = broadcast_index(b_batch, batch);
  const std::vector<int32_t> za(static_cast<size_t>(std::max<int64_t>(M, 1)), pa.zero_points[0]);
  const size_t y_elem = static_cast<size_t>(y.info().bits / 8);
  const auto rows = static_cast<size_t>(static_cast<int64_t>(a_index.size()) * M);

  parallel_for(ctx.threads(), rows, row_grain(N, K), [&](size_t r0, size_t r1) {
    std::vector<int32_t> acc(static_cast<size_t>(N));
    for (size_t r = r0; r < r1; ++r) {
      const auto bi = static_cast<size_t>(static_cast<int64_t>(r) / M);
      const int64_t m = static_cast<int64_t>(r) % M;
      const ref::Int8Matrix am = int8_matrix(a, (a_index[bi] * M + m) * K, K, 1);
      const ref::Int8Matrix bm = int8_matrix(b, b_index[bi] * K * N, N, 1);
      ref::qgemm(1, N, K, am, za.data(), bm, pb.zero_points.data(), acc.data(), N);
      epi.row(acc.data(), N, y.data() + r * static_cast<size_t>(N) * y_elem);
    }
  });
}

std::unique_ptr<Tensor> dynamic_quantize_linear(const Context &ctx, const Tensor &x) {
  require_float(x, "x");
  float scale = 1.0f;
  int32_t zp = 0;
  if (!ref::dynamic_qparams(reinterpret_cast<const float *>(x.data()), x.element_count(), &scale,
                            &zp))
    fail(QNT_ERR_INVALID_ARGUMENT, "x holds an infinity or a range too wide for float32");
  auto qp = QParams::create(QNT_DTYPE_U8, QNT_GRANULARITY_PER_TENSOR, 0, 0, &scale, &zp, 1);
  auto y = std::make_unique<Tensor>(QNT_DTYPE_U8, x.shape(), x.rank(), std::move(qp),
                                    Tensor::Storage::Zeroed, nullptr, 0);
  quantize(ctx, x, *y);
  return y;
}

void linear_dynamic(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                    qnt_act_quant mode, Tensor &y) {
  require_float(x, "x");
  if (w.dtype() != QNT_DTYPE_I8)
    fail(QNT_ERR_UNSUPPORTED, "w must be i8 for the dynamic linear layer, not ", w.info().name);
  require_float(y, "y");
  if (mode != QNT_ACT_PER_TENSOR && mode != QNT_ACT_PER_ROW)
    fail(QNT_ERR_INVALID_ARGUMENT, "mode = ", static_cast<int32_t>(mode),
         " is not a qnt_act_quant");
  int64_t K = 0, N = 0;
  const int64_t R = check_linear(x, w, bias, y, K, N);
  const ChannelParams pw = channel_params(w, "w", 0, N, true, true);

  const auto *xs = reinterpret_cast<const float *>(x.data());
  const auto rows = static_cast<size_t>(R);
  if (rows == 0) return;
  std::vector<float> sx(rows, 1.0f);
  std::vector<int32_t> zx(rows, 0);
  if (mode == QNT_ACT_PER_TENSOR) {
    if (!ref::dynamic_qparams(xs, x.element_count(), &sx[0], &zx[0]))
      fail(QNT_ERR_INVALID_ARGUMENT, "x holds an infinity or a range too wide for float32");
    std::fill(sx.begin(), sx.end(), sx[0]);
    std::fill(zx.begin(), zx.end(), zx[0]);
  } else {
    for (size_t r = 0; r < rows; ++r)
      if (!ref::dynamic_qparams(xs + r * static_cast<size_t>(K), static_cast<size_t>(K), &sx[r],
                                &zx[r]))
        fail(QNT_ERR_INVALID_ARGUMENT, "row ", r, " of x holds an infinity or too wide a range");
  }
  const auto *bf = bias != nullptr ? reinterpret_cast<const float *>(bias->data()) : nullptr;
  auto *out = reinterpret_cast<float *>(y.data());
  const ref::Int8Matrix wm = int8_matrix(w, 0, 1, K);  // b(k, n) = w[n, k]

  parallel_for(ctx.threads(), rows, row_grain(N, K), [&](size_t r0, size_t r1) {
    std::vector<uint8_t> xq(static_cast<size_t>(K));
    std::vector<int32_t> acc(static_cast<size_t>(N));
    for (size_t r = r0; r < r1; ++r) {
      for (int64_t k = 0; k < K; ++k)
        xq[static_cast<size_t>(k)] = static_cast<uint8_t>(ref::quantize_integer(
            xs[r * static_cast<size_t>(K) + static_cast<size_t>(k)], sx[r], zx[r], 0, 255));
      ref::Int8Matrix xm;
      xm.data = xq.data();
      xm.is_signed = false;
      xm.row_stride = K;
      xm.col_stride = 1;
      ref::qgemm(1, N, K, xm, &zx[r], wm, pw.zero_points.data(), acc.data(), N);
      for (int64_t n = 0; n < N; ++n) {
        const float scale = sx[r] * pw.scales[static_cast<size_t>(n)];
        out[r * static_cast<size_t>(N) + static_cast<size_t>(n)] =
            ref::acc_to_float(acc[static_cast<size_t>(n)], scale, bf != nullptr ? bf[n] : 0.0f);
      }
    }
  });
}

void linear_weight_only(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                        Tensor &y) {
  require_float(x, "x");
  require_float(y, "y");
  if (w.dtype() == QNT_DTYPE_I32)
    fail(QNT_ERR_UNSUPPORTED, "w may not be i32 in the weight-only linear layer");
  const ref::QuantSpec spec = quantized_spec(w, "w");
  int64_t K = 0, N = 0;
  const int64_t R = check_linear(x, w, bias, y, K, N);

  const auto *xs = reinterpret_cast<const float *>(x.data());
  const auto *bf = bias != nullptr ? reinterpret_cast<const float *>(bias->data()) : nullptr;
  auto *out = reinterpret_cast<float *>(y.data());
  const auto k = static_cast<size_t>(K), n_count = static_cast<size_t>(N);
  // One output feature per step: its weights dequantized once, then dotted with every row.
  parallel_for(ctx.threads(), n_count, std::max<size_t>(1, 4096 / std::max<size_t>(k, 1)),
               [&](size_t n0, size_t n1) {
                 std::vector<float> wrow(k);
                 for (size_t n = n0; n < n1; ++n) {
                   ref::dequantize(spec, w.data(), wrow.data(), n * k, n * k + k);
                   for (size_t r = 0; r < static_cast<size_t>(R); ++r) {
                     const float d = ref::dot(xs + r * k, wrow.data(), K);
                     out[r * n_count + n] = bf != nullptr ? d + bf[n] : d;
                   }
                 }
               });
}

}  // namespace qnt::ops
