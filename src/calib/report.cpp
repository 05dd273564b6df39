#include "calib/report.hpp"

#include "core/error.hpp"
#include "kernels/common/scalar.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qnt::calib {

void error_report(const Tensor &x, const QParams &qp, qnt_error_report &out) {
  if (x.dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, "x must be f32, not ", x.info().name);
  const GroupLayout l = qp.layout_for(x.shape(), x.rank());
  const DTypeInfo &info = qp.info();
  const auto *data = reinterpret_cast<const float *>(x.data());
  double signal = 0.0, noise = 0.0, worst = 0.0;
  uint64_t count = 0, saturated = 0;
  for (size_t i = 0; i < x.element_count(); ++i) {
    const float v = data[i];
    if (!std::isfinite(v)) continue;
    const size_t g = l.group_of(i);
    const float s = qp.scales()[g];
    float back = 0.0f;
    switch (info.rule) {
      case Rule::NF4: {
        const uint8_t code = ref::quantize_nf4(v, s);
        back = ref::dequantize_nf4(code, s);
        if (std::fabs(v * (1.0f / s)) > 1.0f) ++saturated;
        break;
      }
      case Rule::Binary:
        back = ref::dequantize_binary(ref::quantize_binary(v), s);
        break;
      case Rule::Log2:
        back = ref::dequantize_log2(ref::quantize_log2(v, s, info.bits), s, info.bits);
        if (rules::log2_round_exponent(std::fabs(v) / s) < 0) ++saturated;
        break;
      default: {
        const int32_t zp = qp.zero_points()[g];
        const int32_t q = ref::quantize_integer(v, s, zp, info.qmin, info.qmax);
        back = ref::dequantize_integer(q, s, zp);
        const double unclamped = static_cast<double>(ref::round_half_to_even(v / s)) + zp;
        if (unclamped < info.qmin || unclamped > info.qmax) ++saturated;
        break;
      }
    }
    const double e = static_cast<double>(v) - static_cast<double>(back);
    signal += static_cast<double>(v) * v;
    noise += e * e;
    worst = std::max(worst, std::fabs(e));
    ++count;
  }
  out.mse = count > 0 ? noise / static_cast<double>(count) : 0.0;
  out.sqnr_db =
      noise == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
  out.max_abs_error = worst;
  out.saturated_fraction =
      count > 0 ? static_cast<double>(saturated) / static_cast<double>(count) : 0.0;
  out.count = count;
}

}  // namespace qnt::calib
