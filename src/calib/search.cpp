#include "calib/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace qnt::calib {
namespace {

// Counts of |x|: folded[k] holds the values in [k w, (k + 1) w) and in (-(k + 1) w, -k w].
std::vector<uint64_t> folded(const Histogram &h) {
  const size_t b = h.bins_per_side();
  std::vector<uint64_t> f(b);
  for (size_t k = 0; k < b; ++k) f[k] = h.counts()[b + k] + h.counts()[b - 1 - k];
  return f;
}

// The value below which a fraction q of the counts lies, interpolating linearly in its bin;
// bins start at `first_edge` and are `width` wide.
double quantile(const std::vector<uint64_t> &c, double first_edge, double width, double q) {
  uint64_t total = 0;
  for (uint64_t v : c) total += v;
  const double target = q * static_cast<double>(total);
  double before = 0.0;
  for (size_t k = 0; k < c.size(); ++k) {
    const auto n = static_cast<double>(c[k]);
    if (n > 0.0 && before + n >= target)
      return first_edge + (static_cast<double>(k) + (target - before) / n) * width;
    before += n;
  }
  return first_edge + static_cast<double>(c.size()) * width;
}

float amax_of(const SearchInput &in) { return std::max(-in.min, in.max); }

RealRange symmetric(double t, const SearchInput &in) {
  const auto tf = static_cast<float>(std::min<double>(t, amax_of(in)));
  if (in.scheme == QNT_SCHEME_SYMMETRIC) return {-tf, tf};
  return {std::max(in.min, -tf), std::min(in.max, tf)};
}

ScaleZeroPoint grid(const SearchInput &in, double lo, double hi) {
  return params_from_range(static_cast<float>(lo), static_cast<float>(hi), in.scheme, in.range);
}

double error_of(const SearchInput &in, double lo, double hi) {
  const ScaleZeroPoint p = grid(in, lo, hi);
  return expected_sq_error(*in.hist, p.scale, p.zero_point, in.range.qmin, in.range.qmax);
}

// MXNet's / ONNX Runtime's smoothing: zeros become eps, the mass is taken from the nonzeros.
bool smooth(std::vector<double> &p) {
  const double eps = 1e-4;
  size_t zeros = 0;
  for (double v : p) zeros += v == 0.0 ? 1 : 0;
  const size_t nonzeros = p.size() - zeros;
  if (nonzeros == 0) return false;
  const double take = eps * static_cast<double>(zeros) / static_cast<double>(nonzeros);
  for (double &v : p) v = v == 0.0 ? eps : v - take;
  return true;
}

double kl_divergence(std::vector<double> p, std::vector<double> q) {
  double sp = 0.0, sq = 0.0;
  for (double v : p) sp += v;
  for (double v : q) sq += v;
  if (sp <= 0.0 || sq <= 0.0) return std::numeric_limits<double>::infinity();
  for (double &v : p) v /= sp;
  for (double &v : q) v /= sq;
  if (!smooth(p) || !smooth(q)) return std::numeric_limits<double>::infinity();
  double d = 0.0;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] > 0.0) d += p[i] * std::log(p[i] / q[i]);
  return d;
}

}  // namespace

double expected_sq_error(const Histogram &h, float scale, int32_t zero_point, int32_t qmin,
                         int32_t qmax) {
  const double s = scale, w = h.bin_width();
  const double lo_q = static_cast<double>(qmin) - zero_point,
               hi_q = static_cast<double>(qmax) - zero_point;
  const double low_clip = (lo_q - 0.5) * s, high_clip = (hi_q + 0.5) * s;
  const double r_lo = lo_q * s, r_hi = hi_q * s;
  // Antiderivative of (x - s * round(x / s))^2: full cells of s^3 / 12 plus the partial one.
  auto rounding = [s](double x) {
    const double c = std::floor(x / s + 0.5), f = x / s - c;
    return c * s * s * s / 12.0 + ((f * s) * (f * s) * (f * s) + s * s * s / 8.0) / 3.0;
  };
  auto clipped = [](double a, double b, double r) {
    return ((b - r) * (b - r) * (b - r) - (a - r) * (a - r) * (a - r)) / 3.0;
  };
  const size_t b = h.bins_per_side();
  double total = 0.0;
  for (size_t j = 0; j < h.counts().size(); ++j) {
    const uint64_t n = h.counts()[j];
    if (n == 0) continue;
    const double a = (static_cast<double>(j) - static_cast<double>(b)) * w, e = a + w;
    double err = 0.0;
    if (a < low_clip) err += clipped(a, std::min(e, low_clip), r_lo);
    if (e > high_clip) err += clipped(std::max(a, high_clip), e, r_hi);
    const double u = std::max(a, low_clip), v = std::min(e, high_clip);
    if (u < v) err += rounding(v) - rounding(u);
    total += static_cast<double>(n) / w * err;
  }
  return total;
}

RealRange percentile_range(const SearchInput &in, double percentile) {
  const Histogram &h = *in.hist;
  const double w = h.bin_width(), p = percentile / 100.0;
  if (in.scheme == QNT_SCHEME_SYMMETRIC) return symmetric(quantile(folded(h), 0.0, w, p), in);
  const double first = -static_cast<double>(h.bins_per_side()) * w;
  const double lo = quantile(h.counts(), first, w, 1.0 - p);
  const double hi = quantile(h.counts(), first, w, p);
  return {static_cast<float>(std::max<double>(lo, in.min)),
          static_cast<float>(std::min<double>(hi, in.max))};
}

RealRange entropy_range(const SearchInput &in) {
  const std::vector<uint64_t> f = folded(*in.hist);
  const double w = in.hist->bin_width();
  // Levels on one side of zero: 128 for 8 bits, 8 for 4 bits.
  const auto levels =
      static_cast<size_t>((static_cast<int64_t>(in.range.qmax) - in.range.qmin + 1) / 2);
  size_t last = 0;  // one past the last nonzero bin
  for (size_t k = 0; k < f.size(); ++k)
    if (f[k] != 0) last = k + 1;
  if (levels == 0 || last <= levels) return symmetric(static_cast<double>(last) * w, in);

  double best = std::numeric_limits<double>::infinity();
  size_t best_i = last;
  for (size_t i = levels; i <= last; ++i) {
    // P: the first i bins, with everything beyond folded into the last one.
    std::vector<double> p(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(i));
    double outliers = 0.0;
    for (size_t k = i; k < f.size(); ++k) outliers += static_cast<double>(f[k]);
    p[i - 1] += outliers;
    // Q: the first i bins merged into `levels` groups, each spread evenly over its nonzero bins.
    std::vector<double> q(i, 0.0);
    const size_t merged = i / levels;
    for (size_t g = 0; g < levels; ++g) {
      const size_t start = g * merged, stop = g + 1 == levels ? i : start + merged;
      double sum = 0.0;
      size_t nonzero = 0;
      for (size_t k = start; k < stop; ++k) {
        sum += static_cast<double>(f[k]);
        nonzero += f[k] != 0 ? 1 : 0;
      }
      if (nonzero == 0) continue;
      for (size_t k = start; k < stop; ++k)
        if (f[k] != 0) q[k] = sum / static_cast<double>(nonzero);
    }
    const double d = kl_divergence(std::move(p), std::move(q));
    if (d < best) {
      best = d;
      best_i = i;
    }
  }
  return symmetric(static_cast<double>(best_i) * w, in);
}

RealRange mse_range(const SearchInput &in) {
  const Histogram &h = *in.hist;
  const double w = h.bin_width();
  const size_t b = h.bins_per_side();
  if (in.scheme == QNT_SCHEME_SYMMETRIC) {
    const double amax = amax_of(in);
    double best_t = amax, best = error_of(in, -amax, amax);
    for (size_t k = 1; static_cast<double>(k) * w < amax; ++k) {
      const double t = static_cast<double>(k) * w, e = error_of(in, -t, t);
      if (e < best) {
        best = e;
        best_t = t;
      }
    }
    return {static_cast<float>(-best_t), static_cast<float>(best_t)};
  }
  // Affine: ends on bin edges inside [min, 0] and [0, max], shrunk greedily from the extremes.
  auto edge = [&](size_t j) { return (static_cast<double>(j) - static_cast<double>(b)) * w; };
  size_t lo = b, hi = b;
  for (size_t j = 0; j < 2 * b; ++j)
    if (h.counts()[j] != 0) {
      lo = std::min(lo, j);
      hi = std::max(hi, j + 1);
    }
  // A candidate's ends, kept inside what was observed.
  auto lo_at = [&](size_t j) { return std::max<double>(edge(j), in.min); };
  auto hi_at = [&](size_t j) { return std::min<double>(edge(j), in.max); };
  const double inf = std::numeric_limits<double>::infinity();
  double best_lo = in.min, best_hi = in.max, best = error_of(in, in.min, in.max);
  while (lo < b || hi > b) {
    const double e_lo = lo < b ? error_of(in, lo_at(lo + 1), hi_at(hi)) : inf;
    const double e_hi = hi > b ? error_of(in, lo_at(lo), hi_at(hi - 1)) : inf;
    if (e_lo <= e_hi)
      ++lo;
    else
      --hi;
    const double e = std::min(e_lo, e_hi);
    if (e < best) {
      best = e;
      best_lo = lo_at(lo);
      best_hi = hi_at(hi);
    }
  }
  return {static_cast<float>(best_lo), static_cast<float>(best_hi)};
}

}  // namespace qnt::calib
