// Element-wise quantized ops: add (with fused ReLU) and ReLU / clamped ReLU.
#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/parallel.hpp"
#include "ops/qops.hpp"

#include <algorithm>
#include <cmath>

namespace qnt::ops {
namespace {

constexpr size_t kGrain = 16384;  // a multiple of 8: packed outputs never share a byte

// An integer-rule dtype with qparams (any granularity).
ref::QuantSpec integer_spec(const Tensor &t, const char *role) {
  if (t.info().rule != Rule::Integer)
    fail(QNT_ERR_DTYPE_MISMATCH, role, " must have an integer dtype, not ", t.info().name);
  return quantized_spec(t, role);
}

void require_per_tensor(const Tensor &t, const char *role) {
  if (t.qparams()->granularity() != QNT_GRANULARITY_PER_TENSOR)
    fail(QNT_ERR_UNSUPPORTED, role, " needs per-tensor qparams for this op");
}

}  // namespace

void qadd(const Context &ctx, const Tensor &a, const Tensor &b, bool fuse_relu, Tensor &y) {
  const ref::QuantSpec sa = integer_spec(a, "a");
  const ref::QuantSpec sb = integer_spec(b, "b");
  const ref::QuantSpec sy = integer_spec(y, "y");
  require_per_tensor(a, "a");
  require_per_tensor(b, "b");
  require_per_tensor(y, "y");
  if (a.dims() != b.dims() || a.dims() != y.dims())
    fail(QNT_ERR_UNSUPPORTED, "qnt_qadd needs equal shapes (no broadcasting): a ",
         shape_string(a.dims()), ", b ", shape_string(b.dims()), ", y ", shape_string(y.dims()));
  require_writable(y, "y");
  require_disjoint(y, a, "y", "a");
  require_disjoint(y, b, "y", "b");
  parallel_for(ctx.threads(), y.element_count(), kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const float fa = ref::dequantize_integer(
          ref::load_element(a.data(), i, sa.bits, sa.is_signed), sa.scales[0], sa.zero_points[0]);
      const float fb = ref::dequantize_integer(
          ref::load_element(b.data(), i, sb.bits, sb.is_signed), sb.scales[0], sb.zero_points[0]);
      const float sum = fa + fb;
      int32_t q = ref::quantize_integer(sum, sy.scales[0], sy.zero_points[0], sy.qmin, sy.qmax);
      if (fuse_relu) q = std::max(q, sy.zero_points[0]);
      ref::store_element(y.data(), i, sy.bits, q);
    }
  });
  clear_tail_bits(y);
}

void qrelu(const Context &ctx, const Tensor &x, const float *upper, Tensor &y) {
  const ref::QuantSpec sx = integer_spec(x, "x");
  if (y.dtype() != x.dtype())
    fail(QNT_ERR_DTYPE_MISMATCH, "y is ", y.info().name, ", x is ", x.info().name);
  require_same_shape(x, "x", y, "y");
  if (!y.qparams() || !same_qparams(*x.qparams(), *y.qparams()))
    fail(QNT_ERR_INVALID_QPARAMS, "y must carry the same qparams as x");
  if (upper != nullptr && !(std::isfinite(*upper) && *upper >= 0.0f))
    fail(QNT_ERR_INVALID_ARGUMENT, "upper = ", *upper, " must be finite and >= 0");
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  if (x.element_count() == 0) return;
  std::vector<int32_t> top(sx.layout.groups, sx.qmax);
  if (upper != nullptr)
    for (size_t g = 0; g < top.size(); ++g)
      top[g] = ref::quantize_integer(*upper, sx.scales[g], sx.zero_points[g], sx.qmin, sx.qmax);
  parallel_for(ctx.threads(), x.element_count(), kGrain, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const size_t g = sx.layout.group_of(i);
      const int32_t q = ref::load_element(x.data(), i, sx.bits, sx.is_signed);
      ref::store_element(y.data(), i, sx.bits, std::min(std::max(q, sx.zero_points[g]), top[g]));
    }
  });
  clear_tail_bits(y);
}

}  // namespace qnt::ops
