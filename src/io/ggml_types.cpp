// ggml's block types: the table and the dequantization (our own code from the block layouts of
// ggml's ggml-common.h; the float operations in the order of its dequantize_row_*).
#include "io/ggml_types.hpp"

#include "core/error.hpp"
#include "kernels/common/scalar.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include <cstring>

namespace qnt::io {
namespace {

constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4, true},        {1, "F16", 1, 2, true},         {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, true},     {6, "Q5_0", 32, 22, true},      {7, "Q5_1", 32, 24, true},
    {8, "Q8_0", 32, 34, true},     {9, "Q8_1", 32, 36, false},     {10, "Q2_K", 256, 84, false},
    {11, "Q3_K", 256, 110, false}, {12, "Q4_K", 256, 144, true},   {13, "Q5_K", 256, 176, true},
    {14, "Q6_K", 256, 210, true},  {15, "Q8_K", 256, 292, false},  {16, "IQ2_XXS", 256, 66, false},
    {17, "IQ2_XS", 256, 74, false}, {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, true},  {21, "IQ3_S", 256, 110, false}, {22, "IQ2_S", 256, 82, false},
    {23, "IQ4_XS", 256, 136, false}, {24, "I8", 1, 1, true},       {25, "I16", 1, 2, true},
    {26, "I32", 1, 4, true},       {27, "I64", 1, 8, false},       {28, "F64", 1, 8, false},
    {29, "IQ1_M", 256, 56, false}, {30, "BF16", 1, 2, true},       {34, "TQ1_0", 256, 54, true},
    {35, "TQ2_0", 256, 66, true},  {39, "MXFP4", 32, 17, false},
};

constexpr int8_t kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

float half(const uint8_t *p) {
  uint16_t h = 0;
  std::memcpy(&h, p, 2);
  return rules::f16_to_f32(h);
}

// Q4_K / Q5_K: the 6-bit scale and minimum of sub-block j from the 12 packed bytes.
void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

}  // namespace

const GgmlType *ggml_type(uint32_t id) noexcept {
  for (const GgmlType &t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

const GgmlType *ggml_type(const char *name) noexcept {
  for (const GgmlType &t : kTypes)
    if (std::strcmp(t.name, name) == 0) return &t;
  return nullptr;
}

void ggml_dequantize(const GgmlType &t, const uint8_t *src, size_t count, float *y) {
  if (count == 0) return;  // (src and y may be null)
  const size_t n = count, nb = count / t.block;
  switch (t.id) {
    case 0:
      std::memcpy(y, src, 4 * n);
      return;
    case 1:
      for (size_t i = 0; i < n; ++i) y[i] = half(src + 2 * i);
      return;
    case 30:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h = 0;
        std::memcpy(&h, src + 2 * i, 2);
        y[i] = rules::bf16_to_f32(h);
      }
      return;
    case 24:
      for (size_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int8_t>(src[i]));
      return;
    case 25:
      for (size_t i = 0; i < n; ++i) {
        int16_t v = 0;
        std::memcpy(&v, src + 2 * i, 2);
        y[i] = static_cast<float>(v);
      }
      return;
    case 26:
      for (size_t i = 0; i < n; ++i) {
        int32_t v = 0;
        std::memcpy(&v, src + 4 * i, 4);
        y[i] = static_cast<float>(v);
      }
      return;
    case 2:  // Q4_0: d, 16 bytes; element j low nibble, j + 16 high; (q - 8) * d
      for (size_t i = 0; i < nb; ++i, src += 18, y += 32) {
        const float d = half(src);
        for (int j = 0; j < 16; ++j) {
          y[j] = static_cast<float>((src[2 + j] & 0x0F) - 8) * d;
          y[j + 16] = static_cast<float>((src[2 + j] >> 4) - 8) * d;
        }
      }
      return;
    case 3:  // Q4_1: d, m, 16 bytes; q * d + m
      for (size_t i = 0; i < nb; ++i, src += 20, y += 32) {
        const float d = half(src), m = half(src + 2);
        for (int j = 0; j < 16; ++j) {
          const float a = static_cast<float>(src[4 + j] & 0x0F) * d;
          const float b = static_cast<float>(src[4 + j] >> 4) * d;
          y[j] = a + m;
          y[j + 16] = b + m;
        }
      }
      return;
    case 6:  // Q5_0: d, qh (32 bits), 16 bytes; (q - 16) * d
    case 7:  // Q5_1: d, m, qh, 16 bytes; q * d + m
      for (size_t i = 0; i < nb; ++i, src += t.size, y += 32) {
        const bool q51 = t.id == 7;
        const float d = half(src), m = q51 ? half(src + 2) : 0.0f;
        const uint8_t *h = src + (q51 ? 4 : 2);
        uint32_t qh = 0;
        std::memcpy(&qh, h, 4);
        const uint8_t *qs = h + 4;
        for (int j = 0; j < 16; ++j) {
          const int x0 = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
          const int x1 = (qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
          if (q51) {
            const float a = static_cast<float>(x0) * d, b = static_cast<float>(x1) * d;
            y[j] = a + m;
            y[j + 16] = b + m;
          } else {
            y[j] = static_cast<float>(x0 - 16) * d;
            y[j + 16] = static_cast<float>(x1 - 16) * d;
          }
        }
      }
      return;
    case 8:  // Q8_0: d, 32 int8; q * d
      for (size_t i = 0; i < nb; ++i, src += 34, y += 32) {
        const float d = half(src);
        for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
      }
      return;
    case 12:  // Q4_K: d, dmin, scales[12], qs[128]; (d * sc) * q - (dmin * m)
    case 13:  // Q5_K: d, dmin, scales[12], qh[32], qs[128]
      for (size_t i = 0; i < nb; ++i, src += t.size, y += 256) {
        const bool q5 = t.id == 13;
        const float d = half(src), dmin = half(src + 2);
        const uint8_t *sc = src + 4, *qh = src + 16, *q = src + (q5 ? 48 : 16);
        float *o = y;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
          uint8_t s1, m1, s2, m2;
          scale_min_k4(is, sc, &s1, &m1);
          scale_min_k4(is + 1, sc, &s2, &m2);
          const float d1 = d * static_cast<float>(s1), mm1 = dmin * static_cast<float>(m1);
          const float d2 = d * static_cast<float>(s2), mm2 = dmin * static_cast<float>(m2);
          const int u1 = 1 << (j / 32), u2 = 2 << (j / 32);
          for (int l = 0; l < 32; ++l) {
            const int v = (q[l] & 0xF) + (q5 && (qh[l] & u1) ? 16 : 0);
            const float p = d1 * static_cast<float>(v);
            *o++ = p - mm1;
          }
          for (int l = 0; l < 32; ++l) {
            const int v = (q[l] >> 4) + (q5 && (qh[l] & u2) ? 16 : 0);
            const float p = d2 * static_cast<float>(v);
            *o++ = p - mm2;
          }
        }
      }
      return;
    case 14:  // Q6_K: ql[128], qh[64], scales[16] (int8), d; (d * sc) * q
      for (size_t i = 0; i < nb; ++i, src += 210, y += 256) {
        const uint8_t *ql = src, *qh = src + 128;
        const auto *sc = reinterpret_cast<const int8_t *>(src + 192);
        const float d = half(src + 208);
        for (int n0 = 0; n0 < 256; n0 += 128, ql += 64, qh += 32, sc += 8) {
          for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[n0 + l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
            y[n0 + l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
            y[n0 + l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
            y[n0 + l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
          }
        }
      }
      return;
    case 20:  // IQ4_NL: d, 16 bytes; d * kvalues[q]
      for (size_t i = 0; i < nb; ++i, src += 18, y += 32) {
        const float d = half(src);
        for (int j = 0; j < 16; ++j) {
          y[j] = d * static_cast<float>(kIq4nl[src[2 + j] & 0xF]);
          y[j + 16] = d * static_cast<float>(kIq4nl[src[2 + j] >> 4]);
        }
      }
      return;
    case 34:  // TQ1_0: qs[48] (5 trits a byte), qh[4] (4 trits a byte), d
      for (size_t i = 0; i < nb; ++i, src += 54) {
        const float d = half(src + 52);
        static constexpr uint8_t pow3[5] = {1, 3, 9, 27, 81};
        auto trit = [&](uint8_t b, int p) {
          const auto q = static_cast<uint8_t>(b * pow3[p]);
          const int xi = (static_cast<uint16_t>(q) * 3) >> 8;
          return static_cast<float>(xi - 1) * d;
        };
        for (int j = 0; j < 32; j += 32)
          for (int p = 0; p < 5; ++p)
            for (int m = 0; m < 32; ++m) *y++ = trit(src[j + m], p);
        for (int j = 32; j < 48; j += 16)
          for (int p = 0; p < 5; ++p)
            for (int m = 0; m < 16; ++m) *y++ = trit(src[j + m], p);
        for (int p = 0; p < 4; ++p)
          for (int j = 0; j < 4; ++j) *y++ = trit(src[48 + j], p);
      }
      return;
    case 35:  // TQ2_0: qs[64] (2 bits each), d; (q - 1) * d
      for (size_t i = 0; i < nb; ++i, src += 66) {
        const float d = half(src + 64);
        for (int j = 0; j < 64; j += 32)
          for (int l = 0; l < 4; ++l)
            for (int m = 0; m < 32; ++m) *y++ = static_cast<float>(((src[j + m] >> (2 * l)) & 3) - 1) * d;
      }
      return;
    default:
      return;  // callers check t.dequant
  }
}

bool ggml_quantizes(const GgmlType &t) noexcept {
  switch (t.id) {
    case 0: case 1: case 30: case 2: case 3: case 6: case 7: case 8: case 12: case 13: case 14: case 20: case 34:
    case 35:
      return true;
    default: return false;
  }
}

namespace {

void put_half(uint8_t *p, float v) {
  const uint16_t h = rules::f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

void check_finite(const float *x, size_t n, const char *type) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) fail(QNT_ERR_INVALID_ARGUMENT, "element ", i, " is ", x[i], ", which ", type, " cannot hold");
}

// The value of largest magnitude (the first such) and its magnitude, as ggml's Q4_0 / Q5_0 take it.
void abs_max(const float *x, int n, float *amax, float *max) {
  *amax = 0.0f;
  *max = 0.0f;
  for (int j = 0; j < n; ++j)
    if (*amax < std::fabs(x[j])) {
      *amax = std::fabs(x[j]);
      *max = x[j];
    }
}

void min_max(const float *x, int n, float *mn, float *mx) {
  *mn = FLT_MAX;
  *mx = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *mn) *mn = x[j];
    if (x[j] > *mx) *mx = x[j];
  }
}

// ggml's round to nearest (ties to even) through the float adder: exact for |v| < 2^22.
int nearest_int(float v) {
  const float big = v + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &big, 4);
  return (i & 0x007FFFFF) - 0x00400000;
}

// The K-quants' search for a sub-block's scale and minimum (ggml's make_qkx2_quants): codes in
// [0, nmax] for n values x with weights w, starting from the min-max fit and trying nstep + 1
// stretched scales, each refit by weighted least squares; the codes that fit best go to L.
// Returns the scale; *the_min gets -(the minimum).
float kquant_fit(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min, float rmin,
                 float rdelta, int nstep) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -mn;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (mx - mn);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - mn));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * static_cast<float>(L[i]) + mn - x[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  uint8_t aux[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - mn));
      l = std::max(0, std::min(nmax, l));
      aux[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(aux[i]) + this_min - x[i];
        diff = diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = aux[i];
        best_error = cur_error;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *the_min = -mn;
  return scale;
}

// Q4_K (bits 4) and Q5_K (bits 5): ggml's quantize_row_q4_K_ref / q5_K_ref for one block of 256.
void quantize_k45(const float *x, uint8_t *dst, int bits) {
  const int nmax = (1 << bits) - 1;
  uint8_t L[256];
  float mins[8], scales[8], w[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = bits == 4 ? kquant_fit(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20)
                          : kquant_fit(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint8_t *sc = dst + 4;
  std::memset(sc, 0, 12);
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j) {
    const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      sc[j] = ls;
      sc[j + 4] = lm;
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc[j - 4] = static_cast<uint8_t>(sc[j - 4] | ((ls >> 4) << 6));
      sc[j] = static_cast<uint8_t>(sc[j] | ((lm >> 4) << 6));
    }
  }
  put_half(dst, max_scale / 63.0f);
  put_half(dst + 2, max_min / 63.0f);
  const float d0 = half(dst), m0 = half(dst + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t s1, m1;
    scale_min_k4(j, sc, &s1, &m1);
    const float d = d0 * static_cast<float>(s1);
    if (d == 0.0f) continue;
    const float dm = m0 * static_cast<float>(m1);
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + ii] + dm) / d))));
  }
  if (bits == 4) {
    uint8_t *q = dst + 16;
    for (int j = 0; j < 256; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    return;
  }
  uint8_t *qh = dst + 16, *ql = dst + 48;
  std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n0 = 0; n0 < 256; n0 += 64, ql += 32) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n0 + j], l2 = L[n0 + j + 32];
      if (l1 > 15) l1 -= 16, qh[j] = static_cast<uint8_t>(qh[j] | m1);
      if (l2 > 15) l2 -= 16, qh[j] = static_cast<uint8_t>(qh[j] | m2);
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
  }
}

// Q6_K's sub-block scale search (ggml's make_qx_quants with rmse_type 1: weights x^2): codes in
// [-nmax, nmax - 1] (stored + nmax in L), 19 scales tried around -nmax / max.
float kquant_fit_sym(int n, int nmax, const float *x, int8_t *L) {
  float mx = 0, amax = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), mx = x[i];
  if (amax < 1e-15f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = -static_cast<float>(nmax) / mx;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / mx;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = x[i] * x[i], fl = static_cast<float>(l);
      sumlx += w * x[i] * fl;
      suml2 += w * fl * fl;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q6_K: ggml's quantize_row_q6_K_ref for one block of 256.
void quantize_q6k(const float *x, uint8_t *dst) {
  int8_t L[256];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ++ib) {
    const float scale = kquant_fit_sym(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    if (std::fabs(scale) > max_abs_scale) max_abs_scale = std::fabs(scale), max_scale = scale;
  }
  std::memset(dst, 0, 210);
  if (max_abs_scale < 1e-15f) {
    put_half(dst + 208, 0.0f);
    return;
  }
  const float iscale = -128.0f / max_scale;
  put_half(dst + 208, 1 / iscale);
  auto *sc = reinterpret_cast<int8_t *>(dst + 192);
  for (int ib = 0; ib < 16; ++ib) sc[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  const float d0 = half(dst + 208);
  for (int j = 0; j < 16; ++j) {
    const float d = d0 * static_cast<float>(sc[j]);
    if (d == 0.0f) continue;
    for (int ii = 0; ii < 16; ++ii)
      L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d))) + 32);
  }
  uint8_t *ql = dst, *qh = dst + 128;
  for (int j = 0; j < 256; j += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const auto q1 = static_cast<uint8_t>(L[j + l] & 0xF), q2 = static_cast<uint8_t>(L[j + l + 32] & 0xF);
      const auto q3 = static_cast<uint8_t>(L[j + l + 64] & 0xF), q4 = static_cast<uint8_t>(L[j + l + 96] & 0xF);
      ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
      qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                   ((L[j + l + 96] >> 4) << 6));
    }
}

// The index of the IQ4_NL table value nearest to v (ggml's best_index_int8; the lower on a tie).
int iq4nl_index(float v) {
  if (v <= static_cast<float>(kIq4nl[0])) return 0;
  if (v >= static_cast<float>(kIq4nl[15])) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < static_cast<float>(kIq4nl[mid])) hi = mid;
    else lo = mid;
  }
  return v - static_cast<float>(kIq4nl[hi - 1]) < static_cast<float>(kIq4nl[hi]) - v ? hi - 1 : hi;
}

// IQ4_NL: ggml's quantize_row_iq4_nl_ref for one block of 32 (no importance weights, no scale
// trials): d = max / -127, each value's nearest table entry, then d refit by least squares
// weighted by x^2. An all-zero block gets d = 0 and codes 0 (ggml leaves the codes of such a
// block to whatever its buffer held; the values are 0 either way).
void quantize_iq4nl(const float *x, uint8_t *dst) {
  float amax = 0, mx = 0;
  for (int j = 0; j < 32; ++j)
    if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), mx = x[j];
  uint8_t L[32] = {};
  float d = 0.0f;
  if (amax >= 1e-15f) {
    d = mx / static_cast<float>(kIq4nl[0]);
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = iq4nl_index(id * x[j]);
      L[j] = static_cast<uint8_t>(l);
      const float q = static_cast<float>(kIq4nl[l]), w = x[j] * x[j];
      sumqx += w * q * x[j];
      sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
  }
  put_half(dst, d);
  for (int j = 0; j < 16; ++j) dst[2 + j] = static_cast<uint8_t>(L[j] | (L[16 + j] << 4));
}

// TQ1_0 (tq2 false) and TQ2_0: ggml's quantize_row_tq1_0_ref / tq2_0_ref for one block of 256:
// d = amax, trits lroundf(x / d) + 1 in {0, 1, 2}; TQ1_0 packs five trits a byte as the fraction
// ceil(v * 256 / 243) (four in qh, shifted to the top trit), TQ2_0 four a byte in 2-bit fields.
void quantize_ternary(const float *x, uint8_t *dst, bool tq2) {
  float amax = 0.0f;
  for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  auto trit = [&](const float v) { return static_cast<int>(std::lround(v * id)) + 1; };
  if (tq2) {
    for (int j = 0; j < 64; j += 32, x += 128)
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int n = 0; n < 4; ++n) q += (trit(x[m + 32 * n]) & 3) << (2 * n);
        dst[j + m] = static_cast<uint8_t>(q);
      }
    put_half(dst + 64, d);
    return;
  }
  auto pack = [](int q) { return static_cast<uint8_t>((q * 256 + 242) / 243); };
  for (int m = 0; m < 32; ++m) {  // bytes 0-31: five trits 32 apart
    int q = 0;
    for (int n = 0; n < 5; ++n) q = q * 3 + trit(x[m + 32 * n]);
    dst[m] = pack(q);
  }
  x += 160;
  for (int m = 0; m < 16; ++m) {  // bytes 32-47: five trits 16 apart
    int q = 0;
    for (int n = 0; n < 5; ++n) q = q * 3 + trit(x[m + 16 * n]);
    dst[32 + m] = pack(q);
  }
  x += 80;
  for (int j = 0; j < 4; ++j) {  // qh: four trits 4 apart, then one more place
    int q = 0;
    for (int m = 0; m < 4; ++m) q = q * 3 + trit(x[j + 4 * m]);
    dst[48 + j] = pack(q * 3);
  }
  put_half(dst + 52, d);
}

}  // namespace

void ggml_quantize(const GgmlType &t, const float *x, size_t n, uint8_t *dst) {
  if (n == 0) return;
  switch (t.id) {
    case 0:
      std::memcpy(dst, x, 4 * n);
      return;
    case 1:
      for (size_t i = 0; i < n; ++i) put_half(dst + 2 * i, x[i]);
      return;
    case 30:
      for (size_t i = 0; i < n; ++i) {
        const uint16_t b = rules::f32_to_bf16(x[i]);
        std::memcpy(dst + 2 * i, &b, 2);
      }
      return;
    default:
      break;
  }
  check_finite(x, n, t.name);
  const size_t nb = n / t.block;
  for (size_t i = 0; i < nb; ++i, x += t.block, dst += t.size) {
    switch (t.id) {
      case 12: quantize_k45(x, dst, 4); break;
      case 13: quantize_k45(x, dst, 5); break;
      case 14: quantize_q6k(x, dst); break;
      case 20: quantize_iq4nl(x, dst); break;
      case 34: quantize_ternary(x, dst, false); break;
      case 35: quantize_ternary(x, dst, true); break;
      case 8: {  // Q8_0
        float amax = 0.0f;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_half(dst, d);
        for (int j = 0; j < 32; ++j) dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::round(x[j] * id)));
        break;
      }
      case 2: {  // Q4_0
        float amax, max;
        abs_max(x, 32, &amax, &max);
        const float d = max / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_half(dst, d);
        for (int j = 0; j < 16; ++j) {
          const auto xi0 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[j] * id + 8.5f)));
          const auto xi1 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x[16 + j] * id + 8.5f)));
          dst[2 + j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
        }
        break;
      }
      case 3:    // Q4_1
      case 7: {  // Q5_1
        const bool q5 = t.id == 7;
        float mn, mx;
        min_max(x, 32, &mn, &mx);
        const float d = (mx - mn) / (q5 ? 31.0f : 15.0f);
        if (!std::isfinite(d)) fail(QNT_ERR_INVALID_ARGUMENT, "block ", i, "'s range overflows float32");
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_half(dst, d);
        put_half(dst + 2, mn);
        uint32_t qh = 0;
        uint8_t *qs = dst + (q5 ? 8 : 4);
        for (int j = 0; j < 16; ++j) {
          const float x0 = (x[j] - mn) * id, x1 = (x[16 + j] - mn) * id;
          uint8_t xi0, xi1;
          if (q5) {
            xi0 = static_cast<uint8_t>(x0 + 0.5f);
            xi1 = static_cast<uint8_t>(x1 + 0.5f);
            qh |= ((xi0 & 0x10u) >> 4) << j;
            qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
          } else {
            xi0 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x0 + 0.5f)));
            xi1 = static_cast<uint8_t>(std::min<int>(15, static_cast<int8_t>(x1 + 0.5f)));
          }
          qs[j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
        }
        if (q5) std::memcpy(dst + 4, &qh, 4);
        break;
      }
      case 6: {  // Q5_0
        float amax, max;
        abs_max(x, 32, &amax, &max);
        const float d = max / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_half(dst, d);
        uint32_t qh = 0;
        for (int j = 0; j < 16; ++j) {
          const auto xi0 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x[j] * id + 16.5f)));
          const auto xi1 = static_cast<uint8_t>(std::min<int>(31, static_cast<int8_t>(x[16 + j] * id + 16.5f)));
          dst[6 + j] = static_cast<uint8_t>((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
          qh |= ((xi0 & 0x10u) >> 4) << j;
          qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
        }
        std::memcpy(dst + 2, &qh, 4);
        break;
      }
      default:
        fail(QNT_ERR_UNSUPPORTED, "writing ", t.name, " is not in this release (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_NL, TQ1_0, TQ2_0)");
    }
  }
}

}  // namespace qnt::io
