// Front-ends of the quantized operators (see the contracts in qnt.h).
#pragma once

#include "core/context.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"
#include "ops/desc.hpp"

#include <qnt/qnt.h>

#include <memory>
#include <vector>

namespace qnt::ops {

void qmatmul(const Context &ctx, const Tensor &a, const Tensor &b, const Tensor *bias, Tensor &y);
void binary_matmul(const Context &ctx, const Tensor &a, const Tensor &b, Tensor &y);

// qnt_ternary_layout_size, qnt_ternary_export, qnt_ternary_import (src/ops/ternary_layout.cpp).
size_t ternary_layout_size(qnt_ternary_layout layout, int64_t rows, int64_t cols, const qnt_ternary_tiling *t);
void ternary_export(qnt_ternary_layout layout, const Tensor &w, const qnt_ternary_tiling *t, uint8_t *out,
                    size_t capacity);
std::unique_ptr<Tensor> ternary_import(qnt_ternary_layout layout, const uint8_t *data, size_t bytes, int64_t rows,
                                       int64_t cols, const qnt_ternary_tiling *t, float scale);

// The per-tensor u8 qparams ONNX DynamicQuantizeLinear gives x, and x quantized with them.
std::unique_ptr<Tensor> dynamic_quantize_linear(const Context &ctx, const Tensor &x);

void linear_dynamic(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                    const OpDesc &desc, Tensor &y);
void linear_weight_only(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                        Tensor &y);

// [N, M, OH, OW]; throws on shapes that do not fit.
std::vector<int64_t> conv2d_output_shape(const OpDesc &d, const Tensor &x, const Tensor &w);
void qconv2d(const Context &ctx, const OpDesc &d, const Tensor &x, const Tensor &w,
             const Tensor *bias, Tensor &y);

void qadd(const Context &ctx, const Tensor &a, const Tensor &b, bool fuse_relu, Tensor &y);
// upper: nullptr for a plain ReLU.
void qrelu(const Context &ctx, const Tensor &x, const float *upper, Tensor &y);

}  // namespace qnt::ops
