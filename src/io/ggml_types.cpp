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
    case 0: case 1: case 30: case 2: case 3: case 6: case 7: case 8: return true;
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
  for (size_t i = 0; i < nb; ++i, x += 32, dst += t.size) {
    switch (t.id) {
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
        fail(QNT_ERR_UNSUPPORTED, "writing ", t.name, " is not in this release (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)");
    }
  }
}

}  // namespace qnt::io
