#include "kernels/ref/ops_ref.hpp"

#include "kernels/ref/quantize_ref.hpp"
#include "kernels/common/scalar.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace qnt::ref {

int32_t wrap_add(int32_t a, int32_t b) noexcept { return rules::wrap_add(a, b); }

void qgemm(int64_t M, int64_t N, int64_t K, const Int8Matrix &a, const int32_t *za,
           const Int8Matrix &b, const int32_t *zb, int32_t *c, int64_t ldc) {
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      // Each term is exact in int64; the sum is kept modulo 2^64 (unsigned, so a huge K cannot
      // overflow), and its low 32 bits are what an int32 accumulator holds after wrapping.
      uint64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<uint64_t>(static_cast<int64_t>(a.at(m, k) - za[m]) *
                                     static_cast<int64_t>(b.at(k, n) - zb[n]));
      c[m * ldc + n] = static_cast<int32_t>(static_cast<uint32_t>(acc));
    }
  }
}

void packed_sums(const uint8_t *data, bool is_signed, int64_t channels, int64_t K,
                 const int32_t *zero_points, int32_t *sums) noexcept {
  Int8Matrix w;
  w.data = data;
  w.is_signed = is_signed;
  w.row_stride = K;
  for (int64_t c = 0; c < channels; ++c) {
    uint32_t s = 0;
    for (int64_t k = 0; k < K; ++k) s += static_cast<uint32_t>(w.at(c, k) - zero_points[c]);
    sums[c] = static_cast<int32_t>(s);
  }
}

void qgemm_packed(int64_t rows, const Int8Matrix &act, const int32_t *zact, int64_t zstride,
                  const PackedInt8 &w, int64_t c0, int64_t c1, int32_t *out, int64_t out_rs,
                  int64_t out_cs) noexcept {
  Int8Matrix wm;
  wm.data = w.data;
  wm.is_signed = w.is_signed;
  wm.row_stride = w.K;
  for (int64_t r = 0; r < rows; ++r) {
    const auto za = static_cast<uint32_t>(zact[r * zstride]);
    for (int64_t c = c0; c < c1; ++c) {
      const int32_t zw = w.zero_points[c];
      // |act| <= 255 and |w - zw| <= 255: every product fits in int32; the sum is modulo 2^32.
      uint32_t acc = 0;
      for (int64_t k = 0; k < w.K; ++k)
        acc += static_cast<uint32_t>(act.at(r, k) * (wm.at(c, k) - zw));
      acc -= za * static_cast<uint32_t>(w.sums[c]);
      out[r * out_rs + (c - c0) * out_cs] = static_cast<int32_t>(acc);
    }
  }
}

float requant_multiplier(float sa, float sb, float sy) noexcept {
  return rules::requant_multiplier(sa, sb, sy);
}

int32_t requantize(int32_t acc, float multiplier, int32_t zy, int32_t qmin, int32_t qmax) noexcept {
  return rules::requantize(acc, multiplier, zy, qmin, qmax);
}

float acc_to_float(int32_t acc, float scale, float bias) noexcept {
  return rules::acc_to_float(acc, scale, bias);
}

float dot(const float *x, const float *w, int64_t K) noexcept {
  float s[16] = {0};
  for (int64_t k = 0; k < K; ++k) s[k % 16] = std::fma(x[k], w[k], s[k % 16]);
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) s[i] = s[i] + s[i + width];
  return s[0];
}

const int8_t kNF4Int8[16] = {QNT_NF4_INT8};

void act_quantize_blocks(const float *x, int64_t K, int64_t B, int8_t *qx, float *sx) noexcept {
  for (int64_t k0 = 0, j = 0; k0 < K; k0 += B, ++j) {
    const int64_t k1 = std::min(K, k0 + B);
    float a = 0.0f;
    bool finite = true;
    for (int64_t k = k0; k < k1; ++k) {
      if (!std::isfinite(x[k])) finite = false;
      a = std::max(a, std::fabs(x[k]));
    }
    const float s = finite ? a / 127.0f : std::numeric_limits<float>::quiet_NaN();
    sx[j] = s;
    for (int64_t k = k0; k < k1; ++k)
      qx[k] = finite && s != 0.0f ? static_cast<int8_t>(quantize_integer(x[k], s, 0, -127, 127))
                                  : int8_t{0};
  }
}

float dot_int8_act(const int8_t *qx, const float *sx, const int32_t *v, const float *sw,
                   int64_t K, int64_t B) noexcept {
  float s[16] = {0};
  for (int64_t k0 = 0, j = 0; k0 < K; k0 += B, ++j) {
    const int64_t k1 = std::min(K, k0 + B);
    uint32_t p[16] = {0};  // wraps modulo 2^32, as the header says
    bool touched[16] = {false};
    for (int64_t k = k0; k < k1; ++k) {
      const int l = static_cast<int>((k / 4) % 16);
      p[l] += static_cast<uint32_t>(static_cast<int32_t>(qx[k]) * v[k]);
      touched[l] = true;
    }
    const float d = sx[j] * sw[j];
    for (int l = 0; l < 16; ++l)
      if (touched[l]) s[l] = std::fma(static_cast<float>(static_cast<int32_t>(p[l])), d, s[l]);
  }
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) s[i] = s[i] + s[i + width];
  return s[0];
}

float dot_int8_block(const int8_t *qx, const float *sx, const int32_t *v, const float *sw,
                     int64_t K, int64_t B) noexcept {
  float s = 0.0f;
  for (int64_t k0 = 0, j = 0; k0 < K; k0 += B, ++j) {
    const int64_t k1 = std::min(K, k0 + B);
    uint32_t p = 0;  // wraps modulo 2^32, as the header says
    for (int64_t k = k0; k < k1; ++k) p += static_cast<uint32_t>(static_cast<int32_t>(qx[k]) * v[k]);
    s = std::fma(static_cast<float>(static_cast<int32_t>(p)), sx[j] * sw[j], s);
  }
  return s;
}

bool dynamic_qparams(const float *x, size_t n, float *scale, int32_t *zero_point,
                     int32_t qmax) noexcept {
  float lo = 0.0f, hi = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v)) continue;
    if (std::isinf(v)) return false;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return dynamic_qparams_of_range(lo, hi, scale, zero_point, qmax);
}

bool dynamic_qparams_of_range(float lo, float hi, float *scale, int32_t *zero_point,
                              int32_t qmax) noexcept {
  if (hi == lo) {  // only zeros: ONNX would divide by a zero scale
    *scale = 1.0f;
    *zero_point = 0;
    return true;
  }
  const float q = static_cast<float>(qmax);
  const float s = (hi - lo) / q;
  if (!(s > 0.0f) || std::isinf(s)) return false;  // a range too wide for float32
  const float z = round_half_to_even((0.0f - lo) / s);
  *scale = s;
  *zero_point = static_cast<int32_t>(std::min(q, std::max(0.0f, z)));
  return true;
}

void im2col(const ConvGeometry &g, const uint8_t *x, uint8_t pad_byte, uint8_t *col) {
  const int64_t plane = g.out_h * g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    for (int64_t i = 0; i < g.kernel_h; ++i) {
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        uint8_t *row = col + ((c * g.kernel_h + i) * g.kernel_w + j) * plane;
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t h = oh * g.stride_h - g.pad_top + i * g.dilation_h;
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t w = ow * g.stride_w - g.pad_left + j * g.dilation_w;
            const bool inside = h >= 0 && h < g.height && w >= 0 && w < g.width;
            row[oh * g.out_w + ow] = inside ? x[(c * g.height + h) * g.width + w] : pad_byte;
          }
        }
      }
    }
  }
}

}  // namespace qnt::ref
