// An exact, mergeable histogram over [-R, R) with R a power of two (see qnt.h, "Histograms").
#pragma once

#include "kernels/registry.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qnt::calib {

class Histogram {
 public:
  static constexpr int kMinExponent = -64;  // R is at least 2^-64
  static constexpr int kMaxExponent = 128;  // 2^128 > FLT_MAX

  Histogram() = default;
  explicit Histogram(uint32_t bins_per_side)
      : bins_(bins_per_side), counts_(2 * size_t{bins_per_side}, 0) {}

  uint32_t bins_per_side() const noexcept { return bins_; }
  bool has_range() const noexcept { return has_range_; }
  int exponent() const noexcept { return exponent_; }
  // R / bins, the width of every bin.
  double bin_width() const noexcept;
  const std::vector<uint64_t> &counts() const noexcept { return counts_; }
  uint64_t total() const noexcept;

  // Grows R (doubling, merging pairs of bins) until R > amax; amax finite and >= 0.
  void cover(double amax) noexcept;
  // Adds the values of x with |v| < R (call cover() with their max |v| first); the others
  // (NaN, +-inf) are skipped.
  void add(const kern::KernelSet &k, const float *x, size_t n) noexcept;
  // Adds other's counts, first bringing both to the wider range. Same bins per side.
  void merge(const Histogram &other);
  // The same without allocating: other (same bins per side, range no wider than this one's) is
  // widened in place, then added.
  void absorb(Histogram &other) noexcept;
  // Sets every count to 0 and forgets the range; keeps the storage.
  void clear() noexcept;

  // For deserialization: whether this histogram is the one the values with these exact extremes
  // give (min <= max finite): the range is the smallest that covers them, the bins of min and
  // max are not empty, and no bin outside them is. The searches rely on it.
  bool consistent_with(float min, float max) const noexcept;

  // For deserialization: the raw state, validated by the caller.
  void restore(bool has_range, int exponent, std::vector<uint64_t> counts);

 private:
  void double_range() noexcept;
  int exponent_for(double amax) const noexcept;

  uint32_t bins_ = 0;
  bool has_range_ = false;
  int exponent_ = kMinExponent;
  std::vector<uint64_t> counts_;
};

}  // namespace qnt::calib
