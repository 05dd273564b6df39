// The weight-only layer's per-token mode on aarch64's Advanced SIMD (wo.hpp's WoTokenFn): each
// 16 bytes of a packed group hold 4 x 16 codes (shifts by 6, 4, 2, 0 and a mask of 3); the codes
// (0..2) and the int8 activations meet in vmull_s8 / vmlal_s8 (two products of at most 254 in
// magnitude a 16-bit lane: exact), and vpadalq_s16 widens them into 32-bit sums.
#pragma once

#include "kernels/wo/wo.hpp"

#include <arm_neon.h>

namespace qnt::kern {
namespace {

inline int16x8_t token_products(uint8x16_t codes, const int8_t *x) noexcept {
  const int8x16_t c = vreinterpretq_s8_u8(vandq_u8(codes, vdupq_n_u8(3)));
  const int8x16_t v = vld1q_s8(x);
  return vmlal_s8(vmull_s8(vget_low_s8(c), vget_low_s8(v)), vget_high_s8(c), vget_high_s8(v));
}

// One row of activations against `feats` rows of weights.
void token_row_neon(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats, const int8_t *qx,
                    int32_t xsum, int32_t *acc) noexcept {
  for (size_t f = 0; f < feats; ++f) {
    const uint8_t *row = w + f * row_bytes;
    int32x4_t s = vdupq_n_s32(0);
    for (size_t g = 0; g < groups; ++g) {
      const int8_t *xg = qx + 128 * g;
      for (size_t h = 0; h < 2; ++h) {  // bytes 16h .. 16h + 15 of the group
        const uint8x16_t v = vld1q_u8(row + 32 * g + 16 * h);
        s = vpadalq_s16(s, token_products(vshrq_n_u8(v, 6), xg + 16 * h));
        s = vpadalq_s16(s, token_products(vshrq_n_u8(v, 4), xg + 32 + 16 * h));
        s = vpadalq_s16(s, token_products(vshrq_n_u8(v, 2), xg + 64 + 16 * h));
        s = vpadalq_s16(s, token_products(v, xg + 96 + 16 * h));
      }
    }
    acc[f] = vaddvq_s32(s) - xsum;
  }
}

void token_neon(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats, const int8_t *qx,
                size_t qx_stride, size_t rows, const int32_t *xsum, int32_t *acc, size_t acc_ld) noexcept {
  for (size_t r = 0; r < rows; ++r)
    token_row_neon(w, row_bytes, groups, feats, qx + r * qx_stride, xsum[r], acc + r * acc_ld);
}

}  // namespace
}  // namespace qnt::kern
