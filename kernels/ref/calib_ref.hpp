// Reference kernels of the calibrators' passes over a batch: the statistics scan and the
// histogram bin indices. Their results are exact (no rounding is involved), so every kernel gives
// the same bits; the fast ones in kernels/cpu are tested against these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::ref {

struct ScanResult {
  uint64_t finite = 0;  // values that are neither NaN nor +-inf
  uint64_t nan = 0;
  float min = 0.0f;  // smallest and largest finite value (+inf / -inf when there is none);
  float max = 0.0f;  // a zero extreme is +0.0, never -0.0
};

// Min, max and counts of x[0 .. n).
void scan(const float *x, size_t n, ScanResult *out) noexcept;

// Completes a vector kernel's scan: folds its `lanes` running minima and maxima (lo, hi) and its
// counts with the reference scan of the leftover x[0 .. tail_n), and writes zero extremes as +0.0.
void finish_scan(const float *lo, const float *hi, size_t lanes, uint64_t finite, uint64_t nan,
                 const float *tail, size_t tail_n, ScanResult *out) noexcept;

// idx[i] = floor(x[i] * inv) + offset for |x[i]| < range (computed in double, where it is
// exact), and -1 for the others (NaN, +-inf, out of range). inv and range are powers of two.
void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept;

}  // namespace qnt::ref
