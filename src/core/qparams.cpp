#include "core/qparams.hpp"

#include "core/error.hpp"

#include <cmath>
#include <string>

namespace qnt {

GroupLayout make_layout(qnt_granularity g, int64_t axis, int64_t block, const int64_t *shape,
                        size_t rank) {
  GroupLayout l;
  l.granularity = g;
  if (g == QNT_GRANULARITY_PER_TENSOR) {
    int64_t n = 1;
    for (size_t i = 0; i < rank; ++i) n *= shape[i];
    l.inner = n;
    return l;
  }
  if (g != QNT_GRANULARITY_PER_AXIS && g != QNT_GRANULARITY_PER_BLOCK)
    fail(QNT_ERR_INVALID_ARGUMENT, "granularity = ", static_cast<int32_t>(g),
         " is not a qnt_granularity");
  const auto r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(QNT_ERR_INVALID_ARGUMENT, "axis ", axis, " is outside [", -r, ", ", r,
         ") for a tensor of rank ", r);
  const auto a = static_cast<size_t>(axis < 0 ? axis + r : axis);
  for (size_t i = 0; i < a; ++i) l.outer *= shape[i];
  l.dim = shape[a];
  for (size_t i = a + 1; i < rank; ++i) l.inner *= shape[i];
  if (g == QNT_GRANULARITY_PER_AXIS) {
    l.groups = static_cast<size_t>(l.dim);
    return l;
  }
  if (block <= 0) fail(QNT_ERR_INVALID_ARGUMENT, "block size ", block, " must be > 0");
  l.block = block;
  l.blocks = l.dim / block + (l.dim % block != 0 ? 1 : 0);
  l.groups =
      static_cast<size_t>(l.outer) * static_cast<size_t>(l.blocks) * static_cast<size_t>(l.inner);
  return l;
}

std::shared_ptr<const QParams> QParams::create(qnt_dtype dtype, qnt_granularity granularity,
                                               int64_t axis, int64_t block_size,
                                               const float *scales, const int32_t *zero_points,
                                               size_t count) {
  const DTypeInfo &info = dtype_info(dtype);
  if (info.rule == Rule::Float)
    fail(QNT_ERR_INVALID_QPARAMS, "qparams need a quantized dtype, not ", info.name);
  if (granularity != QNT_GRANULARITY_PER_TENSOR && granularity != QNT_GRANULARITY_PER_AXIS &&
      granularity != QNT_GRANULARITY_PER_BLOCK)
    fail(QNT_ERR_INVALID_ARGUMENT, "granularity = ", static_cast<int32_t>(granularity),
         " is not a qnt_granularity");
  if (count == 0) fail(QNT_ERR_INVALID_ARGUMENT, "the parameter count must be > 0");
  if (granularity == QNT_GRANULARITY_PER_TENSOR && count != 1)
    fail(QNT_ERR_INVALID_ARGUMENT, "per-tensor qparams have one scale, not ", count);
  if (axis < -QNT_MAX_RANK || axis >= QNT_MAX_RANK)
    fail(QNT_ERR_INVALID_ARGUMENT, "axis ", axis, " is outside [", -QNT_MAX_RANK, ", ",
         QNT_MAX_RANK, ")");
  if (granularity == QNT_GRANULARITY_PER_BLOCK && block_size <= 0)
    fail(QNT_ERR_INVALID_ARGUMENT, "block size ", block_size, " must be > 0");
  if (scales == nullptr) fail(QNT_ERR_NULL_POINTER, "scales is NULL");
  if (count > (size_t{1} << 40))
    fail(QNT_ERR_OVERFLOW, "parameter count ", count, " is larger than any tensor qnt accepts");

  std::shared_ptr<QParams> qp(new QParams());
  qp->dtype_ = dtype;
  qp->info_ = &info;
  qp->granularity_ = granularity;
  qp->axis_ = granularity == QNT_GRANULARITY_PER_TENSOR ? 0 : axis;
  qp->block_size_ = granularity == QNT_GRANULARITY_PER_BLOCK ? block_size : 0;
  qp->scales_.assign(scales, scales + count);
  const int32_t sym = symmetric_zero_point(info);
  if (zero_points != nullptr)
    qp->zero_points_.assign(zero_points, zero_points + count);
  else
    qp->zero_points_.assign(count, sym);

  for (size_t i = 0; i < count; ++i) {
    const float s = qp->scales_[i];
    if (!std::isfinite(s) || !(s > 0.0f))
      fail(QNT_ERR_INVALID_QPARAMS, "scale[", i, "] = ", s, " must be finite and > 0");
    const int32_t z = qp->zero_points_[i];
    if (info.zero_point_fixed && z != 0)
      fail(QNT_ERR_INVALID_QPARAMS, "zero_point[", i, "] = ", z, " must be 0 for ", info.name);
    if (z < info.qmin || z > info.qmax)
      fail(QNT_ERR_INVALID_QPARAMS, "zero_point[", i, "] = ", z, " is outside [", info.qmin, ", ",
           info.qmax, "] of ", info.name);
  }
  return qp;
}

bool QParams::symmetric() const noexcept {
  const int32_t sym = symmetric_zero_point(*info_);
  for (int32_t z : zero_points_)
    if (z != sym) return false;
  return true;
}

GroupLayout QParams::layout_for(const int64_t *shape, size_t rank) const {
  if (granularity_ != QNT_GRANULARITY_PER_TENSOR) {
    const auto r = static_cast<int64_t>(rank);
    if (axis_ < -r || axis_ >= r)
      fail(QNT_ERR_SHAPE_MISMATCH, "qparams axis ", axis_, " does not exist in a tensor of rank ",
           r);
  }
  const GroupLayout l = make_layout(granularity_, axis_, block_size_, shape, rank);
  if (l.groups != count())
    fail(QNT_ERR_SHAPE_MISMATCH, "qparams hold ", count(), " scales but the tensor needs ",
         l.groups,
         granularity_ == QNT_GRANULARITY_PER_AXIS    ? " (one per index along the axis)"
         : granularity_ == QNT_GRANULARITY_PER_BLOCK ? " (one per block)"
                                                     : "");
  return l;
}

}  // namespace qnt
