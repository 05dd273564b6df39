// Every fast kernel against the reference, bit for bit, through the public ABI: each context
// capped at one kernel set (qnt_context_set_max_isa), every dtype, every granularity (and so
// both run kinds), the sizes around vector and byte boundaries, edge values, unaligned wrapped
// memory, several thread counts and every rounding mode.
#include "helpers.hpp"
#include "kernel_sets.hpp"
#include "kernels/registry.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <algorithm>
#include <cfenv>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using qnt_test::QP;
using qnt_test::T;

namespace {

using qnt_test::Ctx;

// The kernel sets this machine runs above the reference (each capped context differs).
std::vector<qnt_isa> fast_isas() {
  return qnt_test::runnable_isas({QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_NEON});
}

const qnt_dtype kDTypes[] = {QNT_DTYPE_I8,  QNT_DTYPE_U8,  QNT_DTYPE_I16,    QNT_DTYPE_U16,
                             QNT_DTYPE_I32, QNT_DTYPE_I4,  QNT_DTYPE_U4,     QNT_DTYPE_NF4,
                             QNT_DTYPE_BINARY, QNT_DTYPE_TERNARY, QNT_DTYPE_LOG4,
                             QNT_DTYPE_LOG8};

bool fixed_zero(qnt_dtype d) {
  return d == QNT_DTYPE_NF4 || d == QNT_DTYPE_BINARY || d == QNT_DTYPE_TERNARY ||
         d == QNT_DTYPE_LOG4 || d == QNT_DTYPE_LOG8;
}

void range_of(qnt_dtype d, int64_t &lo, int64_t &hi) {
  switch (d) {
    case QNT_DTYPE_I8: lo = -128; hi = 127; return;
    case QNT_DTYPE_U8: lo = 0; hi = 255; return;
    case QNT_DTYPE_I16: lo = -32768; hi = 32767; return;
    case QNT_DTYPE_U16: lo = 0; hi = 65535; return;
    case QNT_DTYPE_I32: lo = INT32_MIN; hi = INT32_MAX; return;
    case QNT_DTYPE_I4: lo = -8; hi = 7; return;
    case QNT_DTYPE_U4: lo = 0; hi = 15; return;
    default: lo = hi = 0; return;
  }
}

// A granularity over a shape built around a length n.
struct Case {
  const char *name;
  std::vector<int64_t> shape;
  qnt_granularity g;
  int64_t axis, block;
  size_t groups;
};

std::vector<Case> cases_for(int64_t n) {
  std::vector<Case> v;
  v.push_back({"per_tensor", {n}, QNT_GRANULARITY_PER_TENSOR, 0, 0, 1});
  if (n == 0) return v;
  v.push_back({"per_axis_inner", {2, 3, n}, QNT_GRANULARITY_PER_AXIS, 1, 0, 3});
  v.push_back({"per_axis_last", {3, n}, QNT_GRANULARITY_PER_AXIS, 1, 0, static_cast<size_t>(n)});
  const int64_t blocks = (n + 31) / 32;
  v.push_back({"per_block_last", {2, n}, QNT_GRANULARITY_PER_BLOCK, 1, 32,
               static_cast<size_t>(2 * blocks)});
  v.push_back({"per_block_inner", {5, n}, QNT_GRANULARITY_PER_BLOCK, 0, 2,
               static_cast<size_t>(3 * n)});
  // Blocks of 48: threads' tasks (multiples of 64 elements) then start inside a block.
  v.push_back({"per_block_last48", {3, n}, QNT_GRANULARITY_PER_BLOCK, 1, 48,
               static_cast<size_t>(3 * ((n + 47) / 48))});
  return v;
}

// Scales: powers of two (exact ties), ordinary values, and a subnormal one (quotients overflow).
std::vector<float> scales_for(std::mt19937 &rng, size_t count) {
  std::uniform_real_distribution<float> u(1e-3f, 4.0f);
  std::vector<float> s(count);
  for (size_t i = 0; i < count; ++i) {
    switch (i % 5) {
      case 0: s[i] = 0.25f; break;
      case 1: s[i] = u(rng); break;
      case 2: s[i] = 1.0f / 3.0f; break;
      case 3: s[i] = i % 10 == 3 ? 1e-40f : u(rng); break;
      default: s[i] = 0.1f; break;
    }
  }
  return s;
}

// Random values with the edges mixed in: exact ties of the scale 0.25, values a step either side
// of a tie for scale 1/3 and 0.1 (where x / s and x * (1 / s) round differently), saturation,
// +-0, subnormals, NaN and +-inf.
std::vector<float> data_for(std::mt19937 &rng, size_t n, float spread) {
  std::normal_distribution<float> nd(0.0f, spread);
  std::vector<float> x(n);
  const float edges[] = {0.0f,
                         -0.0f,
                         std::numeric_limits<float>::quiet_NaN(),
                         -std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::denorm_min(),
                         -std::numeric_limits<float>::denorm_min(),
                         FLT_MIN,
                         FLT_MAX,
                         -FLT_MAX,
                         1e9f,
                         -1e9f,
                         3e4f,
                         -7e4f};
  std::uniform_int_distribution<int> k(-300, 300);
  for (size_t i = 0; i < n; ++i) {
    switch (i % 9) {
      case 0: x[i] = edges[(i / 9) % (sizeof edges / sizeof edges[0])]; break;
      case 1: x[i] = (static_cast<float>(k(rng)) + 0.5f) * 0.25f; break;  // a tie for 0.25
      case 2: {
        const float s = (i / 9) % 2 ? 1.0f / 3.0f : 0.1f;
        const float t = (static_cast<float>(k(rng)) + 0.5f) * s;
        x[i] = std::nextafter(t, (i / 18) % 2 ? INFINITY : -INFINITY);
        break;
      }
      case 3: x[i] = static_cast<float>(k(rng)) * 0.5f; break;
      case 4: {  // a float either side of a log-domain boundary 2^(m + 1/2) (the log dtypes)
        const float root2 = (i / 9) % 2 ? 1.41421354f : 1.41421366f;  // just below, just above
        x[i] = std::ldexp((i / 18) % 2 ? -root2 : root2, k(rng) % 12 - 8);
        break;
      }
      default: x[i] = nd(rng); break;
    }
  }
  return x;
}

void make_qparams(QP &qp, qnt_dtype d, const Case &c, std::mt19937 &rng) {
  const std::vector<float> s = scales_for(rng, c.groups);
  std::vector<int32_t> z(c.groups, 0);
  if (!fixed_zero(d)) {
    int64_t lo = 0, hi = 0;
    range_of(d, lo, hi);
    if (d == QNT_DTYPE_I32) {
      lo = -1000000;
      hi = 1000000;
    }
    std::uniform_int_distribution<int64_t> zd(lo, hi);
    for (size_t i = 0; i < c.groups; ++i)
      z[i] = static_cast<int32_t>(i % 4 == 0 ? lo : i % 4 == 1 ? hi : zd(rng));
    if (d == QNT_DTYPE_I32 && c.groups > 2) {
      z[0] = INT32_MIN;  // extreme zero points: the saturating add needs 64 bits
      z[1] = INT32_MAX;
    }
  }
  qnt_status st = QNT_OK;
  switch (c.g) {
    case QNT_GRANULARITY_PER_TENSOR:
      st = qnt_qparams_create_per_tensor(d, s[0], z[0], &qp.p);
      break;
    case QNT_GRANULARITY_PER_AXIS:
      st = qnt_qparams_create_per_axis(d, c.axis, c.groups, s.data(), z.data(), &qp.p);
      break;
    default:
      st = qnt_qparams_create_per_block(d, c.axis, c.block, c.groups, s.data(), z.data(), &qp.p);
      break;
  }
  ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
}

size_t byte_size(qnt_dtype d, size_t n) {
  switch (d) {
    case QNT_DTYPE_I8: case QNT_DTYPE_U8: case QNT_DTYPE_LOG8: return n;
    case QNT_DTYPE_I16: case QNT_DTYPE_U16: return 2 * n;
    case QNT_DTYPE_I32: case QNT_DTYPE_F32: return 4 * n;
    case QNT_DTYPE_BINARY: return (n + 7) / 8;
    case QNT_DTYPE_TERNARY: return (n + 3) / 4;
    default: return (n + 1) / 2;
  }
}

size_t count_of(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

// Quantizes x with ctx into a wrapped buffer that starts `shift` bytes past an aligned address
// (a multiple of the element size for 16- and 32-bit dtypes), x itself wrapped one float off
// alignment; returns the output bytes.
std::vector<uint8_t> quantize_with(qnt_context *ctx, qnt_dtype d, const Case &c,
                                   const qnt_qparams *qp, const std::vector<float> &x,
                                   size_t shift) {
  const size_t n = count_of(c.shape);
  std::vector<float> xin(n + 1);
  std::copy(x.begin(), x.end(), xin.begin() + 1);
  const size_t bytes = byte_size(d, n);
  std::vector<uint8_t> out(bytes + 64, 0xA5);
  T tx, ty;
  EXPECT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, c.shape.data(), c.shape.size(), nullptr, xin.data() + 1,
                            n * sizeof(float), &tx.t),
            QNT_OK)
      << qnt_last_error_message();
  EXPECT_EQ(qnt_tensor_wrap(d, c.shape.data(), c.shape.size(), qp, out.data() + shift, bytes,
                            &ty.t),
            QNT_OK)
      << qnt_last_error_message();
  EXPECT_EQ(qnt_quantize(ctx, tx.t, ty.t), QNT_OK) << qnt_last_error_message();
  // Nothing outside the tensor's bytes was touched.
  for (size_t i = 0; i < shift; ++i) EXPECT_EQ(out[i], 0xA5);
  for (size_t i = shift + bytes; i < out.size(); ++i) EXPECT_EQ(out[i], 0xA5);
  return std::vector<uint8_t>(out.begin() + static_cast<std::ptrdiff_t>(shift),
                              out.begin() + static_cast<std::ptrdiff_t>(shift + bytes));
}

std::vector<uint32_t> dequantize_with(qnt_context *ctx, qnt_dtype d, const Case &c,
                                      const qnt_qparams *qp, const std::vector<uint8_t> &q,
                                      size_t shift) {
  const size_t n = count_of(c.shape);
  std::vector<uint8_t> qin(q.size() + 64);
  if (!q.empty()) std::memcpy(qin.data() + shift, q.data(), q.size());
  std::vector<float> out(n + 1, 0.0f);
  T tq, ty;
  EXPECT_EQ(qnt_tensor_wrap(d, c.shape.data(), c.shape.size(), qp, qin.data() + shift, q.size(),
                            &tq.t),
            QNT_OK)
      << qnt_last_error_message();
  EXPECT_EQ(qnt_tensor_wrap(QNT_DTYPE_F32, c.shape.data(), c.shape.size(), nullptr,
                            out.data() + 1, n * sizeof(float), &ty.t),
            QNT_OK);
  EXPECT_EQ(qnt_dequantize(ctx, tq.t, ty.t), QNT_OK) << qnt_last_error_message();
  std::vector<uint32_t> bits(n);
  if (n) std::memcpy(bits.data(), out.data() + 1, n * sizeof(float));
  return bits;
}

size_t shift_for(qnt_dtype d) {
  switch (d) {
    case QNT_DTYPE_I16: case QNT_DTYPE_U16: return 2;
    case QNT_DTYPE_I32: return 4;
    default: return 3;
  }
}

const int64_t kSizes[] = {0, 1, 7, 15, 16, 17, 63, 64, 65, 1023};

}  // namespace

TEST(Kernels, ContextListsTheKernelsItChose) {
  Ctx ref(QNT_ISA_REFERENCE, 1);
  const char *list = nullptr;
  ASSERT_EQ(qnt_context_kernels(ref.c, &list), QNT_OK);
  ASSERT_NE(list, nullptr);
  EXPECT_NE(std::strstr(list, "quantize.i8.shared=ref\n"), nullptr) << list;
  EXPECT_EQ(std::strstr(list, "=avx2"), nullptr) << list;
  EXPECT_NE(std::strstr(qnt_build_info(), "chosen_kernels="), nullptr);
  for (qnt_isa isa : fast_isas()) {
    Ctx fast(isa, 1);
    ASSERT_EQ(qnt_context_kernels(fast.c, &list), QNT_OK);
    std::string name = qnt_isa_name(isa);
    EXPECT_NE(std::strstr(list, ("quantize.u4.per_element=" + name).c_str()), nullptr) << list;
    EXPECT_NE(std::strstr(list, ("dequantize.nf4.shared=" + name).c_str()), nullptr) << list;
    EXPECT_NE(std::strstr(list, ("calibrate.scan=" + name).c_str()), nullptr) << list;
    // Lowering the cap chooses again.
    ASSERT_EQ(qnt_context_set_max_isa(fast.c, QNT_ISA_REFERENCE), QNT_OK);
    ASSERT_EQ(qnt_context_kernels(fast.c, &list), QNT_OK);
    EXPECT_EQ(std::strstr(list, ("=" + name).c_str()), nullptr) << list;
  }
  EXPECT_EQ(qnt_context_kernels(nullptr, &list), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_context_kernels(ref.c, nullptr), QNT_ERR_NULL_POINTER);
}

TEST(Kernels, QuantizeAndDequantizeMatchTheReferenceBitForBit) {
  const std::vector<qnt_isa> isas = fast_isas();
  if (isas.empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  Ctx ref(QNT_ISA_REFERENCE, 1);
  std::mt19937 rng(2024);
  size_t checked = 0;
  for (qnt_dtype d : kDTypes) {
    for (int64_t n : kSizes) {
      for (const Case &c : cases_for(n)) {
        QP qp;
        make_qparams(qp, d, c, rng);
        const float spread = d == QNT_DTYPE_I16 || d == QNT_DTYPE_U16 ? 3000.0f : 30.0f;
        const std::vector<float> x = data_for(rng, count_of(c.shape), spread);
        const std::vector<uint8_t> want = quantize_with(ref.c, d, c, qp.p, x, 0);
        const std::vector<uint32_t> want_x = dequantize_with(ref.c, d, c, qp.p, want, 0);
        for (qnt_isa isa : isas) {
          Ctx fast(isa, 1);
          const std::vector<uint8_t> got = quantize_with(fast.c, d, c, qp.p, x, shift_for(d));
          ASSERT_EQ(got, want) << qnt_isa_name(isa) << " quantize dtype " << d << " " << c.name
                               << " n=" << n;
          const std::vector<uint32_t> got_x =
              dequantize_with(fast.c, d, c, qp.p, want, shift_for(d));
          ASSERT_EQ(got_x, want_x) << qnt_isa_name(isa) << " dequantize dtype " << d << " "
                                   << c.name << " n=" << n;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

// Results do not depend on the number of threads, for sizes past the task grain.
TEST(Kernels, ThreadCountsGiveTheSameBits) {
  std::mt19937 rng(7);
  std::vector<qnt_isa> isas = fast_isas();
  isas.push_back(QNT_ISA_REFERENCE);
  for (qnt_dtype d : {QNT_DTYPE_U8, QNT_DTYPE_I4, QNT_DTYPE_TERNARY, QNT_DTYPE_BINARY,
                      QNT_DTYPE_I16, QNT_DTYPE_LOG4, QNT_DTYPE_LOG8}) {
    for (const Case &c : cases_for(40001)) {  // tasks of 65536 start mid-row, mid-block
      QP qp;
      make_qparams(qp, d, c, rng);
      const std::vector<float> x = data_for(rng, count_of(c.shape), 20.0f);
      Ctx one(QNT_ISA_REFERENCE, 1);
      const std::vector<uint8_t> want = quantize_with(one.c, d, c, qp.p, x, 0);
      const std::vector<uint32_t> want_x = dequantize_with(one.c, d, c, qp.p, want, 0);
      for (qnt_isa isa : isas)
        for (int32_t threads : {2, 3}) {
          Ctx ctx(isa, threads);
          EXPECT_EQ(quantize_with(ctx.c, d, c, qp.p, x, 0), want)
              << qnt_isa_name(isa) << " threads=" << threads << " " << c.name;
          EXPECT_EQ(dequantize_with(ctx.c, d, c, qp.p, want, 0), want_x)
              << qnt_isa_name(isa) << " threads=" << threads << " " << c.name;
        }
    }
  }
}

// The division and the multiplies follow the rounding mode in every kernel alike; the rounding
// to an integer is ties-to-even in all of them, whatever the mode.
TEST(Kernels, EveryRoundingModeGivesTheReferenceBits) {
  std::vector<qnt_isa> isas = fast_isas();
  std::mt19937 rng(99);
  const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO, FE_TONEAREST};
  for (int mode : modes) {
    for (qnt_dtype d : {QNT_DTYPE_I8, QNT_DTYPE_U16, QNT_DTYPE_I32, QNT_DTYPE_NF4, QNT_DTYPE_I4,
                        QNT_DTYPE_LOG4, QNT_DTYPE_LOG8}) {
      const Case c = cases_for(1023)[2];  // per axis, on the last axis
      QP qp;
      make_qparams(qp, d, c, rng);
      const std::vector<float> x = data_for(rng, count_of(c.shape), 30.0f);
      ASSERT_EQ(std::fesetround(mode), 0);
      Ctx ref(QNT_ISA_REFERENCE, 1);
      const std::vector<uint8_t> want = quantize_with(ref.c, d, c, qp.p, x, 0);
      const std::vector<uint32_t> want_x = dequantize_with(ref.c, d, c, qp.p, want, 0);
      for (qnt_isa isa : isas) {
        Ctx fast(isa, 2);
        EXPECT_EQ(quantize_with(fast.c, d, c, qp.p, x, 0), want) << "mode " << mode;
        EXPECT_EQ(dequantize_with(fast.c, d, c, qp.p, want, 0), want_x) << "mode " << mode;
      }
      std::fesetround(FE_TONEAREST);
    }
  }
  // Ties go to even under every mode: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -2.5 -> -2.
  for (int mode : modes) {
    ASSERT_EQ(std::fesetround(mode), 0);
    std::vector<float> x(67);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 4) + 0.5f;
    x[66] = -2.5f;
    const Case c = cases_for(67)[0];
    QP qp;
    qnt_test::per_tensor(qp, QNT_DTYPE_I8, 1.0f, 0);
    for (qnt_isa isa : isas) {
      Ctx fast(isa, 1);
      const std::vector<uint8_t> got = quantize_with(fast.c, QNT_DTYPE_I8, c, qp.p, x, 0);
      const uint8_t even[4] = {0, 2, 2, 4};
      for (size_t i = 0; i + 1 < x.size(); ++i) EXPECT_EQ(got[i], even[i % 4]) << "mode " << mode;
      EXPECT_EQ(static_cast<int8_t>(got[66]), -2);
    }
    std::fesetround(FE_TONEAREST);
  }
}

TEST(Kernels, RequantizeMatchesTheReference) {
  const std::vector<qnt_isa> isas = fast_isas();
  if (isas.empty()) GTEST_SKIP() << "this machine runs only the reference kernels";
  std::mt19937 rng(5);
  const std::pair<qnt_dtype, qnt_dtype> pairs[] = {{QNT_DTYPE_I32, QNT_DTYPE_I8},
                                                   {QNT_DTYPE_U8, QNT_DTYPE_I4},
                                                   {QNT_DTYPE_I16, QNT_DTYPE_U8},
                                                   {QNT_DTYPE_NF4, QNT_DTYPE_I8},
                                                   {QNT_DTYPE_I8, QNT_DTYPE_TERNARY}};
  for (const auto &pr : pairs) {
    for (int64_t n : {int64_t{17}, int64_t{1023}, int64_t{5000}}) {
      for (const Case &c : cases_for(n)) {
        QP from, to;
        make_qparams(from, pr.first, c, rng);
        make_qparams(to, pr.second, c, rng);
        const std::vector<float> x = data_for(rng, count_of(c.shape), 30.0f);
        Ctx ref(QNT_ISA_REFERENCE, 1);
        const std::vector<uint8_t> src = quantize_with(ref.c, pr.first, c, from.p, x, 0);
        auto run = [&](qnt_context *ctx) {
          T ts, td;
          EXPECT_EQ(qnt_tensor_create_from_data(pr.first, c.shape.data(), c.shape.size(), from.p,
                                                src.data(), src.size(), &ts.t),
                    QNT_OK);
          EXPECT_EQ(qnt_tensor_create(pr.second, c.shape.data(), c.shape.size(), to.p, &td.t),
                    QNT_OK);
          EXPECT_EQ(qnt_requantize(ctx, ts.t, td.t), QNT_OK) << qnt_last_error_message();
          return qnt_test::bytes_of(td.t);
        };
        const std::vector<uint8_t> want = run(ref.c);
        for (qnt_isa isa : isas) {
          Ctx fast(isa, 2);
          EXPECT_EQ(run(fast.c), want) << qnt_isa_name(isa) << " " << c.name << " n=" << n;
        }
      }
    }
  }
}

// --- calibration on the kernels and threads --------------------------------------------------

namespace {

struct Calib {
  qnt_calibrator *c = nullptr;
  Calib(qnt_calib_method m, qnt_dtype d, qnt_scheme s, qnt_granularity g, int64_t axis) {
    EXPECT_EQ(qnt_calibrator_create(m, d, s, g, axis, &c), QNT_OK) << qnt_last_error_message();
  }
  Calib(const Calib &) = delete;
  Calib &operator=(const Calib &) = delete;
  ~Calib() { qnt_calibrator_destroy(c); }
  std::vector<uint8_t> bytes() const {
    size_t n = 0;
    EXPECT_EQ(qnt_calibrator_serialize(c, nullptr, 0, &n), QNT_OK);
    std::vector<uint8_t> b(n);
    EXPECT_EQ(qnt_calibrator_serialize(c, b.data(), b.size(), &n), QNT_OK);
    return b;
  }
};

std::pair<std::vector<float>, std::vector<int32_t>> params_of(const qnt_qparams *qp) {
  size_t n = 0;
  EXPECT_EQ(qnt_qparams_scale_count(qp, &n), QNT_OK);
  std::vector<float> s(n);
  std::vector<int32_t> z(n);
  EXPECT_EQ(qnt_qparams_scales(qp, s.data(), n), QNT_OK);
  EXPECT_EQ(qnt_qparams_zero_points(qp, z.data(), n), QNT_OK);
  return {s, z};
}

}  // namespace

// One-shot min-max: every kernel set and thread count gives the reference's parameters, for
// every granularity (both run kinds).
TEST(KernelsCalibration, OneShotMinMaxIsTheSameEverywhere) {
  std::mt19937 rng(31);
  std::vector<qnt_isa> isas = fast_isas();
  isas.push_back(QNT_ISA_REFERENCE);
  for (int64_t n : {int64_t{1}, int64_t{65}, int64_t{1023}, int64_t{40001}}) {
    for (const Case &c : cases_for(n)) {
      std::vector<float> x = data_for(rng, count_of(c.shape), 10.0f);
      for (size_t i = 0; i < x.size(); i += 9) x[i] = 0.5f;  // no infinities: only finite count
      T tx;
      qnt_test::make_f32(tx, c.shape, x);
      auto run = [&](qnt_isa isa, int32_t threads) {
        Ctx ctx(isa, threads);
        qnt_qparams *qp = nullptr;
        EXPECT_EQ(qnt_calibrate_minmax(ctx.c, tx.t, QNT_DTYPE_U8, QNT_SCHEME_AFFINE, c.g, c.axis,
                                       c.block, &qp),
                  QNT_OK)
            << qnt_last_error_message();
        auto p = params_of(qp);
        qnt_qparams_destroy(qp);
        return p;
      };
      const auto want = run(QNT_ISA_REFERENCE, 1);
      for (qnt_isa isa : isas)
        for (int32_t threads : {1, 2, 3})
          EXPECT_EQ(run(isa, threads), want) << c.name << " n=" << n << " threads=" << threads;
    }
  }
}

// Streaming calibrators: the same state (serialized bytes) on every kernel set and thread count.
TEST(KernelsCalibration, ObserveIsTheSameOnEveryKernelAndThreadCount) {
  std::mt19937 rng(41);
  std::vector<qnt_isa> isas = fast_isas();
  isas.push_back(QNT_ISA_REFERENCE);
  const std::vector<int64_t> shape = {3, 5, 40000};
  std::vector<float> x = data_for(rng, 3 * 5 * 40000, 4.0f);
  T tx;
  qnt_test::make_f32(tx, shape, x);
  for (qnt_calib_method m : {QNT_CALIB_MINMAX, QNT_CALIB_ENTROPY}) {
    for (qnt_granularity g : {QNT_GRANULARITY_PER_TENSOR, QNT_GRANULARITY_PER_AXIS}) {
      std::vector<uint8_t> want;
      for (qnt_isa isa : isas)
        for (int32_t threads : {1, 2, 3}) {
          Ctx ctx(isa, threads);
          Calib cal(m, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, g, 1);
          ASSERT_EQ(qnt_calibrator_observe(ctx.c, cal.c, tx.t), QNT_OK) << qnt_last_error_message();
          ASSERT_EQ(qnt_calibrator_observe(ctx.c, cal.c, tx.t), QNT_OK);
          if (want.empty()) want = cal.bytes();
          EXPECT_EQ(cal.bytes(), want) << qnt_isa_name(isa) << " threads=" << threads;
        }
    }
  }
}

// PyTorch's quant_min / quant_max on a streaming calibrator: a moving-average observer with
// reduce_range. One batch's moving average is its min and max, so it must agree with the
// one-shot call given the same range; the range survives serialization and gates merging.
TEST(KernelsCalibration, CalibratorsTakeACustomQuantRange) {
  std::mt19937 rng(3);
  const std::vector<float> x = data_for(rng, 4096, 2.0f);
  std::vector<float> finite;
  for (float v : x)
    if (std::fabs(v) < 1e6f) finite.push_back(v);  // a finite scale
  T tx;
  qnt_test::make_f32(tx, {static_cast<int64_t>(finite.size())}, finite);
  for (qnt_dtype d : {QNT_DTYPE_I8, QNT_DTYPE_U8}) {
    const int32_t lo = d == QNT_DTYPE_I8 ? -64 : 0, hi = d == QNT_DTYPE_I8 ? 63 : 127;
    Calib cal(QNT_CALIB_MOVING_AVERAGE, d, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_TENSOR, 0);
    ASSERT_EQ(qnt_calibrator_set_option(cal.c, QNT_CALIB_OPT_QUANT_MIN, lo), QNT_OK)
        << qnt_last_error_message();
    ASSERT_EQ(qnt_calibrator_set_option(cal.c, QNT_CALIB_OPT_QUANT_MAX, hi), QNT_OK);
    ASSERT_EQ(qnt_calibrator_observe(nullptr, cal.c, tx.t), QNT_OK);
    qnt_qparams *a = nullptr, *b = nullptr;
    ASSERT_EQ(qnt_calibrator_compute(nullptr, cal.c, &a), QNT_OK);
    ASSERT_EQ(qnt_calibrate_minmax_range(nullptr, tx.t, d, QNT_SCHEME_AFFINE,
                                         QNT_GRANULARITY_PER_TENSOR, 0, 0, lo, hi, &b),
              QNT_OK);
    EXPECT_EQ(params_of(a), params_of(b));
    // Without the range the parameters differ (the full range gives a finer scale).
    Calib full(QNT_CALIB_MOVING_AVERAGE, d, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_TENSOR, 0);
    ASSERT_EQ(qnt_calibrator_observe(nullptr, full.c, tx.t), QNT_OK);
    qnt_qparams *f = nullptr;
    ASSERT_EQ(qnt_calibrator_compute(nullptr, full.c, &f), QNT_OK);
    EXPECT_NE(params_of(a).first, params_of(f).first);
    qnt_qparams_destroy(a);
    qnt_qparams_destroy(b);
    qnt_qparams_destroy(f);
    // Serialized (format 2) and back, the same state; a calibrator without it cannot merge.
    const std::vector<uint8_t> s = cal.bytes();
    qnt_calibrator *back = nullptr;
    ASSERT_EQ(qnt_calibrator_deserialize(s.data(), s.size(), &back), QNT_OK);
    size_t n = 0;
    ASSERT_EQ(qnt_calibrator_serialize(back, nullptr, 0, &n), QNT_OK);
    std::vector<uint8_t> again(n);
    ASSERT_EQ(qnt_calibrator_serialize(back, again.data(), n, &n), QNT_OK);
    EXPECT_EQ(again, s);
    qnt_calibrator_destroy(back);
    Calib m1(QNT_CALIB_MINMAX, d, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_TENSOR, 0);
    Calib m2(QNT_CALIB_MINMAX, d, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_TENSOR, 0);
    ASSERT_EQ(qnt_calibrator_set_option(m1.c, QNT_CALIB_OPT_QUANT_MAX, hi), QNT_OK);
    EXPECT_EQ(qnt_calibrator_merge(m1.c, m2.c), QNT_ERR_INVALID_ARGUMENT);
    // Bad ranges are refused.
    EXPECT_EQ(qnt_calibrator_set_option(m2.c, QNT_CALIB_OPT_QUANT_MIN, 1), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_calibrator_set_option(m2.c, QNT_CALIB_OPT_QUANT_MAX, 1e6),
              QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(qnt_calibrator_set_option(m2.c, QNT_CALIB_OPT_QUANT_MAX, 2.5),
              QNT_ERR_INVALID_ARGUMENT);
  }
}

// The streaming path (non-temporal stores through an L1 staging buffer, taken for data larger
// than the last-level cache) writes the same bytes as the plain one, in every kernel set this
// machine runs, at unaligned places, for run lengths around the staging size.
TEST(KernelsStreaming, SameBytesAsThePlainStores) {
  std::mt19937 rng(77);
  const std::vector<float> x = data_for(rng, 9000, 40.0f);
  const std::vector<float> scales = {0.25f, 0.1f};
  const std::vector<int32_t> zps = {3, 3};
  for (const qnt::kern::KernelSet *set : qnt_test::machine_kernel_sets()) {
    const qnt::kern::KernelSet &tab = *set;
    for (qnt_dtype d : {QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I16, QNT_DTYPE_U16, QNT_DTYPE_I32}) {
      int64_t lo = 0, hi = 0;
      range_of(d, lo, hi);
      qnt::kern::Format f;
      f.dtype = d;
      f.bits = d == QNT_DTYPE_I8 || d == QNT_DTYPE_U8 ? 8 : d == QNT_DTYPE_I32 ? 32 : 16;
      f.is_signed = d != QNT_DTYPE_U8 && d != QNT_DTYPE_U16;
      f.qmin = static_cast<int32_t>(lo);
      f.qmax = static_cast<int32_t>(hi);
      const size_t B = static_cast<size_t>(f.bits / 8);
      for (size_t n : {size_t{2047}, size_t{2048}, size_t{2049}, size_t{8999}}) {
        for (int kind = 0; kind < 2; ++kind) {
          std::vector<float> s(n, scales[0]);
          std::vector<int32_t> z(n, zps[0]);
          for (size_t i = 1; i < n; i += 2) s[i] = scales[1];
          std::vector<uint8_t> plain(n * B + 8, 0), streamed(n * B + 8, 0);
          f.stream = false;
          tab.quantize[d][kind](x.data() + 1, plain.data() + B, 0, n, s.data(), z.data(), f);
          f.stream = true;
          tab.quantize[d][kind](x.data() + 1, streamed.data() + B, 0, n, s.data(), z.data(), f);
          EXPECT_EQ(plain, streamed) << tab.quantize_name[d][kind] << " dtype " << d << " n=" << n;
          std::vector<float> a(n + 1, 0.0f), b(n + 1, 0.0f);
          f.stream = false;
          tab.dequantize[d][kind](plain.data() + B, 0, a.data() + 1, n, s.data(), z.data(), f);
          f.stream = true;
          tab.dequantize[d][kind](plain.data() + B, 0, b.data() + 1, n, s.data(), z.data(), f);
          EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
              << tab.dequantize_name[d][kind] << " dtype " << d << " n=" << n;
        }
      }
    }
  }
}

// NF4 at its decision thresholds: a value equal to a threshold belongs to the code below it;
// a step above, to the code above. Scale 1 (n = x exactly) and scale 2 (n = x * 0.5).
TEST(Kernels, NF4AtItsThresholds) {
  std::vector<float> x;
  float book[16];
  ASSERT_EQ(qnt_nf4_codebook(book, 16), QNT_OK);
  for (float scale : {1.0f, 2.0f}) {
    x.clear();
    for (int k = 0; k < 15; ++k) {
      const float t = (book[k] + book[k + 1]) * 0.5f;  // near the threshold; then the exact ones
      x.push_back(t * scale);
    }
    // The reference's thresholds exactly, reached through the reference itself: bisect the
    // float line for each code change and take both sides.
    std::vector<float> edges;
    for (int k = 0; k < 15; ++k) {
      float lo = book[k] * scale, hi = book[k + 1] * scale;
      for (int it = 0; it < 200 && std::nextafter(lo, hi) < hi; ++it) {
        const float mid = lo + (hi - lo) * 0.5f;
        const Case c = cases_for(1)[0];
        QP qp;
        ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_NF4, scale, 0, &qp.p), QNT_OK);
        Ctx ref(QNT_ISA_REFERENCE, 1);
        const std::vector<uint8_t> q = quantize_with(ref.c, QNT_DTYPE_NF4, c, qp.p, {mid}, 0);
        if ((q[0] & 15) <= k) lo = mid;
        else hi = mid;
      }
      edges.push_back(lo);
      edges.push_back(hi);
      edges.push_back(std::nextafter(lo, -INFINITY));
      edges.push_back(std::nextafter(hi, INFINITY));
    }
    x.insert(x.end(), edges.begin(), edges.end());
    for (float v : edges) x.push_back(-v);
    x.push_back(NAN);
    const Case c = cases_for(static_cast<int64_t>(x.size()))[0];
    QP qp;
    ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_NF4, scale, 0, &qp.p), QNT_OK);
    Ctx ref(QNT_ISA_REFERENCE, 1);
    const std::vector<uint8_t> want = quantize_with(ref.c, QNT_DTYPE_NF4, c, qp.p, x, 0);
    for (qnt_isa isa : fast_isas()) {
      Ctx fast(isa, 1);
      EXPECT_EQ(quantize_with(fast.c, QNT_DTYPE_NF4, c, qp.p, x, 3), want)
          << qnt_isa_name(isa) << " scale " << scale;
    }
  }
}

// The vector epilogues' f32-bias quantization (mode 3: v = acc * m + bias, then v / sy rounded
// and saturated) against the scalar rule, element by element: quotients a few ulps either side
// of half-integers across the range (where a wrong last bit of the quotient changes the
// rounding: a kernel that divided by multiplying with 1 / sy, or by fmas that are not exact,
// fails here), quotients that overflow, infinite and NaN biases, large and tiny scales, u8 and
// i8 outputs, relu.
#include "ops/epilogue.hpp"
namespace {
TEST(KernelEpilogue, FloatQuantizeDividesAsTheScalarRule) {
  std::mt19937 rng(97);
  const float scales[] = {0.1f, 0.0469f, 1.0f / 3.0f, 0.0078125f, 2.5e-6f, 37.0f, 3.0e38f};
  for (const auto *set : qnt_test::machine_kernel_sets()) {
    if (set->gemm == nullptr || set->gemm->epilogue == nullptr) continue;
    for (const float sy : scales)
      for (int variant = 0; variant < 4; ++variant) {
        const bool is_signed = variant % 2 == 1, finite = variant < 2;
        const size_t C = 37, R = 400;
        qnt::ops::Epilogue e;
        e.mode = qnt::ops::Epilogue::Mode::FloatQuantize;
        e.sy = sy;
        e.zy = is_signed ? -3 : 7;
        e.qmin = is_signed ? -128 : 0;
        e.qmax = is_signed ? 127 : 255;
        e.relu = variant == 3;
        e.finite = finite;
        std::vector<float> bias(C);
        e.multiplier.resize(C);
        std::uniform_real_distribution<float> unit(0.0f, 1.0f);
        for (size_t c = 0; c < C; ++c) {
          e.multiplier[c] = std::ldexp(unit(rng) + 0.5f, -static_cast<int>(rng() % 20));
          bias[c] = (unit(rng) - 0.5f) * sy * 40.0f;
        }
        if (!finite) {
          bias[3] = std::numeric_limits<float>::infinity();
          bias[4] = -std::numeric_limits<float>::infinity();
          bias[5] = std::numeric_limits<float>::quiet_NaN();
        }
        bias[6] = 3.0e38f;  // v / sy overflows for small sy
        e.bias_f32 = bias.data();
        // Accumulators that put v = acc * m + bias near (k + 1/2) * sy, a few ulps either side.
        std::vector<int32_t> acc(R * C);
        for (size_t r = 0; r < R; ++r)
          for (size_t c = 0; c < C; ++c) {
            const float k = static_cast<float>(static_cast<int>(rng() % 600) - 300) + 0.5f;
            const float target = std::nextafter(k * sy, (rng() & 1) ? INFINITY : -INFINITY);
            const double a = (static_cast<double>(target) - bias[c]) / e.multiplier[c];
            acc[r * C + c] = static_cast<int32_t>(std::max(-2.0e9, std::min(2.0e9, a)));
            if (r % 7 == 0) acc[r * C + c] = static_cast<int32_t>(rng());
          }
        std::vector<uint8_t> want(R * C), got(R * C, 0xA5);
        for (size_t r = 0; r < R; ++r)
          for (size_t c = 0; c < C; ++c) e.put(acc[r * C + c], c, want.data(), r * C + c);
        e.vector = set->gemm->epilogue;
        e.block(acc.data(), C, static_cast<int>(R), 0, C, got.data(), 0, C);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << set->gemm_name << " sy " << sy << " variant " << variant
                                     << " element " << i << " acc " << acc[i];
      }
  }
}
}  // namespace
