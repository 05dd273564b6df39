// Quantization parameters: dtype, granularity, scales and zero points. Immutable once made,
// shared by reference (std::shared_ptr) between tensors and handles.
#pragma once

#include "core/dtype.hpp"
#include "core/layout.hpp"

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace qnt {

class QParams {
 public:
  // Validates and copies; zero_points may be nullptr (the dtype's symmetric zero point).
  // Throws QNT_ERR_INVALID_ARGUMENT or QNT_ERR_INVALID_QPARAMS.
  static std::shared_ptr<const QParams> create(qnt_dtype dtype, qnt_granularity granularity,
                                               int64_t axis, int64_t block_size,
                                               const float *scales, const int32_t *zero_points,
                                               size_t count);

  qnt_dtype dtype() const noexcept { return dtype_; }
  const DTypeInfo &info() const noexcept { return *info_; }
  qnt_granularity granularity() const noexcept { return granularity_; }
  int64_t axis() const noexcept { return axis_; }
  int64_t block_size() const noexcept { return block_size_; }
  size_t count() const noexcept { return scales_.size(); }
  const float *scales() const noexcept { return scales_.data(); }
  const int32_t *zero_points() const noexcept { return zero_points_.data(); }
  bool symmetric() const noexcept;

  // The layout over a tensor of this shape; throws QNT_ERR_SHAPE_MISMATCH when the axis or the
  // parameter count does not fit it.
  GroupLayout layout_for(const int64_t *shape, size_t rank) const;

 private:
  QParams() = default;
  qnt_dtype dtype_ = QNT_DTYPE_F32;
  const DTypeInfo *info_ = nullptr;
  qnt_granularity granularity_ = QNT_GRANULARITY_PER_TENSOR;
  int64_t axis_ = 0;
  int64_t block_size_ = 0;
  std::vector<float> scales_;
  std::vector<int32_t> zero_points_;
};

}  // namespace qnt
