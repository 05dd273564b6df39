// What the machine can do: CPU features (with the OS checks), CPU counts, caches, CUDA devices.
// Detected once per process; the result is immutable afterwards.
#pragma once

#include "hw/cuda_module.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qnt::hw {

struct CudaDevice {
  int32_t major = 0;
  int32_t minor = 0;
};

struct MachineInfo {
  uint64_t cpu_features = 0;  // OR of qnt_cpu_feature bits
  int32_t logical_cpus = 1;
  int32_t physical_cores = 0;
  size_t cache_bytes[4] = {0, 0, 0, 0};  // [1] L1 data, [2] L2, [3] L3; 0 when unknown
};

// The machine's CPUs, detected on first use (thread-safe). Never touches CUDA.
const MachineInfo &machine();

// The CUDA devices, found on first use (thread-safe): the only place that looks for the CUDA
// module, so that CPU-only work never searches for it.
const std::vector<CudaDevice> &cuda_devices();

// The CUDA module's entry points once cuda_devices() found a device; null otherwise (no
// module, no driver, no device). Finds the devices on first use, as cuda_devices() does.
const qnt_cuda_module *cuda_module();

// Parts of the detection, exposed for the tests.
uint64_t detect_cpu_features();
std::vector<CudaDevice> detect_cuda_devices();

}  // namespace qnt::hw
