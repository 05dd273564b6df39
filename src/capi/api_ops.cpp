// Entry points: the quantized operators and the convolution descriptor.
#include "capi/boundary.hpp"
#include "ops/qops.hpp"

#include <limits>
#include <memory>

using namespace qnt;
using qnt::capi::conv_of;
using qnt::capi::guard;
using qnt::capi::optional_tensor;
using qnt::capi::require;
using qnt::capi::tensor_of;

namespace {

// Geometry values are capped so that every size computed from them fits in int64.
constexpr int64_t kGeometryMax = int64_t{1} << 31;

void check_range(int64_t v, int64_t lo, const char *name) {
  if (v < lo || v > kGeometryMax)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " = ", v, " is outside [", lo, ", 2^31]");
}

}  // namespace

extern "C" {

qnt_status qnt_qmatmul(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                       const qnt_tensor *bias, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qmatmul(capi::context_of(ctx), tensor_of(a, "a"), tensor_of(b, "b"),
                 optional_tensor(bias, "bias"), tensor_of(y, "y"));
  });
}

qnt_status qnt_dynamic_quantize_linear(qnt_context *ctx, const qnt_tensor *x, qnt_tensor **y_out) {
  return guard(__func__, [&] {
    const Tensor &t = tensor_of(x, "x");
    require(y_out, "y_out");
    auto y = ops::dynamic_quantize_linear(capi::context_of(ctx), t);
    *y_out = capi::new_tensor_handle(std::move(y));
  });
}

qnt_status qnt_linear_dynamic(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                              const qnt_tensor *bias, qnt_act_quant mode, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::linear_dynamic(capi::context_of(ctx), tensor_of(x, "x"), tensor_of(w, "w"),
                        optional_tensor(bias, "bias"), mode, tensor_of(y, "y"));
  });
}

qnt_status qnt_linear_weight_only(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                                  const qnt_tensor *bias, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::linear_weight_only(capi::context_of(ctx), tensor_of(x, "x"), tensor_of(w, "w"),
                            optional_tensor(bias, "bias"), tensor_of(y, "y"));
  });
}

qnt_status qnt_conv2d_desc_create(qnt_conv2d_desc **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = new qnt_conv2d_desc{capi::kConvMagic, ops::Conv2dDesc{}};
  });
}

void qnt_conv2d_desc_destroy(qnt_conv2d_desc *d) {
  if (d == nullptr || d->magic != capi::kConvMagic) return;
  d->magic = capi::kDeadMagic;
  delete d;
}

qnt_status qnt_conv2d_desc_set_strides(qnt_conv2d_desc *d, int64_t stride_h, int64_t stride_w) {
  return guard(__func__, [&] {
    ops::Conv2dDesc &c = conv_of(d, "d");
    check_range(stride_h, 1, "stride_h");
    check_range(stride_w, 1, "stride_w");
    c.stride_h = stride_h;
    c.stride_w = stride_w;
  });
}

qnt_status qnt_conv2d_desc_set_pads(qnt_conv2d_desc *d, int64_t top, int64_t left, int64_t bottom,
                                    int64_t right) {
  return guard(__func__, [&] {
    ops::Conv2dDesc &c = conv_of(d, "d");
    check_range(top, 0, "top");
    check_range(left, 0, "left");
    check_range(bottom, 0, "bottom");
    check_range(right, 0, "right");
    c.pad_top = top;
    c.pad_left = left;
    c.pad_bottom = bottom;
    c.pad_right = right;
  });
}

qnt_status qnt_conv2d_desc_set_dilations(qnt_conv2d_desc *d, int64_t dilation_h,
                                         int64_t dilation_w) {
  return guard(__func__, [&] {
    ops::Conv2dDesc &c = conv_of(d, "d");
    check_range(dilation_h, 1, "dilation_h");
    check_range(dilation_w, 1, "dilation_w");
    c.dilation_h = dilation_h;
    c.dilation_w = dilation_w;
  });
}

qnt_status qnt_conv2d_desc_set_groups(qnt_conv2d_desc *d, int64_t groups) {
  return guard(__func__, [&] {
    ops::Conv2dDesc &c = conv_of(d, "d");
    check_range(groups, 1, "groups");
    c.groups = groups;
  });
}

qnt_status qnt_conv2d_output_shape(const qnt_conv2d_desc *d, const qnt_tensor *x,
                                   const qnt_tensor *w, int64_t shape_out[4]) {
  return guard(__func__, [&] {
    const ops::Conv2dDesc &c = conv_of(d, "d");
    const Tensor &tx = tensor_of(x, "x");
    const Tensor &tw = tensor_of(w, "w");
    require(shape_out, "shape_out");
    const std::vector<int64_t> s = ops::conv2d_output_shape(c, tx, tw);
    for (size_t i = 0; i < 4; ++i) shape_out[i] = s[i];
  });
}

qnt_status qnt_qconv2d(qnt_context *ctx, const qnt_conv2d_desc *desc, const qnt_tensor *x,
                       const qnt_tensor *w, const qnt_tensor *bias, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qconv2d(capi::context_of(ctx), conv_of(desc, "desc"), tensor_of(x, "x"), tensor_of(w, "w"),
                 optional_tensor(bias, "bias"), tensor_of(y, "y"));
  });
}

qnt_status qnt_qadd(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b, int32_t fuse_relu,
                    qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qadd(capi::context_of(ctx), tensor_of(a, "a"), tensor_of(b, "b"), fuse_relu != 0,
              tensor_of(y, "y"));
  });
}

qnt_status qnt_qrelu(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qrelu(capi::context_of(ctx), tensor_of(x, "x"), nullptr, tensor_of(y, "y"));
  });
}

qnt_status qnt_qrelu_clamp(qnt_context *ctx, const qnt_tensor *x, float upper, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qrelu(capi::context_of(ctx), tensor_of(x, "x"), &upper, tensor_of(y, "y"));
  });
}

}  // extern "C"
