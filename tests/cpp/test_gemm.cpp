// The integer GEMM family on the fast kernels (qmatmul, the static and dynamic linear layers,
// qconv2d, each one-shot and prepared) against the reference kernels, bit for bit, through the
// public ABI: every kernel set this machine runs (qnt_context_set_max_isa), random shapes with
// M, N, K among 1, 3, 15, 16, 17, 63, 64, 65 and 1000, extreme zero points and scales, K large
// enough for the int32 accumulator to wrap, and 1 to 3 threads.
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <limits>
#include <random>
#include <string>
#include <vector>

using qnt_test::bytes_of;
using qnt_test::make_f32;
using qnt_test::make_q;
using qnt_test::make_raw;
using qnt_test::per_tensor;
using qnt_test::QP;
using qnt_test::T;

namespace {

using qnt_test::Ctx;

struct Desc {
  qnt_op_desc *d = nullptr;
  Desc() { EXPECT_EQ(qnt_op_desc_create(&d), QNT_OK); }
  Desc(const Desc &) = delete;
  Desc &operator=(const Desc &) = delete;
  ~Desc() { qnt_op_desc_destroy(d); }
  void set(qnt_op_option k, int64_t v) { EXPECT_EQ(qnt_op_desc_set(d, k, v), QNT_OK); }
};

using qnt_test::Prep;

// The kernel sets above the reference that this machine runs, with their GEMM kernel.
std::vector<qnt_isa> fast_isas() {
  return qnt_test::runnable_isas({QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI, QNT_ISA_NEON});
}

const int64_t kSizes[] = {1, 3, 15, 16, 17, 63, 64, 65};

int64_t pick_size(std::mt19937 &rng, bool allow_big) {
  std::uniform_int_distribution<int> d(0, allow_big ? 8 : 7);
  const int i = d(rng);
  return i == 8 ? 1000 : kSizes[i];
}

int32_t qmin_of(qnt_dtype d) { return d == QNT_DTYPE_I8 ? -128 : 0; }
int32_t qmax_of(qnt_dtype d) { return d == QNT_DTYPE_I8 ? 127 : 255; }

// A zero point: often the extremes of the range.
int32_t pick_zp(std::mt19937 &rng, qnt_dtype d) {
  std::uniform_int_distribution<int> kind(0, 3);
  std::uniform_int_distribution<int32_t> any(qmin_of(d), qmax_of(d));
  switch (kind(rng)) {
    case 0:
      return qmin_of(d);
    case 1:
      return qmax_of(d);
    case 2:
      return 0;
    default:
      return any(rng);
  }
}

// Bytes: uniform, or only the extremes (the largest products).
std::vector<uint8_t> random_bytes(std::mt19937 &rng, size_t n, bool extremes) {
  std::vector<uint8_t> v(n);
  std::uniform_int_distribution<int> b(0, 255), e(0, 3);
  static const uint8_t ends[4] = {0x00, 0xFF, 0x7F, 0x80};
  for (auto &x : v) x = static_cast<uint8_t>(extremes ? ends[e(rng)] : b(rng));
  return v;
}

qnt_dtype pick_int8(std::mt19937 &rng) {
  return std::uniform_int_distribution<int>(0, 1)(rng) ? QNT_DTYPE_I8 : QNT_DTYPE_U8;
}

float pick_scale(std::mt19937 &rng) {
  // The extremes make multipliers of 0, inf (inf * 0 is NaN) and subnormal products.
  static const float s[] = {1e-6f, 0.001f, 0.05f, 0.5f, 3.0f, 1e4f, 1e-20f, 1e20f};
  const int i = std::uniform_int_distribution<int>(0, 15)(rng);
  return s[i < 8 ? i : 2 + i % 4];
}

// Per-column (or per-tensor) qparams for a weight of `count` channels along `axis`.
void weight_qparams(QP &out, std::mt19937 &rng, qnt_dtype d, int64_t axis, int64_t count,
                    bool per_axis) {
  if (!per_axis) {
    per_tensor(out, d, pick_scale(rng), pick_zp(rng, d));
    return;
  }
  std::vector<float> s(static_cast<size_t>(count));
  std::vector<int32_t> z(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    s[static_cast<size_t>(i)] = pick_scale(rng);
    z[static_cast<size_t>(i)] = pick_zp(rng, d);
  }
  ASSERT_EQ(qnt_qparams_create_per_axis(d, axis, static_cast<size_t>(count), s.data(), z.data(),
                                        &out.p),
            QNT_OK);
}

// Runs f(ctx) writing y with the reference and with every fast set at 1, 2 and 3 threads, and
// compares y's bytes.
template <class F>
void compare_all(const std::string &what, qnt_tensor *y, F &&f) {
  std::vector<uint8_t> want;
  {
    Ctx ref(QNT_ISA_REFERENCE, 1);
    ASSERT_EQ(f(ref.c), QNT_OK) << what << ": " << qnt_last_error_message();
    want = bytes_of(y);
  }
  for (qnt_isa isa : fast_isas())
    for (int threads : {1, 2, 3}) {
      void *yd = nullptr;
      ASSERT_EQ(qnt_tensor_data(y, &yd), QNT_OK);
      std::memset(yd, 0x5A, want.size());
      Ctx c(isa, threads);
      ASSERT_EQ(f(c.c), QNT_OK) << what << ": " << qnt_last_error_message();
      const std::vector<uint8_t> got = bytes_of(y);
      size_t diff = 0, first = 0;
      for (size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && diff++ == 0) first = i;
      ASSERT_EQ(diff, 0u) << what << " isa " << qnt_isa_name(isa) << " threads " << threads
                          << ": " << diff << " bytes differ, first at byte " << first;
    }
}

// The weights of a case: random bytes, or values -1, 0, +1 (the ternary kernels' B) as i8, as
// the ternary dtype or (-1, +1) as the binary dtype, all with zero points 0.
enum class WKind { Bytes, TernaryI8, Ternary, Binary };

qnt_dtype wkind_dtype(WKind k, std::mt19937 &rng) {
  switch (k) {
    case WKind::TernaryI8: return QNT_DTYPE_I8;
    case WKind::Ternary: return QNT_DTYPE_TERNARY;
    case WKind::Binary: return QNT_DTYPE_BINARY;
    default: return pick_int8(rng);
  }
}

// n random weights of kind k (not Bytes) in their dtype's storage: i8 bytes, or packed codes
// (ternary: two bits, two's complement; binary: one bit, 1 for +1), element 0 lowest. Every
// ninth draw is a long run of +1 or -1 (the largest int16 sums a ternary kernel forms).
std::vector<uint8_t> ternary_weights(std::mt19937 &rng, size_t n, WKind k) {
  std::vector<int> v(n);
  std::uniform_int_distribution<int> t(k == WKind::Binary ? 0 : -1, 1), run(0, 8);
  const bool extreme = run(rng) == 0;
  const int sign = std::uniform_int_distribution<int>(0, 1)(rng) ? 1 : -1;
  for (auto &x : v) {
    x = extreme ? sign : t(rng);
    if (k == WKind::Binary && x == 0) x = -1;
  }
  std::vector<uint8_t> out;
  if (k == WKind::TernaryI8) {
    for (int x : v) out.push_back(static_cast<uint8_t>(static_cast<int8_t>(x)));
  } else if (k == WKind::Ternary) {
    out.assign((n + 3) / 4, 0);
    for (size_t i = 0; i < n; ++i) out[i / 4] |= static_cast<uint8_t>((v[i] & 3) << (2 * (i % 4)));
  } else {
    out.assign((n + 7) / 8, 0);
    for (size_t i = 0; i < n; ++i) out[i / 8] |= static_cast<uint8_t>((v[i] > 0 ? 1 : 0) << (i % 8));
  }
  return out;
}

TEST(Gemm, FastSetsExist) {
  // On x86-64 with AVX2, or aarch64, the fast GEMM must be there, or every test below is vacuous.
  const std::string s = qnt_test::chosen_kernels();
  EXPECT_NE(s.find("gemm.u8s8s32="), std::string::npos) << s;
  if (!fast_isas().empty()) {
    EXPECT_EQ(s.find("gemm.u8s8s32=ref"), std::string::npos) << s;
  }
}

// qnt_qmatmul, one-shot and prepared, gives the reference's bits on every kernel set.
void compare_matmul(const std::string &what, const qnt_tensor *a, const qnt_tensor *b,
                    const qnt_tensor *bias, qnt_tensor *y) {
  compare_all(what, y, [&](qnt_context *c) { return qnt_qmatmul(c, a, b, bias, y); });
  compare_all(what + " prepared", y, [&](qnt_context *c) {
    Prep p;
    qnt_status s = qnt_prepared_create_matmul(c, b, bias, nullptr, &p.p);
    if (s != QNT_OK) return s;
    return qnt_prepared_run(c, p.p, a, y);
  });
}

TEST(Gemm, MatmulRandom) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 60; ++iter) {
    const bool big = iter % 6 == 0;
    const int64_t M = pick_size(rng, big), K = pick_size(rng, big), N = pick_size(rng, big);
    const qnt_dtype ad = pick_int8(rng), bd = pick_int8(rng);
    const bool extremes = iter % 3 == 0;
    const int mode = iter % 4;  // 0 i32, 1 u8, 2 i8, 3 f32
    const bool per_col = iter % 2 == 0;
    const int64_t batch = iter % 5 == 0 ? 2 : 0;  // a [2, M, K] with b [K, N]
    QP aq, bq, yq;
    per_tensor(aq, ad, pick_scale(rng), pick_zp(rng, ad));
    weight_qparams(bq, rng, bd, -1, N, per_col);
    std::vector<int64_t> ashape = {M, K}, yshape = {M, N};
    if (batch) {
      ashape.insert(ashape.begin(), batch);
      yshape.insert(yshape.begin(), batch);
    }
    const auto av = random_bytes(rng, static_cast<size_t>((batch ? batch : 1) * M * K), extremes);
    const auto bv = random_bytes(rng, static_cast<size_t>(K * N), extremes);
    T a, b, y, bias;
    make_raw(a, ad, ashape, aq.p, av.data(), av.size());
    make_raw(b, bd, {K, N}, bq.p, bv.data(), bv.size());
    const qnt_dtype yd = mode == 0   ? QNT_DTYPE_I32
                         : mode == 1 ? QNT_DTYPE_U8
                         : mode == 2 ? QNT_DTYPE_I8
                                     : QNT_DTYPE_F32;
    if (mode == 1 || mode == 2) per_tensor(yq, yd, pick_scale(rng), pick_zp(rng, yd));
    make_q(y, yd, yshape, yq.p);
    const qnt_tensor *bias_t = nullptr;
    if (iter % 3 != 2) {
      std::vector<int32_t> bi(static_cast<size_t>(N));
      std::uniform_int_distribution<int32_t> d(-100000, 100000);
      for (auto &v : bi) v = iter % 7 == 0 ? INT32_MAX - std::abs(d(rng) % 50) : d(rng);
      const int64_t bs[1] = {N};
      ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I32, bs, 1, nullptr, bi.data(), 4 * bi.size(),
                                            &bias.t),
                QNT_OK);
      bias_t = bias.t;
    }
    const std::string what = "matmul M " + std::to_string(M) + " K " + std::to_string(K) +
                             " N " + std::to_string(N) + " mode " + std::to_string(mode);
    compare_matmul(what, a.t, b.t, bias_t, y.t);
  }
}

// int32 y with no bias and every zero point 0 (u8 a, symmetric i8 b): the kernels write full
// tiles straight into y (gemm_run's `direct`), the rest through the tile buffer. Rows and
// columns around the tiles of every set (4 or 6 or 8 rows, 16 to 64 columns), batches of a
// (each batch's y its own rows), per-column weight scales, extreme bytes; a u8 a with a zero
// point and an i8 a (a' = a + 128) take the buffered path in the same shapes.
TEST(Gemm, MatmulInt32TilesInPlace) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(77);
  const int64_t Ms[] = {1, 4, 6, 8, 12, 13, 24, 50};
  const int64_t Ns[] = {16, 64, 65, 128, 200};
  int iter = 0;
  for (int64_t M : Ms)
    for (int64_t N : Ns) {
      ++iter;
      const int64_t K = 1 + (iter * 37) % 300;
      const int kind = iter % 3;  // 0: u8 a with zero point 0; 1: u8 a, zero point 7; 2: i8 a
      const qnt_dtype ad = kind == 2 ? QNT_DTYPE_I8 : QNT_DTYPE_U8;
      const int64_t batch = iter % 4 == 0 ? 3 : 1;
      QP aq, bq;
      per_tensor(aq, ad, 0.5f, kind == 1 ? 7 : 0);
      std::vector<float> ws(static_cast<size_t>(N));
      for (auto &v : ws) v = pick_scale(rng);
      const std::vector<int32_t> wz(static_cast<size_t>(N), 0);
      ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 1, static_cast<size_t>(N), ws.data(),
                                            wz.data(), &bq.p),
                QNT_OK);
      const auto av = random_bytes(rng, static_cast<size_t>(batch * M * K), iter % 2 == 0);
      const auto bv = random_bytes(rng, static_cast<size_t>(K * N), iter % 2 == 0);
      T a, b, y;
      make_raw(a, ad, {batch, M, K}, aq.p, av.data(), av.size());
      make_raw(b, QNT_DTYPE_I8, {K, N}, bq.p, bv.data(), bv.size());
      make_q(y, QNT_DTYPE_I32, {batch, M, N}, nullptr);
      const std::string what = "int32 matmul M " + std::to_string(M) + " K " + std::to_string(K) +
                               " N " + std::to_string(N) + " kind " + std::to_string(kind);
      compare_matmul(what, a.t, b.t, nullptr, y.t);
    }
}

// u8 A whose rows are whole groups of 4 and at most 512 bytes, N a multiple of 64: the AVX-512
// VNNI set reads its full panels of 6 rows in place (the last partial panel packed), with and
// without zero points on either side (the row sums and the correction), int32 and u8 y, 1-3
// threads (compare_all), batches of a.
TEST(Gemm, MatmulUnsignedRowsReadInPlace) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(78);
  int iter = 0;
  for (int64_t K : {4, 8, 64, 100, 256, 512, 516})
    for (int64_t M : {6, 7, 12, 17, 40})
      for (int64_t N : {64, 128}) {
        ++iter;
        const int kind = iter % 4;  // 0: no zero points; 1: a's 9; 2: b's (u8 b); 3: both
        const bool bu = kind >= 2;
        const int64_t batch = iter % 5 == 0 ? 2 : 1;
        QP aq, bq, yq;
        per_tensor(aq, QNT_DTYPE_U8, 0.5f, kind % 2 == 1 ? 9 : 0);
        std::vector<float> ws(static_cast<size_t>(N));
        for (auto &v : ws) v = pick_scale(rng);
        std::vector<int32_t> wz(static_cast<size_t>(N), 0);
        if (bu)
          for (auto &z : wz) z = static_cast<int32_t>(rng() % 256);
        ASSERT_EQ(qnt_qparams_create_per_axis(bu ? QNT_DTYPE_U8 : QNT_DTYPE_I8, 1,
                                              static_cast<size_t>(N), ws.data(), wz.data(), &bq.p),
                  QNT_OK);
        const auto av = random_bytes(rng, static_cast<size_t>(batch * M * K), iter % 2 == 0);
        const auto bv = random_bytes(rng, static_cast<size_t>(K * N), iter % 3 == 0);
        T a, b, y, y8;
        make_raw(a, QNT_DTYPE_U8, {batch, M, K}, aq.p, av.data(), av.size());
        make_raw(b, bu ? QNT_DTYPE_U8 : QNT_DTYPE_I8, {K, N}, bq.p, bv.data(), bv.size());
        make_q(y, QNT_DTYPE_I32, {batch, M, N}, nullptr);
        per_tensor(yq, QNT_DTYPE_U8, 40.0f, 128);
        make_q(y8, QNT_DTYPE_U8, {batch, M, N}, yq.p);
        const std::string what = "in place M " + std::to_string(M) + " K " + std::to_string(K) +
                                 " N " + std::to_string(N) + " kind " + std::to_string(kind);
        compare_matmul(what, a.t, b.t, nullptr, y.t);
        compare_matmul(what + " u8 y", a.t, b.t, nullptr, y8.t);
      }
}

// A B large enough (8.5 MB packed) for the [K, N] packers' streaming path (four panels a step,
// streaming stores): its panels split over 1-3 threads into runs with and without whole steps
// of four, an odd last whole panel, a partial last panel and a partial last group; i8 and u8 b
// (the XOR), extreme and random bytes, per-column zero points for u8.
TEST(Gemm, MatmulLargeBStreamsItsPacking) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(99);
  const int64_t K = 4099, N = 2066;
  int iter = 0;
  for (qnt_dtype bd : {QNT_DTYPE_I8, QNT_DTYPE_U8}) {
    ++iter;
    const int64_t M = iter == 1 ? 1 : 5;
    QP aq, bq;
    per_tensor(aq, QNT_DTYPE_U8, 0.5f, 3);
    weight_qparams(bq, rng, bd, -1, N, bd == QNT_DTYPE_U8);
    const auto av = random_bytes(rng, static_cast<size_t>(M * K), false);
    const auto bv = random_bytes(rng, static_cast<size_t>(K * N), iter == 2);
    T a, b, y;
    make_raw(a, QNT_DTYPE_U8, {M, K}, aq.p, av.data(), av.size());
    make_raw(b, bd, {K, N}, bq.p, bv.data(), bv.size());
    make_q(y, QNT_DTYPE_I32, {M, N}, nullptr);
    compare_matmul("large b " + std::string(qnt_dtype_name(bd)), a.t, b.t, nullptr, y.t);
  }
}

TEST(Gemm, AccumulatorWraps) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  // 255 * (-128 - 127) * K passes 2^31 for K > 33000: the int32 accumulator wraps.
  const int64_t M = 3, K = 70001, N = 17;
  for (qnt_dtype bd : {QNT_DTYPE_I8, QNT_DTYPE_U8}) {
    QP aq, bq;
    per_tensor(aq, QNT_DTYPE_U8, 1.0f, 0);
    per_tensor(bq, bd, 1.0f, bd == QNT_DTYPE_I8 ? 127 : 255);
    std::vector<uint8_t> av(static_cast<size_t>(M * K), 255), bv(static_cast<size_t>(K * N));
    for (size_t i = 0; i < bv.size(); ++i) bv[i] = bd == QNT_DTYPE_I8 ? 0x80 : 0x00;
    T a, b, y;
    make_raw(a, QNT_DTYPE_U8, {M, K}, aq.p, av.data(), av.size());
    make_raw(b, bd, {K, N}, bq.p, bv.data(), bv.size());
    make_q(y, QNT_DTYPE_I32, {M, N}, nullptr);
    compare_all("wrap", y.t, [&](qnt_context *c) { return qnt_qmatmul(c, a.t, b.t, nullptr, y.t); });
    // And the value is the wrapped one: 255 * -255 * K modulo 2^32.
    const auto got = qnt_test::values_of<int32_t>(y.t);
    const auto want = static_cast<int32_t>(static_cast<uint32_t>(int64_t{255} * -255 * K));
    EXPECT_EQ(got[0], want);
  }
}

TEST(Gemm, StaticLinearRandom) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(99);
  for (int iter = 0; iter < 40; ++iter) {
    const bool big = iter % 8 == 0;
    const int64_t R = pick_size(rng, big), K = pick_size(rng, big), N = pick_size(rng, big);
    const qnt_dtype xd = pick_int8(rng), wd = pick_int8(rng);
    const int out = iter % 3;  // 0 u8, 1 i8, 2 f32
    const int bias_kind = (iter / 3) % 3;  // none, i32, f32
    const bool relu = iter % 2 == 1;
    QP xq, wq, yq;
    per_tensor(xq, xd, pick_scale(rng), pick_zp(rng, xd));
    weight_qparams(wq, rng, wd, 0, N, iter % 4 != 3);
    const qnt_dtype yd = out == 0 ? QNT_DTYPE_U8 : out == 1 ? QNT_DTYPE_I8 : QNT_DTYPE_F32;
    if (out != 2) per_tensor(yq, yd, pick_scale(rng), pick_zp(rng, yd));
    const auto xv = random_bytes(rng, static_cast<size_t>(R * K), iter % 5 == 0);
    const auto wv = random_bytes(rng, static_cast<size_t>(N * K), iter % 5 == 0);
    T x, w, y, bias;
    make_raw(x, xd, {R, K}, xq.p, xv.data(), xv.size());
    make_raw(w, wd, {N, K}, wq.p, wv.data(), wv.size());
    make_q(y, yd, {R, N}, yq.p);
    const int64_t bs[1] = {N};
    if (bias_kind == 1) {
      std::vector<int32_t> bi(static_cast<size_t>(N));
      for (auto &v : bi) v = std::uniform_int_distribution<int32_t>(-5000, 5000)(rng);
      ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I32, bs, 1, nullptr, bi.data(), 4 * bi.size(),
                                            &bias.t),
                QNT_OK);
    } else if (bias_kind == 2) {
      std::vector<float> bf(static_cast<size_t>(N));
      for (auto &v : bf) v = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
      ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, bs, 1, nullptr, bf.data(), 4 * bf.size(),
                                            &bias.t),
                QNT_OK);
    }
    Desc d;
    if (relu) d.set(QNT_OP_FUSE_RELU, 1);
    compare_all("static linear " + std::to_string(iter), y.t, [&](qnt_context *c) {
      Prep p;
      qnt_status s =
          qnt_prepared_create_linear_static(c, w.t, bias.t, xq.p, yq.p, d.d, &p.p);
      if (s != QNT_OK) return s;
      return qnt_prepared_run(c, p.p, x.t, y.t);
    });
  }
}

// A w [N, K] large enough (8.5 MB packed) for the [N, K] packers' streaming path: whole panels
// and a partial last one, whole steps of 8 groups and the driver's last group, i8 and u8 w
// (per-row zero points), on 1-3 threads.
TEST(Gemm, LinearLargeWStreamsItsPacking) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(98);
  const int64_t R = 3, K = 4099, N = 2066;
  for (qnt_dtype wd : {QNT_DTYPE_I8, QNT_DTYPE_U8}) {
    QP xq, wq;
    per_tensor(xq, QNT_DTYPE_U8, 0.05f, 120);
    weight_qparams(wq, rng, wd, 0, N, true);
    const auto xv = random_bytes(rng, static_cast<size_t>(R * K), false);
    const auto wv = random_bytes(rng, static_cast<size_t>(N * K), wd == QNT_DTYPE_U8);
    T x, w, y;
    make_raw(x, QNT_DTYPE_U8, {R, K}, xq.p, xv.data(), xv.size());
    make_raw(w, wd, {N, K}, wq.p, wv.data(), wv.size());
    make_q(y, QNT_DTYPE_F32, {R, N}, nullptr);
    compare_all("large w " + std::string(qnt_dtype_name(wd)), y.t, [&](qnt_context *c) {
      Prep p;
      qnt_status s = qnt_prepared_create_linear_static(c, w.t, nullptr, xq.p, nullptr, nullptr, &p.p);
      if (s != QNT_OK) return s;
      return qnt_prepared_run(c, p.p, x.t, y.t);
    });
  }
}

TEST(Gemm, DynamicLinearRandom) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(7);
  for (int iter = 0; iter < 30; ++iter) {
    const bool big = iter % 6 == 0;
    const int64_t R = pick_size(rng, big), K = pick_size(rng, big), N = pick_size(rng, big);
    QP wq;
    weight_qparams(wq, rng, QNT_DTYPE_I8, 0, N, iter % 3 != 0);
    std::vector<float> xv(static_cast<size_t>(R * K));
    std::normal_distribution<float> nd(0.0f, iter % 4 == 0 ? 100.0f : 1.0f);
    for (auto &v : xv) v = nd(rng);
    if (iter % 5 == 0) xv[0] = -0.0f;
    const auto wv = random_bytes(rng, static_cast<size_t>(N * K), iter % 4 == 1);
    T x, w, y, bias;
    make_f32(x, {R, K}, xv);
    make_raw(w, QNT_DTYPE_I8, {N, K}, wq.p, wv.data(), wv.size());
    make_q(y, QNT_DTYPE_F32, {R, N}, nullptr);
    if (iter % 2 == 0) {
      std::vector<float> bf(static_cast<size_t>(N));
      for (auto &v : bf) v = nd(rng);
      const int64_t bs[1] = {N};
      ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, bs, 1, nullptr, bf.data(), 4 * bf.size(),
                                            &bias.t),
                QNT_OK);
    }
    Desc d;
    d.set(QNT_OP_ACT_QUANT, iter % 2 ? QNT_ACT_PER_ROW : QNT_ACT_PER_TENSOR);
    d.set(QNT_OP_REDUCE_RANGE, (iter / 2) % 2);
    d.set(QNT_OP_FUSE_RELU, (iter / 4) % 2);
    compare_all("dynamic linear " + std::to_string(iter), y.t, [&](qnt_context *c) {
      return qnt_linear_dynamic(c, x.t, w.t, bias.t, d.d, y.t);
    });
  }
}

// Ternary and binary weights in qmatmul (b [K, N]), the prepared static linear layer and the
// dynamic one (w [N, K]): every fast set against the reference, and the packed dtypes against
// the same values given as i8 (the ops widen them to those).
TEST(Gemm, LinearTernaryWeights) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(71);
  for (int iter = 0; iter < 24; ++iter) {
    const bool big = iter % 4 == 0;
    const int64_t R = pick_size(rng, big), K = pick_size(rng, big), N = pick_size(rng, big);
    const WKind wk = iter % 3 == 0 ? WKind::Ternary : iter % 3 == 1 ? WKind::Binary : WKind::TernaryI8;
    const qnt_dtype wd = wkind_dtype(wk, rng);
    const auto wcount = static_cast<size_t>(N * K);
    const auto wv = ternary_weights(rng, wcount, wk);
    // The same values as i8 bytes, for the widening check.
    std::vector<uint8_t> w8(wcount);
    for (size_t i = 0; i < wcount; ++i) {
      int v = 0;
      if (wk == WKind::TernaryI8) v = static_cast<int8_t>(wv[i]);
      else if (wk == WKind::Ternary) v = static_cast<int8_t>(static_cast<uint8_t>(((wv[i / 4] >> (2 * (i % 4))) & 3) << 6)) >> 6;
      else v = (wv[i / 8] >> (i % 8)) & 1 ? 1 : -1;
      w8[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
    }
    std::vector<float> ws(static_cast<size_t>(N));
    for (auto &v : ws) v = pick_scale(rng);
    const std::vector<int32_t> wz(static_cast<size_t>(N), 0);
    QP wq_col, wq_row, w8q_row, xq, yq;
    ASSERT_EQ(qnt_qparams_create_per_axis(wd, 1, ws.size(), ws.data(), wz.data(), &wq_col.p), QNT_OK);
    ASSERT_EQ(qnt_qparams_create_per_axis(wd, 0, ws.size(), ws.data(), wz.data(), &wq_row.p), QNT_OK);
    ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, ws.size(), ws.data(), wz.data(), &w8q_row.p),
              QNT_OK);
    const qnt_dtype xd = pick_int8(rng);
    per_tensor(xq, xd, pick_scale(rng), pick_zp(rng, xd));
    per_tensor(yq, QNT_DTYPE_U8, pick_scale(rng), pick_zp(rng, QNT_DTYPE_U8));
    const auto xv = random_bytes(rng, static_cast<size_t>(R * K), iter % 5 == 0);
    std::vector<float> xf(static_cast<size_t>(R * K));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto &v : xf) v = nd(rng);
    T x, xfl, b, w, w8t, y8, yf, yf8;
    make_raw(x, xd, {R, K}, xq.p, xv.data(), xv.size());
    make_f32(xfl, {R, K}, xf);
    // b [K, N] holds w's values transposed only for the i8 kind; for the packed kinds b is the
    // same packed bytes read as [K, N] (any values do for the comparison).
    make_raw(b, wd, {K, N}, wq_col.p, wv.data(), wv.size());
    make_raw(w, wd, {N, K}, wq_row.p, wv.data(), wv.size());
    make_raw(w8t, QNT_DTYPE_I8, {N, K}, w8q_row.p, w8.data(), w8.size());
    make_q(y8, QNT_DTYPE_U8, {R, N}, yq.p);
    make_q(yf, QNT_DTYPE_F32, {R, N}, nullptr);
    make_q(yf8, QNT_DTYPE_F32, {R, N}, nullptr);
    const std::string what = "ternary linear " + std::to_string(iter) + " R " + std::to_string(R) +
                             " K " + std::to_string(K) + " N " + std::to_string(N);
    compare_all(what + " qmatmul", y8.t, [&](qnt_context *c) { return qnt_qmatmul(c, x.t, b.t, nullptr, y8.t); });
    compare_all(what + " static", y8.t, [&](qnt_context *c) {
      Prep p;
      qnt_status s = qnt_prepared_create_linear_static(c, w.t, nullptr, xq.p, yq.p, nullptr, &p.p);
      if (s != QNT_OK) return s;
      return qnt_prepared_run(c, p.p, x.t, y8.t);
    });
    compare_all(what + " dynamic", yf.t, [&](qnt_context *c) {
      return qnt_linear_dynamic(c, xfl.t, w.t, nullptr, nullptr, yf.t);
    });
    // The packed dtypes give the bits of their values as i8.
    Ctx ref(QNT_ISA_REFERENCE, 1);
    ASSERT_EQ(qnt_linear_dynamic(ref.c, xfl.t, w.t, nullptr, nullptr, yf.t), QNT_OK);
    ASSERT_EQ(qnt_linear_dynamic(ref.c, xfl.t, w8t.t, nullptr, nullptr, yf8.t), QNT_OK);
    EXPECT_EQ(bytes_of(yf.t), bytes_of(yf8.t)) << what;
  }
}

// GemmB::classify reads the packed bytes in blocks and leaves at the first block with a value
// other than -1, 0, +1: a 2 in the very last block must still keep B off the ternary tile,
// whose 16-bit sums it would overflow here (x = 255 everywhere: 64 groups of pairs of 255 and
// 2 * 255 pass 32767).
TEST(Gemm, TernaryClassificationReadsEveryBlock) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const int64_t R = 6, K = 4096, N = 32;
  std::vector<uint8_t> bv(static_cast<size_t>(K * N), 1);
  bv.back() = 2;  // b[K - 1][N - 1]: the last group of the last panel
  const std::vector<uint8_t> xv(static_cast<size_t>(R * K), 255);
  QP bq, xq;
  per_tensor(bq, QNT_DTYPE_I8, 1.0f, 0);
  per_tensor(xq, QNT_DTYPE_U8, 1.0f, 0);
  T x, b, y;
  make_raw(x, QNT_DTYPE_U8, {R, K}, xq.p, xv.data(), xv.size());
  make_raw(b, QNT_DTYPE_I8, {K, N}, bq.p, bv.data(), bv.size());
  make_q(y, QNT_DTYPE_I32, {R, N}, nullptr);
  compare_all("one 2 in the last block", y.t, [&](qnt_context *c) { return qnt_qmatmul(c, x.t, b.t, nullptr, y.t); });
  void *yd = nullptr;
  ASSERT_EQ(qnt_tensor_data(y.t, &yd), QNT_OK);
  const auto *acc = static_cast<const int32_t *>(yd);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < N; ++n)
      ASSERT_EQ(acc[r * N + n], 255 * (K + (n == N - 1 ? 1 : 0))) << r << " " << n;
}

TEST(Gemm, TernaryWeightsRejectTheCodeWithNoValue) {
  // Ternary's 0b10 is no value: the ops that widen ternary weights say so.
  QP wq, xq;
  per_tensor(wq, QNT_DTYPE_TERNARY, 1.0f, 0);
  per_tensor(xq, QNT_DTYPE_U8, 1.0f, 0);
  const uint8_t wv[1] = {0x02};  // element 0 is 0b10
  const uint8_t xv[2] = {1, 2};
  T w, x, y;
  make_raw(w, QNT_DTYPE_TERNARY, {2, 2}, wq.p, wv, 1);
  make_raw(x, QNT_DTYPE_U8, {1, 2}, xq.p, xv, 2);
  make_q(y, QNT_DTYPE_I32, {1, 2}, nullptr);
  EXPECT_EQ(qnt_qmatmul(nullptr, x.t, w.t, nullptr, y.t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qnt_last_error_message()).find("0b10"), std::string::npos) << qnt_last_error_message();
}

// qnt_binary_matmul: every kernel set and 1 to 3 threads against the reference, and the i32
// result against the rule computed here bit by bit. K around the 64-bit words and the 256-bit
// steps, not a multiple of 8 (rows start inside a byte), and past 31 steps (the kernels' byte
// counts are widened every 31); runs of equal or opposite rows (the largest counts).
TEST(Gemm, BinaryMatmul) {
  std::mt19937 rng(83);
  const int64_t shapes[][3] = {{1, 1, 1},    {2, 3, 64},   {3, 5, 63},    {5, 4, 257},  {7, 10, 1000},
                               {4, 6, 7937}, {9, 7, 8200}, {16, 33, 513}, {1, 2, 0},    {70, 9, 300},
                               {6, 100, 130}};  // 13 groups of 8 columns: uneven ranges on 2 and 3 threads
  int iter = 0;
  for (const auto &sh : shapes) {
    const int64_t M = sh[0], N = sh[1], K = sh[2];
    ++iter;
    std::uniform_int_distribution<int> bit(0, 1);
    std::vector<int> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(N * K));
    for (auto &v : av) v = bit(rng);
    for (auto &v : bv) v = bit(rng);
    if ((iter % 3 == 0 || K > 8000) && M >= 1 && N >= 2)  // b row 0 = a row 0, row 1 its opposite
      for (int64_t k = 0; k < K; ++k) {
        bv[static_cast<size_t>(k)] = av[static_cast<size_t>(k)];
        bv[static_cast<size_t>(K + k)] = 1 - av[static_cast<size_t>(k)];
      }
    auto pack_bits = [](const std::vector<int> &v) {
      std::vector<uint8_t> out((v.size() + 7) / 8, 0);
      for (size_t i = 0; i < v.size(); ++i) out[i / 8] |= static_cast<uint8_t>(v[i] << (i % 8));
      return out;
    };
    const auto ap = pack_bits(av), bp = pack_bits(bv);
    std::vector<float> sa(static_cast<size_t>(M)), sb(static_cast<size_t>(N));
    for (auto &v : sa) v = pick_scale(rng);
    for (auto &v : sb) v = pick_scale(rng);
    QP aq, bq;
    ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_BINARY, 0, sa.size(), sa.data(), nullptr, &aq.p), QNT_OK);
    if (iter % 2 == 0)
      per_tensor(bq, QNT_DTYPE_BINARY, sb[0], 0);
    else
      ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_BINARY, 0, sb.size(), sb.data(), nullptr, &bq.p), QNT_OK);
    T a, b, y, yf;
    make_raw(a, QNT_DTYPE_BINARY, {M, K}, aq.p, ap.data(), ap.size());
    make_raw(b, QNT_DTYPE_BINARY, {N, K}, bq.p, bp.data(), bp.size());
    make_q(y, QNT_DTYPE_I32, {M, N}, nullptr);
    make_q(yf, QNT_DTYPE_F32, {M, N}, nullptr);
    const std::string what = "binary matmul " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
    compare_all(what, y.t, [&](qnt_context *c) { return qnt_binary_matmul(c, a.t, b.t, y.t); });
    compare_all(what + " f32", yf.t, [&](qnt_context *c) { return qnt_binary_matmul(c, a.t, b.t, yf.t); });
    compare_all(what + " prepared", yf.t, [&](qnt_context *c) -> qnt_status {
      Prep p;
      qnt_status s = qnt_prepared_create_binary_matmul(c, b.t, nullptr, &p.p);
      if (s != QNT_OK) return s;
      qnt_prepared_kind kind = 0;
      if (qnt_prepared_kind_of(p.p, &kind) != QNT_OK || kind != QNT_PREPARED_BINARY_MATMUL) return QNT_ERR_INTERNAL;
      return qnt_prepared_run(c, p.p, a.t, yf.t);
    });
    const auto got = qnt_test::values_of<int32_t>(y.t);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int32_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += (2 * av[static_cast<size_t>(m * K + k)] - 1) * (2 * bv[static_cast<size_t>(n * K + k)] - 1);
        ASSERT_EQ(got[static_cast<size_t>(m * N + n)], acc) << what << " at " << m << ", " << n;
      }
  }
}

TEST(Gemm, BinaryMatmulRefusals) {
  QP q;
  per_tensor(q, QNT_DTYPE_BINARY, 1.0f, 0);
  const uint8_t bits[2] = {0x5A, 0x0F};
  T a, b, b3, y, yf, y8, i8;
  make_raw(a, QNT_DTYPE_BINARY, {2, 8}, nullptr, bits, 2);
  make_raw(b, QNT_DTYPE_BINARY, {2, 8}, q.p, bits, 2);
  make_raw(b3, QNT_DTYPE_BINARY, {2, 7}, q.p, bits, 2);
  make_q(y, QNT_DTYPE_I32, {2, 2}, nullptr);
  make_q(yf, QNT_DTYPE_F32, {2, 2}, nullptr);
  make_q(y8, QNT_DTYPE_I32, {2, 3}, nullptr);
  const uint8_t raw[16] = {};
  make_raw(i8, QNT_DTYPE_I8, {2, 8}, nullptr, raw, 16);
  EXPECT_EQ(qnt_binary_matmul(nullptr, a.t, b.t, y.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(qnt_binary_matmul(nullptr, i8.t, b.t, y.t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qnt_binary_matmul(nullptr, a.t, b3.t, y.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_binary_matmul(nullptr, a.t, b.t, y8.t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_EQ(qnt_binary_matmul(nullptr, a.t, b.t, yf.t), QNT_ERR_INVALID_QPARAMS);  // a has none
  EXPECT_NE(std::string(qnt_last_error_message()).find("needs qparams"), std::string::npos);
  EXPECT_EQ(qnt_binary_matmul(nullptr, a.t, b.t, nullptr), QNT_ERR_NULL_POINTER);
}

TEST(Gemm, DynamicReduceRangeIsSevenBits) {
  // With reduce_range the quantized activations span [0, 127]: x = [-1, 1] gives scale 2 / 127
  // and zero point round(63.5) = 64; a weight of 1 (scale 1) reads them back.
  std::vector<float> xv = {-1.0f, 1.0f};
  QP wq;
  per_tensor(wq, QNT_DTYPE_I8, 1.0f, 0);
  const std::vector<int8_t> wv = {1, 0, 0, 1};
  T x, w, y;
  make_f32(x, {1, 2}, xv);
  make_raw(w, QNT_DTYPE_I8, {2, 2}, wq.p, wv.data(), wv.size());
  make_q(y, QNT_DTYPE_F32, {1, 2}, nullptr);
  Desc d;
  d.set(QNT_OP_REDUCE_RANGE, 1);
  ASSERT_EQ(qnt_linear_dynamic(nullptr, x.t, w.t, nullptr, d.d, y.t), QNT_OK);
  const auto got = qnt_test::floats_of(y.t);
  const float s = 2.0f / 127.0f;
  EXPECT_EQ(got[0], static_cast<float>(0 - 64) * s);   // -1 -> q 0 (clamped at 0)
  EXPECT_EQ(got[1], static_cast<float>(127 - 64) * s);  // 1 -> q 64 + 64 = 128 -> 127
}

struct ConvCase {
  int64_t N, C, H, W, M, KH, KW, stride, pad, dil, groups;
  // Along W, where set (else stride, dil and pad): the depthwise kernels by rows take
  // stride 1 and dilation 1 along W whatever they are along H.
  int64_t stride_w = 0, dil_w = 0, pad_w = -1;
};

// The case's strides, pads, dilations and groups, and the layout.
void set_conv(Desc &d, const ConvCase &cc, int layout) {
  d.set(QNT_OP_STRIDE_H, cc.stride);
  d.set(QNT_OP_STRIDE_W, cc.stride_w > 0 ? cc.stride_w : cc.stride);
  for (qnt_op_option k : {QNT_OP_PAD_TOP, QNT_OP_PAD_BOTTOM}) d.set(k, cc.pad);
  d.set(QNT_OP_PAD_LEFT, cc.pad_w >= 0 ? cc.pad_w : cc.pad);
  d.set(QNT_OP_PAD_RIGHT, cc.pad_w >= 0 ? cc.pad_w + 1 : cc.pad);
  d.set(QNT_OP_DILATION_H, cc.dil);
  d.set(QNT_OP_DILATION_W, cc.dil_w > 0 ? cc.dil_w : cc.dil);
  d.set(QNT_OP_GROUPS, cc.groups);
  d.set(QNT_OP_LAYOUT, layout);
}

std::vector<int64_t> conv_x_shape(const ConvCase &cc, int layout) {
  return layout == QNT_LAYOUT_NHWC ? std::vector<int64_t>{cc.N, cc.H, cc.W, cc.C}
                                   : std::vector<int64_t>{cc.N, cc.C, cc.H, cc.W};
}

// One random convolution of the case's shape (dtypes, zero points, output mode, bias, relu
// from rng and iter) through the one-shot and the prepared call: every fast set at 1, 2 and 3
// threads against the reference. symmetric: weight zero points 0 for i8, 128 for u8.
// kind >= 0 sets the output (kind % 4), the bias (kind / 4 % 3) and relu (kind / 12 % 2)
// instead of iter.
void check_conv_case(const ConvCase &cc, int layout, int iter, std::mt19937 &rng, bool symmetric,
                     WKind wk = WKind::Bytes, int kind = -1) {
  const qnt_dtype xd = pick_int8(rng), wd = wkind_dtype(wk, rng);
  if (wk != WKind::Bytes) symmetric = true;
  const int how = kind >= 0 ? kind : iter;
  const int out = how % 4;  // 0 i32, 1 u8, 2 i8, 3 f32
  const int bias_kind = (how / 4) % 3;  // none, i32, f32 (not with i32 y)
  const int relu = kind >= 0 ? kind / 12 % 2 : iter % 2;
  QP xq, wq, yq;
  per_tensor(xq, xd, pick_scale(rng), pick_zp(rng, xd));
  if (symmetric) {  // zero points 0 (i8) or 128 (u8): b' = w - zw needs no row sums
    std::vector<float> ws(static_cast<size_t>(cc.M));
    for (auto &v : ws) v = pick_scale(rng);
    const std::vector<int32_t> wz(static_cast<size_t>(cc.M), wd == QNT_DTYPE_U8 ? 128 : 0);
    if (wk != WKind::Bytes && iter % 2 == 0)
      per_tensor(wq, wd, pick_scale(rng), 0);
    else
      ASSERT_EQ(qnt_qparams_create_per_axis(wd, 0, static_cast<size_t>(cc.M), ws.data(),
                                            wz.data(), &wq.p),
                QNT_OK);
  } else {
    weight_qparams(wq, rng, wd, 0, cc.M, iter % 3 != 0);
  }
  const qnt_dtype yd = out == 0   ? QNT_DTYPE_I32
                       : out == 1 ? QNT_DTYPE_U8
                       : out == 2 ? QNT_DTYPE_I8
                                  : QNT_DTYPE_F32;
  if (out == 1 || out == 2) per_tensor(yq, yd, pick_scale(rng), pick_zp(rng, yd));
  Desc d;
  set_conv(d, cc, layout);
  if (out != 0) d.set(QNT_OP_FUSE_RELU, relu);
  const std::vector<int64_t> xs = conv_x_shape(cc, layout);
  const auto xv = random_bytes(rng, static_cast<size_t>(cc.N * cc.C * cc.H * cc.W), iter % 5 == 0);
  const auto wcount = static_cast<size_t>(cc.M * (cc.C / cc.groups) * cc.KH * cc.KW);
  const auto wv = wk == WKind::Bytes ? random_bytes(rng, wcount, iter % 5 == 0)
                                     : ternary_weights(rng, wcount, wk);
  T x, w, y, bias;
  make_raw(x, xd, xs, xq.p, xv.data(), xv.size());
  make_raw(w, wd, {cc.M, cc.C / cc.groups, cc.KH, cc.KW}, wq.p, wv.data(), wv.size());
  int64_t ys[4];
  ASSERT_EQ(qnt_conv2d_output_shape(x.t, w.t, d.d, ys, 4), QNT_OK) << qnt_last_error_message();
  make_q(y, yd, {ys[0], ys[1], ys[2], ys[3]}, yq.p);
  const int64_t bs[1] = {cc.M};
  if (bias_kind == 1 || (bias_kind == 2 && out == 0)) {
    std::vector<int32_t> bi(static_cast<size_t>(cc.M));
    for (auto &v : bi) v = std::uniform_int_distribution<int32_t>(-5000, 5000)(rng);
    ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I32, bs, 1, nullptr, bi.data(),
                                          4 * bi.size(), &bias.t),
              QNT_OK);
  } else if (bias_kind == 2) {
    std::vector<float> bf(static_cast<size_t>(cc.M));
    for (auto &v : bf) v = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
    ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, bs, 1, nullptr, bf.data(),
                                          4 * bf.size(), &bias.t),
              QNT_OK);
  }
  const std::string what = "conv case " + std::to_string(iter);
  compare_all(what, y.t, [&](qnt_context *c) {
    return qnt_qconv2d(c, x.t, w.t, bias.t, d.d, y.t);
  });
  compare_all(what + " prepared", y.t, [&](qnt_context *c) {
    Prep p;
    qnt_status s = qnt_prepared_create_conv2d(c, w.t, bias.t, d.d, &p.p);
    if (s != QNT_OK) return s;
    return qnt_prepared_run(c, p.p, x.t, y.t);
  });
}

TEST(Gemm, ConvRandom) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1},   {2, 4, 9, 7, 8, 3, 3, 2, 1, 1, 2},
      {1, 8, 6, 6, 8, 3, 3, 1, 2, 2, 8},   {1, 16, 10, 10, 17, 3, 3, 1, 1, 1, 1},
      {1, 17, 5, 9, 33, 1, 1, 1, 0, 1, 1}, {2, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1},
      {1, 6, 12, 5, 6, 5, 3, 2, 2, 1, 3},  {1, 32, 9, 9, 32, 3, 3, 1, 1, 1, 32},
      {3, 2, 4, 4, 65, 2, 2, 1, 0, 1, 1},  {1, 12, 13, 11, 24, 3, 3, 3, 1, 2, 4},
      // depthwise with whole chunks of 64 channels and a tail (the direct kernel)
      {2, 100, 7, 6, 100, 3, 3, 1, 1, 1, 100}, {1, 128, 5, 5, 128, 3, 3, 2, 1, 1, 128},
      {1, 64, 6, 7, 64, 5, 5, 1, 2, 2, 64},
  };
  std::mt19937 rng(5);
  int iter = 0;
  for (const ConvCase &cc : cases)
    for (int layout : {QNT_LAYOUT_NCHW, QNT_LAYOUT_NHWC}) check_conv_case(cc, layout, ++iter, rng, false);
}

// Shapes that the direct convolution takes (kernels with a conv tile: symmetric weights, one
// group, C a multiple of 4, M of 64): regions of pixels with the same taps inside the image,
// each tile running only those (its sums starting from their zero-point term), in lines along
// W or, for edge columns taller than a tile, along H; strides, dilations, unequal pads, 5 x 5
// kernels with two border ranges on each side, 1 x 1, two n-tiles, a kernel taller than wide,
// batches; the same arithmetic as the reference's.
TEST(Gemm, ConvDirect) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {2, 16, 10, 30, 64, 3, 3, 1, 1, 1, 1}, {1, 8, 9, 24, 64, 3, 3, 2, 1, 1, 1},
      {1, 12, 12, 40, 64, 3, 3, 1, 2, 2, 1}, {1, 20, 6, 6, 64, 1, 1, 1, 0, 1, 1},
      {1, 4, 8, 62, 128, 3, 3, 1, 1, 1, 1},  {3, 8, 7, 50, 64, 5, 3, 1, 1, 1, 1},
      {1, 8, 20, 9, 64, 3, 3, 1, 1, 1, 1},   {1, 12, 14, 14, 128, 5, 5, 1, 2, 1, 1},
      {2, 16, 17, 13, 64, 3, 3, 2, 1, 1, 1, 0, 0, 0},  // pads left 0, right 1
      {1, 8, 15, 16, 64, 3, 3, 1, 2, 2, 1},  {1, 4, 11, 12, 64, 3, 5, 1, 1, 1, 1, 0, 0, 2},
      // one output pixel, stride_w 20 past a 3-column padded row: the 4-row tile's dropped rows
      // read 3 strides on (the padded copy's slack)
      {1, 64, 1, 2, 64, 1, 2, 1, 0, 1, 1, 20, 1, 0},
  };
  std::mt19937 rng(29);
  int iter = 0;
  for (const ConvCase &cc : cases)
    for (int layout : {QNT_LAYOUT_NCHW, QNT_LAYOUT_NHWC})
      for (int rep = 0; rep < 2; ++rep) check_conv_case(cc, layout, ++iter, rng, true);
}

// The direct convolution with its epilogue folded into the next tile (a kernel's conv_fused:
// u8 and i8 outputs without relu, an f32 bias or none): rows of 6 and 4-row tiles, tiles with
// fewer taps than rows (5 x 5 borders; 1 x 1 and 1 x 2 kernels, whose jobs are mostly left to
// the separate epilogue), two and four n-tiles (jobs of the previous n-tile's channels), batches; and the
// same shapes with relu or an i32 bias (the separate epilogue), all against the reference.
TEST(Gemm, ConvDirectFusedEpilogue) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {2, 16, 10, 30, 64, 3, 3, 1, 1, 1, 1}, {1, 12, 14, 14, 128, 5, 5, 1, 2, 1, 1},
      {1, 20, 6, 26, 64, 1, 1, 1, 0, 1, 1},  {1, 8, 9, 9, 256, 3, 3, 1, 1, 1, 1},
      {2, 4, 7, 11, 64, 1, 2, 1, 0, 1, 1},   {1, 64, 8, 8, 64, 3, 3, 2, 1, 1, 1},
  };
  std::mt19937 rng(41);
  int iter = 0;
  // u8 / i8 output, no bias (mode 1) or f32 (mode 3), no relu; then relu, and an i32 bias.
  const int kinds[] = {1, 2, 9, 10, 13, 14, 5};
  for (const ConvCase &cc : cases)
    for (int kind : kinds) check_conv_case(cc, QNT_LAYOUT_NHWC, ++iter, rng, true, WKind::Bytes, kind);
}

// Ternary and binary weights (values -1, 0, +1 as i8, or the packed dtypes, which the ops
// widen to those i8 values): the sets with a ternary GEMM kernel (AVX2's vpmaddubsw tile) take
// them, and must give the reference's bytes. K from 9 to over 1000 (int16 sums widened after 64
// groups of 4, and a tail), runs of all +1 or all -1 weights against extreme activations,
// grouped, strided and depthwise shapes.
TEST(Gemm, ConvTernaryWeights) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1},     {2, 64, 9, 9, 64, 3, 3, 1, 1, 1, 1},
      {1, 130, 6, 5, 17, 3, 3, 2, 1, 1, 1},  {1, 16, 10, 10, 33, 3, 3, 1, 1, 1, 1},
      {1, 12, 13, 11, 24, 3, 3, 3, 1, 2, 4}, {1, 8, 6, 6, 8, 3, 3, 1, 2, 2, 8},
      {2, 300, 4, 4, 20, 2, 2, 1, 0, 1, 1},
  };
  std::mt19937 rng(61);
  int iter = 0;
  // (A named array: iterating a braced list of the enum gave garbage values under the aarch64
  // cross-compiler, GCC 12 -O2.)
  static const WKind kinds[] = {WKind::TernaryI8, WKind::Ternary, WKind::Binary};
  for (WKind wk : kinds)
    for (const ConvCase &cc : cases)
      for (int layout : {QNT_LAYOUT_NCHW, QNT_LAYOUT_NHWC}) check_conv_case(cc, layout, ++iter, rng, true, wk);
}

// Depthwise with 8-bit weights whose w - zw all fit in int8 (symmetric i8 weights, or zero
// points near the middle of a narrowed range): the sets with a depthwise8 kernel (VNNI) take
// them, the rest the int16 kernel; every set must give the reference's bytes. Taps not a
// multiple of 4, channels with tails, pads, strides, dilations; every output mode, with finite,
// infinite and NaN f32 biases (the vector epilogue skips its NaN handling only when every bias
// and multiplier is finite).
TEST(Gemm, DepthwiseEightBitWeights) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {2, 100, 7, 6, 100, 3, 3, 1, 1, 1, 100}, {1, 64, 9, 9, 64, 3, 3, 2, 1, 1, 64},
      {1, 130, 5, 6, 130, 5, 5, 1, 2, 1, 130}, {1, 16, 6, 6, 16, 1, 1, 1, 0, 1, 16},
      {1, 72, 8, 7, 72, 2, 3, 1, 1, 2, 72},    {1, 256, 4, 4, 256, 3, 3, 1, 1, 1, 256},
  };
  std::mt19937 rng(23);
  int iter = 0;
  for (const ConvCase &cc : cases) {
    for (int variant = 0; variant < 6; ++variant) {
      ++iter;
      const int layout = variant % 2 == 0 ? QNT_LAYOUT_NHWC : QNT_LAYOUT_NCHW;
      const qnt_dtype xd = variant % 3 == 0 ? QNT_DTYPE_I8 : QNT_DTYPE_U8;
      // Weights: i8 with zero points 0 (extremes included: -128 fits), or u8 within
      // [zw - 128, zw + 127] of their channel's zero point zw.
      const bool symmetric = variant < 3;
      const qnt_dtype wd = symmetric ? QNT_DTYPE_I8 : QNT_DTYPE_U8;
      const size_t wn = static_cast<size_t>(cc.M * cc.KH * cc.KW);
      std::vector<uint8_t> wv = random_bytes(rng, wn, iter % 4 == 0);
      std::vector<float> ws(static_cast<size_t>(cc.M));
      std::vector<int32_t> wz(static_cast<size_t>(cc.M), 0);
      for (int64_t m = 0; m < cc.M; ++m) {
        ws[static_cast<size_t>(m)] = pick_scale(rng);
        if (!symmetric) {
          const int32_t z = std::uniform_int_distribution<int32_t>(0, 255)(rng);
          wz[static_cast<size_t>(m)] = z;
          std::uniform_int_distribution<int32_t> pick(std::max(0, z - 128), std::min(255, z + 127));
          for (int64_t t = 0; t < cc.KH * cc.KW; ++t)
            wv[static_cast<size_t>(m * cc.KH * cc.KW + t)] = static_cast<uint8_t>(pick(rng));
        }
      }
      QP xq, wq, yq;
      per_tensor(xq, xd, pick_scale(rng), pick_zp(rng, xd));
      ASSERT_EQ(qnt_qparams_create_per_axis(wd, 0, static_cast<size_t>(cc.M), ws.data(),
                                            wz.data(), &wq.p),
                QNT_OK);
      const int out = iter % 4;  // 0 i32, 1 u8, 2 i8, 3 f32
      const qnt_dtype yd = out == 0   ? QNT_DTYPE_I32
                           : out == 1 ? QNT_DTYPE_U8
                           : out == 2 ? QNT_DTYPE_I8
                                      : QNT_DTYPE_F32;
      // An f32 bias in odd cases with an 8-bit or f32 y, every third one with an infinity and a
      // NaN in it; y's zero point then off qmin (NaN -> zy must differ from a clamp to qmin).
      const bool f32_bias = out != 0 && iter % 2 == 1, nan_bias = f32_bias && iter % 3 == 1;
      if (out == 1 || out == 2)
        per_tensor(yq, yd, pick_scale(rng), nan_bias ? 3 : pick_zp(rng, yd));
      Desc d;
      set_conv(d, cc, layout);
      if (out != 0) d.set(QNT_OP_FUSE_RELU, iter % 3 == 0);
      const std::vector<int64_t> xs = conv_x_shape(cc, layout);
      const auto xv = random_bytes(rng, static_cast<size_t>(cc.N * cc.C * cc.H * cc.W), iter % 5 == 0);
      T x, w, y, bias;
      make_raw(x, xd, xs, xq.p, xv.data(), xv.size());
      make_raw(w, wd, {cc.M, 1, cc.KH, cc.KW}, wq.p, wv.data(), wv.size());
      int64_t ys[4];
      ASSERT_EQ(qnt_conv2d_output_shape(x.t, w.t, d.d, ys, 4), QNT_OK) << qnt_last_error_message();
      make_q(y, yd, {ys[0], ys[1], ys[2], ys[3]}, yq.p);
      const int64_t bs[1] = {cc.M};
      if (f32_bias) {
        std::vector<float> bf(static_cast<size_t>(cc.M));
        for (auto &v : bf) v = std::uniform_real_distribution<float>(-3.0f, 3.0f)(rng);
        if (nan_bias) {
          bf[0] = std::numeric_limits<float>::infinity();
          bf[bf.size() - 1] = std::numeric_limits<float>::quiet_NaN();
        }
        ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, bs, 1, nullptr, bf.data(),
                                              4 * bf.size(), &bias.t),
                  QNT_OK);
      } else if (iter % 2 == 1) {
        std::vector<int32_t> bi(static_cast<size_t>(cc.M));
        for (auto &v : bi) v = std::uniform_int_distribution<int32_t>(-5000, 5000)(rng);
        ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_I32, bs, 1, nullptr, bi.data(),
                                              4 * bi.size(), &bias.t),
                  QNT_OK);
      }
      const std::string what = "depthwise case " + std::to_string(iter);
      compare_all(what, y.t, [&](qnt_context *c) {
        Prep p;
        qnt_status s = qnt_prepared_create_conv2d(c, w.t, bias.t, d.d, &p.p);
        if (s != QNT_OK) return s;
        return qnt_prepared_run(c, p.p, x.t, y.t);
      });
    }
  }
}

// Depthwise by rows (the sets with GemmDwRowFn kernels: AVX2, AVX-512 VNNI), taken at stride 1
// and dilation 1 along W: strides and dilations along H, pads unequal (right = left + 1) and
// wider than the kernel's reach, kernels 1 to 7 wide, one channel to 200 (block tails), widths
// across the register blocks, batches; symmetric weights (the VNNI form: w - zw in int8) and
// any zero points (the int16 form; VNNI sets fall back to the kernel per pixel).
TEST(Gemm, DepthwiseRows) {
  if (fast_isas().empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  const ConvCase cases[] = {
      {1, 48, 9, 20, 48, 3, 3, 2, 1, 1, 48, 1},        {2, 80, 8, 15, 80, 3, 3, 1, 2, 2, 80, 1, 1},
      {1, 33, 5, 30, 33, 3, 4, 1, 1, 1, 33, 0, 0, 3},  {1, 200, 6, 14, 200, 3, 7, 1, 3, 1, 200},
      {3, 1, 5, 9, 1, 3, 3, 1, 1, 1, 1},               {1, 64, 3, 40, 64, 1, 5, 1, 0, 1, 64, 0, 0, 2},
      {1, 17, 10, 12, 17, 5, 5, 1, 0, 1, 17},          {1, 130, 4, 25, 130, 2, 2, 3, 0, 1, 130, 1},
      // Rows wider than the ring budget, cut into bands of columns (VNNI from about 24
      // outputs, AVX2 from about 96), with KW - 1 columns of overlap and a short last band.
      {1, 70, 7, 61, 70, 3, 7, 1, 3, 1, 70},          {1, 20, 4, 130, 20, 3, 3, 2, 1, 1, 20, 1, 1},
      {1, 24, 8, 110, 24, 3, 3, 1, 2, 2, 24, 1, 1, 1},
  };
  std::mt19937 rng(41);
  int iter = 0;
  for (const ConvCase &cc : cases)
    for (int layout : {QNT_LAYOUT_NHWC, QNT_LAYOUT_NCHW})
      for (bool symmetric : {true, false}) check_conv_case(cc, layout, ++iter, rng, symmetric);
}

// NHWC is NCHW transposed: the same values on the reference kernels.
TEST(Gemm, ConvLayoutsAgree) {
  const int64_t N = 2, C = 6, H = 5, W = 7, M = 4;
  std::mt19937 rng(11);
  const auto xv = random_bytes(rng, static_cast<size_t>(N * C * H * W), false);
  const auto wv = random_bytes(rng, static_cast<size_t>(M * C * 9), false);
  std::vector<uint8_t> xt(xv.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          xt[static_cast<size_t>(((n * H + h) * W + w) * C + c)] =
              xv[static_cast<size_t>(((n * C + c) * H + h) * W + w)];
  QP xq, wq;
  per_tensor(xq, QNT_DTYPE_U8, 0.1f, 3);
  per_tensor(wq, QNT_DTYPE_I8, 0.1f, -2);
  for (qnt_isa isa : {QNT_ISA_REFERENCE, QNT_ISA_NATIVE}) {
    Ctx c(isa, 2);
    T x1, x2, w, y1, y2;
    make_raw(x1, QNT_DTYPE_U8, {N, C, H, W}, xq.p, xv.data(), xv.size());
    make_raw(x2, QNT_DTYPE_U8, {N, H, W, C}, xq.p, xt.data(), xt.size());
    make_raw(w, QNT_DTYPE_I8, {M, C, 3, 3}, wq.p, wv.data(), wv.size());
    make_q(y1, QNT_DTYPE_I32, {N, M, H, W}, nullptr);
    make_q(y2, QNT_DTYPE_I32, {N, H, W, M}, nullptr);
    Desc d1, d2;
    for (Desc *d : {&d1, &d2})
      for (qnt_op_option k : {QNT_OP_PAD_TOP, QNT_OP_PAD_LEFT, QNT_OP_PAD_BOTTOM, QNT_OP_PAD_RIGHT})
        d->set(k, 1);
    d2.set(QNT_OP_LAYOUT, QNT_LAYOUT_NHWC);
    ASSERT_EQ(qnt_qconv2d(c.c, x1.t, w.t, nullptr, d1.d, y1.t), QNT_OK);
    ASSERT_EQ(qnt_qconv2d(c.c, x2.t, w.t, nullptr, d2.d, y2.t), QNT_OK);
    const auto a = qnt_test::values_of<int32_t>(y1.t), b = qnt_test::values_of<int32_t>(y2.t);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t p = 0; p < H * W; ++p)
          ASSERT_EQ(a[static_cast<size_t>((n * M + m) * H * W + p)],
                    b[static_cast<size_t>((n * H * W + p) * M + m)]);
  }
}

TEST(Gemm, ConvF32BiasNeedsFloatOrQuantizedY) {
  QP xq, wq;
  per_tensor(xq, QNT_DTYPE_U8, 0.1f, 3);
  per_tensor(wq, QNT_DTYPE_I8, 0.1f, 0);
  const std::vector<uint8_t> xv(2 * 3 * 3, 7), wv(2 * 2, 1);
  const std::vector<float> bv = {0.5f, -0.5f};
  T x, w, y, bias;
  make_raw(x, QNT_DTYPE_U8, {1, 2, 3, 3}, xq.p, xv.data(), xv.size());
  make_raw(w, QNT_DTYPE_I8, {2, 2, 1, 1}, wq.p, wv.data(), wv.size());
  make_f32(bias, {2}, bv);
  make_q(y, QNT_DTYPE_I32, {1, 2, 3, 3}, nullptr);
  EXPECT_EQ(qnt_qconv2d(nullptr, x.t, w.t, bias.t, nullptr, y.t), QNT_ERR_DTYPE_MISMATCH);
  T yf;
  make_q(yf, QNT_DTYPE_F32, {1, 2, 3, 3}, nullptr);
  ASSERT_EQ(qnt_qconv2d(nullptr, x.t, w.t, bias.t, nullptr, yf.t), QNT_OK);
  // acc = 2 * (7 - 3) = 8; y = 8 * (0.1 * 0.1) + bias.
  const auto got = qnt_test::floats_of(yf.t);
  EXPECT_EQ(got[0], 8.0f * (0.1f * 0.1f) + 0.5f);
  EXPECT_EQ(got[9], 8.0f * (0.1f * 0.1f) - 0.5f);
}

}  // namespace

// f32 output: a NaN bias (any payload, any sign) gives the canonical quiet NaN on every kernel
// set and thread count, as the header's NaN rule says (the CUDA kernels make their own NaN).
TEST(Gemm, NaNBiasGivesTheCanonicalNaN) {
  const int64_t M = 3, K = 5, N = 19;
  std::vector<int8_t> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(K * N));
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<int8_t>(i * 7 % 23 - 11);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<int8_t>(i * 5 % 31 - 15);
  std::vector<float> bias(static_cast<size_t>(N), 0.25f);
  const uint32_t nans[] = {0x7FC00001u, 0xFFFFFFFFu, 0xFFC00000u, 0x7FA00000u};
  for (size_t j = 0; j < 4; ++j) std::memcpy(&bias[j * 5], &nans[j], 4);
  QP qa, qb;
  per_tensor(qa, QNT_DTYPE_I8, 0.5f, 1);
  per_tensor(qb, QNT_DTYPE_I8, 0.25f, -2);
  T a, b, tb;
  make_raw(a, QNT_DTYPE_I8, {M, K}, qa.p, av.data(), av.size());
  make_raw(b, QNT_DTYPE_I8, {K, N}, qb.p, bv.data(), bv.size());
  make_f32(tb, {N}, bias);
  std::vector<qnt_isa> isas = fast_isas();
  isas.insert(isas.begin(), QNT_ISA_REFERENCE);
  for (qnt_isa isa : isas)
    for (int threads = 1; threads <= 3; ++threads) {
      Ctx c(isa, threads);
      T y;
      make_q(y, QNT_DTYPE_F32, {M, N}, nullptr);
      ASSERT_EQ(qnt_qmatmul(c.c, a.t, b.t, tb.t, y.t), QNT_OK) << qnt_last_error_message();
      const std::vector<uint8_t> got = bytes_of(y.t);
      for (int64_t i = 0; i < M * N; ++i) {
        uint32_t bits;
        std::memcpy(&bits, got.data() + 4 * i, 4);
        const bool nan_column = (i % N) % 5 == 0 && (i % N) / 5 < 4;
        if (nan_column)
          EXPECT_EQ(bits, 0x7FC00000u) << qnt_isa_name(isa) << " threads " << threads << " at " << i;
        else
          EXPECT_NE(bits & 0x7F800000u, 0x7F800000u) << qnt_isa_name(isa) << " at " << i;
      }
    }
}
