// Min-max calibration (PyTorch MinMaxObserver formulas) and the codebook dtypes' scale rules.
// Expected values were computed by hand and agree with PyTorch 1.13's observers on the same
// inputs (the hex literals are the exact float32 results).
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

namespace {

using namespace qnt_test;

struct Result {
  std::vector<float> s;
  std::vector<int32_t> z;
};

Result params(const qnt_qparams *qp) {
  size_t n = 0;
  EXPECT_EQ(qnt_qparams_scale_count(qp, &n), QNT_OK);
  Result r{std::vector<float>(n), std::vector<int32_t>(n)};
  EXPECT_EQ(qnt_qparams_scales(qp, r.s.data(), n), QNT_OK);
  EXPECT_EQ(qnt_qparams_zero_points(qp, r.z.data(), n), QNT_OK);
  return r;
}

Result minmax(const std::vector<float> &xs, qnt_dtype d, qnt_scheme sc) {
  T x;
  make_f32(x, {static_cast<int64_t>(xs.size())}, xs);
  QP qp;
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, d, sc, QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp.p),
            QNT_OK)
      << qnt_last_error_message();
  return params(qp.p);
}

TEST(MinMax, PerTensorLikePyTorch) {
  const std::vector<float> x{-1.0f, 0.5f, 2.0f, 0.3f};
  Result r = minmax(x, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 0x1.010102p-6f);  // 2 / 127.5
  EXPECT_EQ(r.z[0], 0);
  r = minmax(x, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0x1.818182p-7f);  // 3 / 255
  EXPECT_EQ(r.z[0], -43);
  r = minmax(x, QNT_DTYPE_U8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 0x1.010102p-6f);
  EXPECT_EQ(r.z[0], 128);
  r = minmax(x, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0x1.818182p-7f);
  EXPECT_EQ(r.z[0], 85);
}

TEST(MinMax, RangeAlwaysContainsZero) {
  Result r = minmax({0.5f, 3.0f}, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0x1.818182p-7f);
  EXPECT_EQ(r.z[0], 0);
  r = minmax({-0.5f, -3.0f}, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0x1.818182p-7f);
  EXPECT_EQ(r.z[0], 255);
}

TEST(MinMax, EpsilonFloorAndDegenerateData) {
  Result r = minmax({0.0f, 0.0f}, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], FLT_EPSILON);
  EXPECT_EQ(r.z[0], -128);
  r = minmax({1e-9f, -1e-9f}, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], FLT_EPSILON);
  EXPECT_EQ(r.z[0], 0);
  // NaN and infinities are skipped; nothing finite at all gives PyTorch's (1.0, 0).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  r = minmax({nan, -1.0f, inf, 0.5f, 2.0f, -inf, 0.3f}, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0x1.818182p-7f);
  EXPECT_EQ(r.z[0], 85);
  r = minmax({nan, inf}, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 1.0f);
  EXPECT_EQ(r.z[0], 0);
}

TEST(MinMax, OtherWidths) {
  Result r = minmax({-1.0f, 2.0f}, QNT_DTYPE_U16, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 2.0f / 32767.5f);
  EXPECT_EQ(r.z[0], 32768);
  r = minmax({-1.0f, 2.0f}, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 2.0f / 7.5f);
  EXPECT_EQ(r.z[0], 0);
  r = minmax({-1.0f, 2.0f}, QNT_DTYPE_U4, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 0.2f);  // 3 / 15
  EXPECT_EQ(r.z[0], 5);     // 0 - round(-1 / 0.2)
  r = minmax({-1.0f, 2.0f}, QNT_DTYPE_I16, QNT_SCHEME_AFFINE);
  EXPECT_EQ(r.s[0], 3.0f / 65535.0f);
  EXPECT_EQ(r.z[0], -32768 + 21845);  // -1 / (3/65535) = -21845
}

TEST(MinMax, Int32) {
  // float(2^32 - 1) / 2 rounds to 2^31 in float32, as in PyTorch: scale = 2000 / 2^31.
  Result r = minmax({-1000.0f, 2000.0f}, QNT_DTYPE_I32, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], 0x1.f4p-21f);
  EXPECT_EQ(r.z[0], 0);
  // Below FLT_EPSILON the floor applies, as it does in PyTorch.
  r = minmax({-1.0f, 2.0f}, QNT_DTYPE_I32, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(r.s[0], FLT_EPSILON);
}

TEST(MinMax, CustomRangeLikePyTorchQuantMinMax) {
  T x;
  make_f32(x, {4}, {-1.0f, 0.5f, 2.0f, 0.3f});
  QP a, b, c;
  ASSERT_EQ(qnt_calibrate_minmax_range(nullptr, x.t, QNT_DTYPE_U8, QNT_SCHEME_AFFINE,
                                       QNT_GRANULARITY_PER_TENSOR, 0, 0, 0, 127, &a.p),
            QNT_OK);
  Result r = params(a.p);
  EXPECT_EQ(r.s[0], 3.0f / 127.0f);  // PyTorch reduce_range: 0.023622047...
  EXPECT_EQ(r.z[0], 42);
  ASSERT_EQ(qnt_calibrate_minmax_range(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                       QNT_GRANULARITY_PER_TENSOR, 0, 0, -64, 63, &b.p),
            QNT_OK);
  r = params(b.p);
  EXPECT_EQ(r.s[0], 3.0f / 127.0f);
  EXPECT_EQ(r.z[0], -22);
  ASSERT_EQ(qnt_calibrate_minmax_range(nullptr, x.t, QNT_DTYPE_U8, QNT_SCHEME_SYMMETRIC,
                                       QNT_GRANULARITY_PER_TENSOR, 0, 0, 0, 127, &c.p),
            QNT_OK);
  r = params(c.p);
  EXPECT_EQ(r.s[0], 2.0f / 63.5f);  // 0.031496062...
  EXPECT_EQ(r.z[0], 63);
  qnt_qparams *bad = nullptr;
  EXPECT_EQ(qnt_calibrate_minmax_range(nullptr, x.t, QNT_DTYPE_U8, QNT_SCHEME_AFFINE,
                                       QNT_GRANULARITY_PER_TENSOR, 0, 0, 1, 127, &bad),
            QNT_ERR_INVALID_ARGUMENT);  // must contain 0
  EXPECT_EQ(qnt_calibrate_minmax_range(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                       QNT_GRANULARITY_PER_TENSOR, 0, 0, -200, 10, &bad),
            QNT_ERR_INVALID_ARGUMENT);  // outside the dtype
  EXPECT_EQ(bad, nullptr);
}

TEST(MinMax, PerChannelLikePyTorch) {
  T x;
  make_f32(x, {2, 3}, {1.0f, -2.0f, 0.5f, 0.1f, 0.2f, 0.3f});
  QP a;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_AXIS, 0, 0, &a.p),
            QNT_OK);
  Result r = params(a.p);
  ASSERT_EQ(r.s.size(), 2u);
  EXPECT_EQ(r.s[0], 0x1.010102p-6f);
  EXPECT_EQ(r.s[1], 0x1.34679cp-9f);
  EXPECT_EQ(r.z, (std::vector<int32_t>{0, 0}));
  qnt_granularity g;
  ASSERT_EQ(qnt_qparams_granularity(a.p, &g), QNT_OK);
  EXPECT_EQ(g, QNT_GRANULARITY_PER_AXIS);

  T y;
  make_f32(y, {2, 3}, {1.0f, -2.0f, 0.5f, 0.1f, 0.2f, -0.3f});
  QP b;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, y.t, QNT_DTYPE_U8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_AXIS, 1, 0, &b.p),
            QNT_OK);
  r = params(b.p);
  ASSERT_EQ(r.s.size(), 3u);
  EXPECT_EQ(r.s[0], 0x1.010102p-8f);
  EXPECT_EQ(r.s[1], 0x1.1ab44ep-7f);
  EXPECT_EQ(r.s[2], 0x1.9b34cep-9f);
  EXPECT_EQ(r.z, (std::vector<int32_t>{0, 232, 96}));
  qnt_scheme sc;
  ASSERT_EQ(qnt_qparams_scheme(b.p, &sc), QNT_OK);
  EXPECT_EQ(sc, QNT_SCHEME_AFFINE);
}

TEST(MinMax, PerBlock) {
  T x;
  make_f32(x, {1, 5}, {-1.0f, 1.0f, 4.0f, -2.0f, 0.5f});
  QP a;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_BLOCK, 1, 2, &a.p),
            QNT_OK);
  Result r = params(a.p);
  ASSERT_EQ(r.s.size(), 3u);
  EXPECT_EQ(r.s[0], 1.0f / 7.5f);
  EXPECT_EQ(r.s[1], 4.0f / 7.5f);
  EXPECT_EQ(r.s[2], 0.5f / 7.5f);
  int64_t block = 0;
  ASSERT_EQ(qnt_qparams_block_size(a.p, &block), QNT_OK);
  EXPECT_EQ(block, 2);
}

TEST(MinMax, Errors) {
  T x, q;
  make_f32(x, {2, 0}, {});
  const int64_t s[1] = {3};
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_I8, s, 1, nullptr, &q.t), QNT_OK);
  qnt_qparams *out = nullptr;
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, q.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_NF4, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_TERNARY, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_F32, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, static_cast<qnt_scheme>(0),
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_AXIS, 2, 0, &out),
            QNT_ERR_INVALID_ARGUMENT);  // no axis 2
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_AXIS, 1, 0, &out),
            QNT_ERR_INVALID_ARGUMENT);  // axis of size 0
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_BLOCK, 0, 0, &out),
            QNT_ERR_INVALID_ARGUMENT);  // block size 0
  EXPECT_EQ(out, nullptr);
  // An empty tensor per tensor: nothing seen, PyTorch's (1.0, 0).
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_OK);
  Result r = params(out);
  EXPECT_EQ(r.s[0], 1.0f);
  qnt_qparams_destroy(out);
}

TEST(Codebook, ScaleRules) {
  T x;
  make_f32(x, {2, 4}, {0.5f, -3.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  QP nf4, bin, ter;
  ASSERT_EQ(
      qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_AXIS, 0, 0, &nf4.p),
      QNT_OK);
  Result r = params(nf4.p);
  EXPECT_EQ(r.s, (std::vector<float>{3.0f, 1.0f}));  // absmax; an all-zero group gets 1
  ASSERT_EQ(qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_BINARY, QNT_GRANULARITY_PER_AXIS, 0, 0,
                                   &bin.p),
            QNT_OK);
  r = params(bin.p);
  EXPECT_EQ(r.s, (std::vector<float>{1.125f, 1.0f}));  // mean |x| = 4.5 / 4
  ASSERT_EQ(qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_TERNARY, QNT_GRANULARITY_PER_AXIS, 0, 0,
                                   &ter.p),
            QNT_OK);
  r = params(ter.p);
  EXPECT_EQ(r.s, (std::vector<float>{1.125f, 1e-5f}));  // BitNet's clamp at 1e-5
  EXPECT_EQ(r.z, (std::vector<int32_t>{0, 0}));
  qnt_qparams *out = nullptr;
  EXPECT_EQ(
      qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_I8, QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
      QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(out, nullptr);
}

}  // namespace
