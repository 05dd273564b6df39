// Range searches over a histogram: percentile, entropy (KL), MSE, and the expected squared
// quantization error they and the adaptive method use.
#pragma once

#include "calib/histogram.hpp"
#include "calib/range.hpp"

#include <qnt/qnt.h>

namespace qnt::calib {

// What a search needs besides the histogram: the exact extremes seen and the target grid.
struct SearchInput {
  const Histogram *hist = nullptr;
  float min = 0.0f;  // exact smallest and largest finite values seen
  float max = 0.0f;
  qnt_scheme scheme = QNT_SCHEME_SYMMETRIC;
  QuantRange range;
};

struct RealRange {
  float lo = 0.0f;
  float hi = 0.0f;
};

RealRange percentile_range(const SearchInput &in, double percentile);
RealRange entropy_range(const SearchInput &in);
RealRange mse_range(const SearchInput &in);

// The expected squared error of quantizing the histogram's values (uniform within each bin)
// with scale and zero point on [qmin, qmax], summed over all values (not averaged).
double expected_sq_error(const Histogram &h, float scale, int32_t zero_point, int32_t qmin,
                         int32_t qmax);

// The logarithmic codes (QNT_DTYPE_LOG4 / LOG8, `bits` 4 or 8): the squared error of the
// histogram's values, each bin's count taken at its midpoint, under the log rule with `scale`;
// and the clip (the scale) among T * 2^(-j/64), j = 0..63, T the largest |x| seen, with the
// least such error (the larger on a tie).
double log2_sq_error(const Histogram &h, float scale, int bits);
float log2_mse_clip(const SearchInput &in, int bits);

}  // namespace qnt::calib
