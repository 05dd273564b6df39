/* The interface between libqnt and its CUDA module (libqnt_cuda.so, kernels/cuda/), which the
 * core library loads at run time with dlopen and never links. Plain C, so that the module, the
 * core and the tests' stand-in module (tests/c/standin_cuda_module.c) all compile it.
 *
 * The module exports two symbols: `int qnt_cuda_module_abi(void)`, which returns
 * QNT_CUDA_MODULE_ABI, and `const qnt_cuda_module *qnt_cuda_module_table(void)`. Every entry
 * returns 0 on success or a module error code, which status_of maps to a qnt_status and
 * error_string describes. Device pointers are plain pointers (unified addressing). Each entry
 * that takes a device selects it for its own work only: the module keeps its own CUDA runtime
 * (linked statically), so the caller's current device is never changed. `stream` is a
 * cudaStream_t, NULL for the legacy default stream. Kernel entries only queue work. */
#ifndef QNT_HW_CUDA_MODULE_H
#define QNT_HW_CUDA_MODULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QNT_CUDA_MODULE_ABI 2

/* How flat element indices map to parameters (qnt::GroupLayout). */
typedef struct qnt_cuda_layout {
  int32_t granularity; /* a qnt_granularity */
  int32_t reserved;
  int64_t outer, dim, inner, block, blocks;
} qnt_cuda_layout;

/* The quantized side of a conversion (qnt::ref::QuantSpec), parameters in device memory. */
typedef struct qnt_cuda_qside {
  int32_t code; /* 0 integer rule, 1 NF4, 2 binary, 3 log2 (the log dtypes) */
  int32_t bits; /* 1, 2, 4, 8, 16 or 32 */
  int32_t is_signed;
  int32_t qmin, qmax;
  int32_t reserved;
  qnt_cuda_layout layout;
  const float *scales;
  const int32_t *zero_points;
} qnt_cuda_qside;

enum { QNT_CUDA_QUANTIZE = 0, QNT_CUDA_DEQUANTIZE = 1, QNT_CUDA_REQUANTIZE = 2 };

typedef struct qnt_cuda_convert_args {
  int32_t op;          /* QNT_CUDA_QUANTIZE, ... */
  int32_t float_dtype; /* the float side: a qnt_dtype, f32, f16 or bf16 */
  const void *in;
  void *out;
  uint64_t count; /* elements */
  qnt_cuda_qside from; /* dequantize, requantize */
  qnt_cuda_qside to;   /* quantize, requantize */
} qnt_cuda_convert_args;

/* c = sum over k of (a(m, k) - za) * (b(k, n) - zb[n]) wrapped to int32, then the epilogue of
 * src/ops/epilogue.hpp for channel n, written to y[m * ldy + n] (4-byte or 1-byte elements). */
enum {
  QNT_CUDA_EPI_INT32 = 0,
  QNT_CUDA_EPI_REQUANTIZE = 1,
  QNT_CUDA_EPI_FLOAT = 2,
  QNT_CUDA_EPI_FLOAT_QUANTIZE = 3
};

typedef struct qnt_cuda_gemm_args {
  int64_t M, N, K;
  const uint8_t *a;
  int64_t lda; /* a(m, k) = a[m * lda + k] */
  int32_t a_signed;
  int32_t za;
  const uint8_t *b;
  int64_t b_ks, b_ns; /* b(k, n) = b[k * b_ks + n * b_ns] */
  int32_t b_signed;
  int32_t mode; /* QNT_CUDA_EPI_* */
  const int32_t *zb;         /* [N] */
  const int32_t *bias_i32;   /* [N] or NULL */
  const float *bias_f32;     /* [N] or NULL */
  const float *multiplier;   /* [N], unless mode is INT32 */
  float sy;
  int32_t zy, qmin, qmax;
  int32_t relu;
  int32_t reserved;
  void *y;
  int64_t ldy;
} qnt_cuda_gemm_args;

/* The weight-only linear layer (qnt_linear_weight_only): w is [N, K] in qnt's own packing. */
typedef struct qnt_cuda_wo_args {
  int64_t M, N, K;
  const void *x;
  int32_t x_dtype; /* f32, f16 or bf16 */
  int32_t y_dtype; /* f32, or x_dtype */
  void *y;
  const uint8_t *w;
  qnt_cuda_qside wq; /* w's rule, packing and parameters */
  const float *bias; /* [N] f32 or NULL */
  int32_t mode;      /* a qnt_weight_only_mode */
  int32_t reserved;
  int64_t act_block; /* QNT_WEIGHT_ONLY_INT8_ACT: the activation block B */
  /* QNT_WEIGHT_ONLY_INT8_ACT: the weight scale of block j of row n is wscale[n * wblocks + j]
   * (already divided by 127 for NF4) and the weight integers come from wq as the header says. */
  const float *wscale;
  int64_t wblocks;
} qnt_cuda_wo_args;

typedef struct qnt_cuda_module {
  uint64_t size; /* sizeof(qnt_cuda_module) as the module was built */
  int (*device_count)(int32_t *out);
  int (*compute_capability)(int32_t device, int32_t *major, int32_t *minor);
  /* The qnt_status of a module error code, and CUDA's message for it (static). */
  int32_t (*status_of)(int code);
  const char *(*error_string)(int code);
  /* Zero-filled device memory (finished on return); release waits for the device. */
  int (*alloc)(int32_t device, size_t bytes, void **out);
  int (*release)(int32_t device, void *p);
  /* The device that holds p (device memory), or -1 for memory of any other kind. */
  int (*pointer_device)(const void *p, int32_t *device_out);
  /* cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault) on stream; then, if wait, waits for
   * the stream. */
  int (*copy)(int32_t device, void *stream, void *dst, const void *src, size_t bytes,
              int32_t wait);
  /* Waits for the stream and returns the first error it raised. */
  int (*synchronize)(int32_t device, void *stream);
  /* Stream-ordered scratch memory (cudaMallocAsync / cudaFreeAsync). */
  int (*scratch_alloc)(int32_t device, void *stream, size_t bytes, void **out);
  int (*scratch_free)(int32_t device, void *stream, void *p);
  /* Kernels. */
  int (*convert)(int32_t device, void *stream, const qnt_cuda_convert_args *args);
  int (*gemm)(int32_t device, void *stream, const qnt_cuda_gemm_args *args);
  int (*weight_only)(int32_t device, void *stream, const qnt_cuda_wo_args *args);
} qnt_cuda_module;

#ifdef __cplusplus
}
#endif

#endif /* QNT_HW_CUDA_MODULE_H */
