// libqnt_cuda.so: the CUDA side of qnt, loaded by the core library at run time with dlopen
// (src/hw/cuda.cpp), never linked to it. Its entry points use plain C types and return 0 on
// success; a machine without a driver or a device simply reports 0 devices.
#include <cuda_runtime.h>

#define QNT_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

// Bumped whenever the entry points below change shape.
QNT_CUDA_EXPORT int qnt_cuda_module_abi() { return 1; }

QNT_CUDA_EXPORT int qnt_cuda_module_device_count(int *out) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: clear the sticky error, report none
    n = 0;
  }
  *out = n;
  return 0;
}

QNT_CUDA_EXPORT int qnt_cuda_module_compute_capability(int device, int *major, int *minor) {
  if (cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 1;
  }
  return 0;
}
