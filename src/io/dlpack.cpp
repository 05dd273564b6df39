#include "io/dlpack.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <new>
#include <vector>

namespace qnt::dlpack {
namespace {

// The DLPack type of each qnt dtype; false where DLPack has none.
bool to_dl(qnt_dtype d, DLDataType &out) {
  switch (d) {
    case QNT_DTYPE_F32:
      out = {kDLFloat, 32, 1};
      return true;
    case QNT_DTYPE_I32:
      out = {kDLInt, 32, 1};
      return true;
    case QNT_DTYPE_I8:
      out = {kDLInt, 8, 1};
      return true;
    case QNT_DTYPE_U8:
      out = {kDLUInt, 8, 1};
      return true;
    case QNT_DTYPE_I16:
      out = {kDLInt, 16, 1};
      return true;
    case QNT_DTYPE_U16:
      out = {kDLUInt, 16, 1};
      return true;
    case QNT_DTYPE_I4:
      out = {kDLInt, 4, 1};
      return true;
    case QNT_DTYPE_U4:
      out = {kDLUInt, 4, 1};
      return true;
    case QNT_DTYPE_TERNARY:
      out = {kDLInt, 2, 1};
      return true;
    case QNT_DTYPE_F16:
      out = {kDLFloat, 16, 1};
      return true;
    case QNT_DTYPE_BF16:
      out = {kDLBfloat, 16, 1};
      return true;
    default:
      return false;
  }
}

qnt_dtype from_dl(const DLDataType &t) {
  if (t.lanes != 1)
    fail(QNT_ERR_UNSUPPORTED, "DLPack vector types (lanes = ", t.lanes, ") are not supported");
  static const qnt_dtype all[] = {QNT_DTYPE_F32, QNT_DTYPE_I32, QNT_DTYPE_I8,
                                  QNT_DTYPE_U8,  QNT_DTYPE_I16, QNT_DTYPE_U16,
                                  QNT_DTYPE_I4,  QNT_DTYPE_U4,  QNT_DTYPE_TERNARY,
                                  QNT_DTYPE_F16, QNT_DTYPE_BF16};
  for (qnt_dtype d : all) {
    DLDataType m{};
    to_dl(d, m);
    if (m.code == t.code && m.bits == t.bits) return d;
  }
  fail(QNT_ERR_UNSUPPORTED, "DLPack dtype {code ", static_cast<int>(t.code), ", bits ",
       static_cast<int>(t.bits), "} has no qnt dtype");
}

// What an export's manager_ctx points at: the shape, strides and a reference to the storage.
struct Export {
  std::shared_ptr<void> keeper;
  std::vector<int64_t> shape, strides;
};

// Calls the imported tensor's deleter once, when the last reference goes.
struct Owner {
  void *managed;
  bool versioned;
  Owner(void *m, bool v) noexcept : managed(m), versioned(v) {}
  Owner(const Owner &) = delete;
  Owner &operator=(const Owner &) = delete;
  ~Owner() {
    if (versioned) {
      auto *m = static_cast<DLManagedTensorVersioned *>(managed);
      if (m->deleter != nullptr) m->deleter(m);
    } else {
      auto *m = static_cast<DLManagedTensor *>(managed);
      if (m->deleter != nullptr) m->deleter(m);
    }
  }
};

template <class Managed>
void delete_export(Managed *m) noexcept {
  if (m == nullptr) return;
  delete static_cast<Export *>(m->manager_ctx);
  delete m;
}

}  // namespace

std::unique_ptr<Tensor> import(void *managed, bool versioned,
                               std::shared_ptr<const QParams> qparams) {
  if (managed == nullptr) fail(QNT_ERR_NULL_POINTER, "managed is NULL");
  const DLTensor *t = nullptr;
  bool read_only = false;
  if (versioned) {
    auto *m = static_cast<DLManagedTensorVersioned *>(managed);
    // The spec: on a major mismatch nothing but the deleter may be touched; refusing leaves the
    // tensor to the caller, who calls it.
    if (m->version.major != kMajorVersion)
      fail(QNT_ERR_UNSUPPORTED, "DLPack major version ", m->version.major, " (qnt reads ",
           kMajorVersion, ")");
    t = &m->dl_tensor;
    read_only = (m->flags & kFlagReadOnly) != 0;
    if ((m->flags & kFlagSubbytePadded) != 0)
      fail(QNT_ERR_UNSUPPORTED, "padded sub-byte DLPack tensors are not supported (qnt packs)");
  } else {
    t = &static_cast<DLManagedTensor *>(managed)->dl_tensor;
  }
  Place place;
  if (t->device.device_type == kDLCUDA) {
    place = checked_place(QNT_DEVICE_CUDA, t->device.device_id);
  } else if (t->device.device_type != kDLCPU && t->device.device_type != kDLCUDAHost) {
    fail(QNT_ERR_UNSUPPORTED, "DLPack device type ", t->device.device_type,
         " is not host memory (kDLCPU, kDLCUDAHost) or a CUDA device (kDLCUDA)");
  }
  const qnt_dtype dtype = from_dl(t->dtype);
  if (t->ndim < 0 || t->ndim > QNT_MAX_RANK)
    fail(QNT_ERR_INVALID_ARGUMENT, "ndim = ", t->ndim, " is outside [0, ", QNT_MAX_RANK, "]");
  const auto rank = static_cast<size_t>(t->ndim);
  if (rank > 0 && t->shape == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, "shape is NULL");
  const DTypeInfo &info = dtype_info(dtype);
  const size_t count = checked_element_count(t->shape, rank);
  const size_t bytes = checked_byte_size(info, count);
  if (t->strides != nullptr && info.bits >= 8) {
    int64_t expect = 1;
    for (size_t i = rank; i-- > 0;) {
      if (t->shape[i] != 1 && t->strides[i] != expect)
        fail(QNT_ERR_INVALID_ARGUMENT, "strides are not row-major and compact (dimension ", i,
             " has stride ", t->strides[i], ", expected ", expect, ")");
      expect *= t->shape[i];  // bounded by the element count check
    }
  } else if (t->strides != nullptr) {
    // Packed sub-byte types: strides count elements; only the row-major ones make sense.
    int64_t expect = 1;
    for (size_t i = rank; i-- > 0;) {
      if (t->shape[i] != 1 && t->strides[i] != expect)
        fail(QNT_ERR_INVALID_ARGUMENT, "strides of a packed tensor must be row-major");
      expect *= t->shape[i];
    }
  }
  if (t->data == nullptr && bytes > 0)
    fail(QNT_ERR_NULL_POINTER, "the DLPack tensor's data is NULL");
  // data + byte_offset, without pointer arithmetic on NULL or past the address space.
  const auto base = reinterpret_cast<uintptr_t>(t->data);
  if (t->byte_offset > static_cast<uint64_t>(PTRDIFF_MAX) || base + t->byte_offset < base)
    fail(QNT_ERR_INVALID_ARGUMENT, "byte_offset ", t->byte_offset, " is out of range");
  uint8_t *data = t->data == nullptr ? nullptr : static_cast<uint8_t *>(t->data) + t->byte_offset;
  // Validate and build first: until the tensor exists, `managed` stays the caller's.
  auto tensor = std::make_unique<Tensor>(dtype, t->shape, rank, std::move(qparams),
                                         Tensor::Storage::Adopt, data, bytes, nullptr, read_only,
                                         place);
  // The deleter runs when the last user of the memory (this tensor, or an export of it) goes.
  // make_shared allocates before it constructs, so if it throws no deleter has run.
  tensor->set_keeper(std::make_shared<Owner>(managed, versioned));
  return tensor;
}

void *export_tensor(const Tensor &t, bool versioned) {
  DLDataType dt{};
  if (!to_dl(t.dtype(), dt))
    fail(QNT_ERR_UNSUPPORTED, t.info().name,
         " has no DLPack type (its values are codebook entries, not integers)");
  auto ex = std::make_unique<Export>();
  ex->keeper = t.keeper();
  ex->shape = t.dims();
  ex->strides.assign(t.rank(), 1);
  for (size_t i = t.rank(); i-- > 1;) ex->strides[i - 1] = ex->strides[i] * t.dims()[i];
  DLTensor dl{};
  dl.data = const_cast<uint8_t *>(t.data());
  dl.device = t.on_cpu() ? DLDevice{kDLCPU, 0} : DLDevice{kDLCUDA, t.place().id};
  dl.ndim = static_cast<int32_t>(t.rank());
  dl.dtype = dt;
  dl.shape = ex->shape.empty() ? nullptr : ex->shape.data();
  dl.byte_offset = 0;
  if (versioned) {
    auto m = std::make_unique<DLManagedTensorVersioned>();
    dl.strides = ex->strides.empty() ? nullptr : ex->strides.data();
    m->version = {kMajorVersion, kMinorVersion};
    m->flags = t.read_only() ? kFlagReadOnly : 0;
    m->dl_tensor = dl;
    m->manager_ctx = ex.release();
    m->deleter = &delete_export<DLManagedTensorVersioned>;
    return m.release();
  }
  auto m = std::make_unique<DLManagedTensor>();
  dl.strides = nullptr;
  m->dl_tensor = dl;
  m->manager_ctx = ex.release();
  m->deleter = &delete_export<DLManagedTensor>;
  return m.release();
}

}  // namespace qnt::dlpack
