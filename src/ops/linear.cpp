// qmatmul (MatMulInteger / QLinearMatMul), DynamicQuantizeLinear, and the linear layers, each as
// a prepared operator; the one-shot calls check, return at once for an empty output, then
// prepare and run.
#include "core/error.hpp"
#include "kernels/ref/calib_ref.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/device_ops.hpp"
#include "ops/epilogue.hpp"
#include "ops/gemm.hpp"
#include "ops/packed.hpp"
#include "ops/parallel.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"
#include "ops/quantize.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace qnt::ops {
namespace {

// ONNX DynamicQuantizeLinear's parameters (ref::dynamic_qparams: the same values) from the kernel
// set's vector scan of x: NaNs skipped; false for an infinity or too wide a range.
bool dynamic_params(const kern::KernelSet &ks, const float *x, size_t n, float *scale,
                    int32_t *zero_point, int32_t qmax) {
  ref::ScanResult r;
  ks.scan(x, n, &r);
  if (r.finite + r.nan != n) return false;
  return ref::dynamic_qparams_of_range(std::min(0.0f, r.min), std::max(0.0f, r.max), scale,
                                       zero_point, qmax);
}

}  // namespace
namespace {

// Rows per task: enough work per task to pay for a thread's start, at least one row.
size_t row_grain(int64_t n, int64_t k) {
  const int64_t work = std::max<int64_t>(1, n) * std::max<int64_t>(1, k);
  return static_cast<size_t>(std::max<int64_t>(1, (int64_t{1} << 16) / work));
}

int64_t product(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// For each index of the broadcast batch shape `out`, the flat index into batch shape `in`
// (numpy broadcasting: shapes aligned at the right, size-1 dimensions repeat).
std::vector<int64_t> broadcast_index(const std::vector<int64_t> &in,
                                     const std::vector<int64_t> &out) {
  const int64_t count = product(out);
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

// body(row, acc) for every row, on the context's threads, with N accumulators per worker
// allocated before any row is written.
template <class Body>
void for_rows(const Context &ctx, size_t rows, int64_t N, int64_t K, Body &&body) {
  const size_t grain = row_grain(N, K);
  std::vector<std::vector<int32_t>> acc(parallel_workers(ctx.threads(), rows, grain),
                                        std::vector<int32_t>(static_cast<size_t>(N)));
  parallel_for_workers(ctx.threads(), rows, grain, [&](size_t r0, size_t r1, size_t t) {
    for (size_t r = r0; r < r1; ++r) body(r, acc[t].data());
  });
}

ref::Int8Matrix row_view(const uint8_t *data, bool is_signed) {
  ref::Int8Matrix m;
  m.data = data;
  m.is_signed = is_signed;
  m.row_stride = 0;
  m.col_stride = 1;
  return m;
}

// --- matmul with a constant b -----------------------------------------------------------------

void check_matmul_b(const Tensor &b, const Tensor *bias) {
  require_int8(b, "b");
  if (b.rank() < 2)
    fail(QNT_ERR_SHAPE_MISMATCH, "b needs at least two dimensions, got ", shape_string(b.dims()));
  check_channel_qparams(b.qparams(), b.rank(), "b", static_cast<int64_t>(b.rank()) - 1, true,
                        false);
  check_bias(bias, b.dims().back(), true);
}

struct MatmulRun {
  std::vector<int64_t> a_batch, b_batch, batch;
  int64_t M = 0;
  OutputMode mode = OutputMode::Int32;
};

// The checks on a and y against b's shape and qparams and the bias; allocation-free.
MatmulRun check_matmul_run(const Tensor &a, const std::vector<int64_t> &bd,
                           const std::shared_ptr<const QParams> &bq, const Bias &bias,
                           const Tensor &y) {
  require_int8(a, "a");
  if (a.rank() < 2)
    fail(QNT_ERR_SHAPE_MISMATCH, "a needs at least two dimensions, got ", shape_string(a.dims()));
  MatmulRun r;
  r.mode = output_mode(y);
  const auto &ad = a.dims();
  const int64_t K = ad.back(), N = bd.back();
  r.M = ad[ad.size() - 2];
  if (bd[bd.size() - 2] != K)
    fail(QNT_ERR_SHAPE_MISMATCH, "a ", shape_string(ad), " and b ", shape_string(bd),
         " disagree on K");
  r.a_batch.assign(ad.begin(), ad.end() - 2);
  r.b_batch.assign(bd.begin(), bd.end() - 2);
  r.batch = broadcast_shapes(r.a_batch, r.b_batch);
  std::vector<int64_t> want = r.batch;
  want.push_back(r.M);
  want.push_back(N);
  if (y.dims() != want)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(want));
  const bool scales = r.mode != OutputMode::Int32;
  check_channel_qparams(a.qparams(), a.rank(), "a", 0, false, scales);
  check_channel_qparams(bq, bd.size(), "b", static_cast<int64_t>(bd.size()) - 1, true, scales);
  if (bias.present && bias.dtype == QNT_DTYPE_F32 && r.mode != OutputMode::Float)
    fail(QNT_ERR_DTYPE_MISMATCH, "an f32 bias needs an f32 y here (use an i32 bias)");
  require_writable(y, "y");
  require_disjoint(y, a, "y", "a");
  return r;
}

// The rows of an int8 operand as a' values for the fast kernels: za' from its zero point.
int32_t int8_row(const uint8_t *src, bool is_signed, int32_t zero_point, int64_t K,
                 uint8_t *row) noexcept {
  const auto k = static_cast<size_t>(K);
  if (is_signed) {
    for (size_t i = 0; i < k; ++i) row[i] = static_cast<uint8_t>(src[i] ^ 0x80u);
    return zero_point + 128;
  }
  if (k > 0) std::memcpy(row, src, k);  // (an empty x may have no data at all)
  return zero_point;
}

// Row-major A [rows, K] of int8 or uint8 values as gemm_run's source: unsigned rows of whole
// groups are a' already and are read in place.
struct Int8Rows {
  const uint8_t *a;
  bool is_signed;
  int32_t zero_point;
  int64_t K;
  int32_t operator()(int64_t m, uint8_t *row) const noexcept {
    return int8_row(a + m * K, is_signed, zero_point, K, row);
  }
  const uint8_t *in_place(size_t &stride, int32_t &za) const noexcept {
    if (is_signed || K <= 0 || K % 4 != 0) return nullptr;
    stride = static_cast<size_t>(K);
    za = zero_point;
    return a;
  }
};

// The tile epilogue of a row-major y [rows, N]. When the epilogue leaves the sums as they are
// (int32 y, no bias, no relu), full tiles are written by the kernel in their place in y
// (gemm_run's `direct`), with no pass through the tile buffer.
struct RowMajor {
  const Epilogue &epi;
  uint8_t *y;
  int64_t N;
  void operator()(int64_t m0, int rows, int64_t n0, int cols, const int32_t *acc,
                  size_t ldc) const {
    epi.block(acc, ldc, rows, static_cast<size_t>(n0), static_cast<size_t>(cols), y,
              static_cast<size_t>(m0 * N + n0), static_cast<size_t>(N));
  }
  int32_t *direct(int64_t m0, int64_t n0, size_t &ld) const {
    if (epi.mode != Epilogue::Mode::Int32 || epi.bias_i32 != nullptr || epi.relu ||
        reinterpret_cast<uintptr_t>(y) % alignof(int32_t) != 0)
      return nullptr;
    ld = static_cast<size_t>(N);
    return reinterpret_cast<int32_t *>(y) + m0 * N + n0;
  }
};
RowMajor row_major(const Epilogue &epi, uint8_t *y, int64_t N) { return RowMajor{epi, y, N}; }

// A prepared operator run with device tensors: it must have been prepared for that device.
void require_prepared_for(const Place &where, int32_t device) {
  if (device == where.id) return;
  fail(QNT_ERR_INVALID_ARGUMENT, "the tensors are on ", place_name(where),
       " but the operator was prepared for ",
       device < 0 ? std::string("the CPU only (prepare it with a context bound to the device: "
                                "qnt_context_set_cuda_stream)")
                  : place_name(Place{QNT_DEVICE_CUDA, device}));
}

class PreparedMatmul final : public Prepared {
 public:
  PreparedMatmul(const Context &ctx, const Tensor &b, const Tensor *bias)
      : Prepared(QNT_PREPARED_MATMUL, ctx.isa()),
        kernel_(ctx.kernels().gemm),
        dims_(b.dims()),
        bq_(b.qparams()),
        bias_(bias) {
    const int64_t K = dims_[dims_.size() - 2], N = dims_.back();
    // The batch count from the dimensions (not the element count: K = 0 leaves it > 0).
    batches_ = product(std::vector<int64_t>(dims_.begin(), dims_.end() - 2));
    // An empty b costs nothing, whatever its batch count: with N = 0 or no batch every output
    // is empty (nothing to store), and with K = 0 every batch packs to the same empty B (one).
    const int64_t batches =
        b.element_count() != 0 ? batches_ : (N > 0 && K == 0 && batches_ > 0 ? 1 : 0);
    const ChannelParams pb =
        channel_params(b, "b", static_cast<int64_t>(b.rank()) - 1, N, true, false);
    w_.channels = batches * N;
    w_.K = K;
    w_.is_signed = b.info().is_signed;
    w_.scales = pb.scales;
    if (kernel_ != nullptr) {
      fast_.resize(static_cast<size_t>(batches));
      for (int64_t i = 0; i < batches; ++i) {
        fast_[static_cast<size_t>(i)].pack_kn(ctx, K, N, w_.is_signed, pb.zero_points.data(),
                                              b.data() + i * K * N, static_cast<size_t>(N));
      }
      return;
    }
    // Channel (batch i, column n) holds b[i][:, n]: the transpose, so the K values are contiguous.
    w_.data.resize(b.element_count());
    for (int64_t i = 0; i < batches; ++i)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          w_.data[static_cast<size_t>((i * N + n) * K + k)] = b.data()[(i * K + k) * N + n];
    w_.zero_points.resize(static_cast<size_t>(w_.channels));
    for (int64_t c = 0; c < w_.channels; ++c)
      w_.zero_points[static_cast<size_t>(c)] = pb.zero_points[static_cast<size_t>(c % N)];
    w_.finish();
  }

  size_t packed_size() const noexcept override {
    size_t n = w_.bytes() + bias_.bytes() + dev_.bytes;
    for (const GemmB &f : fast_) n += f.bytes();
    return n;
  }

  // For a matmul prepared with a context bound to a CUDA device: b, its zero points and the
  // bias there too (a 2-D b only).
  void copy_to_device(const Tensor &b, int32_t device) {
    if (b.rank() != 2)
      fail(QNT_ERR_UNSUPPORTED, "a batched b ", shape_string(b.dims()),
           " cannot be prepared for a CUDA device; give b two dimensions");
    const int64_t K = dims_[0], N = dims_[1];
    const ChannelParams pb = channel_params(b, "b", 1, N, true, false);
    dev_ = DeviceGemmB::upload(device, b.data(), b.byte_size(), K, N, N, 1, b.info().is_signed,
                               pb.zero_points, bias_);
  }

  void run(const Context &ctx, const Tensor &a, Tensor &y) const override {
    const MatmulRun r = check_matmul_run(a, dims_, bq_, bias_, y);
    const Place where = op_place({{&a, "a"}, {&y, "y"}});
    if (y.element_count() == 0) return;
    const int64_t M = r.M, K = w_.K, N = dims_.back();
    const bool scales = r.mode != OutputMode::Int32;
    const float sa = scales ? a.qparams()->scales()[0] : 0.0f;
    const int32_t za = a.qparams() ? a.qparams()->zero_points()[0] : 0;
    const Epilogue epi = make_epilogue(r.mode, y.qparams().get(), bias_, sa,
                                       scales ? w_.scales : std::vector<float>(), false,
                                       where.is_cpu() ? kernel_ : nullptr);
    if (!where.is_cpu()) {
      require_prepared_for(where, dev_.device);
      const auto rows = static_cast<int64_t>(y.element_count()) / std::max<int64_t>(N, 1);
      return device_gemm(ctx, where, a.data(), a.info().is_signed, za, rows, dev_, epi, y);
    }
    const std::vector<int64_t> a_index = broadcast_index(r.a_batch, r.batch);
    std::vector<int64_t> b_index = broadcast_index(r.b_batch, r.batch);
    if (w_.channels != batches_ * N)  // K = 0: every batch of b is the one stored
      std::fill(b_index.begin(), b_index.end(), 0);
    const bool a_signed = a.info().is_signed;
    if (kernel_ != nullptr) {
      const size_t y_batch = static_cast<size_t>(M * N) * static_cast<size_t>(y.info().bits / 8);
      for (size_t bi = 0; bi < a_index.size(); ++bi) {
        const GemmB &b = fast_[static_cast<size_t>(b_index[bi])];
        const uint8_t *ab = a.data() + a_index[bi] * M * K;
        uint8_t *yb = y.data() + bi * y_batch;
        gemm_tuned(ctx, gemm_kernel_for(*kernel_, b), b, M, [&](const GemmPlan &plan) {
          Scratch scratch(ctx, plan.scratch_bytes());
          gemm_run(
              ctx, plan, b, scratch.data(),
              Int8Rows{ab, a_signed, za, K},
              row_major(epi, yb, N));
        });
      }
      return;
    }
    const auto rows = static_cast<size_t>(static_cast<int64_t>(a_index.size()) * M);
    const ref::PackedInt8 w = w_.view();
    for_rows(ctx, rows, N, K, [&](size_t row, int32_t *out) {
      const auto bi = static_cast<size_t>(static_cast<int64_t>(row) / M);
      const int64_t m = static_cast<int64_t>(row) % M;
      const ref::Int8Matrix am = row_view(a.data() + (a_index[bi] * M + m) * K, a_signed);
      const int64_t c0 = b_index[bi] * N;
      ref::qgemm_packed(1, am, &za, 0, w, c0, c0 + N, out, 0, 1);
      epi.span(out, 0, static_cast<size_t>(N), y.data(), row * static_cast<size_t>(N));
    });
  }

 private:
  const kern::GemmKernel *kernel_;
  std::vector<int64_t> dims_;
  int64_t batches_ = 0;  // b's batch count (the batches stored: w_.channels / N)
  std::shared_ptr<const QParams> bq_;
  Bias bias_;
  PackedWeights w_;  // the reference path's weights (fast path: K, scales only)
  std::vector<GemmB> fast_;  // the fast path's, one per batch of b
  DeviceGemmB dev_;          // device < 0: not prepared for a device
};

// --- the linear layers ------------------------------------------------------------------------

// w [N, K] for the context's kernels: the reference's rows (PackedWeights) or packed B.
struct LinearWeights {
  const kern::GemmKernel *kernel = nullptr;
  PackedWeights ref;  // on the fast path only channels, K, is_signed and scales
  GemmB fast;

  LinearWeights(const Context &ctx, const Tensor &w, bool need_scales) : kernel(ctx.kernels().gemm) {
    const int64_t N = w.dims()[0], K = w.dims()[1];
    const ChannelParams pw = channel_params(w, "w", 0, N, true, need_scales);
    ref.channels = N;
    ref.K = K;
    ref.is_signed = w.info().is_signed;
    ref.scales = pw.scales;
    if (kernel != nullptr) {
      fast.pack_nk(ctx, K, N, ref.is_signed, pw.zero_points.data(), w.data(),
                   static_cast<size_t>(K));
      return;
    }
    ref.data.assign(w.data(), w.data() + w.byte_size());
    ref.zero_points = pw.zero_points;
    ref.finish();
  }
  size_t bytes() const noexcept { return ref.bytes() + fast.bytes(); }
};

class PreparedLinearDynamic final : public Prepared {
 public:
  PreparedLinearDynamic(const Context &ctx, const Tensor &w, const Tensor *bias, const OpDesc &desc)
      : Prepared(QNT_PREPARED_LINEAR_DYNAMIC, ctx.isa()),
        mode_(static_cast<qnt_act_quant>(desc.get(QNT_OP_ACT_QUANT))),
        qmax_(desc.get(QNT_OP_REDUCE_RANGE) != 0 ? 127 : 255),
        relu_(desc.get(QNT_OP_FUSE_RELU) != 0),
        kernels_(&ctx.kernels()),
        w_(ctx, w, true),
        bias_(bias) {}

  size_t packed_size() const noexcept override { return w_.bytes() + bias_.bytes(); }

  void run(const Context &ctx, const Tensor &x, Tensor &y) const override {
    require_float(x, "x");
    require_float(y, "y");
    const int64_t K = w_.ref.K, N = w_.ref.channels;
    const int64_t R = linear_io(x, K, N, y);
    if (y.element_count() == 0) return;
    const auto *xs = reinterpret_cast<const float *>(x.data());
    const auto rows = static_cast<size_t>(R);
    std::vector<float> sx(rows, 1.0f);
    std::vector<int32_t> zx(rows, 0);
    auto range_params = [&](const float *v, size_t n, size_t r) {
      return dynamic_params(*kernels_, v, n, &sx[r], &zx[r], qmax_);
    };
    if (mode_ == QNT_ACT_PER_TENSOR) {
      if (!range_params(xs, x.element_count(), 0))
        fail(QNT_ERR_INVALID_ARGUMENT, "x holds an infinity or a range too wide for float32");
      std::fill(sx.begin(), sx.end(), sx[0]);
      std::fill(zx.begin(), zx.end(), zx[0]);
    } else {
      for (size_t r = 0; r < rows; ++r)
        if (!range_params(xs + r * static_cast<size_t>(K), static_cast<size_t>(K), r))
          fail(QNT_ERR_INVALID_ARGUMENT, "row ", r, " of x holds an infinity or too wide a range");
    }
    const float *bf = bias_.f32_or_null();
    auto *out = reinterpret_cast<float *>(y.data());
    const std::vector<float> &sw = w_.ref.scales;
    // y = (float)acc * (sx[r] * sw[n]) (+ bias[n]), then ReLU.
    auto value = [&](int32_t a, size_t r, size_t n) {
      float v = ref::acc_to_float(a, sx[r] * sw[n], bf != nullptr ? bf[n] : 0.0f);
      return relu_ && v < 0.0f ? 0.0f : v;
    };
    if (w_.kernel != nullptr) {
      // The activations are quantized as A is packed, with the set's quantize kernel.
      kern::Format f;
      f.dtype = QNT_DTYPE_U8;
      f.is_signed = false;
      f.qmin = 0;
      f.qmax = qmax_;
      const kern::QuantizeFn quantize = kernels_->quantize[QNT_DTYPE_U8][kern::kShared];
      const kern::GemmEpilogueFn epilogue = w_.kernel->epilogue;
      gemm_tuned(ctx, gemm_kernel_for(*w_.kernel, w_.fast), w_.fast, R, [&](const GemmPlan &plan) {
        Scratch scratch(ctx, plan.scratch_bytes());
        gemm_run(
            ctx, plan, w_.fast, scratch.data(),
            [&](int64_t m, uint8_t *row) {
              const auto r = static_cast<size_t>(m);
              quantize(xs + r * static_cast<size_t>(K), row, 0, static_cast<size_t>(K), &sx[r],
                       &zx[r], f);
              return zx[r];
            },
            [&](int64_t m0, int rows_here, int64_t n0, int cols, const int32_t *acc, size_t ldc) {
              if (epilogue != nullptr) {
                kern::GemmEpilogueArgs e;
                e.mode = 2;
                e.bias_f32 = bf;
                e.multiplier = sw.data();
                e.row_scales = sx.data() + m0;
                e.relu = relu_;
                epilogue(e, acc, ldc, rows_here, static_cast<size_t>(n0), static_cast<size_t>(cols),
                         reinterpret_cast<uint8_t *>(out), static_cast<size_t>(m0 * N + n0),
                         static_cast<size_t>(N));
                return;
              }
              for (int q = 0; q < rows_here; ++q) {
                const auto r = static_cast<size_t>(m0 + q);
                const int32_t *a = acc + static_cast<size_t>(q) * ldc;
                float *o = out + r * static_cast<size_t>(N);
                for (int j = 0; j < cols; ++j) {
                  const auto n = static_cast<size_t>(n0 + j);
                  o[n] = value(a[j], r, n);
                }
              }
            });
      });
      return;
    }
    const size_t grain = row_grain(N, K);
    const size_t workers = parallel_workers(ctx.threads(), rows, grain);
    std::vector<std::vector<uint8_t>> xq(workers, std::vector<uint8_t>(static_cast<size_t>(K)));
    std::vector<std::vector<int32_t>> acc(workers, std::vector<int32_t>(static_cast<size_t>(N)));
    const ref::PackedInt8 w = w_.ref.view();
    parallel_for_workers(ctx.threads(), rows, grain, [&](size_t r0, size_t r1, size_t t) {
      uint8_t *q = xq[t].data();
      int32_t *a = acc[t].data();
      for (size_t r = r0; r < r1; ++r) {
        for (int64_t k = 0; k < K; ++k)
          q[k] = static_cast<uint8_t>(ref::quantize_integer(
              xs[r * static_cast<size_t>(K) + static_cast<size_t>(k)], sx[r], zx[r], 0, qmax_));
        ref::qgemm_packed(1, row_view(q, false), &zx[r], 0, w, 0, N, a, 0, 1);
        for (int64_t n = 0; n < N; ++n)
          out[r * static_cast<size_t>(N) + static_cast<size_t>(n)] =
              value(a[n], r, static_cast<size_t>(n));
      }
    });
  }

 private:
  qnt_act_quant mode_;
  int32_t qmax_;
  bool relu_;
  const kern::KernelSet *kernels_;
  LinearWeights w_;
  Bias bias_;
};

void require_per_tensor_int8(const QParams &qp, const char *role) {
  if (qp.dtype() != QNT_DTYPE_I8 && qp.dtype() != QNT_DTYPE_U8)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must be i8 or u8, not ", qp.info().name);
  if (qp.granularity() != QNT_GRANULARITY_PER_TENSOR)
    fail(QNT_ERR_UNSUPPORTED, role, " must be per tensor");
}

class PreparedLinearStatic final : public Prepared {
 public:
  PreparedLinearStatic(const Context &ctx, const Tensor &w, const Tensor *bias, const QParams &x_qp,
                       const std::shared_ptr<const QParams> &y_qp, bool relu)
      : Prepared(QNT_PREPARED_LINEAR_STATIC, ctx.isa()),
        x_dtype_(x_qp.dtype()),
        sx_(x_qp.scales()[0]),
        zx_(x_qp.zero_points()[0]),
        yq_(y_qp),
        w_(ctx, w, true),
        bias_(bias) {
    epi_ = make_epilogue(yq_ ? OutputMode::Requantize : OutputMode::Float, yq_.get(), bias_, sx_,
                         w_.ref.scales, relu, w_.kernel);
  }

  size_t packed_size() const noexcept override {
    return w_.bytes() + bias_.bytes() + epi_.bytes() + dev_.bytes;
  }

  // For a layer prepared with a context bound to a CUDA device: w [N, K] (b(k, n) = w[n][k]),
  // its zero points and the bias there too.
  void copy_to_device(const Tensor &w, int32_t device) {
    const int64_t N = w.dims()[0], K = w.dims()[1];
    const ChannelParams pw = channel_params(w, "w", 0, N, true, true);
    dev_ = DeviceGemmB::upload(device, w.data(), w.byte_size(), K, N, 1, K, w.info().is_signed,
                               pw.zero_points, bias_);
  }

  void run(const Context &ctx, const Tensor &x, Tensor &y) const override {
    if (x.dtype() != x_dtype_)
      fail(QNT_ERR_DTYPE_MISMATCH, "x must be ", dtype_info(x_dtype_).name, " as prepared, not ",
           x.info().name);
    if (x.qparams()) {
      const QParams &q = *x.qparams();
      if (q.granularity() != QNT_GRANULARITY_PER_TENSOR || q.scales()[0] != sx_ ||
          q.zero_points()[0] != zx_)
        fail(QNT_ERR_INVALID_QPARAMS, "x's qparams differ from those the layer was prepared for");
    }
    if (yq_) {
      if (y.dtype() != yq_->dtype())
        fail(QNT_ERR_DTYPE_MISMATCH, "y must be ", yq_->info().name, " as prepared, not ",
             y.info().name);
      if (!y.qparams() || !same_qparams(*y.qparams(), *yq_))
        fail(QNT_ERR_INVALID_QPARAMS, "y must carry the qparams the layer was prepared for");
    } else {
      require_float(y, "y");
    }
    const int64_t K = w_.ref.K, N = w_.ref.channels;
    const int64_t R = linear_io(x, K, N, y);
    const Place where = op_place({{&x, "x"}, {&y, "y"}});
    if (y.element_count() == 0) return;
    if (!where.is_cpu()) {
      require_prepared_for(where, dev_.device);
      Epilogue epi = epi_;
      epi.vector = nullptr;
      return device_gemm(ctx, where, x.data(), x.info().is_signed, zx_, R, dev_, epi, y);
    }
    const bool x_signed = x.info().is_signed;
    if (w_.kernel != nullptr) {
      const uint8_t *xd = x.data();
      gemm_tuned(ctx, gemm_kernel_for(*w_.kernel, w_.fast), w_.fast, R, [&](const GemmPlan &plan) {
        Scratch scratch(ctx, plan.scratch_bytes());
        gemm_run(
            ctx, plan, w_.fast, scratch.data(),
            Int8Rows{xd, x_signed, zx_, K},
            row_major(epi_, y.data(), N));
      });
      return;
    }
    const auto rows = static_cast<size_t>(R);
    const ref::PackedInt8 w = w_.ref.view();
    for_rows(ctx, rows, N, K, [&](size_t r, int32_t *a) {
      const ref::Int8Matrix xm = row_view(x.data() + r * static_cast<size_t>(K), x_signed);
      ref::qgemm_packed(1, xm, &zx_, 0, w, 0, N, a, 0, 1);
      epi_.span(a, 0, static_cast<size_t>(N), y.data(), r * static_cast<size_t>(N));
    });
  }

 private:
  qnt_dtype x_dtype_;
  float sx_;
  int32_t zx_;
  std::shared_ptr<const QParams> yq_;
  LinearWeights w_;
  Bias bias_;
  Epilogue epi_;
  DeviceGemmB dev_;  // device < 0: not prepared for a device
};

constexpr uint32_t kDynamicKeys = OpDesc::bit(QNT_OP_ACT_QUANT) | OpDesc::bit(QNT_OP_REDUCE_RANGE) |
                                  OpDesc::bit(QNT_OP_FUSE_RELU);

void check_dynamic(const Tensor &w, const Tensor *bias) {
  if (w.dtype() != QNT_DTYPE_I8)
    fail(QNT_ERR_UNSUPPORTED, "w must be i8 for the dynamic linear layer, not ", w.info().name);
  check_linear_weights(w, bias, false);
  check_channel_qparams(w.qparams(), w.rank(), "w", 0, true, true);
}

}  // namespace

std::unique_ptr<Prepared> prepare_matmul(const Context &ctx, const Tensor &b_in, const Tensor *bias,
                                         const OpDesc &desc) {
  desc.require_only(0, "a prepared matmul");
  std::unique_ptr<Tensor> held;
  const Tensor &b = int8_weights(b_in, "b", held);
  check_matmul_b(b, bias);
  auto p = std::make_unique<PreparedMatmul>(ctx, b, bias);
  if (ctx.cuda_device >= 0) p->copy_to_device(b, ctx.cuda_device);
  return p;
}

std::unique_ptr<Prepared> prepare_linear_dynamic(const Context &ctx, const Tensor &w_in,
                                                 const Tensor *bias, const OpDesc &desc) {
  desc.require_only(kDynamicKeys, "the dynamic linear layer");
  std::unique_ptr<Tensor> held;
  const Tensor &w = int8_weights(w_in, "w", held);
  check_dynamic(w, bias);
  return std::make_unique<PreparedLinearDynamic>(ctx, w, bias, desc);
}

std::unique_ptr<Prepared> prepare_linear_static(const Context &ctx, const Tensor &w_in,
                                                const Tensor *bias, const QParams &x_qp,
                                                const std::shared_ptr<const QParams> &y_qp,
                                                const OpDesc &desc) {
  desc.require_only(OpDesc::bit(QNT_OP_FUSE_RELU), "the static linear layer");
  std::unique_ptr<Tensor> held;
  const Tensor &w = int8_weights(w_in, "w", held);
  require_int8(w, "w");
  check_linear_weights(w, bias, true);
  check_channel_qparams(w.qparams(), w.rank(), "w", 0, true, true);
  require_per_tensor_int8(x_qp, "x_qparams");
  if (y_qp) require_per_tensor_int8(*y_qp, "y_qparams");
  auto p = std::make_unique<PreparedLinearStatic>(ctx, w, bias, x_qp, y_qp,
                                                  desc.get(QNT_OP_FUSE_RELU) != 0);
  if (ctx.cuda_device >= 0) p->copy_to_device(w, ctx.cuda_device);
  return p;
}

namespace {

// qnt_qmatmul on device tensors: b, its bias and a read where they are; b's zero points and the
// multipliers travel with the launch.
void device_qmatmul(const Context &ctx, const Place &where, const Tensor &a, const Tensor &b,
                    const Tensor *bias, Tensor &y) {
  if (b.rank() != 2)
    fail(QNT_ERR_UNSUPPORTED, "qnt_qmatmul on a CUDA device takes a 2-D b, not ",
         shape_string(b.dims()));
  const int64_t K = b.dims()[0], N = b.dims()[1];
  const ChannelParams pb = channel_params(b, "b", 1, N, true, false);
  // The bias's kind decides the epilogue; its values stay on the device.
  Bias kind(nullptr);
  if (bias != nullptr) {
    kind.present = true;
    kind.dtype = bias->dtype();
    if (kind.dtype == QNT_DTYPE_I32)
      kind.i32.assign(static_cast<size_t>(N), 0);
    else
      kind.f32.assign(static_cast<size_t>(N), 0.0f);
  }
  const OutputMode mode = output_mode(y);
  const bool scales = mode != OutputMode::Int32;
  const float sa = scales ? a.qparams()->scales()[0] : 0.0f;
  const int32_t za = a.qparams() ? a.qparams()->zero_points()[0] : 0;
  const Epilogue epi = make_epilogue(mode, y.qparams().get(), kind, sa,
                                     scales ? pb.scales : std::vector<float>(), false, nullptr);
  DeviceGemmB d;
  d.device = where.id;
  d.keep_zb = device_upload(where.id, pb.zero_points.data(), 4 * pb.zero_points.size());
  d.b = b.data();
  d.K = K;
  d.N = N;
  d.ks = N;
  d.ns = 1;
  d.is_signed = b.info().is_signed;
  d.zb = static_cast<const int32_t *>(d.keep_zb.get());
  d.bias = bias != nullptr ? bias->data() : nullptr;
  const auto rows = static_cast<int64_t>(y.element_count()) / std::max<int64_t>(N, 1);
  device_gemm(ctx, where, a.data(), a.info().is_signed, za, rows, d, epi, y);
}

}  // namespace

void qmatmul(const Context &ctx, const Tensor &a, const Tensor &b_in, const Tensor *bias, Tensor &y) {
  require_disjoint(y, b_in, "y", "b");
  std::unique_ptr<Tensor> held;
  const Tensor &b = int8_weights(b_in, "b", held);
  check_matmul_b(b, bias);
  Bias kind(nullptr);  // the checks need the bias's dtype only: no copy before the empty check
  kind.present = bias != nullptr;
  if (bias != nullptr) kind.dtype = bias->dtype();
  (void)check_matmul_run(a, b.dims(), b.qparams(), kind, y);
  require_disjoint(y, b, "y", "b");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
  const Place where = op_place({{&a, "a"}, {&b, "b"}, {bias, "bias"}, {&y, "y"}});
  if (y.element_count() == 0) return;
  if (!where.is_cpu()) return device_qmatmul(ctx, where, a, b, bias, y);
  PreparedMatmul(ctx, b, bias).run(ctx, a, y);
}

std::unique_ptr<Tensor> dynamic_quantize_linear(const Context &ctx, const Tensor &x) {
  require_float(x, "x");
  float scale = 1.0f;
  int32_t zp = 0;
  if (!dynamic_params(ctx.kernels(), reinterpret_cast<const float *>(x.data()), x.element_count(),
                      &scale, &zp, 255))
    fail(QNT_ERR_INVALID_ARGUMENT, "x holds an infinity or a range too wide for float32");
  auto qp = QParams::create(QNT_DTYPE_U8, QNT_GRANULARITY_PER_TENSOR, 0, 0, &scale, &zp, 1);
  auto y = std::make_unique<Tensor>(QNT_DTYPE_U8, x.shape(), x.rank(), std::move(qp),
                                    Tensor::Storage::Zeroed, nullptr, 0);
  quantize(ctx, x, *y);
  return y;
}

void linear_dynamic(const Context &ctx, const Tensor &x, const Tensor &w_in, const Tensor *bias,
                    const OpDesc &desc, Tensor &y) {
  desc.require_only(kDynamicKeys, "qnt_linear_dynamic");
  require_disjoint(y, w_in, "y", "w");
  std::unique_ptr<Tensor> held;
  const Tensor &w = int8_weights(w_in, "w", held);
  check_dynamic(w, bias);
  check_linear_io(x, w, bias, y);
  if (y.element_count() == 0) return;
  PreparedLinearDynamic(ctx, w, bias, desc).run(ctx, x, y);
}

}  // namespace qnt::ops
