// The C boundary of include/qnt/qnt_io.h: handle checks and the guard; the work is in
// src/io/model_file.cpp.
#include "capi/boundary.hpp"
#include "io/model_file.hpp"

#include <qnt/qnt_io.h>

#include <memory>
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
    const std::string *v = m.metadata_value(key);
    if (v == nullptr) fail(QNT_ERR_INVALID_ARGUMENT, "the file has no metadata '", key, "'");
    *out = v->c_str();
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
