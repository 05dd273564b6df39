#include "calib/calibrate.hpp"

#include "calib/range.hpp"

#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/registry.hpp"
#include "ops/common.hpp"
#include "ops/parallel.hpp"
#include "ops/runs.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

namespace qnt::calib {
namespace {

const float *float_data(const Tensor &x) {
  if (x.dtype() != QNT_DTYPE_F32)
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

// The extremes of each group's finite values (lo > hi: none), on the context's threads: each
// worker keeps its own per group, folded together after (min and max do not depend on the
// order). Runs sharing a group go through the scan kernel; runs whose group advances with the
// element are a plain loop.
std::vector<Range> group_ranges(const Context &ctx, const float *data, size_t n,
                                const GroupLayout &l) {
  const kern::KernelSet &ks = ctx.kernels();
  const int threads = ctx.threads();
  constexpr size_t kGrain = size_t{1} << 16;
  const size_t workers = ops::parallel_workers(threads, n, kGrain);
  std::vector<Range> all(workers * l.groups);
  ops::parallel_for_workers(threads, n, kGrain, [&](size_t b, size_t e, size_t w) {
    Range *ranges = all.data() + w * l.groups;
    ops::for_each_run(l, b, e, [&](size_t first, size_t len, size_t g, int kind) {
      const float *v = data + first;
      if (kind != kern::kPerElement) {  // a shared run, or blocks of one parameter each
        const size_t step = kind == kern::kShared ? len : static_cast<size_t>(l.block);
        for (size_t k = 0; k < len; k += step, ++g) {
          ref::ScanResult r;
          ks.scan(v + k, std::min(step, len - k), &r);
          if (r.finite == 0) continue;
          ranges[g].lo = std::min(ranges[g].lo, r.min);
          ranges[g].hi = std::max(ranges[g].hi, r.max);
        }
        return;
      }
      Range *rg = ranges + g;
      for (size_t k = 0; k < len; ++k) {
        if (!std::isfinite(v[k])) continue;
        rg[k].lo = std::min(rg[k].lo, v[k]);
        rg[k].hi = std::max(rg[k].hi, v[k]);
      }
    });
  });
  std::vector<Range> ranges(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(l.groups));
  for (size_t w = 1; w < workers; ++w)
    for (size_t g = 0; g < l.groups; ++g) {
      ranges[g].lo = std::min(ranges[g].lo, all[w * l.groups + g].lo);
      ranges[g].hi = std::max(ranges[g].hi, all[w * l.groups + g].hi);
    }

  return ranges;
}

}  // namespace

std::shared_ptr<const QParams> minmax(const Context &ctx, const Tensor &x, qnt_dtype dtype, qnt_scheme scheme,
                                      qnt_granularity granularity, int64_t axis, int64_t block_size,
                                      std::optional<std::pair<int32_t, int32_t>> range) {
  const DTypeInfo &info = dtype_info(dtype);
  if (info.rule == Rule::Float)
    fail(QNT_ERR_INVALID_ARGUMENT, "the target dtype must be quantized, not ", info.name);
  if (info.rule != Rule::Integer || info.zero_point_fixed)
    fail(QNT_ERR_UNSUPPORTED, "min-max calibration targets the integer dtypes, not ", info.name,
         " (use qnt_calibrate_codebook)");
  if (scheme == QNT_SCHEME_LOG2)
    fail(QNT_ERR_INVALID_ARGUMENT, "the log2 scheme belongs to the log dtypes (log4, log8), not ",
         info.name);
  if (scheme != QNT_SCHEME_SYMMETRIC && scheme != QNT_SCHEME_AFFINE)
    fail(QNT_ERR_INVALID_ARGUMENT, "scheme = ", static_cast<int32_t>(scheme),
         " is not a qnt_scheme");
  const QuantRange qr =
      quant_range(info, range.has_value(), range ? range->first : 0, range ? range->second : 0);
  const float *data = float_data(x);
  const GroupLayout l = layout_of(x, granularity, axis, block_size);

  const std::vector<Range> ranges = group_ranges(ctx, data, x.element_count(), l);

  std::vector<float> scales(l.groups);
  std::vector<int32_t> zps(l.groups);
  for (size_t g = 0; g < l.groups; ++g) {
    const Range &r = ranges[g];
    if (r.lo > r.hi) {  // nothing finite was seen: PyTorch's answer for an empty observer
      scales[g] = 1.0f;
      zps[g] = 0;
      continue;
    }
    const ScaleZeroPoint p = params_from_range(r.lo, r.hi, scheme, qr);
    scales[g] = p.scale;
    zps[g] = p.zero_point;
  }
  return QParams::create(dtype, granularity, axis, block_size, scales.data(), zps.data(), l.groups);
}

std::shared_ptr<const QParams> codebook(const Context &ctx, const Tensor &x, qnt_dtype dtype,
                                        qnt_granularity granularity, int64_t axis,
                                        int64_t block_size) {
  const DTypeInfo &info = dtype_info(dtype);
  if (dtype != QNT_DTYPE_NF4 && dtype != QNT_DTYPE_BINARY && dtype != QNT_DTYPE_TERNARY &&
      info.rule != Rule::Log2)
    fail(QNT_ERR_INVALID_ARGUMENT,
         "codebook calibration is for nf4, binary, ternary, log4 and log8, not ", info.name,
         " (use qnt_calibrate_minmax)");
  const bool absmax = dtype == QNT_DTYPE_NF4 || info.rule == Rule::Log2;
  const float *data = float_data(x);
  const GroupLayout l = layout_of(x, granularity, axis, block_size);

  std::vector<double> acc(l.groups, 0.0);  // absmax (NF4, log) or sum of |x| (the others)
  std::vector<size_t> count(l.groups, 0);
  if (absmax) {  // a maximum: any order, so the scan kernels and the threads
    const std::vector<Range> ranges = group_ranges(ctx, data, x.element_count(), l);
    for (size_t g = 0; g < l.groups; ++g)
      if (ranges[g].lo <= ranges[g].hi)
        acc[g] = std::max(std::fabs(static_cast<double>(ranges[g].lo)),
                          std::fabs(static_cast<double>(ranges[g].hi)));
  } else {
  // In element order (the sums are in double, and their order is part of the result).
  ops::for_each_run(l, 0, x.element_count(), [&](size_t first, size_t len, size_t g0, int kind) {
    for (size_t k = 0; k < len; ++k) {
      const float v = data[first + k];
      if (!std::isfinite(v)) continue;
      const size_t g = kind == kern::kShared       ? g0
                       : kind == kern::kPerElement ? g0 + k
                                                   : g0 + k / static_cast<size_t>(l.block);
      const double a = std::fabs(static_cast<double>(v));
      acc[g] += a;
      ++count[g];
    }
  });
  }
  std::vector<float> scales(l.groups);
  for (size_t g = 0; g < l.groups; ++g) {
    float s = absmax ? static_cast<float>(acc[g])
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

std::shared_ptr<const QParams> pow2_scales(const QParams &qp, const Tensor *x) {
  const size_t n = qp.count();
  std::vector<float> below(n), above(n);
  for (size_t g = 0; g < n; ++g) {
    const float s = qp.scales()[g];
    int e = 0;
    const float m = std::frexp(s, &e);  // s = m * 2^e, m in [0.5, 1), exact
    if (m == 0.5f) {
      below[g] = above[g] = s;
      continue;
    }
    below[g] = std::ldexp(1.0f, e - 1);
    above[g] = std::ldexp(1.0f, e);
    if (!std::isfinite(above[g]))
      fail(QNT_ERR_INVALID_QPARAMS, "scale ", s, " (group ", g,
           ") has no power of two above it in float32");
  }
  if (x == nullptr)
    return QParams::create(qp.dtype(), qp.granularity(), qp.axis(), qp.block_size(), above.data(),
                           qp.zero_points(), n);
  const float *data = float_data(*x);
  const GroupLayout l = qp.layout_for(x->shape(), x->rank());
  const DTypeInfo &info = qp.info();
  const ref::Code code = ops::code_of(info);
  // Each group's squared errors under the two candidates, summed in double in element order.
  std::vector<double> err_below(n, 0.0), err_above(n, 0.0);
  auto sq = [&](float v, float s, int32_t zp) {
    const int32_t q = ref::quantize_code(code, v, s, zp, info.qmin, info.qmax, info.bits);
    const double d = static_cast<double>(v) -
                     static_cast<double>(ref::dequantize_code(code, q, s, zp, info.bits));
    return d * d;
  };
  for (size_t i = 0, count = x->element_count(); i < count; ++i) {
    const float v = data[i];
    if (!std::isfinite(v)) continue;
    const size_t g = l.group_of(i);
    const int32_t zp = qp.zero_points()[g];
    err_below[g] += sq(v, below[g], zp);
    err_above[g] += sq(v, above[g], zp);
  }
  std::vector<float> scales(n);
  for (size_t g = 0; g < n; ++g) scales[g] = err_above[g] <= err_below[g] ? above[g] : below[g];
  return QParams::create(qp.dtype(), qp.granularity(), qp.axis(), qp.block_size(), scales.data(),
                         qp.zero_points(), n);
}

}  // namespace qnt::calib
