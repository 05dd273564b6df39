// One-shot calibrators over a whole f32 tensor.
#pragma once

#include "core/context.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <memory>
#include <optional>
#include <utility>

namespace qnt::calib {

// PyTorch MinMaxObserver / PerChannelMinMaxObserver (see qnt_calibrate_minmax in qnt.h).
// `range` is PyTorch's custom quant_min / quant_max, or nothing for the dtype's range. Runs on
// the context's threads with its scan kernel.
std::shared_ptr<const QParams> minmax(const Context &ctx, const Tensor &x, qnt_dtype dtype, qnt_scheme scheme,
                                      qnt_granularity granularity, int64_t axis, int64_t block_size,
                                      std::optional<std::pair<int32_t, int32_t>> range);

// The codebook dtypes' own scale rules (see qnt_calibrate_codebook in qnt.h).
std::shared_ptr<const QParams> codebook(const Context &ctx, const Tensor &x, qnt_dtype dtype,
                                        qnt_granularity granularity, int64_t axis,
                                        int64_t block_size);

// Power-of-two scales (see qnt_qparams_pow2_scales in qnt.h); x may be null.
std::shared_ptr<const QParams> pow2_scales(const QParams &qp, const Tensor *x);

}  // namespace qnt::calib
