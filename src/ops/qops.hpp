// Front-ends of the quantized operators (see the contracts in qnt.h).
#pragma once

#include "core/context.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <qnt/qnt.h>

#include <memory>

namespace qnt::ops {

void qmatmul(const Context &ctx, const Tensor &a, const Tensor &b, const Tensor *bias, Tensor &y);

// The per-tensor u8 qparams ONNX DynamicQuantizeLinear gives x, and x quantized with them.
std::unique_ptr<Tensor> dynamic_quantize_linear(const Context &ctx, const Tensor &x);

void linear_dynamic(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                    qnt_act_quant mode, Tensor &y);
void linear_weight_only(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                        Tensor &y);

struct Conv2dDesc {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};
// [N, M, OH, OW]; throws on shapes that do not fit.
std::vector<int64_t> conv2d_output_shape(const Conv2dDesc &d, const Tensor &x, const Tensor &w);
void qconv2d(const Context &ctx, const Conv2dDesc &d, const Tensor &x, const Tensor &w,
             const Tensor *bias, Tensor &y);

void qadd(const Context &ctx, const Tensor &a, const Tensor &b, bool fuse_relu, Tensor &y);
// upper: nullptr for a plain ReLU.
void qrelu(const Context &ctx, const Tensor &x, const float *upper, Tensor &y);

}  // namespace qnt::ops
