// Prepared operators through the public ABI: the same bits as the one-shot calls (which are
// checked against naive references in test_ops.cpp), under every kernel cap this machine runs
// and with 1, 2 and 3 threads; independent of the tensors they were made from; immutable and
// safe to run from several threads at once; with clear errors.
#include "helpers.hpp"

#include <qnt/qnt.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

namespace {

using qnt_test::bytes_of;
using qnt_test::make_f32;
using qnt_test::make_q;
using qnt_test::make_raw;
using qnt_test::per_tensor;
using qnt_test::QP;
using qnt_test::T;

struct Ctx {
  qnt_context *c = nullptr;
  Ctx() { EXPECT_EQ(qnt_context_create(&c), QNT_OK); }
  ~Ctx() { qnt_context_destroy(c); }
};
using qnt_test::Desc;
using qnt_test::Prep;

// Every cap this machine runs, the reference first; and the thread counts to try.
std::vector<qnt_isa> caps() {
  std::vector<qnt_isa> v{QNT_ISA_REFERENCE};
  Ctx c;
  qnt_isa best = QNT_ISA_REFERENCE;
  EXPECT_EQ(qnt_context_isa(c.c, &best), QNT_OK);
#if defined(__x86_64__)
  for (qnt_isa i : {QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI})
    if (i <= best) v.push_back(i);
#elif defined(__aarch64__)
  for (qnt_isa i : {QNT_ISA_NEON, QNT_ISA_NEON_DOTPROD})
    if (i <= best) v.push_back(i);
#endif
  v.push_back(QNT_ISA_NATIVE);
  return v;
}

std::vector<int8_t> random_bytes(std::mt19937 &rng, size_t n) {
  std::uniform_int_distribution<int> d(-128, 127);
  std::vector<int8_t> v(n);
  for (auto &x : v) x = static_cast<int8_t>(d(rng));
  // edge values at the front: the extremes and zero
  const int8_t edges[] = {-128, 127, 0, -1, 1};
  for (size_t i = 0; i < n && i < 5; ++i) v[i] = edges[i];
  return v;
}

// Runs `make` and `run` under every cap and thread count; every output must equal the first.
void for_every_context(const std::function<std::vector<uint8_t>(qnt_context *)> &compute) {
  std::vector<uint8_t> first;
  bool have = false;
  for (qnt_isa cap : caps()) {
    for (int threads : {1, 2, 3}) {
      Ctx ctx;
      ASSERT_EQ(qnt_context_set_max_isa(ctx.c, cap), QNT_OK) << qnt_last_error_message();
      ASSERT_EQ(qnt_context_set_num_threads(ctx.c, threads), QNT_OK);
      const std::vector<uint8_t> got = compute(ctx.c);
      if (!have) {
        first = got;
        have = true;
      } else {
        ASSERT_EQ(got, first) << "cap " << qnt_isa_name(cap) << ", " << threads << " threads";
      }
    }
  }
}

TEST(Prepared, MatmulEqualsOneShot) {
  std::mt19937 rng(1);
  struct Case {
    std::vector<int64_t> a, b;
    qnt_dtype ad, bd, yd;
    bool per_column, bias;
  };
  const Case cases[] = {
      {{1, 1}, {1, 1}, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_I32, false, false},
      {{7, 33}, {33, 17}, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_U8, true, true},
      {{2, 5, 64}, {64, 15}, QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I8, false, false},
      {{3, 4, 16}, {3, 16, 9}, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_F32, true, true},
      {{4, 0}, {0, 5}, QNT_DTYPE_U8, QNT_DTYPE_I8, QNT_DTYPE_I32, false, true},  // K = 0
  };
  for (const Case &c : cases) {
    const int64_t N = c.b.back();
    std::vector<int64_t> ys(c.a.begin(), c.a.end() - 1);
    if (c.b.size() > c.a.size()) ys.insert(ys.begin(), c.b.begin(), c.b.end() - 2);
    ys.push_back(N);
    size_t na = 1, nb = 1;
    for (int64_t d : c.a) na *= static_cast<size_t>(d);
    for (int64_t d : c.b) nb *= static_cast<size_t>(d);
    const auto av = random_bytes(rng, na), bv = random_bytes(rng, nb);
    QP qa, qb, qy;
    per_tensor(qa, c.ad, 0.02f, c.ad == QNT_DTYPE_U8 ? 131 : -3);
    std::vector<float> sb(static_cast<size_t>(N));
    std::vector<int32_t> zb(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      sb[static_cast<size_t>(n)] = 0.001f * static_cast<float>(n + 1);
      zb[static_cast<size_t>(n)] = c.bd == QNT_DTYPE_U8 ? 100 + static_cast<int32_t>(n) : -2;
    }
    if (c.per_column)
      ASSERT_EQ(qnt_qparams_create_per_axis(c.bd, -1, static_cast<size_t>(N), sb.data(), zb.data(),
                                            &qb.p),
                QNT_OK);
    else
      per_tensor(qb, c.bd, 0.003f, zb[0]);
    if (c.yd == QNT_DTYPE_U8 || c.yd == QNT_DTYPE_I8)
      per_tensor(qy, c.yd, 0.05f, c.yd == QNT_DTYPE_U8 ? 120 : 5);
    T ta, tb, tbias;
    make_raw(ta, c.ad, c.a, qa.p, av.data(), av.size());
    make_raw(tb, c.bd, c.b, qb.p, bv.data(), bv.size());
    if (c.bias) {
      std::vector<int32_t> bias(static_cast<size_t>(N));
      for (int64_t n = 0; n < N; ++n)
        bias[static_cast<size_t>(n)] = static_cast<int32_t>(n * 977 - 4000);
      make_raw(tbias, QNT_DTYPE_I32, {N}, nullptr, bias.data(), bias.size() * 4);
    }
    T once;
    make_q(once, c.yd, ys, qy.p);
    ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, tbias.t, once.t), QNT_OK)
        << qnt_last_error_message();
    const std::vector<uint8_t> want = bytes_of(once.t);
    for_every_context([&](qnt_context *ctx) {
      Prep p;
      EXPECT_EQ(qnt_prepared_create_matmul(ctx, tb.t, tbias.t, nullptr, &p.p), QNT_OK)
          << qnt_last_error_message();
      T y;
      make_q(y, c.yd, ys, qy.p);
      EXPECT_EQ(qnt_prepared_run(ctx, p.p, ta.t, y.t), QNT_OK) << qnt_last_error_message();
      EXPECT_EQ(bytes_of(y.t), want);
      return bytes_of(y.t);
    });
  }
}

TEST(Prepared, LinearLayersEqualOneShot) {
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const auto &[M, K, N] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 17, 5}, {8, 64, 33}, {2, 255, 16}}) {
    std::vector<float> x(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K)),
        b(static_cast<size_t>(N));
    for (float &v : x) v = nd(rng);
    for (float &v : w) v = 0.1f * nd(rng);
    for (float &v : b) v = nd(rng);
    T tx, tw, tb;
    make_f32(tx, {M, K}, x);
    make_f32(tw, {N, K}, w);
    make_f32(tb, {N}, b);
    // i8 per channel for the dynamic layer, int4 blocks of 16 for the weight-only one
    qnt_qparams *q8 = nullptr, *q4 = nullptr;
    ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_AXIS, 0, 0, &q8),
              QNT_OK);
    ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, QNT_DTYPE_U4, QNT_SCHEME_AFFINE,
                                   QNT_GRANULARITY_PER_BLOCK, 1, 16, &q4),
              QNT_OK);
    T w8, w4;
    make_q(w8, QNT_DTYPE_I8, {N, K}, q8);
    make_q(w4, QNT_DTYPE_U4, {N, K}, q4);
    qnt_qparams_destroy(q8);
    qnt_qparams_destroy(q4);
    ASSERT_EQ(qnt_quantize(nullptr, tw.t, w8.t), QNT_OK);
    ASSERT_EQ(qnt_quantize(nullptr, tw.t, w4.t), QNT_OK);
    for (qnt_act_quant mode : {QNT_ACT_PER_TENSOR, QNT_ACT_PER_ROW}) {
      Desc d;
      ASSERT_EQ(qnt_op_desc_set(d.d, QNT_OP_ACT_QUANT, mode), QNT_OK);
      T once;
      make_q(once, QNT_DTYPE_F32, {M, N}, nullptr);
      ASSERT_EQ(qnt_linear_dynamic(nullptr, tx.t, w8.t, tb.t, d.d, once.t), QNT_OK);
      const auto want = bytes_of(once.t);
      for_every_context([&](qnt_context *ctx) {
        Prep p;
        EXPECT_EQ(qnt_prepared_create_linear_dynamic(ctx, w8.t, tb.t, d.d, &p.p), QNT_OK);
        T y;
        make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
        EXPECT_EQ(qnt_prepared_run(ctx, p.p, tx.t, y.t), QNT_OK) << qnt_last_error_message();
        EXPECT_EQ(bytes_of(y.t), want);
        return bytes_of(y.t);
      });
    }
    T once;
    make_q(once, QNT_DTYPE_F32, {M, N}, nullptr);
    ASSERT_EQ(qnt_linear_weight_only(nullptr, tx.t, w4.t, tb.t, once.t), QNT_OK);
    const auto want = bytes_of(once.t);
    for_every_context([&](qnt_context *ctx) {
      Prep p;
      EXPECT_EQ(qnt_prepared_create_linear_weight_only(ctx, w4.t, tb.t, nullptr, &p.p), QNT_OK);
      T y;
      make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
      EXPECT_EQ(qnt_prepared_run(ctx, p.p, tx.t, y.t), QNT_OK) << qnt_last_error_message();
      EXPECT_EQ(bytes_of(y.t), want);
      return bytes_of(y.t);
    });
  }
}

// The static linear layer against the documented arithmetic, computed here from scratch.
TEST(Prepared, StaticLinearFollowsTheDocumentedRule) {
  std::mt19937 rng(3);
  const int64_t M = 5, K = 37, N = 11;
  const auto xv = random_bytes(rng, static_cast<size_t>(M * K));
  const auto wv = random_bytes(rng, static_cast<size_t>(N * K));
  std::vector<float> sw(N), bias_f(N);
  std::vector<int32_t> zw(N, 0), bias_i(N);
  for (int64_t n = 0; n < N; ++n) {
    sw[n] = 0.002f + 0.0007f * static_cast<float>(n);
    bias_f[n] = 0.37f * static_cast<float>(n) - 1.5f;
    bias_i[n] = static_cast<int32_t>(n * 131 - 700);
  }
  const float sx = 0.03f, sy = 0.04f;
  const int32_t zx = 140, zy = 117;
  QP qx, qy, qw;
  per_tensor(qx, QNT_DTYPE_U8, sx, zx);
  per_tensor(qy, QNT_DTYPE_U8, sy, zy);
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, N, sw.data(), zw.data(), &qw.p), QNT_OK);
  T tx, tw, tbf, tbi;
  make_raw(tx, QNT_DTYPE_U8, {M, K}, qx.p, xv.data(), xv.size());
  make_raw(tw, QNT_DTYPE_I8, {N, K}, qw.p, wv.data(), wv.size());
  make_raw(tbf, QNT_DTYPE_F32, {N}, nullptr, bias_f.data(), 4 * N);
  make_raw(tbi, QNT_DTYPE_I32, {N}, nullptr, bias_i.data(), 4 * N);
  auto acc = [&](int64_t m, int64_t n) {
    int64_t a = 0;
    for (int64_t k = 0; k < K; ++k)
      a += (static_cast<uint8_t>(xv[m * K + k]) - zx) * static_cast<int64_t>(wv[n * K + k]);
    return static_cast<int32_t>(a);
  };
  auto quant = [](float v, float s, int32_t z) {
    const float q = std::nearbyint(v / s);  // default rounding mode: ties to even
    return static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, q + static_cast<float>(z))));
  };
  for (int which = 0; which < 3; ++which) {  // f32 bias, i32 bias, f32 output
    Prep p;
    const qnt_tensor *bias = which == 0 ? tbf.t : which == 1 ? tbi.t : tbf.t;
    ASSERT_EQ(qnt_prepared_create_linear_static(nullptr, tw.t, bias, qx.p,
                                                which == 2 ? nullptr : qy.p, nullptr, &p.p),
              QNT_OK)
        << qnt_last_error_message();
    T y;
    make_q(y, which == 2 ? QNT_DTYPE_F32 : QNT_DTYPE_U8, {M, N}, which == 2 ? nullptr : qy.p);
    ASSERT_EQ(qnt_prepared_run(nullptr, p.p, tx.t, y.t), QNT_OK) << qnt_last_error_message();
    const auto got = bytes_of(y.t);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        const int32_t a = acc(m, n);
        const float scale = sx * sw[n];
        if (which == 0) {
          const float v = static_cast<float>(a) * scale + bias_f[n];
          EXPECT_EQ(got[m * N + n], quant(v, sy, zy)) << m << "," << n;
        } else if (which == 1) {
          const float mult = scale / sy;
          const float v = static_cast<float>(a + bias_i[n]) * mult;
          const float q = std::nearbyint(v) + static_cast<float>(zy);
          EXPECT_EQ(got[m * N + n], static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, q))));
        } else {
          float f;
          std::memcpy(&f, got.data() + 4 * (m * N + n), 4);
          EXPECT_EQ(f, static_cast<float>(a) * scale + bias_f[n]);
        }
      }
  }
  // Run-time checks against what was prepared.
  Prep p;
  ASSERT_EQ(qnt_prepared_create_linear_static(nullptr, tw.t, tbf.t, qx.p, qy.p, nullptr, &p.p),
            QNT_OK);
  QP other;
  per_tensor(other, QNT_DTYPE_U8, 0.5f, 3);
  T x2, y2, yf;
  make_raw(x2, QNT_DTYPE_U8, {M, K}, other.p, xv.data(), xv.size());
  make_q(y2, QNT_DTYPE_U8, {M, N}, other.p);
  make_q(yf, QNT_DTYPE_F32, {M, N}, nullptr);
  T y;
  make_q(y, QNT_DTYPE_U8, {M, N}, qy.p);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, x2.t, y.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, tx.t, y2.t), QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, tx.t, yf.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, tw.t, y.t), QNT_ERR_DTYPE_MISMATCH);
  // x_qparams must be per tensor; p is untouched by the failed call and still runs.
  EXPECT_EQ(qnt_prepared_create_linear_static(nullptr, tw.t, nullptr, qw.p, qy.p, nullptr, &p.p),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, tx.t, y.t), QNT_OK);
}

TEST(Prepared, Conv2dEqualsOneShot) {
  std::mt19937 rng(4);
  struct Case {
    int64_t n, c, h, w, m, k, stride, pad, dil, groups;
  };
  for (const Case &c : {Case{1, 3, 8, 8, 4, 3, 1, 1, 1, 1}, Case{2, 4, 9, 7, 8, 3, 2, 1, 1, 2},
                        Case{1, 8, 6, 6, 8, 3, 1, 2, 2, 8}, Case{1, 1, 1, 1, 2, 1, 1, 0, 1, 1},
                        // No input channels (found by fuzz_api: packing the empty B for the
                        // direct form's tap sums offset a null pointer).
                        Case{1, 0, 5, 5, 4, 3, 1, 1, 1, 1}}) {
    const auto xv = random_bytes(rng, static_cast<size_t>(c.n * c.c * c.h * c.w));
    const auto wv = random_bytes(rng, static_cast<size_t>(c.m * (c.c / c.groups) * c.k * c.k));
    QP qx, qy, qw;
    per_tensor(qx, QNT_DTYPE_U8, 0.04f, 120);
    per_tensor(qy, QNT_DTYPE_U8, 0.05f, 110);
    std::vector<float> sw(static_cast<size_t>(c.m));
    for (size_t i = 0; i < sw.size(); ++i) sw[i] = 0.002f + 0.001f * static_cast<float>(i);
    ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, sw.size(), sw.data(), nullptr, &qw.p),
              QNT_OK);
    T tx, tw;
    make_raw(tx, QNT_DTYPE_U8, {c.n, c.c, c.h, c.w}, qx.p, xv.data(), xv.size());
    make_raw(tw, QNT_DTYPE_I8, {c.m, c.c / c.groups, c.k, c.k}, qw.p, wv.data(), wv.size());
    Desc d;
    for (auto [key, v] : {std::pair<qnt_op_option, int64_t>{QNT_OP_STRIDE_H, c.stride},
                          {QNT_OP_STRIDE_W, c.stride},
                          {QNT_OP_PAD_TOP, c.pad},
                          {QNT_OP_PAD_LEFT, c.pad},
                          {QNT_OP_PAD_BOTTOM, c.pad},
                          {QNT_OP_PAD_RIGHT, c.pad},
                          {QNT_OP_DILATION_H, c.dil},
                          {QNT_OP_DILATION_W, c.dil},
                          {QNT_OP_GROUPS, c.groups}})
      ASSERT_EQ(qnt_op_desc_set(d.d, key, v), QNT_OK);
    int64_t ys[4];
    ASSERT_EQ(qnt_conv2d_output_shape(tx.t, tw.t, d.d, ys, 4), QNT_OK) << qnt_last_error_message();
    const std::vector<int64_t> yshape(ys, ys + 4);
    for (qnt_dtype yd : {QNT_DTYPE_U8, QNT_DTYPE_I32}) {
      T once;
      make_q(once, yd, yshape, yd == QNT_DTYPE_U8 ? qy.p : nullptr);
      ASSERT_EQ(qnt_qconv2d(nullptr, tx.t, tw.t, nullptr, d.d, once.t), QNT_OK);
      const auto want = bytes_of(once.t);
      for_every_context([&](qnt_context *ctx) {
        Prep p;
        EXPECT_EQ(qnt_prepared_create_conv2d(ctx, tw.t, nullptr, d.d, &p.p), QNT_OK);
        T y;
        make_q(y, yd, yshape, yd == QNT_DTYPE_U8 ? qy.p : nullptr);
        EXPECT_EQ(qnt_prepared_run(ctx, p.p, tx.t, y.t), QNT_OK) << qnt_last_error_message();
        EXPECT_EQ(bytes_of(y.t), want);
        return bytes_of(y.t);
      });
    }
  }
}

// A prepared operator owns copies: changing or destroying its weights changes nothing; it can
// run on several threads at once; it reports what it is.
TEST(Prepared, IndependentImmutableAndShared) {
  std::mt19937 rng(5);
  const int64_t M = 16, K = 48, N = 24;
  auto av = random_bytes(rng, M * K), bv = random_bytes(rng, K * N);
  QP qa, qb, qy;
  per_tensor(qa, QNT_DTYPE_U8, 0.02f, 128);
  per_tensor(qb, QNT_DTYPE_I8, 0.01f, 0);
  per_tensor(qy, QNT_DTYPE_I8, 0.3f, -4);
  T ta, want_y;
  make_raw(ta, QNT_DTYPE_U8, {M, K}, qa.p, av.data(), av.size());
  make_q(want_y, QNT_DTYPE_I8, {M, N}, qy.p);
  Prep p;
  {
    T tb;
    make_raw(tb, QNT_DTYPE_I8, {K, N}, qb.p, bv.data(), bv.size());
    ASSERT_EQ(qnt_qmatmul(nullptr, ta.t, tb.t, nullptr, want_y.t), QNT_OK);
    ASSERT_EQ(qnt_prepared_create_matmul(nullptr, tb.t, nullptr, nullptr, &p.p), QNT_OK);
    void *data = nullptr;
    ASSERT_EQ(qnt_tensor_data(tb.t, &data), QNT_OK);
    std::memset(data, 0x55, bv.size());  // changed, then destroyed: p keeps its copy
  }
  const auto want = bytes_of(want_y.t);
  std::vector<std::vector<uint8_t>> got(4);
  std::vector<std::thread> pool;
  for (size_t i = 0; i < got.size(); ++i)
    pool.emplace_back([&, i] {
      for (int rep = 0; rep < 20; ++rep) {
        qnt_tensor *y = nullptr;
        const int64_t s[2] = {M, N};
        if (qnt_tensor_create(QNT_DTYPE_I8, s, 2, qy.p, &y) != QNT_OK) return;
        if (qnt_prepared_run(nullptr, p.p, ta.t, y) == QNT_OK) got[i] = bytes_of(y);
        qnt_tensor_destroy(y);
      }
    });
  for (auto &t : pool) t.join();
  for (const auto &g : got) EXPECT_EQ(g, want);
  qnt_prepared_kind kind = 0;
  size_t bytes = 0;
  qnt_isa isa = 0;
  EXPECT_EQ(qnt_prepared_kind_of(p.p, &kind), QNT_OK);
  EXPECT_EQ(kind, QNT_PREPARED_MATMUL);
  EXPECT_EQ(qnt_prepared_packed_size(p.p, &bytes), QNT_OK);
  EXPECT_GE(bytes, static_cast<size_t>(K * N));
  EXPECT_EQ(qnt_prepared_isa(p.p, &isa), QNT_OK);
  EXPECT_NE(isa, QNT_ISA_NATIVE);
}

TEST(Prepared, Errors) {
  QP qb;
  per_tensor(qb, QNT_DTYPE_I8, 0.01f, 0);
  T tb, f;
  make_q(tb, QNT_DTYPE_I8, {4, 3}, qb.p);
  make_q(f, QNT_DTYPE_F32, {4, 3}, nullptr);
  Prep p;
  EXPECT_EQ(qnt_prepared_create_matmul(nullptr, tb.t, nullptr, nullptr, nullptr),
            QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_prepared_create_matmul(nullptr, f.t, nullptr, nullptr, &p.p),
            QNT_ERR_DTYPE_MISMATCH);
  Desc relu;
  ASSERT_EQ(qnt_op_desc_set(relu.d, QNT_OP_FUSE_RELU, 1), QNT_OK);
  EXPECT_EQ(qnt_prepared_create_matmul(nullptr, tb.t, nullptr, relu.d, &p.p),
            QNT_ERR_INVALID_ARGUMENT);  // an option a matmul does not take
  EXPECT_EQ(qnt_prepared_create_conv2d(nullptr, tb.t, nullptr, nullptr, &p.p),
            QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(p.p, nullptr);
  EXPECT_EQ(qnt_prepared_run(nullptr, nullptr, f.t, f.t), QNT_ERR_NULL_POINTER);
  ASSERT_EQ(qnt_prepared_create_matmul(nullptr, tb.t, nullptr, nullptr, &p.p), QNT_OK);
  T a, y, ybad;
  make_q(a, QNT_DTYPE_U8, {2, 4}, nullptr);
  make_q(y, QNT_DTYPE_I32, {2, 3}, nullptr);
  make_q(ybad, QNT_DTYPE_I32, {2, 4}, nullptr);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, a.t, y.t), QNT_OK);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, a.t, ybad.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_prepared_run(nullptr, p.p, f.t, y.t), QNT_ERR_DTYPE_MISMATCH);
  qnt_prepared_destroy(nullptr);
}

}  // namespace

// An empty b costs nothing, whatever its batch count, and the status does not depend on the cap
// (found by fuzzing: [2^24, 1, 0] took 1.6 s and 1.7 GB, and [2^31 - 1, 0, 1] ran past 20 s and
// 8 GB under the reference cap while the AVX-512 cap ran out of memory).
TEST(PreparedMatmul, AnEmptyBCostsNothing) {
  for (qnt_isa isa : caps()) {
    qnt_test::Ctx c(isa, 2);
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{int64_t{1} << 24, 1, 0}, std::vector<int64_t>{2147483647, 0, 1},
          std::vector<int64_t>{0, 5, 7}, std::vector<int64_t>{3, 0, 0}}) {
      QP qp;
      per_tensor(qp, QNT_DTYPE_I8, 1.0f, 0);
      T b;
      make_q(b, QNT_DTYPE_I8, shape, qp.p);
      Prep p;
      ASSERT_EQ(qnt_prepared_create_matmul(c.c, b.t, nullptr, nullptr, &p.p), QNT_OK)
          << qnt_isa_name(isa) << ": " << qnt_last_error_message();
      size_t bytes = 0;
      ASSERT_EQ(qnt_prepared_packed_size(p.p, &bytes), QNT_OK);
      EXPECT_LT(bytes, 4096u) << qnt_isa_name(isa) << " shape[0] " << shape[0];
    }
    // K = 0 with several batches: every output is the bias (the sum over no k is 0), from the
    // one B every batch shares.
    QP qa, qb;
    per_tensor(qa, QNT_DTYPE_I8, 1.0f, 3);
    per_tensor(qb, QNT_DTYPE_I8, 1.0f, -2);
    T a, b, bias, y;
    make_q(a, QNT_DTYPE_I8, {5, 2, 0}, qa.p);
    make_q(b, QNT_DTYPE_I8, {5, 0, 3}, qb.p);
    const int32_t bv[3] = {7, -1, 4};
    make_raw(bias, QNT_DTYPE_I32, {3}, nullptr, bv, sizeof bv);
    make_q(y, QNT_DTYPE_I32, {5, 2, 3}, nullptr);
    Prep p;
    ASSERT_EQ(qnt_prepared_create_matmul(c.c, b.t, bias.t, nullptr, &p.p), QNT_OK)
        << qnt_last_error_message();
    ASSERT_EQ(qnt_prepared_run(c.c, p.p, a.t, y.t), QNT_OK) << qnt_last_error_message();
    const std::vector<uint8_t> got = bytes_of(y.t);
    for (size_t i = 0; i < 30; ++i) {
      int32_t v = 0;
      std::memcpy(&v, got.data() + 4 * i, 4);
      EXPECT_EQ(v, bv[i % 3]) << qnt_isa_name(isa) << " element " << i;
    }
  }
}
