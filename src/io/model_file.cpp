// safetensors in and out (include/qnt/qnt_io.h states the rules checked here).
#include "io/model_file.hpp"

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/layout.hpp"
#include "io/ggml_types.hpp"
#include "kernels/common/scalar.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <limits>

namespace qnt::io {
namespace {

using json = nlohmann::ordered_json;

constexpr uint64_t kMaxHeader = 100000000;  // the format's own cap on the JSON header
const char *const kScalesSuffix = ".qnt_scales";
const char *const kZeroPointsSuffix = ".qnt_zero_points";

struct StDtype {
  const char *name;
  size_t size;
  qnt_dtype qnt;  // 0: none
};
// safetensors' dtypes (its Dtype enum) and their sizes.
constexpr StDtype kStDtypes[] = {
    {"BOOL", 1, 0},     {"U8", 1, QNT_DTYPE_U8},    {"I8", 1, QNT_DTYPE_I8},
    {"F8_E5M2", 1, 0},  {"F8_E4M3", 1, 0},          {"I16", 2, QNT_DTYPE_I16},
    {"U16", 2, QNT_DTYPE_U16}, {"F16", 2, QNT_DTYPE_F16}, {"BF16", 2, QNT_DTYPE_BF16},
    {"I32", 4, QNT_DTYPE_I32}, {"U32", 4, 0},       {"F32", 4, QNT_DTYPE_F32},
    {"F64", 8, 0},      {"I64", 8, 0},              {"U64", 8, 0},
};

std::string system_error(const std::string &what) { return what + ": " + std::strerror(errno); }

bool ends_with(const std::string &s, const char *suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The shape as int64 dimensions, each checked, and its element count.
size_t count_of(const std::vector<int64_t> &shape, const std::string &what) {
  try {
    return checked_element_count(shape.data(), shape.size());
  } catch (const Error &e) {
    fail(QNT_ERR_CORRUPT_DATA, what, ": ", e.what());
  }
}

const DTypeInfo *dtype_by_name(const std::string &name) {
  for (int32_t raw = 1; raw < 64; ++raw) {
    const DTypeInfo *d = find_dtype(raw);
    if (d != nullptr && name == d->name) return d;
  }
  return nullptr;
}

const char *granularity_name(qnt_granularity g) {
  return g == QNT_GRANULARITY_PER_AXIS ? "axis" : g == QNT_GRANULARITY_PER_BLOCK ? "block" : "tensor";
}

int64_t to_int64(const std::string &s, const std::string &what) {
  if (s.empty() || s.size() > 19) fail(QNT_ERR_CORRUPT_DATA, what, ": '", s, "' is not a number");
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) fail(QNT_ERR_CORRUPT_DATA, what, ": '", s, "' is not a number");
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') fail(QNT_ERR_CORRUPT_DATA, what, ": '", s, "' is not a number");
    v = v * 10 + (s[i] - '0');  // at most 19 digits minus a sign: no overflow below 10^18
  }
  return s[0] == '-' ? -v : v;
}

// "k=v;k=v" into its fields.
std::map<std::string, std::string> fields_of(const std::string &value, const std::string &what) {
  std::map<std::string, std::string> f;
  size_t at = 0;
  while (at <= value.size()) {
    const size_t end = std::min(value.find(';', at), value.size());
    const std::string part = value.substr(at, end - at);
    const size_t eq = part.find('=');
    if (eq == std::string::npos) fail(QNT_ERR_CORRUPT_DATA, what, ": '", part, "' is not key=value");
    if (!f.emplace(part.substr(0, eq), part.substr(eq + 1)).second)
      fail(QNT_ERR_CORRUPT_DATA, what, ": '", part.substr(0, eq), "' appears twice");
    at = end + 1;
  }
  return f;
}

}  // namespace

qnt_dtype safetensors_to_qnt(const std::string &dtype) noexcept {
  for (const StDtype &d : kStDtypes)
    if (dtype == d.name) return d.qnt;
  return 0;
}

size_t safetensors_size(const std::string &dtype) noexcept {
  for (const StDtype &d : kStDtypes)
    if (dtype == d.name) return d.size;
  return 0;
}

const char *safetensors_of(qnt_dtype d) noexcept {
  for (const StDtype &s : kStDtypes)
    if (s.qnt == d && d != 0) return s.name;
  return "U8";  // packed codes
}

FileHandle::FileHandle(const std::string &path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail(QNT_ERR_INVALID_ARGUMENT, system_error("cannot open '" + path + "'"));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(QNT_ERR_INVALID_ARGUMENT, "'", path, "' is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
}

FileHandle::~FileHandle() {
  if (fd_ >= 0) ::close(fd_);
}

void FileHandle::read(size_t offset, void *dst, size_t n) const {
  if (offset > size_ || n > size_ - offset)
    fail(QNT_ERR_CORRUPT_DATA, "'", path_, "' is truncated: ", n, " bytes at ", offset, " lie past its end");
  auto *d = static_cast<uint8_t *>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, d, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail(QNT_ERR_CORRUPT_DATA, system_error("reading '" + path_ + "'"));
    d += got;
    offset += static_cast<size_t>(got);
    n -= static_cast<size_t>(got);
  }
}

Mapping::Mapping(const FileHandle &f, size_t offset, size_t n) {
  if (n == 0) return;
  static const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t start = offset / page * page;
  length_ = offset - start + n;
  base_ = ::mmap(nullptr, length_, PROT_READ, MAP_PRIVATE, f.fd_, static_cast<off_t>(start));
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    if (errno == ENOMEM) throw std::bad_alloc();
    fail(QNT_ERR_INVALID_ARGUMENT, system_error("cannot map '" + f.path() + "'"));
  }
  data_ = static_cast<const uint8_t *>(base_) + (offset - start);
}

Mapping::~Mapping() {
  if (base_ != nullptr) ::munmap(base_, length_);
}

ptrdiff_t ModelFile::find(const std::string &name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : static_cast<ptrdiff_t>(it->second);
}

const MetaValue *ModelFile::metadata_value(const std::string &key) const {
  for (const auto &kv : meta_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

const std::string *ModelFile::metadata_string(const std::string &key) const {
  const MetaValue *v = metadata_value(key);
  return v != nullptr && v->type == QNT_META_STRING ? &v->s[0] : nullptr;
}

std::unique_ptr<ModelFile> ModelFile::open(const std::string &path) {
  auto f = std::unique_ptr<ModelFile>(new ModelFile());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(QNT_ERR_INVALID_ARGUMENT, system_error("cannot open '" + path + "'"));
  std::string index = S_ISDIR(st.st_mode) ? path + "/model.safetensors.index.json" : std::string();
  if (index.empty()) {
    // The format from the first bytes: GGUF's magic, an index's JSON, or a safetensors length.
    const FileHandle fh(path);
    uint8_t head[64] = {};
    const size_t got = std::min(fh.size(), sizeof head);
    fh.read(0, head, got);
    if (got >= 4 && std::memcmp(head, "GGUF", 4) == 0) {
      f->format_ = QNT_FILE_GGUF;
      f->add_gguf(path);
      f->check_inputs();
      return f;
    }
    size_t i = 0;
    while (i < got && (head[i] == ' ' || head[i] == '\n' || head[i] == '\t' || head[i] == '\r')) ++i;
    if (i < got && head[i] == '{') index = path;
  }
  if (index.empty()) {
    f->add_safetensors(path);
  } else {
    // A sharded model: its index's weight_map names each tensor's shard (a path relative to
    // the index's folder).
    const FileHandle fh(index);
    if (fh.size() > kMaxHeader) fail(QNT_ERR_CORRUPT_DATA, "'", index, "' is larger than an index can be");
    std::string text(fh.size(), '\0');
    fh.read(0, text.data(), text.size());
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception &e) {
      fail(QNT_ERR_CORRUPT_DATA, "'", index, "' is not a safetensors index: ", e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail(QNT_ERR_CORRUPT_DATA, "'", index, "' has no weight_map object");
    const size_t slash = index.find_last_of('/');
    const std::string dir = slash == std::string::npos ? std::string() : index.substr(0, slash + 1);
    std::vector<std::string> shards;
    for (const auto &kv : j["weight_map"].items()) {
      if (!kv.value().is_string()) fail(QNT_ERR_CORRUPT_DATA, "'", index, "': weight_map values must be file names");
      const std::string shard = kv.value().get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos)
        fail(QNT_ERR_CORRUPT_DATA, "'", index, "': shard '", shard, "' is not a file name in its folder");
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.push_back(shard);
    }
    std::map<std::string, std::string> shard_of;
    for (const std::string &s : shards) {
      const size_t before = f->entries_.size();
      f->add_safetensors(dir + s);
      for (size_t e = before; e < f->entries_.size(); ++e) shard_of[f->entries_[e].name] = s;
    }
    for (const auto &kv : j["weight_map"].items()) {
      const auto it = shard_of.find(kv.key());
      if (it == shard_of.end() || it->second != kv.value().get<std::string>())
        fail(QNT_ERR_CORRUPT_DATA, "'", index, "': tensor '", kv.key(), "' is not in its shard '",
             kv.value().get<std::string>(), "'");
    }
  }
  f->check_quantized();
  f->check_inputs();
  return f;
}

void ModelFile::add_safetensors(const std::string &path) {
  const auto fh = std::make_shared<const FileHandle>(path);
  const std::string where = "'" + path + "'";
  if (fh->size() < 8) fail(QNT_ERR_CORRUPT_DATA, where, " is shorter than safetensors' 8-byte header length");
  uint8_t len[8];
  fh->read(0, len, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > kMaxHeader)
    fail(QNT_ERR_CORRUPT_DATA, where, ": a header of ", n, " bytes (safetensors caps it at ", kMaxHeader, ")");
  if (n > fh->size() - 8)
    fail(QNT_ERR_CORRUPT_DATA, where, " is truncated: its header needs ", n, " bytes, ", fh->size() - 8,
         " follow");
  std::string text(static_cast<size_t>(n), '\0');
  fh->read(8, text.data(), text.size());
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception &e) {
    fail(QNT_ERR_CORRUPT_DATA, where, ": the header is not valid JSON (UTF-8): ", e.what());
  }
  text = std::string();
  if (!j.is_object()) fail(QNT_ERR_CORRUPT_DATA, where, ": the header is not a JSON object");
  const size_t base = 8 + static_cast<size_t>(n);
  const size_t data_size = fh->size() - base;
  struct Span {
    size_t begin, end, entry;
  };
  std::vector<Span> spans;
  for (const auto &kv : j.items()) {
    const std::string &name = kv.key();
    const json &v = kv.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(QNT_ERR_CORRUPT_DATA, where, ": __metadata__ is not an object");
      for (const auto &m : v.items()) {
        if (!m.value().is_string())
          fail(QNT_ERR_CORRUPT_DATA, where, ": metadata '", m.key(), "' is not a string");
        if (metadata_value(m.key()) == nullptr) {
          MetaValue mv;
          mv.s.push_back(m.value().get<std::string>());
          meta_.emplace_back(m.key(), std::move(mv));
        } else if (metadata_string(m.key()) == nullptr || *metadata_string(m.key()) != m.value().get<std::string>())
          fail(QNT_ERR_CORRUPT_DATA, where, ": metadata '", m.key(), "' differs between shards");
      }
      continue;
    }
    const std::string what = where + ": tensor '" + name + "'";
    if (name.empty()) fail(QNT_ERR_CORRUPT_DATA, where, ": a tensor has an empty name");
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      fail(QNT_ERR_CORRUPT_DATA, what, " lacks dtype, shape or data_offsets");
    const json &dt = v["dtype"], &sh = v["shape"], &off = v["data_offsets"];
    if (!dt.is_string()) fail(QNT_ERR_CORRUPT_DATA, what, ": dtype is not a string");
    Entry e;
    e.name = name;
    e.file_dtype = dt.get<std::string>();
    const size_t esize = safetensors_size(e.file_dtype);
    if (esize == 0) fail(QNT_ERR_CORRUPT_DATA, what, ": unknown dtype '", e.file_dtype, "'");
    if (!sh.is_array()) fail(QNT_ERR_CORRUPT_DATA, what, ": shape is not an array");
    for (const json &d : sh) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(QNT_ERR_CORRUPT_DATA, what, ": a dimension is not a non-negative integer");
      e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    const size_t count = count_of(e.shape, what);
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail(QNT_ERR_CORRUPT_DATA, what, ": data_offsets is not two non-negative integers");
    const auto b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en || en > data_size)
      fail(QNT_ERR_CORRUPT_DATA, what, ": data_offsets [", b, ", ", en, "] lie outside the ", data_size,
           " bytes of data");
    if (count > std::numeric_limits<size_t>::max() / esize || en - b != count * esize)
      fail(QNT_ERR_CORRUPT_DATA, what, ": data_offsets span ", en - b, " bytes, its dtype and shape need ",
           count, " x ", esize);
    e.offset = base + static_cast<size_t>(b);
    e.bytes = static_cast<size_t>(en - b);
    e.file = fh;
    if (by_name_.count(name) != 0) fail(QNT_ERR_CORRUPT_DATA, what, " appears twice");
    spans.push_back({static_cast<size_t>(b), static_cast<size_t>(en), entries_.size()});
    by_name_[name] = entries_.size();
    entries_.push_back(std::move(e));
  }
  // The entries tile the data: sorted by offset, each begins where the previous ended.
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &c) {
    return a.begin != c.begin ? a.begin < c.begin : a.end < c.end;
  });
  size_t at = 0;
  for (const Span &s : spans) {
    if (s.begin != at)
      fail(QNT_ERR_CORRUPT_DATA, where, ": tensor '", entries_[s.entry].name, "' begins at ", s.begin,
           s.begin < at ? " inside the previous tensor" : ", after a gap from ", s.begin < at ? "" : std::to_string(at));
    at = s.end;
  }
  if (at != data_size)
    fail(QNT_ERR_CORRUPT_DATA, where, ": the tensors cover ", at, " of the ", data_size, " bytes of data");
  // The entries of this file in the order of their data.
  const size_t first = entries_.size() - spans.size();
  std::vector<Entry> ordered;
  for (const Span &s : spans) ordered.push_back(std::move(entries_[s.entry]));
  entries_.resize(first);
  for (Entry &e : ordered) {
    by_name_[e.name] = entries_.size();
    entries_.push_back(std::move(e));
  }
}

void ModelFile::check_quantized() {
  if (format_ != QNT_FILE_SAFETENSORS) return;
  for (const auto &kv : meta_) {
    if (kv.first.compare(0, 4, "qnt.") != 0) continue;
    const std::string name = kv.first.substr(4);
    const std::string what = "metadata '" + kv.first + "'";
    auto f = fields_of(kv.second.s.at(0), what);
    for (const char *k : {"dtype", "shape", "granularity", "axis", "block"})
      if (f.count(k) == 0) fail(QNT_ERR_CORRUPT_DATA, what, " lacks ", k);
    auto q = std::make_shared<QuantInfo>();
    const DTypeInfo *info = dtype_by_name(f["dtype"]);
    if (info == nullptr || info->rule == Rule::Float)
      fail(QNT_ERR_CORRUPT_DATA, what, ": '", f["dtype"], "' is not a quantized qnt dtype");
    q->dtype = info->id;
    const std::string &shape = f["shape"];
    for (size_t at = 0; !shape.empty() && at <= shape.size();) {
      const size_t end = std::min(shape.find(',', at), shape.size());
      const int64_t d = to_int64(shape.substr(at, end - at), what);
      if (d < 0) fail(QNT_ERR_CORRUPT_DATA, what, ": a negative dimension");
      q->shape.push_back(d);
      at = end + 1;
    }
    const size_t count = count_of(q->shape, what);
    const std::string &g = f["granularity"];
    q->granularity = g == "tensor" ? QNT_GRANULARITY_PER_TENSOR
                     : g == "axis" ? QNT_GRANULARITY_PER_AXIS
                     : g == "block" ? QNT_GRANULARITY_PER_BLOCK
                                    : 0;
    if (q->granularity == 0) fail(QNT_ERR_CORRUPT_DATA, what, ": granularity '", g, "'");
    q->axis = to_int64(f["axis"], what);
    q->block = to_int64(f["block"], what);
    try {
      q->count = make_layout(q->granularity, q->axis, q->block, q->shape.data(), q->shape.size()).groups;
    } catch (const Error &e) {
      fail(QNT_ERR_CORRUPT_DATA, what, ": ", e.what());
    }
    const ptrdiff_t codes = find(name), scales = find(name + kScalesSuffix),
                    zps = find(name + kZeroPointsSuffix);
    if (codes < 0 || scales < 0) fail(QNT_ERR_CORRUPT_DATA, what, ": its tensor or its scales are missing");
    Entry &c = entries_[static_cast<size_t>(codes)];
    const size_t bytes = checked_byte_size(*info, count);
    const bool packed = info->bits < 8;
    if (c.file_dtype != safetensors_of(q->dtype) || c.bytes != bytes ||
        (packed ? c.shape != std::vector<int64_t>{static_cast<int64_t>(bytes)} : c.shape != q->shape))
      fail(QNT_ERR_CORRUPT_DATA, what, ": tensor '", name, "' is not ", bytes, " bytes of ",
           safetensors_of(q->dtype), packed ? " in one dimension" : " in its shape");
    auto check_params = [&](ptrdiff_t i, const char *dtype) {
      const Entry &p = entries_[static_cast<size_t>(i)];
      if (p.file_dtype != dtype || p.shape != std::vector<int64_t>{static_cast<int64_t>(q->count)})
        fail(QNT_ERR_CORRUPT_DATA, what, ": '", p.name, "' must be ", dtype, " [", q->count, "]");
    };
    check_params(scales, "F32");
    q->scales = static_cast<size_t>(scales);
    if (zps >= 0) check_params(zps, "I32");
    q->zero_points = zps;
    if (c.quant) fail(QNT_ERR_CORRUPT_DATA, what, " appears twice");
    c.quant = std::move(q);
  }
}

namespace {
const char *const kInputPrefix = "qnt:input.";

// "dtype=u8;scale=0.0123;zero_point=128": the text of per-tensor integer qparams (the scale
// printed with 9 significant digits, which reads back as the same float32).
std::string input_text(const QParams &qp) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.9g", static_cast<double>(qp.scales()[0]));
  return std::string("dtype=") + qp.info().name + ";scale=" + scale + ";zero_point=" +
         std::to_string(qp.zero_points()[0]);
}
}  // namespace

void ModelFile::check_inputs() {
  const size_t prefix = std::strlen(kInputPrefix);
  for (const auto &kv : meta_) {
    if (kv.first.compare(0, prefix, kInputPrefix) != 0) continue;
    const std::string name = kv.first.substr(prefix);
    const std::string what = "metadata '" + kv.first + "'";
    if (kv.second.type != QNT_META_STRING) fail(QNT_ERR_CORRUPT_DATA, what, " is not a string");
    auto f = fields_of(kv.second.s.at(0), what);
    if (f.size() != 3 || f.count("dtype") == 0 || f.count("scale") == 0 || f.count("zero_point") == 0)
      fail(QNT_ERR_CORRUPT_DATA, what, ": the fields are dtype, scale and zero_point");
    const DTypeInfo *info = dtype_by_name(f["dtype"]);
    if (info == nullptr || info->rule != Rule::Integer)
      fail(QNT_ERR_CORRUPT_DATA, what, ": '", f["dtype"], "' is not an integer qnt dtype");
    const std::string &st = f["scale"];
    char *end = nullptr;
    errno = 0;
    const float scale = st.empty() ? 0.0f : std::strtof(st.c_str(), &end);
    if (st.empty() || end != st.c_str() + st.size() || errno != 0)
      fail(QNT_ERR_CORRUPT_DATA, what, ": scale '", st, "' is not a number");
    const int64_t zp = to_int64(f["zero_point"], what);
    if (zp < INT32_MIN || zp > INT32_MAX) fail(QNT_ERR_CORRUPT_DATA, what, ": zero point ", zp);
    const auto z = static_cast<int32_t>(zp);
    const ptrdiff_t at = find(name);
    if (at < 0) fail(QNT_ERR_CORRUPT_DATA, what, ": the file has no tensor '", name, "'");
    try {
      entries_[static_cast<size_t>(at)].input =
          QParams::create(info->id, QNT_GRANULARITY_PER_TENSOR, 0, 0, &scale, &z, 1);
    } catch (const Error &e) {
      fail(QNT_ERR_CORRUPT_DATA, what, ": ", e.what());
    }
  }
}

namespace {

// The qnt dtype of a plain ggml type, or 0.
qnt_dtype ggml_to_qnt(uint32_t id) {
  switch (id) {
    case 0: return QNT_DTYPE_F32;
    case 1: return QNT_DTYPE_F16;
    case 30: return QNT_DTYPE_BF16;
    case 24: return QNT_DTYPE_I8;
    case 25: return QNT_DTYPE_I16;
    case 26: return QNT_DTYPE_I32;
    default: return 0;
  }
}

// Q8_0 and Q4_0 as the qnt tensors that hold them, per block of 32 along the last axis:
//  - Q8_0 (d = amax / 127 >= 0, q * d): int8, scale d, zero point 0: qnt's (q - 0) * d is
//    ggml's q * d, bit for bit;
//  - Q4_0 (d = max / -8, of either sign; (q - 8) * d): uint4 with zero points, code q and zero
//    point 8 with scale d where d > 0, code 15 - q and zero point 7 with scale -d where d < 0,
//    so that (c - z) * s = (8 - q) * -d = (q - 8) * d: the same floats, except the sign of a zero
//    (ggml's 0 * d is -0.0 where d < 0, qnt's +0.0).
// A block whose scale qnt's qparams cannot hold (NaN, infinite; Q8_0 negative or -0.0, or 0
// over a code that is not the zero code) makes the tensor QNT_ERR_UNSUPPORTED; a zero scale over
// zero codes becomes scale 1 (the values are +0.0; Q4_0's zero rows have d = -0.0 and -0.0 values
// in ggml, the same exception as above).
Tensor ggml_block_tensor(const Entry &e) {
  const bool q8 = e.ggml == 8;
  const size_t bsize = q8 ? 34 : 18;
  const size_t blocks = e.bytes / bsize;
  const auto rank = e.shape.size();
  std::vector<float> scales(blocks);
  std::vector<int32_t> zps(blocks, q8 ? 0 : 8);
  const Mapping map(*e.file, e.offset, e.bytes);
  const uint8_t *src = map.data();
  auto refuse = [&](size_t b, float d) {
    fail(QNT_ERR_UNSUPPORTED, "tensor '", e.name, "': block ", b, " has scale ", d,
         ", which qnt's qparams do not hold (qnt_model_file_tensor_dequantize gives its values)");
  };
  for (size_t b = 0; b < blocks; ++b) {
    uint16_t h = 0;
    std::memcpy(&h, src + b * bsize, 2);
    const float d = rules::f16_to_f32(h);
    const uint8_t *q = src + b * bsize + 2;
    if (!std::isfinite(d)) refuse(b, d);
    if (d == 0.0f) {
      bool zero = !q8 || !std::signbit(d);  // Q4_0's -0.0: its zeros are -0.0 in ggml, +0.0 here
      for (int j = 0; j < (q8 ? 32 : 16) && zero; ++j) zero = q8 ? q[j] == 0 : q[j] == 0x88;
      if (!zero) refuse(b, d);
      scales[b] = 1.0f;
    } else if (d > 0.0f) {
      scales[b] = d;
    } else {
      if (q8) refuse(b, d);
      scales[b] = -d;
      zps[b] = 7;
    }
  }
  const qnt_dtype dt = q8 ? QNT_DTYPE_I8 : QNT_DTYPE_U4;
  auto qp = QParams::create(dt, QNT_GRANULARITY_PER_BLOCK, static_cast<int64_t>(rank) - 1, 32, scales.data(),
                            zps.data(), blocks);
  Tensor t(dt, e.shape.data(), rank, std::move(qp), Tensor::Storage::Zeroed, nullptr, 0, {}, false);
  uint8_t *out = t.data();
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t *q = src + b * bsize + 2;
    if (q8) {
      std::memcpy(out + 32 * b, q, 32);
      continue;
    }
    // ggml: byte j holds elements j (low nibble) and j + 16 (high); qnt: element 0 in the low
    // nibble of byte 0.
    const bool flip = zps[b] == 7;
    uint8_t v[32];
    for (int j = 0; j < 16; ++j) {
      v[j] = static_cast<uint8_t>(q[j] & 0x0F);
      v[j + 16] = static_cast<uint8_t>(q[j] >> 4);
    }
    for (int j = 0; j < 32; ++j)
      if (flip) v[j] = static_cast<uint8_t>(15 - v[j]);
    for (int j = 0; j < 16; ++j) out[16 * b + j] = static_cast<uint8_t>(v[2 * j] | (v[2 * j + 1] << 4));
  }
  return t;
}

// TQ1_0 (ggml type 34) and TQ2_0 (35) as qnt ternary tensors per block of 256 along the last
// axis: each block's values are (q - 1) * d with q in {0, 1, 2} (ggml's dequantization, run
// here), so its codes are value / d, exactly; the scale is |d| and the codes are negated where
// d < 0. A zero d gives scale 1 and codes 0 (values +0.0 where ggml's may be -0.0, as for Q4_0);
// a NaN or infinite d, or a TQ2_0 code 3 (2 * d, no ternary value), is QNT_ERR_UNSUPPORTED.
Tensor ggml_ternary_tensor(const Entry &e) {
  const GgmlType &gt = *ggml_type(e.ggml);
  const size_t bsize = gt.size, blocks = e.bytes / bsize;
  const auto rank = e.shape.size();
  const Mapping map(*e.file, e.offset, e.bytes);
  const uint8_t *src = map.data();
  std::vector<float> scales(blocks);
  std::vector<int8_t> codes(256 * blocks);
  float v[256];
  for (size_t b = 0; b < blocks; ++b) {
    uint16_t h = 0;
    std::memcpy(&h, src + b * bsize + bsize - 2, 2);
    const float d = rules::f16_to_f32(h);
    if (!std::isfinite(d))
      fail(QNT_ERR_UNSUPPORTED, "tensor '", e.name, "': block ", b, " has scale ", d,
           ", which qnt's qparams do not hold (qnt_model_file_tensor_dequantize gives its values)");
    ggml_dequantize(gt, src + b * bsize, 256, v);
    scales[b] = d == 0.0f ? 1.0f : std::fabs(d);
    for (int j = 0; j < 256; ++j) {
      const float c = d == 0.0f ? 0.0f : (d > 0.0f ? v[j] / d : -(v[j] / d));
      if (c != -1.0f && c != 0.0f && c != 1.0f)
        fail(QNT_ERR_UNSUPPORTED, "tensor '", e.name, "': block ", b, " element ", j, " is ", c,
             " times its scale, no ternary value (qnt_model_file_tensor_dequantize gives its values)");
      codes[256 * b + static_cast<size_t>(j)] = static_cast<int8_t>(c);
    }
  }
  auto qp = QParams::create(QNT_DTYPE_TERNARY, QNT_GRANULARITY_PER_BLOCK, static_cast<int64_t>(rank) - 1, 256,
                            scales.data(), nullptr, blocks);
  Tensor t(QNT_DTYPE_TERNARY, e.shape.data(), rank, std::move(qp), Tensor::Storage::Zeroed, nullptr, 0, {}, false);
  for (size_t i = 0; i < codes.size(); ++i) ref::store_element(t.data(), i, 2, codes[i]);
  return t;
}

}  // namespace

// GGUF (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md), versions 2 and 3, little
// endian: the magic, the version, the tensor and key counts, the keys, the tensor infos, then the
// data from the next multiple of general.alignment (32 by default).
namespace {

// Sequential reads of the file through a buffer, each checked against its end.
class Cursor {
 public:
  Cursor(const FileHandle &f, const std::string &where) : f_(f), where_(where) {}
  size_t pos() const noexcept { return pos_; }
  size_t left() const noexcept { return f_.size() - pos_; }
  void take(void *dst, size_t n) {
    if (n > left()) fail(QNT_ERR_CORRUPT_DATA, where_, " is truncated at byte ", pos_, " (", n, " more needed)");
    auto *d = static_cast<uint8_t *>(dst);
    while (n > 0) {
      if (pos_ < buf_at_ || pos_ >= buf_at_ + buf_.size()) {
        buf_at_ = pos_;
        buf_.resize(std::min<size_t>(size_t{1} << 20, left()));
        f_.read(buf_at_, buf_.data(), buf_.size());
      }
      const size_t k = std::min(n, buf_at_ + buf_.size() - pos_);
      std::memcpy(d, buf_.data() + (pos_ - buf_at_), k);
      d += k;
      pos_ += k;
      n -= k;
    }
  }
  template <class T>
  T get() {
    T v;
    take(&v, sizeof v);
    return v;
  }
  std::string str(const char *what) {
    const auto n = get<uint64_t>();
    if (n > left()) fail(QNT_ERR_CORRUPT_DATA, where_, ": a ", what, " of ", n, " bytes at byte ", pos_ - 8, " runs past the end");
    std::string s(static_cast<size_t>(n), '\0');
    take(s.data(), s.size());
    return s;
  }

 private:
  const FileHandle &f_;
  std::string where_;
  size_t pos_ = 0, buf_at_ = 0;
  std::vector<uint8_t> buf_;
};

// Bytes of one element of a GGUF value type (strings: at least their 8-byte length), or 0.
size_t gguf_size(uint32_t t) {
  switch (t) {
    case QNT_META_UINT8: case QNT_META_INT8: case QNT_META_BOOL: return 1;
    case QNT_META_UINT16: case QNT_META_INT16: return 2;
    case QNT_META_UINT32: case QNT_META_INT32: case QNT_META_FLOAT32: return 4;
    case QNT_META_UINT64: case QNT_META_INT64: case QNT_META_FLOAT64: case QNT_META_STRING: return 8;
    default: return 0;
  }
}

void gguf_element(Cursor &c, uint32_t t, MetaValue &v, const std::string &what) {
  switch (t) {
    case QNT_META_UINT8: v.u.push_back(c.get<uint8_t>()); return;
    case QNT_META_INT8: v.i.push_back(c.get<int8_t>()); return;
    case QNT_META_UINT16: v.u.push_back(c.get<uint16_t>()); return;
    case QNT_META_INT16: v.i.push_back(c.get<int16_t>()); return;
    case QNT_META_UINT32: v.u.push_back(c.get<uint32_t>()); return;
    case QNT_META_INT32: v.i.push_back(c.get<int32_t>()); return;
    case QNT_META_UINT64: v.u.push_back(c.get<uint64_t>()); return;
    case QNT_META_INT64: v.i.push_back(c.get<int64_t>()); return;
    case QNT_META_FLOAT32: v.f.push_back(c.get<float>()); return;
    case QNT_META_FLOAT64: v.f.push_back(c.get<double>()); return;
    case QNT_META_BOOL: {
      const auto b = c.get<uint8_t>();
      if (b > 1) fail(QNT_ERR_CORRUPT_DATA, what, ": a bool of value ", static_cast<int>(b));
      v.i.push_back(b);
      return;
    }
    case QNT_META_STRING: {
      std::string s = c.str("string");
      try {  // UTF-8, as GGUF requires
        (void)json(s).dump();
      } catch (const json::exception &) {
        fail(QNT_ERR_CORRUPT_DATA, what, ": a string that is not UTF-8");
      }
      v.s.push_back(std::move(s));
      return;
    }
    default:
      fail(QNT_ERR_CORRUPT_DATA, what, ": unknown value type ", t);
  }
}

}  // namespace

void ModelFile::add_gguf(const std::string &path) {
  const auto fh = std::make_shared<const FileHandle>(path);
  const std::string where = "'" + path + "'";
  Cursor c(*fh, where);
  char magic[4];
  c.take(magic, 4);
  const auto version = c.get<uint32_t>();
  if (version == 1) fail(QNT_ERR_UNSUPPORTED, where, " is GGUF version 1; qnt reads versions 2 and 3");
  if (version != 2 && version != 3) {
    if (version == 0x02000000u || version == 0x03000000u)
      fail(QNT_ERR_UNSUPPORTED, where, " is a big-endian GGUF file");
    fail(QNT_ERR_CORRUPT_DATA, where, ": GGUF version ", version);
  }
  const auto n_tensors = c.get<uint64_t>(), n_kv = c.get<uint64_t>();
  // Each key takes at least 12 bytes, each tensor info at least 24: counts the file cannot hold
  // are refused before anything is allocated for them.
  if (n_kv > c.left() / 12 || n_tensors > c.left() / 24)
    fail(QNT_ERR_CORRUPT_DATA, where, ": ", n_tensors, " tensors and ", n_kv, " keys do not fit in the file");
  uint64_t alignment = 32;
  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = c.str("key");
    const std::string what = where + ": key '" + key + "'";
    if (metadata_value(key) != nullptr) fail(QNT_ERR_CORRUPT_DATA, what, " appears twice");
    MetaValue v;
    const auto t = c.get<uint32_t>();
    v.type = static_cast<qnt_meta_type>(t);
    if (t == QNT_META_ARRAY) {
      const auto et = c.get<uint32_t>();
      const auto n = c.get<uint64_t>();
      const size_t es = gguf_size(et);
      if (es == 0) fail(QNT_ERR_CORRUPT_DATA, what, ": arrays of type ", et);
      if (n > c.left() / es) fail(QNT_ERR_CORRUPT_DATA, what, ": an array of ", n, " runs past the end");
      v.element = static_cast<qnt_meta_type>(et);
      for (uint64_t e = 0; e < n; ++e) gguf_element(c, et, v, what);
    } else {
      if (gguf_size(t) == 0) fail(QNT_ERR_CORRUPT_DATA, what, ": unknown value type ", t);
      gguf_element(c, t, v, what);
    }
    if (key == "general.alignment") {
      if (t != QNT_META_UINT32 || v.u[0] == 0 || (v.u[0] & (v.u[0] - 1)) != 0)
        fail(QNT_ERR_CORRUPT_DATA, what, ": the alignment must be a uint32 power of two");
      alignment = v.u[0];
    }
    meta_.emplace_back(std::move(key), std::move(v));
  }
  struct Info {
    Entry e;
    uint64_t offset;
  };
  std::vector<Info> infos;
  for (uint64_t k = 0; k < n_tensors; ++k) {
    Info in;
    in.e.name = c.str("tensor name");
    const std::string what = where + ": tensor '" + in.e.name + "'";
    if (by_name_.count(in.e.name) != 0) fail(QNT_ERR_CORRUPT_DATA, what, " appears twice");
    try {
      (void)json(in.e.name).dump();
    } catch (const json::exception &) {
      fail(QNT_ERR_CORRUPT_DATA, where, ": a tensor name that is not UTF-8");
    }
    const auto n_dims = c.get<uint32_t>();
    if (n_dims > 4) fail(QNT_ERR_CORRUPT_DATA, what, ": ", n_dims, " dimensions (ggml has at most 4)");
    std::vector<int64_t> ne(n_dims);
    for (auto &d : ne) {
      const auto v = c.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(QNT_ERR_CORRUPT_DATA, what, ": dimension ", v);
      d = static_cast<int64_t>(v);
    }
    in.e.shape.assign(ne.rbegin(), ne.rend());  // ggml lists the fastest dimension first
    const size_t count = count_of(in.e.shape, what);
    const auto type = c.get<uint32_t>();
    const GgmlType *gt = ggml_type(type);
    if (gt == nullptr) fail(QNT_ERR_CORRUPT_DATA, what, ": unknown ggml type ", type);
    if (n_dims > 0 && ne[0] % static_cast<int64_t>(gt->block) != 0)
      fail(QNT_ERR_CORRUPT_DATA, what, ": a row of ", ne[0], " is not a whole number of ", gt->name, " blocks of ",
           gt->block);
    if (n_dims == 0 && gt->block != 1) fail(QNT_ERR_CORRUPT_DATA, what, ": a scalar of block type ", gt->name);
    in.e.ggml = type;
    in.e.file_dtype = gt->name;
    in.e.bytes = count / gt->block * gt->size;  // count <= QNT_MAX_ELEMENTS: no overflow
    in.offset = c.get<uint64_t>();
    if (in.offset % alignment != 0)
      fail(QNT_ERR_CORRUPT_DATA, what, ": offset ", in.offset, " is not a multiple of the alignment ", alignment);
    by_name_[in.e.name] = infos.size();
    infos.push_back(std::move(in));
  }
  const size_t data = (c.pos() + alignment - 1) / alignment * alignment;
  if (data > fh->size() && !infos.empty())
    fail(QNT_ERR_CORRUPT_DATA, where, " is truncated: its data would begin at byte ", data);
  const size_t data_size = data <= fh->size() ? fh->size() - data : 0;
  for (Info &in : infos) {
    if (in.offset > data_size || in.e.bytes > data_size - in.offset)
      fail(QNT_ERR_CORRUPT_DATA, where, ": tensor '", in.e.name, "' (", in.e.bytes, " bytes at ", in.offset,
           ") lies past the end of the data");
    in.e.offset = data + static_cast<size_t>(in.offset);
    in.e.file = fh;
  }
  // No two tensors share bytes.
  std::vector<size_t> order(infos.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return infos[a].offset < infos[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const Info &p = infos[order[k - 1]], &q = infos[order[k]];
    if (p.offset + p.e.bytes > q.offset)
      fail(QNT_ERR_CORRUPT_DATA, where, ": tensors '", p.e.name, "' and '", q.e.name, "' overlap");
  }
  for (Info &in : infos) entries_.push_back(std::move(in.e));
}

void ModelFile::dequantize(size_t i, float *out) const {
  const Entry &e = entries_.at(i);
  size_t count = 1;
  for (int64_t d : e.shape) count *= static_cast<size_t>(d);
  const GgmlType *gt = e.ggml != 0xFFFFFFFFu ? ggml_type(e.ggml) : ggml_type(e.file_dtype.c_str());
  if (e.quant || gt == nullptr || !gt->dequant)
    fail(QNT_ERR_UNSUPPORTED, "tensor '", e.name, "' is ", e.quant ? "quantized by qnt (qnt_dequantize it)" : e.file_dtype.c_str(),
         e.quant ? "" : ", which qnt does not dequantize");
  const Mapping map(*e.file, e.offset, e.bytes);
  ggml_dequantize(*gt, map.data(), count, out);
}

Tensor ModelFile::tensor(size_t i) const {
  const Entry &e = entries_.at(i);
  if (e.quant) {
    const QuantInfo &q = *e.quant;
    std::vector<float> scales(q.count);
    std::vector<int32_t> zps(q.count, 0);
    const Entry &s = entries_[q.scales];
    s.file->read(s.offset, scales.data(), 4 * q.count);
    if (q.zero_points >= 0) {
      const Entry &z = entries_[static_cast<size_t>(q.zero_points)];
      z.file->read(z.offset, zps.data(), 4 * q.count);
    }
    auto qp = QParams::create(q.dtype, q.granularity, q.axis, q.block, scales.data(), zps.data(), q.count);
    auto map = std::make_shared<Mapping>(*e.file, e.offset, e.bytes);
    const uint8_t *data = map->data();
    return Tensor(q.dtype, q.shape.data(), q.shape.size(), std::move(qp), Tensor::Storage::Adopt,
                  const_cast<uint8_t *>(data), e.bytes, std::shared_ptr<void>(std::move(map)), true);
  }
  if (e.ggml == 8 || e.ggml == 2) return ggml_block_tensor(e);
  if (e.ggml == 34 || e.ggml == 35) return ggml_ternary_tensor(e);
  const qnt_dtype d = e.ggml != 0xFFFFFFFFu ? ggml_to_qnt(e.ggml) : safetensors_to_qnt(e.file_dtype);
  if (d == 0)
    fail(QNT_ERR_UNSUPPORTED, "tensor '", e.name, "' is ", e.file_dtype, ", which qnt has no dtype for",
         e.ggml != 0xFFFFFFFFu ? " (qnt_model_file_tensor_dequantize gives its values)" : "");
  auto map = std::make_shared<Mapping>(*e.file, e.offset, e.bytes);
  const uint8_t *data = map->data();
  if (reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(dtype_info(d).bits / 8) == 0)
    return Tensor(d, e.shape.data(), e.shape.size(), nullptr, Tensor::Storage::Adopt, const_cast<uint8_t *>(data),
                  e.bytes, std::shared_ptr<void>(std::move(map)), true);
  // Not aligned for its dtype where the file put it: a copy.
  return Tensor(d, e.shape.data(), e.shape.size(), nullptr, Tensor::Storage::Copy, const_cast<uint8_t *>(data),
                e.bytes, {}, true);
}

const uint8_t *ModelFile::bytes(size_t i) const {
  const Entry &e = entries_.at(i);
  std::lock_guard<std::mutex> lock(mutex_);
  if (maps_.size() != entries_.size()) maps_.resize(entries_.size());
  if (!maps_[i]) maps_[i] = std::make_shared<const Mapping>(*e.file, e.offset, e.bytes);
  return maps_[i]->data();
}

// ---------------------------------------------------------------------------------------------

Writer::Writer(const std::string &path, qnt_file_format format)
    : path_(path), partial_(path + ".partial"), format_(format) {
  if (format != QNT_FILE_SAFETENSORS && format != QNT_FILE_GGUF)
    fail(QNT_ERR_INVALID_ARGUMENT, "unknown file format ", format);
  if (path.empty()) fail(QNT_ERR_INVALID_ARGUMENT, "the path is empty");
  file_ = std::fopen(partial_.c_str(), "wb");
  if (file_ == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, system_error("cannot create '" + partial_ + "'"));
}

Writer::~Writer() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_) std::remove(partial_.c_str());
}

void Writer::usable(const char *what) const {
  if (broken_) fail(QNT_ERR_INVALID_ARGUMENT, "the writer failed earlier; destroy it");
  if (finished_) fail(QNT_ERR_INVALID_ARGUMENT, "the file is finished: no ", what, " after finish");
}

void Writer::set_metadata(const std::string &key, const std::string &value) {
  usable("metadata");
  if (started_) fail(QNT_ERR_INVALID_ARGUMENT, "metadata must come before the first tensor is written");
  if (key.compare(0, 4, "qnt.") == 0 || key.compare(0, 4, "qnt:") == 0)
    fail(QNT_ERR_INVALID_ARGUMENT, "keys 'qnt.*' and 'qnt:*' are qnt's own");
  for (const auto &kv : meta_)
    if (kv.first == key) fail(QNT_ERR_INVALID_ARGUMENT, "metadata '", key, "' is set twice");
  if (format_ == QNT_FILE_GGUF && key == "general.alignment")
    fail(QNT_ERR_INVALID_ARGUMENT, "qnt writes GGUF with the default alignment (32)");
  MetaValue v;
  v.s.push_back(value);
  meta_.emplace_back(key, std::move(v));
}

void Writer::set_metadata(const std::string &key, qnt_meta_type type, const void *values, size_t count,
                          bool array) {
  usable("metadata");
  if (format_ != QNT_FILE_GGUF && !(type == QNT_META_STRING && !array))
    fail(QNT_ERR_INVALID_ARGUMENT, "safetensors metadata holds strings only");
  if (count > 0 && values == nullptr) fail(QNT_ERR_NULL_POINTER, "values is NULL");
  if (!array && count != 1) fail(QNT_ERR_INVALID_ARGUMENT, "a scalar has one value");
  MetaValue v;
  v.type = array ? QNT_META_ARRAY : type;
  v.element = type;
  for (size_t k = 0; k < count; ++k) {
    switch (type) {
      case QNT_META_UINT8: v.u.push_back(static_cast<const uint8_t *>(values)[k]); break;
      case QNT_META_INT8: v.i.push_back(static_cast<const int8_t *>(values)[k]); break;
      case QNT_META_UINT16: v.u.push_back(static_cast<const uint16_t *>(values)[k]); break;
      case QNT_META_INT16: v.i.push_back(static_cast<const int16_t *>(values)[k]); break;
      case QNT_META_UINT32: v.u.push_back(static_cast<const uint32_t *>(values)[k]); break;
      case QNT_META_INT32: v.i.push_back(static_cast<const int32_t *>(values)[k]); break;
      case QNT_META_UINT64: v.u.push_back(static_cast<const uint64_t *>(values)[k]); break;
      case QNT_META_INT64: v.i.push_back(static_cast<const int64_t *>(values)[k]); break;
      case QNT_META_FLOAT32: v.f.push_back(static_cast<const float *>(values)[k]); break;
      case QNT_META_FLOAT64: v.f.push_back(static_cast<const double *>(values)[k]); break;
      case QNT_META_BOOL: {
        const uint8_t b = static_cast<const uint8_t *>(values)[k];
        if (b > 1) fail(QNT_ERR_INVALID_ARGUMENT, "a bool is 0 or 1");
        v.i.push_back(b);
        break;
      }
      case QNT_META_STRING: {
        const char *str = static_cast<const char *const *>(values)[k];
        if (str == nullptr) fail(QNT_ERR_NULL_POINTER, "string ", k, " is NULL");
        try {
          (void)json(std::string(str)).dump();
        } catch (const json::exception &) {
          fail(QNT_ERR_INVALID_ARGUMENT, "string ", k, " is not UTF-8");
        }
        v.s.emplace_back(str);
        break;
      }
      default:
        fail(QNT_ERR_INVALID_ARGUMENT, "unknown metadata type ", type);
    }
  }
  if (count == 0 && (type < QNT_META_UINT8 || type > QNT_META_FLOAT64 || type == QNT_META_ARRAY))
    fail(QNT_ERR_INVALID_ARGUMENT, "unknown metadata type ", type);
  if (format_ != QNT_FILE_GGUF) {
    set_metadata(key, v.s.at(0));
    return;
  }
  if (started_) fail(QNT_ERR_INVALID_ARGUMENT, "metadata must come before the first tensor is written");
  if (key == "general.alignment") fail(QNT_ERR_INVALID_ARGUMENT, "qnt writes GGUF with the default alignment (32)");
  for (const auto &kv : meta_)
    if (kv.first == key) fail(QNT_ERR_INVALID_ARGUMENT, "metadata '", key, "' is set twice");
  meta_.emplace_back(key, std::move(v));
}

void Writer::declare_ggml(const std::string &name, const std::string &ggml_name, const int64_t *shape,
                          size_t rank) {
  Decl d;
  d.name = name;
  declared(d);
  if (format_ != QNT_FILE_GGUF) fail(QNT_ERR_INVALID_ARGUMENT, "ggml types are for GGUF files");
  const GgmlType *t = ggml_type(ggml_name.c_str());
  if (t == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, "'", ggml_name, "' is not a ggml type");
  if (!ggml_quantizes(*t))
    fail(QNT_ERR_UNSUPPORTED, "writing ", ggml_name,
         " from float32 is not in this release (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, "
         "TQ1_0, TQ2_0)");
  if (rank > 4) fail(QNT_ERR_INVALID_ARGUMENT, "GGUF tensors have at most 4 dimensions");
  if (rank > 0 && shape == nullptr) fail(QNT_ERR_NULL_POINTER, "shape is NULL");
  const size_t count = checked_element_count(shape, rank);
  const int64_t last = rank > 0 ? shape[rank - 1] : 1;
  if (last % static_cast<int64_t>(t->block) != 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", name, "': a row of ", last, " is not a whole number of ", t->name,
         " blocks of ", t->block);
  d.dtype = QNT_DTYPE_F32;
  d.ggml = t->id;
  d.from_f32 = true;
  d.file_dtype = t->name;
  d.shape.assign(shape, shape + rank);
  d.bytes = count / t->block * t->size;
  names_[name] = 1;
  decls_.push_back(std::move(d));
}

void Writer::declared(const Decl &d) {
  usable("declaration");
  if (started_) fail(QNT_ERR_INVALID_ARGUMENT, "every tensor must be declared before the first is written");
  if (d.name.empty() || d.name == "__metadata__")
    fail(QNT_ERR_INVALID_ARGUMENT, "'", d.name, "' is not a tensor name");
  if (ends_with(d.name, kScalesSuffix) || ends_with(d.name, kZeroPointsSuffix))
    fail(QNT_ERR_INVALID_ARGUMENT, "tensor names ending in ", kScalesSuffix, " or ", kZeroPointsSuffix,
         " are qnt's own");
  if (names_.count(d.name) != 0) fail(QNT_ERR_INVALID_ARGUMENT, "tensor '", d.name, "' is declared twice");
}

void Writer::declare(const std::string &name, qnt_dtype dtype, const int64_t *shape, size_t rank,
                     const QParams *layout) {
  Decl d;
  d.name = name;
  declared(d);
  const DTypeInfo &info = dtype_info(dtype);
  if (rank > 0 && shape == nullptr) fail(QNT_ERR_NULL_POINTER, "shape is NULL");
  const size_t count = checked_element_count(shape, rank);
  d.dtype = dtype;
  d.shape.assign(shape, shape + rank);
  d.bytes = checked_byte_size(info, count);
  if (format_ == QNT_FILE_GGUF) {
    if (layout != nullptr)
      fail(QNT_ERR_UNSUPPORTED, "qnt's quantized tensors go to safetensors; GGUF takes ggml's types "
                                "(qnt_model_writer_declare_ggml)");
    if (rank > 4) fail(QNT_ERR_INVALID_ARGUMENT, "GGUF tensors have at most 4 dimensions");
    const uint32_t id = dtype == QNT_DTYPE_F32 ? 0 : dtype == QNT_DTYPE_F16 ? 1 : dtype == QNT_DTYPE_BF16 ? 30
                      : dtype == QNT_DTYPE_I8 ? 24 : dtype == QNT_DTYPE_I16 ? 25 : dtype == QNT_DTYPE_I32 ? 26 : 0xFFFFFFFFu;
    if (id == 0xFFFFFFFFu) fail(QNT_ERR_INVALID_ARGUMENT, "GGUF has no type for ", info.name, " without qparams");
    d.ggml = id;
    d.file_dtype = ggml_type(id)->name;
    names_[name] = 1;
    decls_.push_back(std::move(d));
    return;
  }
  if (layout != nullptr) {
    if (layout->dtype() != dtype)
      fail(QNT_ERR_DTYPE_MISMATCH, "the layout's qparams are ", layout->info().name, ", the tensor ", info.name);
    const GroupLayout l = layout->layout_for(shape, rank);
    d.quantized = true;
    d.granularity = layout->granularity();
    d.axis = d.granularity == QNT_GRANULARITY_PER_TENSOR
                 ? 0
                 : (layout->axis() < 0 ? layout->axis() + static_cast<int64_t>(rank) : layout->axis());
    d.block = d.granularity == QNT_GRANULARITY_PER_BLOCK ? layout->block_size() : 0;
    d.count = l.groups;
    const int32_t *z = layout->zero_points();
    d.zero_points = std::any_of(z, z + layout->count(), [](int32_t v) { return v != 0; });
    d.file_dtype = safetensors_of(dtype);
  } else {
    if (info.bits < 8 || safetensors_to_qnt(safetensors_of(dtype)) != dtype)
      fail(QNT_ERR_INVALID_ARGUMENT, "a ", info.name, " tensor is stored in safetensors with its qparams only");
    d.file_dtype = safetensors_of(dtype);
  }
  names_[name] = 1;
  decls_.push_back(std::move(d));
}

void Writer::declare_bytes(const std::string &name, const std::string &file_dtype, const int64_t *shape,
                           size_t rank, size_t bytes) {
  Decl d;
  d.name = name;
  declared(d);
  if (rank > 0 && shape == nullptr) fail(QNT_ERR_NULL_POINTER, "shape is NULL");
  if (format_ == QNT_FILE_GGUF) {
    const GgmlType *t = ggml_type(file_dtype.c_str());
    if (t == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, "'", file_dtype, "' is not a ggml type");
    if (rank > 4) fail(QNT_ERR_INVALID_ARGUMENT, "GGUF tensors have at most 4 dimensions");
    const size_t count = checked_element_count(shape, rank);
    const int64_t last = rank > 0 ? shape[rank - 1] : 1;
    if (last % static_cast<int64_t>(t->block) != 0 || count / t->block * t->size != bytes)
      fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", name, "': ", bytes, " bytes are not a shape of ", file_dtype);
    d.dtype = 0;
    d.ggml = t->id;
    d.file_dtype = file_dtype;
    d.shape.assign(shape, shape + rank);
    d.bytes = bytes;
    names_[name] = 1;
    decls_.push_back(std::move(d));
    return;
  }
  const size_t size = safetensors_size(file_dtype);
  if (size == 0) fail(QNT_ERR_INVALID_ARGUMENT, "'", file_dtype, "' is not a safetensors dtype");
  const size_t count = checked_element_count(shape, rank);
  if (count > std::numeric_limits<size_t>::max() / size || count * size != bytes)
    fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", name, "': ", bytes, " bytes for ", count, " elements of ", file_dtype);
  d.dtype = 0;
  d.file_dtype = file_dtype;
  d.shape.assign(shape, shape + rank);
  d.bytes = bytes;
  names_[name] = 1;
  decls_.push_back(std::move(d));
}

void Writer::put(const void *data, size_t bytes) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes) {
    broken_ = true;
    fail(QNT_ERR_INTERNAL, system_error("writing '" + partial_ + "'"));
  }
}

// GGUF version 3: the keys, then the tensor infos (ggml's dimension order, offsets from the data,
// each a multiple of 32), then the data, each tensor padded to 32 bytes.
void Writer::start_gguf() {
  std::string h = "GGUF";
  auto put_raw = [&](const void *p, size_t n) { h.append(static_cast<const char *>(p), n); };
  auto u32 = [&](uint32_t v) { put_raw(&v, 4); };
  auto u64 = [&](uint64_t v) { put_raw(&v, 8); };
  auto str = [&](const std::string &v) {
    u64(v.size());
    h += v;
  };
  u32(3);
  u64(decls_.size());
  u64(meta_.size());
  for (const auto &kv : meta_) {
    const MetaValue &v = kv.second;
    str(kv.first);
    u32(static_cast<uint32_t>(v.type));
    const auto t = static_cast<uint32_t>(v.type == QNT_META_ARRAY ? v.element : v.type);
    if (v.type == QNT_META_ARRAY) {
      u32(t);
      u64(v.count());
    }
    for (size_t k = 0; k < v.count(); ++k) {
      switch (t) {
        case QNT_META_UINT8: { const auto x = static_cast<uint8_t>(v.u[k]); put_raw(&x, 1); break; }
        case QNT_META_INT8: { const auto x = static_cast<int8_t>(v.i[k]); put_raw(&x, 1); break; }
        case QNT_META_BOOL: { const auto x = static_cast<uint8_t>(v.i[k]); put_raw(&x, 1); break; }
        case QNT_META_UINT16: { const auto x = static_cast<uint16_t>(v.u[k]); put_raw(&x, 2); break; }
        case QNT_META_INT16: { const auto x = static_cast<int16_t>(v.i[k]); put_raw(&x, 2); break; }
        case QNT_META_UINT32: { const auto x = static_cast<uint32_t>(v.u[k]); put_raw(&x, 4); break; }
        case QNT_META_INT32: { const auto x = static_cast<int32_t>(v.i[k]); put_raw(&x, 4); break; }
        case QNT_META_UINT64: put_raw(&v.u[k], 8); break;
        case QNT_META_INT64: put_raw(&v.i[k], 8); break;
        case QNT_META_FLOAT32: { const auto x = static_cast<float>(v.f[k]); put_raw(&x, 4); break; }
        case QNT_META_FLOAT64: put_raw(&v.f[k], 8); break;
        default: str(v.s[k]); break;
      }
    }
  }
  uint64_t at = 0;
  for (const Decl &d : decls_) {
    str(d.name);
    u32(static_cast<uint32_t>(d.shape.size()));
    for (auto it = d.shape.rbegin(); it != d.shape.rend(); ++it) u64(static_cast<uint64_t>(*it));
    u32(d.ggml);
    u64(at);
    at += (d.bytes + 31) / 32 * 32;
  }
  h.append((32 - h.size() % 32) % 32, '\0');
  started_ = true;
  put(h.data(), h.size());
}

void Writer::set_input_qparams(const std::string &name, const QParams &qp) {
  usable("input qparams");
  if (started_) fail(QNT_ERR_INVALID_ARGUMENT, "input qparams must come before the first tensor is written");
  if (name.empty()) fail(QNT_ERR_INVALID_ARGUMENT, "the tensor name is empty");
  if (qp.granularity() != QNT_GRANULARITY_PER_TENSOR || qp.info().rule != Rule::Integer)
    fail(QNT_ERR_UNSUPPORTED, "input qparams are per-tensor qparams of an integer dtype");
  const std::string key = kInputPrefix + name;
  for (const auto &kv : meta_)
    if (kv.first == key) fail(QNT_ERR_INVALID_ARGUMENT, "the input qparams of '", name, "' are set twice");
  MetaValue v;
  v.s.push_back(input_text(qp));
  meta_.emplace_back(key, std::move(v));
  inputs_.push_back(name);
}

void Writer::start() {
  for (const std::string &n : inputs_)
    if (names_.count(n) == 0) fail(QNT_ERR_INVALID_ARGUMENT, "input qparams for '", n, "', which is not declared");
  if (format_ == QNT_FILE_GGUF) return start_gguf();
  json h = json::object();
  json meta = json::object();
  for (const auto &kv : meta_) meta[kv.first] = kv.second.s.at(0);
  for (const Decl &d : decls_) {
    if (!d.quantized) continue;
    std::string shape;
    for (size_t i = 0; i < d.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(d.shape[i]);
    meta["qnt." + d.name] = std::string("dtype=") + dtype_info(d.dtype).name + ";shape=" + shape +
                            ";granularity=" + granularity_name(d.granularity) + ";axis=" +
                            std::to_string(d.axis) + ";block=" + std::to_string(d.block);
  }
  if (!meta.empty()) h["__metadata__"] = meta;
  uint64_t at = 0;
  auto entry = [&](const std::string &name, const std::string &dtype, const std::vector<int64_t> &shape,
                   size_t bytes) {
    h[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  };
  for (const Decl &d : decls_) {
    const bool packed = d.dtype != 0 && dtype_info(d.dtype).bits < 8;
    entry(d.name, d.file_dtype, packed ? std::vector<int64_t>{static_cast<int64_t>(d.bytes)} : d.shape, d.bytes);
    if (d.quantized) {
      const std::vector<int64_t> n{static_cast<int64_t>(d.count)};
      entry(d.name + kScalesSuffix, "F32", n, 4 * d.count);
      if (d.zero_points) entry(d.name + kZeroPointsSuffix, "I32", n, 4 * d.count);
    }
  }
  std::string text = h.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // the data 8-byte aligned, as safetensors pads
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  started_ = true;
  put(len, 8);
  put(text.data(), text.size());
}

void Writer::write(const Tensor &t) {
  usable("write");
  if (next_ >= decls_.size()) fail(QNT_ERR_INVALID_ARGUMENT, "every declared tensor is written already");
  const Decl &d = decls_[next_];
  if (d.dtype == 0)
    fail(QNT_ERR_INVALID_ARGUMENT, "tensor '", d.name, "' was declared as ", d.file_dtype,
         " bytes: write it with qnt_model_writer_write_bytes");
  if (!t.on_cpu()) fail(QNT_ERR_UNSUPPORTED, "a device tensor is written from host memory only: copy it first");
  if (t.dtype() != d.dtype)
    fail(QNT_ERR_DTYPE_MISMATCH, "tensor '", d.name, "' was declared ", dtype_info(d.dtype).name, ", this is ",
         t.info().name);
  if (t.dims() != d.shape) fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", d.name, "' has another shape than declared");
  if (format_ == QNT_FILE_GGUF) {
    if (t.qparams()) fail(QNT_ERR_INVALID_ARGUMENT, "tensor '", d.name, "' was declared without qparams");
    if (!d.from_f32) {
      if (!started_) start();
      put(t.data(), t.byte_size());
    } else {
      std::vector<uint8_t> q(d.bytes);
      ggml_quantize(*ggml_type(d.ggml), reinterpret_cast<const float *>(t.data()), t.element_count(), q.data());
      if (!started_) start();
      put(q.data(), q.size());
    }
    static const char zeros[32] = {};
    put(zeros, (32 - d.bytes % 32) % 32);
    ++next_;
    return;
  }
  const QParams *qp = t.qparams().get();
  if (d.quantized != (qp != nullptr))
    fail(QNT_ERR_INVALID_ARGUMENT, "tensor '", d.name, "' was declared ", d.quantized ? "with" : "without",
         " qparams");
  if (qp != nullptr) {
    const int64_t axis = qp->granularity() == QNT_GRANULARITY_PER_TENSOR
                             ? 0
                             : (qp->axis() < 0 ? qp->axis() + static_cast<int64_t>(t.rank()) : qp->axis());
    const int64_t block = qp->granularity() == QNT_GRANULARITY_PER_BLOCK ? qp->block_size() : 0;
    if (qp->granularity() != d.granularity || axis != d.axis || block != d.block)
      fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", d.name, "' has qparams of another layout than declared");
    const int32_t *z = qp->zero_points();
    if (!d.zero_points && std::any_of(z, z + qp->count(), [](int32_t v) { return v != 0; }))
      fail(QNT_ERR_INVALID_QPARAMS, "tensor '", d.name, "' was declared with zero points 0");
  }
  if (!started_) start();
  put(t.data(), t.byte_size());
  if (qp != nullptr) {
    put(qp->scales(), 4 * qp->count());  // little-endian hosts (x86-64, aarch64)
    if (d.zero_points) put(qp->zero_points(), 4 * qp->count());
  }
  ++next_;
}

void Writer::write_bytes(const void *data, size_t bytes) {
  usable("write");
  if (next_ >= decls_.size()) fail(QNT_ERR_INVALID_ARGUMENT, "every declared tensor is written already");
  const Decl &d = decls_[next_];
  if (d.quantized) fail(QNT_ERR_INVALID_ARGUMENT, "tensor '", d.name, "' has qparams: write it as a tensor");
  if (bytes != d.bytes)
    fail(QNT_ERR_SHAPE_MISMATCH, "tensor '", d.name, "' holds ", d.bytes, " bytes, ", bytes, " were given");
  if (data == nullptr && bytes > 0) fail(QNT_ERR_NULL_POINTER, "data is NULL");
  if (!started_) start();
  put(data, bytes);
  if (format_ == QNT_FILE_GGUF) {
    static const char zeros[32] = {};
    put(zeros, (32 - bytes % 32) % 32);
  }
  ++next_;
}

void Writer::finish() {
  usable("finish");
  if (next_ != decls_.size())
    fail(QNT_ERR_INVALID_ARGUMENT, decls_.size() - next_, " declared tensors are not written yet");
  if (!started_) start();
  std::FILE *f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
    std::fclose(f);
    broken_ = true;
    fail(QNT_ERR_INTERNAL, system_error("writing '" + partial_ + "'"));
  }
  if (std::fclose(f) != 0 || std::rename(partial_.c_str(), path_.c_str()) != 0) {
    broken_ = true;
    fail(QNT_ERR_INTERNAL, system_error("completing '" + path_ + "'"));
  }
  finished_ = true;
}

}  // namespace qnt::io
