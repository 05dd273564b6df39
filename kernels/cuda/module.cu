// libqnt_cuda.so: the CUDA side of qnt, loaded by the core library at run time with dlopen
// (src/hw/cuda.cpp), never linked to it. It fills the table of src/hw/cuda_module.h: device
// memory, copies, streams, and the kernels (kernels/cuda/kernels.cuh). It links the CUDA runtime
// statically, so its current device is its own and a caller's is never changed.
#include "hw/cuda_module.h"
#include "kernels/cuda/kernels.cuh"

#include <qnt/qnt.h>

#include <cuda_runtime.h>

#define QNT_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The first failing call's code; later calls of the same entry are skipped.
#define QNT_TRY(call)                     \
  do {                                    \
    const cudaError_t qnt_e_ = (call);    \
    if (qnt_e_ != cudaSuccess) {          \
      (void)cudaGetLastError();           \
      return static_cast<int>(qnt_e_);    \
    }                                     \
  } while (0)

int device_count(int32_t *out) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: clear the error, report none
    n = 0;
  }
  *out = n;
  return 0;
}

int compute_capability(int32_t device, int32_t *major, int32_t *minor) {
  int a = 0, b = 0;
  QNT_TRY(cudaDeviceGetAttribute(&a, cudaDevAttrComputeCapabilityMajor, device));
  QNT_TRY(cudaDeviceGetAttribute(&b, cudaDevAttrComputeCapabilityMinor, device));
  *major = a;
  *minor = b;
  return 0;
}

int32_t status_of(int code) {
  switch (static_cast<cudaError_t>(code)) {
    case cudaErrorMemoryAllocation:
      return QNT_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorDeviceUninitialized:
      return QNT_ERR_NO_DEVICE;
    case cudaErrorInvalidValue:
      return QNT_ERR_INVALID_ARGUMENT;
    default:
      return QNT_ERR_INTERNAL;
  }
}

const char *error_string(int code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

int alloc(int32_t device, size_t bytes, void **out) {
  QNT_TRY(cudaSetDevice(device));
  void *p = nullptr;
  QNT_TRY(cudaMalloc(&p, bytes));
  const cudaError_t e = cudaMemset(p, 0, bytes);
  if (e == cudaSuccess) {
    const cudaError_t s = cudaDeviceSynchronize();
    if (s == cudaSuccess) {
      *out = p;
      return 0;
    }
    (void)cudaFree(p);
    (void)cudaGetLastError();
    return static_cast<int>(s);
  }
  (void)cudaFree(p);
  (void)cudaGetLastError();
  return static_cast<int>(e);
}

int release(int32_t device, void *p) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(cudaFree(p));
  return 0;
}

int pointer_device(const void *p, int32_t *device_out) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    *device_out = -1;
    return 0;
  }
  *device_out = (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) ? a.device : -1;
  return 0;
}

int copy(int32_t device, void *stream, void *dst, const void *src, size_t bytes, int32_t wait) {
  QNT_TRY(cudaSetDevice(device));
  const auto s = static_cast<cudaStream_t>(stream);
  QNT_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  if (wait) QNT_TRY(cudaStreamSynchronize(s));
  return 0;
}

int synchronize(int32_t device, void *stream) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  QNT_TRY(cudaGetLastError());
  return 0;
}

int scratch_alloc(int32_t device, void *stream, size_t bytes, void **out) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(cudaMallocAsync(out, bytes, static_cast<cudaStream_t>(stream)));
  return 0;
}

int scratch_free(int32_t device, void *stream, void *p) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(cudaFreeAsync(p, static_cast<cudaStream_t>(stream)));
  return 0;
}

int convert(int32_t device, void *stream, const qnt_cuda_convert_args *a) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(qnt::cuda::launch_convert(*a, static_cast<cudaStream_t>(stream)));
  return 0;
}

int gemm(int32_t device, void *stream, const qnt_cuda_gemm_args *a) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(qnt::cuda::launch_gemm(*a, static_cast<cudaStream_t>(stream)));
  return 0;
}

int weight_only(int32_t device, void *stream, const qnt_cuda_wo_args *a) {
  QNT_TRY(cudaSetDevice(device));
  QNT_TRY(qnt::cuda::launch_weight_only(*a, static_cast<cudaStream_t>(stream)));
  return 0;
}

const qnt_cuda_module kTable = {
    sizeof(qnt_cuda_module), device_count, compute_capability, status_of, error_string, alloc,
    release, pointer_device, copy, synchronize, scratch_alloc, scratch_free, convert, gemm,
    weight_only};

}  // namespace

QNT_CUDA_EXPORT int qnt_cuda_module_abi() { return QNT_CUDA_MODULE_ABI; }

QNT_CUDA_EXPORT const qnt_cuda_module *qnt_cuda_module_table() { return &kTable; }
