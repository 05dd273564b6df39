// Small RAII wrappers and builders over the C API for the tests, so that a failed assertion
// leaks nothing (the suites also run under ASan).
#pragma once

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
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

// A context capped at one kernel set, with a thread count.
struct Ctx {
  qnt_context *c = nullptr;
  Ctx(qnt_isa isa, int32_t threads) {
    EXPECT_EQ(qnt_context_create(&c), QNT_OK);
    EXPECT_EQ(qnt_context_set_max_isa(c, isa), QNT_OK);
    EXPECT_EQ(qnt_context_set_num_threads(c, threads), QNT_OK);
  }
  Ctx(const Ctx &) = delete;
  Ctx &operator=(const Ctx &) = delete;
  ~Ctx() { qnt_context_destroy(c); }
  qnt_isa isa() const {
    qnt_isa i = 0;
    EXPECT_EQ(qnt_context_isa(c, &i), QNT_OK);
    return i;
  }
};

struct Desc {
  qnt_op_desc *d = nullptr;
  Desc() { EXPECT_EQ(qnt_op_desc_create(&d), QNT_OK); }
  Desc(const Desc &) = delete;
  Desc &operator=(const Desc &) = delete;
  ~Desc() { qnt_op_desc_destroy(d); }
};

struct Prep {
  qnt_prepared *p = nullptr;
  Prep() = default;
  Prep(const Prep &) = delete;
  Prep &operator=(const Prep &) = delete;
  ~Prep() { qnt_prepared_destroy(p); }
};

// A float's bits and back.
inline uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Those of `isas` that this machine runs as kernel sets of their own (a context capped there
// reports that cap).
inline std::vector<qnt_isa> runnable_isas(std::initializer_list<qnt_isa> isas) {
  std::vector<qnt_isa> out;
  for (qnt_isa isa : isas) {
    qnt_context *c = nullptr;
    if (qnt_context_create(&c) != QNT_OK) continue;
    qnt_isa got = 0;
    if (qnt_context_set_max_isa(c, isa) == QNT_OK && qnt_context_isa(c, &got) == QNT_OK &&
        got == isa)
      out.push_back(isa);
    qnt_context_destroy(c);
  }
  return out;
}

// The kernels an uncapped context chooses ("family.dtype.run=set" lines); "" if it fails.
inline std::string chosen_kernels() {
  qnt_context *c = nullptr;
  if (qnt_context_create(&c) != QNT_OK) return "";
  const char *k = nullptr;
  std::string s = qnt_context_kernels(c, &k) == QNT_OK ? k : "";
  qnt_context_destroy(c);
  return s;
}

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
