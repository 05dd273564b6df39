// The C boundary of include/qnt/qnt_io.h: handle checks and the guard; the work is in
// src/io/model_file.cpp.
#include "capi/boundary.hpp"
#include "io/model_file.hpp"

#include <qnt/qnt_io.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>
#include <string>

struct qnt_model_file {
  uint32_t magic;
  std::unique_ptr<const qnt::io::ModelFile> f;
  qnt::capi::LiveHandle live{};
};
struct qnt_model_writer {
  uint32_t magic;
  std::unique_ptr<qnt::io::Writer> w;
  qnt::capi::LiveHandle live{};
};

namespace {
using namespace qnt;
using namespace qnt::capi;

constexpr uint32_t kFileMagic = 0x714d6f64;    // "qMod"
constexpr uint32_t kWriterMagic = 0x714d7772;  // "qMwr"

const io::ModelFile &file_of(const qnt_model_file *f) {
  require(f, "f");
  if (f->magic != kFileMagic || !f->f) fail(QNT_ERR_INVALID_ARGUMENT, "f is not a live qnt_model_file");
  return *f->f;
}

io::Writer &writer_of(qnt_model_writer *w) {
  require(w, "w");
  if (w->magic != kWriterMagic || !w->w) fail(QNT_ERR_INVALID_ARGUMENT, "w is not a live qnt_model_writer");
  return *w->w;
}

const io::MetaValue &meta_of(const io::ModelFile &m, const char *key) {
  require(key, "key");
  const io::MetaValue *v = m.metadata_value(key);
  if (v == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, "the file has no metadata '", key, "'");
  return *v;
}

const io::Entry &entry_of(const io::ModelFile &f, size_t index) {
  if (index >= f.entries().size())
    fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past the file's ", f.entries().size(), " tensors");
  return f.entries()[index];
}
}  // namespace

extern "C" {

qnt_status qnt_model_file_open(const char *path, qnt_model_file **out) {
  return guard(__func__, [&] {
    require(path, "path");
    require(out, "out");
    auto h = std::make_unique<qnt_model_file>();
    h->f = io::ModelFile::open(path);
    h->magic = kFileMagic;
    *out = h.release();
  });
}

void qnt_model_file_destroy(qnt_model_file *f) {
  if (f == nullptr || f->magic != kFileMagic) return;
  f->magic = kDeadMagic;
  delete f;
}

qnt_status qnt_model_file_format(const qnt_model_file *f, qnt_file_format *out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(out, "out");
    *out = m.format();
  });
}

qnt_status qnt_model_file_tensor_count(const qnt_model_file *f, size_t *out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(out, "out");
    *out = m.entries().size();
  });
}

qnt_status qnt_model_file_tensor_name(const qnt_model_file *f, size_t index, const char **out) {
  return guard(__func__, [&] {
    const io::Entry &e = entry_of(file_of(f), index);
    require(out, "out");
    *out = e.name.c_str();
  });
}

qnt_status qnt_model_file_tensor_find(const qnt_model_file *f, const char *name, size_t *out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(name, "name");
    require(out, "out");
    const ptrdiff_t i = m.find(name);
    if (i < 0) fail(QNT_ERR_INVALID_ARGUMENT, "the file has no tensor named '", name, "'");
    *out = static_cast<size_t>(i);
  });
}

qnt_status qnt_model_file_tensor_type(const qnt_model_file *f, size_t index, const char **out) {
  return guard(__func__, [&] {
    const io::Entry &e = entry_of(file_of(f), index);
    require(out, "out");
    *out = e.file_dtype.c_str();
  });
}

qnt_status qnt_model_file_tensor_shape(const qnt_model_file *f, size_t index, int64_t *shape_out,
                                       size_t capacity, size_t *rank_out) {
  return guard(__func__, [&] {
    const io::Entry &e = entry_of(file_of(f), index);
    require(rank_out, "rank_out");
    if (capacity < e.shape.size()) {
      *rank_out = e.shape.size();
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the shape has ", e.shape.size(), " dimensions, capacity is ", capacity);
    }
    if (!e.shape.empty()) require(shape_out, "shape_out");
    for (size_t i = 0; i < e.shape.size(); ++i) shape_out[i] = e.shape[i];
    *rank_out = e.shape.size();
  });
}

qnt_status qnt_model_file_tensor_bytes(const qnt_model_file *f, size_t index, const void **data_out,
                                       size_t *bytes_out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    const io::Entry &e = entry_of(m, index);
    require(data_out, "data_out");
    require(bytes_out, "bytes_out");
    *data_out = m.bytes(index);
    *bytes_out = e.bytes;
  });
}

qnt_status qnt_model_file_tensor(const qnt_model_file *f, size_t index, qnt_tensor **out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    (void)entry_of(m, index);
    require(out, "out");
    *out = new_tensor_handle(std::make_unique<Tensor>(m.tensor(index)));
  });
}

qnt_status qnt_model_file_tensor_input_qparams(const qnt_model_file *f, size_t index, qnt_qparams **out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    const io::Entry &e = entry_of(m, index);
    require(out, "out");
    *out = e.input ? new_qparams_handle(e.input) : nullptr;
  });
}

qnt_status qnt_model_writer_set_input_qparams(qnt_model_writer *w, const char *name, const qnt_qparams *qp) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(name, "name");
    wr.set_input_qparams(name, *qparams_of(qp, "qp"));
  });
}

qnt_status qnt_model_file_metadata_count(const qnt_model_file *f, size_t *out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(out, "out");
    *out = m.metadata().size();
  });
}

qnt_status qnt_model_file_metadata_key(const qnt_model_file *f, size_t index, const char **out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(out, "out");
    if (index >= m.metadata().size())
      fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past the file's ", m.metadata().size(), " keys");
    *out = m.metadata()[index].first.c_str();
  });
}

qnt_status qnt_model_file_metadata_string(const qnt_model_file *f, const char *key, const char **out) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    require(key, "key");
    require(out, "out");
    const io::MetaValue &v = meta_of(m, key);
    if (v.type != QNT_META_STRING) fail(QNT_ERR_DTYPE_MISMATCH, "metadata '", key, "' is not a string");
    *out = v.s[0].c_str();
  });
}

qnt_status qnt_model_file_metadata_type(const qnt_model_file *f, const char *key, qnt_meta_type *type_out,
                                        qnt_meta_type *element_out, size_t *count_out) {
  return guard(__func__, [&] {
    const io::MetaValue &v = meta_of(file_of(f), key);
    require(type_out, "type_out");
    require(element_out, "element_out");
    require(count_out, "count_out");
    *type_out = v.type;
    *element_out = v.type == QNT_META_ARRAY ? v.element : v.type;
    *count_out = v.count();
  });
}

qnt_status qnt_model_file_metadata_int(const qnt_model_file *f, const char *key, size_t index, int64_t *out) {
  return guard(__func__, [&] {
    const io::MetaValue &v = meta_of(file_of(f), key);
    require(out, "out");
    if (v.i.empty() && v.u.empty()) fail(QNT_ERR_DTYPE_MISMATCH, "metadata '", key, "' is not an integer");
    if (index >= v.count()) fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past metadata '", key, "''s ", v.count());
    if (!v.i.empty()) {
      *out = v.i[index];
      return;
    }
    if (v.u[index] > static_cast<uint64_t>(INT64_MAX)) fail(QNT_ERR_OVERFLOW, "metadata '", key, "' exceeds int64");
    *out = static_cast<int64_t>(v.u[index]);
  });
}

qnt_status qnt_model_file_metadata_uint(const qnt_model_file *f, const char *key, size_t index, uint64_t *out) {
  return guard(__func__, [&] {
    const io::MetaValue &v = meta_of(file_of(f), key);
    require(out, "out");
    if (v.i.empty() && v.u.empty()) fail(QNT_ERR_DTYPE_MISMATCH, "metadata '", key, "' is not an integer");
    if (index >= v.count()) fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past metadata '", key, "''s ", v.count());
    if (!v.u.empty()) {
      *out = v.u[index];
      return;
    }
    if (v.i[index] < 0) fail(QNT_ERR_OVERFLOW, "metadata '", key, "' is negative");
    *out = static_cast<uint64_t>(v.i[index]);
  });
}

qnt_status qnt_model_file_metadata_float(const qnt_model_file *f, const char *key, size_t index, double *out) {
  return guard(__func__, [&] {
    const io::MetaValue &v = meta_of(file_of(f), key);
    require(out, "out");
    if (v.f.empty()) fail(QNT_ERR_DTYPE_MISMATCH, "metadata '", key, "' is not a float");
    if (index >= v.f.size()) fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past metadata '", key, "''s ", v.f.size());
    *out = v.f[index];
  });
}

qnt_status qnt_model_file_metadata_string_at(const qnt_model_file *f, const char *key, size_t index,
                                             const char **out) {
  return guard(__func__, [&] {
    const io::MetaValue &v = meta_of(file_of(f), key);
    require(out, "out");
    if (v.s.empty() && !(v.type == QNT_META_ARRAY && v.element == QNT_META_STRING))
      fail(QNT_ERR_DTYPE_MISMATCH, "metadata '", key, "' is not a string");
    if (index >= v.s.size()) fail(QNT_ERR_INVALID_ARGUMENT, "index ", index, " is past metadata '", key, "''s ", v.s.size());
    *out = v.s[index].c_str();
  });
}

qnt_status qnt_model_file_tensor_dequantize(const qnt_model_file *f, size_t index, qnt_tensor *y) {
  return guard(__func__, [&] {
    const io::ModelFile &m = file_of(f);
    const io::Entry &e = entry_of(m, index);
    Tensor &out = host_tensor_of(y, "y", __func__);
    if (out.dtype() != QNT_DTYPE_F32) fail(QNT_ERR_DTYPE_MISMATCH, "y must be f32");
    if (out.dims() != e.shape) fail(QNT_ERR_SHAPE_MISMATCH, "y's shape is not tensor '", e.name, "''s");
    if (out.read_only()) fail(QNT_ERR_INVALID_ARGUMENT, "y is read-only");
    std::vector<float> tmp(out.element_count());
    m.dequantize(index, tmp.data());
    if (!tmp.empty()) std::memcpy(out.data(), tmp.data(), 4 * tmp.size());
  });
}

qnt_status qnt_model_writer_create(const char *path, qnt_file_format format, qnt_model_writer **out) {
  return guard(__func__, [&] {
    require(path, "path");
    require(out, "out");
    auto h = std::make_unique<qnt_model_writer>();
    h->w = std::make_unique<io::Writer>(path, format);
    h->magic = kWriterMagic;
    *out = h.release();
  });
}

void qnt_model_writer_destroy(qnt_model_writer *w) {
  if (w == nullptr || w->magic != kWriterMagic) return;
  w->magic = kDeadMagic;
  delete w;
}

qnt_status qnt_model_writer_set_metadata(qnt_model_writer *w, const char *key, const char *value) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(key, "key");
    require(value, "value");
    wr.set_metadata(key, value);
  });
}

qnt_status qnt_model_writer_declare(qnt_model_writer *w, const char *name, qnt_dtype dtype,
                                    const int64_t *shape, size_t rank, const qnt_qparams *layout) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(name, "name");
    const QParams *qp = layout != nullptr ? qparams_of(layout, "layout").get() : nullptr;
    wr.declare(name, dtype, shape, rank, qp);
  });
}

qnt_status qnt_model_writer_declare_bytes(qnt_model_writer *w, const char *name, const char *file_dtype,
                                          const int64_t *shape, size_t rank, size_t bytes) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(name, "name");
    require(file_dtype, "file_dtype");
    wr.declare_bytes(name, file_dtype, shape, rank, bytes);
  });
}

qnt_status qnt_model_writer_set_metadata_scalar(qnt_model_writer *w, const char *key, qnt_meta_type type,
                                                const void *value) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(key, "key");
    require(value, "value");
    wr.set_metadata(key, type, value, 1, false);
  });
}

qnt_status qnt_model_writer_set_metadata_array(qnt_model_writer *w, const char *key, qnt_meta_type element_type,
                                               const void *values, size_t count) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(key, "key");
    if (element_type == QNT_META_ARRAY) fail(QNT_ERR_INVALID_ARGUMENT, "GGUF has no arrays of arrays that qnt writes");
    wr.set_metadata(key, element_type, values, count, true);
  });
}

qnt_status qnt_model_writer_declare_ggml(qnt_model_writer *w, const char *name, const char *ggml_type,
                                         const int64_t *shape, size_t rank) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    require(name, "name");
    require(ggml_type, "ggml_type");
    wr.declare_ggml(name, ggml_type, shape, rank);
  });
}

qnt_status qnt_model_writer_write(qnt_model_writer *w, const qnt_tensor *t) {
  return guard(__func__, [&] {
    io::Writer &wr = writer_of(w);
    wr.write(tensor_of(t, "t"));
  });
}

qnt_status qnt_model_writer_write_bytes(qnt_model_writer *w, const void *data, size_t bytes) {
  return guard(__func__, [&] { writer_of(w).write_bytes(data, bytes); });
}

qnt_status qnt_model_writer_finish(qnt_model_writer *w) {
  return guard(__func__, [&] { writer_of(w).finish(); });
}

}  // extern "C"
