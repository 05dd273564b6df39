// Front-ends of quantize, dequantize and requantize: the checks, then the kernel.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"

namespace qnt::ops {

void quantize(const Context &ctx, const Tensor &x, Tensor &y);
void dequantize(const Context &ctx, const Tensor &q, Tensor &y);
void requantize(const Context &ctx, const Tensor &src, Tensor &dst);

}  // namespace qnt::ops
