#include "calib/calibrate.hpp"

#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace qnt::calib {
namespace {

const float *float_data(const Tensor &x) {
  if (x.info().rule != Rule::Float)
    fail(QNT_ERR_DTYPE_MISMATCH, "x must be f32, not ", x.info().name);
  return reinterpret_cast<const float *>(x.data());
}

GroupLayout layout_of(const Tensor &x, qnt_granularity g, int64_t axis, int64_t block_size) {
  GroupLayout l = make_layout(g, axis, block_size, x.shape(), x.rank());
  if (l.groups == 0)
    fail(QNT_ERR_INVALID_ARGUMENT, "the axis has size 0: there is nothing to calibrate per axis");
  return l;
}

struct Range {
  float lo = INFINITY;
  float hi = -INFINITY;
};

}  // namespace

std::shared_ptr<const QParams> minmax(const Tensor &x, qnt_dtype dtype, qnt_scheme scheme,
                                      qnt_granularity granularity, int64_t axis, int64_t block_size,
                                      std::optional<std::pair<int32_t, int32_t>> range) {
  const DTypeInfo &info = dtype_info(dtype);
  if (info.rule == Rule::Float)
    fail(QNT_ERR_INVALID_ARGUMENT, "the target dtype must be quantized, not ", info.name);
  if (info.rule != Rule::Integer || info.zero_point_fixed)
    fail(QNT_ERR_UNSUPPORTED, "min-max calibration targets the integer dtypes, not ", info.name,
         " (use qnt_calibrate_codebook)");
  if (scheme != QNT_SCHEME_SYMMETRIC && scheme != QNT_SCHEME_AFFINE)
    fail(QNT_ERR_INVALID_ARGUMENT, "scheme = ", static_cast<int32_t>(scheme),
         " is not a qnt_scheme");
  int32_t qmin = info.qmin, qmax = info.qmax;
  int32_t sym_zp = symmetric_zero_point(info);
  if (range) {
    qmin = range->first;
    qmax = range->second;
    if (qmin < info.qmin || qmax > info.qmax || qmin > 0 || qmax < 0 || qmin >= qmax)
      fail(QNT_ERR_INVALID_ARGUMENT, "quant range [", qmin, ", ", qmax,
           "] must contain 0, hold more than one value, and lie in [", info.qmin, ", ", info.qmax,
           "] of ", info.name);
    // PyTorch: a customized range puts the symmetric zero point of unsigned types at its
    // rounded-down midpoint.
    if (!info.is_signed) sym_zp = static_cast<int32_t>(std::floor((qmin + qmax) / 2.0));
  }
  const float *data = float_data(x);
  const GroupLayout l = layout_of(x, granularity, axis, block_size);

  std::vector<Range> ranges(l.groups);
  for (size_t i = 0; i < x.element_count(); ++i) {
    const float v = data[i];
    if (!std::isfinite(v)) continue;
    Range &r = ranges[l.group_of(i)];
    r.lo = std::min(r.lo, v);
    r.hi = std::max(r.hi, v);
  }

  std::vector<float> scales(l.groups);
  std::vector<int32_t> zps(l.groups);
  // As PyTorch computes them: float(qmax - qmin), and float(qmax - qmin) / 2 in double, each
  // then rounded to float32 (for i32 both round up to powers of two).
  const auto span = static_cast<float>(static_cast<int64_t>(qmax) - qmin);
  const float half_span = static_cast<float>((static_cast<double>(qmax) - qmin) / 2.0);
  for (size_t g = 0; g < l.groups; ++g) {
    const Range &r = ranges[g];
    if (r.lo > r.hi) {  // nothing finite was seen: PyTorch's answer for an empty observer
      scales[g] = 1.0f;
      zps[g] = 0;
      continue;
    }
    const float mn = std::min(r.lo, 0.0f);
    const float mx = std::max(r.hi, 0.0f);
    if (scheme == QNT_SCHEME_SYMMETRIC) {
      const float amax = std::max(-mn, mx);
      scales[g] = std::max(amax / half_span, FLT_EPSILON);
      zps[g] = sym_zp;
    } else {
      const float s = std::max((mx - mn) / span, FLT_EPSILON);
      if (!std::isfinite(s))
        fail(QNT_ERR_INVALID_ARGUMENT, "the range [", mn, ", ", mx, "] of group ", g,
             " overflows float32");
      scales[g] = s;
      const float shift = ref::round_half_to_even(mn / s);  // <= 0 and finite: mn <= 0, s > 0
      const double z = static_cast<double>(qmin) - static_cast<double>(shift);
      zps[g] =
          static_cast<int32_t>(std::clamp(z, static_cast<double>(qmin), static_cast<double>(qmax)));
    }
  }
  return QParams::create(dtype, granularity, axis, block_size, scales.data(), zps.data(), l.groups);
}

std::shared_ptr<const QParams> codebook(const Tensor &x, qnt_dtype dtype,
                                        qnt_granularity granularity, int64_t axis,
                                        int64_t block_size) {
  const DTypeInfo &info = dtype_info(dtype);
  if (dtype != QNT_DTYPE_NF4 && dtype != QNT_DTYPE_BINARY && dtype != QNT_DTYPE_TERNARY)
    fail(QNT_ERR_INVALID_ARGUMENT, "codebook calibration is for nf4, binary and ternary, not ",
         info.name, " (use qnt_calibrate_minmax)");
  const float *data = float_data(x);
  const GroupLayout l = layout_of(x, granularity, axis, block_size);

  std::vector<double> acc(l.groups, 0.0);  // absmax (NF4) or sum of |x| (the others)
  std::vector<size_t> count(l.groups, 0);
  for (size_t i = 0; i < x.element_count(); ++i) {
    const float v = data[i];
    if (!std::isfinite(v)) continue;
    const size_t g = l.group_of(i);
    const double a = std::fabs(static_cast<double>(v));
    acc[g] = dtype == QNT_DTYPE_NF4 ? std::max(acc[g], a) : acc[g] + a;
    ++count[g];
  }
  std::vector<float> scales(l.groups);
  for (size_t g = 0; g < l.groups; ++g) {
    float s = dtype == QNT_DTYPE_NF4 ? static_cast<float>(acc[g])
              : count[g] == 0        ? 0.0f
                                     : static_cast<float>(acc[g] / static_cast<double>(count[g]));
    if (dtype == QNT_DTYPE_TERNARY)
      s = std::max(s, 1e-5f);
    else if (!(s > 0.0f))
      s = 1.0f;
    scales[g] = s;
  }
  return QParams::create(dtype, granularity, axis, block_size, scales.data(), nullptr, l.groups);
}

}  // namespace qnt::calib
