// How the elements of a tensor map to the parameters (scales, zero points) of a granularity.
// A plain value type shared by the ops, the calibrators and the kernels.
#pragma once

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>

namespace qnt {

// The tensor's shape seen as [outer, dim, inner] around the axis. Parameters are numbered as
// the row-major array of shape [outer, blocks, inner] (per-block), [dim] (per-axis) or [1].
struct GroupLayout {
  qnt_granularity granularity = QNT_GRANULARITY_PER_TENSOR;
  int64_t outer = 1;
  int64_t dim = 1;
  int64_t inner = 1;
  int64_t block = 1;   // per-block: the block size
  int64_t blocks = 1;  // per-block: ceil(dim / block)
  size_t groups = 1;   // the number of parameters

  // The parameter index of flat (row-major) element i.
  size_t group_of(size_t i) const noexcept {
    const auto e = static_cast<int64_t>(i);
    switch (granularity) {
      case QNT_GRANULARITY_PER_AXIS:
        return static_cast<size_t>((e / inner) % dim);
      case QNT_GRANULARITY_PER_BLOCK: {
        const int64_t in = e % inner;
        const int64_t rest = e / inner;
        const int64_t d = rest % dim;
        const int64_t o = rest / dim;
        return static_cast<size_t>((o * blocks + d / block) * inner + in);
      }
      default:
        return 0;
    }
  }
};

// The layout of granularity g along axis (negative counts from the end) with block size
// `block` (per-block only) over a tensor of the given shape. Throws QNT_ERR_INVALID_ARGUMENT for
// an axis outside [-rank, rank), a block size <= 0, a bad granularity, or an axis of size 0.
GroupLayout make_layout(qnt_granularity g, int64_t axis, int64_t block, const int64_t *shape,
                        size_t rank);

}  // namespace qnt
