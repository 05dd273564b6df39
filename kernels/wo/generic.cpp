// The portable weight-only kernels: plain C++ over the packed layouts of wo.hpp, for the ISAs
// without kernels of their own (aarch64 today). The same arithmetic as the x86 kernels: per
// block the 16 dequantized values by the dequantize rule, 16 float partial sums with fmaf; in
// the int8 mode, exact int32 lane sums (in uint32, so that the wrap-around is defined).
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/wo/wo.hpp"

#include <algorithm>
#include <cmath>

namespace qnt::kern {
namespace {

constexpr int P = kWoPanel;

int32_t zc_of(const WoPanelArgs &w, size_t blk, int p) noexcept {
  return w.zps != nullptr ? static_cast<int32_t>(w.zps[blk * P + static_cast<size_t>(p)])
                          : w.zp_const;
}

float reduce(float s[16]) noexcept {
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) s[i] = s[i] + s[i + width];
  return s[0];
}

// The 4-bit code of element k of feature p.
uint8_t code4(const WoPanelArgs &w, size_t k, int p) noexcept {
  const uint8_t b = w.codes[(k / 128) * P * 64 + static_cast<size_t>(p) * 64 + k % 64];
  return (k % 128) < 64 ? b & 15 : b >> 4;
}

void generic_f32(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows,
                 float *out) noexcept {
  wo_prefetch_all(w);
  const auto K = static_cast<size_t>(w.K), B = static_cast<size_t>(w.block);
  for (int p = 0; p < P; ++p) {
    float s[kWoMaxRows][16] = {};
    float lut[16] = {};
    size_t lut_blk = ~size_t{0};
    for (size_t k = 0; k < K; ++k) {
      const size_t blk = k / B;
      if (blk != lut_blk) {
        const float sc = w.scales[blk * P + static_cast<size_t>(p)];
        for (int c = 0; c < 16; ++c)
          lut[c] = w.code == WoCode::NF4 ? ref::kNF4Codebook[c] * sc
                                         : static_cast<float>(c - zc_of(w, blk, p)) * sc;
        lut_blk = blk;
      }
      const float v = lut[code4(w, k, p)];
      for (size_t r = 0; r < rows; ++r) s[r][k % 16] = std::fma(x[r * ldx + k], v, s[r][k % 16]);
    }
    for (size_t r = 0; r < rows; ++r) out[r * P + static_cast<size_t>(p)] = reduce(s[r]);
  }
}

void generic_int8(const WoPanelArgs &w, const WoActs &a, size_t rows, float *out) noexcept {
  wo_prefetch_all(w);
  const size_t nc = w.chunks;
  for (int p = 0; p < P; ++p) {
    for (size_t r = 0; r < rows; ++r) {
      const int8_t *qx = a.qx + r * a.qx_stride;
      float s[16] = {};
      uint32_t acc[16] = {};
      size_t unit = 0;
      for (size_t c = 0; c < nc; ++c) {
        for (size_t i = 0; i < 64; ++i) {
          const size_t k = 64 * c + i;
          int32_t v;  // the integer before its zero point
          if (w.code == WoCode::Byte) {
            v = static_cast<int8_t>(w.codes[c * P * 64 + static_cast<size_t>(p) * 64 + i]);
          } else {
            const uint8_t code = code4(w, k, p);
            v = w.code == WoCode::NF4 ? ref::kNF4Int8[code] : code;
          }
          acc[i / 4] += static_cast<uint32_t>(static_cast<int32_t>(qx[k]) * v);
        }
        if ((c + 1) % w.unit_chunks != 0 && c + 1 != nc) continue;
        const uint32_t lanes = c + 1 == nc ? w.last_unit_lanes : 0xFFFFu;
        const int32_t *sums = a.sums + r * a.unit_stride + unit * 16;
        const float *sxv = a.sxv + r * a.unit_stride + unit * 16;
        for (int l = 0; l < 16; ++l) {
          const size_t blk = w.half_units ? 2 * unit + static_cast<size_t>(l / 8) : unit;
          int32_t z = 0;
          if (w.code == WoCode::Int4) z = zc_of(w, blk, p);
          if (w.code == WoCode::Byte) z = zc_of(w, blk, p) - 128;
          const auto ip = static_cast<int32_t>(
              acc[l] - static_cast<uint32_t>(z) * static_cast<uint32_t>(sums[l]));
          if (lanes & (1u << l)) {
            const float d = sxv[l] * w.scales[blk * P + static_cast<size_t>(p)];
            s[l] = std::fma(static_cast<float>(ip), d, s[l]);
          }
          acc[l] = 0;
        }
        ++unit;
      }
      out[r * P + static_cast<size_t>(p)] = reduce(s);
    }
  }
}

void generic_dot(const float *x, size_t ldx, size_t rows, const float *w, size_t ldw,
                 size_t feats, int64_t K, float *out, size_t ldo) noexcept {
  for (size_t r = 0; r < rows; ++r)
    for (size_t f = 0; f < feats; ++f) out[r * ldo + f] = ref::dot(x + r * ldx, w + f * ldw, K);
}

void generic_dequant(const WoPanelArgs &w, float *out, size_t ldo) noexcept {
  wo_prefetch_all(w);
  const auto K = static_cast<size_t>(w.K), B = static_cast<size_t>(w.block);
  for (int p = 0; p < P; ++p)
    for (size_t k = 0; k < K; ++k) {
      const size_t blk = k / B;
      const float sc = w.scales[blk * P + static_cast<size_t>(p)];
      const uint8_t c = code4(w, k, p);
      out[static_cast<size_t>(p) * ldo + k] =
          w.code == WoCode::NF4 ? ref::kNF4Codebook[c] * sc
                                : static_cast<float>(static_cast<int32_t>(c) - zc_of(w, blk, p)) * sc;
    }
}

}  // namespace

void wo_token_generic(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats,
                      const int8_t *qx, size_t qx_stride, size_t rows, const int32_t *xsum,
                      int32_t *acc, size_t acc_ld) noexcept {
  for (size_t r = 0; r < rows; ++r) {
    const int8_t *x = qx + r * qx_stride;
    for (size_t f = 0; f < feats; ++f) {
      const uint8_t *row = w + f * row_bytes;
      int32_t sum = 0;
      for (size_t g = 0; g < groups; ++g)
        for (int s = 0; s < 4; ++s)
          for (int j = 0; j < 32; ++j)
            sum += static_cast<int32_t>((row[32 * g + static_cast<size_t>(j)] >> (6 - 2 * s)) & 3) *
                   x[128 * g + static_cast<size_t>(32 * s + j)];
      acc[r * acc_ld + f] = sum - xsum[r];
    }
  }
}

void wo_blk_generic(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows,
                    float *out, size_t ldo) noexcept {
  constexpr size_t F = kWoBlkPanel;
  const bool four = w.code != WoCode::Byte;
  const size_t per_step = four ? 8 : 4;
  for (size_t p = p0; p < p1; ++p) {
    const uint8_t *panel = w.data + p * w.panel_stride;
    const auto *scales = reinterpret_cast<const float *>(panel + w.code_bytes);
    const uint8_t *zcs = panel + w.code_bytes + 4 * F * w.blocks;
    for (size_t r = 0; r < rows; ++r) {
      const int8_t *qx = x.qx + r * x.qx_stride;
      for (size_t f = 0; f < F; ++f) {
        float s = 0.0f;
        for (size_t j = 0; j < w.blocks; ++j) {
          // sum(operand * qx) - zc * sum(qx), in uint32 (the wrap-around is defined).
          const auto ns = static_cast<uint32_t>(x.nsum[r * x.blk_stride + j]);
          uint32_t acc = w.zc_const >= 0 ? ns : static_cast<uint32_t>(zcs[j * F + f]) * ns;
          const size_t t1 = std::min(w.steps, (j + 1) * w.block_steps);
          for (size_t t = j * w.block_steps; t < t1; ++t)
            for (size_t e = 0; e < per_step; ++e) {
              const uint8_t b = panel[64 * t + 4 * f + e % 4];
              int32_t op = four ? (e < 4 ? b & 15 : b >> 4) : b;
              if (w.code == WoCode::NF4) op = ref::kNF4Int8[op] + 128;
              acc += static_cast<uint32_t>(op * qx[per_step * t + e]);
            }
          s = std::fma(static_cast<float>(static_cast<int32_t>(acc)), x.sx[r * x.blk_stride + j] * scales[j * F + f], s);
        }
        out[r * ldo + F * (p - p0) + f] = s;
      }
    }
  }
}

const WoKernels kGenericWo{"generic", &generic_f32, &generic_int8, &generic_dot,
                           &generic_dequant, false, false, &wo_token_generic};

}  // namespace qnt::kern
