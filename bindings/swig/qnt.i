/* The one SWIG interface of qnt, shared by the Java and C# bindings (Debian's swig 4.1).
 *
 * Every function of include/qnt/qnt.h is reached through the classes below: each handle type
 * is an owning class (its constructor or a factory makes it, its destructor frees it; SWIG's
 * proxies make closing twice safe and let the garbage collector free what was not closed), and
 * every status other than QNT_OK becomes a typed exception through the one %exception block
 * here. Handles that depend on others hold their own references inside the library, so the
 * proxies may be closed or collected in any order.
 *
 * Arrays cross as primitive arrays: each is a (pointer, length) pair in the C signatures below
 * (const T *data, size_t count) for inputs and (T *out, size_t capacity) for outputs, with the
 * shape as (const int64_t *shape, size_t rank). The language files map each pair to one array
 * argument: qnt_java.swg with typemaps, qnt_csharp.swg with typemaps and thin overloads.
 *
 * The numbered constants stay plain ints (the header's typedefs of int32_t); the named holders
 * (DType.I8, Isa.AVX2, ...) are generated from the header by gen_constants.py. */

%module Library

%include <stdint.i>

#if defined(SWIGJAVA)
%include "qnt_java.swg"
#elif defined(SWIGCSHARP)
%include "qnt_csharp.swg"
#else
#error "qnt's SWIG interface supports Java and C#"
#endif

%{
#include <qnt/qnt.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The status and message of the last failure in this thread's current wrapper call; the
 * %exception block turns them into the language's exception. */
static _Thread_local qnt_status qnt_swig_status = QNT_OK;
static _Thread_local char qnt_swig_message[1024];

static void qnt_swig_fail(qnt_status status, const char *message) {
  qnt_swig_status = status;
  snprintf(qnt_swig_message, sizeof qnt_swig_message, "%s", message);
}

/* Records a failed library call; returns whether the call succeeded. */
static int qnt_swig_ok(qnt_status status) {
  if (status != QNT_OK) qnt_swig_fail(status, qnt_last_error_message());
  return status == QNT_OK;
}

/* Element size for the typed copies: the storage must hold exactly count elements of `size`
 * bytes, and the dtype must be one whose elements have that size. */
static int qnt_swig_typed(const qnt_tensor *t, size_t count, size_t size, const char *what) {
  qnt_dtype dtype = 0;
  size_t bytes = 0, elements = 0;
  int32_t bits;
  char message[256];
  if (!qnt_swig_ok(qnt_tensor_dtype(t, &dtype)) || !qnt_swig_ok(qnt_tensor_byte_size(t, &bytes)) ||
      !qnt_swig_ok(qnt_tensor_element_count(t, &elements)))
    return 0;
  bits = qnt_dtype_bits(dtype);
  if (size != 1 && (size_t)bits != 8 * size) {
    snprintf(message, sizeof message, "%s: the tensor is %s, not a dtype of %d-bit elements", what,
             qnt_dtype_name(dtype), (int)(8 * size));
    qnt_swig_fail(QNT_ERR_DTYPE_MISMATCH, message);
    return 0;
  }
  if ((size == 1 ? bytes : elements) != count) {
    snprintf(message, sizeof message, "%s: an array of %zu for a tensor of %zu %s", what, count,
             size == 1 ? bytes : elements, size == 1 ? "bytes" : "elements");
    qnt_swig_fail(QNT_ERR_SHAPE_MISMATCH, message);
    return 0;
  }
  return 1;
}

/* A tensor holding a copy of count elements of `size` bytes; the array must hold exactly the
 * tensor's elements (bytes for size 1, which also takes the packed dtypes). */
static qnt_tensor *qnt_swig_tensor_from(qnt_dtype dtype, const void *data, size_t count,
                                        size_t size, const int64_t *shape, size_t rank,
                                        const qnt_qparams *qp) {
  qnt_tensor *t = NULL;
  if (!qnt_swig_ok(qnt_tensor_create_from_data(dtype, shape, rank, qp, data, count * size, &t)))
    return NULL;
  if (!qnt_swig_typed(t, count, size, "Tensor")) {
    qnt_tensor_destroy(t);
    return NULL;
  }
  return t;
}

static void qnt_swig_copy_to(const qnt_tensor *t, void *out, size_t capacity, size_t size,
                             const char *what) {
  if (qnt_swig_typed(t, capacity, size, what))
    qnt_swig_ok(qnt_tensor_copy_to(t, out, capacity * size));
}

static void qnt_swig_copy_from(qnt_tensor *t, const void *data, size_t count, size_t size,
                               const char *what) {
  if (qnt_swig_typed(t, count, size, what))
    qnt_swig_ok(qnt_tensor_copy_from(t, data, count * size));
}

/* Zero points are optional (null: the symmetric ones); given, one per scale. */
static int qnt_swig_zero_points_ok(const int32_t *zp, size_t zp_count, size_t count) {
  if (zp != NULL && zp_count != count) {
    char message[128];
    snprintf(message, sizeof message, "QParams: %zu zero points for %zu scales", zp_count, count);
    qnt_swig_fail(QNT_ERR_SHAPE_MISMATCH, message);
    return 0;
  }
  return 1;
}
%}

/* The one exception block: after every wrapped call, a recorded failure is thrown as the
 * exception class of its status (QNT_SWIG_THROW, defined by the language file). The wrapper then
 * goes on to release its arguments; the language raises the exception when the call returns. */
%define QNT_SWIG_EXCEPT_BODY
{
  qnt_swig_status = QNT_OK;
  $action
  if (qnt_swig_status != QNT_OK) QNT_SWIG_THROW(qnt_swig_status, qnt_swig_message);
}
%enddef
#if defined(SWIGCSHARP)
%feature("except", canthrow=1) QNT_SWIG_EXCEPT_BODY
#else
%feature("except") QNT_SWIG_EXCEPT_BODY
#endif

/* ---- the library ------------------------------------------------------------------------ */

%inline %{
/** The release of the library loaded at run time, as MAJOR * 10000 + MINOR * 100 + PATCH. */
uint32_t version(void) { return qnt_version(); }
/** The ABI version of the library loaded at run time. */
uint32_t abiVersion(void) { return qnt_abi_version(); }
/** Throws unless the loaded library implements the ABI this binding was built for. */
void abiCheck(void) { qnt_swig_ok(qnt_abi_check(QNT_ABI_VERSION)); }
/** "MAJOR.MINOR.PATCH" of the library loaded at run time. */
const char *versionString(void) { return qnt_version_string(); }
/** How the library was built, one key=value a line, with the kernels chosen on this machine. */
const char *buildInfo(void) { return qnt_build_info(); }
/** A name for a status code ("QNT_ERR_SHAPE_MISMATCH: ..."); "unknown qnt_status" otherwise. */
const char *statusString(int32_t status) { return qnt_status_string(status); }
/** The message of this thread's last failed library call (exceptions carry it already). */
const char *lastErrorMessage(void) { return qnt_last_error_message(); }
/** Bits per element of a dtype (0 for a value that is not one). */
int32_t dtypeBits(int32_t dtype) { return qnt_dtype_bits(dtype); }
/** The lower-case name of a dtype ("i8", "nf4"; "invalid" for other values). */
const char *dtypeName(int32_t dtype) { return qnt_dtype_name(dtype); }
/** The smallest q of an integer dtype (zero points must lie in [min, max]). */
int32_t dtypeMin(int32_t dtype) {
  int32_t lo = 0, hi = 0;
  qnt_swig_ok(qnt_dtype_range(dtype, &lo, &hi));
  return lo;
}
/** The largest q of an integer dtype. */
int32_t dtypeMax(int32_t dtype) {
  int32_t lo = 0, hi = 0;
  qnt_swig_ok(qnt_dtype_range(dtype, &lo, &hi));
  return hi;
}
/** Copies the 16 NF4 codebook values (ascending from -1 to 1) to out, which holds 16. */
void nf4Codebook(float *out, size_t capacity) { qnt_swig_ok(qnt_nf4_codebook(out, capacity)); }
/** The name of one CpuFeature bit ("avx512vnni"; "invalid" otherwise). */
const char *cpuFeatureName(int32_t feature) {
  return qnt_cpu_feature_name((qnt_cpu_feature)feature);
}
/** The name of an Isa value ("avx2"; "invalid" otherwise). */
const char *isaName(int32_t isa) { return qnt_isa_name(isa); }
/** The library handles alive in this process (every language's): for leak checks. */
uint64_t liveHandles(void) {
  uint64_t n = 0;
  qnt_swig_ok(qnt_live_handles(&n));
  return n;
}
%}

/* ---- handle classes --------------------------------------------------------------------- */

%rename(Context) qnt_context;
%rename(QParams) qnt_qparams;
%rename(Tensor) qnt_tensor;
%rename(OpDesc) qnt_op_desc;
%rename(Prepared) qnt_prepared;
%rename(Calibrator) qnt_calibrator;
%rename(Recommender) qnt_recommender;
%rename(ErrorReport) qnt_error_report;

/** What SWIG needs to know of the handle types: they are classes; their layout stays opaque. */
%nodefaultctor;
/** The number of threads ops use, a cap on the kernel set, and the machine's features; every
 * operator runs with one. May be used by several threads at once; its setters must not race
 * with its use. */
struct qnt_context {};
/** Immutable scales and zero points for one dtype and granularity (per tensor, per axis, per
 * block); safe to share between threads. */
struct qnt_qparams {};
/** A dense, row-major tensor: f32 data, or quantized data with its QParams. Owned storage, or
 * (wrap) memory borrowed from the caller. Several threads may read one at once; an op that
 * writes it needs it to itself. */
struct qnt_tensor {};
/** Operator options (OpOption keys with long values); an op refuses a key it does not take. */
struct qnt_op_desc {};
/** An operator with constant weights, validated, copied and packed once; immutable, so it may
 * run from many threads at once, each with its own output. */
struct qnt_prepared {};
/** A streaming calibrator: observes f32 batches and computes QParams; statistics merge and
 * serialize. One thread at a time: use one per thread and merge them. */
struct qnt_calibrator {};
/** Mixed precision by measured error: candidate formats ("i8", "i4.b128", "nf4.b64", "q4_k",
 * "ternary", "log4.b32", ...), tensors measured in each as they are added, and a format per
 * tensor under a budget (Budget.BYTES or Budget.MIN_SQNR), explained by getReport(). */
struct qnt_recommender {};
%clearnodefaultctor;

/** The result of Context.errorReport: quantization error of parameters on a tensor. */
%immutable;
typedef struct qnt_error_report {
  double mse;
  double sqnr_db;
  double max_abs_error;
  double saturated_fraction;
  uint64_t count;
} qnt_error_report;
%mutable;

/** Methods whose C helper (struct_method) would take the name of a library function. C# names
 * are PascalCase (qnt_csharp.swg renames every other method so). */
#if defined(SWIGCSHARP)
%rename(Synchronize) qnt_context::synchronize_;
%rename(Set) qnt_op_desc::set_;
%rename(Get) qnt_op_desc::get_;
%rename(Run) qnt_prepared::run_;
%rename(Observe) qnt_calibrator::observe_;
%rename(Compute) qnt_calibrator::compute_;
%rename(Reset) qnt_calibrator::reset_;
%rename(Merge) qnt_calibrator::merge_;
%rename(Deserialize) qnt_calibrator::deserialize_;
%rename(Run) qnt_recommender::run_;
#else
%rename(synchronize) qnt_context::synchronize_;
%rename(set) qnt_op_desc::set_;
%rename(get) qnt_op_desc::get_;
%rename(run) qnt_prepared::run_;
%rename(observe) qnt_calibrator::observe_;
%rename(compute) qnt_calibrator::compute_;
%rename(reset) qnt_calibrator::reset_;
%rename(merge) qnt_calibrator::merge_;
%rename(deserialize) qnt_calibrator::deserialize_;
%rename(run) qnt_recommender::run_;
#endif

%newobject qnt_context::calibrateMinmax;
%newobject qnt_context::calibrateMinmaxRange;
%newobject qnt_context::calibrateCodebook;
%newobject qnt_context::pow2Scales;
%newobject qnt_context::dynamicQuantizeLinear;
%newobject qnt_context::prepareMatmul;
%newobject qnt_context::prepareLinearDynamic;
%newobject qnt_context::prepareLinearStatic;
%newobject qnt_context::prepareLinearWeightOnly;
%newobject qnt_context::prepareConv2d;
%newobject qnt_context::errorReport;
%newobject qnt_qparams::perTensor;
%newobject qnt_qparams::perAxis;
%newobject qnt_qparams::perBlock;
%newobject qnt_tensor::fromFloats;
%newobject qnt_tensor::fromBytes;
%newobject qnt_tensor::fromShorts;
%newobject qnt_tensor::fromInts;
%newobject qnt_tensor::wrapDirect;
%newobject qnt_tensor::onDevice;
%newobject qnt_tensor::wrapDeviceAddress;
%newobject qnt_tensor::getQParams;
%newobject qnt_tensor::fromDlpack;
%newobject qnt_calibrator::compute_;
%newobject qnt_calibrator::deserialize_;
%newobject ternaryImport;
%newobject tuningExport;

%extend qnt_context {
  /** A context: threads, a kernel cap, and the machine's features. */
  qnt_context() {
    qnt_context *c = NULL;
    qnt_swig_ok(qnt_context_create(&c));
    return c;
  }
  ~qnt_context() { qnt_context_destroy($self); }
  /** The threads ops may use: 1..1024, or 0 for the default. */
  void setNumThreads(int32_t n) { qnt_swig_ok(qnt_context_set_num_threads($self, n)); }
  int32_t getNumThreads() {
    int32_t n = 0;
    qnt_swig_ok(qnt_context_num_threads($self, &n));
    return n;
  }
  /** The tuning mode (a Tuning value): kernel parameters chosen per shape by measurement, kept in
   * the process's table (Library.tuningExport / tuningImport); results never change. */
  void setTuning(int32_t mode) { qnt_swig_ok(qnt_context_set_tuning($self, mode)); }
  int32_t getTuning() {
    qnt_tuning m = 0;
    qnt_swig_ok(qnt_context_tuning($self, &m));
    return m;
  }
  /** Caps the kernels at an Isa value (Isa.NATIVE removes the cap); results do not change. */
  void setMaxIsa(int32_t isa) { qnt_swig_ok(qnt_context_set_max_isa($self, isa)); }
  int32_t getIsa() {
    qnt_isa isa = 0;
    qnt_swig_ok(qnt_context_isa($self, &isa));
    return isa;
  }
  /** The kernels chosen, one "family.dtype.run=set" line each. */
  const char *getKernels() {
    const char *s = NULL;
    qnt_swig_ok(qnt_context_kernels($self, &s));
    return s; /* NULL on failure: no string is made while the exception is pending */
  }
  /** The CPU features as CpuFeature bits. */
  uint64_t getCpuFeatures() {
    uint64_t f = 0;
    qnt_swig_ok(qnt_context_cpu_features($self, &f));
    return f;
  }
  int32_t getLogicalCpuCount() {
    int32_t logical = 0, physical = 0;
    qnt_swig_ok(qnt_context_cpu_count($self, &logical, &physical));
    return logical;
  }
  int32_t getPhysicalCoreCount() {
    int32_t logical = 0, physical = 0;
    qnt_swig_ok(qnt_context_cpu_count($self, &logical, &physical));
    return physical;
  }
  /** The size in bytes of the level 1, 2 or 3 cache (0 where unknown). */
  uint64_t getCacheSize(int32_t level) {
    size_t bytes = 0;
    qnt_swig_ok(qnt_context_cache_size($self, level, &bytes));
    return bytes;
  }
  int32_t getCudaDeviceCount() {
    int32_t n = 0;
    qnt_swig_ok(qnt_context_cuda_device_count($self, &n));
    return n;
  }
  int32_t getCudaComputeCapabilityMajor(int32_t device) {
    int32_t major = 0, minor = 0;
    qnt_swig_ok(qnt_context_cuda_compute_capability($self, device, &major, &minor));
    return major;
  }
  int32_t getCudaComputeCapabilityMinor(int32_t device) {
    int32_t major = 0, minor = 0;
    qnt_swig_ok(qnt_context_cuda_compute_capability($self, device, &major, &minor));
    return minor;
  }
  /** EXPERIMENTAL, as in the header: binds the context to a CUDA device and a cudaStream_t
   * given as an address (0 for the default stream), which must outlive its use. */
  void setCudaStream(int32_t device, int64_t stream) {
    qnt_swig_ok(qnt_context_set_cuda_stream($self, device, (void *)(intptr_t)stream));
  }
  void synchronize_() { qnt_swig_ok(qnt_context_synchronize($self)); }

  /** y = quantize(x) (ONNX QuantizeLinear): x f32, y quantized with its parameters. */
  void quantize(const qnt_tensor *x, qnt_tensor *y) { qnt_swig_ok(qnt_quantize($self, x, y)); }
  /** y = dequantize(q): q quantized with its parameters, y f32. */
  void dequantize(const qnt_tensor *q, qnt_tensor *y) { qnt_swig_ok(qnt_dequantize($self, q, y)); }
  /** dst = quantize(dequantize(src)), each side with its own parameters. */
  void requantize(const qnt_tensor *src, qnt_tensor *dst) {
    qnt_swig_ok(qnt_requantize($self, src, dst));
  }
  /** Min-max calibration (PyTorch's formulas) of an f32 tensor; a Granularity value, with the
   * axis (per-axis, per-block) and the block size (per-block). */
  qnt_qparams *calibrateMinmax(const qnt_tensor *x, int32_t dtype, int32_t scheme,
                               int32_t granularity, int64_t axis, int64_t blockSize) {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_calibrate_minmax($self, x, dtype, scheme, granularity, axis, blockSize, &qp));
    return qp;
  }
  /** As calibrateMinmax, with PyTorch's quant_min / quant_max. */
  qnt_qparams *calibrateMinmaxRange(const qnt_tensor *x, int32_t dtype, int32_t scheme,
                                    int32_t granularity, int64_t axis, int64_t blockSize,
                                    int32_t quantMin, int32_t quantMax) {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_calibrate_minmax_range($self, x, dtype, scheme, granularity, axis, blockSize,
                                           quantMin, quantMax, &qp));
    return qp;
  }
  /** Scales of the codebook dtypes (NF4 absmax, binary mean |x|, ternary absmean). */
  qnt_qparams *calibrateCodebook(const qnt_tensor *x, int32_t dtype, int32_t granularity,
                                 int64_t axis, int64_t blockSize) {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_calibrate_codebook($self, x, dtype, granularity, axis, blockSize, &qp));
    return qp;
  }
  /** qp with every scale a power of two (since 0.11): without x (null) the power of two at or
   * above each scale; with x, of the two either side, the one with the smaller squared error. */
  qnt_qparams *pow2Scales(const qnt_qparams *qp, const qnt_tensor *x) {
    qnt_qparams *out = NULL;
    qnt_swig_ok(qnt_qparams_pow2_scales($self, qp, x, &out));
    return out;
  }
  /** How well qp represents x: quantized and dequantized back. */
  qnt_error_report *errorReport(const qnt_tensor *x, const qnt_qparams *qp) {
    qnt_error_report *r = (qnt_error_report *)calloc(1, sizeof *r);
    if (r == NULL) {
      qnt_swig_fail(QNT_ERR_OUT_OF_MEMORY, "errorReport: out of memory");
      return NULL;
    }
    if (!qnt_swig_ok(qnt_error_report_compute($self, x, qp, r, sizeof *r))) {
      free(r);
      return NULL;
    }
    return r;
  }
  /** Quantized matrix product (ONNX MatMulInteger / QLinearMatMul); bias may be null. */
  void qmatmul(const qnt_tensor *a, const qnt_tensor *b, const qnt_tensor *bias, qnt_tensor *y) {
    qnt_swig_ok(qnt_qmatmul($self, a, b, bias, y));
  }
  /** Binary matrix product by XOR and popcount: a binary [M, K], b binary [N, K]; y i32 or f32. */
  void binaryMatmul(const qnt_tensor *a, const qnt_tensor *b, qnt_tensor *y) {
    qnt_swig_ok(qnt_binary_matmul($self, a, b, y));
  }
  /** ONNX DynamicQuantizeLinear: a new u8 tensor with parameters computed from x. */
  qnt_tensor *dynamicQuantizeLinear(const qnt_tensor *x) {
    qnt_tensor *y = NULL;
    qnt_swig_ok(qnt_dynamic_quantize_linear($self, x, &y));
    return y;
  }
  /** Dynamically quantized linear layer; bias and desc may be null. */
  void linearDynamic(const qnt_tensor *x, const qnt_tensor *w, const qnt_tensor *bias,
                     const qnt_op_desc *desc, qnt_tensor *y) {
    qnt_swig_ok(qnt_linear_dynamic($self, x, w, bias, desc, y));
  }
  /** Weight-only quantized linear layer (exact f32 mode); bias may be null. */
  void linearWeightOnly(const qnt_tensor *x, const qnt_tensor *w, const qnt_tensor *bias,
                        qnt_tensor *y) {
    qnt_swig_ok(qnt_linear_weight_only($self, x, w, bias, y));
  }
  /** Quantized 2-D convolution; bias and desc may be null. */
  void qconv2d(const qnt_tensor *x, const qnt_tensor *w, const qnt_tensor *bias,
               const qnt_op_desc *desc, qnt_tensor *y) {
    qnt_swig_ok(qnt_qconv2d($self, x, w, bias, desc, y));
  }
  /** Quantized addition; desc may be null. */
  void qadd(const qnt_tensor *a, const qnt_tensor *b, const qnt_op_desc *desc, qnt_tensor *y) {
    qnt_swig_ok(qnt_qadd($self, a, b, desc, y));
  }
  void qrelu(const qnt_tensor *x, qnt_tensor *y) { qnt_swig_ok(qnt_qrelu($self, x, y)); }
  /** ReLU with an upper bound (ReLU6: upper = 6). */
  void qreluClamp(const qnt_tensor *x, float upper, qnt_tensor *y) {
    qnt_swig_ok(qnt_qrelu_clamp($self, x, upper, y));
  }

  /** Prepared operators: weights validated, copied and packed once. bias and desc may be null. */
  qnt_prepared *prepareMatmul(const qnt_tensor *b, const qnt_tensor *bias,
                              const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(qnt_prepared_create_matmul($self, b, bias, desc, &op));
    return op;
  }
  qnt_prepared *prepareLinearDynamic(const qnt_tensor *w, const qnt_tensor *bias,
                                     const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(qnt_prepared_create_linear_dynamic($self, w, bias, desc, &op));
    return op;
  }
  /** yQParams null: f32 output. */
  qnt_prepared *prepareLinearStatic(const qnt_tensor *w, const qnt_tensor *bias,
                                    const qnt_qparams *xQParams, const qnt_qparams *yQParams,
                                    const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(
        qnt_prepared_create_linear_static($self, w, bias, xQParams, yQParams, desc, &op));
    return op;
  }
  /** desc may choose the WeightOnlyMode (OpOption.WEIGHT_ONLY_MODE). */
  qnt_prepared *prepareLinearWeightOnly(const qnt_tensor *w, const qnt_tensor *bias,
                                        const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(qnt_prepared_create_linear_weight_only($self, w, bias, desc, &op));
    return op;
  }
  qnt_prepared *prepareConv2d(const qnt_tensor *w, const qnt_tensor *bias,
                              const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(qnt_prepared_create_conv2d($self, w, bias, desc, &op));
    return op;
  }
  /** binaryMatmul with a constant b; desc may be null. */
  qnt_prepared *prepareBinaryMatmul(const qnt_tensor *b, const qnt_op_desc *desc) {
    qnt_prepared *op = NULL;
    qnt_swig_ok(qnt_prepared_create_binary_matmul($self, b, desc, &op));
    return op;
  }
}

%extend qnt_qparams {
  ~qnt_qparams() { qnt_qparams_destroy($self); }
  /** One scale and zero point for the whole tensor. */
  static qnt_qparams *perTensor(int32_t dtype, float scale, int32_t zeroPoint) {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_qparams_create_per_tensor(dtype, scale, zeroPoint, &qp));
    return qp;
  }
  /** One scale (and zero point; null: the symmetric ones) per index along axis. */
  static qnt_qparams *perAxis(int32_t dtype, int64_t axis, const float *data, size_t count,
                              const int32_t *zp, size_t zpCount) {
    qnt_qparams *qp = NULL;
    if (!qnt_swig_zero_points_ok(zp, zpCount, count)) return NULL;
    qnt_swig_ok(qnt_qparams_create_per_axis(dtype, axis, count, data, zp, &qp));
    return qp;
  }
  /** Parameters per block of blockSize elements along axis (see the header for the layout). */
  static qnt_qparams *perBlock(int32_t dtype, int64_t axis, int64_t blockSize, const float *data,
                               size_t count, const int32_t *zp, size_t zpCount) {
    qnt_qparams *qp = NULL;
    if (!qnt_swig_zero_points_ok(zp, zpCount, count)) return NULL;
    qnt_swig_ok(qnt_qparams_create_per_block(dtype, axis, blockSize, count, data, zp, &qp));
    return qp;
  }
  int32_t getDtype() {
    qnt_dtype v = 0;
    qnt_swig_ok(qnt_qparams_dtype($self, &v));
    return v;
  }
  int32_t getGranularity() {
    qnt_granularity v = 0;
    qnt_swig_ok(qnt_qparams_granularity($self, &v));
    return v;
  }
  int32_t getScheme() {
    qnt_scheme v = 0;
    qnt_swig_ok(qnt_qparams_scheme($self, &v));
    return v;
  }
  int64_t getAxis() {
    int64_t v = 0;
    qnt_swig_ok(qnt_qparams_axis($self, &v));
    return v;
  }
  int64_t getBlockSize() {
    int64_t v = 0;
    qnt_swig_ok(qnt_qparams_block_size($self, &v));
    return v;
  }
  uint64_t getScaleCount() {
    size_t v = 0;
    qnt_swig_ok(qnt_qparams_scale_count($self, &v));
    return v;
  }
  void copyScales(float *out, size_t capacity) {
    qnt_swig_ok(qnt_qparams_scales($self, out, capacity));
  }
  void copyZeroPoints(int32_t *out, size_t capacity) {
    qnt_swig_ok(qnt_qparams_zero_points($self, out, capacity));
  }
}

%extend qnt_tensor {
  /** A zero-filled tensor of a dtype and shape; qp (may be null) for quantized dtypes. */
  qnt_tensor(int32_t dtype, const int64_t *shape, size_t rank, const qnt_qparams *qp) {
    qnt_tensor *t = NULL;
    qnt_swig_ok(qnt_tensor_create(dtype, shape, rank, qp, &t));
    return t;
  }
  ~qnt_tensor() { qnt_tensor_destroy($self); }
  /** A zero-filled tensor on a device: DeviceType.CPU (device 0) or DeviceType.CUDA and its
   * index; NoDevice where that CUDA device is not usable. Device storage is reached through
   * copies (copyFromTensor, the typed copies), never through an address of host memory. */
  static qnt_tensor *onDevice(int32_t dtype, const int64_t *shape, size_t rank,
                              const qnt_qparams *qp, int32_t deviceType, int32_t device) {
    qnt_tensor *t = NULL;
    qnt_swig_ok(qnt_tensor_create_on_device(dtype, shape, rank, qp, deviceType, device, &t));
    return t;
  }
  /** A tensor over another library's device memory at `address` (for example a CUDA
   * allocation), which must hold `bytes` bytes and outlive the tensor. */
  static qnt_tensor *wrapDeviceAddress(int32_t dtype, const int64_t *shape, size_t rank,
                                       const qnt_qparams *qp, int32_t deviceType, int32_t device,
                                       int64_t address, uint64_t bytes) {
    qnt_tensor *t = NULL;
    qnt_swig_ok(qnt_tensor_wrap_device(dtype, shape, rank, qp, deviceType, device,
                                       (void *)(intptr_t)address, (size_t)bytes, &t));
    return t;
  }
  /** Copies src's bytes into this tensor (same dtype and shape), across devices too; ctx may
   * be null. */
  void copyFromTensor(qnt_context *ctx, const qnt_tensor *src) {
    qnt_swig_ok(qnt_tensor_copy(ctx, src, $self));
  }
  /** An f32 tensor holding a copy of data (exactly the shape's element count). */
  static qnt_tensor *fromFloats(const float *data, size_t count, const int64_t *shape, size_t rank) {
    return qnt_swig_tensor_from(QNT_DTYPE_F32, data, count, sizeof(float), shape, rank, NULL);
  }
  /** A tensor of any dtype holding a copy of its storage bytes (i8, u8, or the packed layout of
   * the sub-byte dtypes): exactly the tensor's byte size. */
  static qnt_tensor *fromBytes(int32_t dtype, const int8_t *data, size_t count,
                               const int64_t *shape, size_t rank, const qnt_qparams *qp) {
    return qnt_swig_tensor_from(dtype, data, count, 1, shape, rank, qp);
  }
  /** An i16 or u16 tensor holding a copy of data. */
  static qnt_tensor *fromShorts(int32_t dtype, const int16_t *data, size_t count,
                                const int64_t *shape, size_t rank, const qnt_qparams *qp) {
    return qnt_swig_tensor_from(dtype, data, count, sizeof(int16_t), shape, rank, qp);
  }
  /** An i32 tensor holding a copy of data. */
  static qnt_tensor *fromInts(int32_t dtype, const int32_t *data, size_t count,
                              const int64_t *shape, size_t rank, const qnt_qparams *qp) {
    return qnt_swig_tensor_from(dtype, data, count, sizeof(int32_t), shape, rank, qp);
  }
  int32_t getDtype() {
    qnt_dtype v = 0;
    qnt_swig_ok(qnt_tensor_dtype($self, &v));
    return v;
  }
  uint64_t getRank() {
    size_t v = 0;
    qnt_swig_ok(qnt_tensor_rank($self, &v));
    return v;
  }
  void copyShape(int64_t *out, size_t capacity) {
    qnt_swig_ok(qnt_tensor_shape($self, out, capacity));
  }
  uint64_t getElementCount() {
    size_t v = 0;
    qnt_swig_ok(qnt_tensor_element_count($self, &v));
    return v;
  }
  uint64_t getByteSize() {
    size_t v = 0;
    qnt_swig_ok(qnt_tensor_byte_size($self, &v));
    return v;
  }
  /** A new reference to the tensor's parameters, or null when it has none. */
  qnt_qparams *getQParams() {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_tensor_qparams($self, &qp));
    return qp;
  }
  /** The DeviceType of the storage (DeviceType.CPU or DeviceType.CUDA). */
  int32_t getDeviceType() {
    qnt_device_type type = 0;
    int32_t id = 0;
    qnt_swig_ok(qnt_tensor_device($self, &type, &id));
    return type;
  }
  int32_t getDeviceId() {
    qnt_device_type type = 0;
    int32_t id = 0;
    qnt_swig_ok(qnt_tensor_device($self, &type, &id));
    return id;
  }
  bool isReadOnly() {
    int32_t v = 0;
    qnt_swig_ok(qnt_tensor_is_read_only($self, &v));
    return v != 0;
  }
  /** The storage's address (valid while the tensor lives), for interop. */
  int64_t getDataAddress() {
    void *p = NULL;
    qnt_swig_ok(qnt_tensor_data($self, &p));
    return (int64_t)(intptr_t)p;
  }
  /** Typed copies of the storage: exactly the element count (bytes: the byte size). */
  void copyToFloats(float *out, size_t capacity) {
    qnt_swig_copy_to($self, out, capacity, sizeof(float), "copyToFloats");
  }
  void copyToBytes(int8_t *out, size_t capacity) {
    qnt_swig_copy_to($self, out, capacity, 1, "copyToBytes");
  }
  void copyToShorts(int16_t *out, size_t capacity) {
    qnt_swig_copy_to($self, out, capacity, sizeof(int16_t), "copyToShorts");
  }
  void copyToInts(int32_t *out, size_t capacity) {
    qnt_swig_copy_to($self, out, capacity, sizeof(int32_t), "copyToInts");
  }
  void copyFromFloats(const float *data, size_t count) {
    qnt_swig_copy_from($self, data, count, sizeof(float), "copyFromFloats");
  }
  void copyFromBytes(const int8_t *data, size_t count) {
    qnt_swig_copy_from($self, data, count, 1, "copyFromBytes");
  }
  void copyFromShorts(const int16_t *data, size_t count) {
    qnt_swig_copy_from($self, data, count, sizeof(int16_t), "copyFromShorts");
  }
  void copyFromInts(const int32_t *data, size_t count) {
    qnt_swig_copy_from($self, data, count, sizeof(int32_t), "copyFromInts");
  }
  /** Exports the tensor as a DLPack DLManagedTensor (versioned 0) or DLManagedTensorVersioned
   * (1), returned as an address; its consumer calls its deleter. */
  int64_t toDlpack(int32_t versioned) {
    void *m = NULL;
    qnt_swig_ok(qnt_tensor_to_dlpack($self, versioned, &m));
    return (int64_t)(intptr_t)m;
  }
  /** Imports a DLPack tensor given by address; on success qnt owns it (see the header). */
  static qnt_tensor *fromDlpack(int64_t managed, int32_t versioned, const qnt_qparams *qp) {
    qnt_tensor *t = NULL;
    qnt_swig_ok(qnt_tensor_from_dlpack((void *)(intptr_t)managed, versioned, qp, &t));
    return t;
  }
}

%extend qnt_op_desc {
  /** Operator options, every one at its default. */
  qnt_op_desc() {
    qnt_op_desc *d = NULL;
    qnt_swig_ok(qnt_op_desc_create(&d));
    return d;
  }
  ~qnt_op_desc() { qnt_op_desc_destroy($self); }
  /** Sets an OpOption key; a key or value out of range throws and leaves the descriptor as it was. */
  void set_(int32_t key, int64_t value) { qnt_swig_ok(qnt_op_desc_set($self, key, value)); }
  int64_t get_(int32_t key) {
    int64_t v = 0;
    qnt_swig_ok(qnt_op_desc_get($self, key, &v));
    return v;
  }
}

%extend qnt_prepared {
  ~qnt_prepared() { qnt_prepared_destroy($self); }
  /** Runs the operator on x, writing y (untouched on failure); from many threads at once too. */
  void run_(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y) {
    qnt_swig_ok(qnt_prepared_run(ctx, $self, x, y));
  }
  int32_t getKind() {
    qnt_prepared_kind v = 0;
    qnt_swig_ok(qnt_prepared_kind_of($self, &v));
    return v;
  }
  uint64_t getPackedSize() {
    size_t v = 0;
    qnt_swig_ok(qnt_prepared_packed_size($self, &v));
    return v;
  }
  int32_t getIsa() {
    qnt_isa v = 0;
    qnt_swig_ok(qnt_prepared_isa($self, &v));
    return v;
  }
}

%extend qnt_calibrator {
  /** A streaming calibrator: a CalibMethod, an integer dtype, a Scheme, per tensor or per axis. */
  qnt_calibrator(int32_t method, int32_t dtype, int32_t scheme, int32_t granularity, int64_t axis) {
    qnt_calibrator *c = NULL;
    qnt_swig_ok(qnt_calibrator_create(method, dtype, scheme, granularity, axis, &c));
    return c;
  }
  ~qnt_calibrator() { qnt_calibrator_destroy($self); }
  void setOption(int32_t option, double value) {
    qnt_swig_ok(qnt_calibrator_set_option($self, option, value));
  }
  void observe_(qnt_context *ctx, const qnt_tensor *x) {
    qnt_swig_ok(qnt_calibrator_observe(ctx, $self, x));
  }
  qnt_qparams *compute_(qnt_context *ctx) {
    qnt_qparams *qp = NULL;
    qnt_swig_ok(qnt_calibrator_compute(ctx, $self, &qp));
    return qp;
  }
  int32_t getChosenMethod() {
    qnt_calib_method v = 0;
    qnt_swig_ok(qnt_calibrator_chosen_method($self, &v));
    return v;
  }
  void reset_() { qnt_swig_ok(qnt_calibrator_reset($self)); }
  void merge_(const qnt_calibrator *from) { qnt_swig_ok(qnt_calibrator_merge($self, from)); }
  uint64_t getFiniteCount() {
    uint64_t f = 0, n = 0, i = 0;
    qnt_swig_ok(qnt_calibrator_counts($self, &f, &n, &i));
    return f;
  }
  uint64_t getNanCount() {
    uint64_t f = 0, n = 0, i = 0;
    qnt_swig_ok(qnt_calibrator_counts($self, &f, &n, &i));
    return n;
  }
  uint64_t getInfCount() {
    uint64_t f = 0, n = 0, i = 0;
    qnt_swig_ok(qnt_calibrator_counts($self, &f, &n, &i));
    return i;
  }
  uint64_t serializedSize() {
    size_t size = 0;
    qnt_swig_ok(qnt_calibrator_serialize($self, NULL, 0, &size));
    return size;
  }
  /** Writes the serialized calibrator to out, exactly serializedSize() bytes. */
  void serializeTo(int8_t *out, size_t capacity) {
    size_t size = 0;
    qnt_swig_ok(qnt_calibrator_serialize($self, out, capacity, &size));
  }
  static qnt_calibrator *deserialize_(const int8_t *data, size_t count) {
    qnt_calibrator *c = NULL;
    qnt_swig_ok(qnt_calibrator_deserialize(data, count, &c));
    return c;
  }
}

%extend qnt_recommender {
  qnt_recommender() {
    qnt_recommender *r = NULL;
    qnt_swig_ok(qnt_recommender_create(&r));
    return r;
  }
  ~qnt_recommender() { qnt_recommender_destroy($self); }
  /** Adds a candidate format, before the first tensor. */
  void addFormat(const char *format) { qnt_swig_ok(qnt_recommender_add_format($self, format)); }
  /** Measures w (f32; the last axis is the input channel) in every format. */
  void addTensor(qnt_context *ctx, const char *name, const qnt_tensor *w) {
    qnt_swig_ok(qnt_recommender_add_tensor(ctx, $self, name, w, NULL, 0));
  }
  /** As addTensor, each input channel's error weighted by its importance (data, one a channel). */
  void addTensorWeighted(qnt_context *ctx, const char *name, const qnt_tensor *w,
                         const float *data, size_t count) {
    qnt_swig_ok(qnt_recommender_add_tensor(ctx, $self, name, w, data, count));
  }
  /** Chooses a format per tensor under the budget (a Budget value and its bytes or dB). */
  void run_(int32_t budget, double value) { qnt_swig_ok(qnt_recommender_run($self, budget, value)); }
  uint64_t getTensorCount() {
    size_t n = 0;
    qnt_swig_ok(qnt_recommender_tensor_count($self, &n));
    return n;
  }
  /** Tensor index's name, chosen format, bytes and SQNR (dB) after the last run. */
  const char *getChoiceName(uint64_t index) {
    const char *s = NULL;
    qnt_swig_ok(qnt_recommender_choice($self, index, &s, NULL, NULL, NULL));
    return s;
  }
  const char *getChoiceFormat(uint64_t index) {
    const char *s = NULL;
    qnt_swig_ok(qnt_recommender_choice($self, index, NULL, &s, NULL, NULL));
    return s;
  }
  uint64_t getChoiceBytes(uint64_t index) {
    uint64_t b = 0;
    qnt_swig_ok(qnt_recommender_choice($self, index, NULL, NULL, &b, NULL));
    return b;
  }
  double getChoiceSqnr(uint64_t index) {
    double q = 0;
    qnt_swig_ok(qnt_recommender_choice($self, index, NULL, NULL, NULL, &q));
    return q;
  }
  /** The last run's table: each tensor's choice and runner-up, then the totals. */
  const char *getReport() {
    const char *s = NULL;
    qnt_swig_ok(qnt_recommender_report($self, &s));
    return s;
  }
}

%inline %{
/** The process's tuning table as text, for tuningImport in a later run. */
char *tuningExport(void) {
  size_t n = 0;
  char *s;
  if (!qnt_swig_ok(qnt_tuning_export(NULL, 0, &n))) return NULL;
  s = (char *)malloc(n);
  if (s == NULL) {
    qnt_swig_fail(QNT_ERR_OUT_OF_MEMORY, "tuningExport: out of memory");
    return NULL;
  }
  if (!qnt_swig_ok(qnt_tuning_export(s, n, &n))) {
    free(s);
    return NULL;
  }
  return s;
}
/** Adds a table tuningExport wrote to the process's (all or nothing). */
void tuningImport(const char *text) { qnt_swig_ok(qnt_tuning_import(text)); }
/** Empties the process's tuning table. */
void tuningClear(void) { qnt_tuning_clear(); }
/** The output shape of Context.qconv2d for these x, w and options (desc may be null), written
 * to out, which holds 4. */
void conv2dOutputShape(const qnt_tensor *x, const qnt_tensor *w, const qnt_op_desc *desc,
                       int64_t *out, size_t capacity) {
  qnt_swig_ok(qnt_conv2d_output_shape(x, w, desc, out, capacity));
}
/** The bytes of a ternary [rows, cols] tensor in bitnet.cpp's layout (1 I2_S, 2 TL1, 3 TL2);
 * bm, bk, bmm: TL1's and TL2's tiling (ignored for I2_S). */
uint64_t ternaryLayoutSize(int32_t layout, int64_t rows, int64_t cols, int64_t bm, int64_t bk,
                           int64_t bmm) {
  const qnt_ternary_tiling t = {bm, bk, bmm};
  size_t n = 0;
  qnt_swig_ok(qnt_ternary_layout_size(layout, rows, cols, layout == QNT_TERNARY_I2_S ? NULL : &t, &n));
  return n;
}
/** Writes the ternary tensor w in the layout to out, exactly ternaryLayoutSize() bytes. */
void ternaryExportTo(const qnt_tensor *w, int32_t layout, int64_t bm, int64_t bk, int64_t bmm,
                     int8_t *out, size_t capacity) {
  const qnt_ternary_tiling t = {bm, bk, bmm};
  qnt_swig_ok(qnt_ternary_export(layout, w, layout == QNT_TERNARY_I2_S ? NULL : &t, out, capacity));
}
/** The ternary [rows, cols] tensor the layout's bytes hold; scale: TL1's and TL2's. */
qnt_tensor *ternaryImport(const int8_t *data, size_t count, int32_t layout, int64_t rows,
                          int64_t cols, int64_t bm, int64_t bk, int64_t bmm, float scale) {
  const qnt_ternary_tiling t = {bm, bk, bmm};
  qnt_tensor *out = NULL;
  qnt_swig_ok(qnt_ternary_import(layout, data, count, rows, cols,
                                 layout == QNT_TERNARY_I2_S ? NULL : &t, scale, &out));
  return out;
}
%}
