// quantize / dequantize / requantize through the C API, against hand-computed values.
#include "helpers.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

using namespace qnt_test;

std::vector<float> dequantized(const qnt_tensor *q, const std::vector<int64_t> &shape) {
  T y;
  EXPECT_EQ(qnt_tensor_create(QNT_DTYPE_F32, shape.data(), shape.size(), nullptr, &y.t), QNT_OK);
  EXPECT_EQ(qnt_dequantize(nullptr, q, y.t), QNT_OK) << qnt_last_error_message();
  return floats_of(y.t);
}

TEST(Quantize, PerTensorI8) {
  const std::vector<int64_t> shape{8};
  T x, q;
  make_f32(x, shape, {-1.0f, -0.0625f, 0.1875f, 0.3125f, 15.9f, 16.0f, 100.0f, kNaN});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.125f, 0, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_I8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK) << qnt_last_error_message();
  const std::vector<uint8_t> b = bytes_of(q.t);
  const int8_t want[8] = {-8, 0, 2, 2, 127, 127, 127, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(static_cast<int8_t>(b[i]), want[i]) << i;
  const std::vector<float> back = dequantized(q.t, shape);
  const float want_back[8] = {-1.0f, 0.0f, 0.25f, 0.25f, 15.875f, 15.875f, 15.875f, 0.0f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], want_back[i]) << i;
}

TEST(Quantize, PerTensorU8Affine) {
  const std::vector<int64_t> shape{6};
  T x, q;
  make_f32(x, shape, {-64.25f, -64.5f, 63.75f, 0.25f, 0.75f, -kInf});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.5f, 128, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_U8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  const std::vector<uint8_t> b = bytes_of(q.t);
  const uint8_t want[6] = {0, 0, 255, 128, 130, 0};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(b[i], want[i]) << i;
}

TEST(Quantize, PerAxisPositiveAndNegativeAxis) {
  const std::vector<int64_t> shape{2, 3};
  const float scales[3] = {1.0f, 0.5f, 0.25f};
  const int32_t zps[3] = {0, 1, -1};
  for (int64_t axis : {int64_t{1}, int64_t{-1}}) {
    T x, q;
    make_f32(x, shape, {1, 1, 1, -2.5f, 0.25f, 0.375f});
    QP qp;
    ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, axis, 3, scales, zps, &qp.p), QNT_OK);
    make_q(q, QNT_DTYPE_I8, shape, qp.p);
    ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK) << qnt_last_error_message();
    const std::vector<uint8_t> b = bytes_of(q.t);
    const int8_t want[6] = {1, 3, 3, -2, 1, 1};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int8_t>(b[i]), want[i]) << i;
    const std::vector<float> back = dequantized(q.t, shape);
    const float want_back[6] = {1, 1, 1, -2, 0, 0.5f};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(back[i], want_back[i]) << i;
  }
}

TEST(Quantize, PerAxisZero) {
  // Per output channel of a [3, 2] weight: axis 0.
  const std::vector<int64_t> shape{3, 2};
  const float scales[3] = {1.0f, 2.0f, 4.0f};
  T x, q;
  make_f32(x, shape, {3, -3, 3, -3, 3, -3});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 3, scales, nullptr, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_I8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  const std::vector<uint8_t> b = bytes_of(q.t);
  const int8_t want[6] = {3, -3, 2, -2, 1, -1};  // 1.5 -> 2, 0.75 -> 1
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int8_t>(b[i]), want[i]) << i;
}

TEST(Quantize, PerBlockInt4WithShortLastBlock) {
  const std::vector<int64_t> shape{2, 5};
  const float scales[6] = {1, 2, 4, 0.5f, 1, 8};  // [2 rows][3 blocks of 2 along axis 1]
  T x, q;
  make_f32(x, shape, {1, 2, 3, 4, 20, 0.25f, -0.75f, 7.5f, -9, 100});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_I4, 1, 2, 6, scales, nullptr, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_I4, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK) << qnt_last_error_message();
  const std::vector<uint8_t> b = bytes_of(q.t);
  ASSERT_EQ(b.size(), 5u);
  const uint8_t want[5] = {0x21, 0x22, 0x05, 0x7E, 0x78};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(b[i], want[i]) << i;
  const std::vector<float> back = dequantized(q.t, shape);
  const float want_back[10] = {1, 2, 4, 4, 20, 0, -1, 7, -8, 56};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(back[i], want_back[i]) << i;
}

TEST(Quantize, PerBlockAlongAxisZero) {
  // [3, 2] in blocks of 2 along axis 0: scale array [2 blocks][2 columns].
  const std::vector<int64_t> shape{3, 2};
  const float scales[4] = {1, 10, 0.5f, 100};
  T x, q;
  make_f32(x, shape, {1, 10, 2, 20, 1, 1000});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_I8, 0, 2, 4, scales, nullptr, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_I8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  const std::vector<uint8_t> b = bytes_of(q.t);
  const int8_t want[6] = {1, 1, 2, 2, 2, 10};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int8_t>(b[i]), want[i]) << i;
}

TEST(Quantize, NF4PerBlockFromCalibration) {
  const std::vector<int64_t> shape{8};
  T x, q;
  make_f32(x, shape, {0.5f, -1, 0.25f, 0, 2, 1, -2, 0.07958029955625534f * 2});
  QP qp;
  ASSERT_EQ(
      qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 0, 4, &qp.p),
      QNT_OK)
      << qnt_last_error_message();
  float s[2] = {0, 0};
  ASSERT_EQ(qnt_qparams_scales(qp.p, s, 2), QNT_OK);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 2.0f);
  make_q(q, QNT_DTYPE_NF4, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  const std::vector<uint8_t> b = bytes_of(q.t);
  const uint8_t want[4] = {0x0C, 0x7A, 0xCF, 0x80};  // codes 12 0 10 7 | 15 12 0 8
  for (int i = 0; i < 4; ++i) EXPECT_EQ(b[i], want[i]) << i;
  float cb[16];
  ASSERT_EQ(qnt_nf4_codebook(cb, 16), QNT_OK);
  const std::vector<float> back = dequantized(q.t, shape);
  const int codes[8] = {12, 0, 10, 7, 15, 12, 0, 8};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], cb[codes[i]] * s[i / 4]) << i;
}

TEST(Quantize, BinaryAndTernaryPerTensor) {
  {
    const std::vector<int64_t> shape{4};
    T x, q;
    make_f32(x, shape, {1, -3, 2, -2});
    QP qp;
    ASSERT_EQ(qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_BINARY, QNT_GRANULARITY_PER_TENSOR, 0,
                                     0, &qp.p),
              QNT_OK);
    make_q(q, QNT_DTYPE_BINARY, shape, qp.p);
    ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
    EXPECT_EQ(bytes_of(q.t)[0], 0x05);
    const std::vector<float> back = dequantized(q.t, shape);
    EXPECT_EQ(back, (std::vector<float>{2, -2, 2, -2}));
  }
  {
    const std::vector<int64_t> shape{5};
    T x, q;
    make_f32(x, shape, {0.1f, -0.5f, 1.0f, -0.05f, 0.3f});
    QP qp;
    ASSERT_EQ(qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_TERNARY, QNT_GRANULARITY_PER_TENSOR, 0,
                                     0, &qp.p),
              QNT_OK);
    float s = 0;
    ASSERT_EQ(qnt_qparams_scales(qp.p, &s, 1), QNT_OK);
    EXPECT_NEAR(s, 0.39f, 1e-6f);
    make_q(q, QNT_DTYPE_TERNARY, shape, qp.p);
    ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
    const std::vector<uint8_t> b = bytes_of(q.t);
    EXPECT_EQ(b[0], 0x1C);  // 0, -1, +1, 0
    EXPECT_EQ(b[1], 0x01);  // +1, then zeroed tail bits
  }
}

TEST(Quantize, TailBitsAreCleared) {
  std::vector<uint8_t> mem(2, 0xFF);
  const int64_t shape[1] = {3};
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U4, 1.0f, 0, &qp.p), QNT_OK);
  T x, q;
  make_f32(x, {3}, {1, 2, 3});
  ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_U4, shape, 1, qp.p, mem.data(), mem.size(), &q.t), QNT_OK);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  EXPECT_EQ(mem[0], 0x21);
  EXPECT_EQ(mem[1], 0x03);
}

TEST(Requantize, I8ToU8) {
  const std::vector<int64_t> shape{5};
  QP a, b;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.5f, 0, &a.p), QNT_OK);
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.25f, 128, &b.p), QNT_OK);
  const int8_t src[5] = {-128, -1, 0, 1, 127};
  T s, d;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I8, shape.data(), 1, a.p, src, 5, &s.t), QNT_OK);
  make_q(d, QNT_DTYPE_U8, shape, b.p);
  ASSERT_EQ(qnt_requantize(nullptr, s.t, d.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(bytes_of(d.t), (std::vector<uint8_t>{0, 126, 128, 130, 255}));
}

TEST(Requantize, PerAxisI8ToPerBlockI4) {
  const std::vector<int64_t> shape{2, 4};
  const float sa[2] = {0.5f, 2.0f};
  const float sb[4] = {1, 2, 1, 8};
  QP a, b;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 2, sa, nullptr, &a.p), QNT_OK);
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_I4, 1, 2, 4, sb, nullptr, &b.p), QNT_OK);
  const int8_t src[8] = {2, 6, 14, -3, 1, 3, -5, 30};  // x = 1 3 7 -1.5 | 2 6 -10 60
  T s, d;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I8, shape.data(), 2, a.p, src, 8, &s.t), QNT_OK);
  make_q(d, QNT_DTYPE_I4, shape, b.p);
  ASSERT_EQ(qnt_requantize(nullptr, s.t, d.t), QNT_OK) << qnt_last_error_message();
  // 1/1 = 1, 3/1 = 3, 7/2 = 3.5 -> 4, -1.5/2 = -0.75 -> -1 | 2/1, 6/1 -> 6, -10/8 = -1.25 -> -1,
  // 60/8 = 7.5 -> 8 -> 7 (saturated)
  const std::vector<float> back = dequantized(d.t, shape);
  EXPECT_EQ(back, (std::vector<float>{1, 3, 8, -2, 2, 6, -8, 56}));
}

// Every dtype and granularity, on random data with specials: the op (several threads, chunked)
// equals the reference rule applied element by element, and dequantize inverts it within
// half a step for in-range values.
TEST(Quantize, MatchesTheScalarRuleOnRandomData) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const std::vector<int64_t> shape{7, 33, 151};  // 34881 elements: more than one chunk
  const size_t n = 7 * 33 * 151;
  std::vector<float> xs(n);
  for (float &v : xs) v = normal(rng);
  xs[5] = kNaN;
  xs[6] = kInf;
  xs[7] = -kInf;
  xs[8] = std::numeric_limits<float>::denorm_min();
  xs[9] = -0.0f;
  T x;
  make_f32(x, shape, xs);
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  ASSERT_EQ(qnt_context_set_num_threads(ctx, 3), QNT_OK);

  const qnt_dtype dtypes[] = {QNT_DTYPE_I8,     QNT_DTYPE_U8,     QNT_DTYPE_I16, QNT_DTYPE_U16,
                              QNT_DTYPE_I4,     QNT_DTYPE_U4,     QNT_DTYPE_I32, QNT_DTYPE_NF4,
                              QNT_DTYPE_BINARY, QNT_DTYPE_TERNARY};
  const qnt_granularity grans[] = {QNT_GRANULARITY_PER_TENSOR, QNT_GRANULARITY_PER_AXIS,
                                   QNT_GRANULARITY_PER_BLOCK};
  for (qnt_dtype d : dtypes) {
    for (qnt_granularity g : grans) {
      const int64_t axis = g == QNT_GRANULARITY_PER_BLOCK ? 2 : 1;
      const int64_t block = 32;
      const size_t groups = g == QNT_GRANULARITY_PER_TENSOR ? 1
                            : g == QNT_GRANULARITY_PER_AXIS ? 33
                                                            : 7 * 33 * 5;  // ceil(151/32) = 5
      std::vector<float> scales(groups);
      std::vector<int32_t> zps(groups, 0);
      int32_t lo = 0, hi = 0;
      const bool integer = qnt_dtype_range(d, &lo, &hi) == QNT_OK;
      std::uniform_real_distribution<float> sd(0.01f, 1.0f);
      for (size_t i = 0; i < groups; ++i) {
        scales[i] = sd(rng);
        if (integer && d != QNT_DTYPE_TERNARY)
          zps[i] = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(
              std::max<int64_t>(lo, -1000), std::min<int64_t>(hi, 1000))(rng));
      }
      QP qp;
      const qnt_status st =
          g == QNT_GRANULARITY_PER_TENSOR
              ? qnt_qparams_create_per_tensor(d, scales[0], zps[0], &qp.p)
          : g == QNT_GRANULARITY_PER_AXIS
              ? qnt_qparams_create_per_axis(d, axis, groups, scales.data(), zps.data(), &qp.p)
              : qnt_qparams_create_per_block(d, axis, block, groups, scales.data(), zps.data(),
                                             &qp.p);
      ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
      T q;
      make_q(q, d, shape, qp.p);
      ASSERT_EQ(qnt_quantize(ctx, x.t, q.t), QNT_OK) << qnt_last_error_message();
      const std::vector<uint8_t> b = bytes_of(q.t);
      const int bits = qnt_dtype_bits(d);
      const bool is_signed = integer && lo < 0;
      const std::vector<float> back = dequantized(q.t, shape);
      for (size_t i = 0; i < n; ++i) {
        const size_t o = i / (33 * 151), a = (i / 151) % 33, k = i % 151;
        const size_t gi = g == QNT_GRANULARITY_PER_TENSOR ? 0
                          : g == QNT_GRANULARITY_PER_AXIS ? a
                                                          : (o * 33 + a) * 5 + k / 32;
        const float s = scales[gi];
        const int32_t got = qnt::ref::load_element(b.data(), i, bits, is_signed);
        int32_t want = 0;
        float want_back = 0;
        if (d == QNT_DTYPE_NF4) {
          want = qnt::ref::quantize_nf4(xs[i], s);
          want_back = qnt::ref::kNF4Codebook[want] * s;
        } else if (d == QNT_DTYPE_BINARY) {
          want = xs[i] < 0 ? 0 : 1;
          want_back = want ? s : -s;
        } else {
          want = qnt::ref::quantize_integer(xs[i], s, zps[gi], lo, hi);
          want_back = static_cast<float>(static_cast<int64_t>(want) - zps[gi]) * s;
          const float r = xs[i] / s;
          if (std::isfinite(xs[i]) && r + static_cast<float>(zps[gi]) > static_cast<float>(lo) &&
              r + static_cast<float>(zps[gi]) < static_cast<float>(hi)) {
            ASSERT_LE(std::fabs(want_back - xs[i]), s * 0.5f * 1.0001f) << i;
          }
        }
        ASSERT_EQ(got, want) << qnt_dtype_name(d) << " g=" << g << " i=" << i << " x=" << xs[i];
        ASSERT_EQ(back[i], want_back) << qnt_dtype_name(d) << " g=" << g << " i=" << i;
      }
      // One thread gives the same bytes.
      T q1;
      make_q(q1, d, shape, qp.p);
      qnt_context *one = nullptr;
      ASSERT_EQ(qnt_context_create(&one), QNT_OK);
      ASSERT_EQ(qnt_context_set_num_threads(one, 1), QNT_OK);
      ASSERT_EQ(qnt_quantize(one, x.t, q1.t), QNT_OK);
      qnt_context_destroy(one);
      ASSERT_EQ(bytes_of(q1.t), b) << qnt_dtype_name(d) << " g=" << g;
    }
  }
  qnt_context_destroy(ctx);
}

TEST(Quantize, OddSizesOfPackedTypes) {
  for (int64_t len : {1, 7, 33, 1023}) {
    const std::vector<int64_t> shape{len};
    std::vector<float> xs(static_cast<size_t>(len));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
    T x;
    make_f32(x, shape, xs);
    for (qnt_dtype d : {QNT_DTYPE_I4, QNT_DTYPE_U4, QNT_DTYPE_TERNARY, QNT_DTYPE_BINARY}) {
      QP qp;
      ASSERT_EQ(qnt_qparams_create_per_tensor(d, 1.0f, d == QNT_DTYPE_U4 ? 8 : 0, &qp.p), QNT_OK);
      T q;
      make_q(q, d, shape, qp.p);
      ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
      const std::vector<float> back = dequantized(q.t, shape);
      for (size_t i = 0; i < xs.size(); ++i) {
        float want = xs[i];
        if (d == QNT_DTYPE_TERNARY) want = std::max(-1.0f, std::min(1.0f, xs[i]));
        if (d == QNT_DTYPE_BINARY) want = xs[i] < 0 ? -1.0f : 1.0f;
        ASSERT_EQ(back[i], want) << qnt_dtype_name(d) << " len=" << len << " i=" << i;
      }
      const std::vector<uint8_t> b = bytes_of(q.t);
      const size_t used = static_cast<size_t>(len * qnt_dtype_bits(d)) % 8;
      if (used != 0) {
        EXPECT_EQ(b.back() >> used, 0) << "tail bits of " << qnt_dtype_name(d);
      }
    }
  }
}

TEST(Quantize, Errors) {
  const std::vector<int64_t> s4{4}, s5{5};
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 1.0f, 0, &qp.p), QNT_OK);
  T x, q5, raw, f;
  make_f32(x, s4, {1, 2, 3, 4});
  make_q(q5, QNT_DTYPE_I8, s5, qp.p);
  make_q(raw, QNT_DTYPE_I8, s4, nullptr);
  make_q(f, QNT_DTYPE_F32, s4, nullptr);
  EXPECT_EQ(qnt_quantize(nullptr, x.t, q5.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_NE(std::string(qnt_last_error_message()).find("[4]"), std::string::npos);
  EXPECT_EQ(qnt_quantize(nullptr, x.t, raw.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_quantize(nullptr, x.t, f.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_quantize(nullptr, raw.t, q5.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_dequantize(nullptr, x.t, f.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_requantize(nullptr, raw.t, q5.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_quantize(nullptr, nullptr, q5.t), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_dequantize(nullptr, q5.t, nullptr), QNT_ERR_NULL_POINTER);
  // x and y over the same memory
  alignas(4) uint8_t mem[16] = {0};
  T xw, yw;
  const int64_t s[1] = {4};
  ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, s, 1, nullptr, mem, 16, &xw.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_I8, s, 1, qp.p, mem + 8, 8, &yw.t), QNT_OK);
  EXPECT_EQ(qnt_quantize(nullptr, xw.t, yw.t), QNT_ERR_INVALID_ARGUMENT);
}

}  // namespace

namespace {

// The ONNX backend node tests (onnx/backend/test/case/node/quantizelinear.py and
// dequantizelinear.py: test_quantizelinear, test_quantizelinear_axis, test_dequantizelinear,
// test_dequantizelinear_axis), with their inputs and expected outputs.
TEST(OnnxBackend, QuantizeLinear) {
  const std::vector<int64_t> shape{6};
  T x, q;
  make_f32(x, shape, {0, 2, 3, 1000, -254, -1000});
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 2.0f, 128, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_U8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  EXPECT_EQ(bytes_of(q.t), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));  // 1.5 -> 2
}

const std::vector<float> kAxisX{-162, 10, -100, 232, -20,  -50,  -76,  0,    0,
                                252,  32, -44,  245, -485, -960, -270, -375, -470};
const std::vector<uint8_t> kAxisQ{3,  89, 34, 200, 74, 59, 5,   24,  24,
                                  87, 32, 13, 245, 99, 4,  142, 121, 102};

TEST(OnnxBackend, QuantizeLinearAxis) {
  const std::vector<int64_t> shape{1, 3, 3, 2};
  const float scales[3] = {2, 4, 5};
  const int32_t zps[3] = {84, 24, 196};
  T x, q;
  make_f32(x, shape, kAxisX);
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 1, 3, scales, zps, &qp.p), QNT_OK);
  make_q(q, QNT_DTYPE_U8, shape, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  EXPECT_EQ(bytes_of(q.t), kAxisQ);
}

TEST(OnnxBackend, DequantizeLinear) {
  const std::vector<int64_t> shape{4};
  const uint8_t raw[4] = {0, 3, 128, 255};
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 2.0f, 128, &qp.p), QNT_OK);
  T q;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_U8, shape.data(), 1, qp.p, raw, 4, &q.t), QNT_OK);
  EXPECT_EQ(dequantized(q.t, shape), (std::vector<float>{-256, -250, 0, 254}));
}

TEST(OnnxBackend, DequantizeLinearAxis) {
  const std::vector<int64_t> shape{1, 3, 3, 2};
  const float scales[3] = {2, 4, 5};
  const int32_t zps[3] = {84, 24, 196};
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 1, 3, scales, zps, &qp.p), QNT_OK);
  T q;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_U8, shape.data(), 4, qp.p, kAxisQ.data(),
                                        kAxisQ.size(), &q.t),
            QNT_OK);
  EXPECT_EQ(dequantized(q.t, shape), kAxisX);
}

}  // namespace
