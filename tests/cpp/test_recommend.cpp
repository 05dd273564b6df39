// qnt_recommender: mixed precision by measured error, through the public ABI. The measure is
// checked against qnt's own quantize / dequantize, the byte budget against the uniform choice it
// must beat or match, and the answer for determinism (twice, and under other thread counts).
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

using qnt_test::Ctx;
using qnt_test::QP;
using qnt_test::T;

namespace {

struct Rec {
  qnt_recommender *r = nullptr;
  Rec() { EXPECT_EQ(qnt_recommender_create(&r), QNT_OK); }
  Rec(const Rec &) = delete;
  Rec &operator=(const Rec &) = delete;
  ~Rec() { qnt_recommender_destroy(r); }
};

// Weights of several difficulties: Gaussian, heavy-tailed (Laplace with outlier channels), and
// small and nearly constant.
std::vector<std::vector<float>> weights(int64_t rows, int64_t cols) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::exponential_distribution<float> ex(1.0f);
  std::vector<std::vector<float>> out(4, std::vector<float>(static_cast<size_t>(rows * cols)));
  for (size_t i = 0; i < out[0].size(); ++i) {
    out[0][i] = 0.02f * nd(rng);
    out[1][i] = (i % 2 ? 1.0f : -1.0f) * ex(rng) * (i % static_cast<size_t>(cols) == 5 ? 30.0f : 1.0f);
    out[2][i] = 0.5f + 0.001f * nd(rng);
    out[3][i] = nd(rng) * (1.0f + static_cast<float>(i / static_cast<size_t>(cols)));
  }
  return out;
}

const char *const kNames[] = {"gauss", "heavy", "flat", "rows"};

void fill(qnt_context *ctx, Rec &rec, const std::vector<const char *> &formats, int64_t rows,
          int64_t cols) {
  for (const char *f : formats) ASSERT_EQ(qnt_recommender_add_format(rec.r, f), QNT_OK) << f;
  const auto w = weights(rows, cols);
  for (size_t t = 0; t < w.size(); ++t) {
    T tw;
    qnt_test::make_f32(tw, {rows, cols}, w[t]);
    ASSERT_EQ(qnt_recommender_add_tensor(ctx, rec.r, kNames[t], tw.t, nullptr, 0), QNT_OK)
        << qnt_last_error_message();
  }
}

std::string report(const Rec &rec) {
  const char *s = nullptr;
  EXPECT_EQ(qnt_recommender_report(rec.r, &s), QNT_OK) << qnt_last_error_message();
  return s == nullptr ? "" : s;
}

struct Choice {
  std::string name, format;
  uint64_t bytes = 0;
  double sqnr = 0.0;
};

std::vector<Choice> choices(const Rec &rec) {
  size_t n = 0;
  EXPECT_EQ(qnt_recommender_tensor_count(rec.r, &n), QNT_OK);
  std::vector<Choice> out(n);
  for (size_t i = 0; i < n; ++i) {
    const char *name = nullptr, *format = nullptr;
    EXPECT_EQ(qnt_recommender_choice(rec.r, i, &name, &format, &out[i].bytes, &out[i].sqnr),
              QNT_OK);
    out[i].name = name;
    out[i].format = format;
  }
  return out;
}

const std::vector<const char *> kFormats = {"i8", "i4.b32", "i4.b128", "NF4.b64", "q4_k",
                                            "ternary", "log4.b32", "u4.b64"};

}  // namespace

TEST(Recommend, ByteBudgetOfUniformInt4MatchesOrBeatsItsWorstTensor) {
  Ctx ctx(QNT_ISA_NATIVE, 2);
  Rec uniform, mixed;
  fill(ctx.c, uniform, {"i4.b128"}, 32, 256);
  fill(ctx.c, mixed, kFormats, 32, 256);
  ASSERT_EQ(qnt_recommender_run(uniform.r, QNT_BUDGET_MIN_SQNR, 0.0), QNT_OK);
  uint64_t budget = 0;
  double worst_uniform = std::numeric_limits<double>::infinity();
  for (const Choice &c : choices(uniform)) {
    budget += c.bytes;
    worst_uniform = std::min(worst_uniform, c.sqnr);
    EXPECT_EQ(c.format, "i4.b128");
  }
  // i4 per block of 128: 128 / 2 bytes and a 4-byte scale a block.
  EXPECT_EQ(budget, 4u * 32u * 256u / 128u * (64u + 4u));
  ASSERT_EQ(qnt_recommender_run(mixed.r, QNT_BUDGET_BYTES, static_cast<double>(budget)), QNT_OK)
      << qnt_last_error_message();
  uint64_t total = 0;
  double worst = std::numeric_limits<double>::infinity();
  for (const Choice &c : choices(mixed)) {
    total += c.bytes;
    worst = std::min(worst, c.sqnr);
  }
  EXPECT_LE(total, budget);
  EXPECT_GT(worst, worst_uniform);  // the heavy-tailed tensor gets more than int4's blocks
  const std::string rep = report(mixed);
  for (const char *n : kNames) EXPECT_NE(rep.find(n), std::string::npos) << rep;
  EXPECT_NE(rep.find("worst SQNR"), std::string::npos) << rep;
  EXPECT_NE(rep.find("runner-up"), std::string::npos) << rep;
}

TEST(Recommend, SameAnswerTwiceAndOnAnyThreadCount) {
  Ctx one(QNT_ISA_REFERENCE, 1), two(QNT_ISA_NATIVE, 2);
  Rec a, b;
  fill(one.c, a, kFormats, 16, 512);
  fill(two.c, b, kFormats, 16, 512);
  for (double budget : {20000.0, 30000.0, 45000.0}) {
    ASSERT_EQ(qnt_recommender_run(a.r, QNT_BUDGET_BYTES, budget), QNT_OK) << qnt_last_error_message();
    ASSERT_EQ(qnt_recommender_run(b.r, QNT_BUDGET_BYTES, budget), QNT_OK);
    EXPECT_EQ(report(a), report(b));
    const std::string first = report(a);
    ASSERT_EQ(qnt_recommender_run(a.r, QNT_BUDGET_BYTES, budget), QNT_OK);
    EXPECT_EQ(report(a), first);
  }
}

TEST(Recommend, MinimumSqnrTakesTheCheapestFormatThatKeepsIt) {
  Ctx ctx(QNT_ISA_NATIVE, 1);
  Rec rec;
  fill(ctx.c, rec, kFormats, 16, 256);
  for (double floor_db : {10.0, 20.0, 30.0}) {
    ASSERT_EQ(qnt_recommender_run(rec.r, QNT_BUDGET_MIN_SQNR, floor_db), QNT_OK);
    // Against each tensor measured alone in each format.
    const auto w = weights(16, 256);
    const auto got = choices(rec);
    for (size_t t = 0; t < got.size(); ++t) {
      EXPECT_GE(got[t].sqnr, floor_db) << got[t].name << " " << got[t].format;
      for (const char *f : kFormats) {
        Rec alone;
        ASSERT_EQ(qnt_recommender_add_format(alone.r, f), QNT_OK);
        T tw;
        qnt_test::make_f32(tw, {16, 256}, w[t]);
        ASSERT_EQ(qnt_recommender_add_tensor(ctx.c, alone.r, "w", tw.t, nullptr, 0), QNT_OK);
        ASSERT_EQ(qnt_recommender_run(alone.r, QNT_BUDGET_MIN_SQNR, floor_db), QNT_OK);
        const Choice c = choices(alone)[0];
        if (c.sqnr >= floor_db) {
          EXPECT_GE(c.bytes, got[t].bytes) << got[t].name << " " << f;
        }
      }
    }
  }
}

TEST(Recommend, TheMeasureIsQntsOwnErrorWeightedByImportance) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const int64_t rows = 8, cols = 64;
  std::vector<float> w(static_cast<size_t>(rows * cols)), imp(static_cast<size_t>(cols));
  for (float &v : w) v = nd(rng);
  for (int64_t c = 0; c < cols; ++c) imp[static_cast<size_t>(c)] = c % 4 == 0 ? 10.0f : 0.5f;
  T tw;
  qnt_test::make_f32(tw, {rows, cols}, w);
  // By hand: int8 per output channel, symmetric min-max, quantized and back through the API.
  QP qp;
  ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_AXIS, 0, 0, &qp.p),
            QNT_OK);
  T tq, tb;
  qnt_test::make_q(tq, QNT_DTYPE_I8, {rows, cols}, qp.p);
  qnt_test::make_q(tb, QNT_DTYPE_F32, {rows, cols}, nullptr);
  ASSERT_EQ(qnt_quantize(nullptr, tw.t, tq.t), QNT_OK);
  ASSERT_EQ(qnt_dequantize(nullptr, tq.t, tb.t), QNT_OK);
  const std::vector<float> back = qnt_test::floats_of(tb.t);
  double s = 0, e = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double a = imp[i % static_cast<size_t>(cols)], d = double(w[i]) - double(back[i]);
    s += a * double(w[i]) * w[i];
    e += a * d * d;
  }
  Rec rec;
  ASSERT_EQ(qnt_recommender_add_format(rec.r, "i8"), QNT_OK);
  ASSERT_EQ(qnt_recommender_add_tensor(nullptr, rec.r, "w", tw.t, imp.data(), imp.size()), QNT_OK);
  ASSERT_EQ(qnt_recommender_run(rec.r, QNT_BUDGET_MIN_SQNR, 0.0), QNT_OK);
  const Choice c = choices(rec)[0];
  EXPECT_DOUBLE_EQ(c.sqnr, 10.0 * std::log10(s / e));
  EXPECT_EQ(c.bytes, static_cast<uint64_t>(rows * cols + 4 * rows));
  EXPECT_EQ(c.format, "i8");
}

TEST(Recommend, Refusals) {
  Rec rec;
  EXPECT_EQ(qnt_recommender_add_format(rec.r, "int3"), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_recommender_add_format(rec.r, "i4.b0"), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_recommender_add_format(rec.r, "i4.x32"), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_recommender_add_format(rec.r, nullptr), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_recommender_add_format(nullptr, "i8"), QNT_ERR_NULL_POINTER);
  T tw;
  qnt_test::make_f32(tw, {2, 20}, std::vector<float>(40, 1.0f));
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, rec.r, "w", tw.t, nullptr, 0),
            QNT_ERR_INVALID_ARGUMENT);  // no format yet
  ASSERT_EQ(qnt_recommender_add_format(rec.r, "q4_k"), QNT_OK);
  EXPECT_EQ(qnt_recommender_add_format(rec.r, "Q4_K"), QNT_ERR_INVALID_ARGUMENT);  // again
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, rec.r, "w", tw.t, nullptr, 0), QNT_ERR_UNSUPPORTED);
  Rec r2;
  ASSERT_EQ(qnt_recommender_add_format(r2.r, "i8"), QNT_OK);
  const char *s = nullptr;
  EXPECT_EQ(qnt_recommender_report(r2.r, &s), QNT_ERR_INVALID_ARGUMENT);  // not run
  EXPECT_EQ(qnt_recommender_run(r2.r, QNT_BUDGET_BYTES, 100.0), QNT_ERR_INVALID_ARGUMENT);  // empty
  std::vector<float> imp(20, 1.0f);
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, r2.r, "w", tw.t, imp.data(), 19),
            QNT_ERR_SHAPE_MISMATCH);
  imp[3] = -1.0f;
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, r2.r, "w", tw.t, imp.data(), 20),
            QNT_ERR_INVALID_ARGUMENT);
  std::vector<float> bad(40, 1.0f);
  bad[7] = std::numeric_limits<float>::quiet_NaN();
  T tn;
  qnt_test::make_f32(tn, {2, 20}, bad);
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, r2.r, "n", tn.t, nullptr, 0), QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(qnt_recommender_add_tensor(nullptr, r2.r, "w", tw.t, nullptr, 0), QNT_OK);
  EXPECT_EQ(qnt_recommender_add_tensor(nullptr, r2.r, "w", tw.t, nullptr, 0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_recommender_add_format(r2.r, "i4"), QNT_ERR_INVALID_ARGUMENT);  // after a tensor
  EXPECT_EQ(qnt_recommender_run(r2.r, QNT_BUDGET_BYTES, 47.0), QNT_ERR_INVALID_ARGUMENT);  // < 48
  EXPECT_EQ(qnt_recommender_run(r2.r, 7, 100.0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_recommender_run(r2.r, QNT_BUDGET_MIN_SQNR, std::nan("")), QNT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(qnt_recommender_run(r2.r, QNT_BUDGET_BYTES, 48.0), QNT_OK);
  EXPECT_EQ(qnt_recommender_choice(r2.r, 1, nullptr, nullptr, nullptr, nullptr),
            QNT_ERR_INVALID_ARGUMENT);
  uint64_t bytes = 0;
  double q = 0;
  ASSERT_EQ(qnt_recommender_choice(r2.r, 0, nullptr, nullptr, &bytes, &q), QNT_OK);
  EXPECT_EQ(bytes, 48u);
  // 1 / (1 / 127.5) = 127.5 rounds to 128 and saturates at 127: 0.996 back, 48 dB.
  EXPECT_NEAR(q, 20.0 * std::log10(127.5 / 0.5), 1e-3);  // (float32 scale and product)
  qnt_recommender_destroy(nullptr);
}
