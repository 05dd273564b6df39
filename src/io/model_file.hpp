// Model files (include/qnt/qnt_io.h): a read-only mapping of safetensors files with every entry
// checked at open, and a streaming writer. The C boundary is src/capi/api_io.cpp.
#pragma once

#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <qnt/qnt_io.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace qnt::io {

// An open file (closed when the last holder goes), read with pread or mapped in windows.
class FileHandle {
 public:
  explicit FileHandle(const std::string &path);
  ~FileHandle();
  FileHandle(const FileHandle &) = delete;
  FileHandle &operator=(const FileHandle &) = delete;
  size_t size() const noexcept { return size_; }
  const std::string &path() const noexcept { return path_; }
  // n bytes at offset into dst; throws QNT_ERR_CORRUPT_DATA past the end.
  void read(size_t offset, void *dst, size_t n) const;

 private:
  friend class Mapping;
  int fd_ = -1;
  size_t size_ = 0;
  std::string path_;
};

// bytes [offset, offset + n) of a file mapped read-only (munmap when the last holder goes): a
// tensor maps its own bytes only, so that reading a model larger than memory, or than the
// address space a process may use, works one tensor at a time.
class Mapping {
 public:
  Mapping(const FileHandle &f, size_t offset, size_t n);
  ~Mapping();
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  const uint8_t *data() const noexcept { return data_; }

 private:
  void *base_ = nullptr;
  size_t length_ = 0;
  const uint8_t *data_ = nullptr;
};

// How qnt stored a quantized tensor (the "qnt.<name>" metadata key and its entries).
struct QuantInfo {
  qnt_dtype dtype = QNT_DTYPE_F32;
  std::vector<int64_t> shape;  // the logical shape
  qnt_granularity granularity = QNT_GRANULARITY_PER_TENSOR;
  int64_t axis = 0, block = 0;
  size_t scales = 0;             // entry index of name.qnt_scales
  ptrdiff_t zero_points = -1;    // entry index of name.qnt_zero_points, or -1 (all 0)
  size_t count = 0;              // parameters
};

// A metadata value: safetensors' are strings; GGUF's any of its 13 types, or an array of one
// (type QNT_META_ARRAY, `element` its elements' type). Integers and bools are kept as int64
// (i) or uint64 (u, the unsigned types), floats as double, strings as strings.
struct MetaValue {
  qnt_meta_type type = QNT_META_STRING;
  qnt_meta_type element = QNT_META_STRING;  // arrays only
  std::vector<int64_t> i;
  std::vector<uint64_t> u;
  std::vector<double> f;
  std::vector<std::string> s;
  size_t count() const noexcept { return i.size() + u.size() + f.size() + s.size(); }
};

struct Entry {
  std::string name;
  std::string file_dtype;  // "F32", ...
  std::vector<int64_t> shape;
  size_t offset = 0;  // in the file
  size_t bytes = 0;
  std::shared_ptr<const FileHandle> file;
  std::shared_ptr<const QuantInfo> quant;  // set on a quantized tensor's codes entry
  std::shared_ptr<const QParams> input;     // its input's calibrated qparams ("qnt:input.<name>")
  uint32_t ggml = 0xFFFFFFFFu;             // GGUF: the ggml type
};

class ModelFile {
 public:
  static std::unique_ptr<ModelFile> open(const std::string &path);
  qnt_file_format format() const noexcept { return format_; }
  const std::vector<Entry> &entries() const noexcept { return entries_; }
  // Index of `name`, or -1.
  ptrdiff_t find(const std::string &name) const;
  const std::vector<std::pair<std::string, MetaValue>> &metadata() const noexcept { return meta_; }
  const MetaValue *metadata_value(const std::string &key) const;
  // The string value of key, or null (absent, or not a string).
  const std::string *metadata_string(const std::string &key) const;
  // Entry i as float32 into out (its element count): every dtype qnt reads, GGUF's block types
  // by ggml's dequantization; throws QNT_ERR_UNSUPPORTED for the others.
  void dequantize(size_t i, float *out) const;
  // Entry i as a qnt tensor (a view of the mapping where aligned, else a copy), with qparams
  // for a quantized tensor; throws QNT_ERR_UNSUPPORTED for a dtype qnt has no type for.
  Tensor tensor(size_t i) const;
  // Entry i's bytes, mapped once and kept while the file lives (qnt_model_file_tensor_bytes).
  const uint8_t *bytes(size_t i) const;

 private:
  void add_safetensors(const std::string &path);
  void add_gguf(const std::string &path);
  void check_quantized();
  void check_inputs();
  qnt_file_format format_ = QNT_FILE_SAFETENSORS;
  std::vector<Entry> entries_;
  std::map<std::string, size_t> by_name_;
  std::vector<std::pair<std::string, MetaValue>> meta_;
  mutable std::mutex mutex_;  // guards maps_
  mutable std::vector<std::shared_ptr<const Mapping>> maps_;
};

// The qnt dtype a safetensors dtype maps to, or 0 (none).
qnt_dtype safetensors_to_qnt(const std::string &dtype) noexcept;
// The safetensors dtype of a qnt dtype's stored codes ("U8" for packed ones), never null.
const char *safetensors_of(qnt_dtype d) noexcept;
// The size in bytes of a safetensors dtype's element, or 0 for an unknown dtype.
size_t safetensors_size(const std::string &dtype) noexcept;

// The streaming writer (qnt_model_writer_*).
class Writer {
 public:
  Writer(const std::string &path, qnt_file_format format);
  ~Writer();  // removes the partial file unless finished
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  void set_metadata(const std::string &key, const std::string &value);
  // A typed value (GGUF only): `count` values of type `type` at values (strings: const char *
  // const *), a scalar when !array.
  void set_metadata(const std::string &key, qnt_meta_type type, const void *values, size_t count, bool array);
  // GGUF: a tensor of ggml type `ggml_type`, written from float32 (block types quantized).
  void declare_ggml(const std::string &name, const std::string &ggml_type, const int64_t *shape, size_t rank);
  void declare(const std::string &name, qnt_dtype dtype, const int64_t *shape, size_t rank,
               const QParams *layout);
  void declare_bytes(const std::string &name, const std::string &file_dtype, const int64_t *shape,
                     size_t rank, size_t bytes);
  // The calibrated per-tensor qparams of the input of tensor `name` (a "qnt:input.<name>" key).
  void set_input_qparams(const std::string &name, const QParams &qp);
  void write(const Tensor &t);
  void write_bytes(const void *data, size_t bytes);
  void finish();

 private:
  struct Decl {
    std::string name;
    qnt_dtype dtype = QNT_DTYPE_F32;  // 0 for declare_bytes
    std::string file_dtype;
    std::vector<int64_t> shape;
    size_t bytes = 0;  // the codes entry
    bool quantized = false;
    qnt_granularity granularity = QNT_GRANULARITY_PER_TENSOR;
    int64_t axis = 0, block = 0;
    size_t count = 0;
    bool zero_points = false;
    uint32_t ggml = 0xFFFFFFFFu;  // GGUF: the ggml type
    bool from_f32 = false;        // GGUF: written from float32 (declare_ggml)
  };
  void start_gguf();
  void usable(const char *what) const;
  void start();  // writes the header
  void put(const void *data, size_t bytes);
  void declared(const Decl &d);

  std::string path_, partial_;
  std::FILE *file_ = nullptr;
  bool started_ = false, finished_ = false, broken_ = false;
  qnt_file_format format_ = QNT_FILE_SAFETENSORS;
  std::vector<std::pair<std::string, MetaValue>> meta_;
  std::vector<std::string> inputs_;  // names given input qparams, checked against decls_ at start
  std::vector<Decl> decls_;
  std::map<std::string, int> names_;
  size_t next_ = 0;
};

}  // namespace qnt::io
