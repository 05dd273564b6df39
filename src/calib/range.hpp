// From a real range to a scale and zero point: PyTorch's MinMaxObserver formulas, shared by the
// one-shot and the streaming calibrators.
#pragma once

#include "core/dtype.hpp"

#include <qnt/qnt.h>

#include <cstdint>

namespace qnt::calib {

struct QuantRange {
  int32_t qmin = 0;
  int32_t qmax = 0;
  int32_t symmetric_zero_point = 0;
};

// The dtype's range, or PyTorch's custom quant_min / quant_max (validated: inside the dtype's
// range, 0 inside it, more than one value).
QuantRange quant_range(const DTypeInfo &info, bool custom, int32_t qmin, int32_t qmax);

struct ScaleZeroPoint {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// PyTorch's _calculate_qparams for the range [lo, hi] (widened to contain 0), float32
// arithmetic, scale >= FLT_EPSILON. Throws QNT_ERR_INVALID_ARGUMENT if the range overflows.
ScaleZeroPoint params_from_range(float lo, float hi, qnt_scheme scheme, const QuantRange &r);

}  // namespace qnt::calib
