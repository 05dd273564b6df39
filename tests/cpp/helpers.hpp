// Small RAII wrappers and builders over the C API for the tests, so that a failed assertion
// leaks nothing (the suites also run under ASan).
#pragma once

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace qnt_test {

struct QP {
  qnt_qparams *p = nullptr;
  QP() = default;
  QP(const QP &) = delete;
  QP &operator=(const QP &) = delete;
  ~QP() { qnt_qparams_destroy(p); }
};

struct T {
  qnt_tensor *t = nullptr;
  T() = default;
  T(const T &) = delete;
  T &operator=(const T &) = delete;
  ~T() { qnt_tensor_destroy(t); }
};

inline void make_f32(T &out, const std::vector<int64_t> &shape, const std::vector<float> &v) {
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape.data(), shape.size(), nullptr,
                                        v.data(), v.size() * sizeof(float), &out.t),
            QNT_OK)
      << qnt_last_error_message();
}

// A tensor of dtype d holding raw bytes (packed as stored), with optional qparams.
inline void make_raw(T &out, qnt_dtype d, const std::vector<int64_t> &shape, const qnt_qparams *qp,
                     const void *bytes, size_t n) {
  ASSERT_EQ(qnt_tensor_create_from_data(d, shape.data(), shape.size(), qp, bytes, n, &out.t),
            QNT_OK)
      << qnt_last_error_message();
}

inline void make_q(T &out, qnt_dtype d, const std::vector<int64_t> &shape, const qnt_qparams *qp) {
  ASSERT_EQ(qnt_tensor_create(d, shape.data(), shape.size(), qp, &out.t), QNT_OK)
      << qnt_last_error_message();
}

inline void per_tensor(QP &out, qnt_dtype d, float scale, int32_t zp) {
  ASSERT_EQ(qnt_qparams_create_per_tensor(d, scale, zp, &out.p), QNT_OK)
      << qnt_last_error_message();
}

inline std::vector<uint8_t> bytes_of(const qnt_tensor *t) {
  size_t n = 0;
  EXPECT_EQ(qnt_tensor_byte_size(t, &n), QNT_OK);
  std::vector<uint8_t> b(n);
  if (n > 0) {
    EXPECT_EQ(qnt_tensor_copy_to(t, b.data(), n), QNT_OK);
  }
  return b;
}

template <class V>
std::vector<V> values_of(const qnt_tensor *t) {
  size_t n = 0;
  EXPECT_EQ(qnt_tensor_element_count(t, &n), QNT_OK);
  std::vector<V> v(n);
  if (n > 0) {
    EXPECT_EQ(qnt_tensor_copy_to(t, v.data(), n * sizeof(V)), QNT_OK);
  }
  return v;
}

inline std::vector<float> floats_of(const qnt_tensor *t) { return values_of<float>(t); }

}  // namespace qnt_test
