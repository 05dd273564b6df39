// Streaming calibrators: methods against hand-checked and brute-force results, batch-split and
// merge invariance, serialization and corrupted buffers, NaN/inf, empty calibrators, the SIMD
// batch kernels against the reference, and error reports.
#include "calib/histogram.hpp"
#include "kernels/registry.hpp"
#include "core/context.hpp"
#include "helpers.hpp"
#include "kernel_sets.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace qnt_test;

namespace {

struct Cal {
  qnt_calibrator *c = nullptr;
  Cal() = default;
  Cal(qnt_calib_method m, qnt_dtype d, qnt_scheme s, qnt_granularity g = QNT_GRANULARITY_PER_TENSOR,
      int64_t axis = 0) {
    EXPECT_EQ(qnt_calibrator_create(m, d, s, g, axis, &c), QNT_OK) << qnt_last_error_message();
  }
  Cal(const Cal &) = delete;
  Cal &operator=(const Cal &) = delete;
  ~Cal() { qnt_calibrator_destroy(c); }
};

void observe(qnt_calibrator *c, const std::vector<int64_t> &shape, const std::vector<float> &v) {
  T t;
  make_f32(t, shape, v);
  ASSERT_EQ(qnt_calibrator_observe(nullptr, c, t.t), QNT_OK) << qnt_last_error_message();
}

struct Params {
  std::vector<float> s;
  std::vector<int32_t> z;
  bool operator==(const Params &o) const {
    return s.size() == o.s.size() && std::memcmp(s.data(), o.s.data(), s.size() * 4) == 0 &&
           z == o.z;
  }
};

Params compute(const qnt_calibrator *c) {
  QP qp;
  EXPECT_EQ(qnt_calibrator_compute(nullptr, c, &qp.p), QNT_OK) << qnt_last_error_message();
  Params p;
  size_t n = 0;
  if (qp.p == nullptr) return p;
  EXPECT_EQ(qnt_qparams_scale_count(qp.p, &n), QNT_OK);
  p.s.resize(n);
  p.z.resize(n);
  EXPECT_EQ(qnt_qparams_scales(qp.p, p.s.data(), n), QNT_OK);
  EXPECT_EQ(qnt_qparams_zero_points(qp.p, p.z.data(), n), QNT_OK);
  return p;
}

std::vector<uint8_t> serialized(const qnt_calibrator *c) {
  size_t n = 0;
  EXPECT_EQ(qnt_calibrator_serialize(c, nullptr, 0, &n), QNT_OK);
  std::vector<uint8_t> b(n);
  EXPECT_EQ(qnt_calibrator_serialize(c, b.data(), b.size(), &n), QNT_OK);
  return b;
}

std::vector<float> laplace_with_outliers(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::exponential_distribution<float> e(1.0f);
  std::bernoulli_distribution sign(0.5), outlier(0.0005);
  std::vector<float> v(n);
  for (float &x : v) {
    x = (sign(rng) ? 1.0f : -1.0f) * e(rng);
    if (outlier(rng)) x *= 40.0f;
  }
  return v;
}

const qnt_calib_method kAllMethods[] = {QNT_CALIB_MINMAX,     QNT_CALIB_MOVING_AVERAGE,
                                        QNT_CALIB_PERCENTILE, QNT_CALIB_ENTROPY,
                                        QNT_CALIB_MSE,        QNT_CALIB_ADAPTIVE};

TEST(Calibrator, MinMaxAcrossBatchesEqualsOneShot) {
  Cal c(QNT_CALIB_MINMAX, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  observe(c.c, {2}, {-1.0f, 0.5f});
  observe(c.c, {2}, {2.0f, 0.3f});
  const Params p = compute(c.c);
  EXPECT_EQ(p.s[0], 0x1.818182p-7f);  // 3 / 255, as PyTorch (see test_calibrate.cpp)
  EXPECT_EQ(p.z[0], 85);
}

TEST(Calibrator, MovingAverageFollowsPyTorch) {
  Cal c(QNT_CALIB_MOVING_AVERAGE, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  ASSERT_EQ(qnt_calibrator_set_option(c.c, QNT_CALIB_OPT_AVERAGING, 0.5), QNT_OK);
  observe(c.c, {2}, {-1.0f, 1.0f});  // min -1, max 1
  observe(c.c, {2}, {-3.0f, 5.0f});  // min -1 + 0.5 * (-3 + 1) = -2, max 1 + 0.5 * 4 = 3
  const Params p = compute(c.c);
  EXPECT_EQ(p.s[0], 3.0f / 127.5f);
  Cal other(QNT_CALIB_MOVING_AVERAGE, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(qnt_calibrator_merge(c.c, other.c), QNT_ERR_UNSUPPORTED);
}

TEST(Calibrator, PercentileOnAKnownDistribution) {
  // 0.01, 0.02, ..., 100.00 and their negatives: the 99th percentile of |x| is 99.0.
  std::vector<float> v;
  for (int i = 1; i <= 10000; ++i) {
    v.push_back(static_cast<float>(i) / 100.0f);
    v.push_back(-static_cast<float>(i) / 100.0f);
  }
  Cal c(QNT_CALIB_PERCENTILE, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  ASSERT_EQ(qnt_calibrator_set_option(c.c, QNT_CALIB_OPT_PERCENTILE, 99.0), QNT_OK);
  observe(c.c, {static_cast<int64_t>(v.size())}, v);
  const Params p = compute(c.c);
  // R = 128, 2048 bins of 1/16: the percentile is within one bin of 99.
  EXPECT_NEAR(p.s[0] * 127.5f, 99.0f, 1.0f / 16);
  // Affine: the 1st and 99th percentiles of x are -98 and 98.
  Cal a(QNT_CALIB_PERCENTILE, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
  ASSERT_EQ(qnt_calibrator_set_option(a.c, QNT_CALIB_OPT_PERCENTILE, 99.0), QNT_OK);
  observe(a.c, {static_cast<int64_t>(v.size())}, v);
  const Params q = compute(a.c);
  EXPECT_NEAR(q.s[0] * 255.0f, 196.0f, 2.0f / 16);
  EXPECT_NEAR(q.z[0], 128, 1);
}

// The SQNR of qparams p on data v (through qnt_error_report_compute).
double sqnr(const std::vector<float> &v, qnt_dtype d, float s, int32_t z) {
  T t;
  make_f32(t, {static_cast<int64_t>(v.size())}, v);
  QP qp;
  per_tensor(qp, d, s, z);
  qnt_error_report r{};
  EXPECT_EQ(qnt_error_report_compute(nullptr, t.t, qp.p, &r, sizeof r), QNT_OK);
  return r.sqnr_db;
}

TEST(Calibrator, MseAndEntropyClipOutliers) {
  // Uniform in [-1, 1] with a few outliers at +-10, for int4: clipping near 1 costs the outliers
  // little next to the rounding error of the bulk at a step of 10 / 7.5, so the best threshold is
  // near 1. A brute-force search over thresholds on the data confirms MSE's choice.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(200000);
  for (float &x : v) x = u(rng);
  for (int i = 0; i < 20; ++i) v[static_cast<size_t>(i) * 997] = i % 2 ? 10.0f : -10.0f;
  const int64_t n = static_cast<int64_t>(v.size());
  Cal mse(QNT_CALIB_MSE, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC);
  Cal ent(QNT_CALIB_ENTROPY, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC);
  Cal mm(QNT_CALIB_MINMAX, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC);
  observe(mse.c, {n}, v);
  observe(ent.c, {n}, v);
  observe(mm.c, {n}, v);
  const float t_mse = compute(mse.c).s[0] * 7.5f, t_ent = compute(ent.c).s[0] * 7.5f;
  EXPECT_GT(t_mse, 0.8f);
  EXPECT_LT(t_mse, 1.5f);
  EXPECT_GT(t_ent, 0.8f);
  EXPECT_LT(t_ent, 3.0f);
  double best = -1e9;
  for (float t = 0.5f; t <= 12.0f; t += 0.01f)
    best = std::max(best, sqnr(v, QNT_DTYPE_I4, t / 7.5f, 0));
  const double got = sqnr(v, QNT_DTYPE_I4, compute(mse.c).s[0], 0);
  EXPECT_GT(got, best - 0.2) << "MSE's threshold " << t_mse;
  EXPECT_GT(got, sqnr(v, QNT_DTYPE_I4, compute(mm.c).s[0], 0) + 3.0);
}

TEST(Calibrator, AdaptiveKeepsTheBestCandidate) {
  const std::vector<float> v = laplace_with_outliers(100000, 4);
  const int64_t n = static_cast<int64_t>(v.size());
  Cal ad(QNT_CALIB_ADAPTIVE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  observe(ad.c, {n}, v);
  const Params best = compute(ad.c);
  qnt_calib_method chosen;
  ASSERT_EQ(qnt_calibrator_chosen_method(ad.c, &chosen), QNT_OK);
  EXPECT_NE(chosen, QNT_CALIB_ADAPTIVE);
  Cal same(chosen, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  observe(same.c, {n}, v);
  EXPECT_TRUE(compute(same.c) == best);
  // It is at least as good as min-max on the data itself.
  Cal mm(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  observe(mm.c, {n}, v);
  const Params m = compute(mm.c);
  EXPECT_GE(sqnr(v, QNT_DTYPE_I8, best.s[0], best.z[0]), sqnr(v, QNT_DTYPE_I8, m.s[0], m.z[0]));
}

TEST(Calibrator, BatchSplitsAndMergesGiveIdenticalState) {
  // Batches of growing range force the histogram to widen several times.
  std::vector<float> v = laplace_with_outliers(30000, 2);
  for (size_t i = 0; i < v.size(); ++i) v[i] *= static_cast<float>(1 + i / 5000);
  for (qnt_calib_method m : kAllMethods) {
    if (m == QNT_CALIB_MOVING_AVERAGE) continue;
    for (qnt_scheme s : {QNT_SCHEME_SYMMETRIC, QNT_SCHEME_AFFINE}) {
      Cal one(m, QNT_DTYPE_I8, s), batched(m, QNT_DTYPE_I8, s), merged(m, QNT_DTYPE_I8, s);
      observe(one.c, {static_cast<int64_t>(v.size())}, v);
      const size_t cuts[] = {0, 7, 5000, 5001, 17000, 29999, v.size()};
      for (size_t k = 0; k + 1 < sizeof cuts / sizeof cuts[0]; ++k) {
        std::vector<float> part(v.begin() + static_cast<std::ptrdiff_t>(cuts[k]),
                                v.begin() + static_cast<std::ptrdiff_t>(cuts[k + 1]));
        observe(batched.c, {static_cast<int64_t>(part.size())}, part);
        Cal shard(m, QNT_DTYPE_I8, s);
        observe(shard.c, {static_cast<int64_t>(part.size())}, part);
        // merge the shards in reverse order of their data
        ASSERT_EQ(qnt_calibrator_merge(merged.c, shard.c), QNT_OK) << qnt_last_error_message();
      }
      EXPECT_EQ(serialized(one.c), serialized(batched.c)) << "method " << m;
      EXPECT_EQ(serialized(one.c), serialized(merged.c)) << "method " << m;
      EXPECT_TRUE(compute(one.c) == compute(merged.c)) << "method " << m;
    }
  }
}

TEST(Calibrator, PerChannelEqualsOneCalibratorPerChannel) {
  // [3 channels along axis 1] of a [4, 3, 50] tensor
  std::vector<float> v = laplace_with_outliers(600, 3);
  for (size_t i = 0; i < v.size(); ++i) v[i] *= static_cast<float>(1 + (i / 50) % 3);
  for (qnt_calib_method m : kAllMethods) {
    Cal pc(m, QNT_DTYPE_U8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_AXIS, 1);
    observe(pc.c, {4, 3, 50}, v);
    observe(pc.c, {4, 3, 50}, v);
    const Params all = compute(pc.c);
    ASSERT_EQ(all.s.size(), 3u);
    for (size_t ch = 0; ch < 3; ++ch) {
      std::vector<float> mine;
      for (size_t o = 0; o < 4; ++o)
        mine.insert(mine.end(), v.begin() + static_cast<std::ptrdiff_t>((o * 3 + ch) * 50),
                    v.begin() + static_cast<std::ptrdiff_t>((o * 3 + ch + 1) * 50));
      Cal single(m, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
      observe(single.c, {static_cast<int64_t>(mine.size())}, mine);
      observe(single.c, {static_cast<int64_t>(mine.size())}, mine);
      const Params p = compute(single.c);
      EXPECT_EQ(p.s[0], all.s[ch]) << "method " << m << " channel " << ch;
      EXPECT_EQ(p.z[0], all.z[ch]) << "method " << m << " channel " << ch;
    }
  }
  Cal pc(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS, 0);
  observe(pc.c, {3, 2}, {1, 2, 3, 4, 5, 6});
  T wrong;
  make_f32(wrong, {4, 2}, std::vector<float>(8, 1.0f));
  EXPECT_EQ(qnt_calibrator_observe(nullptr, pc.c, wrong.t), QNT_ERR_SHAPE_MISMATCH);
}

TEST(Calibrator, SerializationRoundTripAndCorruption) {
  Cal c(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_AXIS, 0);
  ASSERT_EQ(qnt_calibrator_set_option(c.c, QNT_CALIB_OPT_BINS, 256), QNT_OK);
  observe(c.c, {2, 100}, laplace_with_outliers(200, 5));
  const std::vector<uint8_t> bytes = serialized(c.c);
  Cal back;
  ASSERT_EQ(qnt_calibrator_deserialize(bytes.data(), bytes.size(), &back.c), QNT_OK)
      << qnt_last_error_message();
  EXPECT_EQ(serialized(back.c), bytes);
  EXPECT_TRUE(compute(back.c) == compute(c.c));
  // Every truncation, and a flip of each byte, is refused, never a crash.
  for (size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 97)) {
    qnt_calibrator *bad = nullptr;
    EXPECT_EQ(qnt_calibrator_deserialize(bytes.data(), n, &bad), QNT_ERR_CORRUPT_DATA) << n;
    EXPECT_EQ(bad, nullptr);
  }
  for (size_t i = 0; i < bytes.size(); i += (i < 128 ? 1 : 61)) {
    std::vector<uint8_t> flipped = bytes;
    flipped[i] ^= 0x40;
    qnt_calibrator *bad = nullptr;
    EXPECT_EQ(qnt_calibrator_deserialize(flipped.data(), flipped.size(), &bad),
              QNT_ERR_CORRUPT_DATA)
        << "byte " << i;
    qnt_calibrator_destroy(bad);
  }
  size_t need = 0;
  std::vector<uint8_t> small(10);
  EXPECT_EQ(qnt_calibrator_serialize(c.c, small.data(), small.size(), &need),
            QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(need, bytes.size());
}

// FNV-1a 64, the checksum of the format, written again here to craft buffers whose checksum is
// right but whose content is not.
void reseal(std::vector<uint8_t> &b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < b.size() - 8; ++i) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  for (int i = 0; i < 8; ++i)
    b[b.size() - 8 + static_cast<size_t>(i)] = static_cast<uint8_t>(h >> (8 * i));
}

TEST(Calibrator, CraftedBuffersWithAValidChecksum) {
  Cal c(QNT_CALIB_PERCENTILE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  ASSERT_EQ(qnt_calibrator_set_option(c.c, QNT_CALIB_OPT_BINS, 128), QNT_OK);
  observe(c.c, {4}, {1.0f, -2.0f, 3.0f, 0.5f});
  const std::vector<uint8_t> good = serialized(c.c);
  {
    std::vector<uint8_t> b = good;  // resealed but unchanged: still fine
    reseal(b);
    Cal ok;
    EXPECT_EQ(qnt_calibrator_deserialize(b.data(), b.size(), &ok.c), QNT_OK);
  }
  struct Patch {
    size_t offset;
    uint8_t value;
    const char *what;
  } patches[] = {
      {4, 2, "format version 2"},
      {8, 9, "method 9"},
      {12, 0, "dtype 0"},
      {16, 7, "scheme 7"},
      {48, 100, "bins 100 (not a power of two)"},
      {56, 0xFF, "a huge channel count"},
      {52, 2, "a flag byte of 2"},
      {65, 9, "more finite values than histogram counts"},
  };
  for (const Patch &p : patches) {
    std::vector<uint8_t> b = good;
    b[p.offset] = p.value;
    reseal(b);
    qnt_calibrator *bad = nullptr;
    EXPECT_EQ(qnt_calibrator_deserialize(b.data(), b.size(), &bad), QNT_ERR_CORRUPT_DATA) << p.what;
    qnt_calibrator_destroy(bad);
  }
}

// A calibrator rebuilt from `c`'s serialized state with the counts (finite, NaN, inf) of every
// channel whose counts are `from` replaced by `to` (crafted, resealed; null if refused).
qnt_calibrator *with_counts(const qnt_calibrator *c, const uint64_t (&from)[3],
                            const uint64_t (&to)[3], qnt_status *status) {
  std::vector<uint8_t> b = serialized(c);
  uint8_t pat[24], rep[24];
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 8; ++k) {
      pat[8 * i + k] = static_cast<uint8_t>(from[i] >> (8 * k));
      rep[8 * i + k] = static_cast<uint8_t>(to[i] >> (8 * k));
    }
  int found = 0;
  for (size_t i = 0; i + 24 <= b.size() - 8; ++i)
    if (std::memcmp(&b[i], pat, 24) == 0) {
      std::memcpy(&b[i], rep, 24);
      ++found;
    }
  EXPECT_GT(found, 0);
  reseal(b);
  qnt_calibrator *out = nullptr;
  *status = qnt_calibrator_deserialize(b.data(), b.size(), &out);
  return out;
}

// Counts near 2^64 (crafted states): each count fits, their sum does not. Merge refuses what it
// could not serialize back (QNT_ERR_OVERFLOW, into unchanged), deserialize refuses totals over
// all channels that qnt_calibrator_counts would wrap (found by fuzzing: the merged state's own
// serialize output was refused as corrupt, and the per-channel totals wrapped).
TEST(Calibrator, CountsNeverWrap) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const uint64_t half = uint64_t{1} << 63;
  Cal a0(QNT_CALIB_PERCENTILE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE),
      b0(QNT_CALIB_PERCENTILE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
  ASSERT_EQ(qnt_calibrator_set_option(a0.c, QNT_CALIB_OPT_BINS, 128), QNT_OK);
  ASSERT_EQ(qnt_calibrator_set_option(b0.c, QNT_CALIB_OPT_BINS, 128), QNT_OK);
  observe(a0.c, {2}, {nan, 1.0f});
  observe(b0.c, {2}, {inf, 2.0f});
  qnt_status st;
  Cal a, b;
  a.c = with_counts(a0.c, {1, 1, 0}, {1, half, 0}, &st);
  ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
  b.c = with_counts(b0.c, {1, 0, 1}, {1, 0, half}, &st);
  ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
  const std::vector<uint8_t> before = serialized(a.c);
  EXPECT_EQ(qnt_calibrator_merge(a.c, b.c), QNT_ERR_OVERFLOW);
  EXPECT_NE(std::strstr(qnt_last_error_message(), "2^64"), nullptr) << qnt_last_error_message();
  EXPECT_EQ(serialized(a.c), before);
  // One more value makes observe refuse too; the state stays.
  T one;
  make_f32(one, {1}, {inf});
  Cal full;
  full.c = with_counts(a0.c, {1, 1, 0}, {1, UINT64_MAX - 1, 0}, &st);
  ASSERT_EQ(st, QNT_OK);
  EXPECT_EQ(qnt_calibrator_observe(nullptr, full.c, one.t), QNT_ERR_OVERFLOW);
  uint64_t f = 0, n = 0, i = 0;
  ASSERT_EQ(qnt_calibrator_counts(full.c, &f, &n, &i), QNT_OK);
  EXPECT_EQ(f, 1u);
  EXPECT_EQ(n, UINT64_MAX - 1);
  EXPECT_EQ(i, 0u);
  // Two channels, each within 2^64 - 1, together past it: refused as corrupt.
  Cal pc(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_AXIS, 0);
  observe(pc.c, {2, 2}, {nan, 1.0f, nan, 3.0f});
  qnt_calibrator *bad = with_counts(pc.c, {1, 1, 0}, {1, half, 0}, &st);
  EXPECT_EQ(st, QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(bad, nullptr);
  qnt_calibrator_destroy(bad);
}

TEST(Calibrator, NanAndInfAreCountedAndIgnored) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  for (qnt_calib_method m : kAllMethods) {
    Cal with(m, QNT_DTYPE_I8, QNT_SCHEME_AFFINE), without(m, QNT_DTYPE_I8, QNT_SCHEME_AFFINE);
    observe(with.c, {7}, {nan, -1.0f, inf, 0.5f, -inf, 2.0f, nan});
    observe(without.c, {3}, {-1.0f, 0.5f, 2.0f});
    EXPECT_TRUE(compute(with.c) == compute(without.c)) << "method " << m;
    uint64_t f = 0, n = 0, i = 0;
    ASSERT_EQ(qnt_calibrator_counts(with.c, &f, &n, &i), QNT_OK);
    EXPECT_EQ(f, 3u);
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(i, 2u);
  }
}

TEST(Calibrator, EmptyAndReset) {
  for (qnt_calib_method m : kAllMethods) {
    Cal c(m, QNT_DTYPE_U8, QNT_SCHEME_AFFINE);
    Params p = compute(c.c);
    EXPECT_EQ(p.s, std::vector<float>{1.0f});
    EXPECT_EQ(p.z, std::vector<int32_t>{0});
    observe(c.c, {2}, {-4.0f, 4.0f});
    ASSERT_EQ(qnt_calibrator_reset(c.c), QNT_OK);
    p = compute(c.c);
    EXPECT_EQ(p.s, std::vector<float>{1.0f});
  }
  Cal pc(QNT_CALIB_MINMAX, QNT_DTYPE_U8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_AXIS, 0);
  qnt_qparams *qp = nullptr;
  EXPECT_EQ(qnt_calibrator_compute(nullptr, pc.c, &qp), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qp, nullptr);
}

TEST(Calibrator, Int32MinMaxEqualsOneShot) {
  Cal c(QNT_CALIB_MINMAX, QNT_DTYPE_I32, QNT_SCHEME_SYMMETRIC);
  observe(c.c, {2}, {-1000.0f, 2000.0f});
  EXPECT_EQ(compute(c.c).s[0], 0x1.f4p-21f);  // 2000 / 2^31, as qnt_calibrate_minmax gives
}

TEST(Calibrator, BadArguments) {
  qnt_calibrator *c = nullptr;
  EXPECT_EQ(qnt_calibrator_create(static_cast<qnt_calib_method>(0), QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_NF4, QNT_SCHEME_AFFINE,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                  QNT_GRANULARITY_PER_BLOCK, 0, &c),
            QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_I8, static_cast<qnt_scheme>(5),
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  Cal a(QNT_CALIB_ENTROPY, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(qnt_calibrator_set_option(a.c, QNT_CALIB_OPT_BINS, 1000), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_set_option(a.c, QNT_CALIB_OPT_PERCENTILE, 20), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_set_option(a.c, QNT_CALIB_OPT_AVERAGING, 0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_set_option(a.c, static_cast<qnt_calib_option>(9), 1),
            QNT_ERR_INVALID_ARGUMENT);
  observe(a.c, {1}, {1.0f});
  EXPECT_EQ(qnt_calibrator_set_option(a.c, QNT_CALIB_OPT_BINS, 512), QNT_ERR_INVALID_ARGUMENT);
  Cal b(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC);
  EXPECT_EQ(qnt_calibrator_merge(a.c, b.c), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_calibrator_merge(a.c, a.c), QNT_ERR_INVALID_ARGUMENT);
  T q;
  make_q(q, QNT_DTYPE_I8, {2}, nullptr);
  EXPECT_EQ(qnt_calibrator_observe(nullptr, a.c, q.t), QNT_ERR_DTYPE_MISMATCH);
}

// --- the SIMD batch kernels against the reference -----------------------------------------

TEST(CalibKernels, EverySetMatchesTheReference) {
  const std::vector<const qnt::kern::KernelSet *> ks = qnt_test::machine_kernel_sets();
  ASSERT_STREQ(ks.front()->scan_name, "ref");
  std::mt19937 rng(17);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            FLT_MAX,
                            -FLT_MAX,
                            3.99999f,
                            -4.0f,
                            4.0f};
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{33}, size_t{1023}, size_t{4099}}) {
    std::vector<float> x(n);
    for (float &v : x) v = nd(rng);
    for (size_t i = 0; i < n; i += 5)
      x[i] = specials[(i / 5) % (sizeof specials / sizeof specials[0])];
    qnt::ref::ScanResult want;
    ks.front()->scan(x.data(), n, &want);
    for (const auto *k : ks) {
      qnt::ref::ScanResult got;
      k->scan(x.data(), n, &got);
      EXPECT_EQ(got.finite, want.finite) << k->scan_name << " n=" << n;
      EXPECT_EQ(got.nan, want.nan) << k->scan_name;
      EXPECT_EQ(std::memcmp(&got.min, &want.min, 4), 0)
          << k->scan_name << " " << got.min << " " << want.min;
      EXPECT_EQ(std::memcmp(&got.max, &want.max, 4), 0) << k->scan_name;
    }
    // Histogram ranges 2^e from the smallest (2^-64) to past FLT_MAX, with the data scaled to
    // them, tiny values that underflow in float, and values on bin edges.
    for (int e : {-64, -20, 0, 2, 40, 127, 128}) {
      for (uint32_t bins : {128u, 2048u, 65536u}) {
        const double range = std::ldexp(1.0, e), inv = bins / range;
        std::vector<float> y(x);
        for (size_t i = 0; i < n; ++i) {
          if (i % 7 == 3) y[i] = static_cast<float>(std::ldexp(static_cast<double>(i % 11) - 5.0, e - 12));
          else if (i % 7 == 4) y[i] = static_cast<float>(-std::ldexp(1.0, e - 150 + static_cast<int>(i % 40)));
          else y[i] = static_cast<float>(static_cast<double>(x[i]) * range / 8.0);
        }
        std::vector<int32_t> want_idx(n), got_idx(n);
        ks.front()->bin_indices(y.data(), n, inv, range, static_cast<int32_t>(bins),
                                want_idx.data());
        for (const auto *k : ks) {
          k->bin_indices(y.data(), n, inv, range, static_cast<int32_t>(bins), got_idx.data());
          EXPECT_EQ(got_idx, want_idx) << k->bin_indices_name << " n=" << n << " e=" << e << " bins=" << bins;
        }
      }
    }
  }
}

TEST(Histogram, DoublingEqualsBinningAtTheWiderRange) {
  std::mt19937 rng(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(5000);
  for (float &v : x) v = nd(rng);
  x[0] = -0.0f;
  x[1] = std::numeric_limits<float>::denorm_min();
  x[2] = -std::numeric_limits<float>::denorm_min();
  qnt::calib::Histogram narrow(128), wide(128);
  narrow.cover(5.0);
  narrow.add(qnt::kern::kernels_for(QNT_ISA_REFERENCE), x.data(), x.size());
  narrow.cover(1000.0);  // doubles 8 times
  wide.cover(1000.0);
  wide.add(qnt::kern::kernels_for(qnt::machine_isa()), x.data(), x.size());
  EXPECT_EQ(narrow.exponent(), wide.exponent());
  EXPECT_EQ(narrow.counts(), wide.counts());
  EXPECT_EQ(narrow.total(), x.size());
}

// --- error reports -------------------------------------------------------------------------

TEST(ErrorReport, HandComputed) {
  T x;
  make_f32(x, {4}, {0.5f, 1.0f, 10.0f, -0.25f});
  QP exact, coarse;
  per_tensor(exact, QNT_DTYPE_I8, 0.25f, 0);
  per_tensor(coarse, QNT_DTYPE_I8, 0.05f, 0);
  qnt_error_report r{};
  ASSERT_EQ(qnt_error_report_compute(nullptr, x.t, exact.p, &r, sizeof r), QNT_OK);
  EXPECT_EQ(r.mse, 0.0);
  EXPECT_TRUE(std::isinf(r.sqnr_db));
  EXPECT_EQ(r.saturated_fraction, 0.0);
  EXPECT_EQ(r.count, 4u);
  ASSERT_EQ(qnt_error_report_compute(nullptr, x.t, coarse.p, &r, sizeof r), QNT_OK);
  // 10 / 0.05 = 200 saturates at 127: 6.35, an error of 3.65; the others are exact.
  EXPECT_NEAR(r.max_abs_error, 3.65, 1e-6);
  EXPECT_NEAR(r.mse, 3.65 * 3.65 / 4, 1e-5);
  EXPECT_EQ(r.saturated_fraction, 0.25);
  const double signal = 0.25 + 1 + 100 + 0.0625;
  EXPECT_NEAR(r.sqnr_db, 10 * std::log10(signal / (3.65 * 3.65)), 1e-4);
  EXPECT_EQ(qnt_error_report_compute(nullptr, x.t, exact.p, &r, 4), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_error_report_compute(nullptr, x.t, nullptr, &r, sizeof r), QNT_ERR_NULL_POINTER);
}

}  // namespace
