#include "kernels/ref/calib_ref.hpp"

#include <cmath>
#include <limits>

namespace qnt::ref {

void scan(const float *x, size_t n, ScanResult *out) noexcept {
  finish_scan(nullptr, nullptr, 0, 0, 0, x, n, out);
}

void finish_scan(const float *lo, const float *hi, size_t lanes, uint64_t finite, uint64_t nan,
                 const float *tail, size_t tail_n, ScanResult *out) noexcept {
  ScanResult r;
  r.finite = finite;
  r.nan = nan;
  r.min = std::numeric_limits<float>::infinity();
  r.max = -std::numeric_limits<float>::infinity();
  for (size_t k = 0; k < lanes; ++k) {  // fmin / fmax without the library call: a NaN lane is
    if (lo[k] < r.min) r.min = lo[k];     // skipped all the same, and a zero extreme is made
    if (hi[k] > r.max) r.max = hi[k];     // +0.0 below
  }
  for (size_t i = 0; i < tail_n; ++i) {
    const float v = tail[i];
    if (std::isnan(v)) {
      ++r.nan;
    } else if (!std::isinf(v)) {
      ++r.finite;
      if (v < r.min) r.min = v;
      if (v > r.max) r.max = v;
    }
  }
  if (r.min == 0.0f) r.min = 0.0f;  // +0.0 whichever zero came first
  if (r.max == 0.0f) r.max = 0.0f;
  *out = r;
}

void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept {
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    idx[i] = std::fabs(v) < range ? static_cast<int32_t>(std::floor(v * inv)) + offset : -1;
  }
}

}  // namespace qnt::ref
