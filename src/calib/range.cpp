#include "calib/range.hpp"

#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace qnt::calib {

QuantRange quant_range(const DTypeInfo &info, bool custom, int32_t qmin, int32_t qmax) {
  QuantRange r{info.qmin, info.qmax, symmetric_zero_point(info)};
  if (!custom) return r;
  if (qmin < info.qmin || qmax > info.qmax || qmin > 0 || qmax < 0 || qmin >= qmax)
    fail(QNT_ERR_INVALID_ARGUMENT, "quant range [", qmin, ", ", qmax,
         "] must contain 0, hold more than one value, and lie in [", info.qmin, ", ", info.qmax,
         "] of ", info.name);
  r.qmin = qmin;
  r.qmax = qmax;
  // PyTorch: a customized range puts the symmetric zero point of unsigned types at its
  // rounded-down midpoint.
  if (!info.is_signed)
    r.symmetric_zero_point = static_cast<int32_t>(std::floor((qmin + qmax) / 2.0));
  return r;
}

ScaleZeroPoint params_from_range(float lo, float hi, qnt_scheme scheme, const QuantRange &r) {
  // As PyTorch computes them: float(qmax - qmin), and float(qmax - qmin) / 2 in double, each
  // then rounded to float32 (for i32 both round up to powers of two).
  const auto span = static_cast<float>(static_cast<int64_t>(r.qmax) - r.qmin);
  const auto half_span = static_cast<float>((static_cast<double>(r.qmax) - r.qmin) / 2.0);
  const float mn = std::min(lo, 0.0f);
  const float mx = std::max(hi, 0.0f);
  ScaleZeroPoint p;
  if (scheme == QNT_SCHEME_SYMMETRIC) {
    p.scale = std::max(std::max(-mn, mx) / half_span, FLT_EPSILON);
    p.zero_point = r.symmetric_zero_point;
    return p;
  }
  const float s = std::max((mx - mn) / span, FLT_EPSILON);
  if (!std::isfinite(s))
    fail(QNT_ERR_INVALID_ARGUMENT, "the range [", mn, ", ", mx, "] overflows float32");
  const float shift = ref::round_half_to_even(mn / s);  // <= 0 and finite: mn <= 0, s > 0
  const double z = static_cast<double>(r.qmin) - static_cast<double>(shift);
  p.scale = s;
  p.zero_point =
      static_cast<int32_t>(std::clamp(z, static_cast<double>(r.qmin), static_cast<double>(r.qmax)));
  return p;
}

}  // namespace qnt::calib
