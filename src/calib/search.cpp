#include "calib/search.hpp"

#include "kernels/common/scalar.hpp"

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

// The error of one bin's values (spread uniformly over the bin) on a grid: the exact rule of
// expected_sq_error, for one bin.
struct Grid {
  double s, low_clip, high_clip, r_lo, r_hi;
  Grid(float scale, int32_t zero_point, int32_t qmin, int32_t qmax) : s(scale) {
    const double lo_q = static_cast<double>(qmin) - zero_point,
                 hi_q = static_cast<double>(qmax) - zero_point;
    low_clip = (lo_q - 0.5) * s;
    high_clip = (hi_q + 0.5) * s;
    r_lo = lo_q * s;
    r_hi = hi_q * s;
  }
  // Antiderivative of (x - s * round(x / s))^2: full cells of s^3 / 12 plus the partial one.
  double rounding(double x) const {
    const double c = std::floor(x / s + 0.5), f = x / s - c;
    return c * s * s * s / 12.0 + ((f * s) * (f * s) * (f * s) + s * s * s / 8.0) / 3.0;
  }
  static double clipped(double a, double b, double r) {
    return ((b - r) * (b - r) * (b - r) - (a - r) * (a - r) * (a - r)) / 3.0;
  }
  // The summed squared error of n values spread over [a, a + w).
  double bin(double a, double w, double n) const {
    const double e = a + w;
    double err = 0.0;
    if (a < low_clip) err += clipped(a, std::min(e, low_clip), r_lo);
    if (e > high_clip) err += clipped(std::max(a, high_clip), e, r_hi);
    const double u = std::max(a, low_clip), v = std::min(e, high_clip);
    if (u < v) err += rounding(v) - rounding(u);
    return n / w * err;
  }
};

// The searches' error model, O(1) a candidate after O(bins) set-up in one buffer of prefix
// sums: values clipped off a grid cost their exact squared distance to the clip end (spread
// over their bin), values inside cost s^2 / 12 each (a value's rounding error, uniform over a
// cell), and the bins that straddle a clip end or touch 0 (a spike of zeros quantizes exactly)
// are charged by the exact per-bin rule.
class ErrorModel {
 public:
  explicit ErrorModel(const Histogram &h)
      : h_(h), w_(h.bin_width()), n2_(h.counts().size()), buf_(3 * (n2_ + 1), 0.0) {
    const size_t b = h.bins_per_side();
    for (size_t j = 0; j < n2_; ++j) {
      const auto n = static_cast<double>(h.counts()[j]);
      const double m = (static_cast<double>(j) - static_cast<double>(b) + 0.5) * w_;
      N(j + 1) = N(j) + n;
      M1(j + 1) = M1(j) + n * m;
      M2(j + 1) = M2(j) + n * m * m;
    }
  }

  double error(const ScaleZeroPoint &p, const QuantRange &r) const {
    const Grid g(p.scale, p.zero_point, r.qmin, r.qmax);
    const auto b = static_cast<double>(h_.bins_per_side());
    auto bin_of = [&](double x) {  // the bin holding x, clamped to [0, n2_ - 1]
      const double j = std::floor(x / w_) + b;
      return static_cast<size_t>(std::clamp(j, 0.0, static_cast<double>(n2_ - 1)));
    };
    const size_t jl = bin_of(g.low_clip), jh = bin_of(g.high_clip);
    const double var = w_ * w_ / 12.0;
    double total = 0.0;
    // Bins wholly below jl and wholly above jh: clipped, sum n * ((m - r)^2 + w^2 / 12).
    auto clipped = [&](size_t j0, size_t j1, double rr) {
      const double n = N(j1) - N(j0), m1 = M1(j1) - M1(j0), m2 = M2(j1) - M2(j0);
      return std::max(0.0, m2 - 2.0 * rr * m1 + rr * rr * n) + n * var;
    };
    total += clipped(0, jl, g.r_lo);
    if (jh + 1 < n2_) total += clipped(jh + 1, n2_, g.r_hi);
    // The edge bins exactly; the bins between them at s^2 / 12 a value, but the two beside 0
    // exactly.
    auto exact = [&](size_t j) {
      const auto n = static_cast<double>(h_.counts()[j]);
      return n == 0.0 ? 0.0 : g.bin((static_cast<double>(j) - b) * w_, w_, n);
    };
    total += exact(jl);
    if (jh != jl) total += exact(jh);
    if (jh > jl + 1) {
      total += (N(jh) - N(jl + 1)) * g.s * g.s / 12.0;
      const size_t zb = h_.bins_per_side();
      for (size_t j : {zb - 1, zb})
        if (j > jl && j < jh)
          total += exact(j) - static_cast<double>(h_.counts()[j]) * g.s * g.s / 12.0;
    }
    return total;
  }

 private:
  double &N(size_t j) { return buf_[j]; }
  double &M1(size_t j) { return buf_[n2_ + 1 + j]; }
  double &M2(size_t j) { return buf_[2 * (n2_ + 1) + j]; }
  double N(size_t j) const { return buf_[j]; }
  double M1(size_t j) const { return buf_[n2_ + 1 + j]; }
  double M2(size_t j) const { return buf_[2 * (n2_ + 1) + j]; }

  const Histogram &h_;
  double w_;
  size_t n2_;
  std::vector<double> buf_;
};

}  // namespace

double expected_sq_error(const Histogram &h, float scale, int32_t zero_point, int32_t qmin,
                         int32_t qmax) {
  const Grid g(scale, zero_point, qmin, qmax);
  const double w = h.bin_width();
  const auto b = static_cast<double>(h.bins_per_side());
  double total = 0.0;
  for (size_t j = 0; j < h.counts().size(); ++j) {
    const uint64_t n = h.counts()[j];
    if (n != 0) total += g.bin((static_cast<double>(j) - b) * w, w, static_cast<double>(n));
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

  // One buffer of prefix sums: F (counts), NZ (nonzero bins), PL (sum of P log P over nonzero
  // bins, P = count / total).
  const size_t nb = f.size();
  std::vector<double> buf(3 * (nb + 1), 0.0);
  double *F = buf.data(), *NZ = F + nb + 1, *PL = NZ + nb + 1;
  for (size_t k = 0; k < nb; ++k) F[k + 1] = F[k] + static_cast<double>(f[k]);
  const double T = F[nb];
  for (size_t k = 0; k < nb; ++k) {
    NZ[k + 1] = NZ[k] + (f[k] != 0 ? 1.0 : 0.0);
    const double p = static_cast<double>(f[k]) / T;
    PL[k + 1] = PL[k] + (f[k] != 0 ? p * std::log(p) : 0.0);
  }
  // KL(P || Q) for the candidate threshold of i bins (see qnt.h): P is the first i bins with
  // the rest folded into bin i - 1; Q merges the first i bins into `levels` groups of i / levels
  // bins (the last group takes the rest), each group's count spread evenly over its nonzero
  // bins. Bins empty in both contribute nothing; a bin empty in Q only counts as eps. For all
  // candidates with one group width m, the sums over the first levels - 1 groups are the same:
  // they are computed once per m, so the whole search costs O(bins).
  constexpr double eps = 1e-4;
  double best = std::numeric_limits<double>::infinity();
  size_t best_i = last;
  size_t cached_m = 0;
  double C = 0.0, W = 0.0;  // sum over full groups of (sum/T) log(sum/nz), and of sum/T
  for (size_t i = levels; i <= last; ++i) {
    const size_t m = i / levels;
    if (m != cached_m) {
      C = W = 0.0;
      for (size_t g = 0; g + 1 < levels; ++g) {
        const double sum = F[(g + 1) * m] - F[g * m], nz = NZ[(g + 1) * m] - NZ[g * m];
        if (sum > 0.0) {
          C += sum / T * std::log(sum / nz);
          W += sum / T;
        }
      }
      cached_m = m;
    }
    const double S = F[i];
    if (S <= 0.0) continue;  // Q is empty: no divergence is defined
    const double logS = std::log(S);
    const size_t start = (levels - 1) * m;
    const double sum_last = F[i] - F[start], nz_last = NZ[i] - NZ[start];
    double kl = PL[i - 1] - (C - W * logS);
    if (nz_last > 0.0)
      kl -= (F[i - 1] - F[start]) / T * (std::log(sum_last / nz_last) - logS);
    const double p_last = (static_cast<double>(f[i - 1]) + (T - S)) / T;
    if (f[i - 1] != 0)
      kl += p_last * std::log(p_last / (sum_last / nz_last / S));
    else if (p_last > 0.0)
      kl += p_last * std::log(p_last / eps);
    if (kl < best) {
      best = kl;
      best_i = i;
    }
  }
  return symmetric(static_cast<double>(best_i) * w, in);
}

RealRange mse_range(const SearchInput &in) {
  const Histogram &h = *in.hist;
  const ErrorModel model(h);
  auto error_of = [&](double lo, double hi) { return model.error(grid(in, lo, hi), in.range); };
  // The model's best candidates are then compared by the exact rule (a few O(bins) evaluations),
  // so the answer is the exact search's wherever the model's ranking is right to a few bins.
  auto exact_of = [&](double lo, double hi) {
    const ScaleZeroPoint p = grid(in, lo, hi);
    return expected_sq_error(h, p.scale, p.zero_point, in.range.qmin, in.range.qmax);
  };
  const double w = h.bin_width();
  const size_t b = h.bins_per_side();
  if (in.scheme == QNT_SCHEME_SYMMETRIC) {
    const double amax = amax_of(in);
    // Candidates: k * w below amax (k >= 1), and amax itself (k = 0 stands for it).
    size_t last_k = 0;
    while (static_cast<double>(last_k + 1) * w < amax) ++last_k;
    auto t_of = [&](size_t k) { return k == 0 ? amax : static_cast<double>(k) * w; };
    double best = error_of(-amax, amax);
    size_t best_k = 0;
    for (size_t k = 1; k <= last_k; ++k) {
      const double t = t_of(k), e = error_of(-t, t);
      if (e < best) {
        best = e;
        best_k = k;
      }
    }
    // The exact rule over a window of +-32 bins around the model's best, every 4th bin, then
    // every bin within 4 of the best of those (26 exact evaluations).
    const size_t top = last_k + 1;  // amax sits above the last edge
    const size_t centre = best_k == 0 ? top : best_k;
    double best_exact = std::numeric_limits<double>::infinity();
    double best_t = amax;
    size_t best_j = centre;
    auto scan = [&](size_t from, size_t to, size_t step) {
      for (size_t k = std::max<size_t>(from, 1); k <= std::min(to, top); k += step) {
        const double t = k == top ? amax : t_of(k), e = exact_of(-t, t);
        if (e < best_exact) {
          best_exact = e;
          best_t = t;
          best_j = k;
        }
      }
    };
    scan(centre > 32 ? centre - 32 : 1, centre + 32, 4);
    const size_t c1 = best_j;
    scan(c1 > 4 ? c1 - 4 : 1, c1 + 4, 1);
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
  const size_t lo_start = lo, hi_start = hi;
  // A candidate's ends, kept inside what was observed (at the start they are min and max).
  auto lo_at = [&](size_t j) { return std::max<double>(edge(j), in.min); };
  auto hi_at = [&](size_t j) { return std::min<double>(edge(j), in.max); };
  const double inf = std::numeric_limits<double>::infinity();
  size_t best_lo = lo, best_hi = hi;
  double best = error_of(lo_at(lo), hi_at(hi));
  while (lo < b || hi > b) {
    const double e_lo = lo < b ? error_of(lo_at(lo + 1), hi_at(hi)) : inf;
    const double e_hi = hi > b ? error_of(lo_at(lo), hi_at(hi - 1)) : inf;
    if (e_lo <= e_hi)
      ++lo;
    else
      --hi;
    const double e = std::min(e_lo, e_hi);
    if (e < best) {
      best = e;
      best_lo = lo;
      best_hi = hi;
    }
  }
  // The exact rule around the model's best, one end at a time: the lower end over +-32 bins
  // every 4th, then +-4 every bin; then the upper end the same way.
  double best_exact = inf;
  auto refine = [&](size_t &end, size_t lowest, size_t highest, bool is_lo) {
    auto run = [&](size_t centre, size_t radius, size_t step) {
      const size_t from = centre > lowest + radius ? centre - radius : lowest;
      const size_t to = std::min(centre + radius, highest);
      size_t best_at = end;
      for (size_t j = from; j <= to; j += step) {
        const double e = is_lo ? exact_of(lo_at(j), hi_at(best_hi)) : exact_of(lo_at(best_lo), hi_at(j));
        if (e < best_exact) {
          best_exact = e;
          best_at = j;
        }
      }
      end = best_at;
    };
    run(end, 32, 4);
    run(end, 4, 1);
  };
  best_exact = exact_of(lo_at(best_lo), hi_at(best_hi));
  refine(best_lo, lo_start, b, true);
  refine(best_hi, b, hi_start, false);
  const double out_lo = lo_at(best_lo), out_hi = hi_at(best_hi);
  return {static_cast<float>(out_lo), static_cast<float>(out_hi)};
}

double log2_sq_error(const Histogram &h, float scale, int bits) {
  const std::vector<uint64_t> f = folded(h);
  const double w = h.bin_width();
  double sum = 0.0;
  for (size_t k = 0; k < f.size(); ++k) {
    if (f[k] == 0) continue;
    const auto v = static_cast<float>((static_cast<double>(k) + 0.5) * w);
    const double d = static_cast<double>(v) -
                     static_cast<double>(rules::dequantize_log2(rules::quantize_log2(v, scale, bits),
                                                                scale, bits));
    sum += static_cast<double>(f[k]) * d * d;
  }
  return sum;
}

float log2_mse_clip(const SearchInput &in, int bits) {
  const double top = std::max(std::fabs(static_cast<double>(in.min)),
                              std::fabs(static_cast<double>(in.max)));
  float best = static_cast<float>(top);
  double best_error = std::numeric_limits<double>::infinity();
  for (int j = 0; j < 64; ++j) {
    const auto c = static_cast<float>(top * std::exp2(-j / 64.0));
    if (!(c > 0.0f)) break;
    const double e = log2_sq_error(*in.hist, c, bits);
    if (e < best_error) {  // strictly better: a tie keeps the larger clip, met first
      best_error = e;
      best = c;
    }
  }
  return best;
}

}  // namespace qnt::calib
