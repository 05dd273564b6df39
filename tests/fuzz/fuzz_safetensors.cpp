// libFuzzer targets fuzz_safetensors and fuzz_gguf: qnt_model_file_open on fuzzed files (the
// format comes from the content; fuzz_gguf writes GGUF's magic and version 3 before each input;
// the bytes go to a temporary file, since the reader takes a path). A refused file must be refused with a documented status; an accepted
// one must give every entry's bytes and every qnt tensor it names (quantized ones dequantized),
// and write back through qnt_model_writer into a file that opens again.
#include "fuzz_common.hpp"

#include <qnt/qnt_io.h>

#include <unistd.h>

#include <string>
#include <vector>

namespace {

std::string temp_path(const char *tag) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/qnt_fuzz_" + std::to_string(::getpid()) + tag;
}

void read_all(qnt_model_file *f) {
  size_t n = 0;
  FUZZ_CALL(qnt_model_file_tensor_count(f, &n));
  for (size_t i = 0; i < n; ++i) {
    const void *data = nullptr;
    size_t bytes = 0;
    FUZZ_CALL(qnt_model_file_tensor_bytes(f, i, &data, &bytes));
    volatile uint8_t sink = 0;
    for (size_t k = 0; k < bytes; k += 4096) sink = static_cast<uint8_t>(sink + static_cast<const uint8_t *>(data)[k]);
    {  // the values as float32, where qnt dequantizes the entry's type
      int64_t dims[QNT_MAX_RANK];
      size_t rank = 0;
      FUZZ_CALL(qnt_model_file_tensor_shape(f, i, dims, QNT_MAX_RANK, &rank));
      qnt_tensor *y = nullptr;
      size_t count = 1;
      for (size_t k = 0; k < rank; ++k) count = dims[k] > 0 && count <= (size_t{1} << 20) ? count * static_cast<size_t>(dims[k]) : 0;
      if (count <= (size_t{1} << 20) && qnt_tensor_create(QNT_DTYPE_F32, dims, rank, nullptr, &y) == QNT_OK) {
        FUZZ_CALL(qnt_model_file_tensor_dequantize(f, i, y));
        qnt_tensor_destroy(y);
      }
    }
    qnt_tensor *t = nullptr;
    const qnt_status s = qnt_model_file_tensor(f, i, &t);
    FUZZ_CALL(s);
    if (s != QNT_OK) continue;
    qnt_qparams *qp = nullptr;
    FUZZ_CALL(qnt_tensor_qparams(t, &qp));
    size_t count = 0, rank = 0;
    FUZZ_CALL(qnt_tensor_element_count(t, &count));
    FUZZ_CALL(qnt_tensor_rank(t, &rank));
    if (qp != nullptr && count <= (size_t{1} << 20)) {
      int64_t dims[QNT_MAX_RANK];
      FUZZ_CALL(qnt_tensor_shape(t, dims, QNT_MAX_RANK));
      qnt_tensor *y = nullptr;
      if (qnt_tensor_create(QNT_DTYPE_F32, dims, rank, nullptr, &y) == QNT_OK) {
        FUZZ_CALL(qnt_dequantize(nullptr, t, y));
        qnt_tensor_destroy(y);
      }
    }
    qnt_qparams_destroy(qp);
    qnt_tensor_destroy(t);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string in = temp_path(".safetensors"), out = temp_path("_out.safetensors");
  if (std::FILE *fp = std::fopen(in.c_str(), "wb")) {
#if defined(QNT_FUZZ_GGUF)
    // fuzz_gguf: every input is a GGUF v3 file after the magic and the version, so that the
    // fuzzer spends its time on GGUF's header, metadata, tensor infos and block types.
    std::fwrite("GGUF\3\0\0\0", 1, 8, fp);
#endif
    if (size > 0) std::fwrite(data, 1, size, fp);
    std::fclose(fp);
  } else {
    return 0;
  }
  qnt_model_file *f = nullptr;
  const qnt_status s = qnt_model_file_open(in.c_str(), &f);
  FUZZ_CALL(s);
  if (s == QNT_OK) {
    read_all(f);
    // Written back entry for entry (as bytes, or as qnt tensors where qnt reads them), then
    // opened again.
    qnt_model_writer *w = nullptr;
    FUZZ_CALL(qnt_model_writer_create(out.c_str(), QNT_FILE_SAFETENSORS, &w));
    size_t n = 0;
    FUZZ_CALL(qnt_model_file_tensor_count(f, &n));
    // Every entry but qnt's scale and zero-point entries (the writer makes them again).
    std::vector<size_t> keep;
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr;
      FUZZ_CALL(qnt_model_file_tensor_name(f, i, &name));
      const std::string nm = name;
      auto ends = [&](const std::string &suffix) {
        return nm.size() >= suffix.size() && nm.compare(nm.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      if (!ends(".qnt_scales") && !ends(".qnt_zero_points")) keep.push_back(i);
    }
    std::vector<qnt_tensor *> tensors(n, nullptr);
    bool fine = w != nullptr;
    for (size_t i : keep) {
      if (!fine) break;
      const char *name = nullptr, *type = nullptr;
      FUZZ_CALL(qnt_model_file_tensor_name(f, i, &name));
      FUZZ_CALL(qnt_model_file_tensor_type(f, i, &type));
      int64_t dims[QNT_MAX_RANK];
      size_t rank = 0;
      FUZZ_CALL(qnt_model_file_tensor_shape(f, i, dims, QNT_MAX_RANK, &rank));
      qnt_tensor *t = nullptr;
      if (qnt_model_file_tensor(f, i, &t) == QNT_OK) {
        qnt_qparams *qp = nullptr;
        qnt_dtype d = 0;
        FUZZ_CALL(qnt_tensor_qparams(t, &qp));
        FUZZ_CALL(qnt_tensor_dtype(t, &d));
        FUZZ_CALL(qnt_tensor_rank(t, &rank));
        FUZZ_CALL(qnt_tensor_shape(t, dims, QNT_MAX_RANK));
        fine = qnt_model_writer_declare(w, name, d, dims, rank, qp) == QNT_OK;
        qnt_qparams_destroy(qp);
        tensors[i] = t;
      } else {
        const void *bytes = nullptr;
        size_t nb = 0;
        FUZZ_CALL(qnt_model_file_tensor_bytes(f, i, &bytes, &nb));
        fine = qnt_model_writer_declare_bytes(w, name, type, dims, rank, nb) == QNT_OK;
      }
    }
    for (size_t i : keep) {
      if (!fine) break;
      if (tensors[i] != nullptr) {
        FUZZ_CALL(qnt_model_writer_write(w, tensors[i]));
        continue;
      }
      const void *bytes = nullptr;
      size_t nb = 0;
      FUZZ_CALL(qnt_model_file_tensor_bytes(f, i, &bytes, &nb));
      FUZZ_CALL(qnt_model_writer_write_bytes(w, bytes, nb));
    }
    if (fine && qnt_model_writer_finish(w) == QNT_OK) {
      qnt_model_file *g = nullptr;
      if (qnt_model_file_open(out.c_str(), &g) != QNT_OK) {
        std::fprintf(stderr, "a file qnt wrote does not open: %s\n", qnt_last_error_message());
        std::abort();
      }
      read_all(g);
      qnt_model_file_destroy(g);
    }
    for (qnt_tensor *t : tensors) qnt_tensor_destroy(t);
    qnt_model_writer_destroy(w);
    qnt_model_file_destroy(f);
  }
  std::remove(in.c_str());
  std::remove(out.c_str());
  return 0;
}
