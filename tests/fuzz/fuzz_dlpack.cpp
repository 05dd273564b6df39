// libFuzzer target: qnt_tensor_from_dlpack on fuzzed DLManagedTensor and
// DLManagedTensorVersioned descriptions (version, flags, device, dtype, shape, strides, offset)
// over a buffer that holds what they describe. A refused import must leave the tensor to its
// producer (no deleter call); an accepted one calls the deleter exactly once, when the tensor
// and every export of it are gone. Accepted tensors are read, quantized and exported again.
#include "fuzz_common.hpp"

#include "io/dlpack.hpp"

#include <vector>

namespace {

using qnt::dlpack::DLManagedTensor;
using qnt::dlpack::DLManagedTensorVersioned;

int deleted = 0;
alignas(64) uint8_t arena[1 << 16];

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Bytes in(data, size);
  static const int64_t dims[] = {0, 1, 2, 3, 5, 8, 16, -1, int64_t{1} << 40, INT64_MAX};
  static const int32_t devices[] = {1, 1, 1, 2, 3, 0, -1, 13};
  static const uint8_t codes[] = {0, 1, 2, 0, 1, 4, 255};
  static const uint8_t bits[] = {8, 32, 16, 4, 2, 1, 64, 0, 7};
  static const uint32_t majors[] = {1, 1, 1, 0, 2};
  const bool versioned = (in.u8() & 1) != 0;
  int64_t shape[9], strides[9];
  const int32_t ndim = static_cast<int32_t>(in.u8() % 11) - 1;  // -1 .. 9
  for (int i = 0; i < 9; ++i) shape[i] = in.pick(dims);
  const bool with_strides = (in.u8() & 1) != 0;
  // Row-major strides, perturbed now and then.
  int64_t s = 1;
  for (int i = 8; i >= 0; --i) {
    strides[i] = (in.u8() % 8 == 0) ? in.pick(dims) : s;
    if (i < ndim && shape[i] > 0 && shape[i] < (int64_t{1} << 20) && s < (int64_t{1} << 40))
      s *= shape[i];
  }
  qnt::dlpack::DLTensor t{};
  t.device = {in.pick(devices), 0};
  t.ndim = ndim;
  t.dtype = {in.pick(codes), in.pick(bits), static_cast<uint16_t>(in.u8() % 8 == 0 ? 2 : 1)};
  t.shape = ndim > 0 ? shape : (in.u8() & 1 ? nullptr : shape);
  t.strides = with_strides ? strides : nullptr;
  t.byte_offset = in.u8() % 8 == 0 ? in.u64() % 64 : 0;
  t.data = in.u8() % 16 == 0 ? nullptr : arena;
  in.fill(arena, sizeof arena);
  qnt_qparams *qp = nullptr;
  if (in.u8() % 4 == 0)
    FUZZ_CALL(qnt_qparams_create_per_tensor(static_cast<qnt_dtype>(in.u8() % 12), 0.5f,
                                            static_cast<int32_t>(in.u8() % 4), &qp));

  DLManagedTensor legacy{};
  DLManagedTensorVersioned ver{};
  void *managed = nullptr;
  deleted = 0;
  if (versioned) {
    ver.version = {in.pick(majors), in.u8()};
    ver.flags = in.u8() & 7;
    ver.dl_tensor = t;
    ver.deleter = [](DLManagedTensorVersioned *) { ++deleted; };
    managed = &ver;
  } else {
    legacy.dl_tensor = t;
    legacy.deleter = [](DLManagedTensor *) { ++deleted; };
    managed = &legacy;
  }
  qnt_tensor *out = nullptr;
  const qnt_status st = qnt_tensor_from_dlpack(managed, versioned ? 1 : 0, qp, &out);
  FUZZ_CALL(st);
  if (st != QNT_OK) {
    if (out != nullptr || deleted != 0) std::abort();
    qnt_qparams_destroy(qp);
    return 0;
  }
  size_t bytes = 0;
  FUZZ_CALL(qnt_tensor_byte_size(out, &bytes));
  // The producer's promise: the described tensor lies in its buffer. Only such tensors are
  // read (a description past the arena is the producer's bug, not qnt's).
  if (t.data != nullptr && bytes + t.byte_offset <= sizeof arena) {
    std::vector<uint8_t> copy(bytes + 1);
    FUZZ_CALL(qnt_tensor_copy_to(out, copy.data(), copy.size()));
    size_t rank = 0;
    FUZZ_CALL(qnt_tensor_rank(out, &rank));
    int64_t sh[QNT_MAX_RANK];
    FUZZ_CALL(qnt_tensor_shape(out, sh, QNT_MAX_RANK));
    qnt_dtype dt = 0;
    FUZZ_CALL(qnt_tensor_dtype(out, &dt));
    qnt_tensor *f = nullptr;
    if (qnt_tensor_create(QNT_DTYPE_F32, sh, rank, nullptr, &f) == QNT_OK) {
      FUZZ_CALL(qnt_dequantize(nullptr, out, f));
      FUZZ_CALL(qnt_quantize(nullptr, f, out));
      qnt_tensor_destroy(f);
    }
    for (int32_t v = 0; v < 2; ++v) {
      void *e = nullptr;
      const qnt_status es = qnt_tensor_to_dlpack(out, v, &e);
      FUZZ_CALL(es);
      if (es != QNT_OK) continue;
      qnt_tensor *back = nullptr;
      FUZZ_CALL(qnt_tensor_from_dlpack(e, v, nullptr, &back));
      if (back != nullptr)
        qnt_tensor_destroy(back);  // runs e's deleter
      else if (v == 1)
        static_cast<DLManagedTensorVersioned *>(e)->deleter(
            static_cast<DLManagedTensorVersioned *>(e));
      else
        static_cast<DLManagedTensor *>(e)->deleter(static_cast<DLManagedTensor *>(e));
    }
  }
  if (deleted != 0) std::abort();
  qnt_tensor_destroy(out);
  if (deleted != 1) std::abort();
  qnt_qparams_destroy(qp);
  return 0;
}
