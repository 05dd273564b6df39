// Tuning by measurement (qnt_context_set_tuning): the tuned runs give the bits of the untuned
// ones on every operator family it reaches (the integer GEMM as qmatmul, the dynamic linear
// layer and conv2d; the weight-only layer's packed kernels in both modes), whatever the table
// holds (measured, or imported with extreme block shapes and prefetch distances), and the
// table's text form round-trips and refuses what it cannot read.
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

using qnt_test::Ctx;
using qnt_test::QP;
using qnt_test::T;

namespace {

std::string table() {
  size_t n = 0;
  EXPECT_EQ(qnt_tuning_export(nullptr, 0, &n), QNT_OK);
  std::string s(n, '\0');
  EXPECT_EQ(qnt_tuning_export(&s[0], s.size(), &n), QNT_OK);
  s.resize(n - 1);
  return s;
}

using qnt_test::Desc;
using qnt_test::Prep;

std::vector<float> randn(std::mt19937 &rng, size_t n) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v) x = nd(rng);
  return v;
}

std::vector<uint8_t> rand_bytes(std::mt19937 &rng, size_t n) {
  std::uniform_int_distribution<int> u(0, 255);
  std::vector<uint8_t> v(n);
  for (uint8_t &x : v) x = static_cast<uint8_t>(u(rng));
  return v;
}

// Every operator the tuning reaches, once, on fixed inputs: the outputs' bytes, concatenated.
std::vector<uint8_t> run_all(qnt_context *ctx) {
  std::mt19937 rng(17);
  std::vector<uint8_t> out;
  auto append = [&](const qnt_tensor *t) {
    const std::vector<uint8_t> b = qnt_test::bytes_of(t);
    out.insert(out.end(), b.begin(), b.end());
  };
  // qmatmul: u8 a [M, K] with a zero point, i8 b [K, N], i32 y. Shapes with one and many row
  // blocks and tiles.
  for (const auto &mkn : {std::vector<int64_t>{7, 64, 40}, std::vector<int64_t>{96, 200, 130}}) {
    const int64_t M = mkn[0], K = mkn[1], N = mkn[2];
    QP qa, qb;
    qnt_test::per_tensor(qa, QNT_DTYPE_U8, 0.1f, 131);
    qnt_test::per_tensor(qb, QNT_DTYPE_I8, 0.1f, 0);
    T a, b, y;
    const auto ab = rand_bytes(rng, static_cast<size_t>(M * K));
    const auto bb = rand_bytes(rng, static_cast<size_t>(K * N));
    qnt_test::make_raw(a, QNT_DTYPE_U8, {M, K}, qa.p, ab.data(), ab.size());
    qnt_test::make_raw(b, QNT_DTYPE_I8, {K, N}, qb.p, bb.data(), bb.size());
    qnt_test::make_q(y, QNT_DTYPE_I32, {M, N}, nullptr);
    EXPECT_EQ(qnt_qmatmul(ctx, a.t, b.t, nullptr, y.t), QNT_OK) << qnt_last_error_message();
    append(y.t);
  }
  {  // the dynamic linear layer (prepared): f32 x [M, K], i8 w [N, K] per channel, f32 y
    const int64_t M = 33, K = 96, N = 72;
    std::vector<float> scales(static_cast<size_t>(N), 0.02f);
    QP qw;
    EXPECT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, scales.size(), scales.data(), nullptr, &qw.p),
              QNT_OK);
    const auto wb = rand_bytes(rng, static_cast<size_t>(N * K));
    T w, x, y;
    qnt_test::make_raw(w, QNT_DTYPE_I8, {N, K}, qw.p, wb.data(), wb.size());
    qnt_test::make_f32(x, {M, K}, randn(rng, static_cast<size_t>(M * K)));
    qnt_test::make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
    Prep p;
    EXPECT_EQ(qnt_prepared_create_linear_dynamic(ctx, w.t, nullptr, nullptr, &p.p), QNT_OK)
        << qnt_last_error_message();
    EXPECT_EQ(qnt_prepared_run(ctx, p.p, x.t, y.t), QNT_OK) << qnt_last_error_message();
    append(y.t);
  }
  {  // conv2d: u8 x [1, 8, 12, 12], i8 w [16, 8, 3, 3], i32 y
    QP qx, qw;
    qnt_test::per_tensor(qx, QNT_DTYPE_U8, 0.1f, 7);
    qnt_test::per_tensor(qw, QNT_DTYPE_I8, 0.1f, 0);
    const auto xb = rand_bytes(rng, 8 * 12 * 12);
    const auto wb = rand_bytes(rng, 16 * 8 * 9);
    T x, w, y;
    qnt_test::make_raw(x, QNT_DTYPE_U8, {1, 8, 12, 12}, qx.p, xb.data(), xb.size());
    qnt_test::make_raw(w, QNT_DTYPE_I8, {16, 8, 3, 3}, qw.p, wb.data(), wb.size());
    qnt_test::make_q(y, QNT_DTYPE_I32, {1, 16, 10, 10}, nullptr);
    EXPECT_EQ(qnt_qconv2d(ctx, x.t, w.t, nullptr, nullptr, y.t), QNT_OK) << qnt_last_error_message();
    append(y.t);
  }
  // The weight-only layer, f32 and int8 modes, batch 1 and 3: i4 w [N, K] per block of 32.
  for (int64_t mode : {int64_t{QNT_WEIGHT_ONLY_F32}, int64_t{QNT_WEIGHT_ONLY_INT8_ACT}}) {
    const int64_t K = 256, N = 160;
    T wf, w;
    qnt_test::make_f32(wf, {N, K}, randn(rng, static_cast<size_t>(N * K)));
    QP qw;
    EXPECT_EQ(qnt_calibrate_minmax(nullptr, wf.t, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_BLOCK, 1, 32, &qw.p),
              QNT_OK);
    qnt_test::make_q(w, QNT_DTYPE_I4, {N, K}, qw.p);
    EXPECT_EQ(qnt_quantize(nullptr, wf.t, w.t), QNT_OK);
    Desc d;
    EXPECT_EQ(qnt_op_desc_set(d.d, QNT_OP_WEIGHT_ONLY_MODE, mode), QNT_OK);
    Prep p;
    EXPECT_EQ(qnt_prepared_create_linear_weight_only(ctx, w.t, nullptr, d.d, &p.p), QNT_OK)
        << qnt_last_error_message();
    for (int64_t rows : {1, 3}) {
      T x, y;
      qnt_test::make_f32(x, {rows, K}, randn(rng, static_cast<size_t>(rows * K)));
      qnt_test::make_q(y, QNT_DTYPE_F32, {rows, N}, nullptr);
      EXPECT_EQ(qnt_prepared_run(ctx, p.p, x.t, y.t), QNT_OK) << qnt_last_error_message();
      append(y.t);
    }
  }
  return out;
}

// The table with the two parameters of every entry (of `family` only, when given) replaced.
std::string with_params(const std::string &t, const char *p1, const char *p2,
                        const std::string &family = "") {
  std::istringstream in(t);
  std::string line, out;
  std::getline(in, line);
  out = line + "\n";
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string tok[8];
    for (std::string &s : tok) f >> s;
    for (int i = 0; i < 6; ++i) out += tok[i] + " ";
    if (family.empty() || tok[0] == family) out += std::string(p1) + " " + p2 + "\n";
    else out += tok[6] + " " + tok[7] + "\n";
  }
  return out;
}

}  // namespace

TEST(Tune, MeasuredAndImportedChoicesGiveTheUntunedBits) {
  for (int threads : {1, 2}) {
    qnt_tuning_clear();
    Ctx plain(QNT_ISA_NATIVE, threads), tuned(QNT_ISA_NATIVE, threads);
    // Under QNT_MAX_ISA=reference (or on a machine without fast kernels) the reference kernels
    // have no choices to measure; the bits must still be the same.
    qnt_isa isa = 0;
    ASSERT_EQ(qnt_context_isa(plain.c, &isa), QNT_OK);
    const bool fast = isa != QNT_ISA_REFERENCE;
    ASSERT_EQ(qnt_context_set_tuning(tuned.c, QNT_TUNING_MEASURE), QNT_OK);
    qnt_tuning mode = 0;
    ASSERT_EQ(qnt_context_tuning(tuned.c, &mode), QNT_OK);
    EXPECT_EQ(mode, QNT_TUNING_MEASURE);
    const std::vector<uint8_t> want = run_all(plain.c);
    EXPECT_EQ(table(), "qnt-tuning 1\n");  // an untuned context measures nothing
    EXPECT_EQ(run_all(tuned.c), want);      // measuring
    const std::string measured = table();
    if (fast) {
      EXPECT_NE(measured.find("\ngemm "), std::string::npos) << measured;
      EXPECT_NE(measured.find("\nwo "), std::string::npos) << measured;
    } else {
      EXPECT_EQ(measured, "qnt-tuning 1\n");
    }
    EXPECT_EQ(run_all(tuned.c), want);  // from the table
    EXPECT_EQ(table(), measured);       // nothing measured twice
    // Whatever the table says (within what it accepts), the bits stay.
    Ctx cached(QNT_ISA_NATIVE, threads);
    ASSERT_EQ(qnt_context_set_tuning(cached.c, QNT_TUNING_CACHED), QNT_OK);
    for (const auto &p : {std::pair<const char *, const char *>{"1", "1"}, {"1000000", "1000000"},
                          {"2", "3"}, {"7", "1024"}}) {
      qnt_tuning_clear();
      ASSERT_EQ(qnt_tuning_import(with_params(measured, p.first, p.second).c_str()), QNT_OK)
          << qnt_last_error_message() << "\n" << with_params(measured, p.first, p.second);
      EXPECT_EQ(run_all(cached.c), want) << p.first << " " << p.second;
    }
    qnt_tuning_clear();  // the weight-only layer without prefetching
    ASSERT_EQ(qnt_tuning_import(with_params(measured, "0", "1", "wo").c_str()), QNT_OK);
    EXPECT_EQ(run_all(cached.c), want);
    // A cached context measures nothing on a miss.
    qnt_tuning_clear();
    EXPECT_EQ(run_all(cached.c), want);
    EXPECT_EQ(table(), "qnt-tuning 1\n");
  }
  qnt_tuning_clear();
}

TEST(Tune, TheTableRoundTripsAndRefusesWhatItCannotRead) {
  qnt_tuning_clear();
  const char *text = "qnt-tuning 1\ngemm avx2 96 130 200 2 4 8\nwo generic 1 4096 4096 1 3 1\n";
  ASSERT_EQ(qnt_tuning_import(text), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(table(), text);
  size_t n = 0;
  char small[8];
  EXPECT_EQ(qnt_tuning_export(small, sizeof small, &n), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, std::string(text).size() + 1);
  for (const char *bad : {"", "qnt-tuning 2\n", "qnt-tuning 1\ngemm avx2 96 130 200 2 4\n",
                          "qnt-tuning 1\nconv avx2 96 130 200 2 4 8\n",
                          "qnt-tuning 1\ngemm AVX2 96 130 200 2 4 8\n",
                          "qnt-tuning 1\ngemm avx2 96 130 200 0 4 8\n",
                          "qnt-tuning 1\ngemm avx2 96 130 200 2 0 8\n",
                          "qnt-tuning 1\ngemm avx2 -96 130 200 2 4 8\n",
                          "qnt-tuning 1\ngemm avx2 96 130 200 2 4 8x\n",
                          "qnt-tuning 1\nwo avx2 1 2 3 1 99999999999999999999 1\n"}) {
    EXPECT_EQ(qnt_tuning_import(bad), QNT_ERR_CORRUPT_DATA) << bad;
    EXPECT_EQ(table(), text) << bad;  // all or nothing
  }
  EXPECT_EQ(qnt_tuning_import(nullptr), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_tuning_export(nullptr, 0, nullptr), QNT_ERR_NULL_POINTER);
  Ctx c(QNT_ISA_NATIVE, 1);
  EXPECT_EQ(qnt_context_set_tuning(c.c, 3), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_context_set_tuning(nullptr, QNT_TUNING_OFF), QNT_ERR_NULL_POINTER);
  qnt_tuning_clear();
  EXPECT_EQ(table(), "qnt-tuning 1\n");
}
