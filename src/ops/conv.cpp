// qconv2d: QLinearConv / ConvInteger, lowered per image and group to im2col + the integer GEMM
// on filters packed once (qnt_prepared_create_conv2d); the one-shot call prepares and runs.
#include "core/error.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/epilogue.hpp"
#include "ops/gemm.hpp"
#include "ops/packed.hpp"
#include "ops/parallel.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <vector>

namespace qnt::ops {
namespace {

// One step of a short wait on another thread (a row being copied).
inline void spin_pause() {
#if defined(__SSE2__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

struct Geometry {
  int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w,
      groups;
  bool nhwc;
  explicit Geometry(const OpDesc &d)
      : stride_h(d.get(QNT_OP_STRIDE_H)),
        stride_w(d.get(QNT_OP_STRIDE_W)),
        pad_top(d.get(QNT_OP_PAD_TOP)),
        pad_left(d.get(QNT_OP_PAD_LEFT)),
        pad_bottom(d.get(QNT_OP_PAD_BOTTOM)),
        pad_right(d.get(QNT_OP_PAD_RIGHT)),
        dilation_h(d.get(QNT_OP_DILATION_H)),
        dilation_w(d.get(QNT_OP_DILATION_W)),
        groups(d.get(QNT_OP_GROUPS)),
        nhwc(d.get(QNT_OP_LAYOUT) == QNT_LAYOUT_NHWC) {}
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
    fail(QNT_ERR_SHAPE_MISMATCH, "x must be ", g.nhwc ? "[N, H, W, C]" : "[N, C, H, W]",
         ", not ", shape_string(x.dims()));
  check_weight_shape(wd, g);
  const auto &xd = x.dims();
  const int64_t C = g.nhwc ? xd[3] : xd[1], H = g.nhwc ? xd[1] : xd[2], W = g.nhwc ? xd[2] : xd[3];
  const int64_t M = wd[0], Cg = wd[1], KH = wd[2], KW = wd[3];
  if (C % g.groups != 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "C = ", C, " must be a multiple of groups = ", g.groups);
  if (Cg != C / g.groups)
    fail(QNT_ERR_SHAPE_MISMATCH, "w has ", Cg, " input channels per group, x gives ", C / g.groups);
  // Dimensions are at most 2^61 and pads at most 2^31: the padded sizes fit in int64.
  const int64_t ph = H + g.pad_top + g.pad_bottom, pw = W + g.pad_left + g.pad_right;
  const int64_t span_h = kernel_span(g.dilation_h, KH, ph, "height");
  const int64_t span_w = kernel_span(g.dilation_w, KW, pw, "width");
  const int64_t OH = (ph - span_h) / g.stride_h + 1, OW = (pw - span_w) / g.stride_w + 1;
  if (g.nhwc) return {xd[0], OH, OW, M};
  return {xd[0], M, OH, OW};
}

// dst[c * dst_ld + r] = src[r * src_ld + c] for r < rows, c < cols, elements of `elem` bytes
// (1 or 4): 16 x 16 byte blocks through SSE2 unpacks, the rest element by element.
void transpose(const uint8_t *src, size_t rows, size_t cols, size_t src_ld, uint8_t *dst,
               size_t dst_ld, size_t elem) noexcept {
  size_t r0 = 0;
#if defined(__SSE2__)
  if (elem == 1) {
    for (; r0 + 16 <= rows; r0 += 16) {
      size_t c0 = 0;
      for (; c0 + 16 <= cols; c0 += 16) {
        __m128i v[16];
        for (int i = 0; i < 16; ++i)
          v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + (r0 + static_cast<size_t>(i)) * src_ld + c0));
        // Four rounds of interleaving: 8-, 16-, 32- and 64-bit units.
        __m128i t[16];
        for (int i = 0; i < 8; ++i) {
          t[2 * i] = _mm_unpacklo_epi8(v[2 * i], v[2 * i + 1]);
          t[2 * i + 1] = _mm_unpackhi_epi8(v[2 * i], v[2 * i + 1]);
        }
        for (int i = 0; i < 4; ++i)
          for (int j = 0; j < 2; ++j) {
            v[4 * i + 2 * j] = _mm_unpacklo_epi16(t[4 * i + j], t[4 * i + j + 2]);
            v[4 * i + 2 * j + 1] = _mm_unpackhi_epi16(t[4 * i + j], t[4 * i + j + 2]);
          }
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 4; ++j) {
            t[8 * i + 2 * j] = _mm_unpacklo_epi32(v[8 * i + j], v[8 * i + j + 4]);
            t[8 * i + 2 * j + 1] = _mm_unpackhi_epi32(v[8 * i + j], v[8 * i + j + 4]);
          }
        for (int j = 0; j < 8; ++j) {
          v[2 * j] = _mm_unpacklo_epi64(t[j], t[j + 8]);
          v[2 * j + 1] = _mm_unpackhi_epi64(t[j], t[j + 8]);
        }
        for (int i = 0; i < 16; ++i)
          _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + (c0 + static_cast<size_t>(i)) * dst_ld + r0), v[i]);
      }
      for (size_t r = r0; r < r0 + 16; ++r)
        for (size_t c = c0; c < cols; ++c) dst[c * dst_ld + r] = src[r * src_ld + c];
    }
  }
#endif
  // The rest in 16 x 16 blocks of elements.
  for (size_t rb = r0; rb < rows; rb += 16)
    for (size_t cb = 0; cb < cols; cb += 16) {
      const size_t r1 = std::min(rows, rb + 16), c1 = std::min(cols, cb + 16);
      for (size_t c = cb; c < c1; ++c)
        for (size_t r = rb; r < r1; ++r)
          std::memcpy(dst + (c * dst_ld + r) * elem, src + (r * src_ld + c) * elem, elem);
    }
}

// n bytes copied, each XORed with flip (0, or 0x80 to make i8 values the u8 a').
inline void copy_flip(uint8_t *dst, const uint8_t *src, size_t n, uint8_t flip) noexcept {
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
  for (; i + 64 <= n; i += 64) {  // loads first: a store may seem to alias the next load
    __m128i v[4];
    for (int k = 0; k < 4; ++k)
      v[k] = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i) + k), f);
    for (int k = 0; k < 4; ++k) _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i) + k, v[k]);
  }
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i),
                     _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i)), f));
#endif
  for (; i < n; ++i) dst[i] = static_cast<uint8_t>(src[i] ^ flip);
}

// The implicit GEMM's rows of A: output pixel m's window, its taps (kh, kw) in order, each the
// group's cg channels of one input pixel of the NHWC images x (a' bytes: XORed with flip), or
// `pad` (zx') for a tap outside the image. rows() walks the pixels of a range without dividing
// per pixel, and copies a kernel row's taps as one run of bytes when they are adjacent pixels
// inside the image and the group is all the channels.
struct WindowRows {
  const uint8_t *x;
  const Geometry *g;
  int64_t H, W, C, OH, OW, KH, KW, c0, cg;
  uint8_t flip, pad;
  int32_t za;

  int32_t operator()(int64_t m, uint8_t *row) const noexcept { return rows(m, m + 1, row, 0); }

  int32_t rows(int64_t m0, int64_t m1, uint8_t *dst, size_t stride) const noexcept {
    if (m1 <= m0) return za;
    const int64_t P = OH * OW;
    int64_t img = m0 / P, oh = m0 % P / OW, ow = m0 % P % OW;
    for (int64_t m = m0; m < m1; ++m, dst += stride) {
      window(img, oh, ow, dst);
      if (++ow == OW) {
        ow = 0;
        if (++oh == OH) {
          oh = 0;
          ++img;
        }
      }
    }
    return za;
  }

  void window(int64_t img, int64_t oh, int64_t ow, uint8_t *dst) const noexcept {
    const auto n = static_cast<size_t>(cg);
    const int64_t w0 = ow * g->stride_w - g->pad_left;
    const bool run = g->dilation_w == 1 && cg == C && w0 >= 0 && w0 + KW <= W;
    for (int64_t i = 0; i < KH; ++i, dst += KW * cg) {
      const int64_t h = oh * g->stride_h - g->pad_top + i * g->dilation_h;
      if (h < 0 || h >= H) {
        std::memset(dst, pad, static_cast<size_t>(KW) * n);
        continue;
      }
      const uint8_t *line = x + (img * H + h) * W * C + c0;
      if (run) {
        copy_flip(dst, line + w0 * C, static_cast<size_t>(KW) * n, flip);
        continue;
      }
      for (int64_t j = 0; j < KW; ++j) {
        const int64_t w = w0 + j * g->dilation_w;
        if (w < 0 || w >= W)
          std::memset(dst + j * cg, pad, n);
        else
          copy_flip(dst + j * cg, line + w * C, n, flip);
      }
    }
  }
};

class PreparedConv final : public Prepared {
 public:
  PreparedConv(const Context &ctx, const Tensor &w, const Tensor *bias, const OpDesc &desc)
      : Prepared(QNT_PREPARED_CONV2D, ctx.isa()),
        g_(desc),
        relu_(desc.get(QNT_OP_FUSE_RELU) != 0),
        kernel_(ctx.kernels().gemm),
        wdims_(w.dims()),
        wq_(w.qparams()),
        bias_(bias) {
    const int64_t M = wdims_[0], Cg = wdims_[1], KH = wdims_[2], KW = wdims_[3];
    const ChannelParams pw = channel_params(w, "w", 0, M, true, false);
    w_.channels = M;
    w_.K = Cg * KH * KW;
    w_.is_signed = w.info().is_signed;
    w_.scales = pw.scales;
    if (kernel_ != nullptr && kernel_->depthwise != nullptr && Cg == 1 && g_.groups == M) {
      // Depthwise (one filter per channel): each tap's weights less their zero points, [tap][m]
      // as int16 (|w - zw| <= 255), for the direct kernel.
      const int64_t taps = KH * KW;
      dw_.resize(static_cast<size_t>(taps * M));
      const uint8_t *wd = w.data();
      bool fits8 = true;  // every w - zw is an int8
      for (int64_t m = 0; m < M; ++m)
        for (int64_t t = 0; t < taps; ++t) {
          const uint8_t b = wd[m * taps + t];
          const int32_t v = w_.is_signed ? static_cast<int32_t>(static_cast<int8_t>(b)) : b;
          const int32_t d = v - pw.zero_points[static_cast<size_t>(m)];
          dw_[static_cast<size_t>(t * M + m)] = static_cast<int16_t>(d);
          fits8 = fits8 && d >= -128 && d <= 127;
        }
      const bool by_rows = kernel_->dw_row != nullptr && g_.stride_w == 1 && g_.dilation_w == 1 &&
                           (kernel_->dw_bytes == 2 || (kernel_->dw_bytes == 1 && fits8));
      if (!by_rows && kernel_->depthwise8 != nullptr && fits8) {
        // The VNNI form per pixel (kernels/gemm/gemm.hpp): w - zw as int8 in its interleaved layout, and
        // each channel's sum over the taps for the zero-point term.
        const auto C = static_cast<size_t>(M), T = static_cast<size_t>(taps);
        dw8_.assign((C + 63) / 64 * ((T + 3) / 4) * 256, 0);
        dw_sum_.assign(C, 0);
        for (size_t c = 0; c < C; ++c)
          for (size_t t = 0; t < T; ++t) {
            const int16_t d = dw_[t * C + c];
            dw8_[kern::gemm_depthwise8_index(c, t, T)] = static_cast<int8_t>(d);
            dw_sum_[c] += d;
          }
      }
      if (by_rows) {
        // By rows (kernels/gemm/gemm.hpp, GemmDwRowFn): per block of channels, [kernel row i]
        // [tap group j][channel][tap in group], zero past the kernel's width and the channels;
        // int8 (with each channel's sum for the zero-point term) or int16.
        const auto C = static_cast<size_t>(M), Bk = static_cast<size_t>(kernel_->dw_block);
        const auto Gw = static_cast<size_t>(kernel_->dw_group), eb = static_cast<size_t>(kernel_->dw_bytes);
        const auto kh = static_cast<size_t>(KH), kw = static_cast<size_t>(KW);
        const size_t jg = (kw + Gw - 1) / Gw, blocks = (C + Bk - 1) / Bk;
        dwr_.assign(blocks * kh * jg * Bk * Gw * eb, 0);
        dwr_sum_.assign(blocks * Bk, 0);
        for (size_t c = 0; c < C; ++c)
          for (size_t i = 0; i < kh; ++i)
            for (size_t k = 0; k < kw; ++k) {
              const int16_t d = dw_[(i * kw + k) * C + c];
              const size_t at = (((c / Bk * kh + i) * jg + k / Gw) * Bk + c % Bk) * Gw + k % Gw;
              if (eb == 1)
                dwr_[at] = static_cast<uint8_t>(static_cast<int8_t>(d));
              else
                std::memcpy(dwr_.data() + 2 * at, &d, 2);
              dwr_sum_[c] += d;
            }
      }
      return;
    }
    if (kernel_ != nullptr) {
      // One packed B per group: K in (kh, kw, c) order, the order of an NHWC window.
      const int64_t G = g_.groups, Mg = M / G;
      fast_.resize(static_cast<size_t>(G));
      const uint8_t *wd = w.data();
      for (int64_t gi = 0; gi < G; ++gi)
        fast_[static_cast<size_t>(gi)].pack(
            w_.K, Mg, w_.is_signed, pw.zero_points.data() + gi * Mg, [&](int64_t k, int64_t n) {
              const int64_t c = k % Cg, j = (k / Cg) % KW, i = k / (Cg * KW);
              return wd[(((gi * Mg + n) * Cg + c) * KH + i) * KW + j];
            });
      // One plan serves every group: the ternary kernel only when every group's B is ternary.
      bool ternary = true;
      for (const GemmB &f : fast_) ternary = ternary && f.ternary;
      for (GemmB &f : fast_) f.ternary = ternary;
      // The direct form's weight sums per tap and filter (run_direct), from the packed bytes.
      // (No channels: no sums, and packed B is empty; direct_fits then refuses the direct form.)
      if (kernel_->conv_tile != nullptr && G == 1 && Cg > 0 && Cg % 4 == 0) {
        const GemmB &b = fast_[0];
        const auto taps = static_cast<size_t>(KH * KW), groups = static_cast<size_t>(Cg / 4);
        const auto mz = static_cast<size_t>(M);
        tap_sum_.assign(taps * mz, 0);
        for (size_t n = 0; n < mz; ++n) {
          const int8_t *col = b.data.data() + n / kern::kGemmPanel * b.panel_stride() +
                              4 * (n % kern::kGemmPanel);
          for (size_t t = 0; t < taps; ++t) {
            uint32_t sum = 0;
            for (size_t g = t * groups; g < (t + 1) * groups; ++g)
              for (size_t e = 0; e < 4; ++e) sum += static_cast<uint32_t>(int32_t{col[g * 64 + e]});
            tap_sum_[t * mz + n] = static_cast<int32_t>(sum);
          }
        }
      }
      return;
    }
    w_.zero_points = pw.zero_points;
    w_.data.assign(w.data(), w.data() + w.byte_size());  // [M, Cg * KH * KW]: one row each
    w_.finish();
  }

  size_t packed_size() const noexcept override {
    size_t n = w_.bytes() + bias_.bytes() + 2 * dw_.size() + dw8_.size() +
               4 * dw_sum_.size() + 4 * tap_sum_.size();
    for (const GemmB &f : fast_) n += f.bytes();
    return n;
  }

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
    if (bias_.f32_or_null() != nullptr && mode == OutputMode::Int32)
      fail(QNT_ERR_DTYPE_MISMATCH, "an f32 bias needs an f32 or 8-bit y (use an i32 bias)");
    require_writable(y, "y");
    require_disjoint(y, x, "y", "x");
    if (y.element_count() == 0) return;

    const auto &xd = x.dims();
    Shape s;
    s.N = xd[0];
    s.C = g_.nhwc ? xd[3] : xd[1];
    s.H = g_.nhwc ? xd[1] : xd[2];
    s.W = g_.nhwc ? xd[2] : xd[3];
    s.M = wdims_[0];
    s.OH = g_.nhwc ? out[1] : out[2];
    s.OW = g_.nhwc ? out[2] : out[3];
    const float sx = scales ? x.qparams()->scales()[0] : 0.0f;
    const Epilogue epi =
        make_epilogue(mode, y.qparams().get(), bias_, sx, scales ? w_.scales : std::vector<float>(),
                      relu_, kernel_);
    const int32_t zx = x.qparams() ? x.qparams()->zero_points()[0] : 0;
    if (!dwr_.empty())
      run_depthwise_rows(ctx, s, x, zx, epi, y);
    else if (!dw_.empty())
      run_depthwise(ctx, s, x, zx, epi, y);
    else if (const auto plan = kernel_ != nullptr ? direct_fits(s) : nullptr)
      run_direct(ctx, s, *plan, x, zx, epi, y);
    else if (kernel_ != nullptr)
      run_fast(ctx, s, x, zx, epi, y);
    else
      run_reference(ctx, s, x, zx, epi, y);
  }

 private:
  struct Shape {
    int64_t N, C, H, W, M, OH, OW;
  };

  // Runs body(x, y, work) over NHWC data: an NCHW x is first transposed into the workspace, y
  // made NHWC there and transposed last (16 x 16 byte transposes, in parallel); work is
  // `work_bytes` more of the workspace.
  template <class Body>
  void in_nhwc(const Context &ctx, const Shape &s, const Tensor &x, Tensor &y, size_t work_bytes,
               Body &&body) const {
    const int64_t P = s.OH * s.OW;
    const size_t x_bytes = g_.nhwc ? 0 : (x.byte_size() + 63) / 64 * 64;
    const size_t y_bytes = g_.nhwc ? 0 : (y.byte_size() + 63) / 64 * 64;
    Scratch scratch(ctx, x_bytes + y_bytes + work_bytes);
    const uint8_t *xin = x.data();
    const int64_t HW = s.H * s.W;
    if (!g_.nhwc) {
      uint8_t *t = scratch.data();
      const auto images = static_cast<size_t>(s.N);
      const auto strips = static_cast<size_t>((HW + 255) / 256);  // of 256 pixels
      parallel_for(ctx.threads(), images * strips, 1, [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
          const auto n = static_cast<int64_t>(i / strips), p0 = static_cast<int64_t>(i % strips) * 256;
          const int64_t np = std::min<int64_t>(256, HW - p0);
          transpose(xin + n * s.C * HW + p0, static_cast<size_t>(s.C), static_cast<size_t>(np),
                    static_cast<size_t>(HW), t + (n * HW + p0) * s.C, static_cast<size_t>(s.C), 1);
        }
      });
      xin = t;
    }
    const size_t y_size = static_cast<size_t>(y.info().bits / 8);
    uint8_t *yd = g_.nhwc ? y.data() : scratch.data() + x_bytes;  // NHWC, [N, OH, OW, M]
    body(xin, yd, scratch.data() + x_bytes + y_bytes);
    if (!g_.nhwc) {
      const auto images = static_cast<size_t>(s.N);
      const auto strips = static_cast<size_t>((P + 255) / 256);
      uint8_t *out = y.data();
      parallel_for(ctx.threads(), images * strips, 1, [&](size_t i0, size_t i1) {
        for (size_t i = i0; i < i1; ++i) {
          const auto n = static_cast<int64_t>(i / strips), p0 = static_cast<int64_t>(i % strips) * 256;
          const int64_t np = std::min<int64_t>(256, P - p0);
          transpose(yd + static_cast<size_t>((n * P + p0) * s.M) * y_size, static_cast<size_t>(np),
                    static_cast<size_t>(s.M), static_cast<size_t>(s.M),
                    out + static_cast<size_t>(n * s.M * P + p0) * y_size, static_cast<size_t>(P),
                    y_size);
        }
      });
    }
  }

  // Implicit GEMM per group: rows are output pixels, K their (kh, kw, c) window in an NHWC
  // image, columns the group's filters.
  void run_fast(const Context &ctx, const Shape &s, const Tensor &x, int32_t zx,
                const Epilogue &epi, Tensor &y) const {
    const int64_t G = g_.groups, Cg = s.C / G, Mg = s.M / G, KH = wdims_[2], KW = wdims_[3];
    const int64_t P = s.OH * s.OW, rows = s.N * P;
    const bool is_signed = x.info().is_signed;
    const uint8_t flip = is_signed ? 0x80 : 0;
    const auto pad = static_cast<uint8_t>((static_cast<uint32_t>(zx) & 0xFFu) ^ flip);
    const int32_t za = zx + (is_signed ? 128 : 0);
    gemm_tuned(ctx, gemm_kernel_for(*kernel_, fast_[0]), fast_[0], rows, [&](const GemmPlan &plan) {
      in_nhwc(ctx, s, x, y, plan.scratch_bytes(), [&](const uint8_t *xin, uint8_t *yd, uint8_t *work) {
        for (int64_t gi = 0; gi < G; ++gi) {
          const WindowRows source{xin, &g_, s.H, s.W, s.C, s.OH, s.OW, KH, KW, gi * Cg, Cg,
                                  flip, pad, za};
          auto tile = [&](int64_t m0, int n_rows, int64_t n0, int cols, const int32_t *acc,
                          size_t ldc) {
            epi.block(acc, ldc, n_rows, static_cast<size_t>(gi * Mg + n0), static_cast<size_t>(cols),
                      yd, static_cast<size_t>(m0 * s.M + gi * Mg + n0), static_cast<size_t>(s.M));
          };
          gemm_run(ctx, plan, fast_[static_cast<size_t>(gi)], work, source, tile);
        }
      });
    });
  }

  // The direct form's plan for one image (see run_direct). The output pixels fall into regions
  // whose pixels all have the same taps inside the image: a range of output rows whose kernel
  // rows inside the image are i0 .. i1, times a range of output columns whose kernel columns
  // are j0 .. j1 (3 x 3 regions for a 3 x 3 kernel with pad 1: the interior, the edges, the
  // corners). A tile runs only its taps, as oneDNN's kernels skip the padding (at 14² with pad
  // 1, 9 % of the multiplies). Per range of rows, whichever makes fewer multiplies: lines along
  // W over the whole width with the taps of any of its columns (a corner then runs with its
  // edge), or each region on its own, in lines along W (one per output row) or along H (one
  // per output column: an edge column is a line of its own). Lines are cut into tiles of mr
  // and of 4 rows (conv_tile4) with the fewest rows dropped.
  struct DirectPlan {
    struct Tile {
      uint32_t set;        // its taps: sets[set]
      uint32_t rows;       // its rows that are outputs (the rest are computed and dropped)
      uint32_t computed;   // mr, or 4 (conv_tile4)
      size_t a;            // its first row's window in the padded image, in bytes
      size_t a_step;       // bytes between its rows
      size_t pixel;        // its first row's output pixel in the image (oh * OW + ow)
      size_t pixel_step;   // output pixels between its rows (1 along W, OW along H)
    };
    int64_t H = 0, W = 0, Hp = 0, Wp = 0;
    std::vector<std::vector<size_t>> sets;  // (A offset, B offset) per tap, in bytes
    std::vector<std::vector<size_t>> set_taps;  // each set's taps (i * KW + j)
    std::vector<Tile> tiles;                    // one image's
    size_t multiplies = 0;                      // tiles' computed rows times their taps
    std::vector<size_t> work_before;            // per tile, the multiplies of the tiles before it
    std::vector<uint32_t> set_sums;             // per set and filter, its taps' weight sums (mod 2^32)
    bool ok = false;                            // every pixel has a tap inside the image
  };

  // Output coordinates o < O in runs whose kernel taps inside the input (of `size`, with the
  // pad before it, stride and dilation) are the same range: (first o, end o, first tap, end tap).
  static std::vector<std::array<int64_t, 4>> tap_ranges(int64_t O, int64_t size, int64_t pad,
                                                        int64_t stride, int64_t dil, int64_t K) {
    std::vector<std::array<int64_t, 4>> out;
    for (int64_t o = 0; o < O; ++o) {
      // Tap i reads input o * stride - pad + i * dil, inside when in [0, size).
      const int64_t first = o * stride - pad;
      int64_t lo = 0, hi = K;
      while (lo < K && first + lo * dil < 0) ++lo;
      while (hi > lo && first + (hi - 1) * dil >= size) --hi;
      if (!out.empty() && out.back()[2] == lo && out.back()[3] == hi)
        out.back()[1] = o + 1;
      else
        out.push_back({o, o + 1, lo, hi});
    }
    return out;
  }

  // A line of n rows as tiles of `mr` and of 4 rows (when the kernel has conv_tile4): the
  // fewest computed rows, then the fewest tiles. Returns (tiles of mr, tiles of 4).
  std::pair<size_t, size_t> line_split(size_t n) const {
    const auto mr = static_cast<size_t>(kernel_->mr);
    std::pair<size_t, size_t> best{(n + mr - 1) / mr, 0};
    if (kernel_->conv_tile4 == nullptr || mr <= 4) return best;
    size_t best_rows = best.first * mr;
    for (size_t fours = 1; fours * 4 < 2 * mr + 4 && fours * 4 <= n + 3; ++fours) {
      const size_t left = n > 4 * fours ? n - 4 * fours : 0, big = (left + mr - 1) / mr;
      const size_t rows = big * mr + 4 * fours;
      if (rows < best_rows || (rows == best_rows && big + fours < best.first + best.second)) {
        best = {big, fours};
        best_rows = rows;
      }
    }
    return best;
  }

  DirectPlan direct_plan(const Shape &s) const {
    DirectPlan d;
    const int64_t KH = wdims_[2], KW = wdims_[3];
    const auto mr = static_cast<size_t>(kernel_->mr);
    d.H = s.H;
    d.W = s.W;
    d.Hp = s.H + g_.pad_top + g_.pad_bottom;
    d.Wp = s.W + g_.pad_left + g_.pad_right;
    const auto rows = tap_ranges(s.OH, s.H, g_.pad_top, g_.stride_h, g_.dilation_h, KH);
    const auto cols = tap_ranges(s.OW, s.W, g_.pad_left, g_.stride_w, g_.dilation_w, KW);
    for (const auto &r : rows)
      if (r[2] >= r[3]) return d;  // a pixel with no tap inside
    for (const auto &c : cols)
      if (c[2] >= c[3]) return d;
    const auto cz = static_cast<size_t>(s.C), groups_bytes = cz / kern::kGemmGroup * 64;
    const size_t step_w = static_cast<size_t>(g_.stride_w) * cz,
                 step_h = static_cast<size_t>(g_.stride_h * d.Wp) * cz;
    // The set of taps i0 .. i1 x j0 .. j1 (made once).
    auto set_of = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      std::vector<size_t> taps;
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) taps.push_back(static_cast<size_t>(i * KW + j));
      for (size_t k = 0; k < d.set_taps.size(); ++k)
        if (d.set_taps[k] == taps) return static_cast<uint32_t>(k);
      std::vector<size_t> off;
      for (size_t t : taps) {
        const auto i = static_cast<int64_t>(t) / KW, j = static_cast<int64_t>(t) % KW;
        off.push_back(static_cast<size_t>(i * g_.dilation_h * d.Wp + j * g_.dilation_w) * cz);
        off.push_back(t * groups_bytes);
      }
      d.sets.push_back(std::move(off));
      d.set_taps.push_back(std::move(taps));
      return static_cast<uint32_t>(d.sets.size() - 1);
    };
    // Computed rows of a line of n.
    auto computed = [&](size_t n) {
      const auto sp = line_split(n);
      return sp.first * mr + sp.second * 4;
    };
    // The lines of rows oh0 .. oh1 x columns ow0 .. ow1 along H or W, with taps `set`.
    auto add_lines = [&](size_t oh0, size_t oh1, size_t ow0, size_t ow1, bool along_h, uint32_t set) {
      const size_t lines = along_h ? ow1 - ow0 : oh1 - oh0, length = along_h ? oh1 - oh0 : ow1 - ow0;
      const auto sp = line_split(length);
      const size_t ntaps = d.set_taps[set].size();
      for (size_t li = 0; li < lines; ++li) {
        size_t q = 0;
        for (size_t k = 0; k < sp.first + sp.second; ++k) {
          DirectPlan::Tile t{};
          t.set = set;
          t.computed = static_cast<uint32_t>(k < sp.first ? mr : 4);
          t.rows = static_cast<uint32_t>(std::min<size_t>(t.computed, length - std::min(length, q)));
          const size_t oh = along_h ? oh0 + q : oh0 + li, ow = along_h ? ow0 + li : ow0 + q;
          t.a = oh * step_h + ow * step_w;
          t.a_step = along_h ? step_h : step_w;
          t.pixel = oh * static_cast<size_t>(s.OW) + ow;
          t.pixel_step = along_h ? static_cast<size_t>(s.OW) : 1;
          if (t.rows > 0) d.tiles.push_back(t);
          if (t.rows > 0) d.multiplies += t.computed * ntaps;
          q += t.computed;
        }
      }
    };
    const auto OW = static_cast<size_t>(s.OW);
    for (const auto &r : rows) {
      const auto oh0 = static_cast<size_t>(r[0]), oh1 = static_cast<size_t>(r[1]), nr = oh1 - oh0;
      const auto kh = static_cast<size_t>(r[3] - r[2]);
      // The whole width with every column's taps, against each region on its own.
      int64_t j0 = KW, j1 = 0;
      for (const auto &c : cols) j0 = std::min(j0, c[2]), j1 = std::max(j1, c[3]);
      const size_t whole = nr * computed(OW) * kh * static_cast<size_t>(j1 - j0);
      size_t apart = 0;
      for (const auto &c : cols) {
        const auto nc = static_cast<size_t>(c[1] - c[0]), taps = kh * static_cast<size_t>(c[3] - c[2]);
        apart += std::min(nr * computed(nc), nc * computed(nr)) * taps;
      }
      if (whole <= apart) {
        add_lines(oh0, oh1, 0, OW, false, set_of(r[2], r[3], j0, j1));
        continue;
      }
      for (const auto &c : cols) {
        const auto ow0 = static_cast<size_t>(c[0]), ow1 = static_cast<size_t>(c[1]);
        const size_t nc = ow1 - ow0;
        add_lines(oh0, oh1, ow0, ow1, nc * computed(nr) < nr * computed(nc), set_of(r[2], r[3], c[2], c[3]));
      }
    }
    d.work_before.reserve(d.tiles.size() + 1);
    size_t work = 0;
    for (const DirectPlan::Tile &t : d.tiles) {
      d.work_before.push_back(work);
      work += t.computed * d.set_taps[t.set].size();
    }
    d.work_before.push_back(work);
    const auto mz = static_cast<size_t>(s.M);
    d.set_sums.assign(d.sets.size() * mz, 0);
    for (size_t t = 0; t < d.sets.size(); ++t)
      for (size_t j = 0; j < mz; ++j)
        for (size_t tap : d.set_taps[t]) d.set_sums[t * mz + j] += static_cast<uint32_t>(tap_sum_[tap * mz + j]);
    d.ok = true;
    return d;
  }

  // The direct form's plan when it runs this shape (else null): a kernel with a conv tile; one
  // group whose channels
  // are whole groups of 4 (a tap's groups then start at its pixel) and whose filters fill whole
  // tiles; symmetric weights (no row sums: a window's sum is not formed); pads smaller than
  // the kernel (the padded copy stays near the input's size); every pixel with a tap inside
  // the image; and no more multiplies than the GEMM over gathered windows makes, plus the
  // gathering's share (about 8 / M: a window is copied once for every M / 64 tiles that read it).
  // The plan of the last image size is kept (a prepared conv mostly sees one size).
  std::shared_ptr<const DirectPlan> direct_fits(const Shape &s) const {
    const kern::GemmKernel &k = *kernel_;
    if (k.conv_tile == nullptr || g_.groups != 1 || s.C % 4 != 0 ||
        s.M % (k.np * kern::kGemmPanel) != 0 || !fast_[0].zb_zero || s.OH <= 0 || s.OW <= 0 ||
        tap_sum_.empty())
      return nullptr;
    const int64_t KH = wdims_[2], KW = wdims_[3];
    if (g_.pad_top >= KH || g_.pad_bottom >= KH || g_.pad_left >= KW || g_.pad_right >= KW)
      return nullptr;
    std::shared_ptr<const DirectPlan> d;
    {
      std::lock_guard<std::mutex> lock(plan_mutex_);
      if (plan_ != nullptr && plan_->H == s.H && plan_->W == s.W) d = plan_;
    }
    if (d == nullptr) {
      auto made = std::make_shared<DirectPlan>(direct_plan(s));
      d = made;
      std::lock_guard<std::mutex> lock(plan_mutex_);
      plan_ = made;
    }
    if (!d->ok) return nullptr;
    const auto mr = static_cast<double>(k.mr);
    const double pixels = static_cast<double>(s.OH * s.OW);
    const double gemm = std::ceil(pixels / mr) * mr * static_cast<double>(KH * KW);
    return static_cast<double>(d->multiplies) < gemm * (1.0 + 8.0 / static_cast<double>(s.M)) ? d
                                                                                                : nullptr;
  }

  // Direct convolution (a kernel's conv_tile): the NHWC input copied once into a padded image
  // (a' bytes, the pad zx'), then each tile of mr output pixels multiplies its windows in place,
  // its region's taps after one another, against the packed filters: no window is gathered.
  // A tile's accumulators start from the zero-point term of its taps (-za' times the sum of
  // their weights, per filter: the taps it skips would each have added za' * w - za' * w = 0).
  // A task is a block of tiles, each meeting every n-tile in turn.
  void run_direct(const Context &ctx, const Shape &s, const DirectPlan &d, const Tensor &x,
                  int32_t zx, const Epilogue &epi, Tensor &y) const {
    const kern::GemmKernel &k = *kernel_;
    const GemmB &b = fast_[0];
    const bool is_signed = x.info().is_signed;
    const uint8_t flip = is_signed ? 0x80 : 0;
    const auto pad = static_cast<uint8_t>((static_cast<uint32_t>(zx) & 0xFFu) ^ flip);
    const int32_t za = zx + (is_signed ? 128 : 0);
    const auto mr = static_cast<size_t>(k.mr);
    const size_t tile_cols = static_cast<size_t>(k.np) * kern::kGemmPanel;
    const auto cz = static_cast<size_t>(s.C), mz = static_cast<size_t>(s.M);
    const size_t n_tiles = mz / tile_cols;
    // A tile's rows past its region (up to mr - 1, one step apart: stride_w pixels along W, or
    // stride_h padded rows along H) read on past the images: slack for them.
    const auto image_bytes = static_cast<size_t>(d.Hp * d.Wp) * cz;
    const size_t step = std::max(static_cast<size_t>(g_.stride_w) * cz,
                                 static_cast<size_t>(g_.stride_h * d.Wp) * cz);
    const size_t padded_bytes =
        (static_cast<size_t>(s.N) * image_bytes + mr * step + 64 + 63) / 64 * 64;
    // Each tap set's starting accumulators: -za' times its taps' weight sums (modulo 2^32).
    std::vector<int32_t> start(d.sets.size() * mz);
    for (size_t i = 0; i < start.size(); ++i)
      start[i] = static_cast<int32_t>(0u - d.set_sums[i] * static_cast<uint32_t>(za));
    // Tasks: runs of tiles over the images, as many for every thread and of equal work (a
    // tile's computed rows times its taps: a border tile runs fewer), up to about 16 tiles.
    const size_t per_image = d.tiles.size();
    const size_t total_tiles = static_cast<size_t>(s.N) * per_image;
    const auto threads = static_cast<size_t>(std::max(1, ctx.threads()));
    constexpr size_t kTileBlock = 16;
    const size_t rounds = (total_tiles + threads * kTileBlock - 1) / (threads * kTileBlock);
    const size_t tasks = std::min(total_tiles, rounds * threads);
    std::vector<size_t> bounds{0};  // task i: tiles bounds[i] .. bounds[i + 1]
    {
      // Task t - 1 ends where the work of the tiles before reaches t / tasks of the total (the
      // last one takes the rest): found in the plan's running sums.
      const size_t total = static_cast<size_t>(s.N) * d.multiplies;
      auto done = [&](size_t i) {  // the work of tiles 0 .. i - 1
        return (i / per_image) * d.multiplies + d.work_before[i % per_image];
      };
      for (size_t task = 1; task < tasks; ++task) {
        // The first tile i with done(i) * tasks >= total * task.
        size_t lo = bounds.back() + 1, hi = total_tiles;
        while (lo < hi) {
          const size_t mid = lo + (hi - lo) / 2;
          if (done(mid) * tasks >= total * task) hi = mid;
          else lo = mid + 1;
        }
        if (lo >= total_tiles) break;
        bounds.push_back(lo);
      }
      bounds.push_back(total_tiles);
    }
    const size_t task_count = bounds.size() - 1;
    in_nhwc(ctx, s, x, y, padded_bytes, [&](const uint8_t *xin, uint8_t *yd, uint8_t *xp) {
      // The padded image, a row of it at a time, made by the tasks themselves as their tiles
      // first need it (in the one parallel region: no second fork and join, no barrier). Row
      // r's state: 0 not made, 1 being made (by the thread that claimed it), 2 made. A thread
      // that finds a row being made waits for that copy of one row, which waits on nothing.
      const auto prow = static_cast<size_t>(d.Wp) * cz;
      const auto rows_total = static_cast<size_t>(s.N * d.Hp);
      std::unique_ptr<std::atomic<uint8_t>[]> states(new std::atomic<uint8_t>[rows_total]);
      for (size_t r = 0; r < rows_total; ++r) states[r].store(0, std::memory_order_relaxed);
      auto make_row = [&](size_t r) {
        const auto img = static_cast<int64_t>(r) / d.Hp, h = static_cast<int64_t>(r) % d.Hp - g_.pad_top;
        uint8_t *dst = xp + r * prow;
        if (h < 0 || h >= s.H) {
          std::memset(dst, pad, prow);
          return;
        }
        const auto left = static_cast<size_t>(g_.pad_left) * cz, inner = static_cast<size_t>(s.W) * cz;
        std::memset(dst, pad, left);
        copy_flip(dst + left, xin + static_cast<size_t>((img * s.H + h) * s.W) * cz, inner, flip);
        std::memset(dst + left + inner, pad, prow - left - inner);
      };
      auto ensure_rows = [&](size_t r0, size_t r1) {  // rows r0 .. r1 (inclusive) made
        for (size_t r = r0; r <= r1 && r < rows_total; ++r) {
          if (states[r].load(std::memory_order_acquire) == 2) continue;
          uint8_t expected = 0;
          if (states[r].compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
            make_row(r);
            states[r].store(2, std::memory_order_release);
            continue;
          }
          while (states[r].load(std::memory_order_acquire) != 2) spin_pause();
        }
      };
      // The slack past the images (read only by tiles' dropped rows).
      std::memset(xp + static_cast<size_t>(s.N) * image_bytes, pad,
                  padded_bytes - static_cast<size_t>(s.N) * image_bytes);
      // The padded rows a tile reads: from its first row's window to its last computed row's,
      // with the kernel's extent (rows past the images are the slack).
      const size_t reach = static_cast<size_t>((wdims_[2] - 1) * g_.dilation_h) * prow +
                           static_cast<size_t>((wdims_[3] - 1) * g_.dilation_w + 1) * cz;
      const size_t image_pixels = static_cast<size_t>(s.OH * s.OW);
      // Each worker first makes its share of the rows, in order (as the separate copying
      // region did), so that none makes them all for tiles that span the image (an edge
      // column's lines along H come early in a plan).
      const size_t workers = parallel_workers(ctx.threads(), task_count, 1);
      std::vector<uint8_t> started(workers, 0);
      // With a kernel's conv_fused and an 8-bit output of the requantizing modes (finite
      // scales and biases, no relu, no i32 bias), a tile's epilogue runs as jobs inside the
      // next tile (GemmConvJobs): its accumulators and jobs alternate between two buffers.
      const bool fused = k.conv_fused != nullptr && k.conv_fused4 != nullptr &&
                         epi.vector == k.epilogue && epi.finite &&
                         !epi.relu && epi.bias_i32 == nullptr && mr <= 16 &&
                         tile_cols == 16 * kern::kGemmConvJobVectors &&
                         (epi.mode == Epilogue::Mode::Requantize ||
                          (epi.mode == Epilogue::Mode::FloatQuantize && epi.bias_f32 != nullptr));
      kern::GemmConvJobs proto;
      proto.divide = epi.mode == Epilogue::Mode::FloatQuantize;
      const auto lo = static_cast<float>(epi.qmin - epi.zy), hi = static_cast<float>(epi.qmax - epi.zy);
      parallel_for_workers(ctx.threads(), task_count, 1, [&](size_t t0, size_t t1, size_t wk) {
        if (started[wk] == 0) {
          started[wk] = 1;
          ensure_rows(wk * rows_total / workers, (wk + 1) * rows_total / workers - 1);
        }
        alignas(64) int32_t accs[2][16 * 64];
        kern::GemmConvJob job_lists[2][16];  // (a job a row: mr <= 16)
        kern::GemmConvJobs jobs = proto;  // the previous tile's, if any
        // The previous tile's rows (jobs.next - first of them are done), for the epilogue of
        // those its successor's taps left (a tile with fewer taps than rows; the last tile).
        struct {
          const kern::GemmConvJob *first = nullptr;
          const int32_t *acc = nullptr;
          size_t n0 = 0, y0 = 0, y_ld = 0;
        } prev;
        auto finish = [&] {
          const auto done = static_cast<size_t>(jobs.next - prev.first);
          const auto left = static_cast<size_t>(jobs.end - jobs.next);
          if (left > 0)
            epi.block(prev.acc + done * tile_cols, tile_cols, static_cast<int>(left), prev.n0,
                      tile_cols, yd, prev.y0 + done * prev.y_ld, prev.y_ld);
          jobs.next = jobs.end;
        };
        int cur = 0;
        for (size_t task = t0; task < t1; ++task) {
          const size_t i0 = bounds[task], i1 = bounds[task + 1];
          for (size_t nt = 0; nt < n_tiles; ++nt) {
            const size_t n0 = nt * tile_cols;
            const int8_t *bp = b.data.data() + nt * static_cast<size_t>(k.np) * b.panel_stride();
            for (size_t i = i0; i < i1; ++i) {
              const size_t img = i / per_image;
              const DirectPlan::Tile &t = d.tiles[i % per_image];
              const std::vector<size_t> &off = d.sets[t.set];
              if (nt == 0 && workers > 1) {  // (one worker made every row first)
                const size_t first = img * image_bytes + t.a;
                ensure_rows(first / prow, (first + (t.computed - 1) * t.a_step + reach - 1) / prow);
              }
              int32_t *acc = accs[cur];
              std::memcpy(acc, start.data() + t.set * mz + n0, tile_cols * sizeof(int32_t));
              const uint8_t *at = xp + img * image_bytes + t.a;
              const size_t m = img * image_pixels + t.pixel;
              if (!fused) {
                (t.computed == mr ? k.conv_tile : k.conv_tile4)(
                    at, t.a_step, off.data(), off.size() / 2, cz / kern::kGemmGroup, bp,
                    b.panel_stride(), acc, tile_cols);
                epi.block(acc, tile_cols, static_cast<int>(t.rows), n0, tile_cols, yd,
                          m * mz + n0, t.pixel_step * mz);
                continue;
              }
              (t.computed == mr ? k.conv_fused : k.conv_fused4)(
                  at, t.a_step, off.data(), off.size() / 2, cz / kern::kGemmGroup, bp,
                  b.panel_stride(), acc, tile_cols, &jobs);
              finish();
              // This tile's jobs, for the next.
              kern::GemmConvJob *list = job_lists[cur];
              size_t n = 0;
              const float *mult = epi.multiplier.data() + n0;
              const float *bias = epi.bias_f32 != nullptr ? epi.bias_f32 + n0 : nullptr;
              uint8_t *out = yd + m * mz + n0;
              for (size_t r = 0; r < t.rows; ++r)
                list[n++] = {acc + r * tile_cols, out + r * t.pixel_step * mz, mult, bias, lo, hi,
                             epi.sy, epi.zy};
              jobs.next = list;
              jobs.end = list + n;
              prev.first = list;
              prev.acc = acc;
              prev.n0 = n0;
              prev.y0 = m * mz + n0;
              prev.y_ld = t.pixel_step * mz;
              cur ^= 1;
            }
          }
        }
        if (fused) finish();  // the last tile's
      });
    });
  }

  // Depthwise (groups == C == M): per output pixel, the kernel set's depthwise kernel sums
  // (x - zx) * (w - zw) over the taps for all channels at once (taps outside the image hold zx:
  // they add nothing); blocks of 16 pixels then go through the epilogue. With 8-bit weights and
  // a depthwise8 kernel, the VNNI form: its zero-point terms (zx' times each channel's weight
  // sum) are made once per run.
  void run_depthwise(const Context &ctx, const Shape &s, const Tensor &x, int32_t zx,
                     const Epilogue &epi, Tensor &y) const {
    const int64_t KH = wdims_[2], KW = wdims_[3];
    const auto C = static_cast<size_t>(s.C);
    constexpr size_t kPixels = 16;
    const size_t pixels = static_cast<size_t>(s.N * s.OH * s.OW);
    const size_t blocks = (pixels + kPixels - 1) / kPixels;
    const size_t workers = parallel_workers(ctx.threads(), blocks, 1);
    const bool is_signed = x.info().is_signed;
    const bool vnni = !dw8_.empty();
    // zx' (x' = x ^ 0x80 for i8 x: the u8 operand) and its terms.
    const int32_t zxp = zx + (is_signed ? 128 : 0);
    const auto pad = static_cast<uint8_t>(static_cast<uint32_t>(zxp) & 0xFFu);
    std::vector<int32_t> corr(vnni ? C : 0);
    for (size_t c = 0; c < corr.size(); ++c)
      corr[c] = static_cast<int32_t>(static_cast<uint32_t>(zxp) * static_cast<uint32_t>(dw_sum_[c]));
    // Each worker's tap pointers, allocated once (the body runs once per block of pixels), a
    // cache line apart (the workers write them per pixel).
    const auto ntaps = static_cast<size_t>(KH * KW);
    const size_t tap_stride = (ntaps + 7) / 8 * 8 + 8;
    std::vector<const uint8_t *> tap_table(workers * tap_stride);
    in_nhwc(ctx, s, x, y, workers * kPixels * C * 4, [&](const uint8_t *xin, uint8_t *yd, uint8_t *work) {
      parallel_for_workers(ctx.threads(), blocks, 1, [&](size_t b0, size_t b1, size_t wk) {
        auto *acc = reinterpret_cast<int32_t *>(work) + wk * kPixels * C;
        const uint8_t **taps = tap_table.data() + wk * tap_stride;
        for (size_t b = b0; b < b1; ++b) {
          const size_t p0 = b * kPixels, n = std::min(kPixels, pixels - p0);
          // The block's first pixel, then one step along the row at a time (no division per
          // pixel).
          const auto first = static_cast<int64_t>(p0);
          int64_t img = first / (s.OH * s.OW), oh = first % (s.OH * s.OW) / s.OW, ow = first % s.OW;
          for (size_t r = 0; r < n; ++r) {
            for (int64_t i = 0; i < KH; ++i) {
              const int64_t h = oh * g_.stride_h - g_.pad_top + i * g_.dilation_h;
              const bool row_in = h >= 0 && h < s.H;
              const uint8_t *line = xin + static_cast<size_t>((img * s.H + (row_in ? h : 0)) * s.W) * C;
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t w = ow * g_.stride_w - g_.pad_left + j * g_.dilation_w;
                taps[static_cast<size_t>(i * KW + j)] =
                    !row_in || w < 0 || w >= s.W ? nullptr : line + static_cast<size_t>(w) * C;
              }
            }
            if (vnni)
              kernel_->depthwise8(taps, ntaps, is_signed, pad, dw8_.data(), corr.data(), C, acc + r * C);
            else
              kernel_->depthwise(taps, ntaps, is_signed, zx, dw_.data(), C, acc + r * C);
            if (++ow == s.OW) {
              ow = 0;
              if (++oh == s.OH) oh = 0, ++img;
            }
          }
          epi.block(acc, C, static_cast<int>(n), 0, C, yd, p0 * C, C);
        }
      });
    });
  }

  // Depthwise by rows (stride 1 and dilation 1 along W; kernels/gemm/gemm.hpp, GemmDwRowFn):
  // work items of (image, group of channel blocks, band of output rows), each taken a band of
  // columns at a time (one band where a ring fits). Per band and block, each input row that the
  // band reads is expanded once into the block's ring of
  // (KH - 1) * dilation_h + 1 slots (its index modulo the ring: the KH rows of one output row
  // never share a slot), rows outside the image into one pad slot; per output row, the row
  // kernel for each block of the group, then the epilogue once over the group's channels.
  // Everything a worker uses is in its part of the scratch (the body allocates nothing).
  void run_depthwise_rows(const Context &ctx, const Shape &s, const Tensor &x, int32_t zx,
                          const Epilogue &epi, Tensor &y) const {
    const auto KH = static_cast<size_t>(wdims_[2]), KW = static_cast<size_t>(wdims_[3]);
    const auto C = static_cast<size_t>(s.C), OW = static_cast<size_t>(s.OW);
    const auto Bk = static_cast<size_t>(kernel_->dw_block), Gw = static_cast<size_t>(kernel_->dw_group);
    const auto eb = static_cast<size_t>(kernel_->dw_bytes);
    const size_t jg = (KW + Gw - 1) / Gw, blocks = (C + Bk - 1) / Bk;
    const size_t entry = Bk * Gw * eb;
    const auto dh = static_cast<size_t>(g_.dilation_h);
    const size_t ring = (KH - 1) * dh + 1;
    // The rings of a group of blocks within 24 KiB, so that the row kernel reads them from L1
    // (it loads 64 bytes a vpdpbusd: from L2, on a Zen 4, the loads took twice as long). Where
    // one block's ring over the whole width is larger, the width is cut into bands of columns,
    // each expanded with its KW - 1 columns of overlap.
    constexpr size_t kRingBudget = size_t{24} << 10;
    const auto ring_bytes = [&](size_t cols) {  // a block's ring and pad slot over cols outputs
      return (ring + 1) * (((cols + (jg - 1) * Gw) * entry + 63) / 64 * 64);
    };
    size_t col_bands = 1;
    while (col_bands < OW && ring_bytes((OW + col_bands - 1) / col_bands) > kRingBudget) ++col_bands;
    const size_t band_cols = (OW + col_bands - 1) / col_bands;
    col_bands = (OW + band_cols - 1) / band_cols;
    const size_t row_bytes = ((band_cols + (jg - 1) * Gw) * entry + 63) / 64 * 64;
    const size_t block_bytes = (ring + 1) * row_bytes;
    const size_t per_group = std::max<size_t>(1, std::min(blocks, kRingBudget / block_bytes));
    const size_t groups = (blocks + per_group - 1) / per_group;
    const size_t acc_ld = per_group * Bk;
    const size_t acc_bytes = (band_cols * acc_ld * 4 + 63) / 64 * 64;
    // Each slot's row (the pad slot's: 1 once made) and the KH row pointers, in the scratch.
    const size_t tag_bytes = (per_group * (ring + 1) * sizeof(int64_t) + KH * sizeof(void *) + 63) / 64 * 64;
    const size_t worker_bytes = per_group * block_bytes + acc_bytes + tag_bytes;
    // Each block's start: -zx' * (the channel's weight sum) for int8 weights, else 0.
    const bool is_signed = x.info().is_signed;
    const auto zxp = static_cast<uint32_t>((zx + (is_signed ? 128 : 0)) & 0xFF);
    std::vector<int32_t> start(blocks * Bk, 0);
    if (eb == 1)
      for (size_t c = 0; c < start.size(); ++c)
        start[c] = static_cast<int32_t>(0u - zxp * static_cast<uint32_t>(dwr_sum_[c]));
    // Bands of output rows: none for one thread; else enough items for two per thread.
    const auto OH = static_cast<size_t>(s.OH), images = static_cast<size_t>(s.N);
    const auto threads = static_cast<size_t>(ctx.threads());
    size_t bands = 1;
    if (threads > 1) bands = std::min(OH, (2 * threads + images * groups - 1) / (images * groups));
    const size_t band_rows = (OH + bands - 1) / bands;
    bands = (OH + band_rows - 1) / band_rows;
    const size_t items = images * groups * bands;
    const size_t workers = parallel_workers(ctx.threads(), items, 1);
    const size_t wbytes = Bk * Gw * eb * KH * jg;
    const auto M = static_cast<size_t>(s.M), H = static_cast<size_t>(s.H), W = static_cast<size_t>(s.W);
    in_nhwc(ctx, s, x, y, workers * worker_bytes + 64, [&](const uint8_t *xin, uint8_t *yd, uint8_t *work) {
      auto *base = reinterpret_cast<uint8_t *>((reinterpret_cast<uintptr_t>(work) + 63) / 64 * 64);
      parallel_for_workers(ctx.threads(), items, 1, [&](size_t i0, size_t i1, size_t wk) {
        uint8_t *mine = base + wk * worker_bytes;
        auto *acc = reinterpret_cast<int32_t *>(mine + per_group * block_bytes);
        auto *tag = reinterpret_cast<int64_t *>(mine + per_group * block_bytes + acc_bytes);
        auto *rows = reinterpret_cast<const uint8_t **>(tag + per_group * (ring + 1));
        for (size_t it = i0; it < i1; ++it) {
          const size_t img = it / (groups * bands), grp = it / bands % groups, band = it % bands;
          const size_t b0 = grp * per_group, b1 = std::min(blocks, b0 + per_group);
          const size_t oh0 = band * band_rows, oh1 = std::min(OH, oh0 + band_rows);
          for (size_t cb = 0; cb < col_bands; ++cb) {
            const size_t ow0 = cb * band_cols, ncols = std::min(band_cols, OW - ow0);
            const size_t entries = ncols + (jg - 1) * Gw;
            const std::ptrdiff_t iw0 = static_cast<std::ptrdiff_t>(ow0) - g_.pad_left;
            std::fill(tag, tag + per_group * (ring + 1), int64_t{-1});
            for (size_t oh = oh0; oh < oh1; ++oh) {
              for (size_t b = b0; b < b1; ++b) {
                const size_t c0 = b * Bk, cn = std::min(Bk, C - c0);
                uint8_t *slots = mine + (b - b0) * block_bytes;
                int64_t *tags = tag + (b - b0) * (ring + 1);
                for (size_t i = 0; i < KH; ++i) {
                  const int64_t h = static_cast<int64_t>(oh) * g_.stride_h - g_.pad_top +
                                    static_cast<int64_t>(i * dh);
                  if (h < 0 || h >= s.H) {
                    uint8_t *pad_row = slots + ring * row_bytes;
                    if (tags[ring] != 1)
                      kernel_->dw_expand(nullptr, W, C, c0, cn, iw0, entries, is_signed, zx, pad_row);
                    tags[ring] = 1;
                    rows[i] = pad_row;
                    continue;
                  }
                  const size_t slot = static_cast<size_t>(h) % ring;
                  uint8_t *r = slots + slot * row_bytes;
                  if (tags[slot] != h) {
                    kernel_->dw_expand(xin + (img * H + static_cast<size_t>(h)) * W * C, W, C, c0, cn,
                                       iw0, entries, is_signed, zx, r);
                    tags[slot] = h;
                  }
                  rows[i] = r;
                }
                kernel_->dw_row(rows, KH, jg, dwr_.data() + b * wbytes, start.data() + c0, ncols,
                                acc + (b - b0) * Bk, acc_ld);
              }
              const size_t c0 = b0 * Bk, cn = std::min(C, b1 * Bk) - c0;
              epi.block(acc, acc_ld, static_cast<int>(ncols), c0, cn, yd,
                        ((img * OH + oh) * OW + ow0) * M + c0, M);
            }
          }
        }
      });
    });
  }

  void run_reference(const Context &ctx, const Shape &s, const Tensor &x, int32_t zx,
                     const Epilogue &epi, Tensor &y) const {
    const int64_t N = s.N, M = s.M, OH = s.OH, OW = s.OW, C = s.C, H = s.H, W = s.W;
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
    const auto pad_byte = static_cast<uint8_t>(static_cast<uint32_t>(zx) & 0xFFu);

    // The reference reads NCHW: an NHWC x is transposed first.
    const uint8_t *xin = x.data();
    std::vector<uint8_t> nchw;
    if (g_.nhwc) {
      nchw.resize(x.byte_size());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            for (int64_t c = 0; c < C; ++c)
              nchw[static_cast<size_t>(((n * C + c) * H + h) * W + w)] =
                  xin[((n * H + h) * W + w) * C + c];
      xin = nchw.data();
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
    parallel_for_workers(ctx.threads(), tasks, 1, [&](size_t t0, size_t t1, size_t worker) {
      uint8_t *col = cols[worker].data();
      int32_t *acc = accs[worker].data();
      for (size_t t = t0; t < t1; ++t) {
        const int64_t n = static_cast<int64_t>(t) / G, gi = static_cast<int64_t>(t) % G;
        ref::im2col(geo, xin + ((n * C + gi * Cg) * H) * W, pad_byte, col);
        ref::Int8Matrix b = col_view;
        b.data = col;
        // acc[mi * P + p] for this group's filters mi.
        ref::qgemm_packed(P, b, &zx, 0, w, gi * Mg, (gi + 1) * Mg, acc, 1, P);
        for (int64_t mi = 0; mi < Mg; ++mi) {
          const int64_t m = gi * Mg + mi;
          for (int64_t p = 0; p < P; ++p) {
            const size_t i = g_.nhwc ? static_cast<size_t>((n * P + p) * M + m)
                                     : static_cast<size_t>((n * M + m) * P + p);
            epi.put(acc[mi * P + p], static_cast<size_t>(m), y.data(), i);
          }
        }
      }
    });
  }

  Geometry g_;
  bool relu_;
  const kern::GemmKernel *kernel_;
  std::vector<int64_t> wdims_;
  std::shared_ptr<const QParams> wq_;
  PackedWeights w_;  // the reference path's weights (fast path: K, scales only)
  std::vector<GemmB> fast_;  // the fast path's, one per group
  std::vector<int16_t> dw_;  // depthwise: w - zw as [tap][channel] (then fast_ is empty)
  std::vector<int8_t> dw8_;  // and as int8 for the set's depthwise8, when every one fits
  std::vector<uint8_t> dwr_;    // and by rows (run_depthwise_rows), when the set has that kernel
  std::vector<int32_t> dwr_sum_;  // each channel's sum of w - zw, per block of dw_block
  std::vector<int32_t> dw_sum_;  // sum over the taps of w - zw, per channel (with dw8_)
  std::vector<int32_t> tap_sum_;  // direct form: [tap][filter] sums of b' (modulo 2^32)
  mutable std::mutex plan_mutex_;
  mutable std::shared_ptr<const DirectPlan> plan_;  // direct form: the last image size's plan
  Bias bias_;
};

void check_conv_weights(const Tensor &w, const Tensor *bias, const OpDesc &desc) {
  desc.require_only(OpDesc::kConvKeys, "the 2-D convolution");
  require_int8(w, "w");
  check_weight_shape(w.dims(), Geometry(desc));
  check_channel_qparams(w.qparams(), w.rank(), "w", 0, true, false);
  check_bias(bias, w.dims()[0], true);
}

}  // namespace

std::vector<int64_t> conv2d_output_shape(const OpDesc &d, const Tensor &x, const Tensor &w) {
  d.require_only(OpDesc::kConvKeys, "the 2-D convolution");
  return output_shape(Geometry(d), x, w.dims());
}

std::unique_ptr<Prepared> prepare_conv2d(const Context &ctx, const Tensor &w_in, const Tensor *bias,
                                         const OpDesc &desc) {
  std::unique_ptr<Tensor> held;
  const Tensor &w = int8_weights(w_in, "w", held);
  check_conv_weights(w, bias, desc);
  return std::make_unique<PreparedConv>(ctx, w, bias, desc);
}

void qconv2d(const Context &ctx, const OpDesc &d, const Tensor &x, const Tensor &w_in,
             const Tensor *bias, Tensor &y) {
  require_disjoint(y, w_in, "y", "w");
  std::unique_ptr<Tensor> held;
  const Tensor &w = int8_weights(w_in, "w", held);
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
  if (bias != nullptr && bias->dtype() == QNT_DTYPE_F32 && mode == OutputMode::Int32)
    fail(QNT_ERR_DTYPE_MISMATCH, "an f32 bias needs an f32 or 8-bit y (use an i32 bias)");
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
  if (y.element_count() == 0) return;
  PreparedConv(ctx, w, bias, d).run(ctx, x, y);
}

}  // namespace qnt::ops
