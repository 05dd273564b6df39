#include "core/tensor.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace qnt {

size_t checked_element_count(const int64_t *shape, size_t rank) {
  if (rank > QNT_MAX_RANK)
    fail(QNT_ERR_UNSUPPORTED, "rank ", rank, " is above QNT_MAX_RANK (", QNT_MAX_RANK, ")");
  if (rank > 0 && shape == nullptr) fail(QNT_ERR_NULL_POINTER, "shape is NULL but rank is ", rank);
  // Every dimension, and the product of the nonzero ones, stays at or below QNT_MAX_ELEMENTS
  // (PTRDIFF_MAX / 4), even when another dimension is 0. So byte sizes, the signed index
  // arithmetic of the kernels, and any product of one tensor's dimensions never overflow.
  static_assert(QNT_MAX_ELEMENTS <= std::numeric_limits<ptrdiff_t>::max() / 4, "limit");
  const auto limit = static_cast<uint64_t>(QNT_MAX_ELEMENTS);
  for (size_t i = 0; i < rank; ++i)
    if (shape[i] < 0) fail(QNT_ERR_INVALID_ARGUMENT, "dimension ", i, " is ", shape[i], " < 0");
  uint64_t nonzero = 1;
  bool empty = false;
  for (size_t i = 0; i < rank; ++i) {
    const auto d = static_cast<uint64_t>(shape[i]);
    if (d == 0) {
      empty = true;
      continue;
    }
    if (d > limit || nonzero > limit / d)
      fail(QNT_ERR_OVERFLOW, "the shape's element count overflows (dimension ", i, " = ", shape[i],
           "; every dimension and the product of the nonzero ones must be <= 2^61 - 1)");
    nonzero *= d;
  }
  return empty ? 0 : static_cast<size_t>(nonzero);
}

size_t checked_byte_size(const DTypeInfo &info, size_t n) {
  const auto limit = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max() / 4);
  if (n > limit) fail(QNT_ERR_OVERFLOW, "element count ", n, " is too large");
  const auto bits = static_cast<size_t>(info.bits);
  // n <= PTRDIFF_MAX / 4 and bits <= 32: n * bits cannot wrap a 64-bit size_t.
  if (bits > 8 && n > limit / (bits / 8)) fail(QNT_ERR_OVERFLOW, "byte size overflows");
  return bits >= 8 ? n * (bits / 8) : n / (8 / bits) + (n % (8 / bits) != 0 ? 1 : 0);
}

Tensor::Tensor(qnt_dtype dtype, const int64_t *shape, size_t rank,
               std::shared_ptr<const QParams> qparams, Storage storage, void *data,
               size_t data_bytes, std::shared_ptr<void> keeper, bool read_only, Place place)
    : info_(&dtype_info(dtype)), read_only_(read_only), place_(place) {
  count_ = checked_element_count(shape, rank);
  bytes_ = checked_byte_size(*info_, count_);
  if (rank > 0) shape_.assign(shape, shape + rank);
  if (qparams) {
    if (info_->rule == Rule::Float)
      fail(QNT_ERR_INVALID_ARGUMENT, "an ", info_->name, " tensor cannot carry qparams");
    if (qparams->dtype() != dtype)
      fail(QNT_ERR_DTYPE_MISMATCH, "qparams are for ", qparams->info().name, " but the tensor is ",
           info_->name);
    (void)qparams->layout_for(shape_.data(), rank);
    qparams_ = std::move(qparams);
  }

  if (storage == Storage::Borrow || storage == Storage::Adopt) {
    if (data == nullptr && bytes_ > 0) fail(QNT_ERR_NULL_POINTER, "data is NULL");
    if (data_bytes < bytes_)
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the buffer holds ", data_bytes, " bytes, the tensor needs ",
           bytes_);
    const auto align = static_cast<uintptr_t>(info_->bits >= 8 ? info_->bits / 8 : 1);
    if (reinterpret_cast<uintptr_t>(data) % align != 0)
      fail(QNT_ERR_INVALID_ARGUMENT, "data is not aligned to ", align, " bytes for ", info_->name);
    data_ = static_cast<uint8_t *>(data);
    if (storage == Storage::Adopt) keeper_ = std::move(keeper);
    return;
  }
  if (!place_.is_cpu()) {
    if (storage != Storage::Zeroed)
      fail(QNT_ERR_INTERNAL, "a device tensor is made by Zeroed, Borrow or Adopt only");
    if (bytes_ > 0) {
      keeper_ = device_alloc(place_.id, bytes_);
      data_ = static_cast<uint8_t *>(keeper_.get());
    }
    return;
  }
  if (storage == Storage::Copy) {
    if (data == nullptr && bytes_ > 0) fail(QNT_ERR_NULL_POINTER, "data is NULL");
    if (data_bytes < bytes_)
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the buffer holds ", data_bytes, " bytes, the tensor needs ",
           bytes_);
  }
  if (bytes_ > 0) {
    const size_t rounded = (bytes_ + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    // If the control block cannot be allocated, shared_ptr frees p itself and rethrows.
    keeper_ = std::shared_ptr<void>(p, [](void *q) { std::free(q); });
    data_ = static_cast<uint8_t *>(p);
    if (storage == Storage::Copy) {
      std::memcpy(data_, data, bytes_);
      std::memset(data_ + bytes_, 0, rounded - bytes_);
    } else {
      std::memset(data_, 0, rounded);
    }
  }
}

}  // namespace qnt
