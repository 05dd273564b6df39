// The logarithmic (power-of-two) codes QNT_DTYPE_LOG4 / LOG8 and the power-of-two scales of
// qnt_qparams_pow2_scales, through the public ABI: the header's rule on hand-worked values and
// at its boundaries, every code's value on every kernel set, calibration, and refusals. The
// kernels' agreement with the reference on random data is in test_kernels.cpp (the log dtypes
// are in its dtype list).
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using qnt_test::Ctx;
using qnt_test::QP;
using qnt_test::T;

namespace {

using qnt_test::bits_of;
const auto from_bits = qnt_test::float_of;

// The codes qnt_quantize writes for x (a 1-D tensor), one per element, unpacked.
std::vector<int> codes(qnt_context *ctx, qnt_dtype d, float scale, const std::vector<float> &x) {
  QP qp;
  qnt_test::per_tensor(qp, d, scale, 0);
  T tx, tq;
  const std::vector<int64_t> shape{static_cast<int64_t>(x.size())};
  qnt_test::make_f32(tx, shape, x);
  qnt_test::make_q(tq, d, shape, qp.p);
  EXPECT_EQ(qnt_quantize(ctx, tx.t, tq.t), QNT_OK) << qnt_last_error_message();
  const std::vector<uint8_t> b = qnt_test::bytes_of(tq.t);
  std::vector<int> out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = d == QNT_DTYPE_LOG8 ? b[i] : (b[i / 2] >> (4 * (i % 2))) & 15;
  return out;
}

// Every code of d, dequantized with `scale` (per-tensor) or with a per-element scale each
// (per-axis on the last axis), as float bits.
std::vector<uint32_t> every_code(qnt_context *ctx, qnt_dtype d, const std::vector<float> &scales) {
  const int n = d == QNT_DTYPE_LOG8 ? 256 : 16;
  std::vector<uint8_t> raw;
  if (d == QNT_DTYPE_LOG8) {
    for (int c = 0; c < n; ++c) raw.push_back(static_cast<uint8_t>(c));
  } else {
    for (int c = 0; c < n; c += 2) raw.push_back(static_cast<uint8_t>(c | ((c + 1) << 4)));
  }
  // Three rows of all codes: vector bodies and scalar tails both see every code.
  std::vector<uint8_t> bytes;
  for (int r = 0; r < 3; ++r) bytes.insert(bytes.end(), raw.begin(), raw.end());
  QP qp;
  if (scales.size() == 1) {
    qnt_test::per_tensor(qp, d, scales[0], 0);
  } else {
    EXPECT_EQ(qnt_qparams_create_per_axis(d, 1, scales.size(), scales.data(), nullptr, &qp.p),
              QNT_OK);
  }
  T tq, ty;
  const std::vector<int64_t> shape{3, n};
  qnt_test::make_raw(tq, d, shape, qp.p, bytes.data(), bytes.size());
  qnt_test::make_q(ty, QNT_DTYPE_F32, shape, nullptr);
  EXPECT_EQ(qnt_dequantize(ctx, tq.t, ty.t), QNT_OK) << qnt_last_error_message();
  std::vector<uint32_t> out;
  for (float v : qnt_test::floats_of(ty.t)) out.push_back(bits_of(v));
  return out;
}

double sqnr(const std::vector<float> &x, qnt_dtype d, const qnt_qparams *qp,
            const std::vector<int64_t> &shape) {
  T tx;
  qnt_test::make_f32(tx, shape, x);
  qnt_error_report r{};
  EXPECT_EQ(qnt_error_report_compute(nullptr, tx.t, qp, &r, sizeof r), QNT_OK)
      << qnt_last_error_message();
  (void)d;
  return r.sqnr_db;
}

}  // namespace

TEST(Log2, FourBitCodesFollowTheHeadersRule) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Scale 2: levels 2, 1, 0.5, ..., 2^-5; the boundary between 2^-k and 2^-(k+1) is
  // 2^-(k+1/2), and no float lies on it.
  const float below = 1.41421354f, above = 1.41421366f;  // the floats either side of sqrt(2)
  const std::vector<float> x = {2.0f,          1.0f,           0.5f,          0.0625f,
                                2.0f / 64,     above,          below,         -above,
                                -below,        above / 64,     below / 64,    3.0f,
                                inf,           -inf,           nan,           0.0f,
                                -0.0f,         1e-30f,         -1.0f,         -2.0f / 64,
                                0.75f * 2.0f,  0.7f * 2.0f,    FLT_MAX,       -FLT_MAX};
  const std::vector<int> want = {7,  6,  5,  2,  1,   7,   6,   15,
                                 14, 1,  0,  7,  7,   15,  0,   0,
                                 0,  0,  14, 9,  7,   6,   7,   15};
  for (qnt_isa isa : {QNT_ISA_REFERENCE, QNT_ISA_NATIVE}) {
    Ctx ctx(isa, 1);
    EXPECT_EQ(codes(ctx.c, QNT_DTYPE_LOG4, 2.0f, x), want) << qnt_isa_name(isa);
  }
}

TEST(Log2, EightBitCodesReachTheSubnormalBoundary) {
  // Scale 1: levels 2^0 .. 2^-126 (m = 127 .. 1). 2^-126.5 is a subnormal; the subnormal floats
  // either side of it are 0x5A827A (up, to 2^-126) and 0x5A8279 (down, to zero).
  const std::vector<float> x = {1.0f,          0.5f,          FLT_MIN,         from_bits(0x5A827A),
                                from_bits(0x5A8279), FLT_MIN * 2, -FLT_MIN,     -1.0f,
                                from_bits(1),  1.0f / 3.0f};
  // 1/3 = 2^-2 * 1.333 (below sqrt 2): k = 2, m = 125.
  const std::vector<int> want = {127, 126, 1, 1, 0, 2, 129, 255, 0, 125};
  for (qnt_isa isa : {QNT_ISA_REFERENCE, QNT_ISA_NATIVE}) {
    Ctx ctx(isa, 1);
    EXPECT_EQ(codes(ctx.c, QNT_DTYPE_LOG8, 1.0f, x), want) << qnt_isa_name(isa);
  }
}

TEST(Log2, EveryCodeDequantizesToItsPowerOfTwoOnEveryKernelSet) {
  for (qnt_dtype d : {QNT_DTYPE_LOG4, QNT_DTYPE_LOG8}) {
    const int bits = d == QNT_DTYPE_LOG8 ? 8 : 4;
    const int M = (1 << (bits - 1)) - 1;
    const int n = 1 << bits;
    Ctx ref(QNT_ISA_REFERENCE, 1);
    // The rule by hand for scale 3: +-(3 * 2^-(M - m)), 0.0 and -0.0 for m = 0.
    const std::vector<uint32_t> got = every_code(ref.c, d, {3.0f});
    for (int c = 0; c < n; ++c) {
      const int m = c & M;
      const float mag = m == 0 ? 0.0f : std::ldexp(3.0f, -(M - m));
      const float want = (c >> (bits - 1)) ? -mag : mag;
      EXPECT_EQ(got[static_cast<size_t>(c)], bits_of(want)) << "code " << c;
    }
    std::vector<float> per(static_cast<size_t>(n));
    for (int c = 0; c < n; ++c) per[static_cast<size_t>(c)] = c % 3 == 0 ? 1e-30f : 0.37f * (c + 1);
    const std::vector<uint32_t> want_shared = every_code(ref.c, d, {0.1f});
    const std::vector<uint32_t> want_per = every_code(ref.c, d, per);
    for (qnt_isa isa : qnt_test::runnable_isas({QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_NEON})) {
      Ctx fast(isa, 1);
      EXPECT_EQ(every_code(fast.c, d, {0.1f}), want_shared) << qnt_isa_name(isa);
      EXPECT_EQ(every_code(fast.c, d, per), want_per) << qnt_isa_name(isa);
    }
  }
}

TEST(Log2, QparamsReportTheLogSchemeAndRefuseZeroPoints) {
  QP qp;
  qnt_test::per_tensor(qp, QNT_DTYPE_LOG4, 0.5f, 0);
  qnt_scheme s = 0;
  ASSERT_EQ(qnt_qparams_scheme(qp.p, &s), QNT_OK);
  EXPECT_EQ(s, QNT_SCHEME_LOG2);
  QP bad;
  EXPECT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_LOG8, 0.5f, 1, &bad.p), QNT_ERR_INVALID_QPARAMS);
  int32_t lo = 0, hi = 0;
  EXPECT_EQ(qnt_dtype_range(QNT_DTYPE_LOG4, &lo, &hi), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_LOG4), 4);
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_LOG8), 8);
  EXPECT_STREQ(qnt_dtype_name(QNT_DTYPE_LOG8), "log8");
  // The integer GEMM takes no log codes.
  T a, b, y;
  const std::vector<int64_t> shape{2, 2};
  qnt_test::make_q(a, QNT_DTYPE_LOG4, shape, qp.p);
  QP qi;
  qnt_test::per_tensor(qi, QNT_DTYPE_I8, 0.5f, 0);
  qnt_test::make_q(b, QNT_DTYPE_I8, shape, qi.p);
  qnt_test::make_q(y, QNT_DTYPE_I32, shape, nullptr);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, y.t), QNT_ERR_DTYPE_MISMATCH);
}

TEST(Log2, CodebookCalibrationTakesTheAbsmax) {
  const std::vector<float> x = {0.5f, -3.0f, 1.0f, 0.0f, 0.0f, 0.0f, -0.0f, 0.0f};
  T tx;
  qnt_test::make_f32(tx, {2, 4}, x);
  QP qp;
  ASSERT_EQ(qnt_calibrate_codebook(nullptr, tx.t, QNT_DTYPE_LOG4, QNT_GRANULARITY_PER_AXIS, 0, 0,
                                   &qp.p),
            QNT_OK)
      << qnt_last_error_message();
  float s[2] = {0, 0};
  ASSERT_EQ(qnt_qparams_scales(qp.p, s, 2), QNT_OK);
  EXPECT_EQ(s[0], 3.0f);
  EXPECT_EQ(s[1], 1.0f);  // no nonzero value: scale 1
}

TEST(Log2, CalibratorsComputeLogParameters) {
  std::mt19937 rng(5);
  std::exponential_distribution<float> e(1.0f);
  std::vector<float> x(1 << 14);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 ? 1.0f : -1.0f) * e(rng);  // Laplace
  T tx;
  qnt_test::make_f32(tx, {static_cast<int64_t>(x.size())}, x);
  float amax = 0.0f;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  auto run = [&](qnt_calib_method m, qnt_dtype d, QP &out) {
    qnt_calibrator *c = nullptr;
    ASSERT_EQ(qnt_calibrator_create(m, d, QNT_SCHEME_LOG2, QNT_GRANULARITY_PER_TENSOR, 0, &c),
              QNT_OK)
        << qnt_last_error_message();
    EXPECT_EQ(qnt_calibrator_observe(nullptr, c, tx.t), QNT_OK);
    EXPECT_EQ(qnt_calibrator_compute(nullptr, c, &out.p), QNT_OK) << qnt_last_error_message();
    qnt_calibrator_destroy(c);
  };
  for (qnt_dtype d : {QNT_DTYPE_LOG4, QNT_DTYPE_LOG8}) {
    QP mm, pct, mse, ad;
    run(QNT_CALIB_MINMAX, d, mm);
    run(QNT_CALIB_PERCENTILE, d, pct);
    run(QNT_CALIB_MSE, d, mse);
    run(QNT_CALIB_ADAPTIVE, d, ad);
    float s = 0.0f;
    ASSERT_EQ(qnt_qparams_scales(mm.p, &s, 1), QNT_OK);
    EXPECT_EQ(s, amax);
    ASSERT_EQ(qnt_qparams_scales(pct.p, &s, 1), QNT_OK);
    EXPECT_LT(s, amax);
    EXPECT_GT(s, 0.0f);
    const std::vector<int64_t> shape{static_cast<int64_t>(x.size())};
    // The MSE search scores candidates by the histogram's midpoints; on 16k values it is at
    // least as good as min-max by the measured error too.
    EXPECT_GE(sqnr(x, d, mse.p, shape), sqnr(x, d, mm.p, shape) - 0.05);
    EXPECT_GE(sqnr(x, d, ad.p, shape), sqnr(x, d, mm.p, shape) - 0.05);
  }
  qnt_calibrator *c = nullptr;
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_ENTROPY, QNT_DTYPE_LOG4, QNT_SCHEME_LOG2,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_MINMAX, QNT_DTYPE_LOG4, QNT_SCHEME_SYMMETRIC,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_LOG2,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(qnt_calibrator_create(QNT_CALIB_MINMAX, QNT_DTYPE_LOG8, QNT_SCHEME_LOG2,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_OK);
  EXPECT_EQ(qnt_calibrator_set_option(c, QNT_CALIB_OPT_QUANT_MIN, 0.0), QNT_ERR_INVALID_ARGUMENT);
  // Serialization round trip keeps the log dtype.
  EXPECT_EQ(qnt_calibrator_observe(nullptr, c, tx.t), QNT_OK);
  size_t size = 0;
  EXPECT_EQ(qnt_calibrator_serialize(c, nullptr, 0, &size), QNT_OK);
  std::vector<uint8_t> buf(size);
  EXPECT_EQ(qnt_calibrator_serialize(c, buf.data(), buf.size(), &size), QNT_OK);
  qnt_calibrator *back = nullptr;
  ASSERT_EQ(qnt_calibrator_deserialize(buf.data(), buf.size(), &back), QNT_OK);
  QP q1, q2;
  EXPECT_EQ(qnt_calibrator_compute(nullptr, c, &q1.p), QNT_OK);
  EXPECT_EQ(qnt_calibrator_compute(nullptr, back, &q2.p), QNT_OK);
  float s1 = 0, s2 = 0;
  qnt_dtype d2 = 0;
  EXPECT_EQ(qnt_qparams_scales(q1.p, &s1, 1), QNT_OK);
  EXPECT_EQ(qnt_qparams_scales(q2.p, &s2, 1), QNT_OK);
  EXPECT_EQ(qnt_qparams_dtype(q2.p, &d2), QNT_OK);
  EXPECT_EQ(s1, s2);
  EXPECT_EQ(d2, QNT_DTYPE_LOG8);
  qnt_calibrator_destroy(back);
  qnt_calibrator_destroy(c);
  QP mm;
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, tx.t, QNT_DTYPE_I8, QNT_SCHEME_LOG2,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &mm.p),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, tx.t, QNT_DTYPE_LOG8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &mm.p),
            QNT_ERR_UNSUPPORTED);
}

TEST(Log2, ErrorReportCountsValuesAboveTheTopLevelAsSaturated) {
  QP qp;
  qnt_test::per_tensor(qp, QNT_DTYPE_LOG4, 1.0f, 0);
  // sqrt 2 is the edge: 1.41421354 rounds to the top level, 1.41421366 would need 2^1.
  const std::vector<float> x = {1.41421354f, 1.41421366f, -4.0f, 0.5f};
  T tx;
  qnt_test::make_f32(tx, {4}, x);
  qnt_error_report r{};
  ASSERT_EQ(qnt_error_report_compute(nullptr, tx.t, qp.p, &r, sizeof r), QNT_OK);
  EXPECT_EQ(r.saturated_fraction, 0.5);
  EXPECT_EQ(r.max_abs_error, 3.0);
}

TEST(Pow2Scales, RoundUpWithoutDataAndChooseByErrorWithIt) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 64, cols = 256;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * (1.0f + static_cast<float>(i / cols) * 0.37f);
  T tx;
  qnt_test::make_f32(tx, {rows, cols}, x);
  QP free_qp;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, tx.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_AXIS, 0, 0, &free_qp.p),
            QNT_OK);
  QP up, chosen;
  ASSERT_EQ(qnt_qparams_pow2_scales(nullptr, free_qp.p, nullptr, &up.p), QNT_OK)
      << qnt_last_error_message();
  ASSERT_EQ(qnt_qparams_pow2_scales(nullptr, free_qp.p, tx.t, &chosen.p), QNT_OK)
      << qnt_last_error_message();
  std::vector<float> s0(rows), su(rows), sc(rows);
  ASSERT_EQ(qnt_qparams_scales(free_qp.p, s0.data(), s0.size()), QNT_OK);
  ASSERT_EQ(qnt_qparams_scales(up.p, su.data(), su.size()), QNT_OK);
  ASSERT_EQ(qnt_qparams_scales(chosen.p, sc.data(), sc.size()), QNT_OK);
  for (int64_t r = 0; r < rows; ++r) {
    int e = 0;
    EXPECT_EQ(std::frexp(su[r], &e), 0.5f);
    EXPECT_EQ(std::frexp(sc[r], &e), 0.5f);
    EXPECT_GE(su[r], s0[r]);
    EXPECT_LT(su[r], 2.0f * s0[r]);
    EXPECT_TRUE(sc[r] == su[r] || sc[r] == su[r] / 2.0f);
  }
  const std::vector<int64_t> shape{rows, cols};
  const double q_free = sqnr(x, QNT_DTYPE_I8, free_qp.p, shape);
  const double q_up = sqnr(x, QNT_DTYPE_I8, up.p, shape);
  const double q_chosen = sqnr(x, QNT_DTYPE_I8, chosen.p, shape);
  EXPECT_GE(q_chosen, q_up);  // the chosen candidate has the smaller error, group by group
  EXPECT_LE(q_up, q_free);
  qnt_granularity g = 0;
  ASSERT_EQ(qnt_qparams_granularity(chosen.p, &g), QNT_OK);
  EXPECT_EQ(g, QNT_GRANULARITY_PER_AXIS);
  // A power of two stays; a scale with no power of two above it in float32 is refused.
  QP p2, big, out;
  qnt_test::per_tensor(p2, QNT_DTYPE_U8, 0.125f, 7);
  ASSERT_EQ(qnt_qparams_pow2_scales(nullptr, p2.p, nullptr, &out.p), QNT_OK);
  float s = 0;
  int32_t z = 0;
  ASSERT_EQ(qnt_qparams_scales(out.p, &s, 1), QNT_OK);
  ASSERT_EQ(qnt_qparams_zero_points(out.p, &z, 1), QNT_OK);
  EXPECT_EQ(s, 0.125f);
  EXPECT_EQ(z, 7);
  qnt_test::per_tensor(big, QNT_DTYPE_I8, FLT_MAX, 0);
  QP none;
  EXPECT_EQ(qnt_qparams_pow2_scales(nullptr, big.p, nullptr, &none.p), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_qparams_pow2_scales(nullptr, nullptr, nullptr, &none.p), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_qparams_pow2_scales(nullptr, free_qp.p, nullptr, nullptr), QNT_ERR_NULL_POINTER);
  T wrong;
  qnt_test::make_f32(wrong, {rows + 1, cols}, std::vector<float>(static_cast<size_t>((rows + 1) * cols)));
  EXPECT_EQ(qnt_qparams_pow2_scales(nullptr, free_qp.p, wrong.t, &none.p), QNT_ERR_SHAPE_MISMATCH);
}
