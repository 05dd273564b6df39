// Entry points: the quantized operators, their options, and the prepared operators.
#include "capi/boundary.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"

#include <memory>

using namespace qnt;
using qnt::capi::desc_of;
using qnt::capi::guard;
using qnt::capi::optional_tensor;
using qnt::capi::prepared_of;
using qnt::capi::require;
using qnt::capi::tensor_of;
using qnt::capi::host_tensor_of;
using qnt::capi::optional_host_tensor;

namespace {

qnt_prepared *new_prepared(std::unique_ptr<ops::Prepared> p) {
  return new qnt_prepared{capi::kPreparedMagic, std::move(p)};
}

}  // namespace

extern "C" {

qnt_status qnt_op_desc_create(qnt_op_desc **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = new qnt_op_desc{capi::kDescMagic, ops::OpDesc{}};
  });
}

void qnt_op_desc_destroy(qnt_op_desc *d) {
  if (d == nullptr || d->magic != capi::kDescMagic) return;
  d->magic = capi::kDeadMagic;
  delete d;
}

qnt_status qnt_op_desc_set(qnt_op_desc *d, qnt_op_option key, int64_t value) {
  return guard(__func__, [&] { desc_of(d, "d").set(key, value); });
}

qnt_status qnt_op_desc_get(const qnt_op_desc *d, qnt_op_option key, int64_t *out) {
  return guard(__func__, [&] {
    require(d, "d");
    const ops::OpDesc &o = desc_of(d, "d");
    require(out, "out");
    ops::OpDesc::check_key(key);
    *out = o.get(key);
  });
}

qnt_status qnt_qmatmul(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                       const qnt_tensor *bias, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qmatmul(capi::context_of(ctx), tensor_of(a, "a"), tensor_of(b, "b"),
                 optional_tensor(bias, "bias"), tensor_of(y, "y"));
  });
}

qnt_status qnt_binary_matmul(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::binary_matmul(capi::context_of(ctx), host_tensor_of(a, "a", __func__), host_tensor_of(b, "b", __func__),
                       host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_ternary_layout_size(qnt_ternary_layout layout, int64_t rows, int64_t cols,
                                   const qnt_ternary_tiling *tiling, size_t *bytes_out) {
  return guard(__func__, [&] {
    require(bytes_out, "bytes_out");
    *bytes_out = ops::ternary_layout_size(layout, rows, cols, tiling);
  });
}

qnt_status qnt_ternary_export(qnt_ternary_layout layout, const qnt_tensor *w, const qnt_ternary_tiling *tiling,
                              void *out, size_t capacity) {
  return guard(__func__, [&] {
    const Tensor &t = host_tensor_of(w, "w", __func__);
    require(out, "out");
    ops::ternary_export(layout, t, tiling, static_cast<uint8_t *>(out), capacity);
  });
}

qnt_status qnt_ternary_import(qnt_ternary_layout layout, const void *data, size_t bytes, int64_t rows, int64_t cols,
                              const qnt_ternary_tiling *tiling, float scale, qnt_tensor **out) {
  return guard(__func__, [&] {
    require(data, "data");
    require(out, "out");
    auto t = ops::ternary_import(layout, static_cast<const uint8_t *>(data), bytes, rows, cols, tiling, scale);
    *out = capi::new_tensor_handle(std::move(t));
  });
}

qnt_status qnt_dynamic_quantize_linear(qnt_context *ctx, const qnt_tensor *x, qnt_tensor **y_out) {
  return guard(__func__, [&] {
    const Tensor &t = host_tensor_of(x, "x", __func__);
    require(y_out, "y_out");
    auto y = ops::dynamic_quantize_linear(capi::context_of(ctx), t);
    *y_out = capi::new_tensor_handle(std::move(y));
  });
}

qnt_status qnt_linear_dynamic(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                              const qnt_tensor *bias, const qnt_op_desc *desc, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::linear_dynamic(capi::context_of(ctx), host_tensor_of(x, "x", __func__), host_tensor_of(w, "w", __func__),
                        optional_host_tensor(bias, "bias", __func__), desc_of(desc, "desc"), host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_linear_weight_only(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                                  const qnt_tensor *bias, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::linear_weight_only(capi::context_of(ctx), tensor_of(x, "x"), tensor_of(w, "w"),
                            optional_tensor(bias, "bias"), tensor_of(y, "y"));
  });
}

qnt_status qnt_conv2d_output_shape(const qnt_tensor *x, const qnt_tensor *w,
                                   const qnt_op_desc *desc, int64_t *shape_out, size_t capacity) {
  return guard(__func__, [&] {
    const Tensor &tx = tensor_of(x, "x");
    const Tensor &tw = tensor_of(w, "w");
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(shape_out, "shape_out");
    if (capacity < 4) fail(QNT_ERR_BUFFER_TOO_SMALL, "capacity ", capacity, " < 4");
    const std::vector<int64_t> s = ops::conv2d_output_shape(d, tx, tw);
    for (size_t i = 0; i < 4; ++i) shape_out[i] = s[i];
  });
}

qnt_status qnt_qconv2d(qnt_context *ctx, const qnt_tensor *x, const qnt_tensor *w,
                       const qnt_tensor *bias, const qnt_op_desc *desc, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qconv2d(capi::context_of(ctx), desc_of(desc, "desc"), host_tensor_of(x, "x", __func__), host_tensor_of(w, "w", __func__),
                 optional_host_tensor(bias, "bias", __func__), host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_qadd(qnt_context *ctx, const qnt_tensor *a, const qnt_tensor *b,
                    const qnt_op_desc *desc, qnt_tensor *y) {
  return guard(__func__, [&] {
    const ops::OpDesc &d = desc_of(desc, "desc");
    d.require_only(ops::OpDesc::bit(QNT_OP_FUSE_RELU), "qnt_qadd");
    ops::qadd(capi::context_of(ctx), host_tensor_of(a, "a", __func__), host_tensor_of(b, "b", __func__),
              d.get(QNT_OP_FUSE_RELU) != 0, host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_qrelu(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qrelu(capi::context_of(ctx), host_tensor_of(x, "x", __func__), nullptr, host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_qrelu_clamp(qnt_context *ctx, const qnt_tensor *x, float upper, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::qrelu(capi::context_of(ctx), host_tensor_of(x, "x", __func__), &upper, host_tensor_of(y, "y", __func__));
  });
}

qnt_status qnt_prepared_create_matmul(qnt_context *ctx, const qnt_tensor *b, const qnt_tensor *bias,
                                      const qnt_op_desc *desc, qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tb = host_tensor_of(b, "b", __func__);
    const Tensor *tbias = optional_host_tensor(bias, "bias", __func__);
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_matmul(capi::context_of(ctx), tb, tbias, d));
  });
}

qnt_status qnt_prepared_create_linear_dynamic(qnt_context *ctx, const qnt_tensor *w,
                                              const qnt_tensor *bias, const qnt_op_desc *desc,
                                              qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tw = host_tensor_of(w, "w", __func__);
    const Tensor *tbias = optional_host_tensor(bias, "bias", __func__);
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_linear_dynamic(capi::context_of(ctx), tw, tbias, d));
  });
}

qnt_status qnt_prepared_create_linear_static(qnt_context *ctx, const qnt_tensor *w,
                                             const qnt_tensor *bias, const qnt_qparams *x_qparams,
                                             const qnt_qparams *y_qparams, const qnt_op_desc *desc,
                                             qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tw = host_tensor_of(w, "w", __func__);
    const Tensor *tbias = optional_host_tensor(bias, "bias", __func__);
    const auto &xq = capi::qparams_of(x_qparams, "x_qparams");
    std::shared_ptr<const QParams> yq;
    if (y_qparams != nullptr) yq = capi::qparams_of(y_qparams, "y_qparams");
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_linear_static(capi::context_of(ctx), tw, tbias, *xq, yq, d));
  });
}

qnt_status qnt_prepared_create_linear_weight_only(qnt_context *ctx, const qnt_tensor *w,
                                                  const qnt_tensor *bias, const qnt_op_desc *desc,
                                                  qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tw = host_tensor_of(w, "w", __func__);
    const Tensor *tbias = optional_host_tensor(bias, "bias", __func__);
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_linear_weight_only(capi::context_of(ctx), tw, tbias, d));
  });
}

qnt_status qnt_prepared_create_conv2d(qnt_context *ctx, const qnt_tensor *w, const qnt_tensor *bias,
                                      const qnt_op_desc *desc, qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tw = host_tensor_of(w, "w", __func__);
    const Tensor *tbias = optional_host_tensor(bias, "bias", __func__);
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_conv2d(capi::context_of(ctx), tw, tbias, d));
  });
}

qnt_status qnt_prepared_create_binary_matmul(qnt_context *ctx, const qnt_tensor *b, const qnt_op_desc *desc,
                                             qnt_prepared **out) {
  return guard(__func__, [&] {
    const Tensor &tb = host_tensor_of(b, "b", __func__);
    const ops::OpDesc &d = desc_of(desc, "desc");
    require(out, "out");
    *out = new_prepared(ops::prepare_binary_matmul(capi::context_of(ctx), tb, d));
  });
}

void qnt_prepared_destroy(qnt_prepared *op) {
  if (op == nullptr || op->magic != capi::kPreparedMagic) return;
  op->magic = capi::kDeadMagic;
  delete op;
}

qnt_status qnt_prepared_run(qnt_context *ctx, const qnt_prepared *op, const qnt_tensor *x,
                            qnt_tensor *y) {
  return guard(__func__, [&] {
    const ops::Prepared &p = prepared_of(op, "op");
    // The dynamic linear layer and the convolution have no device kernels.
    const bool host_only =
        p.kind() == QNT_PREPARED_LINEAR_DYNAMIC || p.kind() == QNT_PREPARED_CONV2D ||
        p.kind() == QNT_PREPARED_BINARY_MATMUL;
    if (host_only)
      p.run(capi::context_of(ctx), host_tensor_of(x, "x", __func__),
            host_tensor_of(y, "y", __func__));
    else
      p.run(capi::context_of(ctx), tensor_of(x, "x"), tensor_of(y, "y"));
  });
}

qnt_status qnt_prepared_kind_of(const qnt_prepared *op, qnt_prepared_kind *out) {
  return guard(__func__, [&] {
    const ops::Prepared &p = prepared_of(op, "op");
    require(out, "out");
    *out = p.kind();
  });
}

qnt_status qnt_prepared_packed_size(const qnt_prepared *op, size_t *out) {
  return guard(__func__, [&] {
    const ops::Prepared &p = prepared_of(op, "op");
    require(out, "out");
    *out = p.packed_size();
  });
}

qnt_status qnt_prepared_isa(const qnt_prepared *op, qnt_isa *out) {
  return guard(__func__, [&] {
    const ops::Prepared &p = prepared_of(op, "op");
    require(out, "out");
    *out = p.isa();
  });
}

}  // extern "C"
