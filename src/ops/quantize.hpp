// Front-ends of quantize, dequantize and requantize: the checks, then the kernel.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/registry.hpp"

namespace qnt::ops {

void quantize(const Context &ctx, const Tensor &x, Tensor &y);
void dequantize(const Context &ctx, const Tensor &q, Tensor &y);
void requantize(const Context &ctx, const Tensor &src, Tensor &dst);

// The kernels' view of a quantized tensor's dtype and rule.
kern::Format format_of(const ref::QuantSpec &s, qnt_dtype dtype);
// Dequantizes elements [begin, end) of the quantized tensor `in` into x[0 .. end - begin).
void dequantize_range(const kern::KernelSet &ks, const ref::QuantSpec &spec,
                      const kern::Format &f, const uint8_t *in, float *x, size_t begin,
                      size_t end);

}  // namespace qnt::ops
