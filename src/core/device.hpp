// Device memory and the placement of work: the core's side of the CUDA module. Everything here
// goes through the module's table (src/hw/cuda_module.h), so the core never links CUDA.
#pragma once

#include "core/context.hpp"
#include "hw/cuda_module.h"

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace qnt {

// Where a tensor's storage lives.
struct Place {
  qnt_device_type type = QNT_DEVICE_CPU;
  int32_t id = 0;
  bool is_cpu() const noexcept { return type == QNT_DEVICE_CPU; }
  bool operator==(const Place &o) const noexcept { return type == o.type && id == o.id; }
  bool operator!=(const Place &o) const noexcept { return !(*this == o); }
};

// "the CPU", "cuda:1"
std::string place_name(const Place &p);

// The module's table for CUDA device `device`; throws QNT_ERR_NO_DEVICE (naming the device and
// how many there are) when it is not usable.
const qnt_cuda_module &cuda_for(int32_t device);

// Throws the qnt_status of a module error code rc != 0, with CUDA's message after `what`.
void cuda_check(const qnt_cuda_module &m, int rc, const char *what);

// Validates a (type, id) pair given at the ABI: QNT_ERR_INVALID_ARGUMENT for a bad type or id,
// QNT_ERR_NO_DEVICE for a CUDA device that is not usable.
Place checked_place(qnt_device_type type, int32_t id);

// Zero-filled device memory, freed (cudaFree) when the last reference goes.
std::shared_ptr<void> device_alloc(int32_t device, size_t bytes);

// A copy of host memory on the device, as a typed pointer kept alive by the result.
std::shared_ptr<void> device_upload(int32_t device, const void *host, size_t bytes);

// Where and how an op's device work runs: the device, the stream, and whether the op waits for
// it before returning (contexts not bound to that device's stream; see qnt_context_set_cuda_stream).
struct Launch {
  const qnt_cuda_module *m = nullptr;
  int32_t device = 0;
  void *stream = nullptr;
  bool wait = true;

  // After the kernels are queued: waits when the op must, reporting the errors.
  void finish(const char *what) const;
};
Launch launch_for(const Context &ctx, const Place &where);

// Stream-ordered scratch memory for one op's launch.
class DeviceScratch {
 public:
  DeviceScratch(const Launch &l, size_t bytes);
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch &) = delete;
  DeviceScratch &operator=(const DeviceScratch &) = delete;
  void *get() const noexcept { return p_; }

 private:
  const Launch &l_;
  void *p_ = nullptr;
};

}  // namespace qnt
