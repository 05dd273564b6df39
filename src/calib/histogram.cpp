#include "calib/histogram.hpp"

#include "kernels/registry.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace qnt::calib {

double Histogram::bin_width() const noexcept {
  return std::ldexp(1.0, exponent_) / static_cast<double>(bins_);
}

uint64_t Histogram::total() const noexcept {
  uint64_t t = 0;
  for (uint64_t c : counts_) t += c;
  return t;
}

int Histogram::exponent_for(double amax) const noexcept {
  // The smallest e with 2^e > amax.
  int e = kMinExponent;
  if (amax >= std::ldexp(1.0, e)) {
    int exp2 = 0;
    std::frexp(amax, &exp2);  // amax = m * 2^exp2, m in [0.5, 1): 2^(exp2 - 1) <= amax < 2^exp2
    e = exp2;
  }
  return e;
}

void Histogram::double_range() noexcept {
  // Doubling R doubles the width: new bin k (relative index k - bins) holds old bins 2k - bins
  // and 2k - bins + 1, because floor(floor(t) / 2) == floor(t / 2). Done in place: the lower
  // half downwards and the upper half upwards never read a slot already rewritten.
  const size_t b = bins_;
  uint64_t *c = counts_.data();
  for (size_t k = b; k-- > b / 2;) c[k] = c[2 * k - b] + c[2 * k - b + 1];
  for (size_t k = b; k < b + b / 2; ++k) c[k] = c[2 * k - b] + c[2 * k - b + 1];
  std::fill(c, c + b / 2, 0);
  std::fill(c + b + b / 2, c + 2 * b, 0);
  ++exponent_;
}

void Histogram::cover(double amax) noexcept {
  const int want = exponent_for(amax);
  if (!has_range_) {
    exponent_ = want;
    has_range_ = true;
    return;
  }
  while (exponent_ < want) double_range();
}

void Histogram::add(const kern::KernelSet &k, const float *x, size_t n) noexcept {
  if (!has_range_) return;
  const double range = std::ldexp(1.0, exponent_);
  // 1 / width = bins / 2^e, a power of two: x * inv is exact in double for every float x, and
  // floor() of it is exact, so the bin of a value never depends on rounding or on the kernel.
  const double inv = static_cast<double>(bins_) / range;
  uint64_t *c = counts_.data();
  constexpr size_t kChunk = 1024;  // indices of a chunk first, then the increments
  int32_t idx[kChunk];
  for (size_t start = 0; start < n; start += kChunk) {
    const size_t len = std::min(kChunk, n - start);
    k.bin_indices(x + start, len, inv, range, static_cast<int32_t>(bins_), idx);
    for (size_t i = 0; i < len; ++i)
      if (idx[i] >= 0) ++c[idx[i]];
  }
}

void Histogram::merge(const Histogram &other) {
  if (!other.has_range_) return;
  if (!has_range_) {
    *this = other;
    return;
  }
  Histogram wider = other;
  while (exponent_ < wider.exponent_) double_range();
  while (wider.exponent_ < exponent_) wider.double_range();
  for (size_t j = 0; j < counts_.size(); ++j) counts_[j] += wider.counts_[j];
}

void Histogram::absorb(Histogram &other) noexcept {
  if (!other.has_range_) return;
  if (!has_range_) {
    exponent_ = other.exponent_;
    has_range_ = true;
  }
  while (other.exponent_ < exponent_) other.double_range();
  for (size_t j = 0; j < counts_.size(); ++j) counts_[j] += other.counts_[j];
}

void Histogram::clear() noexcept {
  std::fill(counts_.begin(), counts_.end(), 0);
  has_range_ = false;
  exponent_ = kMinExponent;
}

bool Histogram::consistent_with(float min, float max) const noexcept {
  if (!has_range_ || !(min <= max)) return false;
  const double amax = std::max(-static_cast<double>(min), static_cast<double>(max));
  if (exponent_ != exponent_for(amax)) return false;
  const double inv = static_cast<double>(bins_) / std::ldexp(1.0, exponent_);  // exact (see add)
  const auto bin = [&](double v) {
    return static_cast<size_t>(static_cast<int64_t>(std::floor(v * inv)) + bins_);
  };
  const size_t lo = bin(min), hi = bin(max);
  if (hi >= counts_.size() || counts_[lo] == 0 || counts_[hi] == 0) return false;
  for (size_t j = 0; j < counts_.size(); ++j)
    if ((j < lo || j > hi) && counts_[j] != 0) return false;
  return true;
}

void Histogram::restore(bool has_range, int exponent, std::vector<uint64_t> counts) {
  has_range_ = has_range;
  exponent_ = exponent;
  counts_ = std::move(counts);
}

}  // namespace qnt::calib
