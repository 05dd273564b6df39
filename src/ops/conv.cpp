// qconv2d: QLinearConv / ConvInteger, lowered per image and group to im2col + the integer GEMM
// on filters packed once (qnt_prepared_create_conv2d); the one-shot call prepares and runs.
#include "core/error.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/packed.hpp"
#include "ops/parallel.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"

#include <cstring>
#include <vector>

namespace qnt::ops {
namespace {

struct Geometry {
  int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,
      groups;
  explicit Geometry(const OpDesc &d)
      : stride_h(d.get(QNT_OP_STRIDE_H)),
        stride_w(d.get(QNT_OP_STRIDE_W)),
        pad_top(d.get(QNT_OP_PAD_TOP)),
        pad_left(d.get(QNT_OP_PAD_LEFT)),
        pad_bottom(d.get(QNT_OP_PAD_BOTTOM)),
        pad_right(d.get(QNT_OP_PAD_RIGHT)),
        dilation_h(d.get(QNT_OP_DILATION_H)),
        dilation_w(d.get(QNT_OP_DILATION_W)),
        groups(d.get(QNT_OP_GROUPS)) {}
};

// dilation * (k - 1) + 1, or QNT_ERR_SHAPE_MISMATCH when it passes `limit` (the padded input,
// which it must fit in anyway): so nothing below can overflow.
int64_t kernel_span(int64_t dilation, int64_t k, int64_t limit, const char *what) {
  int64_t span = 0;
  if (__builtin_mul_overflow(dilation, k - 1, &span) || span >= limit)
    fail(QNT_ERR_SHAPE_MISMATCH, "the dilated kernel's ", what, " (", dilation, " * (", k,
         " - 1) + 1) is larger than the padded input (", limit, ")");
  return span + 1;
}

void check_weight_shape(const std::vector<int64_t> &wd, const Geometry &g) {
  if (wd.size() != 4)
    fail(QNT_ERR_SHAPE_MISMATCH, "w must be [M, C / groups, KH, KW], not ", shape_string(wd));
  if (wd[0] % g.groups != 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "M = ", wd[0], " must be a multiple of groups = ", g.groups);
  if (wd[2] == 0 || wd[3] == 0) fail(QNT_ERR_SHAPE_MISMATCH, "the kernel has a zero dimension");
}

std::vector<int64_t> output_shape(const Geometry &g, const Tensor &x,
                                  const std::vector<int64_t> &wd) {
  if (x.rank() != 4)
    fail(QNT_ERR_SHAPE_MISMATCH, "x must be [N, C, H, W], not ", shape_string(x.dims()));
  check_weight_shape(wd, g);
  const int64_t C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
  const int64_t M = wd[0], Cg = wd[1], KH = wd[2], KW = wd[3];
  if (C % g.groups != 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "C = ", C, " must be a multiple of groups = ", g.groups);
  if (Cg != C / g.groups)
    fail(QNT_ERR_SHAPE_MISMATCH, "w has ", Cg, " input channels per group, x gives ", C / g.groups);
  // Dimensions are at most 2^61 and pads at most 2^31: the padded sizes fit in int64.
  const int64_t ph = H + g.pad_top + g.pad_bottom, pw = W + g.pad_left + g.pad_right;
  const int64_t span_h = kernel_span(g.dilation_h, KH, ph, "height");
  const int64_t span_w = kernel_span(g.dilation_w, KW, pw, "width");
  return {x.dims()[0], M, (ph - span_h) / g.stride_h + 1, (pw - span_w) / g.stride_w + 1};
}

class PreparedConv final : public Prepared {
 public:
  PreparedConv(const Context &ctx, const Tensor &w, const Tensor *bias, const OpDesc &desc)
      : Prepared(QNT_PREPARED_CONV2D, ctx.isa()),
        g_(desc),
        wdims_(w.dims()),
        wq_(w.qparams()),
        bias_(bias) {
    const int64_t M = wdims_[0];
    const ChannelParams pw = channel_params(w, "w", 0, M, true, false);
    w_.channels = M;
    w_.K = wdims_[1] * wdims_[2] * wdims_[3];
    w_.is_signed = w.info().is_signed;
    w_.scales = pw.scales;
    w_.zero_points = pw.zero_points;
    w_.data.assign(w.data(), w.data() + w.byte_size());  // [M, Cg * KH * KW]: one row each
    w_.finish();
  }

  size_t packed_size() const noexcept override { return w_.bytes() + bias_.bytes(); }

  void run(const Context &ctx, const Tensor &x, Tensor &y) const override {
    require_int8(x, "x");
    const OutputMode mode = output_mode(y);
    const std::vector<int64_t> out = output_shape(g_, x, wdims_);
    if (y.dims() != out)
      fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
           shape_string(out));
    const bool scales = mode != OutputMode::Int32;
    check_channel_qparams(x.qparams(), x.rank(), "x", 0, false, scales);
    check_channel_qparams(wq_, wdims_.size(), "w", 0, true, scales);
    require_writable(y, "y");
    require_disjoint(y, x, "y", "x");
    if (y.element_count() == 0) return;

    const int64_t N = out[0], M = out[1], OH = out[2], OW = out[3];
    const int64_t C = x.dims()[1], H = x.dims()[2], W = x.dims()[3];
    const int64_t G = g_.groups, Cg = C / G, Mg = M / G, KH = wdims_[2], KW = wdims_[3];
    // The im2col buffer of one image and group: Kc rows of P columns.
    const int64_t Kc = Cg * KH * KW, P = OH * OW;
    const int64_t col_shape[2] = {Kc, P};
    const size_t col_bytes = checked_element_count(col_shape, 2);

    ref::ConvGeometry geo;
    geo.channels = Cg;
    geo.height = H;
    geo.width = W;
    geo.kernel_h = KH;
    geo.kernel_w = KW;
    geo.stride_h = g_.stride_h;
    geo.stride_w = g_.stride_w;
    geo.pad_top = g_.pad_top;
    geo.pad_left = g_.pad_left;
    geo.dilation_h = g_.dilation_h;
    geo.dilation_w = g_.dilation_w;
    geo.out_h = OH;
    geo.out_w = OW;
    const int32_t zx = x.qparams() ? x.qparams()->zero_points()[0] : 0;
    const auto pad_byte = static_cast<uint8_t>(static_cast<uint32_t>(zx) & 0xFFu);
    const int32_t *bias_i32 = bias_.i32_or_null();

    float sy = 1.0f;
    int32_t zy = 0;
    if (mode == OutputMode::Requantize) {
      sy = y.qparams()->scales()[0];
      zy = y.qparams()->zero_points()[0];
    }
    const float sx = scales ? x.qparams()->scales()[0] : 0.0f;
    std::vector<float> factor(static_cast<size_t>(M));  // per output channel
    for (size_t m = 0; m < factor.size(); ++m) {
      if (mode == OutputMode::Requantize)
        factor[m] = ref::requant_multiplier(sx, w_.scales[m], sy);
      else if (mode == OutputMode::Float)
        factor[m] = sx * w_.scales[m];
    }

    const ref::PackedInt8 w = w_.view();
    ref::Int8Matrix col_view;  // vector p of the lowered image: element k at col[k * P + p]
    col_view.is_signed = x.info().is_signed;
    col_view.row_stride = 1;
    col_view.col_stride = P;

    const auto tasks = static_cast<size_t>(N * G);
    // Every worker's scratch is allocated before any output is written.
    const size_t workers = parallel_workers(ctx.threads(), tasks, 1);
    std::vector<std::vector<uint8_t>> cols(workers, std::vector<uint8_t>(col_bytes));
    std::vector<std::vector<int32_t>> accs(workers,
                                           std::vector<int32_t>(static_cast<size_t>(Mg * P)));
    const int qmin = y.info().qmin, qmax = y.info().qmax;
    parallel_for_workers(ctx.threads(), tasks, 1, [&](size_t t0, size_t t1, size_t worker) {
      uint8_t *col = cols[worker].data();
      int32_t *acc = accs[worker].data();
      for (size_t t = t0; t < t1; ++t) {
        const int64_t n = static_cast<int64_t>(t) / G, gi = static_cast<int64_t>(t) % G;
        ref::im2col(geo, x.data() + ((n * C + gi * Cg) * H) * W, pad_byte, col);
        ref::Int8Matrix b = col_view;
        b.data = col;
        // acc[mi * P + p] for this group's filters mi.
        ref::qgemm_packed(P, b, &zx, 0, w, gi * Mg, (gi + 1) * Mg, acc, 1, P);
        for (int64_t mi = 0; mi < Mg; ++mi) {
          const int64_t m = gi * Mg + mi;
          const auto mc = static_cast<size_t>(m);
          const size_t base = static_cast<size_t>((n * M + m) * P);
          for (int64_t p = 0; p < P; ++p) {
            int32_t v = acc[mi * P + p];
            if (bias_i32 != nullptr) v = ref::wrap_add(v, bias_i32[m]);
            const size_t i = base + static_cast<size_t>(p);
            if (mode == OutputMode::Int32) {
              std::memcpy(y.data() + 4 * i, &v, 4);
            } else if (mode == OutputMode::Requantize) {
              ref::store_element(y.data(), i, 8, ref::requantize(v, factor[mc], zy, qmin, qmax));
            } else {
              const float f = ref::acc_to_float(v, factor[mc], 0.0f);
              std::memcpy(y.data() + 4 * i, &f, 4);
            }
          }
        }
      }
    });
  }

 private:
  Geometry g_;
  std::vector<int64_t> wdims_;
  std::shared_ptr<const QParams> wq_;
  PackedWeights w_;
  Bias bias_;
};

void check_conv_weights(const Tensor &w, const Tensor *bias, const OpDesc &desc) {
  desc.require_only(OpDesc::kConvKeys, "the 2-D convolution");
  require_int8(w, "w");
  check_weight_shape(w.dims(), Geometry(desc));
  check_channel_qparams(w.qparams(), w.rank(), "w", 0, true, false);
  check_bias(bias, w.dims()[0], false);
}

}  // namespace

std::vector<int64_t> conv2d_output_shape(const OpDesc &d, const Tensor &x, const Tensor &w) {
  d.require_only(OpDesc::kConvKeys, "the 2-D convolution");
  return output_shape(Geometry(d), x, w.dims());
}

std::unique_ptr<Prepared> prepare_conv2d(const Context &ctx, const Tensor &w, const Tensor *bias,
                                         const OpDesc &desc) {
  check_conv_weights(w, bias, desc);
  return std::make_unique<PreparedConv>(ctx, w, bias, desc);
}

void qconv2d(const Context &ctx, const OpDesc &d, const Tensor &x, const Tensor &w,
             const Tensor *bias, Tensor &y) {
  check_conv_weights(w, bias, d);
  require_int8(x, "x");
  const OutputMode mode = output_mode(y);
  const std::vector<int64_t> out = output_shape(Geometry(d), x, w.dims());
  if (y.dims() != out)
    fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ",
         shape_string(out));
  const bool scales = mode != OutputMode::Int32;
  check_channel_qparams(x.qparams(), x.rank(), "x", 0, false, scales);
  check_channel_qparams(w.qparams(), w.rank(), "w", 0, true, scales);
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
  if (y.element_count() == 0) return;
  PreparedConv(ctx, w, bias, d).run(ctx, x, y);
}

}  // namespace qnt::ops
