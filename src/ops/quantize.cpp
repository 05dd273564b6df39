#include "ops/quantize.hpp"

#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/parallel.hpp"

#include <cstring>

namespace qnt::ops {
namespace {

// Elements per task; a multiple of 8 so that no byte of packed output is shared by two tasks.
constexpr size_t kGrain = 16384;

void require_float(const Tensor &t, const char *role) {
  if (t.info().rule != Rule::Float)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must be f32, not ", t.info().name);
}

ref::QuantSpec quantized_spec(const Tensor &t, const char *role) {
  if (t.info().rule == Rule::Float)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must have a quantized dtype, not ", t.info().name);
  const auto &qp = t.qparams();
  if (!qp) fail(QNT_ERR_INVALID_QPARAMS, role, " (", t.info().name, ") has no qparams");
  ref::QuantSpec s;
  switch (t.info().rule) {
    case Rule::NF4:
      s.code = ref::Code::NF4;
      break;
    case Rule::Binary:
      s.code = ref::Code::Binary;
      break;
    default:
      s.code = ref::Code::Integer;
      break;
  }
  s.bits = t.info().bits;
  s.is_signed = t.info().is_signed;
  s.qmin = t.info().qmin;
  s.qmax = t.info().qmax;
  s.layout = qp->layout_for(t.shape(), t.rank());
  s.scales = qp->scales();
  s.zero_points = qp->zero_points();
  return s;
}

void require_same_shape(const Tensor &a, const char *an, const Tensor &b, const char *bn) {
  if (a.dims() != b.dims()) {
    std::string sa, sb;
    for (int64_t d : a.dims()) sa += (sa.empty() ? "" : ",") + std::to_string(d);
    for (int64_t d : b.dims()) sb += (sb.empty() ? "" : ",") + std::to_string(d);
    fail(QNT_ERR_SHAPE_MISMATCH, an, " has shape [", sa, "] but ", bn, " has shape [", sb, "]");
  }
}

void require_disjoint(const Tensor &a, const Tensor &b) {
  const uint8_t *pa = a.data(), *pb = b.data();
  if (a.byte_size() == 0 || b.byte_size() == 0) return;
  const auto ua = reinterpret_cast<uintptr_t>(pa), ub = reinterpret_cast<uintptr_t>(pb);
  if (ua < ub + b.byte_size() && ub < ua + a.byte_size())
    fail(QNT_ERR_INVALID_ARGUMENT, "input and output share storage; in-place is not supported");
}

// Packed outputs: the bits past the last element of the last byte are written as 0.
void clear_tail_bits(Tensor &t) {
  const int bits = t.info().bits;
  if (bits >= 8 || t.byte_size() == 0) return;
  const size_t used = (t.element_count() * static_cast<size_t>(bits)) % 8;
  if (used != 0) t.data()[t.byte_size() - 1] &= static_cast<uint8_t>((1u << used) - 1u);
}

}  // namespace

void quantize(const Context &ctx, const Tensor &x, Tensor &y) {
  require_float(x, "x");
  const ref::QuantSpec spec = quantized_spec(y, "y");
  require_same_shape(x, "x", y, "y");
  require_disjoint(x, y);
  const auto *in = reinterpret_cast<const float *>(x.data());
  uint8_t *out = y.data();
  parallel_for(ctx.threads(), x.element_count(), kGrain,
               [&](size_t b, size_t e) { ref::quantize(spec, in + b, out, b, e); });
  clear_tail_bits(y);
}

void dequantize(const Context &ctx, const Tensor &q, Tensor &y) {
  const ref::QuantSpec spec = quantized_spec(q, "q");
  require_float(y, "y");
  require_same_shape(q, "q", y, "y");
  require_disjoint(q, y);
  const uint8_t *in = q.data();
  auto *out = reinterpret_cast<float *>(y.data());
  parallel_for(ctx.threads(), q.element_count(), kGrain,
               [&](size_t b, size_t e) { ref::dequantize(spec, in, out + b, b, e); });
}

void requantize(const Context &ctx, const Tensor &src, Tensor &dst) {
  const ref::QuantSpec from = quantized_spec(src, "src");
  const ref::QuantSpec to = quantized_spec(dst, "dst");
  require_same_shape(src, "src", dst, "dst");
  require_disjoint(src, dst);
  const uint8_t *in = src.data();
  uint8_t *out = dst.data();
  parallel_for(ctx.threads(), src.element_count(), kGrain, [&](size_t b, size_t e) {
    // Through float32, a small piece at a time, so no allocation is needed.
    constexpr size_t kPiece = 1024;
    float buf[kPiece];
    for (size_t piece = b; piece < e; piece += kPiece) {
      const size_t end = piece + kPiece < e ? piece + kPiece : e;
      ref::dequantize(from, in, buf, piece, end);
      ref::quantize(to, buf, out, piece, end);
    }
  });
  clear_tail_bits(dst);
}

}  // namespace qnt::ops
