/* A stand-in for libqnt_cuda.so with no GPU behind it, for the tests of the core's device
 * plumbing on machines without one:
 *  - it marks its own loading in the environment (QNT_TEST_CUDA_MODULE_LOADED), so a test can
 *    tell when (and whether) qnt looked for its CUDA module;
 *  - with QNT_TEST_STANDIN_DEVICES=1 it reports one device (compute capability 9.0) whose
 *    "device memory" is host memory it allocates and tracks, so copies, device tensors, DLPack
 *    and the placement checks run for real; its kernels compute nothing but record their
 *    arguments in qnt_standin_last, which the tests read;
 *  - with QNT_TEST_STANDIN_ASYNC_ERROR=1 the first synchronize after a kernel reports an error
 *    (as a fault found by the device while running queued work). */
#include "hw/cuda_module.h"

#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum { kMaxAllocs = 4096, kErrNoKernels = 9001, kErrAsync = 9002, kErrOom = 9003 };

/* What the last kernel entry was asked to do. */
typedef struct qnt_standin_record {
  int32_t kernel; /* 0 none, 1 convert, 2 gemm, 3 weight_only */
  int32_t device;
  void *stream;
  int64_t calls;
  qnt_cuda_convert_args convert;
  qnt_cuda_gemm_args gemm;
  qnt_cuda_wo_args wo;
} qnt_standin_record;

EXPORT qnt_standin_record qnt_standin_last;

static struct {
  char *base;
  size_t bytes;
} allocs[kMaxAllocs];
static int pending_async = 0;

__attribute__((constructor)) static void mark_loaded(void) {
  setenv("QNT_TEST_CUDA_MODULE_LOADED", "1", 1);
}

static int enabled(void) {
  const char *v = getenv("QNT_TEST_STANDIN_DEVICES");
  return v != NULL && strcmp(v, "1") == 0;
}

static int device_count(int32_t *n) {
  *n = enabled() ? 1 : 0;
  return 0;
}

static int compute_capability(int32_t device, int32_t *major, int32_t *minor) {
  if (!enabled() || device != 0) return 101;
  *major = 9;
  *minor = 0;
  return 0;
}

static int32_t status_of(int code) {
  switch (code) {
    case kErrOom:
      return 3;  /* QNT_ERR_OUT_OF_MEMORY */
    case 101:
      return 10; /* QNT_ERR_NO_DEVICE */
    default:
      return 11; /* QNT_ERR_INTERNAL */
  }
}

static const char *error_string(int code) {
  switch (code) {
    case kErrAsync:
      return "stand-in: an asynchronous fault";
    case kErrOom:
      return "stand-in: out of memory";
    default:
      return "stand-in: error";
  }
}

static int track(void *p, size_t bytes) {
  for (int i = 0; i < kMaxAllocs; ++i)
    if (allocs[i].base == NULL) {
      allocs[i].base = (char *)p;
      allocs[i].bytes = bytes;
      return 0;
    }
  return 1;
}

static int alloc(int32_t device, size_t bytes, void **out) {
  if (device != 0) return 101;
  if (bytes > ((size_t)1 << 40)) return kErrOom;
  void *p = calloc(1, bytes == 0 ? 1 : bytes);
  if (p == NULL) return kErrOom;
  if (track(p, bytes) != 0) {
    free(p);
    return kErrOom;
  }
  *out = p;
  return 0;
}

static int release(int32_t device, void *p) {
  (void)device;
  for (int i = 0; i < kMaxAllocs; ++i)
    if (allocs[i].base == (char *)p) {
      allocs[i].base = NULL;
      free(p);
      return 0;
    }
  return 1;
}

static int pointer_device(const void *p, int32_t *device_out) {
  *device_out = -1;
  for (int i = 0; i < kMaxAllocs; ++i)
    if (allocs[i].base != NULL && (const char *)p >= allocs[i].base &&
        (const char *)p < allocs[i].base + (allocs[i].bytes == 0 ? 1 : allocs[i].bytes))
      *device_out = 0;
  return 0;
}

static int copy(int32_t device, void *stream, void *dst, const void *src, size_t bytes,
                int32_t wait) {
  (void)device;
  (void)stream;
  (void)wait;
  memmove(dst, src, bytes);
  return 0;
}

static int synchronize(int32_t device, void *stream) {
  (void)device;
  (void)stream;
  if (pending_async) {
    pending_async = 0;
    return kErrAsync;
  }
  return 0;
}

static int scratch_alloc(int32_t device, void *stream, size_t bytes, void **out) {
  (void)stream;
  return alloc(device, bytes, out);
}

static int scratch_free(int32_t device, void *stream, void *p) {
  (void)stream;
  return release(device, p);
}

static void note(int32_t kernel, int32_t device, void *stream) {
  qnt_standin_last.kernel = kernel;
  qnt_standin_last.device = device;
  qnt_standin_last.stream = stream;
  qnt_standin_last.calls++;
  const char *v = getenv("QNT_TEST_STANDIN_ASYNC_ERROR");
  if (v != NULL && strcmp(v, "1") == 0) pending_async = 1;
}

static int convert(int32_t device, void *stream, const qnt_cuda_convert_args *a) {
  qnt_standin_last.convert = *a;
  note(1, device, stream);
  return 0;
}

static int gemm(int32_t device, void *stream, const qnt_cuda_gemm_args *a) {
  qnt_standin_last.gemm = *a;
  note(2, device, stream);
  return 0;
}

static int weight_only(int32_t device, void *stream, const qnt_cuda_wo_args *a) {
  qnt_standin_last.wo = *a;
  note(3, device, stream);
  return 0;
}

static const qnt_cuda_module table = {
    sizeof(qnt_cuda_module), device_count, compute_capability, status_of, error_string, alloc,
    release, pointer_device, copy, synchronize, scratch_alloc, scratch_free, convert, gemm,
    weight_only};

EXPORT int qnt_cuda_module_abi(void) { return QNT_CUDA_MODULE_ABI; }
EXPORT const qnt_cuda_module *qnt_cuda_module_table(void) { return &table; }
