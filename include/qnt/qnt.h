/*
 * qnt — quantization for neural-network inference.
 *
 * This header is the whole public contract of the library (C99, also valid C++). Everything
 * behind it may change; nothing in it changes without an ABI decision (see "Versioning").
 *
 * Conventions (they hold for every function below unless its comment says otherwise)
 *  - Every fallible function returns a qnt_status; QNT_OK (0) is success. On failure
 *    qnt_last_error_message() holds the detail, every output parameter is left untouched and
 *    nothing is leaked.
 *  - Handles are opaque. qnt_<thing>_create...(..., out) makes one; the caller frees it with
 *    qnt_<thing>_destroy(), which accepts NULL and never fails. A handle that depends on another
 *    holds its own reference to it, so handles may be destroyed in any order.
 *  - Fixed-width types only: dimensions are int64_t, counts and byte sizes size_t, and every
 *    enumeration is a typedef of int32_t (uint32_t or uint64_t for bit masks) with explicitly
 *    numbered constants that are never reused. No C enum type, bool or long crosses the
 *    boundary, so a caller compiled with -fshort-enums, or a binding that does not know a newer
 *    constant, sees the same layout. Strings are UTF-8 and owned by the library.
 *  - Parameter order: the context first on every call that computes, then a prepared operator
 *    if any, the inputs, an optional descriptor of options, and the outputs last.
 *  - Tensors are dense and row-major. Sub-byte dtypes are packed flat over the row-major
 *    element order, element 0 in the lowest bits of byte 0 (see qnt_dtype).
 *
 * Quantization semantics (ONNX QuantizeLinear / DequantizeLinear; the reference kernels in
 * kernels/ref/ are the executable definition, and every kernel gives bit-identical results)
 *    quantize:    q = saturate(round_half_to_even(x / scale) + zero_point)
 *    dequantize:  x = (float)(q - zero_point) * scale
 *  - x / scale is one IEEE float32 division (not a multiplication by 1/scale); the rounding is
 *    half to even whatever the floating-point environment's rounding mode; the sum with the
 *    zero point and the clamp to the dtype's range are exact (no integer overflow).
 *  - x = NaN gives q = zero_point; x = +inf / -inf saturate to the dtype's max / min.
 *  - q - zero_point is computed exactly, converted to float32 (exact for every dtype but i32),
 *    then multiplied by scale in float32.
 *  - Results assume the default floating-point environment (no flush-to-zero of denormals).
 *  - NF4, binary and ternary have their own rules, given at qnt_dtype.
 *
 * Granularity of the parameters (qnt_qparams), for a tensor of shape [D0, ..., Dr-1]:
 *  - per-tensor: one scale and zero point;
 *  - per-axis (ONNX "axis"): one per index along axis; count = D[axis];
 *  - per-block (ONNX blocked quantization): along axis, consecutive runs of block_size elements
 *    share parameters. The parameters form a row-major array of the tensor's shape with
 *    D[axis] replaced by ceil(D[axis] / block_size); the last block may be short.
 *  Negative axes count from the end (-1 is the last axis).
 *
 * Thread safety: qnt_qparams and qnt_prepared are immutable and may be shared freely between
 * threads. A qnt_context may be used by several threads at once, but its setters must not race
 * with its use. A qnt_tensor may be read by several threads at once; a call that writes it (an
 * op's output) needs it to itself.
 *
 * Versioning
 *  - QNT_VERSION_* is the release (MAJOR.MINOR.PATCH); QNT_ABI_VERSION is the binary interface.
 *    The shared library's SONAME is libqnt.so.<QNT_ABI_VERSION> and its symbols carry the
 *    version node QNT_<QNT_ABI_VERSION> (QNT_1 here), also while the release is 0.x.
 *  - The ABI breaks, and QNT_ABI_VERSION, the SONAME and the node change, when a function is
 *    removed or renamed, a parameter or return type changes, a constant changes value, a public
 *    struct's existing fields change, or a documented result changes.
 *  - These do not break it (the release's MINOR grows, the ABI stays): a new function, a new
 *    constant or option key, a new field at the end of qnt_error_report (callers pass their
 *    size), a new error case that returns an already documented status.
 *  - Experimental: declarations marked EXPERIMENTAL below may change in any release, without an
 *    ABI change. Bindings should not depend on them.
 *  - A program checks at run time that the library it loaded speaks its ABI with
 *    QNT_ABI_CHECK() (see qnt_abi_check).
 */
#ifndef QNT_QNT_H
#define QNT_QNT_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------- */
/* Version                                                                                      */
/* ------------------------------------------------------------------------------------------- */

#define QNT_VERSION_MAJOR 0
#define QNT_VERSION_MINOR 12
#define QNT_VERSION_PATCH 9
/* MAJOR * 10000 + MINOR * 100 + PATCH, as qnt_version() returns it. */
#define QNT_VERSION_NUMBER (QNT_VERSION_MAJOR * 10000 + QNT_VERSION_MINOR * 100 + QNT_VERSION_PATCH)

/* The binary interface; see "Versioning" at the top. */
#define QNT_ABI_VERSION 1

#if defined(_WIN32)
#if defined(QNT_BUILDING_LIBRARY)
#define QNT_API __declspec(dllexport)
#else
#define QNT_API
#endif
#elif defined(__GNUC__)
#define QNT_API __attribute__((visibility("default")))
#else
#define QNT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The result of every fallible call: QNT_OK (0) or one of the QNT_ERR_* values below. */
typedef int32_t qnt_status;

/* The version of the library loaded at run time, as QNT_VERSION_NUMBER. */
QNT_API uint32_t qnt_version(void);

/* The ABI version of the library loaded at run time (QNT_ABI_VERSION as it was built). */
QNT_API uint32_t qnt_abi_version(void);

/* QNT_OK when the library loaded at run time implements ABI `abi_version` (pass
 * QNT_ABI_VERSION, or use QNT_ABI_CHECK()); otherwise QNT_ERR_UNSUPPORTED, with a message that
 * names both ABI versions and the library's release. Programs that load qnt with dlopen, or that
 * may meet another build of it, call this once before anything else. */
QNT_API qnt_status qnt_abi_check(uint32_t abi_version);
#define QNT_ABI_CHECK() qnt_abi_check(QNT_ABI_VERSION)

/* The version of the library loaded at run time as "MAJOR.MINOR.PATCH". Static string. */
QNT_API const char *qnt_version_string(void);

/* How the library was built, one "key=value" per line: version, compiler, the CPU kernels
 * compiled in, OpenMP (with its version), CUDA (whether the CUDA module was built); then a line
 * "chosen_kernels=" and the kernels a context with no ISA cap chooses on this machine, in the
 * form of qnt_context_kernels. Static string. */
QNT_API const char *qnt_build_info(void);

/* ------------------------------------------------------------------------------------------- */
/* Status and errors                                                                            */
/* ------------------------------------------------------------------------------------------- */

enum {
  QNT_OK = 0,
  QNT_ERR_INVALID_ARGUMENT = 1, /* a value is out of its domain (bad enum, negative size, ...) */
  QNT_ERR_NULL_POINTER = 2,     /* a required pointer or handle is NULL */
  QNT_ERR_OUT_OF_MEMORY = 3,    /* an allocation failed */
  QNT_ERR_UNSUPPORTED = 4,    /* valid, but not implemented for this case; the message says which */
  QNT_ERR_SHAPE_MISMATCH = 5, /* shapes (or parameter counts) disagree */
  QNT_ERR_DTYPE_MISMATCH = 6, /* a tensor has the wrong dtype for this call */
  QNT_ERR_BUFFER_TOO_SMALL = 7, /* a caller's buffer or capacity is short */
  QNT_ERR_OVERFLOW = 8,         /* a size computation overflows (element count, byte size) */
  QNT_ERR_INVALID_QPARAMS = 9,  /* scale not finite and > 0, zero point out of range, ... */
  QNT_ERR_NO_DEVICE = 10,       /* no CUDA device (or module, or driver) for this call */
  QNT_ERR_INTERNAL = 11,        /* a bug in qnt; please report it with the message */
  QNT_ERR_CORRUPT_DATA = 12 /* a serialized buffer is truncated, damaged or of another version */
};

/* A static, human-readable name for a status ("QNT_ERR_SHAPE_MISMATCH: shapes disagree").
 * Unknown values give "unknown qnt_status". Never NULL. */
QNT_API const char *qnt_status_string(qnt_status status);

/* The message of the last call that failed on this thread; "" if none has. Successful calls do
 * not clear it. The string is owned by the library and valid until the next failing call on
 * this thread. Never NULL. */
QNT_API const char *qnt_last_error_message(void);

/* The number of handles alive in this process: every context, qparams reference, tensor,
 * operator descriptor, prepared operator and calibrator created and not yet destroyed (since
 * 0.6). Bindings and tests read it to check that they free what they create. It counts all
 * threads' handles at once, so it is exact only while no other thread creates or frees one.
 * Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_live_handles(uint64_t *out);

/* ------------------------------------------------------------------------------------------- */
/* Data types                                                                                   */
/* ------------------------------------------------------------------------------------------- */

/*
 * Element types. Integer q values of the packed types are stored in two's complement (i4,
 * ternary) or plain binary (u4, NF4 codes) in the bits given by their width.
 *
 *  QNT_DTYPE_NF4: 4-bit NormalFloat (QLoRA, bitsandbytes). q is an index 0..15 into
 *    bitsandbytes' codebook (qnt_nf4_codebook()). Quantize: r = 1.0f / scale, n = x * r (both
 *    float32, as bitsandbytes does), q = the number of bitsandbytes' 15 decision thresholds
 *    (midpoints of adjacent codes) t with n > t, so ties go to the lower code; NaN gives code 7
 *    (0.0). Dequantize: x = codebook[q] * scale. Zero points must be 0. qnt_calibrate_codebook
 *    sets scale = absmax of each group.
 *  QNT_DTYPE_BINARY: one bit, 1 means +1 and 0 means -1: q = (x < 0) ? 0 : 1 (so -0.0 and NaN
 *    give +1); x = (q ? +1 : -1) * scale. Zero points must be 0. qnt_calibrate_codebook sets
 *    scale = mean |x| of each group (XNOR-Net).
 *  QNT_DTYPE_TERNARY: two bits holding {-1, 0, +1} in two's complement (0b11, 0b00, 0b01); it
 *    follows the general integer rule with range [-1, 1] and zero point 0 (BitNet b1.58:
 *    q = clamp(round(x / scale), -1, 1)). The pattern 0b10 is never written and reads as -2.
 *    qnt_calibrate_codebook sets scale = max(mean |x|, 1e-5) of each group (BitNet's absmean).
 *  QNT_DTYPE_F16, QNT_DTYPE_BF16 (since 0.7): 16-bit floats for activations. They are not
 *    quantized dtypes (no qparams). Where an op takes them (qnt_quantize's x, qnt_dequantize's
 *    y, the weight-only linear layer's x and y), a 16-bit input is widened to float32 exactly
 *    and the op computes exactly as with a float32 input; a 16-bit output is the float32 result
 *    rounded to nearest, ties to even (overflow gives +-inf, a NaN gives the quiet NaN of its
 *    sign: 0x7E00 / 0xFE00 for f16, 0x7FC0 / 0xFFC0 for bf16). Other ops refuse them
 *    (QNT_ERR_DTYPE_MISMATCH). DLPack: f16 {kDLFloat, 16}, bf16 {kDLBfloat, 16}.
 *  QNT_DTYPE_LOG4, QNT_DTYPE_LOG8 (since 0.11): logarithmic (power-of-two) codes, the scheme
 *    QNT_SCHEME_LOG2. A code of b bits (4 or 8) holds a sign bit (the top bit, 1 for negative)
 *    and a magnitude m in [0, M], M = 2^(b-1) - 1 (7 or 127): m = 0 is zero, and m >= 1 is
 *    scale * 2^-k with k = M - m, so x ~ sign * scale * 2^-k, k in [0, M - 1] (the largest
 *    magnitude is the scale itself, the smallest scale * 2^-6 for LOG4 and scale * 2^-126 for
 *    LOG8). Quantize: r = |x| / scale (one float32 division), rounded to the nearest power of
 *    two in the log domain: k = -e where r = 2^e * f, 1 <= f < 2, and k = -(e + 1) where
 *    f >= sqrt(2) (the boundaries 2^-(k + 1/2) are irrational, so no float lies on one: there
 *    are no ties; the comparison is exact, against the float32 significand 0x3504F4 above
 *    sqrt(2)). k < 0 (r > sqrt(2)) saturates to k = 0; k > M - 1 (r below 2^-(M - 1/2)) gives
 *    the zero code 0. The sign bit is set for x < 0 with a nonzero magnitude. NaN gives 0;
 *    +inf and -inf the largest magnitude of their sign. Dequantize: x = +-(scale * 2^-k), one
 *    float32 multiplication by an exact power of two (exact unless the product falls below
 *    the normal range); the zero magnitude gives 0.0 (-0.0 with the sign bit, a code quantize
 *    never writes). Zero points must be 0. qnt_calibrate_codebook sets scale = absmax, and
 *    the calibrators (qnt_calibrator_create with QNT_SCHEME_LOG2) compute it from a clip
 *    range. Stored as plain bit fields (no two's complement): LOG4 two per byte, element 0 in
 *    the low nibble; LOG8 one per byte.
 */
typedef int32_t qnt_dtype;
enum {
  QNT_DTYPE_F32 = 1,
  QNT_DTYPE_I32 = 2,
  QNT_DTYPE_I8 = 3,
  QNT_DTYPE_U8 = 4,
  QNT_DTYPE_I16 = 5,
  QNT_DTYPE_U16 = 6,
  QNT_DTYPE_I4 = 7,      /* [-8, 7], two per byte, element 0 in the low nibble */
  QNT_DTYPE_U4 = 8,      /* [0, 15], two per byte, element 0 in the low nibble */
  QNT_DTYPE_NF4 = 9,     /* 4-bit NormalFloat code, two per byte, element 0 in the low nibble */
  QNT_DTYPE_BINARY = 10, /* 1 bit, eight per byte, element 0 in bit 0 */
  QNT_DTYPE_TERNARY = 11, /* 2 bits, four per byte, element 0 in bits 0-1 */
  QNT_DTYPE_F16 = 12,     /* IEEE 754 binary16 (since 0.7) */
  QNT_DTYPE_BF16 = 13,    /* bfloat16: the top 16 bits of a float32 (since 0.7) */
  QNT_DTYPE_LOG4 = 14,    /* 4-bit logarithmic code, two per byte (since 0.11) */
  QNT_DTYPE_LOG8 = 15     /* 8-bit logarithmic code (since 0.11) */
};

/* Bits per element of dtype (32, 8, 4, 2, 1, ...); 0 for a value that is not a qnt_dtype. */
QNT_API int32_t qnt_dtype_bits(qnt_dtype dtype);

/* A static lower-case name ("i8", "nf4", ...); "invalid" for a value that is not a qnt_dtype. */
QNT_API const char *qnt_dtype_name(qnt_dtype dtype);

/* The range [*min_out, *max_out] of q for the integer dtypes (i32, i8, u8, i16, u16, i4, u4,
 * ternary), which zero points must lie in. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (not a qnt_dtype, or f32, NF4 or binary, which have no such range). */
QNT_API qnt_status qnt_dtype_range(qnt_dtype dtype, int32_t *min_out, int32_t *max_out);

/* The 16 values of the NF4 codebook (bitsandbytes' float32 constants), ascending from -1.0 to
 * 1.0, copied to out. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_BUFFER_TOO_SMALL (capacity < 16). */
QNT_API qnt_status qnt_nf4_codebook(float *out, size_t capacity);

/* ------------------------------------------------------------------------------------------- */
/* Context: threads and what the machine can do                                                 */
/* ------------------------------------------------------------------------------------------- */

/* Thread safety: may be used by several threads at once; its setters must not run while
 * another thread uses the context.
 *
 * Where the CUDA stream lives (decided for this ABI): in the context. A context is bound to at
 * most one CUDA device and stream (qnt_context_set_cuda_stream); device work submitted through
 * it is ordered on that stream and may complete after the call returns, and
 * qnt_context_synchronize waits for it and returns the first asynchronous error. One context
 * per stream, as cuBLAS handles and oneDNN streams do. Reasons: every run function keeps one
 * signature for CPU and GPU (bindings wrap one call, not two); a prepared operator stays
 * immutable and shareable because the stream is not part of it; and errors that surface only
 * at synchronization have one place to be reported. The cost, a context per stream, is small:
 * a context holds settings, not buffers. */
typedef struct qnt_context qnt_context;

/* CPU features, as bits of the mask that qnt_context_cpu_features() returns. Each bit is set
 * only where both the CPU and the operating system support the feature (the OS check: XCR0
 * state for AVX, AVX-512 and AMX tiles, and the Linux permission request for AMX). */
typedef uint32_t qnt_cpu_feature;
enum {
  QNT_CPU_SSE41 = 1 << 0,
  QNT_CPU_AVX2 = 1 << 1,
  QNT_CPU_FMA = 1 << 2,
  QNT_CPU_AVX512F = 1 << 3,
  QNT_CPU_AVX512BW = 1 << 4,
  QNT_CPU_AVX512VL = 1 << 5,
  QNT_CPU_AVX512VNNI = 1 << 6,
  QNT_CPU_AVXVNNI = 1 << 7,
  QNT_CPU_AMXINT8 = 1 << 8,
  QNT_CPU_AVX512VPOPCNTDQ = 1 << 9, /* since 0.11.5: vpopcntq (the binary GEMM's count) */
  QNT_CPU_NEON = 1 << 16,
  QNT_CPU_DOTPROD = 1 << 17,
  QNT_CPU_I8MM = 1 << 18
};

/* A static name for one feature bit ("avx512vnni"); "invalid" for anything else. */
QNT_API const char *qnt_cpu_feature_name(qnt_cpu_feature feature);

/* Kernel sets, from the plainest up, for qnt_context_set_max_isa (as oneDNN's
 * dnnl_set_max_cpu_isa). A context uses the best kernels that are at most its cap and that the
 * machine runs; every set gives the bits of the reference kernels, so a cap changes speed only.
 * The x86-64 values order as listed; the aarch64 ones order among themselves.
 *
 * The environment variable QNT_MAX_ISA caps every context of the process, the default (NULL)
 * context included, as ONEDNN_MAX_CPU_ISA does for oneDNN: its value is a qnt_isa_name() of this
 * architecture ("reference", "avx2", "avx512", "avx512_vnni", "neon", "neon_dotprod"; "native"
 * or empty for no cap), in any case. It is read once, at the first context creation or the first
 * call with a NULL context, and combines with qnt_context_set_max_isa (the lower cap wins). Any
 * other value is refused, never ignored: every context creation and every call with a NULL
 * context then fails with QNT_ERR_INVALID_ARGUMENT and a message naming the values it takes. */
typedef int32_t qnt_isa;
enum {
  QNT_ISA_NATIVE = 0,       /* no cap: the best the machine runs (the default) */
  QNT_ISA_REFERENCE = 1,    /* the scalar reference kernels only */
  QNT_ISA_AVX2 = 2,         /* x86-64: AVX2 and FMA */
  QNT_ISA_AVX512 = 3,       /* x86-64: AVX-512 F, BW, VL */
  QNT_ISA_AVX512_VNNI = 4,  /* x86-64: AVX-512 with VNNI */
  QNT_ISA_NEON = 16,        /* aarch64: Advanced SIMD */
  QNT_ISA_NEON_DOTPROD = 17 /* aarch64: with sdot / udot */
};

/* A static name ("avx512_vnni"); "invalid" for a value that is not a qnt_isa. */
QNT_API const char *qnt_isa_name(qnt_isa isa);

/* Creates a context: the number of threads ops may use and the machine's features, detected
 * once per process. Default threads: OpenMP's default (omp_get_max_threads(), which honours
 * OMP_NUM_THREADS and otherwise counts the logical CPUs this process may run on). Caller
 * destroys it with qnt_context_destroy(). Errors: QNT_ERR_NULL_POINTER, QNT_ERR_OUT_OF_MEMORY,
 * QNT_ERR_INVALID_ARGUMENT (QNT_MAX_ISA holds a value that is not a kernel set; see qnt_isa).
 * Calls that compute accept a NULL context and then use the defaults. */
QNT_API qnt_status qnt_context_create(qnt_context **out);

/* Frees ctx; NULL is allowed. It does not wait for device work (see qnt_context_synchronize). */
QNT_API void qnt_context_destroy(qnt_context *ctx);

/* Sets the number of threads the ops may use: 1..1024, or 0 for the default. Without OpenMP
 * the library runs on one thread whatever this says. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (n < 0 or n > 1024). */
QNT_API qnt_status qnt_context_set_num_threads(qnt_context *ctx, int32_t n);

/* The number of threads the ops will use (never 0). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_num_threads(const qnt_context *ctx, int32_t *out);

/* Caps the kernels this context uses at `isa` (QNT_ISA_NATIVE removes the cap; QNT_MAX_ISA, if
 * set, still applies). A cap above what the machine runs is allowed (the machine's best is used). Prepared operators keep the kernels
 * of the context they were created with. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT
 * (not a qnt_isa, or one of another architecture). */
QNT_API qnt_status qnt_context_set_max_isa(qnt_context *ctx, qnt_isa isa);

/* The kernel set the context uses: its cap and QNT_MAX_ISA applied to what the machine runs
 * (never QNT_ISA_NATIVE). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_isa(const qnt_context *ctx, qnt_isa *out);

/* The kernels the context chose, one "family.dtype.run=set" line each (for example
 * "quantize.i8.shared=avx2"; a run is "shared" where a stretch of elements shares one scale and
 * zero point, "per_element" where they advance with the element). The kernels are chosen when
 * the context is created and again by qnt_context_set_max_isa. *out stays valid until the
 * context is destroyed. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_kernels(const qnt_context *ctx, const char **out);

/* The CPU features, as an OR of qnt_cpu_feature bits. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_cpu_features(const qnt_context *ctx, uint64_t *out);

/* The number of logical CPUs this process may run on, and of physical cores among them
 * (0 where the operating system does not say). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_cpu_count(const qnt_context *ctx, int32_t *logical_out,
                                         int32_t *physical_out);

/* The size in bytes of the level-1 data, level-2 or level-3 cache of the first CPU (level 1, 2
 * or 3); 0 where it is not known. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT
 * (level not 1, 2 or 3). */
QNT_API qnt_status qnt_context_cache_size(const qnt_context *ctx, int32_t level, size_t *out);

/* The number of CUDA devices usable by qnt: 0 when the library was built without its CUDA
 * module, when the module or the CUDA driver cannot be loaded, or when there is no device. The
 * CUDA module is looked for on the first call that asks about a device, never before.
 * Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_cuda_device_count(const qnt_context *ctx, int32_t *out);

/* The compute capability of CUDA device `device` (9.0 for an H100: major 9, minor 0).
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_NO_DEVICE (device < 0 or >= the device count). */
QNT_API qnt_status qnt_context_cuda_compute_capability(const qnt_context *ctx, int32_t device,
                                                       int32_t *major_out, int32_t *minor_out);

/* Binds the context to CUDA device `device` and `stream` (a cudaStream_t; NULL is the
 * device's legacy default stream), which the caller owns and keeps alive while the context uses
 * it. How device work runs (since 0.7):
 *  - an op whose tensors are all on one CUDA device runs there. With a context bound to that
 *    device, its work is queued on the bound stream and the call returns without waiting: the
 *    outputs are ready once the stream reaches that point (qnt_context_synchronize, or an event
 *    the caller records), and the inputs must stay unchanged until then. With a NULL context or
 *    an unbound one, the op runs on the device's legacy default stream and waits for its work
 *    before returning, so every error is the call's own;
 *  - an op given a context bound to another device than its tensors' refuses them
 *    (QNT_ERR_INVALID_ARGUMENT); so does an op whose tensors are on different devices;
 *  - errors found before the work is queued (checks, launch failures, QNT_ERR_OUT_OF_MEMORY)
 *    are returned by the call, with its outputs untouched. An error the device raises while
 *    running queued work is kept in the context and returned by qnt_context_synchronize.
 * Errors: QNT_ERR_NULL_POINTER (ctx), QNT_ERR_NO_DEVICE (no such device, or no CUDA module or
 * driver). */
QNT_API qnt_status qnt_context_set_cuda_stream(qnt_context *ctx, int32_t device, void *stream);

/* Waits for the device work submitted through ctx and returns the first asynchronous error it
 * raised (then clears it); QNT_OK when there is none. A context that is not bound to a CUDA
 * stream returns QNT_OK at once. An error of the device is QNT_ERR_INTERNAL (a fault in a
 * kernel) or QNT_ERR_NO_DEVICE (the device was lost), with CUDA's own message.
 * Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_synchronize(qnt_context *ctx);

/* Kernel parameters tuned by measurement (since 0.11). The integer GEMM family (qnt_qmatmul,
 * the static and dynamic linear layers, conv2d, and their prepared forms) cuts its work into
 * blocks of rows and columns of tiles, and the weight-only layer's packed kernels (batch 1 to 7)
 * stream their panels with a prefetch distance and a number of workers; a heuristic picks them
 * from the shape, the caches and the thread count. With tuning, they are chosen per shape by
 * measurement instead: the first run of a shape (the key: the operator family, the kernel, M,
 * N, K and the thread count) runs the operator on the caller's own inputs with each of up to
 * seven candidates, the heuristic's among them, in 3 to 15 rounds (about 0.1 s in all; a shape
 * whose first run takes over 0.25 s keeps the heuristic's without measuring), and keeps the
 * candidate with the best time: the heuristic's unless another is at least 5% faster, in those
 * rounds and again in as many more rounds of the two alone. Every
 * candidate gives the reference's bits, so tuning changes speed, never a result; the call that
 * measures returns the same output as any other. The choices are kept per process, shared by
 * every context, and may be exported as a small text table and imported by a later run, so
 * that a deployment uses the same kernel parameters every time. */
typedef int32_t qnt_tuning;
enum {
  QNT_TUNING_OFF = 0,     /* the heuristic's parameters (the default) */
  QNT_TUNING_MEASURE = 1, /* the table's choice for the shape; measured and added on a miss */
  QNT_TUNING_CACHED = 2   /* the table's choice for the shape; the heuristic's on a miss */
};

/* Sets the context's tuning mode. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (not a
 * qnt_tuning). */
QNT_API qnt_status qnt_context_set_tuning(qnt_context *ctx, qnt_tuning mode);

/* The context's tuning mode. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_context_tuning(const qnt_context *ctx, qnt_tuning *out);

/* The process's tuning table as text: a first line "qnt-tuning 1", then one line per shape,
 * "family kernel M N K threads p1 p2" (family "gemm": p1 and p2 the blocks' m-panels and
 * n-tiles; "wo": the prefetch distance in panels and the workers), in a fixed order. Copied to
 * buf (with its terminating NUL) when capacity allows; *size_out is the bytes needed, NUL
 * included. buf may be NULL with capacity 0 to ask the size. Errors: QNT_ERR_NULL_POINTER
 * (size_out), QNT_ERR_BUFFER_TOO_SMALL (*size_out is still set). */
QNT_API qnt_status qnt_tuning_export(char *buf, size_t capacity, size_t *size_out);

/* Adds the entries of a table qnt_tuning_export wrote (replacing those of the same shapes).
 * All or nothing: a text that is not such a table (another first line, a line that does not
 * parse, a value out of range) is QNT_ERR_CORRUPT_DATA and changes nothing. Entries whose kernel
 * this machine does not run are kept but never used. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_CORRUPT_DATA, QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_tuning_import(const char *text);

/* Empties the process's tuning table. Never fails. */
QNT_API void qnt_tuning_clear(void);

/* ------------------------------------------------------------------------------------------- */
/* Quantization parameters                                                                      */
/* ------------------------------------------------------------------------------------------- */

/* Immutable scales and zero points for one dtype and granularity. Safe to share between
 * threads. */
typedef struct qnt_qparams qnt_qparams;

typedef int32_t qnt_granularity;
enum {
  QNT_GRANULARITY_PER_TENSOR = 1,
  QNT_GRANULARITY_PER_AXIS = 2,
  QNT_GRANULARITY_PER_BLOCK = 3
};

/* Symmetric: every zero point is the dtype's centre, 0 for signed dtypes and 2^(bits-1) for
 * unsigned ones (128 for u8, 32768 for u16, 8 for u4), as PyTorch does. Affine: any zero point
 * in the dtype's range. Log2 (since 0.11): the logarithmic codes of QNT_DTYPE_LOG4 and
 * QNT_DTYPE_LOG8 (see qnt_dtype), which the log dtypes always use and no other dtype does. */
typedef int32_t qnt_scheme;
enum { QNT_SCHEME_SYMMETRIC = 1, QNT_SCHEME_AFFINE = 2, QNT_SCHEME_LOG2 = 3 };

/*
 * Validation shared by the three constructors (all give QNT_ERR_INVALID_QPARAMS):
 *  - dtype is a quantized dtype (not f32);
 *  - every scale is finite and > 0;
 *  - every zero point lies in qnt_dtype_range(dtype); it is 0 for NF4, binary and ternary.
 * zero_points may be NULL: every zero point is then the symmetric one (see qnt_scheme).
 * scales and zero_points are copied. Caller destroys *out with qnt_qparams_destroy().
 */

/* One scale and zero point for the whole tensor. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (bad dtype), QNT_ERR_INVALID_QPARAMS. */
QNT_API qnt_status qnt_qparams_create_per_tensor(qnt_dtype dtype, float scale, int32_t zero_point,
                                                 qnt_qparams **out);

/* count scales (and zero points) along axis; a tensor using them needs D[axis] == count.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (bad dtype, count == 0, axis outside
 * [-8, 7]), QNT_ERR_INVALID_QPARAMS. */
QNT_API qnt_status qnt_qparams_create_per_axis(qnt_dtype dtype, int64_t axis, size_t count,
                                               const float *scales, const int32_t *zero_points,
                                               qnt_qparams **out);

/* count scales (and zero points) for blocks of block_size elements along axis, laid out as
 * described at the top of this header; a tensor using them needs
 * count == (element count / D[axis]) * ceil(D[axis] / block_size).
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (bad dtype, count == 0,
 * block_size <= 0, axis outside [-8, 7]), QNT_ERR_INVALID_QPARAMS. */
QNT_API qnt_status qnt_qparams_create_per_block(qnt_dtype dtype, int64_t axis, int64_t block_size,
                                                size_t count, const float *scales,
                                                const int32_t *zero_points, qnt_qparams **out);

/* Frees this reference to qp; NULL is allowed. */
QNT_API void qnt_qparams_destroy(qnt_qparams *qp);

/* Getters. Each returns QNT_ERR_NULL_POINTER when qp or an output is NULL. */
QNT_API qnt_status qnt_qparams_dtype(const qnt_qparams *qp, qnt_dtype *out);
QNT_API qnt_status qnt_qparams_granularity(const qnt_qparams *qp, qnt_granularity *out);
/* QNT_SCHEME_LOG2 for the log dtypes; otherwise QNT_SCHEME_SYMMETRIC when every zero point is
 * the dtype's symmetric one, else affine. */
QNT_API qnt_status qnt_qparams_scheme(const qnt_qparams *qp, qnt_scheme *out);
/* The axis as given at creation (0 for per-tensor). */
QNT_API qnt_status qnt_qparams_axis(const qnt_qparams *qp, int64_t *out);
/* The block size (0 unless per-block). */
QNT_API qnt_status qnt_qparams_block_size(const qnt_qparams *qp, int64_t *out);
/* The number of scales (1 for per-tensor). */
QNT_API qnt_status qnt_qparams_scale_count(const qnt_qparams *qp, size_t *out);
/* Copies the scales (zero points) to out, which holds capacity values.
 * Also QNT_ERR_BUFFER_TOO_SMALL when capacity < qnt_qparams_scale_count. */
QNT_API qnt_status qnt_qparams_scales(const qnt_qparams *qp, float *out, size_t capacity);
QNT_API qnt_status qnt_qparams_zero_points(const qnt_qparams *qp, int32_t *out, size_t capacity);

/* ------------------------------------------------------------------------------------------- */
/* Tensors                                                                                      */
/* ------------------------------------------------------------------------------------------- */

/* Thread safety: several threads may read a tensor at once (as an op's input, or through the
 * getters); an op that writes it (as its output) must have it to itself. */
typedef struct qnt_tensor qnt_tensor;

/* The largest rank a tensor may have. */
#define QNT_MAX_RANK 8

/* The largest dimension, and element count, a tensor may have: 2^61 - 1 (PTRDIFF_MAX / 4 on
 * 64-bit machines), so that byte sizes and index arithmetic never overflow. */
#define QNT_MAX_ELEMENTS 0x1FFFFFFFFFFFFFFF

/* Where a tensor's storage lives; the values are DLPack's DLDeviceType. */
typedef int32_t qnt_device_type;
enum {
  QNT_DEVICE_CPU = 1, /* host memory (kDLCPU) */
  QNT_DEVICE_CUDA = 2 /* CUDA device memory (kDLCUDA) */
};

/*
 * Shared rules of the three constructors:
 *  - shape has rank values, each >= 0 (rank 0 is a scalar of one element; shape may then be
 *    NULL); rank <= QNT_MAX_RANK. Every dimension, and the product of the nonzero ones, is at
 *    most QNT_MAX_ELEMENTS (QNT_ERR_OVERFLOW otherwise), also when another dimension is 0: an
 *    empty tensor is still bounded, so no size computed from its shape can overflow.
 *  - qparams may be NULL. If given, its dtype must equal dtype (QNT_ERR_DTYPE_MISMATCH), dtype
 *    must not be f32 (QNT_ERR_INVALID_ARGUMENT), and its axis and counts must fit the shape
 *    (QNT_ERR_SHAPE_MISMATCH). The tensor keeps its own reference to qparams.
 *  - Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (bad dtype, negative dimension),
 *    QNT_ERR_UNSUPPORTED (rank > QNT_MAX_RANK), QNT_ERR_OVERFLOW (the element count or byte
 *    size does not fit in size_t / ptrdiff_t), QNT_ERR_OUT_OF_MEMORY.
 * Caller destroys *out with qnt_tensor_destroy().
 */

/* A tensor whose storage is allocated by qnt (64-byte aligned) and zero-filled. */
QNT_API qnt_status qnt_tensor_create(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                     const qnt_qparams *qparams, qnt_tensor **out);

/* A tensor whose storage is allocated by qnt and filled with a copy of data, which holds
 * data_bytes >= the tensor's byte size (only that many bytes are read; packed dtypes in the
 * layout given at qnt_dtype). Also QNT_ERR_BUFFER_TOO_SMALL. data may be NULL only when the
 * byte size is 0. */
QNT_API qnt_status qnt_tensor_create_from_data(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                               const qnt_qparams *qparams, const void *data,
                                               size_t data_bytes, qnt_tensor **out);

/* A tensor over the caller's memory, which is borrowed, not copied: data must stay valid, and
 * hold data_bytes >= the tensor's byte size, until the tensor is destroyed; writes by ops go
 * straight to it. data must be aligned to the element size for 16- and 32-bit dtypes
 * (QNT_ERR_INVALID_ARGUMENT). Also QNT_ERR_BUFFER_TOO_SMALL. */
QNT_API qnt_status qnt_tensor_wrap(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                   const qnt_qparams *qparams, void *data, size_t data_bytes,
                                   qnt_tensor **out);

/* Device tensors (since 0.7). A tensor lives on the CPU or on one CUDA device; every op runs
 * where its tensors are (see qnt_context_set_cuda_stream). Device storage is reached only
 * through qnt: qnt_tensor_data gives the device pointer, and qnt_tensor_copy,
 * qnt_tensor_copy_to and qnt_tensor_copy_from move bytes in and out.
 * Besides the shared rules above, both constructors take device_type QNT_DEVICE_CPU (device
 * must be 0; the same as qnt_tensor_create / qnt_tensor_wrap) or QNT_DEVICE_CUDA, and return
 * QNT_ERR_INVALID_ARGUMENT for another device type or a negative device, and
 * QNT_ERR_NO_DEVICE when the CUDA device does not exist (no module, no driver, no GPU). */

/* A zero-filled tensor on the device, allocated by qnt (cudaMalloc on that device; 256-byte
 * aligned). The allocation and the fill are finished when the call returns.
 * Also QNT_ERR_OUT_OF_MEMORY (device memory). */
QNT_API qnt_status qnt_tensor_create_on_device(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                               const qnt_qparams *qparams,
                                               qnt_device_type device_type, int32_t device,
                                               qnt_tensor **out);

/* A tensor over the caller's device memory (for example a cudaMalloc'ed buffer or a framework's
 * tensor), borrowed as qnt_tensor_wrap borrows host memory: data must be device memory of that
 * device (QNT_ERR_INVALID_ARGUMENT otherwise, as CUDA's pointer attributes tell), aligned to
 * the element size, and stay valid, holding data_bytes >= the byte size, until the tensor is
 * destroyed. Also QNT_ERR_BUFFER_TOO_SMALL. */
QNT_API qnt_status qnt_tensor_wrap_device(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                          const qnt_qparams *qparams, qnt_device_type device_type,
                                          int32_t device, void *data, size_t data_bytes,
                                          qnt_tensor **out);

/* Copies src's bytes into dst: host to device, device to host, device to device (also between
 * two devices) or host to host. Both must have the same dtype (QNT_ERR_DTYPE_MISMATCH) and
 * shape (QNT_ERR_SHAPE_MISMATCH); qparams are not copied. dst must be writable and must not
 * overlap src (QNT_ERR_INVALID_ARGUMENT). ctx may be NULL. A copy that touches a device is
 * ordered on ctx's stream when ctx is bound to that device (a device-to-device copy is then
 * asynchronous, like an op; one from or to host memory waits before returning, so the host
 * buffer may be reused at once), otherwise on the legacy default stream, waiting before it
 * returns. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH,
 * QNT_ERR_INVALID_ARGUMENT, QNT_ERR_NO_DEVICE, QNT_ERR_INTERNAL (CUDA's message). */
QNT_API qnt_status qnt_tensor_copy(qnt_context *ctx, const qnt_tensor *src, qnt_tensor *dst);

/* Frees t (and, if it owns it, its storage; borrowed memory is left alone). NULL is allowed.
 * Device storage is freed with cudaFree, which waits for the device's work. */
QNT_API void qnt_tensor_destroy(qnt_tensor *t);

/* Getters. Each returns QNT_ERR_NULL_POINTER when t or an output is NULL. */
QNT_API qnt_status qnt_tensor_dtype(const qnt_tensor *t, qnt_dtype *out);
QNT_API qnt_status qnt_tensor_rank(const qnt_tensor *t, size_t *out);
/* Copies the rank dimensions to shape_out, which holds capacity values; also
 * QNT_ERR_BUFFER_TOO_SMALL when capacity < rank. shape_out may be NULL when rank is 0. */
QNT_API qnt_status qnt_tensor_shape(const qnt_tensor *t, int64_t *shape_out, size_t capacity);
QNT_API qnt_status qnt_tensor_element_count(const qnt_tensor *t, size_t *out);
/* ceil(element count * bits / 8). */
QNT_API qnt_status qnt_tensor_byte_size(const qnt_tensor *t, size_t *out);
/* A new reference to the tensor's qparams, which the caller destroys with
 * qnt_qparams_destroy(); *out is set to NULL when the tensor has none. */
QNT_API qnt_status qnt_tensor_qparams(const qnt_tensor *t, qnt_qparams **out);
/* The tensor's storage, borrowed: valid until t is destroyed (for a wrapped tensor, the
 * caller's pointer). May be NULL for a tensor of 0 bytes. */
QNT_API qnt_status qnt_tensor_data(qnt_tensor *t, void **out);

/* Where the tensor's storage lives: device type and device index (0 for the CPU).
 * Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_tensor_device(const qnt_tensor *t, qnt_device_type *type_out,
                                     int32_t *id_out);

/* 1 when the tensor may not be written (imported from a read-only DLPack tensor), else 0. Ops
 * refuse it as an output (QNT_ERR_INVALID_ARGUMENT). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_tensor_is_read_only(const qnt_tensor *t, int32_t *out);

/* Copies the tensor's byte size bytes of storage to dst (host memory), which holds dst_bytes.
 * For a device tensor this is a device-to-host copy on the legacy default stream, finished when
 * the call returns (it does not wait for work on other streams: synchronize first).
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_BUFFER_TOO_SMALL (dst_bytes < byte size),
 * QNT_ERR_INTERNAL (a CUDA error, with its message). */
QNT_API qnt_status qnt_tensor_copy_to(const qnt_tensor *t, void *dst, size_t dst_bytes);

/* Refills the tensor's storage (owned or wrapped) with the first byte-size bytes of src, which
 * holds src_bytes (host memory; for a device tensor a host-to-device copy, as
 * qnt_tensor_copy_to); for garbage-collected callers that cannot lend memory. Packed dtypes: the
 * unused bits of the last byte are written as 0. src must not overlap the storage.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_BUFFER_TOO_SMALL (src_bytes < byte size),
 * QNT_ERR_INVALID_ARGUMENT (read-only tensor, or src overlaps it); t is untouched then. */
QNT_API qnt_status qnt_tensor_copy_from(qnt_tensor *t, const void *src, size_t src_bytes);

/*
 * DLPack (https://dmlc.github.io/dlpack): zero-copy exchange with NumPy, PyTorch, JAX, CuPy...
 * Both forms are accepted, passed as void * so that this header does not depend on dlpack.h:
 *  - the legacy DLManagedTensor (DLPack < 1.0; what NumPy 1.24 and PyTorch 1.13 exchange);
 *  - DLManagedTensorVersioned (DLPack >= 1.0), major version 1.
 * dtypes map to DLPack as: f32 {kDLFloat, 32}, i32 {kDLInt, 32}, i8 {kDLInt, 8}, u8 {kDLUInt, 8},
 * i16 {kDLInt, 16}, u16 {kDLUInt, 16}, and the packed sub-byte integers i4 {kDLInt, 4},
 * u4 {kDLUInt, 4}, ternary {kDLInt, 2}, f16 {kDLFloat, 16}, bf16 {kDLBfloat, 16}, all with
 * one lane; packed sub-byte data follows qnt's
 * packing (element 0 in the lowest bits). NF4 and binary have no DLPack type (their values are
 * codebook entries, not integers) and are refused with QNT_ERR_UNSUPPORTED. Quantization
 * parameters do not travel: attach them on import.
 */

/* Imports a DLPack tensor without copying. `managed` is a DLManagedTensor * (versioned == 0) or
 * a DLManagedTensorVersioned * (versioned == 1). The tensor must be on the CPU (kDLCPU or
 * kDLCUDAHost, which import as CPU tensors) or on a CUDA device (kDLCUDA, since 0.7: a device
 * tensor; QNT_ERR_NO_DEVICE when that device is not usable), compact and row-major (strides NULL, or the row-major strides; strides of
 * dimensions of size 1 are ignored), of a dtype above, with data aligned to its element size.
 * qparams as for qnt_tensor_create. On success qnt owns `managed`: it calls its deleter exactly
 * once, when the returned tensor is destroyed and no other handle (a qnt_tensor_to_dlpack
 * export) uses the memory. On failure `managed` is left alone and still the caller's.
 * A versioned tensor flagged DLPACK_FLAG_BITMASK_READ_ONLY imports as a read-only tensor.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (versioned not 0 or 1, a bad shape,
 * strides that are not row-major, misaligned data), QNT_ERR_UNSUPPORTED (a dtype or device qnt
 * does not take, a DLPack major version other than 1), QNT_ERR_DTYPE_MISMATCH,
 * QNT_ERR_SHAPE_MISMATCH (qparams), QNT_ERR_OVERFLOW, QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_tensor_from_dlpack(void *managed, int32_t versioned,
                                          const qnt_qparams *qparams, qnt_tensor **out);

/* Exports t as a new DLManagedTensor (versioned == 0) or DLManagedTensorVersioned (versioned ==
 * 1, version 1.0, flags 0, or READ_ONLY for a read-only tensor), without copying. Its shape is
 * t's; strides are NULL (legacy) or the row-major strides (versioned); byte_offset is 0; the
 * device is t's (kDLCPU, or kDLCUDA and its index). The
 * consumer calls its deleter once when done. The export keeps qnt's storage alive after t is
 * destroyed; for a wrapped tensor (qnt_tensor_wrap) it points at the caller's memory, which
 * must then outlive the export. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT
 * (versioned not 0 or 1), QNT_ERR_UNSUPPORTED (NF4, binary, LOG4, LOG8: codes, not integers),
 * QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_tensor_to_dlpack(const qnt_tensor *t, int32_t versioned, void **out);

/* ------------------------------------------------------------------------------------------- */
/* Quantize, dequantize, requantize                                                             */
/* ------------------------------------------------------------------------------------------- */

/*
 * Shared rules of the three ops:
 *  - ctx may be NULL (default threads). Results never depend on the number of threads.
 *  - Input and output have the same shape (QNT_ERR_SHAPE_MISMATCH) and must not share storage
 *    (QNT_ERR_INVALID_ARGUMENT).
 *  - The quantized side uses its tensor's qparams; a quantized tensor without qparams gives
 *    QNT_ERR_INVALID_QPARAMS.
 *  - Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH,
 *    QNT_ERR_INVALID_ARGUMENT, QNT_ERR_INVALID_QPARAMS, QNT_ERR_OUT_OF_MEMORY. On failure the
 *    output is untouched.
 */

/* y = quantize(x): x is f32 (or, since 0.7, f16 or bf16, widened exactly); y is any quantized
 * dtype, with qparams. Unused bits of y's last byte (sub-byte dtypes) are written as 0.
 * On a CUDA device (since 0.7): every dtype and granularity, with the same bits as the CPU. */
QNT_API qnt_status qnt_quantize(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y);

/* y = dequantize(q): q is any quantized dtype, with qparams; y is f32 (or, since 0.7, f16 or
 * bf16: the float32 value rounded to nearest even). On a CUDA device as qnt_quantize. */
QNT_API qnt_status qnt_dequantize(qnt_context *ctx, const qnt_tensor *q, qnt_tensor *y);

/* dst = quantize(dequantize(src)), element by element, with src's qparams on the way in and
 * dst's on the way out (the ONNX DequantizeLinear -> QuantizeLinear pair, float32 between).
 * Changes scales, zero points, granularity and dtype in one pass. On a CUDA device as
 * qnt_quantize. */
QNT_API qnt_status qnt_requantize(qnt_context *ctx, const qnt_tensor *src, qnt_tensor *dst);

/* ------------------------------------------------------------------------------------------- */
/* Calibration                                                                                  */
/* ------------------------------------------------------------------------------------------- */

/*
 * Min-max calibration with PyTorch's MinMaxObserver / PerChannelMinMaxObserver formulas, over
 * the f32 tensor x (ctx may be NULL), one group per parameter of the requested granularity
 * (for per-axis, every element with the same index along axis; for per-block, each block). NaN
 * and +-inf are skipped. In float32 arithmetic, with [qmin, qmax] = the dtype's range:
 *   mn = min(min(group), 0), mx = max(max(group), 0)            (the range contains 0)
 *   symmetric: scale = max(-mn, mx) / ((float)(qmax - qmin) / 2); zero point = 0 for signed
 *              dtypes, 2^(bits-1) for unsigned ones
 *   affine:    scale = (mx - mn) / (float)(qmax - qmin);
 *              zero point = clamp(qmin - round_half_to_even(mn / scale), qmin, qmax)
 *   scale = max(scale, FLT_EPSILON) (before the zero point is computed)
 * For i8 symmetric that is amax / 127.5, as PyTorch computes it. A group with no finite value
 * gets PyTorch's answer for an empty observer: scale 1, zero point 0. dtype must be an integer
 * dtype (i32, i8, u8, i16, u16, i4, u4); NF4, binary and ternary use qnt_calibrate_codebook.
 * block_size is used only for per-block and must then be > 0.
 * Caller destroys *out with qnt_qparams_destroy().
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH (x not f32), QNT_ERR_INVALID_ARGUMENT
 * (bad dtype, scheme, granularity, axis or block size; a range that overflows float32),
 * QNT_ERR_UNSUPPORTED (NF4, binary, ternary), QNT_ERR_OUT_OF_MEMORY.
 */
QNT_API qnt_status qnt_calibrate_minmax(qnt_context *ctx, const qnt_tensor *x, qnt_dtype dtype,
                                        qnt_scheme scheme, qnt_granularity granularity,
                                        int64_t axis, int64_t block_size, qnt_qparams **out);

/* As qnt_calibrate_minmax, with PyTorch's custom quant_min / quant_max in place of the dtype's
 * range. The range must lie in the dtype's range and contain 0 (qmin <= 0 < qmax), as PyTorch
 * requires. With a custom range the symmetric zero point of an unsigned dtype is
 * (qmin + qmax) / 2 rounded down, as PyTorch chooses it. PyTorch's reduce_range=True is the
 * range [0, 127] for u8 and [-64, 63] for i8 here, with one difference: for u8 symmetric PyTorch
 * keeps zero point 128, outside that range, where qnt gives 63. The result still saturates at
 * the dtype's limits when used.
 * Errors: as qnt_calibrate_minmax, and QNT_ERR_INVALID_ARGUMENT for a bad range. */
QNT_API qnt_status qnt_calibrate_minmax_range(qnt_context *ctx, const qnt_tensor *x,
                                              qnt_dtype dtype, qnt_scheme scheme,
                                              qnt_granularity granularity, int64_t axis,
                                              int64_t block_size, int32_t quant_min,
                                              int32_t quant_max, qnt_qparams **out);

/* Scales for the codebook dtypes by their own rules (see qnt_dtype), one per group of the
 * requested granularity: NF4 absmax, binary mean |x|, ternary max(mean |x|, 1e-5), and (since
 * 0.11) LOG4 and LOG8 absmax. Means are
 * summed in double over the group's finite values, then rounded to float32. NaN and +-inf are
 * skipped. An NF4, binary or log group with no nonzero finite value gets scale 1 (a scale must
 * be > 0; NF4 and the log codes then store its zeros exactly, binary as +1). block_size is used only for
 * per-block and must then be > 0. Caller destroys *out with qnt_qparams_destroy().
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH (x not f32), QNT_ERR_INVALID_ARGUMENT
 * (dtype not NF4, binary, ternary, LOG4 or LOG8; bad granularity, axis or block size),
 * QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_calibrate_codebook(qnt_context *ctx, const qnt_tensor *x, qnt_dtype dtype,
                                          qnt_granularity granularity, int64_t axis,
                                          int64_t block_size, qnt_qparams **out);

/* Power-of-two scales (since 0.11), for integer-only hardware, where requantization by a
 * power-of-two ratio of scales is a shift. *out gets qp's dtype, granularity and zero points,
 * with each scale s replaced by a power of two: without x (NULL), the smallest power of two
 * >= s (the grid only widens, so nothing clips that did not clip with qp); with x (an f32
 * tensor whose shape fits qp), whichever of the powers of two just below and just above s
 * gives the group's finite values of x the smaller sum of squared errors (computed in double;
 * a tie takes the larger). A scale that is already a power of two is kept. Caller destroys
 * *out with qnt_qparams_destroy(). ctx may be NULL. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_DTYPE_MISMATCH (x not f32), QNT_ERR_SHAPE_MISMATCH (x does not fit qp),
 * QNT_ERR_INVALID_QPARAMS (a power of two above s overflows float32),
 * QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_qparams_pow2_scales(qnt_context *ctx, const qnt_qparams *qp,
                                           const qnt_tensor *x, qnt_qparams **out);

/* ------------------------------------------------------------------------------------------- */
/* Quantized operators                                                                          */
/* ------------------------------------------------------------------------------------------- */

/*
 * Shared rules of the operators:
 *  - Integer operands (i8 or u8) take their zero points from their tensor's qparams, or 0 when
 *    the tensor has none; scales are read only where the output needs them (i8, u8 or f32
 *    output). A weight's qparams may be per-tensor or per output channel, as each op says.
 *  - Integer accumulation: acc = sum over k of (a - za) * (b - zb), exact in 64 bits and then
 *    wrapped to int32 (modulo 2^32), as int32 hardware accumulators do. With 8-bit operands no
 *    term exceeds 255 * 255, so nothing wraps for K <= 33025. An int32 bias is added to acc the
 *    same way.
 *  - Requantization to an i8 / u8 output y (scale sy, zero point zy), for output channel c:
 *        multiplier[c] = (sa * sb[c]) / sy            float32: one product, one division
 *        y = saturate(round_half_to_even((float)acc * multiplier[c]) + zy)
 *    (float)acc rounds to nearest even when |acc| > 2^24; the product is one float32
 *    multiplication (never fused with anything); a multiplier that overflows saturates, and a
 *    NaN product (0 times an infinite multiplier) gives zy. This is the float requantization of
 *    ONNX Runtime's and FBGEMM's kernels.
 *  - f32 output: y = (float)acc * (sa * sb[c]), plus an f32 bias[c] as a separate float32
 *    addition; an int32 bias is part of acc instead.
 *  - Float dot products (weight-only linear) use one fixed order, so that every kernel gives
 *    the same bits: 16 float32 partial sums, element k going to sum k % 16 with a fused
 *    multiply-add (fmaf), then the sums are added pairwise: s[i] += s[i + 8], then + 4, + 2, + 1.
 *  - NaN (since 0.7.1): every NaN a float output of an operator holds (f32 output of the GEMM
 *    family, the weight-only layer's y) is the canonical quiet NaN, bits 0x7FC00000 (0x7E00 in
 *    f16, 0x7FC0 in bf16), whatever NaNs the inputs held, on every kernel and device: which
 *    input NaN float arithmetic passes on depends on the order of the operations, so no payload
 *    or sign is kept.
 *  - Output tensors are created by the caller with the documented shape and dtype; on failure
 *    they are untouched. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH,
 *    QNT_ERR_SHAPE_MISMATCH, QNT_ERR_INVALID_QPARAMS (missing or wrong granularity),
 *    QNT_ERR_INVALID_ARGUMENT, QNT_ERR_UNSUPPORTED (with what is unsupported),
 *    QNT_ERR_OUT_OF_MEMORY.
 *  - An empty output (a zero dimension) is success with nothing computed or allocated; K = 0
 *    gives acc = 0 (and then the bias) for every output.
 *  - On a CUDA device (since 0.7; see qnt_context_set_cuda_stream), with the same bits as on
 *    the CPU: qnt_qmatmul with a 2-D b (a batched b is QNT_ERR_UNSUPPORTED there), the
 *    weight-only linear layer (one-shot in its f32 mode; prepared in both modes), and the
 *    prepared matmul, static linear and weight-only layers when they were prepared with a
 *    context bound to that device. The other operators refuse device tensors
 *    (QNT_ERR_UNSUPPORTED, naming the op).
 */

/* Options of an operator, as enum keys with int64 values (the zstd ZSTD_CCtx_setParameter
 * pattern): new options are new keys, never new parameters. An op reads the keys it takes and
 * refuses a descriptor in which another key was set (QNT_ERR_INVALID_ARGUMENT), so an option is
 * never silently ignored. A NULL descriptor means every default. Immutable while an op uses it;
 * safe to share between threads for reading. */
typedef struct qnt_op_desc qnt_op_desc;

typedef int32_t qnt_op_option;
enum {
  /* qnt_qconv2d and its prepared form: */
  QNT_OP_STRIDE_H = 1,    /* >= 1; default 1 */
  QNT_OP_STRIDE_W = 2,    /* >= 1; default 1 */
  QNT_OP_PAD_TOP = 3,     /* >= 0; default 0. Padded positions act as x's zero point (real 0) */
  QNT_OP_PAD_LEFT = 4,    /* >= 0; default 0 */
  QNT_OP_PAD_BOTTOM = 5,  /* >= 0; default 0 */
  QNT_OP_PAD_RIGHT = 6,   /* >= 0; default 0 */
  QNT_OP_DILATION_H = 7,  /* >= 1; default 1 */
  QNT_OP_DILATION_W = 8,  /* >= 1; default 1 */
  QNT_OP_GROUPS = 9,      /* >= 1; C and M multiples of it; groups == C == M is depthwise */
  /* qnt_qadd, qnt_qconv2d, qnt_linear_dynamic and the prepared static and dynamic linear
   * layers and convolution (since 0.4): */
  QNT_OP_FUSE_RELU = 10,  /* 0 or 1; default 0: 8-bit y = max(y, zy); i32 and f32 y = max(y, 0)
                             (a NaN stays NaN) */
  /* qnt_linear_dynamic and its prepared form: */
  QNT_OP_ACT_QUANT = 11,   /* a qnt_act_quant; default QNT_ACT_PER_TENSOR */
  QNT_OP_REDUCE_RANGE = 12, /* 0 or 1 (since 0.4); default 0. 1: the activations are quantized
                               to [0, 127] (PyTorch's reduce_range on x86) instead of [0, 255] */
  /* qnt_qconv2d and its prepared form (since 0.4): */
  QNT_OP_LAYOUT = 13,      /* a qnt_layout, of both x and y; default QNT_LAYOUT_NCHW */
  /* qnt_prepared_create_linear_weight_only (since 0.5): */
  QNT_OP_WEIGHT_ONLY_MODE = 14 /* a qnt_weight_only_mode; default QNT_WEIGHT_ONLY_F32 */
};

/* How the weight-only linear layer computes (QNT_OP_WEIGHT_ONLY_MODE); see
 * qnt_linear_weight_only for the exact arithmetic of each. */
typedef int32_t qnt_weight_only_mode;
enum {
  QNT_WEIGHT_ONLY_F32 = 0,     /* every weight dequantized to float32; float dot products */
  QNT_WEIGHT_ONLY_INT8_ACT = 1, /* activations quantized to int8 per row and weight block; integer
                                  dot products per block (W4A8, W8A8: llama.cpp's Q4_0 x Q8_0,
                                  ONNX Runtime's MatMulNBits with accuracy_level 4) */
  QNT_WEIGHT_ONLY_INT8_TOKEN = 2, /* (since 0.9) ternary or binary weights, activations quantized to
                                    int8 per row (per token) by absmax, one exact int32 dot
                                    product per output (BitNet b1.58); see qnt_linear_weight_only */
  QNT_WEIGHT_ONLY_INT8_BLOCK = 3 /* (since 0.12) QNT_WEIGHT_ONLY_INT8_ACT's activations and
                                    weights, one exact int32 dot product per block and one float
                                    sum per output (one fma per block, not per block and lane):
                                    the mode for batches; see qnt_linear_weight_only */
};

/* The memory layout of a convolution's activations (QNT_OP_LAYOUT). The filter is always
 * [M, C / groups, KH, KW]. */
typedef int32_t qnt_layout;
enum {
  QNT_LAYOUT_NCHW = 0, /* x [N, C, H, W], y [N, M, OH, OW] */
  QNT_LAYOUT_NHWC = 1  /* x [N, H, W, C], y [N, OH, OW, M] (channels last) */
};

/* How qnt_linear_dynamic quantizes its activations at run time (QNT_OP_ACT_QUANT). */
typedef int32_t qnt_act_quant;
enum {
  QNT_ACT_PER_TENSOR = 1, /* one DynamicQuantizeLinear over the whole input */
  QNT_ACT_PER_ROW = 2     /* one per row of K values */
};

/* A descriptor with every option at its default. Caller destroys it with
 * qnt_op_desc_destroy(). Errors: QNT_ERR_NULL_POINTER, QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_op_desc_create(qnt_op_desc **out);
/* Frees d; NULL is allowed. */
QNT_API void qnt_op_desc_destroy(qnt_op_desc *d);
/* Sets one option. Geometry values are at most 2^31. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (unknown key, or a value outside the key's range; d is unchanged). */
QNT_API qnt_status qnt_op_desc_set(qnt_op_desc *d, qnt_op_option key, int64_t value);
/* Reads one option (its default when it was not set). Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (unknown key). */
QNT_API qnt_status qnt_op_desc_get(const qnt_op_desc *d, qnt_op_option key, int64_t *out);

/* Quantized matrix product, ONNX MatMulInteger and QLinearMatMul in one call; y's dtype picks
 * the mode.
 *  a: i8 or u8, [..., M, K]; qparams per-tensor (or none: zero point 0).
 *  b: i8 or u8, [K, N] or [..., K, N]; qparams per-tensor or per-axis along the last axis
 *     (one per column n). Batch dimensions of a and b broadcast as in numpy.matmul.
 *  bias: NULL, or [N]: i32 (scale sa * sb[n], zero point 0; any mode) or f32 (f32 mode only).
 *  y: [broadcast batch..., M, N] and
 *     - i32: acc itself (MatMulInteger); a, b need no scales;
 *     - i8 / u8 with per-tensor qparams: requantized (QLinearMatMul);
 *     - f32: acc * sa * sb[n] (+ bias).
 * Rank-1 a or b are not accepted (QNT_ERR_SHAPE_MISMATCH): give them an explicit M or N of 1. */
QNT_API qnt_status qnt_qmatmul(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                               const qnt_tensor *bias, qnt_tensor *y);

/* Binary matrix product (since 0.10; XNOR-Net and binary neural network layers): binary
 * activations times binary weights, by XOR and popcount.
 *  a: binary [M, K] (values -1 and +1: bit 1 is +1), qparams per tensor or per row (per axis
 *     along axis 0: sa[m]), or none;
 *  b: binary [N, K] (the weights, one row per output), qparams likewise (sb[n]), or none;
 *  y: [M, N], and with acc[m, n] = sum over k of a[m, k] * b[n, k] = K - 2 * (the number of k
 *     where the two differ), exact (K at most 2^31 - 1):
 *     - i32 (no qparams): acc;
 *     - f32: (float)acc * (sa[m] * sb[n]), the product of the scales rounded to float32 first
 *       (a and b need qparams); a NaN result is the canonical NaN.
 * Every kernel gives the same bits. Host memory only (QNT_ERR_UNSUPPORTED otherwise). Binary
 * weights also go through qnt_qmatmul, qnt_qconv2d and the linear layers (as i8 -1 and +1 with
 * 8-bit activations) and the weight-only layer's QNT_WEIGHT_ONLY_INT8_TOKEN mode. */
QNT_API qnt_status qnt_binary_matmul(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                                     qnt_tensor *y);

/* Ternary weights in bitnet.cpp's layouts (since 0.10): conversions with exact round trips
 * between a ternary tensor [rows, cols] (values -1, 0, +1) and the bytes of
 *  - QNT_TERNARY_I2_S: bitnet.cpp's I2_S (x86, blocks of 128): the whole tensor as a stream of
 *    128-weight blocks of 32 bytes, weight j of a block in byte j % 32, bits 7-6 for j < 32,
 *    5-4, 3-2, 1-0 for the next groups of 32, holding v + 1 (0, 1, 2); then the tensor's float32
 *    scale (little-endian) and 28 zero bytes: rows * cols / 4 + 32 bytes; rows * cols a multiple
 *    of 128. (qnt's per-token mode packs each row this way, padded to a whole block.)
 *  - QNT_TERNARY_TL1: bitnet.cpp's TL1 lookup-table indices: each pair of a row (w0, w1) as
 *    3 w0 + w1 + 4 (0..8), two a byte (the first in the high nibble), the bytes permuted into the
 *    tiles of its kernel (tiling: bm, bk and bmm of the shape's kernel_config.ini section, by =
 *    256 / bmm): rows * cols / 4 bytes.
 *  - QNT_TERNARY_TL2: bitnet.cpp's TL2: each triple of a row as |9 w0 + 3 w1 + w2| (0..13), two
 *    a byte, plus a sign bit (set when negative) in 16-bit words, tiled likewise (bmm 32), the
 *    columns past the last whole bk tile as TL1-style pairs in tiles of 32 x 32, the whole padded
 *    with zeros to bitnet.cpp's size, (cols - 256) * rows / 3 * 5 / 8 + 256 * rows / 2 * 4 / 8
 *    (integer divisions, left to right).
 * kernels/README.md gives each definition in full with its source. TL1 and TL2 carry no scale:
 * the tensor's per-tensor scale travels beside them (bitnet.cpp's max |w|). */
typedef int32_t qnt_ternary_layout;
enum {
  QNT_TERNARY_I2_S = 1,
  QNT_TERNARY_TL1 = 2,
  QNT_TERNARY_TL2 = 3
};
/* The tile sizes of TL1 and TL2 (bitnet.cpp's kernel_config.ini: bm, bk, bmm); NULL for I2_S. */
typedef struct qnt_ternary_tiling {
  int64_t bm;  /* rows a tile */
  int64_t bk;  /* columns a tile */
  int64_t bmm; /* rows an inner tile */
} qnt_ternary_tiling;

/* The bytes of a [rows, cols] ternary tensor in `layout`. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (unknown layout, negative shape or tiles), QNT_ERR_UNSUPPORTED (a
 * shape or tiling the layout does not take, with the reason). */
QNT_API qnt_status qnt_ternary_layout_size(qnt_ternary_layout layout, int64_t rows, int64_t cols,
                                           const qnt_ternary_tiling *tiling, size_t *bytes_out);
/* w (ternary [rows, cols]; I2_S needs per-tensor qparams for its scale) into out (capacity
 * bytes, at least qnt_ternary_layout_size's). Errors: those of qnt_ternary_layout_size,
 * QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH, QNT_ERR_INVALID_QPARAMS,
 * QNT_ERR_INVALID_ARGUMENT (w holds ternary's code 0b10), QNT_ERR_BUFFER_TOO_SMALL. */
QNT_API qnt_status qnt_ternary_export(qnt_ternary_layout layout, const qnt_tensor *w,
                                      const qnt_ternary_tiling *tiling, void *out, size_t capacity);
/* A new ternary tensor [rows, cols] with per-tensor qparams from `bytes` bytes in `layout`
 * (exactly qnt_ternary_layout_size's): its scale is I2_S's own, or `scale` for TL1 and TL2.
 * Caller destroys it. Errors: those of qnt_ternary_layout_size, QNT_ERR_SHAPE_MISMATCH (bytes),
 * QNT_ERR_CORRUPT_DATA (a code, index or magnitude no weights give, a sign on a zero triple,
 * nonzero padding), QNT_ERR_INVALID_QPARAMS (a scale that is not finite and > 0). */
QNT_API qnt_status qnt_ternary_import(qnt_ternary_layout layout, const void *data, size_t bytes,
                                      int64_t rows, int64_t cols, const qnt_ternary_tiling *tiling,
                                      float scale, qnt_tensor **out);

/* ONNX DynamicQuantizeLinear: x (f32, any shape) -> a new u8 tensor of x's shape with
 * per-tensor qparams computed from x, which the caller destroys with qnt_tensor_destroy():
 *    lo = min(min(x), 0), hi = max(max(x), 0)                  (NaN skipped; +-inf rejected)
 *    scale = (hi - lo) / 255                                   float32
 *    zero_point = clamp(round_half_to_even((0 - lo) / scale), 0, 255)
 *    y = saturate(round_half_to_even(x / scale) + zero_point)  (the quantize rule)
 * When hi == lo (all zeros, or an empty x) the scale would be 0; qnt uses scale 1 and zero
 * point 0 there (every y is 0). Read the parameters with qnt_tensor_qparams(). */
QNT_API qnt_status qnt_dynamic_quantize_linear(qnt_context *ctx, const qnt_tensor *x,
                                               qnt_tensor **y_out);

/* Dynamically quantized linear layer (PyTorch's quantized dynamic nn.Linear, ONNX Runtime's
 * DynamicQuantizeLinear + MatMulInteger pattern):
 *  x: f32 [..., K]; its rows are quantized to u8 by the DynamicQuantizeLinear rule (see
 *     qnt_dynamic_quantize_linear), per tensor or per row as QNT_OP_ACT_QUANT says (desc may be
 *     NULL: per tensor), giving sx, zx; with QNT_OP_REDUCE_RANGE, the rule's 255 becomes 127
 *     (scale = (hi - lo) / 127, zero point and values clamped to [0, 127]);
 *  w: i8 [N, K] (nn.Linear's layout) with qparams per-tensor or per-axis along axis 0 (one per
 *     output feature), symmetric or not;
 *  bias: NULL or f32 [N];
 *  y: f32 [..., N] = (float)acc * (sx * sw[n]) + bias[n], acc over (xq - zx) * (w - zw[n]);
 *     with QNT_OP_FUSE_RELU, max(y, 0).
 * The activations are quantized as they are packed for the GEMM kernel: no quantized copy of x
 * is made. */
QNT_API qnt_status qnt_linear_dynamic(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                                      const qnt_tensor *bias, const qnt_op_desc *desc,
                                      qnt_tensor *y);

/* Weight-only quantized linear layer (the LLM decode path: GPTQ/AWQ/QLoRA-style weights):
 *  x: f32 [..., K] (or, since 0.7, f16 or bf16: W4A16, widened exactly to float32);
 *  w: [N, K] of any quantized dtype other than i32 (typically i4 or u4 with per-block qparams
 *     along axis 1, block 32, 64 or 128, affine zero points for u4; or NF4), with qparams;
 *  bias: NULL or f32 [N];
 *  y: f32 [..., N], or x's dtype (rounded to nearest even from the float32 result):
 *     y[m, n] = dot(x[m, :], dequantize(w[n, :])) + bias[n], each weight
 *     dequantized by the dequantize rule to float32, the dot in the fixed order given above
 *     (QNT_WEIGHT_ONLY_F32 mode). A NaN in x[m, :] makes every y[m, n] NaN; an infinity gives
 *     +-inf or NaN as float32 arithmetic does (inf * 0 = NaN, inf - inf = NaN).
 *
 * The int8-activation mode (QNT_WEIGHT_ONLY_INT8_ACT, prepared form only) takes w of dtype i4,
 * u4, NF4, i8 or u8 with qparams per tensor, per output feature (per axis along axis 0) or per
 * block along axis 1 (block B); the first two count as one block of K per row. Its arithmetic,
 * for row m and output n:
 *  - activations, for each block j of x[m, :] (the elements k with k / B == j): a = max |x[k]|,
 *    sx[j] = a / 127 (float32 division), qx[k] = saturate(round_half_to_even(x[k] / sx[j]))
 *    into [-127, 127] (the quantize rule). A block with a NaN or an infinity gets sx[j] = NaN
 *    (so y[m, n] is NaN for every n); a block whose sx[j] is 0 gets qx = 0;
 *  - weights, as integers v[k] with a scale sw[j] per block: i4, u4, i8, u8: v = q - zw[j] and
 *    sw[j] is the block's scale; NF4: v = round_half_to_even(127 * code_value(q)) (the codebook
 *    mapped to [-127, 127]) and sw[j] = scale[j] / 127 (float32 division; NF4 is approximated);
 *  - 16 lanes: element k goes to lane (k / 4) % 16. For each block j in increasing order and
 *    each lane l that holds an element of the block: p = the sum of qx[k] * v[k] over the
 *    block's elements in lane l (exact, wrapped to int32), then
 *        s[l] = fmaf((float)p, sx[j] * sw[j], s[l])        (one float32 product, one fma)
 *    Lanes that hold no element of the block are left unchanged;
 *  - the 16 sums s[l] (starting at 0) are added pairwise as in the float dot product, then
 *    bias[n] is added as a separate float32 addition.
 * Every kernel of the mode gives the same bits. Its accuracy against the f32 mode is that of
 * 8-bit activations: see the README for the measured output SQNR.
 *
 * The block-dot mode (QNT_WEIGHT_ONLY_INT8_BLOCK, since 0.12; prepared form only) takes the same
 * weights and quantizes the activations the same way (qx, sx[j], v, sw[j] as above), with one
 * sum per output instead of 16 lanes:
 *  - s = 0; for each block j in increasing order: p = the sum of qx[k] * v[k] over the block's
 *    elements (exact, wrapped to int32), then s = fmaf((float)p, sx[j] * sw[j], s);
 *  - y[m, n] = s, then bias[n] added as a separate float32 addition.
 * Its rule costs one float conversion and one fma per block of an output where the
 * int8-activation mode's costs them per block and lane, so its kernels run batches at the
 * integer multiply's rate (the README measures both). Its bits differ from that mode's (the
 * float sums are taken in another order); every kernel of the mode gives the same bits.
 *
 * The per-token mode (QNT_WEIGHT_ONLY_INT8_TOKEN, since 0.9; prepared form only) is BitNet
 * b1.58's linear layer: w of dtype ternary (values -1, 0, +1) or binary (-1, +1), with one
 * scale a row: qparams per tensor, per output feature (axis 0), or per block along K (axis 1)
 * with the same scale in every block of a row (GGUF's TQ1_0 / TQ2_0 of a BitNet model, read by
 * qnt_model_file_tensor; other per-block qparams are QNT_ERR_UNSUPPORTED), and K at most
 * 16909320 (so that 127 * K fits int32). For row m and output n:
 *  - a = max |x[m, k]| over the row; a row with a NaN or an infinity gives y[m, n] = NaN for
 *    every n; a row with a = 0 gives qx = 0;
 *  - qx[k] = clamp(round_half_to_even((x[k] * 127) / a), -127, 127): the product and the
 *    quotient each rounded to float32 (BitNet's x * 127 / absmax);
 *  - acc = sum over k of qx[k] * v[n, k], exact in int32 (v the weight's value -1, 0 or +1);
 *  - y[m, n] = (float)acc * ((a / 127) * sw[n]), each of the two products and the quotient
 *    a / 127 rounded to float32, sw[n] the weight's scale; then bias[n] added as a separate
 *    float32 addition.
 * Its kernels add and subtract int8 activations under the weights' signs (no multiply by a
 * weight value); every kernel gives the reference's bits. */
QNT_API qnt_status qnt_linear_weight_only(qnt_context *ctx, const qnt_tensor *x,
                                          const qnt_tensor *w, const qnt_tensor *bias,
                                          qnt_tensor *y);

/* The output shape [N, M, OH, OW] ([N, OH, OW, M] with QNT_LAYOUT_NHWC) of qnt_qconv2d for
 * these x and w shapes and options (desc may be NULL), with OH = (H + top + bottom - dilation_h * (KH - 1) - 1) / stride_h + 1 (floor), OW
 * alike, written to shape_out, which holds capacity values. Errors: as qnt_qconv2d's shape
 * checks, QNT_ERR_BUFFER_TOO_SMALL (capacity < 4). */
QNT_API qnt_status qnt_conv2d_output_shape(const qnt_tensor *x, const qnt_tensor *w,
                                           const qnt_op_desc *desc, int64_t *shape_out,
                                           size_t capacity);

/* Quantized 2-D convolution, ONNX QLinearConv and ConvInteger in one call:
 *  x: i8 or u8 [N, C, H, W] (or [N, H, W, C] with QNT_LAYOUT_NHWC), qparams per-tensor (or
 *     none: zero point 0);
 *  w: i8 or u8 [M, C / groups, KH, KW], qparams per-tensor or per-axis along axis 0;
 *  bias: NULL, i32 [M] (scale sx * sw[m], zero point 0; part of acc) or, since 0.4, f32 [M]
 *     (f32 and 8-bit y: added in float32 to (float)acc * (sx * sw[m]) before the quantization,
 *     as oneDNN and PyTorch do; not with an i32 y);
 *  y: [N, M, OH, OW] (or [N, OH, OW, M] with QNT_LAYOUT_NHWC; see qnt_conv2d_output_shape), and
 *     - i32 (ConvInteger: acc);
 *     - i8 / u8 with per-tensor qparams (QLinearConv): with an i32 bias or none,
 *       saturate(round((float)acc * ((sx * sw[m]) / sy)) + zy); with an f32 bias,
 *       saturate(round(((float)acc * (sx * sw[m]) + bias[m]) / sy) + zy);
 *     - f32: (float)acc * (sx * sw[m]) (+ an f32 bias as a separate addition).
 * desc: strides, pads, dilations and groups (QNT_OP_STRIDE_H ... QNT_OP_GROUPS),
 *     QNT_OP_FUSE_RELU, QNT_OP_LAYOUT; NULL for the defaults (stride 1, no padding, dilation 1,
 *     one group, no ReLU, NCHW).
 * The reference kernel lowers each group to im2col (padding with x's zero point) and a GEMM; the
 * fast kernels gather each block of output pixels' windows as they pack them (implicit GEMM),
 * never the whole im2col matrix, with scratch from the context's workspace. */
QNT_API qnt_status qnt_qconv2d(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                               const qnt_tensor *bias, const qnt_op_desc *desc, qnt_tensor *y);

/* Quantized addition: a, b and y are tensors of one shape and of integer dtypes (i8 and u8
 * above all; also i16, u16, i4, u4, i32, ternary), each with per-tensor qparams of its own
 * (dtypes may differ):
 *    s = (float)(a - za) * sa + (float)(b - zb) * sb       float32, three roundings
 *    y = saturate(round_half_to_even(s / sy) + zy)         (the quantize rule)
 * With QNT_OP_FUSE_RELU set to 1 in desc (which may be NULL), y = max(y, zy) (the same as
 * quantizing max(s, 0)). This is DequantizeLinear, Add, (Relu,) QuantizeLinear in float32.
 * Shapes must match exactly (broadcasting is QNT_ERR_UNSUPPORTED). */
QNT_API qnt_status qnt_qadd(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                            const qnt_op_desc *desc, qnt_tensor *y);

/* Quantized ReLU: y = max(x, zero_point), element by element, exact. x has an integer dtype
 * (i8, u8 and the others as for qnt_qadd) and qparams of any granularity (each element against
 * its own zero point); y has x's shape, dtype and equal qparams (the same values;
 * QNT_ERR_INVALID_QPARAMS otherwise). */
QNT_API qnt_status qnt_qrelu(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y);

/* ReLU with an upper bound (ReLU6 with upper = 6): y = min(max(x, zero_point), qu), where
 * qu = quantize(upper) by the quantize rule with the element's own scale and zero point.
 * upper must be finite and >= 0 (QNT_ERR_INVALID_ARGUMENT). Otherwise as qnt_qrelu. */
QNT_API qnt_status qnt_qrelu_clamp(qnt_context *ctx, const qnt_tensor *x, float upper,
                                   qnt_tensor *y);

/* ------------------------------------------------------------------------------------------- */
/* Prepared operators                                                                           */
/* ------------------------------------------------------------------------------------------- */

/*
 * An operator with constant weights, prepared once (oneDNN's reordered weights, FBGEMM's
 * PackBMatrix, XNNPACK's create/setup/run, MLAS's MlasGemmPackB): the weights, bias and options
 * are validated, copied and laid out for the best kernel of the context's machine (under its
 * QNT_ISA cap), with what the kernels precompute from them (column sums of the zero-point-
 * shifted weights, multipliers). The prepared operator does not reference the tensors it was
 * made from, so they may be changed or destroyed at once.
 * qnt_prepared_run then gives exactly the result of the matching one-shot call (which is a
 * wrapper over it). A prepared operator is immutable: it may be run from many threads at once,
 * each with its own output. Caller destroys it with qnt_prepared_destroy().
 * Errors of the create functions: those of the matching one-shot call's checks on the weights,
 * bias and options, and QNT_ERR_OUT_OF_MEMORY; *out is untouched on failure.
 */
typedef struct qnt_prepared qnt_prepared;

typedef int32_t qnt_prepared_kind;
enum {
  QNT_PREPARED_MATMUL = 1,
  QNT_PREPARED_LINEAR_DYNAMIC = 2,
  QNT_PREPARED_LINEAR_STATIC = 3,
  QNT_PREPARED_LINEAR_WEIGHT_ONLY = 4,
  QNT_PREPARED_CONV2D = 5,
  QNT_PREPARED_BINARY_MATMUL = 6 /* since 0.10 */
};

/* qnt_qmatmul with a constant b (i8 or u8, [K, N] or [..., K, N], qparams per-tensor or per
 * column) and bias (NULL, i32 or f32 [N]); run with a as x and y as in qnt_qmatmul. desc must be
 * NULL or have no option set. */
QNT_API qnt_status qnt_prepared_create_matmul(qnt_context *ctx, const qnt_tensor *b,
                                              const qnt_tensor *bias, const qnt_op_desc *desc,
                                              qnt_prepared **out);

/* qnt_linear_dynamic with constant w and bias; desc may set QNT_OP_ACT_QUANT,
 * QNT_OP_REDUCE_RANGE and QNT_OP_FUSE_RELU. Run with x (f32 [..., K]) and y (f32 [..., N]). */
QNT_API qnt_status qnt_prepared_create_linear_dynamic(qnt_context *ctx, const qnt_tensor *w,
                                                      const qnt_tensor *bias,
                                                      const qnt_op_desc *desc,
                                                      qnt_prepared **out);

/* Statically quantized linear layer (PyTorch's quantized nn.Linear, ONNX QLinearMatMul with
 * w transposed):
 *  w: i8 or u8 [N, K] with qparams per-tensor or per-axis along axis 0;
 *  x_qparams: the input's per-tensor i8 or u8 parameters (sx, zx): the run's x must have that
 *     dtype and carry equal qparams, or none;
 *  y_qparams: NULL for an f32 output, or the output's per-tensor i8 or u8 parameters (sy, zy):
 *     the run's y must have that dtype and carry equal qparams;
 *  bias: NULL, or [N] i32 (scale sx * sw[n], added to acc) or f32;
 *  acc[m, n] = sum over k of (x[m, k] - zx) * (w[n, k] - zw[n]) (exact, wrapped to int32), then
 *   - i8 / u8 output, i32 or no bias: the requantization rule (multiplier (sx * sw[n]) / sy);
 *   - i8 / u8 output, f32 bias: v = (float)acc * (sx * sw[n]) + bias[n] in float32, then
 *     y = saturate(round_half_to_even(v / sy) + zy) (the quantize rule);
 *   - f32 output: (float)acc * (sx * sw[n]) (+ f32 bias), as qnt_qmatmul's f32 mode;
 *   then, with QNT_OP_FUSE_RELU, max(y, zy) (8-bit) or max(y, 0) (f32).
 * desc must be NULL or set only QNT_OP_FUSE_RELU. Run with x ([..., K]) and y ([..., N]). */
QNT_API qnt_status qnt_prepared_create_linear_static(qnt_context *ctx, const qnt_tensor *w,
                                                     const qnt_tensor *bias,
                                                     const qnt_qparams *x_qparams,
                                                     const qnt_qparams *y_qparams,
                                                     const qnt_op_desc *desc,
                                                     qnt_prepared **out);

/* Prepared operators and devices (since 0.7): an operator prepared with a context bound to a
 * CUDA device (qnt_context_set_cuda_stream) also copies its weights to that device, in the
 * layout of its CUDA kernels, before the create call returns; it then runs on the CPU and on
 * that device. One prepared otherwise runs on the CPU only and refuses device tensors
 * (QNT_ERR_INVALID_ARGUMENT). The device copy counts in qnt_prepared_packed_size. */

/* qnt_linear_weight_only with constant w and bias; desc may set QNT_OP_WEIGHT_ONLY_MODE (since
 * 0.5; QNT_ERR_UNSUPPORTED for a weight dtype or granularity the mode does not take). The
 * weights are repacked for the kernels: 4-bit codes interleaved in groups of 128 elements, panels
 * of output features contiguous, with their scales and zero points beside them. Run with x
 * ([..., K]) and y ([..., N]) of the dtypes qnt_linear_weight_only takes. */
QNT_API qnt_status qnt_prepared_create_linear_weight_only(qnt_context *ctx, const qnt_tensor *w,
                                                          const qnt_tensor *bias,
                                                          const qnt_op_desc *desc,
                                                          qnt_prepared **out);

/* qnt_qconv2d with constant w and bias and the geometry, layout and ReLU of desc; run with x and
 * y as in qnt_qconv2d. */
QNT_API qnt_status qnt_prepared_create_conv2d(qnt_context *ctx, const qnt_tensor *w,
                                              const qnt_tensor *bias, const qnt_op_desc *desc,
                                              qnt_prepared **out);

/* qnt_binary_matmul with a constant b (binary [N, K], its rows laid out once as 64-bit words);
 * run with a as x and y as in qnt_binary_matmul (since 0.10). desc must be NULL or have no option
 * set. */
QNT_API qnt_status qnt_prepared_create_binary_matmul(qnt_context *ctx, const qnt_tensor *b,
                                                     const qnt_op_desc *desc, qnt_prepared **out);

/* Frees op; NULL is allowed. */
QNT_API void qnt_prepared_destroy(qnt_prepared *op);

/* Runs the prepared operator on x, writing y (see each create function for their shapes and
 * dtypes). ctx may be NULL; it sets the threads (results never depend on them). Errors: those of
 * the matching one-shot call for x and y; y is untouched on failure. */
QNT_API qnt_status qnt_prepared_run(qnt_context *ctx, const qnt_prepared *op, const qnt_tensor *x,
                                    qnt_tensor *y);

/* Which operator op is. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_prepared_kind_of(const qnt_prepared *op, qnt_prepared_kind *out);

/* The bytes op holds for its packed weights, bias and precomputed values. Errors:
 * QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_prepared_packed_size(const qnt_prepared *op, size_t *out);

/* The kernel set op was prepared for (see qnt_context_isa). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_prepared_isa(const qnt_prepared *op, qnt_isa *out);

/* ------------------------------------------------------------------------------------------- */
/* Streaming calibration and error reports                                                      */
/* ------------------------------------------------------------------------------------------- */

/* A calibrator observes f32 batches one at a time and computes qparams from what it saw. Its
 * statistics can be merged with another's and serialized, so shards observed on different
 * threads or machines give the result of one pass. Not safe to use from several threads at once;
 * use one calibrator per thread and merge. */
typedef struct qnt_calibrator qnt_calibrator;

typedef int32_t qnt_calib_method;
enum {
  /* PyTorch MinMaxObserver / PerChannelMinMaxObserver (see qnt_calibrate_minmax). */
  QNT_CALIB_MINMAX = 1,
  /* PyTorch MovingAverage(PerChannel)MinMaxObserver: the first batch sets min and max, each
   * later one moves them by c * (batch value - current), float32, c = QNT_CALIB_OPT_AVERAGING.
   * Depends on the order of the batches, so it cannot be merged (QNT_ERR_UNSUPPORTED). */
  QNT_CALIB_MOVING_AVERAGE = 2,
  /* Clips at a percentile (QNT_CALIB_OPT_PERCENTILE, default 99.99) of |x| for the symmetric
   * scheme, and at the (100 - p) and p percentiles for the affine one, read from the histogram
   * with linear interpolation inside a bin. */
  QNT_CALIB_PERCENTILE = 3,
  /* TensorRT's entropy calibration: over the histogram of |x| (QNT_CALIB_OPT_BINS bins, 2048 by
   * default), each candidate threshold from `levels` bins up (levels = 2^(bits-1): 128 for 8-bit,
   * 8 for 4-bit) is scored by the KL divergence between the clipped distribution and its
   * quantization to `levels` levels (a bin empty in one distribution but not the other counts
   * as epsilon 1e-4); the threshold is the upper edge of the best candidate. The affine scheme
   * clips the observed range to [-threshold, threshold]. Cost: O(bins) per channel (prefix sums;
   * the candidates of one group width share their full groups' terms). */
  QNT_CALIB_ENTROPY = 4,
  /* The range that minimises the expected squared quantization error over the histogram, the
   * values of each bin taken as uniform within it: values clipped off the grid cost their exact
   * squared distance to the clip end, values inside it s^2 / 12 each (s the candidate's scale),
   * and the bins that straddle a clip end or touch 0 are integrated exactly for the actual
   * quantizer. Candidates: every bin edge for the symmetric scheme; for the affine one, a greedy
   * search that moves the lower or the upper end one bin at a time, keeping the best range
   * seen. Cost: O(bins) per channel (each candidate is O(1) from prefix sums). */
  QNT_CALIB_MSE = 5,
  /* Computes min-max, percentile, entropy and MSE, and keeps the one with the smallest expected
   * squared error (the best SQNR) on the histogram, integrated exactly bin by bin;
   * qnt_calibrator_chosen_method says which. Cost: O(bins) per channel.
   * Every method: per-axis channels are computed in parallel on the context's threads, and
   * observe runs on them too (a channel a task, or pieces of a single channel). */
  QNT_CALIB_ADAPTIVE = 6
};

/* Options of a calibrator, set with qnt_calibrator_set_option before the first observe. */
typedef int32_t qnt_calib_option;
enum {
  QNT_CALIB_OPT_AVERAGING = 1,  /* moving average's constant, in (0, 1]; default 0.01 */
  QNT_CALIB_OPT_PERCENTILE = 2, /* in (50, 100]; default 99.99 */
  QNT_CALIB_OPT_BINS = 3,       /* histogram bins on each side of 0, a power of two in
                                   [128, 65536]; default 2048 */
  /* PyTorch's quant_min / quant_max (its reduce_range is [-64, 63] for i8, [0, 127] for u8): the
   * integer range the computed qparams target, as for qnt_calibrate_minmax_range. Integral
   * values in the dtype's range; after each call the pair must contain 0 and hold more than one
   * value (the other end defaults to the dtype's). */
  QNT_CALIB_OPT_QUANT_MIN = 4,
  QNT_CALIB_OPT_QUANT_MAX = 5
};

/*
 * Histograms (percentile, entropy, MSE, adaptive) are exact counts over [-R, R) in 2 * bins
 * bins of width R / bins, where R is a power of two: the smallest one above the largest finite
 * |x| seen (at least 2^-64). A value goes to bin floor(x / width) + bins, computed exactly. When a
 * later batch (or a merged calibrator) needs a wider range, R doubles as often as needed and
 * each doubling adds adjacent pairs of bins, which gives exactly the counts a single pass with
 * the wider range would have given. So results never depend on how the data was split into
 * batches or shards, nor on the order of merges. NaN and +-inf are skipped and counted
 * (qnt_calibrator_counts).
 */

/* Creates a calibrator for `method`, producing qparams of `dtype` (an integer dtype: i8, u8, i16,
 * u16, i4, u4, i32), `scheme`, and granularity per-tensor or per-axis along `axis` (one histogram
 * per channel; the channel count is fixed by the first batch). Caller destroys it with
 * qnt_calibrator_destroy().
 * Log2 parameters (since 0.11): dtype QNT_DTYPE_LOG4 or QNT_DTYPE_LOG8 with QNT_SCHEME_LOG2 (the
 * one scheme they take, and which no other dtype takes). The scale is the clip value c, the
 * top level: min-max and the moving average c = max(|min|, |max|), percentile the percentile
 * of |x|; MSE searches c over the 64 candidates T * 2^(-j/64), j = 0..63 (T the largest |x|
 * seen), each scored by the squared error of the bins' midpoints (a bin's count times its
 * midpoint's error under the log rule), and keeps the best (the larger c on a tie); adaptive
 * keeps the best of min-max, percentile and MSE by that score. c is raised to FLT_EPSILON at
 * least. Entropy calibration has no log2 form (QNT_ERR_UNSUPPORTED), nor do the QUANT_MIN /
 * QUANT_MAX options (QNT_ERR_INVALID_ARGUMENT).
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (bad method,
 * dtype, scheme, granularity or axis; a log dtype without QNT_SCHEME_LOG2, or that scheme with
 * another dtype), QNT_ERR_UNSUPPORTED (NF4, binary, ternary: see
 * qnt_calibrate_codebook; per-block; entropy for a log dtype), QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_calibrator_create(qnt_calib_method method, qnt_dtype dtype,
                                         qnt_scheme scheme, qnt_granularity granularity,
                                         int64_t axis, qnt_calibrator **out);

/* Frees c; NULL is allowed. */
QNT_API void qnt_calibrator_destroy(qnt_calibrator *c);

/* Sets an option (see qnt_calib_option). Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT
 * (unknown option, value out of range, or the calibrator has already observed data). */
QNT_API qnt_status qnt_calibrator_set_option(qnt_calibrator *c, qnt_calib_option option,
                                             double value);

/* Folds one f32 batch into the statistics (ctx may be NULL; its kernel cap applies). For
 * per-axis, the batch must have the axis, of the same size in every batch
 * (QNT_ERR_SHAPE_MISMATCH). On failure the statistics are unchanged. Errors:
 * QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH, QNT_ERR_OVERFLOW (the
 * values counted, finite, NaN and infinite over all channels, would pass 2^64 - 1; see
 * qnt_calibrator_counts), QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_calibrator_observe(qnt_context *ctx, qnt_calibrator *c,
                                          const qnt_tensor *x);

/* Computes qparams from everything observed; the caller destroys them with
 * qnt_qparams_destroy(). A calibrator (or channel) that has seen no finite value gives scale 1
 * and zero point 0, as PyTorch's observers do. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (per-axis with nothing observed: the channel count is unknown; a
 * range that overflows float32), QNT_ERR_OUT_OF_MEMORY. ctx may be NULL. */
QNT_API qnt_status qnt_calibrator_compute(qnt_context *ctx, const qnt_calibrator *c,
                                          qnt_qparams **out);

/* For QNT_CALIB_ADAPTIVE after compute: the method whose result was kept (for per-axis, that of
 * channel 0); for the other methods, the method itself. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_calibrator_chosen_method(const qnt_calibrator *c, qnt_calib_method *out);

/* Forgets everything observed (options and settings stay). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_calibrator_reset(qnt_calibrator *c);

/* Folds from's statistics into into; from is unchanged. Both must have the same method, dtype,
 * scheme, granularity, axis and options, and the same channel count once both have seen data.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (different settings, or into == from),
 * QNT_ERR_SHAPE_MISMATCH, QNT_ERR_UNSUPPORTED (moving average), QNT_ERR_OVERFLOW (the merged
 * counts, finite, NaN and infinite over all channels, would add up past 2^64 - 1, so the result
 * could not be serialized and read back), QNT_ERR_OUT_OF_MEMORY; into is unchanged on failure. */
QNT_API qnt_status qnt_calibrator_merge(qnt_calibrator *into, const qnt_calibrator *from);

/* The number of finite values observed, and of NaN and +-inf values skipped, over all channels.
 * They never wrap: a calibrator's counts (finite, NaN and infinite, over all channels) add up to
 * at most 2^64 - 1, which observe and merge keep (QNT_ERR_OVERFLOW) and deserialize checks
 * (QNT_ERR_CORRUPT_DATA). Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_calibrator_counts(const qnt_calibrator *c, uint64_t *finite_out,
                                         uint64_t *nan_out, uint64_t *inf_out);

/* Writes the calibrator's settings and statistics to buf (a versioned little-endian format with
 * a checksum) and sets *size_out to the bytes needed. With buf NULL (and capacity 0) only the size
 * is returned. Errors: QNT_ERR_NULL_POINTER (size_out), QNT_ERR_BUFFER_TOO_SMALL (capacity below
 * the size; *size_out is still set). */
QNT_API qnt_status qnt_calibrator_serialize(const qnt_calibrator *c, void *buf, size_t capacity,
                                            size_t *size_out);

/* Recreates a calibrator from qnt_calibrator_serialize's bytes. A truncated, damaged or foreign
 * buffer is QNT_ERR_CORRUPT_DATA, never a crash; so is a crafted one with a valid checksum whose
 * state breaks an invariant that compute relies on (counts that do not add up or whose sum over
 * all channels passes 2^64 - 1, a histogram that
 * does not cover the stored extremes or has counts outside them, averages missing or not
 * finite, a per-tensor calibrator with an axis), so compute on a deserialized calibrator always
 * ends with a documented status, and what deserializes serializes back to the same bytes.
 * Caller destroys the result with qnt_calibrator_destroy(). Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_CORRUPT_DATA, QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_calibrator_deserialize(const void *buf, size_t size, qnt_calibrator **out);

/* How well qparams represent a tensor: the result of quantizing x and dequantizing it back.
 * A struct the caller allocates and passes with its size (sizeof as the caller compiled it):
 * the library writes only the whole fields that fit in that size and leaves the rest alone, so
 * a caller built against an older, shorter struct, or a newer, longer one, works with any
 * release. Later releases only add fields at the end. */
typedef struct qnt_error_report {
  double mse;                /* mean of (x - dequantize(quantize(x)))^2 */
  double sqnr_db;            /* 10 log10(sum x^2 / sum error^2); +inf when the error is 0 */
  double max_abs_error;      /* largest |x - dequantize(quantize(x))| */
  double saturated_fraction; /* share of values whose quantization clipped (see below) */
  uint64_t count;            /* finite values measured (NaN and +-inf are left out) */
} qnt_error_report;

/* Fills the first report_size bytes' worth of whole fields of *report for x (f32) quantized
 * with qp (any quantized dtype and granularity that fits x's shape), in double precision over
 * x's finite values, in index order; ctx may be NULL. A value counts as saturated when its
 * quantization clipped: round_half_to_even(x / scale) + zero_point lies outside the dtype's
 * range (NF4: |x * (1 / scale)| > 1; binary: never; LOG4 and LOG8: |x| / scale rounds, in the
 * log domain, above the top level, i.e. |x| / scale > sqrt(2)). Pass sizeof *report as report_size.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (report_size < sizeof(double): not
 * even the first field fits), QNT_ERR_DTYPE_MISMATCH, QNT_ERR_SHAPE_MISMATCH,
 * QNT_ERR_OUT_OF_MEMORY; *report is untouched on failure. */
QNT_API qnt_status qnt_error_report_compute(qnt_context *ctx, const qnt_tensor *x,
                                            const qnt_qparams *qp, qnt_error_report *report,
                                            size_t report_size);

/* ------------------------------------------------------------------------------------------- */
/* Mixed precision by measured error (since 0.11)                                               */
/* ------------------------------------------------------------------------------------------- */

/* A recommender chooses a format per tensor (weights, for example) among candidate formats, by
 * the error it measures, under a budget: llama.cpp's per-tensor type choice and Intel Neural
 * Compressor's accuracy-driven tuning, as one deterministic call that explains itself. Use:
 * create; add the candidate formats; add the tensors (each is measured in every format as it is
 * added); run with a budget (as often as wanted); read the choices and the report. Not safe to use
 * from several threads at once.
 *
 * Formats, by name (case-insensitive):
 *  - a qnt dtype per output channel (axis 0): "i8", "i4" (symmetric min-max, as
 *    qnt_calibrate_minmax), "u8", "u4" (affine min-max), "nf4", "ternary", "binary", "log4",
 *    "log8" (qnt_calibrate_codebook's scales); with ".bN", per block of N along the last axis
 *    ("i4.b32", "nf4.b64", "log4.b128"). Bytes: the packed codes, 4 per scale, and 4 more per
 *    zero point for the affine ones;
 *  - a GGUF type, with the bits of ggml's reference quantizers: "f32", "f16", "bf16", "q8_0",
 *    "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "iq4_nl", "tq1_0", "tq2_0". It
 *    applies to a tensor whose last dimension is a multiple of its block (32 or 256), and its
 *    bytes are GGUF's.
 * The measure: the tensor quantized to the format and dequantized back; SQNR = 10 log10(sum of
 * a * w^2 / sum of a * (w - back)^2) in double, a the importance of the element's input channel
 * (its index along the last axis), or 1 without importances; +inf when nothing is lost.
 * Importances are the importance-matrix idea: the mean of x^2 of each input channel over
 * calibration inputs (one value per input channel), so that channels that see large activations
 * count more. */
typedef struct qnt_recommender qnt_recommender;

typedef int32_t qnt_budget;
enum {
  /* value: the most bytes all the tensors may take together. The choice maximises the lowest
   * SQNR of any tensor: each tensor in its cheapest format at or above a threshold, the highest
   * threshold (among the measured SQNRs) whose total fits; then the bytes left go, one step at a
   * time, to the tensor with the lowest SQNR (then the lowest index) whose next larger useful
   * format (one with a higher SQNR than every cheaper one) still fits. */
  QNT_BUDGET_BYTES = 1,
  /* value: the least SQNR in dB each tensor must keep: each tensor in its cheapest format that
   * keeps it, or, where none does, its best one (the report says so). */
  QNT_BUDGET_MIN_SQNR = 2
};

/* Errors: QNT_ERR_NULL_POINTER, QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_recommender_create(qnt_recommender **out);

/* Frees r; NULL is allowed. */
QNT_API void qnt_recommender_destroy(qnt_recommender *r);

/* Adds a candidate format (see above), before the first tensor. Errors: QNT_ERR_NULL_POINTER,
 * QNT_ERR_INVALID_ARGUMENT (an unknown format, one already added, or a tensor already added). */
QNT_API qnt_status qnt_recommender_add_format(qnt_recommender *r, const char *format);

/* Measures w (f32, rank >= 1, finite values; the last axis is the input channel) in every
 * candidate format under `name` (copied; unique). importance is NULL (count 0) or holds one
 * finite value >= 0 per input channel, not all 0. Runs on ctx's threads (NULL: the defaults); the
 * results do not depend on them. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_DTYPE_MISMATCH,
 * QNT_ERR_SHAPE_MISMATCH (no element; an importance count other than the last dimension),
 * QNT_ERR_INVALID_ARGUMENT (no format added yet; a name already added; a NaN or infinity in w;
 * a bad importance), QNT_ERR_UNSUPPORTED (no candidate applies to w), QNT_ERR_OUT_OF_MEMORY. */
QNT_API qnt_status qnt_recommender_add_tensor(qnt_context *ctx, qnt_recommender *r,
                                              const char *name, const qnt_tensor *w,
                                              const float *importance, size_t importance_count);

/* Chooses a format per tensor under the budget (see qnt_budget) and writes the report. May be
 * run again with another budget. Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (not a
 * qnt_budget; a value that is not finite, or negative bytes; no tensor; a byte budget below
 * every tensor's smallest format, which the message gives). */
QNT_API qnt_status qnt_recommender_run(qnt_recommender *r, qnt_budget budget, double value);

/* The number of tensors added. Errors: QNT_ERR_NULL_POINTER. */
QNT_API qnt_status qnt_recommender_tensor_count(const qnt_recommender *r, size_t *out);

/* Tensor `index` (in the order added) after the last run: its name, the chosen format's name
 * (as qnt_recommender_add_format took it, lower-cased), its bytes and SQNR in dB. Each output may
 * be NULL; the strings live until r is destroyed or run again. Errors: QNT_ERR_NULL_POINTER (r),
 * QNT_ERR_INVALID_ARGUMENT (not run yet, or index out of range). */
QNT_API qnt_status qnt_recommender_choice(const qnt_recommender *r, size_t index,
                                          const char **name_out, const char **format_out,
                                          uint64_t *bytes_out, double *sqnr_db_out);

/* The last run's explanation, a text table: one line per tensor (name, chosen format, its bytes
 * and SQNR in dB, and the runner-up: the next larger useful format, or where the chosen one is
 * the largest, the next smaller, with its bytes and SQNR), then a line with the total bytes, the
 * budget, and the worst SQNR and its tensor. Valid until r is destroyed or run again.
 * Errors: QNT_ERR_NULL_POINTER, QNT_ERR_INVALID_ARGUMENT (not run yet). */
QNT_API qnt_status qnt_recommender_report(const qnt_recommender *r, const char **out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* QNT_QNT_H */
