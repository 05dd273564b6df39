// The weight-only layer's per-token mode (QNT_WEIGHT_ONLY_INT8_TOKEN: BitNet b1.58's ternary
// linear layer, and binary weights): every kernel set this machine runs, and the plain C++
// kernel, give the bits of the rule as qnt.h states it, computed here on its own, on random and
// edge inputs (ties, zero rows, NaN and infinite rows, K around the 128-element groups, f16 and
// bf16 activations), on 1 to 3 threads; and the mode's refusals.
#include "helpers.hpp"

#include "capi/boundary.hpp"
#include "core/context.hpp"
#include "kernels/registry.hpp"
#include "kernels/wo/wo.hpp"
#include "ops/prepared.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {
using namespace qnt_test;

using qnt_test::Prep;

float rne(float v) { return std::nearbyint(v); }  // the default rounding mode: ties to even

// The rule of qnt.h, written out: y[m][n] for values v[n][k] in {-1, 0, 1}.
std::vector<float> expected(const std::vector<float> &x, size_t rows, const std::vector<int> &v, size_t N, size_t K,
                            const std::vector<float> &sw, const std::vector<float> *bias) {
  std::vector<float> y(rows * N);
  for (size_t m = 0; m < rows; ++m) {
    float a = 0;
    bool bad = false;
    for (size_t k = 0; k < K; ++k) {
      const float e = x[m * K + k];
      if (!std::isfinite(e)) bad = true;
      a = std::max(a, std::fabs(e));
    }
    std::vector<int> q(K, 0);
    if (!bad && a > 0)
      for (size_t k = 0; k < K; ++k) {
        const volatile float p = x[m * K + k] * 127.0f;  // two roundings, as the rule says
        const float t = p / a;
        q[k] = static_cast<int>(std::min(127.0f, std::max(-127.0f, rne(t))));
      }
    const float sx = a / 127.0f;
    for (size_t n = 0; n < N; ++n) {
      int64_t acc = 0;
      for (size_t k = 0; k < K; ++k) acc += static_cast<int64_t>(q[k]) * v[n * K + k];
      const volatile float s = sx * sw[n];
      float r = static_cast<float>(acc) * s;
      if (bias != nullptr) r = r + (*bias)[n];
      if (bad) r = std::nanf("");
      uint32_t b = 0;
      std::memcpy(&b, &r, 4);
      if (std::isnan(r)) r = std::nanf("");  // canonical
      y[m * N + n] = r;
    }
  }
  return y;
}

// Packs values into qnt's ternary (2-bit two's complement) or binary (bit 1: +1) storage.
std::vector<uint8_t> pack(const std::vector<int> &v, bool binary) {
  const int bits = binary ? 1 : 2;
  std::vector<uint8_t> out((v.size() * static_cast<size_t>(bits) + 7) / 8, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    const unsigned c = binary ? (v[i] > 0 ? 1u : 0u) : static_cast<unsigned>(v[i]) & 3u;
    out[i * static_cast<size_t>(bits) / 8] |= static_cast<uint8_t>(c << ((i * static_cast<size_t>(bits)) % 8));
  }
  return out;
}

void expect_same_bits(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a = 0, b = 0;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    ASSERT_EQ(a, b) << what << " element " << i << ": " << got[i] << " vs " << want[i];
  }
}

struct Case {
  size_t rows, N, K;
  bool binary, per_axis, bias;
  bool extreme = false;  // every weight +1 and x[k] = 1: the largest 16-bit sums a kernel forms
};

TEST(WeightOnlyToken, EveryKernelSetGivesTheRulesBits) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> tern(-1, 1), coin(0, 1);
  const std::vector<Case> cases = {
      {1, 1, 1, false, false, false},    {1, 5, 127, false, true, true},    {3, 9, 128, false, false, true},
      {2, 70, 129, false, true, false},  {4, 13, 300, true, false, true},   {1, 130, 1000, false, true, true},
      {5, 3, 4096, true, true, false},   {1, 64, 2048 + 33, false, true, true}, {2, 4, 0, false, false, true},
      // batches: blocks of 4, 2 and 1 rows, and more rows than one block of the driver (32)
      {15, 37, 700, false, true, true},  {40, 66, 2100, true, false, true}, {33, 5, 129, false, true, false},
      {11, 9, 4100, false, false, false, true},  {1, 6, 2048, false, true, false, true},
  };
  const auto isas = runnable_isas({QNT_ISA_REFERENCE, QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI,
                                   QNT_ISA_NEON, QNT_ISA_NEON_DOTPROD});
  for (const Case &c : cases) {
    std::vector<int> v(c.N * c.K);
    for (int &e : v) e = c.extreme ? 1 : c.binary ? 2 * coin(rng) - 1 : tern(rng);
    std::vector<float> sw(c.N);
    for (float &s : sw) s = std::fabs(nd(rng)) + 0.01f;
    if (!c.per_axis) std::fill(sw.begin(), sw.end(), sw[0]);
    std::vector<float> bias(c.N);
    for (float &b : bias) b = nd(rng);
    std::vector<float> x(c.rows * c.K);
    for (float &e : x) e = c.extreme ? 1.0f : nd(rng) * 3.0f;
    if (c.K >= 4 && c.rows >= 2 && !c.extreme) {
      for (size_t k = 0; k < c.K; ++k) x[c.K + k] = 0.0f;  // a zero row
      x[0] = 127.0f;                                       // exact ties: x * 127 / a = k + 0.5
      x[1] = 0.5f;
      x[2] = -1.5f;
    }
    if (c.rows >= 3 && c.K > 0 && !c.extreme) x[2 * c.K + c.K / 2] = std::nanf("");
    if (c.rows >= 4 && c.K > 0 && !c.extreme) x[3 * c.K] = -INFINITY;
    if (c.rows >= 5 && c.K >= 3 && !c.extreme) {  // x * 127 overflows to +-inf: t saturates
      x[4 * c.K] = 3e38f;
      x[4 * c.K + 1] = -3.1e38f;
      x[4 * c.K + 2] = 2.5e36f;
    }
    QP qp;
    if (c.per_axis)
      ASSERT_EQ(qnt_qparams_create_per_axis(c.binary ? QNT_DTYPE_BINARY : QNT_DTYPE_TERNARY, 0, c.N, sw.data(),
                                            nullptr, &qp.p),
                QNT_OK);
    else
      per_tensor(qp, c.binary ? QNT_DTYPE_BINARY : QNT_DTYPE_TERNARY, sw[0], 0);
    const std::vector<uint8_t> packed = pack(v, c.binary);
    T w, b, xt, y;
    make_raw(w, c.binary ? QNT_DTYPE_BINARY : QNT_DTYPE_TERNARY,
             {static_cast<int64_t>(c.N), static_cast<int64_t>(c.K)}, qp.p, packed.data(), packed.size());
    make_f32(b, {static_cast<int64_t>(c.N)}, bias);
    make_f32(xt, {static_cast<int64_t>(c.rows), static_cast<int64_t>(c.K)}, x);
    make_q(y, QNT_DTYPE_F32, {static_cast<int64_t>(c.rows), static_cast<int64_t>(c.N)}, nullptr);
    const std::vector<float> want = expected(x, c.rows, v, c.N, c.K, sw, c.bias ? &bias : nullptr);
    for (qnt_isa isa : isas)
      for (int threads = 1; threads <= 3; ++threads) {
        Ctx ctx(isa, threads);
        qnt_op_desc *d = nullptr;
        ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
        ASSERT_EQ(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_TOKEN), QNT_OK);
        Prep p;
        const qnt_status st = qnt_prepared_create_linear_weight_only(ctx.c, w.t, c.bias ? b.t : nullptr, d, &p.p);
        qnt_op_desc_destroy(d);
        ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
        ASSERT_EQ(qnt_prepared_run(ctx.c, p.p, xt.t, y.t), QNT_OK) << qnt_last_error_message();
        expect_same_bits(floats_of(y.t), want,
                         "isa " + std::to_string(isa) + " threads " + std::to_string(threads) + " K " +
                             std::to_string(c.K) + " N " + std::to_string(c.N));
      }
    // the plain C++ kernel and every compiled table's that this machine runs, each directly
    uint64_t features = 0;
    {
      Ctx probe(QNT_ISA_NATIVE, 1);
      ASSERT_EQ(qnt_context_cpu_features(probe.c, &features), QNT_OK);
    }
    for (size_t i = 0; i < qnt::kern::compiled_table_count(); ++i) {
      const qnt::kern::KernelTable &tab = qnt::kern::compiled_table(i);
      if (tab.wo == nullptr || (qnt::kern::features_required(tab.isa) & ~features) != 0) continue;
      for (const qnt::kern::WoKernels *wo : {tab.wo, &qnt::kern::kGenericWo}) {
        qnt::Context ctx;
        ctx.requested_threads = 1 + static_cast<int>(c.N % 3);
        T y2;
        make_q(y2, QNT_DTYPE_F32, {static_cast<int64_t>(c.rows), static_cast<int64_t>(c.N)}, nullptr);
        auto prepared = qnt::ops::prepare_linear_weight_only_with(
            ctx, qnt::capi::tensor_of(w.t, "w"), c.bias ? &qnt::capi::tensor_of(b.t, "b") : nullptr,
            QNT_WEIGHT_ONLY_INT8_TOKEN, wo);
        prepared->run(ctx, qnt::capi::tensor_of(xt.t, "x"), qnt::capi::tensor_of(y2.t, "y"));
        expect_same_bits(floats_of(y2.t), want, std::string("table ") + wo->name);
      }
    }
  }
}

TEST(WeightOnlyToken, HalfActivationsAndRefusals) {
  // f32 and f16 activations (widened exactly; the result rounded to f16): x = 1, -2, 0.5, 0 gives
  // a = 2, qx = 64 (63.5, a tie, to even), -127, 32 (31.75), 0; rows of w: 1 -1 0 1 and 1 1 -1 0.
  const std::vector<int> v = {1, -1, 0, 1, 1, 1, -1, 0};
  QP qp;
  per_tensor(qp, QNT_DTYPE_TERNARY, 0.5f, 0);
  const std::vector<uint8_t> packed = pack(v, false);
  T w;
  make_raw(w, QNT_DTYPE_TERNARY, {2, 4}, qp.p, packed.data(), packed.size());
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  ASSERT_EQ(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_TOKEN), QNT_OK);
  Prep p;
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(nullptr, w.t, nullptr, d, &p.p), QNT_OK);
  T x, y;
  make_f32(x, {1, 4}, {1.0f, -2.0f, 0.5f, 0.0f});
  make_q(y, QNT_DTYPE_F32, {1, 2}, nullptr);
  ASSERT_EQ(qnt_prepared_run(nullptr, p.p, x.t, y.t), QNT_OK) << qnt_last_error_message();
  const float s = (2.0f / 127.0f) * 0.5f;
  expect_same_bits(floats_of(y.t), {191.0f * s, (64.0f - 127.0f - 32.0f) * s}, "worked example");
  T xh, yh;
  const int64_t xs[2] = {1, 4}, ys[2] = {1, 2};
  const uint16_t h[4] = {0x3C00, 0xC000, 0x3800, 0x0000};  // 1, -2, 0.5, 0 in f16
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F16, xs, 2, nullptr, h, 8, &xh.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F16, ys, 2, nullptr, &yh.t), QNT_OK);
  ASSERT_EQ(qnt_prepared_run(nullptr, p.p, xh.t, yh.t), QNT_OK) << qnt_last_error_message();
  uint16_t out[2] = {};
  ASSERT_EQ(qnt_tensor_copy_to(yh.t, out, 4), QNT_OK);
  EXPECT_EQ(out[0], 0x3E04);  // 191 / 127 rounded to f16 (NumPy: float16(191 / 127))
  EXPECT_EQ(out[1], 0xB9FC);  // -95 / 127
  // refusals: i4 weights, per-block qparams, a ternary code 0b10
  T w4;
  QP q4;
  per_tensor(q4, QNT_DTYPE_I4, 1.0f, 0);
  make_q(w4, QNT_DTYPE_I4, {2, 4}, q4.p);
  Prep bad;
  EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, w4.t, nullptr, d, &bad.p), QNT_ERR_UNSUPPORTED);
  // per block along K: taken when every row's blocks share one scale (GGUF's TQ2_0 of BitNet),
  // then the same as per output feature; refused when a row's blocks differ
  QP qb, qa, qd;
  const float same[4] = {0.5f, 0.5f, 0.25f, 0.25f}, differ[4] = {0.5f, 0.5f, 0.25f, 0.5f}, rows[2] = {0.5f, 0.25f};
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_TERNARY, 1, 2, 4, same, nullptr, &qb.p), QNT_OK);
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_TERNARY, 0, 2, rows, nullptr, &qa.p), QNT_OK);
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_TERNARY, 1, 2, 4, differ, nullptr, &qd.p), QNT_OK);
  T wb, wa, wd;
  make_raw(wb, QNT_DTYPE_TERNARY, {2, 4}, qb.p, packed.data(), packed.size());
  make_raw(wa, QNT_DTYPE_TERNARY, {2, 4}, qa.p, packed.data(), packed.size());
  make_raw(wd, QNT_DTYPE_TERNARY, {2, 4}, qd.p, packed.data(), packed.size());
  Prep pb, pa;
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wb.t, nullptr, d, &pb.p), QNT_OK) << qnt_last_error_message();
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wa.t, nullptr, d, &pa.p), QNT_OK);
  T yb, ya;
  make_q(yb, QNT_DTYPE_F32, {1, 2}, nullptr);
  make_q(ya, QNT_DTYPE_F32, {1, 2}, nullptr);
  ASSERT_EQ(qnt_prepared_run(nullptr, pb.p, x.t, yb.t), QNT_OK);
  ASSERT_EQ(qnt_prepared_run(nullptr, pa.p, x.t, ya.t), QNT_OK);
  expect_same_bits(floats_of(yb.t), floats_of(ya.t), "per block with one scale a row");
  EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wd.t, nullptr, d, &bad.p), QNT_ERR_UNSUPPORTED);
  const uint8_t code10[2] = {0x02, 0x00};  // element 0 holds 0b10
  T w10;
  make_raw(w10, QNT_DTYPE_TERNARY, {2, 4}, qp.p, code10, 2);
  EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, w10.t, nullptr, d, &bad.p), QNT_ERR_INVALID_ARGUMENT);
  // and the one-shot call stays the f32 mode; the mode's value range ends at the block-dot mode
  EXPECT_EQ(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_BLOCK + 1), QNT_ERR_INVALID_ARGUMENT);
  qnt_op_desc_destroy(d);
}

}  // namespace
