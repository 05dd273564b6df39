#include "ops/common.hpp"

#include "core/error.hpp"
#include "kernels/common/scalar.hpp"

#include <algorithm>
#include <cstring>

namespace qnt::ops {

std::string shape_string(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

void require_same_shape(const Tensor &a, const char *an, const Tensor &b, const char *bn) {
  if (a.dims() != b.dims())
    fail(QNT_ERR_SHAPE_MISMATCH, an, " has shape ", shape_string(a.dims()), " but ", bn,
         " has shape ", shape_string(b.dims()));
}

void require_disjoint(const Tensor &out, const Tensor &in, const char *out_name,
                      const char *in_name) {
  if (out.byte_size() == 0 || in.byte_size() == 0) return;
  const auto o = reinterpret_cast<uintptr_t>(out.data());
  const auto i = reinterpret_cast<uintptr_t>(in.data());
  if (o < i + in.byte_size() && i < o + out.byte_size())
    fail(QNT_ERR_INVALID_ARGUMENT, out_name, " and ", in_name,
         " share storage; in-place is not supported");
}

void require_int8(const Tensor &t, const char *role) {
  if (t.dtype() != QNT_DTYPE_I8 && t.dtype() != QNT_DTYPE_U8)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must be i8 or u8, not ", t.info().name);
}

const Tensor &int8_weights(const Tensor &w, const char *role, std::unique_ptr<Tensor> &held) {
  const qnt_dtype dt = w.dtype();
  if (dt != QNT_DTYPE_TERNARY && dt != QNT_DTYPE_BINARY) return w;
  if (!w.on_cpu())
    fail(QNT_ERR_UNSUPPORTED, role, ": ternary and binary weights are read from host memory only");
  std::shared_ptr<const QParams> qp;
  if (const auto &q = w.qparams())
    qp = QParams::create(QNT_DTYPE_I8, q->granularity(), q->axis(), q->block_size(), q->scales(),
                         q->zero_points(), q->count());
  const std::vector<int8_t> v = ternary_values(w, role);
  held = std::make_unique<Tensor>(QNT_DTYPE_I8, w.shape(), w.rank(), std::move(qp),
                                  Tensor::Storage::Zeroed, nullptr, 0);
  if (!v.empty()) std::memcpy(held->data(), v.data(), v.size());
  return *held;
}

std::vector<int8_t> ternary_values(const Tensor &w, const char *role) {
  const bool binary = w.dtype() == QNT_DTYPE_BINARY;
  std::vector<int8_t> out(w.element_count());
  for (size_t i = 0; i < out.size(); ++i) {
    const int32_t q = ref::load_element(w.data(), i, binary ? 1 : 2, !binary);
    if (!binary && q == -2)
      fail(QNT_ERR_INVALID_ARGUMENT, role, " holds the ternary code 0b10 (element ", i, "), which is no value");
    out[i] = static_cast<int8_t>(binary ? 2 * q - 1 : q);
  }
  return out;
}

void require_float(const Tensor &t, const char *role) {
  if (t.dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must be f32, not ", t.info().name);
}

ref::Code code_of(const DTypeInfo &info) noexcept {
  switch (info.rule) {
    case Rule::NF4: return ref::Code::NF4;
    case Rule::Binary: return ref::Code::Binary;
    case Rule::Log2: return ref::Code::Log2;
    default: return ref::Code::Integer;
  }
}

ref::QuantSpec quantized_spec(const Tensor &t, const char *role) {
  if (t.info().rule == Rule::Float)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must have a quantized dtype, not ", t.info().name);
  const auto &qp = t.qparams();
  if (!qp) fail(QNT_ERR_INVALID_QPARAMS, role, " (", t.info().name, ") has no qparams");
  ref::QuantSpec s;
  s.code = code_of(t.info());
  s.bits = t.info().bits;
  s.is_signed = t.info().is_signed;
  s.qmin = t.info().qmin;
  s.qmax = t.info().qmax;
  s.layout = qp->layout_for(t.shape(), t.rank());
  s.scales = qp->scales();
  s.zero_points = qp->zero_points();
  return s;
}

void check_channel_qparams(const std::shared_ptr<const QParams> &qp, size_t rank, const char *role,
                           int64_t axis, bool per_axis_allowed, bool need_scales) {
  if (!qp) {
    if (need_scales)
      fail(QNT_ERR_INVALID_QPARAMS, role, " needs qparams (scale and zero point) for this output");
    return;
  }
  switch (qp->granularity()) {
    case QNT_GRANULARITY_PER_TENSOR:
      return;
    case QNT_GRANULARITY_PER_AXIS: {
      const auto r = static_cast<int64_t>(rank);
      const int64_t a = qp->axis() < 0 ? qp->axis() + r : qp->axis();
      if (!per_axis_allowed) fail(QNT_ERR_INVALID_QPARAMS, role, " must have per-tensor qparams");
      if (a != axis)
        fail(QNT_ERR_INVALID_QPARAMS, role, "'s qparams are per axis ", qp->axis(),
             "; this op needs them per axis ", axis);
      return;
    }
    default:
      fail(QNT_ERR_UNSUPPORTED, role, " has per-block qparams, which this op does not take");
  }
}

ChannelParams channel_params(const Tensor &t, const char *role, int64_t axis, int64_t count,
                             bool per_axis_allowed, bool need_scales) {
  check_channel_qparams(t.qparams(), t.rank(), role, axis, per_axis_allowed, need_scales);
  ChannelParams p;
  const auto n = static_cast<size_t>(count);
  const auto &qp = t.qparams();
  if (!qp) {
    p.zero_points.assign(n, 0);
  } else if (qp->granularity() == QNT_GRANULARITY_PER_TENSOR) {
    p.scales.assign(n, qp->scales()[0]);
    p.zero_points.assign(n, qp->zero_points()[0]);
  } else {
    p.scales.assign(qp->scales(), qp->scales() + n);
    p.zero_points.assign(qp->zero_points(), qp->zero_points() + n);
  }
  return p;
}

bool same_qparams(const QParams &a, const QParams &b) {
  if (&a == &b) return true;
  return a.dtype() == b.dtype() && a.granularity() == b.granularity() && a.axis() == b.axis() &&
         a.block_size() == b.block_size() && a.count() == b.count() &&
         std::equal(a.scales(), a.scales() + a.count(), b.scales()) &&
         std::equal(a.zero_points(), a.zero_points() + a.count(), b.zero_points());
}

void require_writable(const Tensor &y, const char *role) {
  if (y.read_only())
    fail(QNT_ERR_INVALID_ARGUMENT, role, " is read-only (an imported read-only DLPack tensor)");
}

uint8_t last_byte_mask(const Tensor &t) {
  const int bits = t.info().bits;
  if (bits >= 8) return 0xFF;
  const size_t used = (t.element_count() * static_cast<size_t>(bits)) % 8;
  return used == 0 ? uint8_t{0xFF} : static_cast<uint8_t>((1u << used) - 1u);
}

void clear_tail_bits(Tensor &t) {
  const uint8_t mask = last_byte_mask(t);
  if (mask != 0xFF && t.byte_size() > 0) t.data()[t.byte_size() - 1] &= mask;
}

OutputMode output_mode(const Tensor &y) {
  switch (y.dtype()) {
    case QNT_DTYPE_I32:
      return OutputMode::Int32;
    case QNT_DTYPE_F32:
      return OutputMode::Float;
    case QNT_DTYPE_I8:
    case QNT_DTYPE_U8: {
      const auto &qp = y.qparams();
      if (!qp) fail(QNT_ERR_INVALID_QPARAMS, "y (", y.info().name, ") has no qparams");
      if (qp->granularity() != QNT_GRANULARITY_PER_TENSOR)
        fail(QNT_ERR_UNSUPPORTED, "a requantized output needs per-tensor qparams");
      return OutputMode::Requantize;
    }
    default:
      fail(QNT_ERR_DTYPE_MISMATCH, "y must be i32, i8, u8 or f32, not ", y.info().name);
  }
}

void check_bias(const Tensor *bias, int64_t n, bool float_allowed) {
  if (bias == nullptr) return;
  if (bias->rank() != 1 || bias->dims()[0] != n)
    fail(QNT_ERR_SHAPE_MISMATCH, "bias has shape ", shape_string(bias->dims()), ", expected [", n,
         "]");
  if (bias->dtype() == QNT_DTYPE_I32) return;
  if (bias->dtype() == QNT_DTYPE_F32 && float_allowed) return;
  fail(QNT_ERR_DTYPE_MISMATCH, "bias must be i32", float_allowed ? " or f32" : "", " here, not ",
       bias->info().name);
}

// x [..., K] as rows of K: the row count, checking y is [..., N].
int64_t linear_rows(const Tensor &x, int64_t K, int64_t N, const Tensor &y) {
  if (x.rank() < 1) fail(QNT_ERR_SHAPE_MISMATCH, "x must have at least one dimension");
  if (x.dims().back() != K)
    fail(QNT_ERR_SHAPE_MISMATCH, "x ", shape_string(x.dims()), " does not end in K = ", K,
         " of the weights");
  std::vector<int64_t> want = x.dims();
  want.back() = N;
  if (y.dims() != want)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(want));
  return K == 0 ? static_cast<int64_t>(y.element_count()) / std::max<int64_t>(N, 1)
                : static_cast<int64_t>(x.element_count()) / K;
}

// linear_rows, and y writable and apart from x: the run-time checks of every linear layer.
int64_t linear_io(const Tensor &x, int64_t K, int64_t N, const Tensor &y) {
  const int64_t rows = linear_rows(x, K, N, y);
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  return rows;
}

// The weight checks of the linear layers: w is [N, K]; bias f32 (or also i32) [N].
void check_linear_weights(const Tensor &w, const Tensor *bias, bool i32_bias_allowed) {
  if (w.rank() != 2) fail(QNT_ERR_SHAPE_MISMATCH, "w must be [N, K], not ", shape_string(w.dims()));
  check_bias(bias, w.dims()[0], true);
  if (!i32_bias_allowed && bias != nullptr && bias->dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, "bias must be f32 here, not ", bias->info().name);
}

void check_linear_io(const Tensor &x, const Tensor &w, const Tensor *bias, const Tensor &y) {
  require_float(x, "x");
  require_float(y, "y");
  (void)linear_io(x, w.dims()[1], w.dims()[0], y);
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
}

void require_activation(const Tensor &t, const char *role) {
  const qnt_dtype d = t.dtype();
  if (d != QNT_DTYPE_F32 && d != QNT_DTYPE_F16 && d != QNT_DTYPE_BF16)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must be f32, f16 or bf16, not ", t.info().name);
}

void widen_floats(qnt_dtype dtype, const uint8_t *in, float *out, size_t n) {
  if (dtype == QNT_DTYPE_F32) {
    std::memcpy(out, in, 4 * n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    out[i] = dtype == QNT_DTYPE_F16 ? rules::f16_to_f32(h) : rules::bf16_to_f32(h);
  }
}

void narrow_floats(qnt_dtype dtype, const float *in, uint8_t *out, size_t n) {
  if (dtype == QNT_DTYPE_F32) {
    std::memcpy(out, in, 4 * n);
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = dtype == QNT_DTYPE_F16 ? rules::f32_to_f16(in[i]) : rules::f32_to_bf16(in[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace qnt::ops
