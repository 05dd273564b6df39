// The quantized operators against the ONNX backend test vectors, against independent naive
// implementations in int64/double followed by the documented rounding, and against hand-worked
// values.
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

/* The conv geometry through the keyed options of a qnt_op_desc. */
[[maybe_unused]] static qnt_status desc_strides(qnt_op_desc *d, int64_t h, int64_t w) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_STRIDE_H, h);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_STRIDE_W, w);
}
[[maybe_unused]] static qnt_status desc_pads(qnt_op_desc *d, int64_t t, int64_t l, int64_t b,
                                             int64_t r) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_PAD_TOP, t);
  if (s == QNT_OK) s = qnt_op_desc_set(d, QNT_OP_PAD_LEFT, l);
  if (s == QNT_OK) s = qnt_op_desc_set(d, QNT_OP_PAD_BOTTOM, b);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_PAD_RIGHT, r);
}
[[maybe_unused]] static qnt_status desc_dilations(qnt_op_desc *d, int64_t h, int64_t w) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_DILATION_H, h);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_DILATION_W, w);
}
[[maybe_unused]] static qnt_status desc_groups(qnt_op_desc *d, int64_t g) {
  return qnt_op_desc_set(d, QNT_OP_GROUPS, g);
}

using namespace qnt_test;

namespace {

// The documented requantization, written independently of the library: float32 multiplier
// (sa * sb) / sy, (float)acc * multiplier, rounded half to even by the FPU's default mode.
int32_t doc_requant(int64_t acc64, float sa, float sb, float sy, int32_t zy, int32_t qmin,
                    int32_t qmax) {
  const auto acc = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(acc64)));
  const float product = sa * sb;
  const float m = product / sy;
  const float v = static_cast<float>(acc) * m;
  const double r = static_cast<double>(std::nearbyint(v)) + zy;
  return static_cast<int32_t>(std::min<double>(qmax, std::max<double>(qmin, r)));
}

int32_t val(const std::vector<uint8_t> &bytes, size_t i, bool is_signed) {
  return is_signed ? static_cast<int8_t>(bytes[i]) : bytes[i];
}

// --- ONNX backend node tests ---------------------------------------------------------------

TEST(OnnxBackend, MatMulInteger) {
  const uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0};
  const uint8_t b[6] = {1, 4, 2, 5, 3, 6};
  QP qa, qb;
  per_tensor(qa, QNT_DTYPE_U8, 1.0f, 12);
  per_tensor(qb, QNT_DTYPE_U8, 1.0f, 0);
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_U8, {4, 3}, qa.p, a, 12);
  make_raw(tb, QNT_DTYPE_U8, {3, 2}, qb.p, b, 6);
  make_q(ty, QNT_DTYPE_I32, {4, 2}, nullptr);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(values_of<int32_t>(ty.t),
            (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
}

const uint8_t kQlmA[8] = {208, 236, 0, 238, 3, 214, 255, 29};
const uint8_t kQlmB[12] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};

TEST(OnnxBackend, QLinearMatMul2D) {
  QP qa, qb, qy;
  per_tensor(qa, QNT_DTYPE_U8, 0.0066f, 113);
  per_tensor(qb, QNT_DTYPE_U8, 0.00705f, 114);
  per_tensor(qy, QNT_DTYPE_U8, 0.0107f, 118);
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_U8, {2, 4}, qa.p, kQlmA, 8);
  make_raw(tb, QNT_DTYPE_U8, {4, 3}, qb.p, kQlmB, 12);
  make_q(ty, QNT_DTYPE_U8, {2, 3}, qy.p);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(bytes_of(ty.t), (std::vector<uint8_t>{168, 115, 255, 1, 66, 151}));
}

TEST(OnnxBackend, QLinearMatMul3D) {
  QP qa, qb, qy;
  per_tensor(qa, QNT_DTYPE_U8, 0.0066f, 113);
  per_tensor(qb, QNT_DTYPE_U8, 0.00705f, 114);
  per_tensor(qy, QNT_DTYPE_U8, 0.0107f, 118);
  std::vector<uint8_t> a(kQlmA, kQlmA + 8), b(kQlmB, kQlmB + 12);
  a.insert(a.end(), kQlmA, kQlmA + 8);
  b.insert(b.end(), kQlmB, kQlmB + 12);
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_U8, {2, 2, 4}, qa.p, a.data(), a.size());
  make_raw(tb, QNT_DTYPE_U8, {2, 4, 3}, qb.p, b.data(), b.size());
  make_q(ty, QNT_DTYPE_U8, {2, 2, 3}, qy.p);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(bytes_of(ty.t),
            (std::vector<uint8_t>{168, 115, 255, 1, 66, 151, 168, 115, 255, 1, 66, 151}));
}

void expect_dynamic(const std::vector<int64_t> &shape, const std::vector<float> &x, float scale,
                    int32_t zp, const std::vector<uint8_t> &want) {
  T tx;
  make_f32(tx, shape, x);
  qnt_tensor *y = nullptr;
  ASSERT_EQ(qnt_dynamic_quantize_linear(nullptr, tx.t, &y), QNT_OK) << qnt_last_error_message();
  T ty;
  ty.t = y;
  QP qp;
  ASSERT_EQ(qnt_tensor_qparams(y, &qp.p), QNT_OK);
  float s = 0;
  int32_t z = -1;
  ASSERT_EQ(qnt_qparams_scales(qp.p, &s, 1), QNT_OK);
  ASSERT_EQ(qnt_qparams_zero_points(qp.p, &z, 1), QNT_OK);
  EXPECT_EQ(s, scale);
  EXPECT_EQ(z, zp);
  EXPECT_EQ(bytes_of(y), want);
}

TEST(OnnxBackend, DynamicQuantizeLinear) {
  expect_dynamic({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f}, 0x1.414142p-6f, 153,
                 {153, 255, 0, 26, 221, 179});
  expect_dynamic({6}, {-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f}, 0x1.010102p-6f, 255,
                 {191, 121, 172, 96, 42, 0});
  expect_dynamic({3, 4}, {1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f},
                 0x1.010102p-6f, 0, {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149});
  // All zeros: ONNX would divide by a zero scale; qnt documents scale 1, zero point 0.
  expect_dynamic({3}, {0, 0, 0}, 1.0f, 0, {0, 0, 0});
}

const uint8_t kConvX[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10};

TEST(OnnxBackend, ConvIntegerWithoutPadding) {
  const uint8_t w[4] = {1, 1, 1, 1};
  QP qx;
  per_tensor(qx, QNT_DTYPE_U8, 1.0f, 1);
  T tx, tw, ty;
  make_raw(tx, QNT_DTYPE_U8, {1, 1, 3, 3}, qx.p, kConvX, 9);
  make_raw(tw, QNT_DTYPE_U8, {1, 1, 2, 2}, nullptr, w, 4);
  make_q(ty, QNT_DTYPE_I32, {1, 1, 2, 2}, nullptr);
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  ASSERT_EQ(qnt_qconv2d(nullptr, tx.t, tw.t, nullptr, d, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(values_of<int32_t>(ty.t), (std::vector<int32_t>{12, 16, 24, 28}));
  qnt_op_desc_destroy(d);
}

TEST(OnnxBackend, ConvIntegerWithPadding) {
  const uint8_t w[4] = {1, 1, 1, 1};
  QP qx;
  per_tensor(qx, QNT_DTYPE_U8, 1.0f, 1);
  T tx, tw, ty;
  make_raw(tx, QNT_DTYPE_U8, {1, 1, 3, 3}, qx.p, kConvX, 9);
  make_raw(tw, QNT_DTYPE_U8, {1, 1, 2, 2}, nullptr, w, 4);
  make_q(ty, QNT_DTYPE_I32, {1, 1, 4, 4}, nullptr);
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  ASSERT_EQ(desc_pads(d, 1, 1, 1, 1), QNT_OK);
  int64_t shape[4];
  ASSERT_EQ(qnt_conv2d_output_shape(tx.t, tw.t, d, shape, 4), QNT_OK);
  EXPECT_EQ(std::vector<int64_t>(shape, shape + 4), (std::vector<int64_t>{1, 1, 4, 4}));
  ASSERT_EQ(qnt_qconv2d(nullptr, tx.t, tw.t, nullptr, d, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(values_of<int32_t>(ty.t),
            (std::vector<int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  qnt_op_desc_destroy(d);
}

TEST(OnnxBackend, QLinearConv) {
  const uint8_t x[49] = {255, 174, 162, 25,  203, 168, 58,  15,  59,  237, 95,  129, 0,
                         64,  56,  242, 153, 221, 168, 12,  166, 232, 178, 186, 195, 237,
                         162, 237, 188, 39,  124, 77,  80,  102, 43,  127, 230, 21,  83,
                         41,  40,  134, 255, 154, 92,  141, 42,  148, 247};
  const uint8_t w[1] = {0};
  const std::vector<uint8_t> want = {
      0,   81,  93,  230, 52,  87,  197, 240, 196, 18,  160, 126, 255, 191, 199, 13,  102,
      34,  87,  243, 89,  23,  77,  69,  60,  18,  93,  18,  67,  216, 131, 178, 175, 153,
      212, 128, 25,  234, 172, 214, 215, 121, 0,   101, 163, 114, 213, 107, 8};
  QP qx, qw, qy;
  per_tensor(qx, QNT_DTYPE_U8, 0.00369204697f, 132);
  per_tensor(qw, QNT_DTYPE_U8, 0.00172794575f, 255);
  per_tensor(qy, QNT_DTYPE_U8, 0.00162681262f, 123);
  T tx, tw, ty;
  make_raw(tx, QNT_DTYPE_U8, {1, 1, 7, 7}, qx.p, x, 49);
  make_raw(tw, QNT_DTYPE_U8, {1, 1, 1, 1}, qw.p, w, 1);
  make_q(ty, QNT_DTYPE_U8, {1, 1, 7, 7}, qy.p);
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  ASSERT_EQ(qnt_qconv2d(nullptr, tx.t, tw.t, nullptr, d, ty.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(bytes_of(ty.t), want);
  qnt_op_desc_destroy(d);
}

// --- qmatmul against a naive int64 product -----------------------------------------------

struct MatmulCase {
  int64_t M, K, N;
  qnt_dtype da, db, dy;
  int32_t za, zy;
  bool per_column;
};

TEST(QMatMul, MatchesNaiveProductAndDocumentedRounding) {
  std::mt19937 rng(7);
  const MatmulCase cases[] = {
      {1, 1, 1, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_U8, 0, 0, false},
      {3, 17, 5, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_I8, 255, -128, true},
      {17, 3, 255, QNT_DTYPE_I8, QNT_DTYPE_I8, QNT_DTYPE_U8, -128, 255, true},
      {5, 255, 3, QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I8, 127, 127, false},
      {7, 33, 9, QNT_DTYPE_U8, QNT_DTYPE_U8, QNT_DTYPE_F32, 128, 0, true},
      {4, 64, 6, QNT_DTYPE_I8, QNT_DTYPE_I8, QNT_DTYPE_I32, 3, 0, true},
  };
  for (const MatmulCase &c : cases) {
    const bool a_signed = c.da == QNT_DTYPE_I8, b_signed = c.db == QNT_DTYPE_I8;
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<uint8_t> a(static_cast<size_t>(c.M * c.K)), b(static_cast<size_t>(c.K * c.N));
    for (auto &v : a) v = static_cast<uint8_t>(byte(rng));
    for (auto &v : b) v = static_cast<uint8_t>(byte(rng));
    std::vector<float> sb(static_cast<size_t>(c.N));
    std::vector<int32_t> zb(static_cast<size_t>(c.N));
    std::uniform_real_distribution<float> sd(1e-3f, 0.05f);
    for (int64_t n = 0; n < c.N; ++n) {
      sb[static_cast<size_t>(n)] = c.per_column ? sd(rng) : 0.01f;
      zb[static_cast<size_t>(n)] =
          c.per_column ? (b_signed ? byte(rng) - 128 : byte(rng)) : (b_signed ? -7 : 200);
    }
    const float sa = 0.02f, sy = 0.5f;
    QP qa, qb, qy;
    per_tensor(qa, c.da, sa, c.za);
    if (c.per_column)
      ASSERT_EQ(qnt_qparams_create_per_axis(c.db, -1, static_cast<size_t>(c.N), sb.data(),
                                            zb.data(), &qb.p),
                QNT_OK);
    else
      per_tensor(qb, c.db, sb[0], zb[0]);
    const bool quantized_y = c.dy == QNT_DTYPE_I8 || c.dy == QNT_DTYPE_U8;
    if (quantized_y) per_tensor(qy, c.dy, sy, c.zy);
    std::vector<int32_t> bias(static_cast<size_t>(c.N));
    for (auto &v : bias) v = byte(rng) * 37 - 4000;
    T ta, tb, ty, tbias;
    make_raw(ta, c.da, {c.M, c.K}, qa.p, a.data(), a.size());
    make_raw(tb, c.db, {c.K, c.N}, qb.p, b.data(), b.size());
    make_q(ty, c.dy, {c.M, c.N}, quantized_y ? qy.p : nullptr);
    make_raw(tbias, QNT_DTYPE_I32, {c.N}, nullptr, bias.data(), bias.size() * 4);
    ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, tbias.t, ty.t), QNT_OK) << qnt_last_error_message();

    const std::vector<uint8_t> got = bytes_of(ty.t);
    int32_t qmin = 0, qmax = 0;
    if (quantized_y) qnt_dtype_range(c.dy, &qmin, &qmax);
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t n = 0; n < c.N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < c.K; ++k)
          acc += static_cast<int64_t>(val(a, static_cast<size_t>(m * c.K + k), a_signed) - c.za) *
                 (val(b, static_cast<size_t>(k * c.N + n), b_signed) - zb[static_cast<size_t>(n)]);
        acc += bias[static_cast<size_t>(n)];
        const size_t i = static_cast<size_t>(m * c.N + n);
        const float sbn = sb[static_cast<size_t>(n)];
        if (c.dy == QNT_DTYPE_I32) {
          int32_t v;
          std::memcpy(&v, got.data() + 4 * i, 4);
          ASSERT_EQ(v, acc);
        } else if (c.dy == QNT_DTYPE_F32) {
          float v;
          std::memcpy(&v, got.data() + 4 * i, 4);
          const float scale = sa * sbn;
          ASSERT_EQ(v, static_cast<float>(acc) * scale) << m << "," << n;
          ASSERT_NEAR(v, static_cast<double>(acc) * sa * sbn, 1e-6 * std::fabs(v) + 1e-30);
        } else {
          const int32_t want = doc_requant(acc, sa, sbn, sy, c.zy, qmin, qmax);
          const int32_t v = val(got, i, c.dy == QNT_DTYPE_I8);
          ASSERT_EQ(v, want) << "M=" << c.M << " K=" << c.K << " N=" << c.N << " at " << m << ","
                             << n;
          // and the real-valued product in double, rounded, is at most one step away
          const double real = static_cast<double>(acc) * sa * sbn / sy + c.zy;
          if (real > qmin && real < qmax) {
            ASSERT_LE(std::fabs(v - real), 0.5 + 1e-3);
          }
        }
      }
    }
  }
}

TEST(QMatMul, BatchBroadcastAndF32Bias) {
  // a [2, 1, 2, 3] x b [3, 3, 2] -> y [2, 3, 2, 2]; zero points 0, no scales needed for i32.
  std::vector<int8_t> a(12), b(18);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int8_t>(static_cast<int>(i) - 5);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<int8_t>(3 * static_cast<int>(i) - 20);
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_I8, {2, 1, 2, 3}, nullptr, a.data(), a.size());
  make_raw(tb, QNT_DTYPE_I8, {3, 3, 2}, nullptr, b.data(), b.size());
  make_q(ty, QNT_DTYPE_I32, {2, 3, 2, 2}, nullptr);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK) << qnt_last_error_message();
  const std::vector<int32_t> y = values_of<int32_t>(ty.t);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          int32_t acc = 0;
          for (int k = 0; k < 3; ++k) acc += a[(i * 2 + m) * 3 + k] * b[(j * 3 + k) * 2 + n];
          ASSERT_EQ(y[static_cast<size_t>(((i * 3 + j) * 2 + m) * 2 + n)], acc);
        }

  // f32 output with an f32 bias: acc * (sa * sb) + bias
  QP qa, qb;
  per_tensor(qa, QNT_DTYPE_I8, 0.5f, 0);
  per_tensor(qb, QNT_DTYPE_I8, 0.25f, 0);
  const int8_t a2[2] = {2, 3}, b2[2] = {4, -8};
  const float bias[1] = {0.125f};
  T ta2, tb2, ty2, tbias;
  make_raw(ta2, QNT_DTYPE_I8, {1, 2}, qa.p, a2, 2);
  make_raw(tb2, QNT_DTYPE_I8, {2, 1}, qb.p, b2, 2);
  make_f32(tbias, {1}, {bias[0]});
  make_q(ty2, QNT_DTYPE_F32, {1, 1}, nullptr);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta2.t, tb2.t, tbias.t, ty2.t), QNT_OK);
  EXPECT_EQ(floats_of(ty2.t)[0], -16 * 0.125f + 0.125f);  // acc = 8 - 24 = -16
}

TEST(QMatMul, SaturationAndWrap) {
  // K = 33025 terms of 255 * 255 reach 2^31 - 1 - ... : the last K that cannot wrap.
  const int64_t K = 40000;
  std::vector<uint8_t> a(static_cast<size_t>(K), 255), b(static_cast<size_t>(K), 0);
  QP qa, qb;
  per_tensor(qa, QNT_DTYPE_U8, 1.0f, 0);
  per_tensor(qb, QNT_DTYPE_U8, 1.0f, 255);  // b - zb = -255 everywhere
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_U8, {1, K}, qa.p, a.data(), a.size());
  make_raw(tb, QNT_DTYPE_U8, {K, 1}, qb.p, b.data(), b.size());
  make_q(ty, QNT_DTYPE_I32, {1, 1}, nullptr);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK);
  const int64_t exact = -K * 255 * 255;  // -2601000000: below INT32_MIN, so it wraps
  EXPECT_EQ(values_of<int32_t>(ty.t)[0],
            static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(exact))));
}

TEST(QMatMul, ExtremeScales) {
  // A multiplier that overflows float32 saturates every nonzero accumulator; a vanishing one
  // sends everything to the output zero point; a zero accumulator times an infinite multiplier
  // (NaN) gives the zero point, as the quantize rule does for NaN.
  const uint8_t a[3] = {130, 126, 128}, b[1] = {129};
  QP qa, qb, huge_y, tiny_y;
  per_tensor(qa, QNT_DTYPE_U8, 1e30f, 128);
  per_tensor(qb, QNT_DTYPE_U8, 1e30f, 128);
  per_tensor(huge_y, QNT_DTYPE_I8, 1e-30f, 3);
  T ta, tb, ty;
  make_raw(ta, QNT_DTYPE_U8, {3, 1}, qa.p, a, 3);
  make_raw(tb, QNT_DTYPE_U8, {1, 1}, qb.p, b, 1);
  make_q(ty, QNT_DTYPE_I8, {3, 1}, huge_y.p);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK);
  const std::vector<uint8_t> y = bytes_of(ty.t);  // acc = 2, -2, 0
  EXPECT_EQ(static_cast<int8_t>(y[0]), 127);
  EXPECT_EQ(static_cast<int8_t>(y[1]), -128);
  EXPECT_EQ(static_cast<int8_t>(y[2]), 3);
  QP sa, sb;
  per_tensor(sa, QNT_DTYPE_U8, 1e-30f, 128);
  per_tensor(sb, QNT_DTYPE_U8, 1e-30f, 128);
  per_tensor(tiny_y, QNT_DTYPE_U8, 1e30f, 77);
  T ta2, tb2, ty2;
  make_raw(ta2, QNT_DTYPE_U8, {3, 1}, sa.p, a, 3);
  make_raw(tb2, QNT_DTYPE_U8, {1, 1}, sb.p, b, 1);
  make_q(ty2, QNT_DTYPE_U8, {3, 1}, tiny_y.p);
  ASSERT_EQ(qnt_qmatmul(nullptr, ta2.t, tb2.t, nullptr, ty2.t), QNT_OK);
  EXPECT_EQ(bytes_of(ty2.t), (std::vector<uint8_t>{77, 77, 77}));
}

// --- qconv2d against a naive direct convolution ------------------------------------------

struct ConvCase {
  int64_t N, C, H, W, M, KH, KW, groups, sh, sw, pt, pl, pb, pr, dh, dw;
  qnt_dtype dx, dwt, dy;
};

TEST(QConv2d, MatchesDirectConvolution) {
  std::mt19937 rng(11);
  const ConvCase cases[] = {
      {1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_U8},
      {2, 4, 8, 8, 4, 3, 3, 4, 2, 2, 1, 0, 2, 1, 1, 1, QNT_DTYPE_I8, QNT_DTYPE_I8, QNT_DTYPE_I8},
      {1, 6, 9, 7, 4, 2, 3, 2, 1, 2, 0, 2, 1, 0, 2, 1, QNT_DTYPE_U8, QNT_DTYPE_U8, QNT_DTYPE_I32},
      {1, 1, 17, 3, 3, 5, 1, 1, 3, 1, 2, 0, 2, 0, 1, 1, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_F32},
      {1, 8, 5, 5, 8, 3, 3, 8, 1, 1, 1, 1, 1, 1, 2, 2, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_U8},
  };
  for (const ConvCase &c : cases) {
    std::uniform_int_distribution<int> byte(0, 255);
    const int64_t Cg = c.C / c.groups, Mg = c.M / c.groups;
    std::vector<uint8_t> x(static_cast<size_t>(c.N * c.C * c.H * c.W));
    std::vector<uint8_t> w(static_cast<size_t>(c.M * Cg * c.KH * c.KW));
    for (auto &v : x) v = static_cast<uint8_t>(byte(rng));
    for (auto &v : w) v = static_cast<uint8_t>(byte(rng));
    const bool xs = c.dx == QNT_DTYPE_I8, ws = c.dwt == QNT_DTYPE_I8;
    const int32_t zx = xs ? -3 : 131;
    std::vector<float> sw(static_cast<size_t>(c.M));
    std::vector<int32_t> zw(static_cast<size_t>(c.M));
    std::uniform_real_distribution<float> sd(1e-3f, 0.02f);
    for (size_t m = 0; m < sw.size(); ++m) {
      sw[m] = sd(rng);
      zw[m] = ws ? byte(rng) - 128 : byte(rng);
    }
    std::vector<int32_t> bias(static_cast<size_t>(c.M));
    for (auto &v : bias) v = byte(rng) * 11 - 1400;
    const float sx = 0.03f, sy = 0.2f;
    const int32_t zy = c.dy == QNT_DTYPE_I8 ? 5 : 100;
    QP qx, qw, qy;
    per_tensor(qx, c.dx, sx, zx);
    ASSERT_EQ(qnt_qparams_create_per_axis(c.dwt, 0, sw.size(), sw.data(), zw.data(), &qw.p),
              QNT_OK);
    const bool quantized_y = c.dy == QNT_DTYPE_U8 || c.dy == QNT_DTYPE_I8;
    if (quantized_y) per_tensor(qy, c.dy, sy, zy);
    qnt_op_desc *d = nullptr;
    ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
    ASSERT_EQ(desc_strides(d, c.sh, c.sw), QNT_OK);
    ASSERT_EQ(desc_pads(d, c.pt, c.pl, c.pb, c.pr), QNT_OK);
    ASSERT_EQ(desc_dilations(d, c.dh, c.dw), QNT_OK);
    ASSERT_EQ(desc_groups(d, c.groups), QNT_OK);
    T tx, tw, ty, tb;
    make_raw(tx, c.dx, {c.N, c.C, c.H, c.W}, qx.p, x.data(), x.size());
    make_raw(tw, c.dwt, {c.M, Cg, c.KH, c.KW}, qw.p, w.data(), w.size());
    make_raw(tb, QNT_DTYPE_I32, {c.M}, nullptr, bias.data(), bias.size() * 4);
    int64_t os[4];
    ASSERT_EQ(qnt_conv2d_output_shape(tx.t, tw.t, d, os, 4), QNT_OK) << qnt_last_error_message();
    const int64_t OH = os[2], OW = os[3];
    EXPECT_EQ(OH, (c.H + c.pt + c.pb - c.dh * (c.KH - 1) - 1) / c.sh + 1);
    make_q(ty, c.dy, {c.N, c.M, OH, OW}, quantized_y ? qy.p : nullptr);
    ASSERT_EQ(qnt_qconv2d(nullptr, tx.t, tw.t, tb.t, d, ty.t), QNT_OK) << qnt_last_error_message();
    qnt_op_desc_destroy(d);

    const std::vector<uint8_t> got = bytes_of(ty.t);
    int32_t qmin = 0, qmax = 0;
    if (quantized_y) qnt_dtype_range(c.dy, &qmin, &qmax);
    for (int64_t n = 0; n < c.N; ++n)
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t gi = m / Mg;
            int64_t acc = bias[static_cast<size_t>(m)];
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t i = 0; i < c.KH; ++i)
                for (int64_t j = 0; j < c.KW; ++j) {
                  const int64_t h = oh * c.sh - c.pt + i * c.dh, ww = ow * c.sw - c.pl + j * c.dw;
                  if (h < 0 || h >= c.H || ww < 0 || ww >= c.W) continue;  // padding: real 0
                  const int64_t ch = gi * Cg + ci;
                  const int32_t xv =
                      val(x, static_cast<size_t>(((n * c.C + ch) * c.H + h) * c.W + ww), xs);
                  const int32_t wv =
                      val(w, static_cast<size_t>(((m * Cg + ci) * c.KH + i) * c.KW + j), ws);
                  acc += static_cast<int64_t>(xv - zx) * (wv - zw[static_cast<size_t>(m)]);
                }
            const size_t idx = static_cast<size_t>(((n * c.M + m) * OH + oh) * OW + ow);
            const float swm = sw[static_cast<size_t>(m)];
            if (c.dy == QNT_DTYPE_I32) {
              int32_t v;
              std::memcpy(&v, got.data() + 4 * idx, 4);
              ASSERT_EQ(v, acc);
            } else if (c.dy == QNT_DTYPE_F32) {
              float v;
              std::memcpy(&v, got.data() + 4 * idx, 4);
              ASSERT_EQ(v, static_cast<float>(acc) * (sx * swm));
            } else {
              ASSERT_EQ(val(got, idx, c.dy == QNT_DTYPE_I8),
                        doc_requant(acc, sx, swm, sy, zy, qmin, qmax))
                  << "case C=" << c.C << " groups=" << c.groups << " at " << n << "," << m << ","
                  << oh << "," << ow;
            }
          }
  }
}

// --- linear layers ---------------------------------------------------------------------------

// The documented dot order, written independently of the library.
float canonical_dot(const float *x, const float *w, int64_t K) {
  float s[16] = {0};
  for (int64_t k = 0; k < K; ++k) s[k % 16] = std::fma(x[k], w[k], s[k % 16]);
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) s[i] += s[i + width];
  return s[0];
}

TEST(LinearWeightOnly, Int4Uint4NF4PerBlock) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t M = 3, K = 256, N = 17;
  std::vector<float> x(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K)), bias(N);
  for (auto &v : x) v = normal(rng);
  for (auto &v : w) v = 0.05f * normal(rng);
  for (auto &v : bias) v = normal(rng);
  T tx, tw, tbias;
  make_f32(tx, {M, K}, x);
  make_f32(tw, {N, K}, w);
  make_f32(tbias, {N}, bias);
  struct Variant {
    qnt_dtype d;
    int64_t block;
  } variants[] = {{QNT_DTYPE_I4, 32},
                  {QNT_DTYPE_I4, 128},
                  {QNT_DTYPE_U4, 64},
                  {QNT_DTYPE_NF4, 64},
                  {QNT_DTYPE_I8, 32}};
  for (const Variant &v : variants) {
    QP qp;
    if (v.d == QNT_DTYPE_NF4)
      ASSERT_EQ(
          qnt_calibrate_codebook(nullptr, tw.t, v.d, QNT_GRANULARITY_PER_BLOCK, 1, v.block, &qp.p),
          QNT_OK);
    else
      ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, v.d,
                                     v.d == QNT_DTYPE_U4 ? QNT_SCHEME_AFFINE : QNT_SCHEME_SYMMETRIC,
                                     QNT_GRANULARITY_PER_BLOCK, 1, v.block, &qp.p),
                QNT_OK);
    T wq, wd, ty;
    make_q(wq, v.d, {N, K}, qp.p);
    ASSERT_EQ(qnt_quantize(nullptr, tw.t, wq.t), QNT_OK);
    make_q(wd, QNT_DTYPE_F32, {N, K}, nullptr);
    ASSERT_EQ(qnt_dequantize(nullptr, wq.t, wd.t), QNT_OK);
    const std::vector<float> wdq = floats_of(wd.t);
    make_q(ty, QNT_DTYPE_F32, {M, N}, nullptr);
    ASSERT_EQ(qnt_linear_weight_only(nullptr, tx.t, wq.t, tbias.t, ty.t), QNT_OK)
        << qnt_last_error_message();
    const std::vector<float> y = floats_of(ty.t);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const float d =
            canonical_dot(&x[static_cast<size_t>(m * K)], &wdq[static_cast<size_t>(n * K)], K);
        const float got = y[static_cast<size_t>(m * N + n)];
        ASSERT_EQ(got, d + bias[static_cast<size_t>(n)])
            << qnt_dtype_name(v.d) << " " << m << "," << n;
        double exact = bias[static_cast<size_t>(n)];
        for (int64_t k = 0; k < K; ++k)
          exact += static_cast<double>(x[static_cast<size_t>(m * K + k)]) *
                   wdq[static_cast<size_t>(n * K + k)];
        ASSERT_NEAR(got, exact, 1e-4);
      }
  }
}

TEST(LinearDynamic, PerTensorAndPerRowMatchTheirDefinition) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t M = 4, K = 37, N = 9;
  std::vector<float> x(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K)), bias(N);
  for (auto &v : x) v = normal(rng);
  for (size_t i = 0; i < static_cast<size_t>(K); ++i) x[i] *= 10.0f;  // a row with a wider range
  for (auto &v : w) v = 0.1f * normal(rng);
  for (auto &v : bias) v = normal(rng);
  T tx, tw, tbias;
  make_f32(tx, {M, K}, x);
  make_f32(tw, {N, K}, w);
  make_f32(tbias, {N}, bias);
  QP qw;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_AXIS, 0, 0, &qw.p),
            QNT_OK);
  std::vector<float> sw(N);
  ASSERT_EQ(qnt_qparams_scales(qw.p, sw.data(), sw.size()), QNT_OK);
  T wq;
  make_q(wq, QNT_DTYPE_I8, {N, K}, qw.p);
  ASSERT_EQ(qnt_quantize(nullptr, tw.t, wq.t), QNT_OK);
  const std::vector<uint8_t> wb = bytes_of(wq.t);

  for (qnt_act_quant mode : {QNT_ACT_PER_TENSOR, QNT_ACT_PER_ROW}) {
    T ty;
    make_q(ty, QNT_DTYPE_F32, {M, N}, nullptr);
    qnt_op_desc *d = nullptr;
    ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
    ASSERT_EQ(qnt_op_desc_set(d, QNT_OP_ACT_QUANT, mode), QNT_OK);
    ASSERT_EQ(qnt_linear_dynamic(nullptr, tx.t, wq.t, tbias.t, d, ty.t), QNT_OK)
        << qnt_last_error_message();
    qnt_op_desc_destroy(d);
    const std::vector<float> y = floats_of(ty.t);
    double err = 0, ref_scale = 0;
    for (int64_t m = 0; m < M; ++m) {
      // the activations of this row, by qnt_dynamic_quantize_linear over the tensor or the row
      T part;
      if (mode == QNT_ACT_PER_TENSOR)
        make_f32(part, {M * K}, x);
      else
        make_f32(part, {K}, std::vector<float>(x.begin() + m * K, x.begin() + (m + 1) * K));
      qnt_tensor *xq = nullptr;
      ASSERT_EQ(qnt_dynamic_quantize_linear(nullptr, part.t, &xq), QNT_OK);
      T hold;
      hold.t = xq;
      QP qx;
      ASSERT_EQ(qnt_tensor_qparams(xq, &qx.p), QNT_OK);
      float sx;
      int32_t zx;
      ASSERT_EQ(qnt_qparams_scales(qx.p, &sx, 1), QNT_OK);
      ASSERT_EQ(qnt_qparams_zero_points(qx.p, &zx, 1), QNT_OK);
      const std::vector<uint8_t> xb = bytes_of(xq);
      const size_t off = mode == QNT_ACT_PER_TENSOR ? static_cast<size_t>(m * K) : 0;
      for (int64_t n = 0; n < N; ++n) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<int64_t>(xb[off + static_cast<size_t>(k)] - zx) *
                 static_cast<int8_t>(wb[static_cast<size_t>(n * K + k)]);
        const float want = static_cast<float>(acc) * (sx * sw[static_cast<size_t>(n)]) +
                           bias[static_cast<size_t>(n)];
        const float got = y[static_cast<size_t>(m * N + n)];
        ASSERT_EQ(got, want) << "mode " << mode << " at " << m << "," << n;
        double exact = bias[static_cast<size_t>(n)];
        for (int64_t k = 0; k < K; ++k)
          exact += static_cast<double>(x[static_cast<size_t>(m * K + k)]) *
                   w[static_cast<size_t>(n * K + k)];
        err = std::max(err, std::fabs(got - exact));
        ref_scale = std::max(ref_scale, std::fabs(exact));
      }
    }
    EXPECT_LT(err, 0.05 * ref_scale) << "mode " << mode;
  }
}

// --- element-wise ----------------------------------------------------------------------------

TEST(QAdd, HandWorked) {
  QP qa, qb, qy;
  per_tensor(qa, QNT_DTYPE_U8, 0.5f, 128);
  per_tensor(qb, QNT_DTYPE_I8, 0.25f, 0);
  per_tensor(qy, QNT_DTYPE_U8, 1.0f, 10);
  const uint8_t a[5] = {128, 130, 0, 255, 120};  // 0, 1, -64, 63.5, -4
  const int8_t b[5] = {2, -2, 127, 127, -1};     // 0.5, -0.5, 31.75, 31.75, -0.25
  T ta, tb, ty, tr;
  make_raw(ta, QNT_DTYPE_U8, {5}, qa.p, a, 5);
  make_raw(tb, QNT_DTYPE_I8, {5}, qb.p, b, 5);
  make_q(ty, QNT_DTYPE_U8, {5}, qy.p);
  make_q(tr, QNT_DTYPE_U8, {5}, qy.p);
  ASSERT_EQ(qnt_qadd(nullptr, ta.t, tb.t, nullptr, ty.t), QNT_OK) << qnt_last_error_message();
  // sums 0.5 -> 0 (tie to even), 0.5 -> 0, -32.25 -> -32, 95.25 -> 95, -4.25 -> -4; then + 10
  EXPECT_EQ(bytes_of(ty.t), (std::vector<uint8_t>{10, 10, 0, 105, 6}));
  qnt_op_desc *relu = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&relu), QNT_OK);
  ASSERT_EQ(qnt_op_desc_set(relu, QNT_OP_FUSE_RELU, 1), QNT_OK);
  ASSERT_EQ(qnt_qadd(nullptr, ta.t, tb.t, relu, tr.t), QNT_OK);
  qnt_op_desc_destroy(relu);
  EXPECT_EQ(bytes_of(tr.t), (std::vector<uint8_t>{10, 10, 10, 105, 10}));
}

TEST(QRelu, PlainAndClampedPerAxis) {
  const float scales[2] = {0.5f, 0.1f};
  const int32_t zps[2] = {-10, 20};
  QP qp, other;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 2, scales, zps, &qp.p), QNT_OK);
  per_tensor(other, QNT_DTYPE_I8, 0.5f, -10);
  const int8_t x[6] = {-128, -10, 127, 0, 19, 100};
  T tx, ty, tc, bad;
  make_raw(tx, QNT_DTYPE_I8, {2, 3}, qp.p, x, 6);
  make_q(ty, QNT_DTYPE_I8, {2, 3}, qp.p);
  make_q(tc, QNT_DTYPE_I8, {2, 3}, qp.p);
  make_q(bad, QNT_DTYPE_I8, {2, 3}, other.p);
  ASSERT_EQ(qnt_qrelu(nullptr, tx.t, ty.t), QNT_OK) << qnt_last_error_message();
  const std::vector<uint8_t> y = bytes_of(ty.t);
  const int8_t want[6] = {-10, -10, 127, 20, 20, 100};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int8_t>(y[static_cast<size_t>(i)]), want[i]);
  // upper 6: row 0 -> 6 / 0.5 - 10 = 2; row 1 -> 6 / 0.1 = 60 (59.999998 rounds to 60) + 20 = 80
  ASSERT_EQ(qnt_qrelu_clamp(nullptr, tx.t, 6.0f, tc.t), QNT_OK);
  const std::vector<uint8_t> c = bytes_of(tc.t);
  const int8_t want_c[6] = {-10, -10, 2, 20, 20, 80};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(static_cast<int8_t>(c[static_cast<size_t>(i)]), want_c[i]);
  EXPECT_EQ(qnt_qrelu(nullptr, tx.t, bad.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_qrelu_clamp(nullptr, tx.t, -1.0f, tc.t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_qrelu_clamp(nullptr, tx.t, NAN, tc.t), QNT_ERR_INVALID_ARGUMENT);
}

// --- bad input -------------------------------------------------------------------------------

TEST(OpErrors, ShapesDtypesAndQParams) {
  QP q8, qu;
  per_tensor(q8, QNT_DTYPE_I8, 0.1f, 0);
  per_tensor(qu, QNT_DTYPE_U8, 0.1f, 3);
  T a, b, bk, y, yf, y_noqp, f, ybad;
  make_q(a, QNT_DTYPE_U8, {2, 3}, qu.p);
  make_q(b, QNT_DTYPE_I8, {3, 4}, q8.p);
  make_q(bk, QNT_DTYPE_I8, {5, 4}, q8.p);
  make_q(y, QNT_DTYPE_I8, {2, 4}, q8.p);
  make_q(yf, QNT_DTYPE_F32, {2, 4}, nullptr);
  make_q(y_noqp, QNT_DTYPE_I8, {2, 4}, nullptr);
  make_q(f, QNT_DTYPE_F32, {2, 3}, nullptr);
  make_q(ybad, QNT_DTYPE_I8, {2, 5}, q8.p);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, y.t), QNT_OK);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, bk.t, nullptr, y.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, ybad.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_qmatmul(nullptr, f.t, b.t, nullptr, y.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, y_noqp.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, a.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, a.t, yf.t), QNT_ERR_SHAPE_MISMATCH);  // bias [2,3]
  EXPECT_EQ(qnt_qmatmul(nullptr, nullptr, b.t, nullptr, y.t), QNT_ERR_NULL_POINTER);
  // scales are needed for an i8 output: an operand without qparams is refused
  T a_raw;
  make_q(a_raw, QNT_DTYPE_U8, {2, 3}, nullptr);
  EXPECT_EQ(qnt_qmatmul(nullptr, a_raw.t, b.t, nullptr, y.t), QNT_ERR_INVALID_QPARAMS);
  // b's per-axis qparams must be per column
  const float s3[3] = {1, 1, 1};
  QP rows;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 3, s3, nullptr, &rows.p), QNT_OK);
  T b_rows;
  make_q(b_rows, QNT_DTYPE_I8, {3, 4}, rows.p);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b_rows.t, nullptr, y.t), QNT_ERR_INVALID_QPARAMS);
  // conv: channels that do not split into groups, kernels larger than the input
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  EXPECT_EQ(desc_strides(d, 0, 1), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(desc_pads(d, -1, 0, 0, 0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(desc_dilations(d, 1, 0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(desc_groups(d, 0), QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(desc_groups(d, 2), QNT_OK);
  T cx, cw, cy;
  make_q(cx, QNT_DTYPE_U8, {1, 3, 4, 4}, qu.p);
  make_q(cw, QNT_DTYPE_I8, {2, 1, 5, 5}, q8.p);
  make_q(cy, QNT_DTYPE_I32, {1, 2, 1, 1}, nullptr);
  EXPECT_EQ(qnt_qconv2d(nullptr, cx.t, cw.t, nullptr, d, cy.t), QNT_ERR_SHAPE_MISMATCH);
  int64_t os[4];
  EXPECT_EQ(qnt_conv2d_output_shape(cx.t, cw.t, d, os, 4), QNT_ERR_SHAPE_MISMATCH);
  qnt_op_desc_destroy(d);
}

}  // namespace
