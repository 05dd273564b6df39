// The weight-only linear layer's fast kernels against its reference kernels, bit for bit,
// through the public ABI, in its modes (QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT and
// QNT_WEIGHT_ONLY_INT8_BLOCK):
// every kernel set this machine runs, 1 to 3 threads, K and N among 1, 31, 32, 33, 127, 128,
// 129 and 4096, every weight dtype and granularity each mode takes, short last blocks, and NaN,
// infinities, zeros and denormals in the activations. The int8 modes' references are checked
// against independent transcriptions of the header's rules.
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using qnt_test::Ctx;
using qnt_test::floats_of;
using qnt_test::make_f32;
using qnt_test::make_q;
using qnt_test::QP;
using qnt_test::T;

namespace {

using qnt_test::Desc;
using qnt_test::Prep;

std::vector<qnt_isa> fast_isas() {
  return qnt_test::runnable_isas({QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI, QNT_ISA_NEON});
}

struct Gran {
  qnt_granularity g;
  int64_t axis;
  int64_t block;
};

// Quantized weights [N, K] of dtype d with the granularity, from normal floats.
void make_weights(T &wq, std::mt19937 &rng, qnt_dtype d, int64_t N, int64_t K, const Gran &gr,
                  bool affine) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(N * K));
  for (auto &v : w) v = normal(rng);
  T tw;
  make_f32(tw, {N, K}, w);
  QP qp;
  if (d == QNT_DTYPE_NF4 || d == QNT_DTYPE_BINARY || d == QNT_DTYPE_TERNARY) {
    ASSERT_EQ(qnt_calibrate_codebook(nullptr, tw.t, d, gr.g, gr.axis, gr.block, &qp.p), QNT_OK)
        << qnt_last_error_message();
  } else {
    ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, d, affine ? QNT_SCHEME_AFFINE : QNT_SCHEME_SYMMETRIC,
                                   gr.g, gr.axis, gr.block, &qp.p),
              QNT_OK)
        << qnt_last_error_message();
  }
  make_q(wq, d, {N, K}, qp.p);
  ASSERT_EQ(qnt_quantize(nullptr, tw.t, wq.t), QNT_OK) << qnt_last_error_message();
}

// Activations: normal, with some rows or stretches zero, denormal, huge, NaN or infinite.
std::vector<float> make_x(std::mt19937 &rng, int64_t M, int64_t K, bool specials) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(M * K));
  for (auto &v : x) v = normal(rng);
  if (!specials) return x;
  std::uniform_int_distribution<int> kind(0, 9);
  for (int64_t m = 0; m < M; ++m) {
    float *row = x.data() + m * K;
    std::uniform_int_distribution<int64_t> at(0, K - 1);
    switch (kind(rng)) {
      case 0:
        for (int64_t k = 0; k < K; ++k) row[k] = 0.0f;
        break;
      case 1:
        row[at(rng)] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 2:
        row[at(rng)] = std::numeric_limits<float>::infinity();
        break;
      case 3:
        row[at(rng)] = -std::numeric_limits<float>::infinity();
        break;
      case 4:
        for (int64_t k = 0; k < K; ++k) row[k] *= 1e-40f;  // denormals
        break;
      case 5:
        for (int64_t k = at(rng); k < K && k < 40; ++k) row[k] = 0.0f;
        break;
      case 6:
        row[at(rng)] = 3e38f;
        break;
      default:
        break;
    }
  }
  return x;
}

// The same bits, NaN included: every NaN the layer outputs is the canonical quiet NaN (qnt.h).
bool same(float a, float b) {
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

// y of the prepared layer under ctx.
std::vector<float> run_prepared(qnt_context *ctx, const qnt_tensor *wq, const qnt_tensor *bias,
                                int64_t mode, const qnt_tensor *x, int64_t M, int64_t N,
                                qnt_status *status) {
  Desc d;
  EXPECT_EQ(qnt_op_desc_set(d.d, QNT_OP_WEIGHT_ONLY_MODE, mode), QNT_OK);
  Prep p;
  *status = qnt_prepared_create_linear_weight_only(ctx, wq, bias, d.d, &p.p);
  if (*status != QNT_OK) return {};
  T y;
  make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
  EXPECT_EQ(qnt_prepared_run(ctx, p.p, x, y.t), QNT_OK) << qnt_last_error_message();
  return floats_of(y.t);
}

struct Case {
  qnt_dtype d;
  Gran gr;
  bool affine;
};

// Compares every fast kernel set and thread count with the reference on one case.
void check_case(std::mt19937 &rng, const Case &c, int64_t M, int64_t N, int64_t K, int64_t mode,
                bool specials) {
  T wq;
  make_weights(wq, rng, c.d, N, K, c.gr, c.affine);
  const std::vector<float> x = make_x(rng, M, K, specials);
  std::vector<float> bias(static_cast<size_t>(N));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto &b : bias) b = normal(rng);
  T tx, tb;
  make_f32(tx, {M, K}, x);
  make_f32(tb, {N}, bias);
  const std::string what = std::string(qnt_dtype_name(c.d)) + " gran " + std::to_string(c.gr.g) +
                           " axis " + std::to_string(c.gr.axis) + " block " +
                           std::to_string(c.gr.block) + " M " + std::to_string(M) + " N " +
                           std::to_string(N) + " K " + std::to_string(K) + " mode " +
                           std::to_string(mode);
  qnt_status st_ref;
  std::vector<float> ref;
  {
    Ctx rc(QNT_ISA_REFERENCE, 1);
    ref = run_prepared(rc.c, wq.t, tb.t, mode, tx.t, M, N, &st_ref);
  }
  for (qnt_isa isa : fast_isas()) {
    for (int threads = 1; threads <= 3; ++threads) {
      Ctx fc(isa, threads);
      qnt_status st;
      const std::vector<float> got = run_prepared(fc.c, wq.t, tb.t, mode, tx.t, M, N, &st);
      ASSERT_EQ(st, st_ref) << what;
      if (st != QNT_OK) continue;
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_TRUE(same(got[i], ref[i]))
            << what << " isa " << isa << " threads " << threads << " at " << i << ": " << got[i]
            << " vs " << ref[i];
      }
    }
  }
  if (mode == QNT_WEIGHT_ONLY_F32 && st_ref == QNT_OK) {  // the one-shot call is the same layer
    T y;
    make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
    ASSERT_EQ(qnt_linear_weight_only(nullptr, tx.t, wq.t, tb.t, y.t), QNT_OK);
    const std::vector<float> got = floats_of(y.t);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_TRUE(same(got[i], ref[i])) << what << " one-shot";
    }
  }
}

const int64_t kDims[] = {1, 31, 32, 33, 127, 128, 129};

TEST(WeightOnly, FastKernelsExist) {
  const std::string s = qnt_test::chosen_kernels();
  EXPECT_NE(s.find("linear.weight_only="), std::string::npos) << s;
  if (!fast_isas().empty()) {
    EXPECT_EQ(s.find("linear.weight_only=ref"), std::string::npos) << s;
  }
}

TEST(WeightOnly, F32ModeFourBitAllShapes) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(11);
  const Case cases[] = {
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, true},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, false},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_AXIS, 0, 0}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, false},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, false},
  };
  for (const Case &c : cases)
    for (int64_t K : kDims)
      for (int64_t N : {int64_t{1}, int64_t{5}, int64_t{33}})
        check_case(rng, c, N == 5 ? 5 : 2, N, K, QNT_WEIGHT_ONLY_F32, true);
  for (int64_t N : kDims) check_case(rng, cases[0], 3, N, 129, QNT_WEIGHT_ONLY_F32, true);
  // Blocks of 16-128 elements with one zero point for every block or zero points per block
  // (affine), batch 1 (the AVX-512 assembly's tables inside a group of 128 elements: blocks of
  // 16, 32, 64; or per group, every group or every 2-3 groups; or one table a row) and 17 rows
  // (two 8-row tiles at blocks of 16 and 32, and a last row): the groups, the chunks after them
  // and a partial last one.
  const Case one[] = {
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 384}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_AXIS, 0, 0}, true},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_AXIS, 0, 0}, false},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, false},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, false},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, false},
  };
  for (const Case &c : one)
    for (int64_t K : {int64_t{128}, int64_t{200}, int64_t{640}, int64_t{1000}, int64_t{1152}})
      for (int64_t M : {int64_t{1}, int64_t{17}}) {
        check_case(rng, c, M, 9, K, QNT_WEIGHT_ONLY_F32, true);
        if (M == 1) check_case(rng, c, M, 9, K, QNT_WEIGHT_ONLY_F32, false);  // (as above)
      }
  // Batches of 16 rows and more: the AVX-512 tiles of 8 rows x 2 features for blocks of 16-64
  // (their groups of 128 elements, the chunks after them and a partial last one), the other
  // rows 4 at a time.
  for (const Case &c : cases)
    for (int64_t K : {int64_t{128}, int64_t{200}, int64_t{640}, int64_t{1000}})
      for (int64_t M : {int64_t{16}, int64_t{21}})
        check_case(rng, c, M, 6, K, QNT_WEIGHT_ONLY_F32, true);
}

TEST(WeightOnly, F32ModeEveryDtypeAndGranularity) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(12);
  const qnt_dtype dtypes[] = {QNT_DTYPE_I8,  QNT_DTYPE_U8,  QNT_DTYPE_I16,    QNT_DTYPE_U16,
                              QNT_DTYPE_I4,  QNT_DTYPE_U4,  QNT_DTYPE_NF4,    QNT_DTYPE_BINARY,
                              QNT_DTYPE_TERNARY};
  const Gran grans[] = {{QNT_GRANULARITY_PER_TENSOR, 0, 0},  {QNT_GRANULARITY_PER_AXIS, 0, 0},
                        {QNT_GRANULARITY_PER_AXIS, 1, 0},    {QNT_GRANULARITY_PER_BLOCK, 1, 32},
                        {QNT_GRANULARITY_PER_BLOCK, 1, 20},  {QNT_GRANULARITY_PER_BLOCK, 0, 2}};
  for (qnt_dtype d : dtypes)
    for (const Gran &g : grans) {
      const bool codebook = d == QNT_DTYPE_NF4 || d == QNT_DTYPE_BINARY || d == QNT_DTYPE_TERNARY;
      check_case(rng, {d, g, !codebook && d != QNT_DTYPE_I8}, 3, 7, 67, QNT_WEIGHT_ONLY_F32, true);
    }
}

// Byte weights in the f32 mode (W8A16): the AVX-512 tables' packed kernel and its batch path
// (tiles of 8 rows from 8 rows at blocks of 16 and 32, from 16 at larger blocks, the other rows
// 4 at a time; AVX2's dequantized slices), batch 1 to 21, K with and without a partial chunk and
// with chunks after the tiles' groups of 64 elements (K = 1000), blocks of 16 to 128, per axis
// and affine; every fast set against the reference, on 1-3 threads.
TEST(WeightOnly, F32ModeByteWeights) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(17);
  const Case cases[] = {
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, false},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, true},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_AXIS, 0, 0}, true},
      // One zero point for every block, batch 1: the AVX-512 assembly's blocks of 16, 32, 64
      // (scales inside a group of 64 elements) and of k groups, or one block a row, with the
      // zero point subtracted (per tensor affine) or not.
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_AXIS, 0, 0}, false},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, true},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, true},
      // Blocks of 3 and 6 chunks: block starts inside the AVX2 kernels' groups of 64 elements.
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, true},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 96}, false},
  };
  for (const Case &c : cases)
    for (int64_t K : {int64_t{128}, int64_t{200}, int64_t{512}, int64_t{1000}})
      for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}, int64_t{9}, int64_t{16}, int64_t{21}}) {
        check_case(rng, c, M, 9, K, QNT_WEIGHT_ONLY_F32, true);
        // (a single row may be drawn zero, NaN or infinite, hiding a wrong scale or code)
        if (M == 1) check_case(rng, c, M, 9, K, QNT_WEIGHT_ONLY_F32, false);
      }
}

TEST(WeightOnly, Int8ModeAllShapes) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(13);
  const Case cases[] = {
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, true},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_AXIS, 0, 0}, false},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, true},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, false},  // the reference path
  };
  // Batch 1 too (its own kernels), and K of whole 128-element groups in several units (B = 32
  // and 64: two units per group; B = 128 and 256: groups per unit; per-axis: one unit of K).
  for (const Case &c : cases) {
    for (int64_t K : kDims)
      for (int64_t N : {int64_t{1}, int64_t{6}, int64_t{33}})
        for (int64_t M : {int64_t{1}, N == 6 ? int64_t{5} : int64_t{2}})
          check_case(rng, c, M, N, K, QNT_WEIGHT_ONLY_INT8_ACT, true);
    for (int64_t K : {int64_t{256}, int64_t{384}, int64_t{640}})
      check_case(rng, c, 1, 9, K, QNT_WEIGHT_ONLY_INT8_ACT, true);
  }
  for (int64_t N : kDims) check_case(rng, cases[1], 3, N, 129, QNT_WEIGHT_ONLY_INT8_ACT, true);
}

// The block-dot mode: every dtype and granularity it takes, blocks of a multiple of the kernels'
// step (8 elements for 4-bit codes, 4 for bytes) and not (the reference path), N across panels
// of 16 features, and batches across the kernels' groups of rows.
TEST(WeightOnly, BlockModeAllShapes) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(23);
  const Case cases[] = {
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, true},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false},
      {QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 8}, false},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_AXIS, 0, 0}, false},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, true},
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, true},
      {QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 12}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, false},
      {QNT_DTYPE_U4, {QNT_GRANULARITY_PER_AXIS, 0, 0}, true},
      {QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 20}, false},  // the reference path
      {QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 6}, false},   // the reference path
  };
  for (const Case &c : cases) {
    for (int64_t K : kDims)
      for (int64_t N : {int64_t{1}, int64_t{17}, int64_t{33}})
        for (int64_t M : {int64_t{1}, N == 17 ? int64_t{7} : int64_t{2}})
          check_case(rng, c, M, N, K, QNT_WEIGHT_ONLY_INT8_BLOCK, true);
    check_case(rng, c, 1, 150, 640, QNT_WEIGHT_ONLY_INT8_BLOCK, true);
  }
  // Rows across the kernels' groups (1 to 16 and past), features across their panel groups:
  // varying zero points (cases[3]), symmetric int4 and NF4 (AVX-512 VNNI: groups of 8 rows in
  // tiles of 8 rows x 2 panels, N = 77 leaving an odd fifth panel; the other rows 4 x 3).
  for (size_t c : {size_t{3}, size_t{0}, size_t{4}})
    for (int64_t M : {3, 4, 5, 6, 9, 13, 16, 17, 40})
      check_case(rng, cases[c], M, 77, 256, QNT_WEIGHT_ONLY_INT8_BLOCK, true);
  for (int64_t N : {15, 16, 31, 32, 48, 64, 65, 129, 200})
    check_case(rng, cases[1], 3, N, 96, QNT_WEIGHT_ONLY_INT8_BLOCK, true);
}

// The integer mode's sums at their extremes: every stored code at its largest (or smallest)
// byte or nibble, with zero points at either end, against activations whose blocks quantize to
// all +127 or all -127 (so a kernel that keeps 16-bit partial sums meets its bound, and one that
// keeps them too long wraps). Blocks of 8 to 256 elements and one a row, batch 1, 3 and 5, every
// fast set against the reference on 1-3 threads, in both integer modes.
TEST(WeightOnly, IntegerModesAtTheCodesExtremes) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const int64_t N = 75, K = 512;  // (five panels of 16: a group of four and one)
  for (qnt_dtype d : {QNT_DTYPE_U4, QNT_DTYPE_I4, QNT_DTYPE_NF4, QNT_DTYPE_U8, QNT_DTYPE_I8})
    for (int64_t B : {int64_t{8}, int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}, K})
      for (int hi = 0; hi < 2; ++hi)
        for (int32_t zp_pick = 0; zp_pick < 2; ++zp_pick) {
          const bool four = d == QNT_DTYPE_U4 || d == QNT_DTYPE_I4 || d == QNT_DTYPE_NF4;
          const bool uns = d == QNT_DTYPE_U4 || d == QNT_DTYPE_U8;
          // The stored code: the dtype's largest or smallest (NF4: index 15 or 0).
          const int32_t lo_q = d == QNT_DTYPE_I4 ? -8 : d == QNT_DTYPE_I8 ? -128 : 0;
          const int32_t hi_q = d == QNT_DTYPE_I4 ? 7 : d == QNT_DTYPE_I8 ? 127 : four ? 15 : 255;
          const int32_t q = hi ? hi_q : lo_q;
          const size_t blocks = static_cast<size_t>((K + B - 1) / B) * static_cast<size_t>(N);
          std::vector<float> sc(blocks, 0.01f);
          // Zero points at the other end of the range (unsigned, affine), or 0.
          std::vector<int32_t> zp(blocks, uns && zp_pick ? (hi ? lo_q : hi_q) : 0);
          QP qp;
          ASSERT_EQ(qnt_qparams_create_per_block(d, 1, B, blocks, sc.data(), uns ? zp.data() : nullptr, &qp.p),
                    QNT_OK)
              << qnt_last_error_message();
          const size_t nbytes = four ? static_cast<size_t>(N * K / 2) : static_cast<size_t>(N * K);
          const auto byte = static_cast<uint8_t>(four ? (q & 15) * 17 : q & 255);
          std::vector<uint8_t> raw(nbytes, byte);
          T wq;
          qnt_test::make_raw(wq, d, {N, K}, qp.p, raw.data(), raw.size());
          for (int64_t M : {int64_t{1}, int64_t{3}, int64_t{5}}) {
            std::vector<float> x(static_cast<size_t>(M * K));
            for (int64_t m = 0; m < M; ++m)
              for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(m * K + k)] = (m + k / B) % 2 ? -1.5f : 2.0f;
            T tx;
            make_f32(tx, {M, K}, x);
            for (int64_t mode : {QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK}) {
              qnt_status st_ref, st;
              std::vector<float> ref;
              {
                Ctx rc(QNT_ISA_REFERENCE, 1);
                ref = run_prepared(rc.c, wq.t, nullptr, mode, tx.t, M, N, &st_ref);
              }
              ASSERT_EQ(st_ref, QNT_OK) << qnt_last_error_message();
              for (qnt_isa isa : fast_isas())
                for (int threads = 1; threads <= 3; ++threads) {
                  Ctx fc(isa, threads);
                  const std::vector<float> got = run_prepared(fc.c, wq.t, nullptr, mode, tx.t, M, N, &st);
                  ASSERT_EQ(st, QNT_OK);
                  for (size_t i = 0; i < ref.size(); ++i)
                    ASSERT_TRUE(same(got[i], ref[i]))
                        << qnt_dtype_name(d) << " B " << B << " q " << q << " zp " << zp[0] << " M " << M
                        << " mode " << mode << " isa " << isa << " threads " << threads << " at " << i
                        << ": " << got[i] << " vs " << ref[i];
                }
            }
          }
        }
}

TEST(WeightOnly, LargeKAndN) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(14);
  const Case i4{QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 128}, false};
  const Case u4{QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true};
  const Case nf4{QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false};
  for (int64_t mode : {QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK}) {
    check_case(rng, i4, 1, 33, 4096, mode, false);
    check_case(rng, u4, 5, 9, 4096, mode, true);
    check_case(rng, nf4, 16, 4096, 33, mode, false);
    check_case(rng, u4, 1, 4096, 128, mode, false);
  }
  // Batches in the f32 mode: the AVX2 dot kernel takes K in slices of 512 and rows in groups
  // of 24 (in tiles of 3, then single rows), so these cross slice, group and tile ends, with a
  // K whose last slice ends inside a 16-element chunk.
  const Case i4b32{QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, true};
  for (int64_t M : {int64_t{26}, int64_t{50}}) {
    check_case(rng, i4b32, M, 7, 1000, QNT_WEIGHT_ONLY_F32, true);
    check_case(rng, u4, M, 6, 1537, QNT_WEIGHT_ONLY_F32, false);
    check_case(rng, nf4, M, 5, 1024, QNT_WEIGHT_ONLY_F32, false);
  }
  // Blocks that straddle the slices (48 elements; NF4 80), and one scale per row.
  check_case(rng, Case{QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, true}, 9, 5, 1100, QNT_WEIGHT_ONLY_F32, true);
  check_case(rng, Case{QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 80}, false}, 9, 5, 1100, QNT_WEIGHT_ONLY_F32, true);
  check_case(rng, Case{QNT_DTYPE_U4, {QNT_GRANULARITY_PER_AXIS, 0, 0}, true}, 10, 6, 1300, QNT_WEIGHT_ONLY_F32, false);
  // Blocks of three 128-element groups, which the 512-element slices cut inside (the AVX2
  // lane walk then starts in a block's second group), and blocks of one 16-element chunk; a
  // single row and a batch each.
  for (int64_t M : {int64_t{1}, int64_t{9}}) {
    check_case(rng, Case{QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 384}, true}, M, 5, 1700, QNT_WEIGHT_ONLY_F32, true);
    check_case(rng, Case{QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 384}, false}, M, 5, 1700, QNT_WEIGHT_ONLY_F32, false);
    check_case(rng, Case{QNT_DTYPE_I4, {QNT_GRANULARITY_PER_BLOCK, 1, 16}, false}, M, 5, 600, QNT_WEIGHT_ONLY_F32, true);
  }
  // Byte weights (W8A16) across slices: blocks of 48 and of 384 that the slices cut.
  check_case(rng, Case{QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 1, 48}, false}, 9, 5, 1100, QNT_WEIGHT_ONLY_F32, true);
  check_case(rng, Case{QNT_DTYPE_U8, {QNT_GRANULARITY_PER_BLOCK, 1, 384}, true}, 6, 5, 1300, QNT_WEIGHT_ONLY_F32, false);
  // K = 501: the last, partial chunk (31) ends a group that starts inside the second block of
  // 256, for a single row (two features at a time) and a few.
  for (int64_t M : {int64_t{1}, int64_t{3}}) {
    check_case(rng, Case{QNT_DTYPE_U4, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, true}, M, 6, 501, QNT_WEIGHT_ONLY_F32, false);
    check_case(rng, Case{QNT_DTYPE_NF4, {QNT_GRANULARITY_PER_BLOCK, 1, 256}, false}, M, 6, 501, QNT_WEIGHT_ONLY_F32, true);
  }
}

TEST(WeightOnly, Int8ModeRefusesWhatItDoesNotTake) {
  std::mt19937 rng(15);
  for (const Case &c : {Case{QNT_DTYPE_I16, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, false},
                        Case{QNT_DTYPE_BINARY, {QNT_GRANULARITY_PER_TENSOR, 0, 0}, false},
                        Case{QNT_DTYPE_I4, {QNT_GRANULARITY_PER_AXIS, 1, 0}, false},
                        Case{QNT_DTYPE_I8, {QNT_GRANULARITY_PER_BLOCK, 0, 2}, false}}) {
    T wq;
    make_weights(wq, rng, c.d, 4, 8, c.gr, c.affine);
    Desc d;
    ASSERT_EQ(qnt_op_desc_set(d.d, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_ACT), QNT_OK);
    Prep p;
    EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wq.t, nullptr, d.d, &p.p),
              QNT_ERR_UNSUPPORTED);
    EXPECT_EQ(p.p, nullptr);
    EXPECT_NE(std::string(qnt_last_error_message()).find("int8-activation"), std::string::npos);
    ASSERT_EQ(qnt_op_desc_set(d.d, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_BLOCK), QNT_OK);
    EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wq.t, nullptr, d.d, &p.p),
              QNT_ERR_UNSUPPORTED);
    EXPECT_EQ(p.p, nullptr);
    EXPECT_NE(std::string(qnt_last_error_message()).find("block-dot"), std::string::npos);
  }
  Desc d;
  EXPECT_EQ(qnt_op_desc_set(d.d, QNT_OP_WEIGHT_ONLY_MODE, 4), QNT_ERR_INVALID_ARGUMENT);
}

// The header's int8-mode rule, transcribed independently of kernels/ref.
// With `block`, the block-dot mode's rule: one exact sum per block, one float sum.
float header_int8(const float *x, const int32_t *v, const float *sw, int64_t K, int64_t B,
                  bool block = false) {
  float s[16] = {0};
  float one = 0.0f;
  for (int64_t j = 0; j * B < K; ++j) {
    const int64_t k0 = j * B, k1 = std::min(K, k0 + B);
    float a = 0.0f;
    bool bad = false;
    for (int64_t k = k0; k < k1; ++k) {
      bad = bad || !std::isfinite(x[k]);
      a = std::max(a, std::fabs(x[k]));
    }
    const float sx = bad ? std::numeric_limits<float>::quiet_NaN() : a / 127.0f;
    int64_t p[16] = {0};
    bool has[16] = {false};
    for (int64_t k = k0; k < k1; ++k) {
      int32_t q = 0;
      if (!bad && sx != 0.0f) {
        const float r = std::nearbyint(x[k] / sx);  // the default rounding: half to even
        q = static_cast<int32_t>(std::max(-127.0f, std::min(127.0f, r)));
      }
      p[(k / 4) % 16] += static_cast<int64_t>(q) * v[k];
      has[(k / 4) % 16] = true;
    }
    int64_t all = 0;
    for (int l = 0; l < 16; ++l) all += p[l];
    one = std::fma(static_cast<float>(static_cast<int32_t>(all)), sx * sw[j], one);
    for (int l = 0; l < 16; ++l)
      if (has[l]) s[l] = std::fma(static_cast<float>(static_cast<int32_t>(p[l])), sx * sw[j], s[l]);
  }
  if (block) return one;
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) s[i] += s[i + w];
  return s[0];
}

TEST(WeightOnly, Int8ModeIsTheHeadersRule) {
  std::mt19937 rng(16);
  float cb[16];
  ASSERT_EQ(qnt_nf4_codebook(cb, 16), QNT_OK);
  for (int64_t mode : {QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK})
  for (qnt_dtype d : {QNT_DTYPE_U4, QNT_DTYPE_NF4, QNT_DTYPE_I8}) {
    const int64_t N = 3, K = 100, B = 32, M = 4;
    T wq;
    const Gran gr{QNT_GRANULARITY_PER_BLOCK, 1, B};
    make_weights(wq, rng, d, N, K, gr, d == QNT_DTYPE_U4);
    const std::vector<float> x = make_x(rng, M, K, true);
    T tx;
    make_f32(tx, {M, K}, x);
    qnt_status st;
    for (qnt_isa isa : {QNT_ISA_REFERENCE, QNT_ISA_NATIVE}) {
      Ctx c(isa, 2);
      const std::vector<float> y = run_prepared(c.c, wq.t, nullptr, mode, tx.t, M, N, &st);
      ASSERT_EQ(st, QNT_OK);
      // The weights' integers and scales through the public ABI.
      QP qp;
      ASSERT_EQ(qnt_tensor_qparams(wq.t, &qp.p), QNT_OK);
      std::vector<float> scales(static_cast<size_t>(N * 4));
      std::vector<int32_t> zps(static_cast<size_t>(N * 4));
      ASSERT_EQ(qnt_qparams_scales(qp.p, scales.data(), scales.size()), QNT_OK);
      ASSERT_EQ(qnt_qparams_zero_points(qp.p, zps.data(), zps.size()), QNT_OK);
      const std::vector<uint8_t> raw = qnt_test::bytes_of(wq.t);
      std::vector<int32_t> codes(static_cast<size_t>(N * K));
      for (size_t i = 0; i < codes.size(); ++i)
        codes[i] = d == QNT_DTYPE_I8 ? static_cast<int8_t>(raw[i]) : (raw[i / 2] >> (4 * (i % 2))) & 15;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          std::vector<int32_t> v(static_cast<size_t>(K));
          std::vector<float> sw(4);
          for (int64_t k = 0; k < K; ++k) {
            const int32_t q = codes[static_cast<size_t>(n * K + k)];
            const size_t g = static_cast<size_t>(n * 4 + k / B);
            v[static_cast<size_t>(k)] =
                d == QNT_DTYPE_NF4 ? static_cast<int32_t>(std::nearbyint(127.0f * cb[q])) : q - zps[g];
          }
          for (int64_t j = 0; j < 4; ++j) {
            const float s = scales[static_cast<size_t>(n * 4 + j)];
            sw[static_cast<size_t>(j)] = d == QNT_DTYPE_NF4 ? s / 127.0f : s;
          }
          const float want = header_int8(x.data() + m * K, v.data(), sw.data(), K, B,
                                         mode == QNT_WEIGHT_ONLY_INT8_BLOCK);
          ASSERT_TRUE(same(y[static_cast<size_t>(m * N + n)], want))
              << qnt_dtype_name(d) << " mode " << mode << " isa " << isa << " " << m << "," << n << ": "
              << y[static_cast<size_t>(m * N + n)] << " vs " << want;
        }
    }
  }
}

TEST(WeightOnly, NonFiniteActivations) {
  // Documented: a NaN in x[m] gives NaN in every y[m, n] (both modes); an infinity gives NaN in
  // the int8 mode, and +-inf or NaN in the f32 mode by float32 arithmetic.
  std::mt19937 rng(17);
  const int64_t N = 5, K = 64, M = 3;
  T wq;
  make_weights(wq, rng, QNT_DTYPE_I4, N, K, {QNT_GRANULARITY_PER_BLOCK, 1, 32}, false);
  std::vector<float> x = make_x(rng, M, K, false);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[K + 40] = std::numeric_limits<float>::infinity();
  T tx;
  make_f32(tx, {M, K}, x);
  for (int64_t mode : {QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK}) {
    qnt_status st;
    const std::vector<float> y = run_prepared(nullptr, wq.t, nullptr, mode, tx.t, M, N, &st);
    ASSERT_EQ(st, QNT_OK);
    for (int64_t n = 0; n < N; ++n) {
      EXPECT_TRUE(std::isnan(y[static_cast<size_t>(n)]));
      const float inf_row = y[static_cast<size_t>(N + n)];
      if (mode != QNT_WEIGHT_ONLY_F32) {
        EXPECT_TRUE(std::isnan(inf_row));
      } else {
        EXPECT_FALSE(std::isfinite(inf_row));
      }
      EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(2 * N + n)]));
    }
  }
}

TEST(WeightOnly, Int8ModeAccuracyAgainstF32Mode) {
  // W4A8 is an approximation of the f32 mode: on normal data its outputs' SQNR must be high.
  std::mt19937 rng(18);
  const int64_t N = 64, K = 1024, M = 4;
  for (qnt_dtype d : {QNT_DTYPE_I4, QNT_DTYPE_NF4}) {
    T wq;
    make_weights(wq, rng, d, N, K, {QNT_GRANULARITY_PER_BLOCK, 1, 64}, false);
    const std::vector<float> x = make_x(rng, M, K, false);
    T tx;
    make_f32(tx, {M, K}, x);
    qnt_status st;
    const auto yf = run_prepared(nullptr, wq.t, nullptr, QNT_WEIGHT_ONLY_F32, tx.t, M, N, &st);
    for (int64_t mode : {QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK}) {
      const auto yi = run_prepared(nullptr, wq.t, nullptr, mode, tx.t, M, N, &st);
      ASSERT_EQ(st, QNT_OK);
      double sig = 0, noise = 0;
      for (size_t i = 0; i < yf.size(); ++i) {
        sig += double(yf[i]) * yf[i];
        noise += (double(yf[i]) - yi[i]) * (double(yf[i]) - yi[i]);
      }
      const double sqnr = 10 * std::log10(sig / noise);
      EXPECT_GT(sqnr, d == QNT_DTYPE_NF4 ? 25.0 : 33.0) << qnt_dtype_name(d) << " mode " << mode;
    }
  }
}

}  // namespace

// Two different NaNs in different lanes of x (found by fuzzing: the reference gave 0xffffffff
// and the AVX2 / AVX-512 kernels 0x7fc00001, as each order of operations passed on another
// input NaN): every kernel, in both modes, one-shot and prepared, outputs 0x7FC00000.
TEST(WeightOnly, EveryNaNIsTheCanonicalOne) {
  std::mt19937 rng(5);
  const int64_t M = 3, N = 9, K = 256;
  T wq;
  make_weights(wq, rng, QNT_DTYPE_I4, N, K, Gran{QNT_GRANULARITY_PER_BLOCK, 1, 32}, false);
  std::vector<float> x = make_x(rng, M, K, false);
  auto nan_of = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  // Row 0: two NaNs of different payloads and signs in different lanes; row 2: one, negative.
  x[3] = nan_of(0x7FC00001u);
  x[20] = nan_of(0xFFFFFFFFu);
  x[2 * K + 100] = nan_of(0xFFC00000u);
  std::vector<float> bias(static_cast<size_t>(N), 0.5f);
  bias[4] = nan_of(0x7FC12345u);  // a NaN bias: column 4 of every row
  T tx, tb;
  make_f32(tx, {M, K}, x);
  make_f32(tb, {N}, bias);
  auto check = [&](const std::vector<float> &y, const std::string &what) {
    ASSERT_EQ(y.size(), static_cast<size_t>(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        uint32_t bits;
        std::memcpy(&bits, &y[static_cast<size_t>(m * N + n)], 4);
        if (m != 1 || n == 4)
          EXPECT_EQ(bits, 0x7FC00000u) << what << " y[" << m << ", " << n << "]";
        else
          EXPECT_FALSE(std::isnan(y[static_cast<size_t>(m * N + n)])) << what;
      }
  };
  std::vector<qnt_isa> isas = fast_isas();
  isas.insert(isas.begin(), QNT_ISA_REFERENCE);
  for (qnt_isa isa : isas)
    for (int threads = 1; threads <= 3; ++threads) {
      Ctx c(isa, threads);
      const std::string what = std::string(qnt_isa_name(isa)) + " threads " +
                               std::to_string(threads);
      for (int64_t mode : {int64_t{QNT_WEIGHT_ONLY_F32}, int64_t{QNT_WEIGHT_ONLY_INT8_ACT},
                           int64_t{QNT_WEIGHT_ONLY_INT8_BLOCK}}) {
        qnt_status st;
        check(run_prepared(c.c, wq.t, tb.t, mode, tx.t, M, N, &st),
              what + " prepared mode " + std::to_string(mode));
        ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
      }
      T y;
      make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
      ASSERT_EQ(qnt_linear_weight_only(c.c, tx.t, wq.t, tb.t, y.t), QNT_OK);
      check(floats_of(y.t), what + " one-shot");
    }
}
