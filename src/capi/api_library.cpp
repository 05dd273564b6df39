// Entry points: version, status, dtypes, context.
#include "capi/boundary.hpp"
#include "ops/tune.hpp"
#include "core/device.hpp"
#include "hw/machine.hpp"
#include "kernels/registry.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <cstring>

using namespace qnt;
using qnt::capi::guard;
using qnt::capi::require;

namespace {

void require_cuda_device(int32_t device) {
  const auto &devices = hw::cuda_devices();
  if (device < 0 || static_cast<size_t>(device) >= devices.size())
    fail(QNT_ERR_NO_DEVICE, "no CUDA device ", device, " (", devices.size(),
         devices.size() == 1 ? " device" : " devices", " usable)");
}

}  // namespace

#define QNT_STR2(x) #x
#define QNT_STR(x) QNT_STR2(x)

extern "C" {

uint32_t qnt_version(void) { return QNT_VERSION_NUMBER; }

uint32_t qnt_abi_version(void) { return QNT_ABI_VERSION; }

qnt_status qnt_abi_check(uint32_t abi_version) {
  return guard(__func__, [&] {
    if (abi_version != QNT_ABI_VERSION)
      fail(QNT_ERR_UNSUPPORTED, "this program was built against qnt ABI ", abi_version,
           ", but the library it loaded (qnt ", qnt_version_string(), ", libqnt.so.",
           QNT_ABI_VERSION, ") implements ABI ", QNT_ABI_VERSION,
           "; rebuild the program against this library's header, or load a library of ABI ",
           abi_version);
  });
}

const char *qnt_version_string(void) {
  return QNT_STR(QNT_VERSION_MAJOR) "." QNT_STR(QNT_VERSION_MINOR) "." QNT_STR(QNT_VERSION_PATCH);
}

namespace {
const char *const kBuildInfo = "version=" QNT_STR(QNT_VERSION_MAJOR) "." QNT_STR(QNT_VERSION_MINOR) "." QNT_STR(
      QNT_VERSION_PATCH) "\n"
#if defined(__clang__)
                         "compiler=clang " __clang_version__ "\n"
#elif defined(__GNUC__)
                         "compiler=gcc " __VERSION__ "\n"
#else
                         "compiler=unknown\n"
#endif
#if defined(__x86_64__)
                         "arch=x86_64\n"
#elif defined(__aarch64__)
                         "arch=aarch64\n"
#else
                         "arch=other\n"
#endif
                         "abi=" QNT_STR(QNT_ABI_VERSION) "\n"
#if defined(QNT_WITH_OPENMP)
                         "openmp=" QNT_STR(_OPENMP) "\n"
#else
                         "openmp=off\n"
#endif
#if defined(QNT_WITH_CUDA_MODULE)
                         "cuda=module (libqnt_cuda.so, loaded at run time)\n"
#else
                         "cuda=off\n"
#endif
      ;
}  // namespace

const char *qnt_build_info(void) {
  // The static part, then the kernels a default context chooses on this machine (built once).
  static const std::string *full = []() -> const std::string * {
    try {
      // The kernel tables compiled in; a context chooses among them at run time
      // (qnt_context_kernels lists its choice).
      return new std::string(std::string(kBuildInfo) + "cpu_kernels=" +
                             qnt::kern::compiled_tables() +
                             "\nkernel_families=quantize,dequantize,requantize,calibrate.scan,"
                             "calibrate.histogram,gemm.u8s8s32,linear.weight_only\n"
                             "chosen_kernels=\n" +
                             qnt::kern::kernels_for(qnt::machine_isa()).description);
    } catch (...) {
      return nullptr;
    }
  }();
  return full != nullptr ? full->c_str() : kBuildInfo;
}

const char *qnt_status_string(qnt_status status) {
  switch (status) {
    case QNT_OK:
      return "QNT_OK: success";
    case QNT_ERR_INVALID_ARGUMENT:
      return "QNT_ERR_INVALID_ARGUMENT: an argument is out of its domain";
    case QNT_ERR_NULL_POINTER:
      return "QNT_ERR_NULL_POINTER: a required pointer or handle is NULL";
    case QNT_ERR_OUT_OF_MEMORY:
      return "QNT_ERR_OUT_OF_MEMORY: an allocation failed";
    case QNT_ERR_UNSUPPORTED:
      return "QNT_ERR_UNSUPPORTED: not implemented for this case";
    case QNT_ERR_SHAPE_MISMATCH:
      return "QNT_ERR_SHAPE_MISMATCH: shapes disagree";
    case QNT_ERR_DTYPE_MISMATCH:
      return "QNT_ERR_DTYPE_MISMATCH: wrong dtype for this call";
    case QNT_ERR_BUFFER_TOO_SMALL:
      return "QNT_ERR_BUFFER_TOO_SMALL: a buffer is too small";
    case QNT_ERR_OVERFLOW:
      return "QNT_ERR_OVERFLOW: a size computation overflows";
    case QNT_ERR_INVALID_QPARAMS:
      return "QNT_ERR_INVALID_QPARAMS: invalid quantization parameters";
    case QNT_ERR_NO_DEVICE:
      return "QNT_ERR_NO_DEVICE: no CUDA device for this call";
    case QNT_ERR_INTERNAL:
      return "QNT_ERR_INTERNAL: internal error in qnt";
    case QNT_ERR_CORRUPT_DATA:
      return "QNT_ERR_CORRUPT_DATA: a serialized buffer is truncated, damaged or foreign";
  }
  return "unknown qnt_status";
}

const char *qnt_last_error_message(void) { return qnt::capi::last_error_message(); }

qnt_status qnt_live_handles(uint64_t *out) {
  return qnt::capi::guard(__func__, [&] {
    qnt::capi::require(out, "out");
    *out = qnt::capi::live_handles();
  });
}

int32_t qnt_dtype_bits(qnt_dtype dtype) {
  const DTypeInfo *info = find_dtype(static_cast<int32_t>(dtype));
  return info == nullptr ? 0 : info->bits;
}

const char *qnt_dtype_name(qnt_dtype dtype) {
  const DTypeInfo *info = find_dtype(static_cast<int32_t>(dtype));
  return info == nullptr ? "invalid" : info->name;
}

qnt_status qnt_dtype_range(qnt_dtype dtype, int32_t *min_out, int32_t *max_out) {
  return guard(__func__, [&] {
    require(min_out, "min_out");
    require(max_out, "max_out");
    const DTypeInfo &info = dtype_info(dtype);
    if (info.rule != Rule::Integer)
      fail(QNT_ERR_INVALID_ARGUMENT, info.name, " has no integer range");
    *min_out = info.qmin;
    *max_out = info.qmax;
  });
}

qnt_status qnt_nf4_codebook(float *out, size_t capacity) {
  return guard(__func__, [&] {
    require(out, "out");
    if (capacity < 16)
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the codebook has 16 values, capacity is ", capacity);
    std::memcpy(out, ref::kNF4Codebook, sizeof ref::kNF4Codebook);
  });
}

const char *qnt_cpu_feature_name(qnt_cpu_feature feature) {
  switch (feature) {
    case QNT_CPU_SSE41:
      return "sse4.1";
    case QNT_CPU_AVX2:
      return "avx2";
    case QNT_CPU_FMA:
      return "fma";
    case QNT_CPU_AVX512F:
      return "avx512f";
    case QNT_CPU_AVX512BW:
      return "avx512bw";
    case QNT_CPU_AVX512VL:
      return "avx512vl";
    case QNT_CPU_AVX512VNNI:
      return "avx512vnni";
    case QNT_CPU_AVXVNNI:
      return "avxvnni";
    case QNT_CPU_AMXINT8:
      return "amx-int8";
    case QNT_CPU_AVX512VPOPCNTDQ:
      return "avx512vpopcntdq";
    case QNT_CPU_NEON:
      return "neon";
    case QNT_CPU_DOTPROD:
      return "dotprod";
    case QNT_CPU_I8MM:
      return "i8mm";
  }
  return "invalid";
}

const char *qnt_isa_name(qnt_isa isa) { return qnt::isa_name(isa); }

qnt_status qnt_context_create(qnt_context **out) {
  return guard(__func__, [&] {
    require(out, "out");
    (void)hw::machine();  // detect now, not inside the first op
    Context c;
    c.choose_kernels();
    *out = new qnt_context{qnt::capi::kContextMagic, c};
  });
}

void qnt_context_destroy(qnt_context *ctx) {
  if (ctx == nullptr || ctx->magic != qnt::capi::kContextMagic) return;
  ctx->magic = qnt::capi::kDeadMagic;
  delete ctx;
}

qnt_status qnt_context_set_num_threads(qnt_context *ctx, int32_t n) {
  return guard(__func__, [&] {
    Context &c = qnt::capi::context_of(ctx, "ctx");
    if (n < 0 || n > 1024)
      fail(QNT_ERR_INVALID_ARGUMENT, "n = ", n, " threads; expected 0 (default) to 1024");
    c.requested_threads = n;
  });
}

qnt_status qnt_context_set_max_isa(qnt_context *ctx, qnt_isa isa) {
  return guard(__func__, [&] {
    Context &c = qnt::capi::context_of(ctx, "ctx");
    if (std::strcmp(qnt_isa_name(isa), "invalid") == 0)
      fail(QNT_ERR_INVALID_ARGUMENT, "isa = ", isa, " is not a qnt_isa");
    if (!isa_of_this_arch(isa))
      fail(QNT_ERR_INVALID_ARGUMENT, "isa ", qnt_isa_name(isa),
           " belongs to another architecture than this machine's");
    Context next = c;
    next.max_isa = isa;
    next.choose_kernels();  // may throw (allocation): then the context is left as it was
    c = next;
  });
}

qnt_status qnt_context_kernels(const qnt_context *ctx, const char **out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    *out = qnt::capi::context_of(ctx).kernels().description.c_str();
  });
}

qnt_status qnt_context_set_tuning(qnt_context *ctx, qnt_tuning mode) {
  return guard(__func__, [&] {
    Context &c = qnt::capi::context_of(ctx, "ctx");
    if (mode != QNT_TUNING_OFF && mode != QNT_TUNING_MEASURE && mode != QNT_TUNING_CACHED)
      fail(QNT_ERR_INVALID_ARGUMENT, "mode = ", mode, " is not a qnt_tuning");
    c.tuning = mode;
  });
}

qnt_status qnt_context_tuning(const qnt_context *ctx, qnt_tuning *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    *out = qnt::capi::context_of(ctx).tuning;
  });
}

qnt_status qnt_tuning_export(char *buf, size_t capacity, size_t *size_out) {
  return guard(__func__, [&] {
    require(size_out, "size_out");
    const std::string text = qnt::ops::tune_export();
    *size_out = text.size() + 1;
    if (buf == nullptr && capacity == 0) return;  // the size only
    if (buf == nullptr || capacity < text.size() + 1)
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the table needs ", text.size() + 1, " bytes, the buffer holds ",
           buf == nullptr ? 0 : capacity);
    std::memcpy(buf, text.c_str(), text.size() + 1);
  });
}

qnt_status qnt_tuning_import(const char *text) {
  return guard(__func__, [&] { qnt::ops::tune_import(text); });
}

void qnt_tuning_clear(void) { qnt::ops::tune_clear(); }

qnt_status qnt_context_isa(const qnt_context *ctx, qnt_isa *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    *out = qnt::capi::context_of(ctx).isa();
  });
}

qnt_status qnt_context_num_threads(const qnt_context *ctx, int32_t *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    *out = qnt::capi::context_of(ctx).threads();
  });
}

qnt_status qnt_context_cpu_features(const qnt_context *ctx, uint64_t *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    (void)qnt::capi::context_of(ctx);
    *out = hw::machine().cpu_features;
  });
}

qnt_status qnt_context_cpu_count(const qnt_context *ctx, int32_t *logical_out,
                                 int32_t *physical_out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(logical_out, "logical_out");
    require(physical_out, "physical_out");
    (void)qnt::capi::context_of(ctx);
    *logical_out = hw::machine().logical_cpus;
    *physical_out = hw::machine().physical_cores;
  });
}

qnt_status qnt_context_cache_size(const qnt_context *ctx, int32_t level, size_t *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    (void)qnt::capi::context_of(ctx);
    if (level < 1 || level > 3)
      fail(QNT_ERR_INVALID_ARGUMENT, "cache level ", level, " is not 1, 2 or 3");
    *out = hw::machine().cache_bytes[level];
  });
}

qnt_status qnt_context_cuda_device_count(const qnt_context *ctx, int32_t *out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(out, "out");
    (void)qnt::capi::context_of(ctx);
    *out = static_cast<int32_t>(hw::cuda_devices().size());
  });
}

qnt_status qnt_context_cuda_compute_capability(const qnt_context *ctx, int32_t device,
                                               int32_t *major_out, int32_t *minor_out) {
  return guard(__func__, [&] {
    require(ctx, "ctx");
    require(major_out, "major_out");
    require(minor_out, "minor_out");
    (void)qnt::capi::context_of(ctx);
    const auto &devices = hw::cuda_devices();
    require_cuda_device(device);
    *major_out = devices[static_cast<size_t>(device)].major;
    *minor_out = devices[static_cast<size_t>(device)].minor;
  });
}

qnt_status qnt_context_set_cuda_stream(qnt_context *ctx, int32_t device, void *stream) {
  return guard(__func__, [&] {
    Context &c = qnt::capi::context_of(ctx, "ctx");
    require_cuda_device(device);
    c.cuda_device = device;
    c.cuda_stream = stream;
  });
}

qnt_status qnt_context_synchronize(qnt_context *ctx) {
  return guard(__func__, [&] {
    const Context &c = qnt::capi::context_of(ctx, "ctx");
    if (c.cuda_device < 0) return;  // never bound: no device work was queued through it
    const qnt_cuda_module &m = cuda_for(c.cuda_device);
    cuda_check(m, m.synchronize(c.cuda_device, c.cuda_stream), "the context's device work");
  });
}

}  // extern "C"
