// A dense, row-major tensor: dtype, shape, optional qparams, and storage that is either owned
// (64-byte aligned) or borrowed from the caller.
#pragma once

#include "core/device.hpp"
#include "core/dtype.hpp"
#include "core/qparams.hpp"

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace qnt {

// The element count of a shape; throws QNT_ERR_INVALID_ARGUMENT (negative dimension),
// QNT_ERR_UNSUPPORTED (rank > QNT_MAX_RANK) or QNT_ERR_OVERFLOW (a dimension, or the product of
// the nonzero ones, above QNT_MAX_ELEMENTS: empty shapes are bounded too).
size_t checked_element_count(const int64_t *shape, size_t rank);

// ceil(n * bits / 8); throws QNT_ERR_OVERFLOW when it does not fit in ptrdiff_t.
size_t checked_byte_size(const DTypeInfo &info, size_t n);

class Tensor {
 public:
  // Zeroed and Copy allocate; Borrow uses the caller's memory; Adopt uses memory kept alive by
  // `keeper` (a DLPack import: its deleter runs when the last reference goes). Borrow and Adopt
  // take memory on `place`; Zeroed allocates there; Copy is host memory only.
  enum class Storage { Zeroed, Copy, Borrow, Adopt };

  // Validates everything named at qnt_tensor_create and friends in qnt.h.
  Tensor(qnt_dtype dtype, const int64_t *shape, size_t rank, std::shared_ptr<const QParams> qparams,
         Storage storage, void *data, size_t data_bytes, std::shared_ptr<void> keeper = {},
         bool read_only = false, Place place = {});

  qnt_dtype dtype() const noexcept { return info_->id; }
  const DTypeInfo &info() const noexcept { return *info_; }
  size_t rank() const noexcept { return shape_.size(); }
  const int64_t *shape() const noexcept { return shape_.data(); }
  const std::vector<int64_t> &dims() const noexcept { return shape_; }
  size_t element_count() const noexcept { return count_; }
  size_t byte_size() const noexcept { return bytes_; }
  const std::shared_ptr<const QParams> &qparams() const noexcept { return qparams_; }
  uint8_t *data() noexcept { return data_; }
  const uint8_t *data() const noexcept { return data_; }
  bool read_only() const noexcept { return read_only_; }
  const Place &place() const noexcept { return place_; }
  bool on_cpu() const noexcept { return place_.is_cpu(); }
  // What keeps the storage alive (null for borrowed memory); an export holds a copy.
  const std::shared_ptr<void> &keeper() const noexcept { return keeper_; }
  // For Adopt storage, once the tensor is valid: what keeps the memory alive from now on.
  void set_keeper(std::shared_ptr<void> k) noexcept { keeper_ = std::move(k); }

 private:
  const DTypeInfo *info_;
  std::vector<int64_t> shape_;
  size_t count_ = 0;
  size_t bytes_ = 0;
  std::shared_ptr<const QParams> qparams_;
  std::shared_ptr<void> keeper_;
  uint8_t *data_ = nullptr;
  bool read_only_ = false;
  Place place_;
};

}  // namespace qnt
