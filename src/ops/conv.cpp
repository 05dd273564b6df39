// qconv2d: QLinearConv / ConvInteger, lowered per image and group to im2col + the integer GEMM.
#include "core/error.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/parallel.hpp"
#include "ops/qops.hpp"

#include <cstring>
#include <vector>

namespace qnt::ops {

std::vector<int64_t> conv2d_output_shape(const Conv2dDesc &d, const Tensor &x, const Tensor &w) {
  if (x.rank() != 4)
    fail(QNT_ERR_SHAPE_MISMATCH, "x must be [N, C, H, W], not ", shape_string(x.dims()));
  if (w.rank() != 4)
    fail(QNT_ERR_SHAPE_MISMATCH, "w must be [M, C / groups, KH, KW], not ", shape_string(w.dims()));
  const int64_t C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t M = w.dims()[0], Cg = w.dims()[1], KH = w.dims()[2], KW = w.dims()[3];
  if (C % d.groups != 0 || M % d.groups != 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "C = ", C, " and M = ", M,
         " must be multiples of groups = ", d.groups);
  if (Cg * d.groups != C)
    fail(QNT_ERR_SHAPE_MISMATCH, "w has ", Cg, " input channels per group, x gives ", C / d.groups);
  if (KH == 0 || KW == 0) fail(QNT_ERR_SHAPE_MISMATCH, "the kernel has a zero dimension");
  // Each term below is bounded (validated tensors, pads and dilations capped at 2^31), so the
  // arithmetic cannot overflow int64.
  const int64_t span_h = d.dilation_h * (KH - 1) + 1, span_w = d.dilation_w * (KW - 1) + 1;
  const int64_t ph = H + d.pad_top + d.pad_bottom, pw = W + d.pad_left + d.pad_right;
  if (ph < span_h || pw < span_w)
    fail(QNT_ERR_SHAPE_MISMATCH, "the dilated kernel (", span_h, " x ", span_w,
         ") is larger than the padded input (", ph, " x ", pw, ")");
  return {x.dims()[0], M, (ph - span_h) / d.stride_h + 1, (pw - span_w) / d.stride_w + 1};
}

void qconv2d(const Context &ctx, const Conv2dDesc &d, const Tensor &x, const Tensor &w,
             const Tensor *bias, Tensor &y) {
  require_int8(x, "x");
  require_int8(w, "w");
  const OutputMode mode = output_mode(y);
  const std::vector<int64_t> out = conv2d_output_shape(d, x, w);
  if (y.dims() != out)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(out));
  const int64_t N = out[0], M = out[1], OH = out[2], OW = out[3];
  const int64_t C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t G = d.groups, Cg = C / G, Mg = M / G, KH = w.dims()[2], KW = w.dims()[3];
  const bool scales = mode != OutputMode::Int32;
  const ChannelParams px = channel_params(x, "x", 0, 1, false, scales);
  const ChannelParams pw = channel_params(w, "w", 0, M, true, scales);
  check_bias(bias, M, false);
  require_disjoint(y, x, "y", "x");
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");

  // The im2col buffer of one image and group: Kc rows of P columns.
  const int64_t Kc = Cg * KH * KW, P = OH * OW;
  const int64_t col_shape[2] = {Kc, P};
  const size_t col_bytes = checked_element_count(col_shape, 2);

  ref::ConvGeometry g;
  g.channels = Cg;
  g.height = H;
  g.width = W;
  g.kernel_h = KH;
  g.kernel_w = KW;
  g.stride_h = d.stride_h;
  g.stride_w = d.stride_w;
  g.pad_top = d.pad_top;
  g.pad_left = d.pad_left;
  g.dilation_h = d.dilation_h;
  g.dilation_w = d.dilation_w;
  g.out_h = OH;
  g.out_w = OW;
  const int32_t zx = px.zero_points[0];
  const auto pad_byte = static_cast<uint8_t>(static_cast<uint32_t>(zx) & 0xFFu);
  const std::vector<int32_t> zb(static_cast<size_t>(std::max<int64_t>(P, 1)), zx);
  const auto *bias_i32 =
      bias != nullptr ? reinterpret_cast<const int32_t *>(bias->data()) : nullptr;

  float sy = 1.0f;
  int32_t zy = 0;
  if (mode == OutputMode::Requantize) {
    sy = y.qparams()->scales()[0];
    zy = y.qparams()->zero_points()[0];
  }
  std::vector<float> factor(static_cast<size_t>(M));  // per output channel
  for (size_t m = 0; m < factor.size(); ++m) {
    if (mode == OutputMode::Requantize)
      factor[m] = ref::requant_multiplier(px.scales[0], pw.scales[m], sy);
    else if (mode == OutputMode::Float)
      factor[m] = px.scales[0] * pw.scales[m];
  }

  const auto tasks = static_cast<size_t>(N * G);
  parallel_for(ctx.threads(), tasks, 1, [&](size_t t0, size_t t1) {
    std::vector<uint8_t> col(col_bytes);
    std::vector<int32_t> acc(static_cast<size_t>(Mg * P));
    for (size_t t = t0; t < t1; ++t) {
      const int64_t n = static_cast<int64_t>(t) / G, gi = static_cast<int64_t>(t) % G;
      ref::im2col(g, x.data() + ((n * C + gi * Cg) * H) * W, pad_byte, col.data());
      ref::Int8Matrix a;  // this group's filters, [Mg, Kc]
      a.data = w.data() + gi * Mg * Kc;
      a.is_signed = w.info().is_signed;
      a.row_stride = Kc;
      ref::Int8Matrix b;  // the lowered image, [Kc, P]
      b.data = col.data();
      b.is_signed = x.info().is_signed;
      b.row_stride = P;
      ref::qgemm(Mg, P, Kc, a, pw.zero_points.data() + gi * Mg, b, zb.data(), acc.data(), P);
      for (int64_t mi = 0; mi < Mg; ++mi) {
        const int64_t m = gi * Mg + mi;
        const auto mc = static_cast<size_t>(m);
        const size_t base = static_cast<size_t>((n * M + m) * P);
        for (int64_t p = 0; p < P; ++p) {
          int32_t v = acc[static_cast<size_t>(mi * P + p)];
          if (bias_i32 != nullptr) v = ref::wrap_add(v, bias_i32[m]);
          const size_t i = base + static_cast<size_t>(p);
          if (mode == OutputMode::Int32) {
            std::memcpy(y.data() + 4 * i, &v, 4);
          } else if (mode == OutputMode::Requantize) {
            ref::store_element(y.data(), i, 8,
                               ref::requantize(v, factor[mc], zy, y.info().qmin, y.info().qmax));
          } else {
            const float f = ref::acc_to_float(v, factor[mc], 0.0f);
            std::memcpy(y.data() + 4 * i, &f, 4);
          }
        }
      }
    }
  });
}

}  // namespace qnt::ops
