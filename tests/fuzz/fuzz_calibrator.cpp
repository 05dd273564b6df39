// libFuzzer target: qnt_calibrator_deserialize on any bytes. Half of the inputs are re-signed
// with a valid checksum first, so the fuzzer reaches the state checks behind it (a checksum
// protects nothing against a crafted buffer). Whatever deserializes must compute to a
// documented status in bounded time (libFuzzer's -timeout catches a hang), serialize back to
// the same bytes, merge (and a merged state serialize and deserialize back) and observe.
#include "calib/calibrator.hpp"
#include "fuzz_common.hpp"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  std::vector<uint8_t> buf(data + 1, data + size);
  if ((data[0] & 1) != 0) {  // re-sign: the body is the input, the checksum is made valid
    const uint64_t sum = qnt::calib::checksum(buf.data(), buf.size());
    for (int i = 0; i < 8; ++i) buf.push_back(static_cast<uint8_t>(sum >> (8 * i)));
  }
  qnt_calibrator *c = nullptr;
  const qnt_status s = qnt_calibrator_deserialize(buf.data(), buf.size(), &c);
  FUZZ_CALL(s);
  if (s != QNT_OK) {
    if (c != nullptr) std::abort();  // outputs untouched on failure
    return 0;
  }
  // Every search costs O(bins) per channel (qnt.h), so every buffer is computed too.
  const bool compute = true;
  qnt_qparams *qp = nullptr;
  if (compute) FUZZ_CALL(qnt_calibrator_compute(nullptr, c, &qp));
  qnt_qparams_destroy(qp);
  // What deserializes serializes back to the same bytes.
  size_t n = 0;
  FUZZ_CALL(qnt_calibrator_serialize(c, nullptr, 0, &n));
  std::vector<uint8_t> again(n);
  FUZZ_CALL(qnt_calibrator_serialize(c, again.data(), again.size(), &n));
  if (again != buf) std::abort();
  qnt_calibrator *d = nullptr;
  FUZZ_CALL(qnt_calibrator_deserialize(again.data(), again.size(), &d));
  const qnt_status merged = qnt_calibrator_merge(c, d);
  FUZZ_CALL(merged);
  if (merged == QNT_OK) {  // merge refuses what it could not serialize back
    FUZZ_CALL(qnt_calibrator_serialize(c, nullptr, 0, &n));
    std::vector<uint8_t> m(n);
    FUZZ_CALL(qnt_calibrator_serialize(c, m.data(), m.size(), &n));
    qnt_calibrator *back = nullptr;
    if (qnt_calibrator_deserialize(m.data(), m.size(), &back) != QNT_OK) std::abort();
    qnt_calibrator_destroy(back);
  }
  qp = nullptr;
  if (compute) FUZZ_CALL(qnt_calibrator_compute(nullptr, c, &qp));
  qnt_qparams_destroy(qp);
  const float x[6] = {1.0f, -2.5f, 0.0f, 1e30f, -1e-30f, 3.0f};
  const int64_t shape[2] = {2, 3};
  qnt_tensor *t = nullptr;
  FUZZ_CALL(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 2, nullptr, x, sizeof x, &t));
  FUZZ_CALL(qnt_calibrator_observe(nullptr, d, t));
  qp = nullptr;
  if (compute) FUZZ_CALL(qnt_calibrator_compute(nullptr, d, &qp));
  qnt_qparams_destroy(qp);
  uint64_t f = 0, nan = 0, inf = 0;
  FUZZ_CALL(qnt_calibrator_counts(c, &f, &nan, &inf));
  qnt_tensor_destroy(t);
  qnt_calibrator_destroy(d);
  qnt_calibrator_destroy(c);
  return 0;
}
