// The `qnt` command: model files on the command line, through libqnt's public C API only
// (qnt/qnt.h and qnt/qnt_io.h), as any program would use it.
//   qnt info FILE...
//   qnt bench [--threads N]
//   qnt quantize IN OUT --type int8|uint8|int4|uint4|nf4 (OUT .safetensors)
//                           |q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k|iq4_nl|tq1_0|tq2_0|f16|bf16 (.gguf) [--block N] [--per-channel]
//                [--keep REGEX]... [--no-default-keep] [--method minmax|percentile|entropy|mse|adaptive]
//                [--calibrate DATA [--act-type uint8|int8]] [--percentile P] [--threads N] [--quiet]
//   qnt quantize IN OUT.gguf --budget 4.5bpw|12MB|20dB --formats q4_k,q5_k,q6_k,q8_0 [...]
//   qnt recommend IN --formats i8,i4.b128,nf4.b64,q4_k,... --budget 4.5bpw|12MB|20dB [--keep REGEX]...
#include <qnt/qnt.h>
#include <qnt/qnt_io.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cctype>
#include <cstring>
#include <functional>
#include <iterator>
#include <numeric>
#include <memory>
#include <new>
#include <regex>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

namespace {

// A failed qnt call: its status and message, reported by main.
struct Failure : std::runtime_error {
  explicit Failure(const std::string &what) : std::runtime_error(what) {}
};

void check(qnt_status s, const std::string &what) {
  if (s != QNT_OK) throw Failure(what + ": " + qnt_last_error_message());
}

struct FileCloser {
  void operator()(qnt_model_file *f) const { qnt_model_file_destroy(f); }
};
struct WriterCloser {
  void operator()(qnt_model_writer *w) const { qnt_model_writer_destroy(w); }
};
struct TensorCloser {
  void operator()(qnt_tensor *t) const { qnt_tensor_destroy(t); }
};
struct QpCloser {
  void operator()(qnt_qparams *q) const { qnt_qparams_destroy(q); }
};
struct CtxCloser {
  void operator()(qnt_context *c) const { qnt_context_destroy(c); }
};
using File = std::unique_ptr<qnt_model_file, FileCloser>;
using Writer = std::unique_ptr<qnt_model_writer, WriterCloser>;
using TensorP = std::unique_ptr<qnt_tensor, TensorCloser>;
using Qp = std::unique_ptr<qnt_qparams, QpCloser>;
using Ctx = std::unique_ptr<qnt_context, CtxCloser>;

File open_file(const std::string &path) {
  qnt_model_file *f = nullptr;
  check(qnt_model_file_open(path.c_str(), &f), path);
  return File(f);
}

std::string human_bytes(double b) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024.0 && u < 4) b /= 1024.0, ++u;
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
  return s;
}

struct EntryInfo {
  std::string name, type;
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

// The file dtypes that are qnt dtypes: read as tensors (a mapping each, ending with the tensor),
// the others as bytes (mapped until the file is closed).
bool is_qnt_type(const std::string &t) {
  for (const char *q : {"F32", "F16", "BF16", "I32", "I16", "U16", "I8", "U8"})
    if (t == q) return true;
  return false;
}

TensorP tensor_at(const qnt_model_file *f, size_t i, const std::string &name) {
  qnt_tensor *t = nullptr;
  check(qnt_model_file_tensor(f, i, &t), name);
  return TensorP(t);
}

EntryInfo entry(const qnt_model_file *f, size_t i) {
  EntryInfo e;
  const char *s = nullptr;
  check(qnt_model_file_tensor_name(f, i, &s), "tensor name");
  e.name = s;
  check(qnt_model_file_tensor_type(f, i, &s), e.name);
  e.type = s;
  size_t rank = 0;
  int64_t dims[QNT_MAX_RANK];
  check(qnt_model_file_tensor_shape(f, i, dims, QNT_MAX_RANK, &rank), e.name);
  e.shape.assign(dims, dims + rank);
  size_t count = 1;
  for (int64_t d : e.shape) count *= static_cast<size_t>(d);
  // The entry's bytes from its type (without mapping it): ggml's block types by their blocks.
  static const struct {
    const char *name;
    size_t block, size;
  } kBlockTypes[] = {{"Q4_0", 32, 18},  {"Q4_1", 32, 20},   {"Q5_0", 32, 22},  {"Q5_1", 32, 24},
                     {"Q8_0", 32, 34},  {"Q8_1", 32, 36},   {"IQ4_NL", 32, 18}, {"MXFP4", 32, 17},
                     {"Q2_K", 256, 84}, {"Q3_K", 256, 110}, {"Q4_K", 256, 144}, {"Q5_K", 256, 176},
                     {"Q6_K", 256, 210}, {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74},
                     {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50}, {"IQ3_S", 256, 110}, {"IQ2_S", 256, 82},
                     {"IQ4_XS", 256, 136}, {"IQ1_M", 256, 56}, {"TQ1_0", 256, 54}, {"TQ2_0", 256, 66}};
  for (const auto &b : kBlockTypes)
    if (e.type == b.name) {
      e.bytes = count / b.block * b.size;
      return e;
    }
  const size_t size = e.type == "F64" || e.type == "I64" || e.type == "U64" ? 8
                      : e.type == "F32" || e.type == "I32" || e.type == "U32" ? 4
                      : e.type == "F16" || e.type == "BF16" || e.type == "I16" || e.type == "U16" ? 2
                                                                                   : 1;
  e.bytes = count * size;
  return e;
}

std::string shape_text(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A metadata value as text: scalars as they are, arrays as their type, count and first values.
std::string meta_text(const qnt_model_file *f, const char *key) {
  qnt_meta_type type = 0, elem = 0;
  size_t count = 0;
  check(qnt_model_file_metadata_type(f, key, &type, &elem, &count), key);
  auto one = [&](size_t i) -> std::string {
    if (elem == QNT_META_STRING) {
      const char *s = nullptr;
      check(qnt_model_file_metadata_string_at(f, key, i, &s), key);
      return type == QNT_META_ARRAY ? "\"" + std::string(s) + "\"" : std::string(s);
    }
    if (elem == QNT_META_FLOAT32 || elem == QNT_META_FLOAT64) {
      double d = 0;
      check(qnt_model_file_metadata_float(f, key, i, &d), key);
      char b[40];
      std::snprintf(b, sizeof b, "%.9g", d);
      return b;
    }
    if (elem == QNT_META_UINT64) {
      uint64_t u = 0;
      check(qnt_model_file_metadata_uint(f, key, i, &u), key);
      return std::to_string(u);
    }
    int64_t v = 0;
    check(qnt_model_file_metadata_int(f, key, i, &v), key);
    return elem == QNT_META_BOOL ? (v != 0 ? "true" : "false") : std::to_string(v);
  };
  if (type != QNT_META_ARRAY) return one(0);
  std::string s = "[" + std::to_string(count) + " values:";
  for (size_t i = 0; i < count && i < 4; ++i) s += " " + one(i);
  return s + (count > 4 ? " ...]" : "]");
}

// ---------------------------------------------------------------------------------------------
int info(const std::vector<std::string> &paths) {
  for (const std::string &path : paths) {
    const File f = open_file(path);
    qnt_file_format fmt = 0;
    check(qnt_model_file_format(f.get(), &fmt), path);
    size_t n = 0, meta = 0;
    check(qnt_model_file_tensor_count(f.get(), &n), path);
    check(qnt_model_file_metadata_count(f.get(), &meta), path);
    std::printf("%s: %s, %zu tensors, %zu metadata keys\n", path.c_str(),
                fmt == QNT_FILE_SAFETENSORS ? "safetensors" : "GGUF", n, meta);
    for (size_t i = 0; i < meta; ++i) {
      const char *k = nullptr;
      check(qnt_model_file_metadata_key(f.get(), i, &k), path);
      std::string value = meta_text(f.get(), k);
      if (value.size() > 100) value = value.substr(0, 97) + "...";
      std::printf("  %s = %s\n", k, value.c_str());
    }
    size_t total = 0;
    double params = 0;
    std::printf("  %-48s %-22s %-22s %12s\n", "tensor", "dtype", "shape", "bytes");
    for (size_t i = 0; i < n; ++i) {
      const EntryInfo e = entry(f.get(), i);
      std::string type = e.type;
      std::vector<int64_t> shape = e.shape;
      // A tensor qnt stored quantized: its qnt dtype and logical shape.
      const std::string key = "qnt." + e.name;
      const char *q = nullptr;
      if (qnt_model_file_metadata_string(f.get(), key.c_str(), &q) == QNT_OK) {
        TensorP t;
        qnt_tensor *tp = nullptr;
        check(qnt_model_file_tensor(f.get(), i, &tp), e.name);
        t.reset(tp);
        qnt_dtype d = 0;
        size_t rank = 0;
        int64_t dims[QNT_MAX_RANK];
        check(qnt_tensor_dtype(t.get(), &d), e.name);
        check(qnt_tensor_rank(t.get(), &rank), e.name);
        check(qnt_tensor_shape(t.get(), dims, QNT_MAX_RANK), e.name);
        type += std::string(" (qnt ") + qnt_dtype_name(d) + ")";
        shape.assign(dims, dims + rank);
      }
      double count = 1;
      for (int64_t d : shape) count *= static_cast<double>(d);
      if (!ends_with(e.name, ".qnt_scales") && !ends_with(e.name, ".qnt_zero_points")) params += count;
      total += e.bytes;
      std::printf("  %-48s %-22s %-22s %12zu\n", e.name.c_str(), type.c_str(), shape_text(shape).c_str(), e.bytes);
    }
    std::printf("  total: %zu tensors, %.0f parameters, %zu bytes (%s)\n", n, params, total,
                human_bytes(static_cast<double>(total)).c_str());
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
struct QuantOptions {
  std::string in, out, type, method = "minmax", calibrate, act_type = "uint8", budget, formats;
  double percentile = 0;
  int64_t block = 0;
  bool per_channel = false, quiet = false, no_default_keep = false;
  std::vector<std::string> keep;
  int threads = 0;
};

struct Target {
  qnt_dtype dtype;
  bool affine;
};

Target target_of(const std::string &type) {
  if (type == "int8") return {QNT_DTYPE_I8, false};
  if (type == "uint8") return {QNT_DTYPE_U8, true};
  if (type == "int4") return {QNT_DTYPE_I4, false};
  if (type == "uint4") return {QNT_DTYPE_U4, true};
  if (type == "nf4") return {QNT_DTYPE_NF4, false};
  throw Failure("--type " + type + ": this release writes int8, uint8, int4, uint4 or nf4 (the GGUF block types come with GGUF)");
}

struct Plan {
  EntryInfo e;
  size_t index = 0;
  bool quantize = false;      // float weights to quantize
  bool requantized = false;   // already a qnt-quantized tensor (copied with its qparams)
  bool dequantized = false;   // a GGUF block type kept as its float32 values
  qnt_granularity gran = QNT_GRANULARITY_PER_BLOCK;
  int64_t axis = 0, block = 0;
  size_t groups = 0, count = 0;
};

// Whether entry i dequantizes (qnt_model_file_tensor_dequantize takes its type).
bool dequantizes(const qnt_model_file *f, size_t i) {
  const char *t = nullptr;
  if (qnt_model_file_tensor_type(f, i, &t) != QNT_OK) return false;
  for (const char *q : {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "TQ1_0", "TQ2_0"})
    if (std::strcmp(t, q) == 0) return true;
  return false;
}

// A float tensor's values as f32: F16 and BF16 widened exactly, GGUF's block types dequantized
// (t null).
std::vector<float> as_f32(const qnt_model_file *f, const Plan &p, const qnt_tensor *t) {
  const EntryInfo &e = p.e;
  size_t count = 1;
  for (int64_t d : e.shape) count *= static_cast<size_t>(d);
  std::vector<float> v(count);
  if (t == nullptr) {
    qnt_tensor *y = nullptr;
    check(qnt_tensor_wrap(QNT_DTYPE_F32, e.shape.data(), e.shape.size(), nullptr, v.data(), 4 * count, &y), e.name);
    const TensorP yt(y);
    check(qnt_model_file_tensor_dequantize(f, p.index, yt.get()), e.name);
    return v;
  }
  if (e.type == "F32") {
    check(qnt_tensor_copy_to(t, v.data(), 4 * count), e.name);
    return v;
  }
  std::vector<uint8_t> raw(2 * count);
  check(qnt_tensor_copy_to(t, raw.data(), raw.size()), e.name);
  const uint8_t *b = raw.data();
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    uint16_t h = 0;
    std::memcpy(&h, b + 2 * i, 2);
    if (e.type == "BF16") {
      bits = static_cast<uint32_t>(h) << 16;
    } else {  // F16
      const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
      uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
      if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (man << 13);
      } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
      } else if (man == 0) {
        bits = sign;
      } else {  // subnormal: normalize
        exp = 113;
        while ((man & 0x400u) == 0) man <<= 1, --exp;
        bits = sign | (exp << 23) | ((man & 0x3FFu) << 13);
      }
    }
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

// An input tensor's values as float32: a qnt-quantized one dequantized, the others as as_f32.
std::vector<float> source_f32(const qnt_model_file *in, const Plan &p) {
  const std::string &name = p.e.name;
  const char *q = nullptr;
  if (qnt_model_file_metadata_string(in, ("qnt." + name).c_str(), &q) == QNT_OK) {
    const TensorP t = tensor_at(in, p.index, name);
    std::vector<float> x(static_cast<size_t>(
        std::accumulate(p.e.shape.begin(), p.e.shape.end(), int64_t{1}, std::multiplies<>())));
    qnt_tensor *yp = nullptr;
    check(qnt_tensor_wrap(QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr, x.data(), 4 * x.size(), &yp),
          name);
    const TensorP yt(yp);
    check(qnt_dequantize(nullptr, t.get(), yt.get()), name);
    return x;
  }
  return is_qnt_type(p.e.type) ? as_f32(in, p, tensor_at(in, p.index, name).get()) : as_f32(in, p, nullptr);
}

// Whether entry i holds float values: F32, F16, BF16, or a GGUF block type qnt dequantizes.
bool float_entry(const qnt_model_file *f, size_t i, const std::string &type) {
  return type == "F32" || type == "F16" || type == "BF16" || (!is_qnt_type(type) && dequantizes(f, i));
}

struct Row {
  std::string name;
  double sqnr;
  size_t in, out;
};

class Progress {
 public:
  Progress(bool quiet, size_t tensors, double bytes)
      : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), tensors_(tensors), bytes_(bytes),
        start_(std::chrono::steady_clock::now()) {}
  void step(const std::string &name, double bytes_done, size_t done) {
    if (quiet_) return;
    const double s = seconds();
    const double rate = s > 0 ? bytes_done / s : 0;
    if (tty_) {
      const int width = 30;
      const int fill = bytes_ > 0 ? static_cast<int>(width * bytes_done / bytes_) : width;
      std::fprintf(stderr, "\r[%s%s] %zu/%zu tensors  %s / %s  %s/s   ", std::string(static_cast<size_t>(fill), '#').c_str(),
                   std::string(static_cast<size_t>(width - fill), ' ').c_str(), done, tensors_,
                   human_bytes(bytes_done).c_str(), human_bytes(bytes_).c_str(), human_bytes(rate).c_str());
      if (done == tensors_) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%zu/%zu %s (%s of %s, %s/s)\n", done, tensors_, name.c_str(),
                   human_bytes(bytes_done).c_str(), human_bytes(bytes_).c_str(), human_bytes(rate).c_str());
    }
    std::fflush(stderr);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  bool quiet_, tty_;
  size_t tensors_;
  double bytes_;
  std::chrono::steady_clock::time_point start_;
};

std::vector<std::regex> keep_patterns(const QuantOptions &o) {
  std::vector<std::regex> keep;
  if (!o.no_default_keep) keep.emplace_back("embed|norm|wte|wpe", std::regex::icase);
  for (const std::string &k : o.keep) {
    try {
      keep.emplace_back(k);
    } catch (const std::regex_error &e) {
      throw Failure("--keep '" + k + "': " + e.what());
    }
  }
  return keep;
}

qnt_calib_method method_of(const std::string &name) {
  const struct {
    const char *name;
    qnt_calib_method m;
  } methods[] = {{"minmax", QNT_CALIB_MINMAX}, {"percentile", QNT_CALIB_PERCENTILE}, {"entropy", QNT_CALIB_ENTROPY},
                 {"mse", QNT_CALIB_MSE}, {"adaptive", QNT_CALIB_ADAPTIVE}};
  for (const auto &m : methods)
    if (name == m.name) return m.m;
  throw Failure("--method " + name + ": minmax, percentile, entropy, mse or adaptive");
}

// A layer input's calibrated qparams (--calibrate), for the weight `weight`.
struct InputQp {
  std::string weight;
  Qp qp;
  std::string method;  // the method a calibrator chose (adaptive), or the one asked for
};

// --calibrate DATA: each tensor of DATA holds samples of one layer's input, [..., K] with K the
// last dimension of the weight it feeds, and is named as that weight ("x.weight") or as its
// layer ("x"). Each one's per-tensor qparams of --act-type, from a calibrator of --method over
// all of its samples.
std::vector<InputQp> calibrate_inputs(const QuantOptions &o, qnt_context *ctx, const qnt_model_file *model) {
  std::vector<InputQp> out;
  if (o.calibrate.empty()) return out;
  const qnt_calib_method method = method_of(o.method);
  qnt_dtype dtype = 0;
  qnt_scheme scheme = QNT_SCHEME_AFFINE;
  if (o.act_type == "uint8") {
    dtype = QNT_DTYPE_U8;
  } else if (o.act_type == "int8") {
    dtype = QNT_DTYPE_I8;
    scheme = QNT_SCHEME_SYMMETRIC;
  } else {
    throw Failure("--act-type " + o.act_type + ": uint8 (affine) or int8 (symmetric)");
  }
  const File data = open_file(o.calibrate);
  size_t n = 0;
  check(qnt_model_file_tensor_count(data.get(), &n), o.calibrate);
  if (n == 0) throw Failure(o.calibrate + ": no tensors to calibrate with");
  for (size_t i = 0; i < n; ++i) {
    Plan p;
    p.index = i;
    p.e = entry(data.get(), i);
    const std::string &name = p.e.name;
    const std::string where = o.calibrate + ": '" + name + "'";
    size_t wi = 0;
    std::string weight = name;
    if (qnt_model_file_tensor_find(model, weight.c_str(), &wi) != QNT_OK) {
      weight = name + ".weight";
      if (qnt_model_file_tensor_find(model, weight.c_str(), &wi) != QNT_OK)
        throw Failure(where + " names no tensor of " + o.in + " (as '" + name + "' or '" + weight + "')");
    }
    const EntryInfo we = entry(model, wi);
    if (we.shape.size() != 2)
      throw Failure(where + ": '" + weight + "' is not a matrix [N, K]; inputs are calibrated for linear layers");
    if (p.e.shape.empty() || p.e.shape.back() != we.shape.back())
      throw Failure(where + ": samples of shape " + shape_text(p.e.shape) + " do not end in K = " +
                    std::to_string(we.shape.back()) + ", the last dimension of '" + weight + "'");
    if (std::any_of(out.begin(), out.end(), [&](const InputQp &q) { return q.weight == weight; }))
      throw Failure(where + ": a second set of samples for '" + weight + "'");
    if (!float_entry(data.get(), i, p.e.type)) throw Failure(where + ": samples are float tensors, not " + p.e.type);
    std::vector<float> x = source_f32(data.get(), p);
    qnt_tensor *xp = nullptr;
    check(qnt_tensor_wrap(QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr, x.data(), 4 * x.size(), &xp),
          where);
    const TensorP xt(xp);
    qnt_calibrator *cal = nullptr;
    check(qnt_calibrator_create(method, dtype, scheme, QNT_GRANULARITY_PER_TENSOR, 0, &cal), where);
    const std::unique_ptr<qnt_calibrator, void (*)(qnt_calibrator *)> ch(cal, qnt_calibrator_destroy);
    if (o.percentile > 0) check(qnt_calibrator_set_option(cal, QNT_CALIB_OPT_PERCENTILE, o.percentile), "--percentile");
    check(qnt_calibrator_observe(ctx, cal, xt.get()), where);
    qnt_qparams *qp = nullptr;
    check(qnt_calibrator_compute(ctx, cal, &qp), where);
    InputQp r{weight, Qp(qp), o.method};
    if (method == QNT_CALIB_ADAPTIVE) {
      qnt_calib_method chosen = 0;
      check(qnt_calibrator_chosen_method(cal, &chosen), where);
      for (const char *m : {"minmax", "percentile", "entropy", "mse"})
        if (method_of(m) == chosen) r.method = std::string("adaptive: ") + m;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// The input qparams for the writer: those calibrated now, and those the input file carries for
// the other tensors it keeps.
void record_inputs(const std::vector<InputQp> &fresh, const qnt_model_file *in, qnt_model_writer *w,
                   const std::vector<std::string> &written) {
  for (const InputQp &q : fresh) check(qnt_model_writer_set_input_qparams(w, q.weight.c_str(), q.qp.get()), q.weight);
  for (const std::string &name : written) {
    if (std::any_of(fresh.begin(), fresh.end(), [&](const InputQp &q) { return q.weight == name; })) continue;
    size_t i = 0;
    check(qnt_model_file_tensor_find(in, name.c_str(), &i), name);
    qnt_qparams *qp = nullptr;
    check(qnt_model_file_tensor_input_qparams(in, i, &qp), name);
    const Qp h(qp);
    if (qp != nullptr) check(qnt_model_writer_set_input_qparams(w, name.c_str(), qp), name);
  }
}

void print_inputs(const QuantOptions &o, const std::vector<InputQp> &inputs) {
  if (o.quiet || inputs.empty()) return;
  std::printf("  inputs calibrated from %s (%s, %s): %zu\n", o.calibrate.c_str(), o.act_type.c_str(), o.method.c_str(),
              inputs.size());
  std::printf("  %-48s %14s %11s  %s\n", "input of", "scale", "zero point", "method");
  for (const InputQp &q : inputs) {
    float s = 0;
    int32_t z = 0;
    check(qnt_qparams_scales(q.qp.get(), &s, 1), q.weight);
    check(qnt_qparams_zero_points(q.qp.get(), &z, 1), q.weight);
    std::printf("  %-48s %14.7g %11d  %s\n", q.weight.c_str(), static_cast<double>(s), static_cast<int>(z),
                q.method.c_str());
  }
}

// The closing table: tensors, bytes in -> out and their ratio, the time, and each quantized
// tensor's SQNR, worst first.
void print_summary(const QuantOptions &o, size_t tensors, std::vector<Row> rows, double in_bytes, double out_bytes,
                   double secs) {
  if (o.quiet) return;
  std::sort(rows.begin(), rows.end(), [](const Row &a, const Row &b) { return a.sqnr < b.sqnr; });
  std::printf("%s -> %s (%s)\n", o.in.c_str(), o.out.c_str(),
              o.type.empty() ? ("--budget " + o.budget + " among " + o.formats).c_str() : o.type.c_str());
  std::printf("  tensors: %zu (%zu quantized, %zu kept)\n", tensors, rows.size(), tensors - rows.size());
  std::printf("  bytes:   %s -> %s (ratio %.2f)\n", human_bytes(in_bytes).c_str(), human_bytes(out_bytes).c_str(),
              out_bytes > 0 ? in_bytes / out_bytes : 0.0);
  std::printf("  time:    %.2f s (%s/s)\n", secs, human_bytes(secs > 0 ? in_bytes / secs : 0).c_str());
  if (rows.empty()) return;
  std::printf("  %-48s %10s %12s %12s\n", "quantized tensor (worst SQNR first)", "SQNR dB", "bytes in", "bytes out");
  for (const Row &r : rows) std::printf("  %-48s %10.2f %12zu %12zu\n", r.name.c_str(), r.sqnr, r.in, r.out);
}

// 10 log10(sum x^2 / sum (x - y)^2) in double precision over the finite x (+inf when exact).
double sqnr_db(const std::vector<float> &x, const std::vector<float> &y) {
  double sig = 0, err = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    sig += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    err += d * d;
  }
  return err > 0 ? 10.0 * std::log10(sig / err) : (sig > 0 ? HUGE_VAL : 0.0);
}

// Metadata key k of `in` copied into the GGUF writer w with its type.
void copy_typed_metadata(const qnt_model_file *in, qnt_model_writer *w, const char *k) {
  qnt_meta_type type = 0, elem = 0;
  size_t count = 0;
  check(qnt_model_file_metadata_type(in, k, &type, &elem, &count), k);
  std::vector<int64_t> iv(count);
  std::vector<uint64_t> uv(count);
  std::vector<double> dv(count);
  std::vector<const char *> sv(count);
  std::vector<uint8_t> raw(8 * count + 8);
  for (size_t i = 0; i < count; ++i) {
    switch (elem) {
      case QNT_META_STRING: check(qnt_model_file_metadata_string_at(in, k, i, &sv[i]), k); break;
      case QNT_META_FLOAT32: case QNT_META_FLOAT64: check(qnt_model_file_metadata_float(in, k, i, &dv[i]), k); break;
      case QNT_META_UINT8: case QNT_META_UINT16: case QNT_META_UINT32: case QNT_META_UINT64:
        check(qnt_model_file_metadata_uint(in, k, i, &uv[i]), k);
        break;
      default: check(qnt_model_file_metadata_int(in, k, i, &iv[i]), k); break;
    }
    uint8_t *at = raw.data() + 8 * i;
    switch (elem) {  // each value in the C type of its size
      case QNT_META_UINT8: { const auto v = static_cast<uint8_t>(uv[i]); std::memcpy(raw.data() + i, &v, 1); break; }
      case QNT_META_INT8: case QNT_META_BOOL: { const auto v = static_cast<int8_t>(iv[i]); std::memcpy(raw.data() + i, &v, 1); break; }
      case QNT_META_UINT16: { const auto v = static_cast<uint16_t>(uv[i]); std::memcpy(raw.data() + 2 * i, &v, 2); break; }
      case QNT_META_INT16: { const auto v = static_cast<int16_t>(iv[i]); std::memcpy(raw.data() + 2 * i, &v, 2); break; }
      case QNT_META_UINT32: { const auto v = static_cast<uint32_t>(uv[i]); std::memcpy(raw.data() + 4 * i, &v, 4); break; }
      case QNT_META_INT32: { const auto v = static_cast<int32_t>(iv[i]); std::memcpy(raw.data() + 4 * i, &v, 4); break; }
      case QNT_META_FLOAT32: { const auto v = static_cast<float>(dv[i]); std::memcpy(raw.data() + 4 * i, &v, 4); break; }
      case QNT_META_UINT64: std::memcpy(at, &uv[i], 8); break;
      case QNT_META_INT64: std::memcpy(at, &iv[i], 8); break;
      case QNT_META_FLOAT64: std::memcpy(at, &dv[i], 8); break;
      default: break;
    }
  }
  const void *values = elem == QNT_META_STRING ? static_cast<const void *>(sv.data()) : raw.data();
  if (type == QNT_META_ARRAY)
    check(qnt_model_writer_set_metadata_array(w, k, elem, values, count), k);
  else
    check(qnt_model_writer_set_metadata_scalar(w, k, elem, values), k);
}

// `qnt quantize` into GGUF: float matrices whose rows are whole blocks (32, or 256 for the
// K-quants and the ternary types) become the ggml
// block type; the rest keeps its type (GGUF's block types as their bytes).
// --budget: "4.5bpw" (bits per weight over the tensors it chooses for), "12MB" / "12MiB" / "12000000"
// (bytes) or "20dB" (the least SQNR of every tensor).
struct BudgetSpec {
  qnt_budget kind = QNT_BUDGET_BYTES;
  double value = 0;
  bool per_weight = false;  // value is bits per weight
};

BudgetSpec parse_budget(const std::string &text) {
  std::string s = text;
  for (char &ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  struct Unit {
    const char *suffix;
    double scale;
    int kind;  // 0 bytes, 1 bits per weight, 2 dB
  };
  const Unit units[] = {{"bpw", 1, 1}, {"db", 1, 2}, {"kib", 1024.0, 0}, {"mib", 1048576.0, 0}, {"gib", 1073741824.0, 0},
                        {"kb", 1e3, 0},  {"mb", 1e6, 0}, {"gb", 1e9, 0}, {"b", 1, 0}, {"", 1, 0}};
  for (const Unit &u : units) {
    if (!ends_with(s, u.suffix)) continue;
    const std::string num = s.substr(0, s.size() - std::strlen(u.suffix));
    char *end = nullptr;
    const double v = num.empty() ? NAN : std::strtod(num.c_str(), &end);
    if (end == nullptr || *end != '\0' || !std::isfinite(v) || (u.kind != 2 && v <= 0))
      break;
    BudgetSpec b;
    b.kind = u.kind == 2 ? QNT_BUDGET_MIN_SQNR : QNT_BUDGET_BYTES;
    b.value = v * u.scale;
    b.per_weight = u.kind == 1;
    return b;
  }
  throw Failure("--budget " + text + ": bits per weight (4.5bpw), bytes (12MB, 12MiB, 12000000) or a least SQNR (20dB)");
}

std::vector<std::string> split_formats(const std::string &list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t end = std::min(list.find(',', at), list.size());
    if (end > at) out.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  if (out.empty()) throw Failure("--formats: a comma-separated list of formats (i8,i4.b128,nf4.b64,q4_k,...)");
  return out;
}

// The recommender over the tensors of `in` at `indices` (float values): a format per tensor
// under the budget, by name; tensors no format applies to are left out. Prints the report.
std::vector<std::pair<std::string, std::string>> recommend_formats(const qnt_model_file *in,
                                                                   const std::vector<size_t> &indices,
                                                                   const std::vector<std::string> &formats,
                                                                   const BudgetSpec &budget, int threads, bool quiet) {
  qnt_context *c = nullptr;
  check(qnt_context_create(&c), "context");
  const Ctx ctx(c);
  if (threads > 0) check(qnt_context_set_num_threads(c, threads), "--threads");
  qnt_recommender *rp = nullptr;
  check(qnt_recommender_create(&rp), "recommender");
  const std::unique_ptr<qnt_recommender, void (*)(qnt_recommender *)> rec(rp, qnt_recommender_destroy);
  for (const std::string &f : formats) check(qnt_recommender_add_format(rp, f.c_str()), "--formats " + f);
  double weights = 0;
  std::vector<std::string> left_out;
  for (size_t i : indices) {
    Plan p;
    p.e = entry(in, i);
    p.index = i;
    std::vector<float> x = source_f32(in, p);
    qnt_tensor *xp = nullptr;
    check(qnt_tensor_wrap(QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr, x.data(), 4 * x.size(), &xp),
          p.e.name);
    const TensorP xt(xp);
    const qnt_status s = qnt_recommender_add_tensor(c, rp, p.e.name.c_str(), xt.get(), nullptr, 0);
    if (s == QNT_ERR_UNSUPPORTED) {
      left_out.push_back(p.e.name);
      continue;
    }
    check(s, p.e.name);
    weights += static_cast<double>(x.size());
  }
  std::vector<std::pair<std::string, std::string>> out;
  if (weights == 0) return out;
  const double value = budget.per_weight ? std::floor(budget.value * weights / 8.0) : budget.value;
  check(qnt_recommender_run(rp, budget.kind, value), "--budget");
  size_t n = 0;
  check(qnt_recommender_tensor_count(rp, &n), "recommender");
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    const char *name = nullptr, *format = nullptr;
    uint64_t bytes = 0;
    check(qnt_recommender_choice(rp, i, &name, &format, &bytes, nullptr), "recommender");
    out.emplace_back(name, format);
    total += bytes;
  }
  if (!quiet) {
    const char *report = nullptr;
    check(qnt_recommender_report(rp, &report), "recommender");
    std::printf("%s", report);
    std::printf("%.3f bits per weight over %.0f weights", 8.0 * static_cast<double>(total) / weights, weights);
    if (!left_out.empty()) std::printf("; %zu tensor(s) no format applies to stay as they are", left_out.size());
    std::printf("\n");
  }
  return out;
}

int recommend(const QuantOptions &o) {
  if (o.budget.empty() || o.formats.empty()) throw Failure("recommend needs --formats and --budget");
  const BudgetSpec budget = parse_budget(o.budget);
  const std::vector<std::string> formats = split_formats(o.formats);
  const auto keep = keep_patterns(o);
  const File in = open_file(o.in);
  size_t n = 0;
  check(qnt_model_file_tensor_count(in.get(), &n), o.in);
  std::vector<size_t> indices;
  for (size_t i = 0; i < n; ++i) {
    const EntryInfo e = entry(in.get(), i);
    if (ends_with(e.name, ".qnt_scales") || ends_with(e.name, ".qnt_zero_points")) continue;
    const char *q = nullptr;
    const bool qnt_quant = qnt_model_file_metadata_string(in.get(), ("qnt." + e.name).c_str(), &q) == QNT_OK;
    if (!(qnt_quant || float_entry(in.get(), i, e.type)) || e.shape.size() < 2) continue;
    if (std::any_of(e.shape.begin(), e.shape.end(), [](int64_t d) { return d == 0; })) continue;
    if (std::any_of(keep.begin(), keep.end(), [&](const std::regex &r) { return std::regex_search(e.name, r); }))
      continue;
    indices.push_back(i);
  }
  if (indices.empty()) throw Failure(o.in + ": no float weight of two or more axes to choose formats for");
  recommend_formats(in.get(), indices, formats, budget, o.threads, false);
  return 0;
}

int quantize_gguf(const QuantOptions &o) {
  const bool mixed = !o.budget.empty();
  if (mixed != o.type.empty())
    throw Failure(mixed ? "--type and --budget: one or the other (--budget chooses a type per tensor among --formats)"
                        : "--type (or --budget with --formats) is required");
  const char *types[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "TQ1_0", "TQ2_0", "F16", "BF16"};
  auto upper = [](std::string s) {
    for (char &ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
  };
  auto block_of = [](const std::string &t) -> int64_t {
    return t == "F16" || t == "BF16" ? 1 : t.back() == 'K' || t[0] == 'T' ? 256 : 32;
  };
  std::vector<std::string> candidates = mixed ? split_formats(o.formats) : std::vector<std::string>{o.type};
  int64_t qblock = 0;
  for (std::string &t : candidates) {
    t = upper(t);
    if (std::none_of(std::begin(types), std::end(types), [&](const char *k) { return t == k; }))
      throw Failure((mixed ? "--formats " : "--type ") + t +
                    ": GGUF output takes q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, iq4_nl, tq1_0, tq2_0, f16 or bf16");
    qblock = qblock == 0 ? block_of(t) : std::min(qblock, block_of(t));
  }
  const std::string type = candidates.front();
  if (o.block != 0 || o.per_channel) throw Failure("--block and --per-channel are qnt's schemes; ggml's types fix their blocks");
  if (o.calibrate.empty() && o.method != "minmax")
    throw Failure("--method " + o.method + ": ggml's types fix how their scales are chosen (--method goes with "
                  "--calibrate for GGUF output)");
  if (o.percentile != 0 && o.method != "percentile" && o.method != "adaptive")
    throw Failure("--percentile goes with --method percentile or adaptive");
  const auto keep = keep_patterns(o);
  const File in = open_file(o.in);
  size_t n = 0, meta = 0;
  check(qnt_model_file_tensor_count(in.get(), &n), o.in);
  check(qnt_model_file_metadata_count(in.get(), &meta), o.in);
  std::vector<InputQp> inputs;
  if (!o.calibrate.empty()) {
    qnt_context *c = nullptr;
    check(qnt_context_create(&c), "context");
    const Ctx ctx(c);
    if (o.threads > 0) check(qnt_context_set_num_threads(c, o.threads), "--threads");
    inputs = calibrate_inputs(o, c, in.get());
  }
  qnt_model_writer *wp = nullptr;
  check(qnt_model_writer_create(o.out.c_str(), QNT_FILE_GGUF, &wp), o.out);
  const Writer w(wp);
  for (size_t i = 0; i < meta; ++i) {
    const char *k = nullptr;
    check(qnt_model_file_metadata_key(in.get(), i, &k), o.in);
    if (std::strncmp(k, "qnt.", 4) == 0 || std::strncmp(k, "qnt:", 4) == 0 || std::strcmp(k, "general.alignment") == 0)
      continue;
    copy_typed_metadata(in.get(), w.get(), k);
  }
  struct G {
    EntryInfo e;
    size_t index;
    int how;  // 0 bytes, 1 plain tensor, 2 from float32 into `type`
  };
  std::vector<G> plan;
  double in_bytes = 0;
  // Which tensors are quantized (the others are kept), and with --budget, each one's type.
  auto kept_entry = [&](size_t i, const EntryInfo &e, bool &qnt_quant) {
    const char *q = nullptr;
    qnt_quant = qnt_model_file_metadata_string(in.get(), ("qnt." + e.name).c_str(), &q) == QNT_OK;
    const bool is_float = qnt_quant || float_entry(in.get(), i, e.type);
    bool kept = !is_float || e.shape.size() < 2 || e.shape.back() % qblock != 0 ||
                std::any_of(e.shape.begin(), e.shape.end(), [](int64_t d) { return d == 0; });
    for (const std::regex &r : keep) kept = kept || std::regex_search(e.name, r);
    return kept;
  };
  std::vector<std::pair<std::string, std::string>> chosen;
  if (mixed) {
    std::vector<size_t> indices;
    for (size_t i = 0; i < n; ++i) {
      const EntryInfo e = entry(in.get(), i);
      bool qnt_quant = false;
      if (ends_with(e.name, ".qnt_scales") || ends_with(e.name, ".qnt_zero_points")) continue;
      if (!kept_entry(i, e, qnt_quant)) indices.push_back(i);
    }
    chosen = recommend_formats(in.get(), indices, candidates, parse_budget(o.budget), o.threads, o.quiet);
  }
  for (size_t i = 0; i < n; ++i) {
    G g{entry(in.get(), i), i, 0};
    const std::string &name = g.e.name;
    if (ends_with(name, ".qnt_scales") || ends_with(name, ".qnt_zero_points")) continue;
    in_bytes += static_cast<double>(g.e.bytes);
    bool qnt_quant = false;
    bool kept = kept_entry(i, g.e, qnt_quant);
    std::string ttype = type;
    if (mixed && !kept) {  // the recommender's type, or kept where no candidate applied
      const auto at = std::find_if(chosen.begin(), chosen.end(), [&](const auto &c) { return c.first == name; });
      if (at == chosen.end()) kept = true;
      else ttype = upper(at->second);
    }
    if (!kept || qnt_quant) {
      g.how = 2;
      check(qnt_model_writer_declare_ggml(w.get(), name.c_str(), kept ? "F32" : ttype.c_str(), g.e.shape.data(),
                                          g.e.shape.size()),
            name);
    } else if (is_qnt_type(g.e.type) && g.e.type != "U8" && g.e.type != "U16") {
      g.how = 1;
      const TensorP t = tensor_at(in.get(), i, name);
      qnt_dtype d = 0;
      check(qnt_tensor_dtype(t.get(), &d), name);
      check(qnt_model_writer_declare(w.get(), name.c_str(), d, g.e.shape.data(), g.e.shape.size(), nullptr), name);
    } else {
      const void *data = nullptr;
      check(qnt_model_file_tensor_bytes(in.get(), i, &data, &g.e.bytes), name);
      check(qnt_model_writer_declare_bytes(w.get(), name.c_str(), g.e.type.c_str(), g.e.shape.data(),
                                           g.e.shape.size(), g.e.bytes),
            name);
    }
    plan.push_back(std::move(g));
  }
  {
    std::vector<std::string> names;
    for (const G &g : plan) names.push_back(g.e.name);
    record_inputs(inputs, in.get(), w.get(), names);
  }
  Progress progress(o.quiet, plan.size(), in_bytes);
  double done_bytes = 0;
  size_t done = 0;
  for (const G &g : plan) {
    const std::string &name = g.e.name;
    if (g.how == 2) {
      Plan p;
      p.e = g.e;
      p.index = g.index;
      std::vector<float> x = source_f32(in.get(), p);
      qnt_tensor *xp = nullptr;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, g.e.shape.data(), g.e.shape.size(), nullptr, x.data(), 4 * x.size(), &xp), name);
      const TensorP xt(xp);
      check(qnt_model_writer_write(w.get(), xt.get()), name);
    } else if (g.how == 1) {
      check(qnt_model_writer_write(w.get(), tensor_at(in.get(), g.index, name).get()), name);
    } else {
      const void *data = nullptr;
      size_t bytes = 0;
      check(qnt_model_file_tensor_bytes(in.get(), g.index, &data, &bytes), name);
      check(qnt_model_writer_write_bytes(w.get(), data, bytes), name);
    }
    done_bytes += static_cast<double>(g.e.bytes);
    progress.step(name, done_bytes, ++done);
  }
  check(qnt_model_writer_finish(w.get()), o.out);
  const double secs = progress.seconds();
  if (o.quiet) return 0;
  // The SQNR of each tensor written as a block type: its values read back from the finished file
  // (ggml's dequantization) against the float32 values it was made from, one tensor at a time.
  std::vector<Row> rows;
  const File done_file = open_file(o.out);
  size_t out_bytes = 0;
  for (const G &g : plan) {
    size_t oi = 0;
    check(qnt_model_file_tensor_find(done_file.get(), g.e.name.c_str(), &oi), o.out);
    const EntryInfo oe = entry(done_file.get(), oi);
    out_bytes += oe.bytes;
    if (g.how != 2 || oe.type == "F32") continue;
    Plan p;
    p.e = g.e;
    p.index = g.index;
    Plan q;
    q.e = oe;
    q.index = oi;
    const std::vector<float> x = source_f32(in.get(), p), y = as_f32(done_file.get(), q, nullptr);
    rows.push_back({g.e.name, sqnr_db(x, y), g.e.bytes, oe.bytes});
  }
  print_summary(o, plan.size(), rows, in_bytes, static_cast<double>(out_bytes), secs);
  print_inputs(o, inputs);
  return 0;
}

int quantize(const QuantOptions &o) {
  if (ends_with(o.out, ".gguf")) return quantize_gguf(o);
  if (!ends_with(o.out, ".safetensors"))
    throw Failure(o.out + ": the output is a .safetensors or a .gguf file");
  if (!o.budget.empty() || !o.formats.empty())
    throw Failure("--budget and --formats choose GGUF types: write a .gguf (or see `qnt recommend` for qnt's formats)");
  if (o.type.empty()) throw Failure("--type is required");
  const Target tgt = target_of(o.type);
  const bool four_bit = tgt.dtype == QNT_DTYPE_I4 || tgt.dtype == QNT_DTYPE_U4 || tgt.dtype == QNT_DTYPE_NF4;
  if (o.block < 0) throw Failure("--block must be positive");
  const int64_t block = o.per_channel ? 0 : (o.block > 0 ? o.block : (four_bit ? 32 : 0));
  // --method: how each channel's scale is chosen (qnt_calibrator's methods over the weights),
  // or, with --calibrate, how the inputs' ranges are (the weights then take min-max).
  const qnt_calib_method method = o.calibrate.empty() ? method_of(o.method) : QNT_CALIB_MINMAX;
  if (method != QNT_CALIB_MINMAX && (block > 0 || tgt.dtype == QNT_DTYPE_NF4))
    throw Failure("--method " + o.method + ": the calibrators choose per-tensor or per-channel qparams of the integer "
                  "dtypes; use --per-channel (blocks and NF4 take min-max and absmax)");
  if (o.percentile != 0 && o.method != "percentile" && o.method != "adaptive")
    throw Failure("--percentile goes with --method percentile or adaptive");
  const auto keep = keep_patterns(o);
  Ctx ctx;
  {
    qnt_context *c = nullptr;
    check(qnt_context_create(&c), "context");
    ctx.reset(c);
    if (o.threads > 0) check(qnt_context_set_num_threads(c, o.threads), "--threads");
  }
  const File in = open_file(o.in);
  size_t n = 0, meta = 0;
  check(qnt_model_file_tensor_count(in.get(), &n), o.in);
  check(qnt_model_file_metadata_count(in.get(), &meta), o.in);
  const std::vector<InputQp> inputs = calibrate_inputs(o, ctx.get(), in.get());
  qnt_model_writer *wp = nullptr;
  check(qnt_model_writer_create(o.out.c_str(), QNT_FILE_SAFETENSORS, &wp), o.out);
  const Writer w(wp);
  for (size_t i = 0; i < meta; ++i) {
    const char *k = nullptr, *v = nullptr;
    check(qnt_model_file_metadata_key(in.get(), i, &k), o.in);
    if (std::strncmp(k, "qnt.", 4) == 0 || std::strncmp(k, "qnt:", 4) == 0) continue;  // qnt's own: rewritten
    // (safetensors metadata holds strings: GGUF's other values go as their text)
    if (qnt_model_file_metadata_string(in.get(), k, &v) == QNT_OK) {
      check(qnt_model_writer_set_metadata(w.get(), k, v), k);
    } else {
      check(qnt_model_writer_set_metadata(w.get(), k, meta_text(in.get(), k).c_str()), k);
    }
  }
  // Pass 1: what each tensor becomes, declared.
  std::vector<Plan> plans;
  double in_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    Plan p;
    p.index = i;
    p.e = entry(in.get(), i);
    in_bytes += static_cast<double>(p.e.bytes);
    const std::string &name = p.e.name;
    if (ends_with(name, ".qnt_scales") || ends_with(name, ".qnt_zero_points")) continue;  // with their tensor
    const std::string key = "qnt." + name;
    const char *q = nullptr;
    if (qnt_model_file_metadata_string(in.get(), key.c_str(), &q) == QNT_OK) {
      p.requantized = true;
      qnt_tensor *tp = nullptr;
      check(qnt_model_file_tensor(in.get(), i, &tp), name);
      const TensorP t(tp);
      qnt_qparams *qp = nullptr;
      qnt_dtype d = 0;
      size_t rank = 0;
      int64_t dims[QNT_MAX_RANK];
      check(qnt_tensor_qparams(t.get(), &qp), name);
      const Qp qh(qp);
      check(qnt_tensor_dtype(t.get(), &d), name);
      check(qnt_tensor_rank(t.get(), &rank), name);
      check(qnt_tensor_shape(t.get(), dims, QNT_MAX_RANK), name);
      check(qnt_model_writer_declare(w.get(), name.c_str(), d, dims, rank, qp), name);
      plans.push_back(std::move(p));
      continue;
    }
    // Float weights: F32, F16, BF16, and GGUF's block types, which come in dequantized.
    const bool is_block = !is_qnt_type(p.e.type) && dequantizes(in.get(), i);
    const bool is_float = float_entry(in.get(), i, p.e.type);
    // Kept: what is not a float matrix (norms, biases, integer tensors), an empty tensor, and
    // the names the keep patterns match.
    bool kept = !is_float || p.e.shape.size() < 2 ||
                std::any_of(p.e.shape.begin(), p.e.shape.end(), [](int64_t d) { return d == 0; });
    for (const std::regex &r : keep) kept = kept || std::regex_search(name, r);
    if (kept && is_block) {  // written as its float32 values
      p.dequantized = true;
      check(qnt_model_writer_declare(w.get(), name.c_str(), QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr),
            name);
      plans.push_back(std::move(p));
      continue;
    }
    if (kept) {
      if (is_qnt_type(p.e.type)) {
        const TensorP t = tensor_at(in.get(), i, name);
        qnt_dtype d = 0;
        check(qnt_tensor_dtype(t.get(), &d), name);
        check(qnt_model_writer_declare(w.get(), name.c_str(), d, p.e.shape.data(), p.e.shape.size(), nullptr), name);
      } else {
        check(qnt_model_writer_declare_bytes(w.get(), name.c_str(), p.e.type.c_str(), p.e.shape.data(),
                                             p.e.shape.size(), p.e.bytes),
              name);
      }
      plans.push_back(std::move(p));
      continue;
    }
    p.quantize = true;
    p.count = 1;
    for (int64_t d : p.e.shape) p.count *= static_cast<size_t>(d);
    const auto rank = static_cast<int64_t>(p.e.shape.size());
    if (block > 0) {  // blocks along the last axis (a weight's input features)
      p.gran = QNT_GRANULARITY_PER_BLOCK;
      p.axis = rank - 1;
      p.block = block;
      const int64_t last = p.e.shape.back();
      p.groups = p.count / static_cast<size_t>(std::max<int64_t>(last, 1)) *
                 static_cast<size_t>((last + block - 1) / block);
      if (last == 0) p.groups = 0;
    } else {  // per output channel
      p.gran = QNT_GRANULARITY_PER_AXIS;
      p.axis = 0;
      p.groups = static_cast<size_t>(p.e.shape[0]);
    }
    // The layout: scales 1 and, for the affine types, nonzero zero points (stored).
    std::vector<float> ones(std::max<size_t>(p.groups, 1), 1.0f);
    std::vector<int32_t> zps(std::max<size_t>(p.groups, 1), tgt.affine ? 1 : 0);
    qnt_qparams *lp = nullptr;
    if (p.gran == QNT_GRANULARITY_PER_BLOCK)
      check(qnt_qparams_create_per_block(tgt.dtype, p.axis, p.block, p.groups, ones.data(), zps.data(), &lp), name);
    else
      check(qnt_qparams_create_per_axis(tgt.dtype, p.axis, p.groups, ones.data(), zps.data(), &lp), name);
    const Qp layout(lp);
    check(qnt_model_writer_declare(w.get(), name.c_str(), tgt.dtype, p.e.shape.data(), p.e.shape.size(), lp), name);
    plans.push_back(std::move(p));
  }
  {
    std::vector<std::string> names;
    for (const Plan &p : plans) names.push_back(p.e.name);
    record_inputs(inputs, in.get(), w.get(), names);
  }
  // Pass 2: each tensor converted and written, one at a time.
  Progress progress(o.quiet, plans.size(), in_bytes);
  std::vector<Row> rows;
  double done_bytes = 0;
  size_t out_bytes = 0, done = 0;
  for (const Plan &p : plans) {
    const std::string &name = p.e.name;
    if (p.requantized) {
      qnt_tensor *tp = nullptr;
      check(qnt_model_file_tensor(in.get(), p.index, &tp), name);
      const TensorP t(tp);
      check(qnt_model_writer_write(w.get(), t.get()), name);
      size_t b = 0;
      check(qnt_tensor_byte_size(t.get(), &b), name);
      out_bytes += b;
    } else if (p.dequantized) {
      std::vector<float> x = as_f32(in.get(), p, nullptr);
      qnt_tensor *xp = nullptr;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr, x.data(), 4 * x.size(), &xp),
            name);
      const TensorP xt(xp);
      check(qnt_model_writer_write(w.get(), xt.get()), name);
      out_bytes += 4 * x.size();
    } else if (!p.quantize) {
      if (is_qnt_type(p.e.type)) {
        check(qnt_model_writer_write(w.get(), tensor_at(in.get(), p.index, name).get()), name);
      } else {
        const void *data = nullptr;
        size_t bytes = 0;
        check(qnt_model_file_tensor_bytes(in.get(), p.index, &data, &bytes), name);
        check(qnt_model_writer_write_bytes(w.get(), data, bytes), name);
      }
      out_bytes += p.e.bytes;
    } else {
      std::vector<float> x = source_f32(in.get(), p);
      qnt_tensor *xp = nullptr, *yp = nullptr;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, p.e.shape.data(), p.e.shape.size(), nullptr, x.data(),
                            4 * x.size(), &xp),
            name);
      const TensorP xt(xp);
      qnt_qparams *qp = nullptr;
      if (tgt.dtype == QNT_DTYPE_NF4) {
        check(qnt_calibrate_codebook(ctx.get(), xt.get(), tgt.dtype, p.gran, p.axis, p.block, &qp), name);
      } else if (method != QNT_CALIB_MINMAX) {
        // A calibrator's search over each channel's histogram of the weights themselves.
        qnt_calibrator *cal = nullptr;
        check(qnt_calibrator_create(method, tgt.dtype, tgt.affine ? QNT_SCHEME_AFFINE : QNT_SCHEME_SYMMETRIC, p.gran,
                                    p.axis, &cal),
              name);
        const std::unique_ptr<qnt_calibrator, void (*)(qnt_calibrator *)> ch(cal, qnt_calibrator_destroy);
        if (o.percentile > 0) check(qnt_calibrator_set_option(cal, QNT_CALIB_OPT_PERCENTILE, o.percentile), "--percentile");
        check(qnt_calibrator_observe(ctx.get(), cal, xt.get()), name);
        check(qnt_calibrator_compute(ctx.get(), cal, &qp), name);
      } else {
        check(qnt_calibrate_minmax(ctx.get(), xt.get(), tgt.dtype,
                                   tgt.affine ? QNT_SCHEME_AFFINE : QNT_SCHEME_SYMMETRIC, p.gran, p.axis,
                                   p.block, &qp),
              name);
      }
      const Qp qh(qp);
      check(qnt_tensor_create(tgt.dtype, p.e.shape.data(), p.e.shape.size(), qp, &yp), name);
      const TensorP yt(yp);
      check(qnt_quantize(ctx.get(), xt.get(), yt.get()), name);
      qnt_error_report rep{};
      check(qnt_error_report_compute(ctx.get(), xt.get(), qp, &rep, sizeof rep), name);
      check(qnt_model_writer_write(w.get(), yt.get()), name);
      size_t b = 0;
      check(qnt_tensor_byte_size(yt.get(), &b), name);
      b += p.groups * (tgt.affine ? 8 : 4);
      out_bytes += b;
      rows.push_back({name, rep.sqnr_db, p.e.bytes, b});
    }
    done_bytes += static_cast<double>(p.e.bytes);
    progress.step(name, done_bytes, ++done);
  }
  check(qnt_model_writer_finish(w.get()), o.out);
  print_summary(o, plans.size(), rows, in_bytes, static_cast<double>(out_bytes), progress.seconds());
  print_inputs(o, inputs);
  return 0;
}

// ---------------------------------------------------------------------------------------------
// `qnt bench`: this machine's limit for the weight-only layer (the read bandwidth: a streaming
// sum over 512 MiB on 1 and on all threads) and qnt's kernels against it, measured in the same
// run. The weight-only layer (4096 x 4096, batch 1; int4 blocks of 32 and 128; both modes) reads
// its weights from DRAM: copies rotated, twice the size of a 64 MiB cache. The int8 GEMM
// (1024^3, prepared B) is reported in GOPS: its limit, the machine's multiply peak, needs the
// instructions themselves (scripts/bench.sh measures it, with oneDNN beside).

double best_of(int reps, const std::function<void()> &f) {
  f();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// A streaming sum over buf (512 MiB, made once by bench: the readings are taken in turns with
// every weight-only row) on `threads`, GB/s.
double read_bandwidth(const std::vector<uint64_t> &buf, int threads) {
  const size_t n = buf.size();
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  const double t = best_of(3, [&] {
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k)
      pool.emplace_back([&, k] {
        const size_t a = n * static_cast<size_t>(k) / static_cast<size_t>(threads);
        const size_t b = n * static_cast<size_t>(k + 1) / static_cast<size_t>(threads);
        uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        size_t i = a;
        for (; i + 4 <= b; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
        for (; i < b; ++i) s0 += buf[i];
        sums[static_cast<size_t>(k) * 8] = s0 + s1 + s2 + s3;
      });
    for (auto &th : pool) th.join();
  });
  volatile uint64_t sink = std::accumulate(sums.begin(), sums.end(), uint64_t{0});
  (void)sink;
  return static_cast<double>(n * sizeof(uint64_t)) / t / 1e9;
}

// The best time of a prepared weight-only layer of w in `mode`, run over `copies` copies in turn
// (so that the weights stream from memory), and in *bw the read bandwidth over rbuf on
// `threads`, the two measured in four alternating turns: on a shared machine whose bandwidth
// drifts over seconds, the layer's share of it then compares readings of the same phases.
double time_weight_only(qnt_context *c, const qnt_tensor *w, int64_t mode, int copies, const qnt_tensor *x,
                        qnt_tensor *y, const std::vector<uint64_t> &rbuf, int threads, double *bw) {
  qnt_op_desc *d = nullptr;
  check(qnt_op_desc_create(&d), "desc");
  const std::unique_ptr<qnt_op_desc, void (*)(qnt_op_desc *)> dh(d, qnt_op_desc_destroy);
  check(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, mode), "desc");
  std::vector<std::unique_ptr<qnt_prepared, void (*)(qnt_prepared *)>> ops;
  for (int i = 0; i < copies; ++i) {
    qnt_prepared *op = nullptr;
    check(qnt_prepared_create_linear_weight_only(c, w, nullptr, d, &op), "prepare");
    ops.emplace_back(op, qnt_prepared_destroy);
  }
  size_t at = 0;
  double best = 1e30;
  *bw = 0;
  for (int turn = 0; turn < 4; ++turn) {
    best = std::min(best, best_of(5 * copies, [&] {
                      check(qnt_prepared_run(c, ops[at].get(), x, y), "run");
                      at = (at + 1) % ops.size();
                    }));
    *bw = std::max(*bw, read_bandwidth(rbuf, threads));
  }
  return best;
}

int bench(int threads_opt) {
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> counts{1};
  const int top = threads_opt > 0 ? threads_opt : hw;
  if (top > 1) counts.push_back(top);
  qnt_context *c = nullptr;
  check(qnt_context_create(&c), "context");
  const Ctx ctx(c);
  const char *kernels = nullptr;
  check(qnt_context_kernels(c, &kernels), "kernels");
  qnt_isa isa = 0;
  check(qnt_context_isa(c, &isa), "isa");
  std::printf("qnt bench: kernel set %s, %d hardware threads\n", qnt_isa_name(isa), hw);
  // The weights: one f32 matrix, quantized per format, prepared in enough copies.
  const int64_t N = 4096, K = 4096;
  std::vector<float> w(static_cast<size_t>(N * K));
  uint32_t r = 12345;
  for (auto &v : w) {
    r = r * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int32_t>(r >> 8) - (1 << 23)) / static_cast<float>(1 << 23);
  }
  const int64_t wshape[2] = {N, K}, xshape[2] = {1, K}, yshape[2] = {1, N};
  qnt_tensor *wt = nullptr;
  check(qnt_tensor_wrap(QNT_DTYPE_F32, wshape, 2, nullptr, w.data(), 4 * w.size(), &wt), "w");
  const TensorP wf(wt);
  std::vector<float> xv(static_cast<size_t>(K), 0.5f), yv(static_cast<size_t>(N));
  qnt_tensor *xp = nullptr, *yp = nullptr;
  check(qnt_tensor_wrap(QNT_DTYPE_F32, xshape, 2, nullptr, xv.data(), 4 * xv.size(), &xp), "x");
  check(qnt_tensor_wrap(QNT_DTYPE_F32, yshape, 2, nullptr, yv.data(), 4 * yv.size(), &yp), "y");
  const TensorP xt(xp), yt(yp);
  std::vector<uint64_t> rbuf((size_t{512} << 20) / sizeof(uint64_t));
  for (size_t i = 0; i < rbuf.size(); ++i) rbuf[i] = i;
  std::printf("%-46s %8s %10s %10s %8s\n", "work", "threads", "time (ms)", "GB/s", "share");
  for (int th : counts) {
    check(qnt_context_set_num_threads(c, th), "threads");
    const double bw = read_bandwidth(rbuf, th);
    std::printf("%-46s %8d %10s %10.2f %8s\n", "read bandwidth (streaming sum, 512 MiB)", th, "", bw, "1");
    for (int64_t block : {int64_t{32}, int64_t{128}}) {
      qnt_qparams *qp = nullptr;
      check(qnt_calibrate_minmax(c, wf.get(), QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK, 1, block,
                                 &qp),
            "calibrate");
      const Qp qh(qp);
      qnt_tensor *qt = nullptr;
      check(qnt_tensor_create(QNT_DTYPE_I4, wshape, 2, qp, &qt), "w4");
      const TensorP q4(qt);
      check(qnt_quantize(c, wf.get(), q4.get()), "quantize");
      const double bytes = static_cast<double>(N * K / 2) + static_cast<double>(N * K / block) * 4.0;
      const int copies = static_cast<int>(std::max(2.0, 2.0 * 64e6 / bytes + 1));
      for (int64_t mode : {int64_t{QNT_WEIGHT_ONLY_INT8_BLOCK}, int64_t{QNT_WEIGHT_ONLY_INT8_ACT},
                           int64_t{QNT_WEIGHT_ONLY_F32}}) {
        double bwt = 0;
        const double t = time_weight_only(c, q4.get(), mode, copies, xt.get(), yt.get(), rbuf, th, &bwt);
        char label[80];
        std::snprintf(label, sizeof label, "weight-only int4 b%lld %s, M1 4096x4096", static_cast<long long>(block),
                      mode == QNT_WEIGHT_ONLY_F32        ? "f32 mode"
                      : mode == QNT_WEIGHT_ONLY_INT8_ACT ? "W4A8"
                                                         : "block-dot");
        std::printf("%-46s %8d %10.3f %10.2f %8.2f\n", label, th, 1e3 * t, bytes / t / 1e9, bytes / t / 1e9 / bwt);
      }
    }
    // Ternary weights (BitNet's absmean rule), the per-token mode: 2 bits a weight.
    {
      qnt_qparams *qp = nullptr;
      check(qnt_calibrate_codebook(c, wf.get(), QNT_DTYPE_TERNARY, QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp), "ternary");
      const Qp qh(qp);
      qnt_tensor *qt = nullptr;
      check(qnt_tensor_create(QNT_DTYPE_TERNARY, wshape, 2, qp, &qt), "w2");
      const TensorP q2(qt);
      check(qnt_quantize(c, wf.get(), q2.get()), "quantize");
      const double bytes = static_cast<double>(N * K / 4);
      const int copies = static_cast<int>(std::max(2.0, 2.0 * 64e6 / bytes + 1));
      double bwt = 0;
      const double t = time_weight_only(c, q2.get(), QNT_WEIGHT_ONLY_INT8_TOKEN, copies, xt.get(), yt.get(), rbuf, th, &bwt);
      std::printf("%-46s %8d %10.3f %10.2f %8.2f\n", "ternary per token (W1.58A8), M1 4096x4096", th, 1e3 * t,
                  bytes / t / 1e9, bytes / t / 1e9 / bwt);
    }
    // int8 GEMM, prepared B
    const int64_t M = 1024, GK = 1024, GN = 1024;
    std::vector<uint8_t> av(static_cast<size_t>(M * GK)), bv(static_cast<size_t>(GK * GN));
    for (auto &v : av) v = static_cast<uint8_t>((r = r * 1664525u + 1013904223u) >> 24);
    for (auto &v : bv) v = static_cast<uint8_t>((r = r * 1664525u + 1013904223u) >> 24);
    const int64_t as[2] = {M, GK}, bs[2] = {GK, GN}, cs[2] = {M, GN};
    qnt_tensor *at = nullptr, *bt = nullptr, *ct = nullptr;
    check(qnt_tensor_wrap(QNT_DTYPE_U8, as, 2, nullptr, av.data(), av.size(), &at), "a");
    check(qnt_tensor_wrap(QNT_DTYPE_I8, bs, 2, nullptr, bv.data(), bv.size(), &bt), "b");
    check(qnt_tensor_create(QNT_DTYPE_I32, cs, 2, nullptr, &ct), "c");
    const TensorP a8(at), b8(bt), c32(ct);
    qnt_prepared *mm = nullptr;
    check(qnt_prepared_create_matmul(c, b8.get(), nullptr, nullptr, &mm), "matmul");
    const double t = best_of(30, [&] { check(qnt_prepared_run(c, mm, a8.get(), c32.get()), "matmul"); });
    qnt_prepared_destroy(mm);
    std::printf("%-46s %8d %10.3f %10s %8s   %.1f GOPS (u8 x s8 -> s32)\n", "int8 GEMM 1024^3, prepared B", th, 1e3 * t,
                "", "", 2.0 * static_cast<double>(M * GK * GN) / t / 1e9);
  }
  std::printf("(share: of the read bandwidth measured in turns with the row, the best of four, on the same thread count)\n");
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"qnt: model files (safetensors, GGUF) through libqnt"};
  app.require_subcommand(1);
  std::vector<std::string> info_files;
  CLI::App *info_cmd = app.add_subcommand("info", "format, metadata and every tensor of model files");
  info_cmd->add_option("files", info_files, "safetensors files, indexes or folders")->required();
  QuantOptions q;
  CLI::App *quant = app.add_subcommand("quantize", "quantize a model's weights into a new file");
  quant->add_option("in", q.in, "input model (safetensors, index or folder)")->required();
  quant->add_option("out", q.out, "output file (.safetensors or .gguf)")->required();
  quant->add_option("--type", q.type, "safetensors: int8, uint8 (per channel by default), int4, uint4, nf4 (blocks of 32); GGUF: q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, iq4_nl, tq1_0, tq2_0, f16, bf16");
  quant->add_option("--budget", q.budget,
                    "GGUF output: instead of --type, a type per tensor among --formats by measured SQNR (qnt_recommender): "
                    "4.5bpw, 12MB, 12MiB, 12000000 (bytes: the worst tensor's SQNR is maximised) or 20dB (each tensor's least)");
  quant->add_option("--formats", q.formats, "with --budget: the candidate GGUF types, comma-separated (q4_k,q5_k,q6_k,q8_0)");
  quant->add_option("--block", q.block, "block size along each weight's last axis");
  quant->add_flag("--per-channel", q.per_channel, "one scale per output channel (axis 0)");
  quant->add_option("--keep", q.keep, "keep tensors whose name matches this regex in their dtype (repeatable)");
  quant->add_flag("--no-default-keep", q.no_default_keep,
                  "quantize embeddings and norms too (kept by default: /embed|norm|wte|wpe/i)");
  quant->add_option("--method", q.method,
                    "minmax (default), percentile, entropy, mse or adaptive: with --calibrate, how each input's "
                    "range is chosen from its samples; without it, each weight channel's (qnt_calibrator over the "
                    "weights; per-channel integer types)");
  quant->add_option("--calibrate", q.calibrate,
                    "a model file of activation samples, one tensor [..., K] a linear layer, named as its weight "
                    "or its layer: each input's per-tensor qparams (--act-type, by --method) are stored with the "
                    "weights as 'qnt:input.<weight>'");
  quant->add_option("--act-type", q.act_type, "with --calibrate: uint8 (affine, the default) or int8 (symmetric)");
  quant->add_option("--percentile", q.percentile, "with --method percentile: the percentile, in (50, 100]");
  quant->add_option("--threads", q.threads, "threads (default: the machine's)");
  quant->add_flag("--quiet", q.quiet, "print nothing");
  QuantOptions r;
  CLI::App *rec_cmd = app.add_subcommand("recommend", "a format per weight tensor under a budget, by measured SQNR");
  rec_cmd->add_option("in", r.in, "input model (safetensors, GGUF, index or folder)")->required();
  rec_cmd->add_option("--formats", r.formats,
                      "candidates, comma-separated: i8, u8, i4, u4, nf4, ternary, binary, log4, log8 per output channel or "
                      "with .bN per block (i4.b128), and the GGUF types (q4_k, q8_0, ...)")
      ->required();
  rec_cmd->add_option("--budget", r.budget, "4.5bpw, 12MB, 12MiB, 12000000 (bytes) or 20dB (each tensor's least SQNR)")
      ->required();
  rec_cmd->add_option("--keep", r.keep, "leave tensors whose name matches this regex out (repeatable)");
  rec_cmd->add_flag("--no-default-keep", r.no_default_keep, "include embeddings and norms (left out by default)");
  rec_cmd->add_option("--threads", r.threads, "threads (default: the machine's)");
  int bench_threads = 0;
  CLI::App *bench_cmd = app.add_subcommand("bench", "the weight-only and GEMM kernels on this machine, against its read bandwidth");
  bench_cmd->add_option("--threads", bench_threads, "the larger thread count (default: the machine's)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (*info_cmd) return info(info_files);
    if (*quant) return quantize(q);
    if (*rec_cmd) return recommend(r);
    if (*bench_cmd) return bench(bench_threads);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "qnt: out of memory\n");
    return 1;
  } catch (const Failure &e) {
    std::fprintf(stderr, "qnt: %s\n", e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "qnt: %s\n", e.what());
    return 1;
  }
  return 0;
}
