// DLPack's C structures, declared here from the specification (https://dmlc.github.io/dlpack)
// so that the library needs no dlpack.h: the legacy DLManagedTensor (DLPack < 1.0) and the
// versioned DLManagedTensorVersioned (DLPack >= 1.0, major 1). The layouts are pinned by static
// asserts below and, where Debian's libdlpack-dev is installed, compared field by field with its
// dlpack.h in the tests.
#pragma once

#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace qnt::dlpack {

enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 };
constexpr uint32_t kMajorVersion = 1;
constexpr uint32_t kMinorVersion = 0;
constexpr uint64_t kFlagReadOnly = uint64_t{1} << 0;
constexpr uint64_t kFlagIsCopied = uint64_t{1} << 1;
constexpr uint64_t kFlagSubbytePadded = uint64_t{1} << 2;

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
};

static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4, "DLPack layout");
static_assert(offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 &&
                  offsetof(DLTensor, dtype) == 20 && offsetof(DLTensor, shape) == 24 &&
                  offsetof(DLTensor, strides) == 32 && offsetof(DLTensor, byte_offset) == 40 &&
                  sizeof(DLTensor) == 48,
              "DLTensor layout (64-bit)");
static_assert(offsetof(DLManagedTensor, manager_ctx) == 48 &&
                  offsetof(DLManagedTensor, deleter) == 56 && sizeof(DLManagedTensor) == 64,
              "DLManagedTensor layout (64-bit)");
static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
                  offsetof(DLManagedTensorVersioned, deleter) == 16 &&
                  offsetof(DLManagedTensorVersioned, flags) == 24 &&
                  offsetof(DLManagedTensorVersioned, dl_tensor) == 32 &&
                  sizeof(DLManagedTensorVersioned) == 80,
              "DLManagedTensorVersioned layout (64-bit)");

// A tensor over the DLPack tensor's memory; on success it owns `managed` (see qnt.h).
std::unique_ptr<Tensor> import(void *managed, bool versioned,
                               std::shared_ptr<const QParams> qparams);

// A new DLManagedTensor(Versioned) that keeps t's storage alive (see qnt.h).
void *export_tensor(const Tensor &t, bool versioned);

}  // namespace qnt::dlpack
