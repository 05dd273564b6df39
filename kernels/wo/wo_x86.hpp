// The weight-only linear layer's x86-64 kernels (layouts in wo.hpp). Included by the ISA
// translation units, each compiled with its own -m flags; everything here has internal linkage.
//
// Exact instructions only (kernels/README.md):
//  - f32 mode: the 16 values a block's codes can take are computed once per block and feature
//    with the dequantize rule ((float)(c - zc) * scale, or codebook[c] * scale), then a lane
//    permute maps codes to them (AVX-512 vpermps on 16 entries; AVX2 NF4 two vpermps and a
//    blend); AVX2 integer codes take the rule per element instead (lane_value).
//    Each of the 16 partial sums gets its elements in order with a fused multiply-add; the
//    partial sums are added pairwise at the end, as ref::dot does.
//  - int8 mode, VNNI: vpdpbusd with the weights as the u8 operand (4-bit codes, NF4's integers
//    + 128, bytes + 128) and the activations as s8; the zero point (or the 128) comes off as
//    z * (the lane's sum of activations), so the int32 lane sums are exact.
//  - int8 mode, AVX2: vpmaddubsw is exact here and only here: 4-bit codes (<= 15) times
//    activations (|qx| <= 127) sum to at most 3810 per pair; NF4 integers and bytes go through
//    |w| (<= 128) and sign(qx, w) (|.| <= 127), at most 32512 per pair. Never with two operands
//    that can reach 255 and 127.
#pragma once

#include "kernels/ref/quantize_ref.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/wo/wo.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

namespace qnt::kern {
namespace {
namespace wo {

constexpr int P = kWoPanel;

// The NF4 integers + 128 (the u8 operand of vpdpbusd) and as s8, 16 bytes each.
alignas(16) constexpr uint8_t kNF4U8[16] = {1,   40,  61,  78,  92,  105, 116, 128,
                                            138, 148, 159, 171, 184, 199, 220, 255};

// a - b modulo 2^32 (the per-token sums: sum(c * qx) may wrap; sum(c * qx) - xsum fits int32).
inline int32_t wrap_sub(int32_t a, int32_t b) noexcept {
  return static_cast<int32_t>(static_cast<uint32_t>(a) - static_cast<uint32_t>(b));
}

// Where the batch-1 per-token kernels request the weights ahead of their use: the rows this
// many bytes on (at least 16 rows; the rows of one call are contiguous, and so are the calls of
// a worker), from the current block of rows. On the 2-core Zen 4 (4096^2 ternary, batch 1,
// weights from DRAM) the next block of 4 rows alone read at 12-13 GB/s on one thread, 8 rows on
// 20, 16 rows and more on 21 (the read roofline there: 22-27); two threads 22 -> 28-29 GB/s.
inline uintptr_t token_ahead(const uint8_t *rows, size_t row_bytes) noexcept {
  const size_t ahead = std::max<size_t>(16 * row_bytes, size_t{16} << 10);
  return reinterpret_cast<uintptr_t>(rows) + ahead;
}

inline uint32_t mask_of(size_t left) noexcept {
  return left >= 16 ? 0xFFFFu : (1u << left) - 1u;
}

#if defined(__AVX512F__)
// Chunk t's codes of feature p in the lane layout (wo.hpp): its group's 64 bytes as dwords,
// shifted so that each lane's low 4 bits are its code (vpermps reads only those).
inline __m512i lane_codes512(const WoPanelArgs &w, size_t t, int p) noexcept {
  const __m512i g = _mm512_loadu_si512(w.codes + ((t >> 3) * P + static_cast<size_t>(p)) * 64);
  const int q = static_cast<int>(t & 7);
  return _mm512_srl_epi32(g, _mm_cvtsi32_si128(8 * (q & 3) + 4 * (q >> 2)));
}
#endif

// Whether the batch-1 kernels (int8_one_vnni, int8_one256) take the panel's shape (else the
// general kernel): a full last unit, and for 4-bit codes whole groups in pairs of units or
// inside one.
inline bool int8_one_fits(const WoPanelArgs &w) noexcept {
  if (w.last_unit_lanes != 0xFFFFu) return false;
  if (w.code == WoCode::Byte) return true;
  return w.chunks % 2 == 0 && (w.unit_chunks == 1 || w.unit_chunks % 2 == 0);
}

inline int32_t zc_of(const WoPanelArgs &w, size_t blk, int p) noexcept {
  return w.zps != nullptr ? static_cast<int32_t>(w.zps[blk * P + static_cast<size_t>(p)])
                          : w.zp_const;
}

#if defined(__AVX512F__)

// s[i] + s[i + 8], then + 4, + 2, + 1: ref::dot's pairwise sum of the 16 lanes, by halves
// in registers (as a store and 15 scalar additions through memory it took 4-5 % of the batch-1
// kernels' time at 4096^2: a reduction per output and 4 outputs per 2048-element panel).
inline float reduce16(__m512 v) noexcept {
#if defined(QNT_WO_EMULATED)
  float s[16];
  _mm512_storeu_ps(s, v);
  for (int width = 8; width >= 1; width /= 2)
    for (int i = 0; i < width; ++i) s[i] = s[i] + s[i + width];
  return s[0];
#else
  const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v),
                                 _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_shuffle_ps(b, b, 1));
  return _mm_cvtss_f32(b);
#endif
}

// reduce16 of 16 vectors at once: lane i of the result is reduce16(v[i]), with the same
// additions of the same operands in the same order (s[i] + s[i + 8], then + 4, + 2, + 1, the
// lower index first), made across vectors by shuffles: 31 shuffles and 15 additions for 16
// outputs, where 16 reduce16 store each vector and add 15 scalars in a chain through memory.
inline __m512 reduce16x16(const __m512 *v) noexcept {
  __m512 u[8], w[4], z[2];
  for (int k = 0; k < 8; ++k)  // lanes 0-7: v[2k]'s s[i] + s[i + 8]; 8-15: v[2k + 1]'s
    u[k] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0x44),
                         _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], 0xEE));
  for (int k = 0; k < 4; ++k)  // block j (4 lanes): vector 4k + j's s[i] + s[i + 4]
    w[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int k = 0; k < 2; ++k)  // block j: lanes 0-1 vector 8k + j's s[i] + s[i + 2], 2-3 8k + 4 + j's
    z[k] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Block j, lane l: vector j + 4 l's s[0] + s[1]; then lane i takes vector i's.
  const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
}

// out[m * P + p] = reduce16(acc[m][p]): the 4 x 4 sums of a full call at once.
template <int MR>
inline void store_sums(const __m512 (&acc)[MR][P], float *out) noexcept {
  if constexpr (MR * P == 16) {
    _mm512_storeu_ps(out, reduce16x16(&acc[0][0]));
  } else {
    for (int m = 0; m < MR; ++m)
      for (int p = 0; p < P; ++p) out[m * P + p] = reduce16(acc[m][p]);
  }
}

// An 8 x 2 tile's sums (row m's pair at a + m * P * 16 floats) into out[m * ldo + j].
inline void store_tile_sums(const float *a, float *out, size_t ldo) noexcept {
  __m512 v[16];
  for (int m = 0; m < 8; ++m)
    for (int j = 0; j < 2; ++j) v[2 * m + j] = _mm512_loadu_ps(a + (m * P + j) * 16);
  alignas(64) float r[16];
  _mm512_store_ps(r, reduce16x16(v));
  for (size_t m = 0; m < 8; ++m)
    for (size_t j = 0; j < 2; ++j) out[m * ldo + j] = r[2 * m + j];
}

// The 16 exact bases c - zc of 4-bit codes c for each zero point zc in [0, 15] (zc is z, or
// z + 8 for i4): f32_rows512's tables with zero points per block.
struct ZeroBases {
  alignas(64) float v[16][16];
};
constexpr ZeroBases make_zero_bases() noexcept {
  ZeroBases b{};
  for (int z = 0; z < 16; ++z)
    for (int c = 0; c < 16; ++c) b.v[z][c] = static_cast<float>(c - z);
  return b;
}
constexpr ZeroBases kZeroBases = make_zero_bases();

// The 16 dequantized values of feature p's block blk.
inline __m512 lut512(const WoPanelArgs &w, size_t blk, int p) noexcept {
  const __m512 s = _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
  if (w.code == WoCode::NF4) return _mm512_mul_ps(_mm512_loadu_ps(ref::kNF4Codebook), s);
  return _mm512_mul_ps(_mm512_loadu_ps(kZeroBases.v[zc_of(w, blk, p) & 15]), s);
}

// The chunks of 16 elements in order of K: chunk t is in group t / 8, in the low (t / 4 even)
// or high nibbles, at byte 16 (t % 4) of its feature's 64; blocks are runs of B / 16 chunks.
// The main loop runs block by block over whole chunks without masks; the last, partial chunk
// with them.

template <int MR>
void f32_rows512(const WoPanelArgs &w, const float *x, size_t ldx, float *out) noexcept {
  __m512 acc[MR][P];
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < P; ++p) acc[m][p] = _mm512_setzero_ps();
  const auto K = static_cast<size_t>(w.K);
  const size_t cpb = static_cast<size_t>(w.block) / 16;  // chunks per block (>= 1)
  const size_t whole = K / 16;
  WoPrefetcher pf(w, (whole + 7) / 8);  // a step per group of 8 chunks
  // The block of the current chunk, where the next begins, and its 16 values per feature; the
  // next block's values are made a block ahead (nlut), so that the first vpermps of a block
  // does not wait for its table's conversion and product. On Zen 4 (4096^2, one thread,
  // weights in L3, three A/B rounds) that took int4 block 128 from 606 to 544 us, block 32 from
  // 741 to 712, NF4 block 64 from 643 to 597 (one scale per row, no tables to make: 490 us).
  // Making the tables from one converted base per feature (a vmulps each) changed nothing.
  const auto B = static_cast<size_t>(w.block);
  const size_t blocks = (K + B - 1) / B;
  size_t blk = 0, next = cpb;
  // With one zero point for every block (symmetric codes, NF4), a table is its scale times
  // one base of 16 exact values (q - z, or the codebook): one vmulps with an embedded
  // broadcast instead of a subtraction, a conversion and a product. It mattered at block 32,
  // where each feature's table is made every second chunk.
  const bool one_base = w.code == WoCode::NF4 || w.zps == nullptr;
  const __m512 base =
      w.code == WoCode::NF4
          ? _mm512_loadu_ps(ref::kNF4Codebook)
          : _mm512_cvtepi32_ps(_mm512_sub_epi32(
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                _mm512_set1_epi32(w.zp_const)));
  // With zero points per block (affine codes), the block's base is kZeroBases' row zc: a load
  // and the same vmulps, where lut512 broadcast zc, subtracted and converted (4096^2, one
  // thread, weights in L3, best of three interleaved: u4 and i4 affine block 32 at batch 1
  // 972 -> 714-716 us, block 128 612 -> 544, block 32 at batch 16 6.49 -> 6.07 ms).
  auto table = [&](size_t b, int p) {
    const size_t i = b * P + static_cast<size_t>(p);
    return _mm512_mul_ps(one_base ? base : _mm512_loadu_ps(kZeroBases.v[w.zps[i] & 15]),
                         _mm512_set1_ps(w.scales[i]));
  };
  __m512 lut[P], nlut[P];
  for (int p = 0; p < P; ++p) {
    lut[p] = table(0, p);
    nlut[p] = blocks > 1 ? table(1, p) : lut[p];
  }
  // Chunk t, its codes idx[p] (in each lane's low 4 bits).
  auto chunk = [&](size_t t, const __m512i *idx) {
    if (t == next) {
      ++blk;
      next += cpb;
      for (int p = 0; p < P; ++p) lut[p] = nlut[p];
      if (blk + 1 < blocks)
        for (int p = 0; p < P; ++p) nlut[p] = table(blk + 1, p);
    }
    __m512 xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = _mm512_loadu_ps(x + m * ldx + 16 * t);
    for (int p = 0; p < P; ++p) {
      const __m512 wv = _mm512_permutexvar_ps(idx[p], lut[p]);
      for (int m = 0; m < MR; ++m) acc[m][p] = _mm512_fmadd_ps(xv[m], wv, acc[m][p]);
    }
  };
  // Whole groups: each feature's 64 code bytes loaded once, the 8 chunks' codes by shifts of
  // 8r (+ 4) with the counts in the instructions.
  const size_t groups = whole / 8;
  for (size_t g = 0; g < groups; ++g) {
    pf.step();
    __m512i cv[P], idx[P];
    for (int p = 0; p < P; ++p)
      cv[p] = _mm512_loadu_si512(w.codes + (g * P + static_cast<size_t>(p)) * 64);
#define QNT_WO_CHUNK(q)                                                                   \
    for (int p = 0; p < P; ++p) idx[p] = _mm512_srli_epi32(cv[p], 8 * ((q) & 3) + 4 * ((q) >> 2)); \
    chunk(8 * g + (q), idx);
    QNT_WO_CHUNK(0) QNT_WO_CHUNK(1) QNT_WO_CHUNK(2) QNT_WO_CHUNK(3)
    QNT_WO_CHUNK(4) QNT_WO_CHUNK(5) QNT_WO_CHUNK(6) QNT_WO_CHUNK(7)
#undef QNT_WO_CHUNK
  }
  for (size_t t = 8 * groups; t < whole; ++t) {
    __m512i idx[P];
    for (int p = 0; p < P; ++p) idx[p] = lane_codes512(w, t, p);
    chunk(t, idx);
  }
  if (K % 16 != 0) {  // the last chunk, with masks
    const size_t t = whole, tb = t / cpb;
    const auto mk = static_cast<__mmask16>(mask_of(K - 16 * t));
    __m512 xv[MR];
    for (int m = 0; m < MR; ++m) xv[m] = _mm512_maskz_loadu_ps(mk, x + m * ldx + 16 * t);
    for (int p = 0; p < P; ++p) {
      const __m512 wv = _mm512_permutexvar_ps(lane_codes512(w, t, p), lut512(w, tb, p));
      for (int m = 0; m < MR; ++m) acc[m][p] = _mm512_mask3_fmadd_ps(xv[m], wv, acc[m][p], mk);
    }
  }
  store_sums<MR>(acc, out);
}

// Byte weights in the f32 mode (W8A16; `WoKernels::f32_bytes`): chunk t's 16 stored bytes w8
// of feature p sign-extended, less the block's z8, converted and multiplied by its scale: the
// dequantize rule's (float)(q - z) * s exactly (w8 - z8 = q - z), then each lane's fma in order.
inline __m512 byte_values512(const WoPanelArgs &w, size_t t, int p, __m512i z8, __m512 s) noexcept {
  const __m128i b = _mm_loadu_si128(
      reinterpret_cast<const __m128i *>(w.codes + ((t >> 2) * P + static_cast<size_t>(p)) * 64 + 16 * (t & 3)));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(b), z8)), s);
}
inline __m512i byte_zero512(const WoPanelArgs &w, size_t blk, int p) noexcept {
  return _mm512_set1_epi32(zc_of(w, blk, p) - 128);  // stored as z8 + 128
}

// Z: whether the weights have zero points (else w8 is q: no subtraction).
template <int MR, bool Z>
void f32_bytes512(const WoPanelArgs &w, const float *x, size_t ldx, float *out) noexcept {
  __m512 acc[MR][P];
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < P; ++p) acc[m][p] = _mm512_setzero_ps();
  const auto K = static_cast<size_t>(w.K);
  const size_t cpb = static_cast<size_t>(w.block) / 16;
  const size_t chunks = (K + 15) / 16, whole = K / 16;
  WoPrefetcher pf(w, (chunks + 3) / 4);  // a step per 64 elements
  for (size_t t0 = 0, blk = 0; t0 < chunks; t0 += cpb, ++blk) {
    __m512i z8[P];
    __m512 sc[P];
    for (int p = 0; p < P; ++p) {
      z8[p] = Z ? byte_zero512(w, blk, p) : _mm512_setzero_si512();
      sc[p] = _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
    }
    auto values = [&](size_t t, int p) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(
          w.codes + ((t >> 2) * P + static_cast<size_t>(p)) * 64 + 16 * (t & 3)));
      __m512i q = _mm512_cvtepi8_epi32(b);
      if constexpr (Z) q = _mm512_sub_epi32(q, z8[p]);
      return _mm512_mul_ps(_mm512_cvtepi32_ps(q), sc[p]);
    };
    const size_t t1 = std::min(chunks, t0 + cpb), t1w = std::min(whole, t1);
    size_t t = t0;
    for (; t < t1w; ++t) {  // whole chunks
      if ((t & 3) == 0) pf.step();
      __m512 xv[MR];
      for (int m = 0; m < MR; ++m) xv[m] = _mm512_loadu_ps(x + m * ldx + 16 * t);
      for (int p = 0; p < P; ++p) {
        const __m512 wv = values(t, p);
        for (int m = 0; m < MR; ++m) acc[m][p] = _mm512_fmadd_ps(xv[m], wv, acc[m][p]);
      }
    }
    for (; t < t1; ++t) {  // the last, partial chunk
      const auto mk = static_cast<__mmask16>(mask_of(K - 16 * t));
      __m512 xv[MR];
      for (int m = 0; m < MR; ++m) xv[m] = _mm512_maskz_loadu_ps(mk, x + m * ldx + 16 * t);
      for (int p = 0; p < P; ++p) {
        const __m512 wv = values(t, p);
        for (int m = 0; m < MR; ++m) acc[m][p] = _mm512_mask3_fmadd_ps(xv[m], wv, acc[m][p], mk);
      }
    }
  }
  store_sums<MR>(acc, out);
}

template <int MR>
void f32_bytes512(const WoPanelArgs &w, const float *x, size_t ldx, float *out) noexcept {
  if (w.zps == nullptr && w.zp_const == 128) return f32_bytes512<MR, false>(w, x, ldx, out);
  f32_bytes512<MR, true>(w, x, ldx, out);
}

#if !defined(QNT_WO_EMULATED)
// Where blocks start inside a group of 8 chunks, for the assembly kernels below:
// QNT_WO_BLK(C, q, F, L) is F(j, j + 1, L) when chunk q (1-7) starts the group's block j, with
// blocks of C chunks (1, 2 or 4; C = 0: blocks of whole groups, none starts inside), else
// nothing.
#define QNT_WO_BLK(C, q, F, L) QNT_WO_BLK_##C##_##q(F, L)
#define QNT_WO_BLK_1_1(F, L) F(1, 2, L)
#define QNT_WO_BLK_1_2(F, L) F(2, 3, L)
#define QNT_WO_BLK_1_3(F, L) F(3, 4, L)
#define QNT_WO_BLK_1_4(F, L) F(4, 5, L)
#define QNT_WO_BLK_1_5(F, L) F(5, 6, L)
#define QNT_WO_BLK_1_6(F, L) F(6, 7, L)
#define QNT_WO_BLK_1_7(F, L) F(7, 8, L)
#define QNT_WO_BLK_2_1(F, L)
#define QNT_WO_BLK_2_2(F, L) F(1, 2, L)
#define QNT_WO_BLK_2_3(F, L)
#define QNT_WO_BLK_2_4(F, L) F(2, 3, L)
#define QNT_WO_BLK_2_5(F, L)
#define QNT_WO_BLK_2_6(F, L) F(3, 4, L)
#define QNT_WO_BLK_2_7(F, L)
#define QNT_WO_BLK_4_1(F, L)
#define QNT_WO_BLK_4_2(F, L)
#define QNT_WO_BLK_4_3(F, L)
#define QNT_WO_BLK_4_4(F, L) F(1, 2, L)
#define QNT_WO_BLK_4_5(F, L)
#define QNT_WO_BLK_4_6(F, L)
#define QNT_WO_BLK_4_7(F, L)
#define QNT_WO_BLK_0_1(F, L)
#define QNT_WO_BLK_0_2(F, L)
#define QNT_WO_BLK_0_3(F, L)
#define QNT_WO_BLK_0_4(F, L)
#define QNT_WO_BLK_0_5(F, L)
#define QNT_WO_BLK_0_6(F, L)
#define QNT_WO_BLK_0_7(F, L)

// The f32 mode's batch-1 kernel for 4-bit codes, in assembly: f32_rows512<1>'s instructions
// (per chunk and feature an immediate shift, a vpermps from the block's table, the lane's fma;
// a table per block and feature: a vmulps of the shared base by the broadcast scale) with
// every value in a register. GCC 12's code for f32_rows512<1> ran at 7.3
// cycles per 64 weights at block 128 and 9.5 at block 32 (one thread, hot), where the shifts,
// permutes and fma alone take 6.0-6.3 (two 512-bit operations a cycle on Zen 4).
// Registers: sums zmm0-3, the group's codes zmm4-7, tables zmm8-11 (the next ones zmm18-21),
// x zmm12, base zmm13, values zmm14-17, shifted codes zmm22-25 and zmm26-29. CPB 1, 2 or 4:
// blocks of 16, 32 or 64 elements, tables made inside the group where a block starts; CPB 0:
// blocks of whole groups (k of them: the tables every k groups).
// pf: `lines` lines requested into L2 per group.
// The next chunk's 4 shifts come before a chunk's vpermps and fma, into the set of registers
// that the chunk does not read (the group's first chunk takes the codes as they are): on Zen 4
// the shifts share pipes with the vpermps (FP2) and with nothing else (FP3), and issued a chunk
// ahead in a run of 4 they took 49 cycles a group of 8 chunks x 4 features where each shift
// just before its vpermps took 53 (hot, in L1; the operations alone take 46).
#define QNT_WO_O_SH(sh, r0, r1, r2, r3)                                                       \
  "vpsrld $" #sh ", %%zmm4, %%zmm" #r0 "\n\t" "vpsrld $" #sh ", %%zmm5, %%zmm" #r1 "\n\t"     \
  "vpsrld $" #sh ", %%zmm6, %%zmm" #r2 "\n\t" "vpsrld $" #sh ", %%zmm7, %%zmm" #r3 "\n\t"
// Feature a's value (its codes in zmm cr, its table in zmm lut, into zmm v) and fma.
#define QNT_WO_O_V(a, cr, lut, v)                                                             \
  "vpermps %%zmm" #lut ", %%zmm" #cr ", %%zmm" #v "\n\t"                                       \
  "vfmadd231ps %%zmm12, %%zmm" #v ", %%zmm" #a "\n\t"
// Chunk c of the group, its codes in zmm r0-r3.
#define QNT_WO_O_CHUNK(c, r0, r1, r2, r3)                                                     \
  "vmovups " #c "*64(%[x]), %%zmm12\n\t"                                                      \
  QNT_WO_O_V(0, r0, 8, 14) QNT_WO_O_V(1, r1, 9, 15) QNT_WO_O_V(2, r2, 10, 16)                 \
  QNT_WO_O_V(3, r3, 11, 17)
// Block b's tables (the b-th block from sp) into zmm18-21, a block before they are used:
// QNT_WO_O_SWAP moves the tables made before into zmm8-11. (Made where their block starts, the
// first vpermps of each block waited for the broadcast scale and the product.) The last
// block's request reads a block's scales past the panel: the packed weights end with 64 zero
// bytes.
#define QNT_WO_O_LUT(b)                                                                       \
  "vmulps " #b "*16(%[sp])%{1to16%}, %%zmm13, %%zmm18\n\t"                                    \
  "vmulps " #b "*16+4(%[sp])%{1to16%}, %%zmm13, %%zmm19\n\t"                                  \
  "vmulps " #b "*16+8(%[sp])%{1to16%}, %%zmm13, %%zmm20\n\t"                                  \
  "vmulps " #b "*16+12(%[sp])%{1to16%}, %%zmm13, %%zmm21\n\t"
// The same with zero points per block (affine codes): feature p's base is kZeroBases' row of its
// zero point (bp: kZeroBases), times its broadcast scale.
#define QNT_WO_O_LUTZ1(b, p, r)                                                               \
  "movzbl " #b "*4+" #p "(%[zp]), %k[tmp2]\n\t" "and $15, %k[tmp2]\n\t" "shl $6, %k[tmp2]\n\t"  \
  "vmovaps (%[bp],%[tmp2]), %%zmm" #r "\n\t"                                                 \
  "vmulps " #b "*16+" #p "*4(%[sp])%{1to16%}, %%zmm" #r ", %%zmm" #r "\n\t"
#define QNT_WO_O_LUTZ(b)                                                                      \
  QNT_WO_O_LUTZ1(b, 0, 18) QNT_WO_O_LUTZ1(b, 1, 19) QNT_WO_O_LUTZ1(b, 2, 20)                  \
  QNT_WO_O_LUTZ1(b, 3, 21)
#define QNT_WO_O_SWAP                                                                         \
  "vmovaps %%zmm18, %%zmm8\n\t" "vmovaps %%zmm19, %%zmm9\n\t" "vmovaps %%zmm20, %%zmm10\n\t"  \
  "vmovaps %%zmm21, %%zmm11\n\t"
#define QNT_WO_O_PF                                                                           \
  "mov %[lines], %[tmp2]\n\t" "test %[tmp2], %[tmp2]\n\t" "jz 5f\n\t"                         \
  "4:\n\t" "prefetcht1 (%[pf])\n\t" "add $64, %[pf]\n\t" "dec %[tmp2]\n\t" "jnz 4b\n\t" "5:\n\t"
#define QNT_WO_O_CODES                                                                        \
  "vmovups (%[cp]), %%zmm4\n\t" "vmovups 64(%[cp]), %%zmm5\n\t"                               \
  "vmovups 128(%[cp]), %%zmm6\n\t" "vmovups 192(%[cp]), %%zmm7\n\t"
// Where block j starts: the tables made before move in, block j + 1's are made.
#define QNT_WO_O_EV(j, j1, L) QNT_WO_O_SWAP L(j1)
#define QNT_WO_O_CHUNKS(L, C)                                                                 \
  QNT_WO_O_SH(8, 22, 23, 24, 25) QNT_WO_O_CHUNK(0, 4, 5, 6, 7) QNT_WO_BLK(C, 1, QNT_WO_O_EV, L) \
  QNT_WO_O_SH(16, 26, 27, 28, 29) QNT_WO_O_CHUNK(1, 22, 23, 24, 25)                           \
  QNT_WO_BLK(C, 2, QNT_WO_O_EV, L) QNT_WO_O_SH(24, 22, 23, 24, 25)                            \
  QNT_WO_O_CHUNK(2, 26, 27, 28, 29) QNT_WO_BLK(C, 3, QNT_WO_O_EV, L)                          \
  QNT_WO_O_SH(4, 26, 27, 28, 29) QNT_WO_O_CHUNK(3, 22, 23, 24, 25)                            \
  QNT_WO_BLK(C, 4, QNT_WO_O_EV, L) QNT_WO_O_SH(12, 22, 23, 24, 25)                            \
  QNT_WO_O_CHUNK(4, 26, 27, 28, 29) QNT_WO_BLK(C, 5, QNT_WO_O_EV, L)                          \
  QNT_WO_O_SH(20, 26, 27, 28, 29) QNT_WO_O_CHUNK(5, 22, 23, 24, 25)                           \
  QNT_WO_BLK(C, 6, QNT_WO_O_EV, L) QNT_WO_O_SH(28, 22, 23, 24, 25)                            \
  QNT_WO_O_CHUNK(6, 26, 27, 28, 29) QNT_WO_BLK(C, 7, QNT_WO_O_EV, L)                          \
  QNT_WO_O_CHUNK(7, 22, 23, 24, 25)
#define QNT_WO_O_OPS                                                                          \
  : [x] "+r"(x), [cp] "+r"(codes), [sp] "+r"(sp), [n] "+r"(groups), [pf] "+r"(pf),          \
    [tmp2] "+&r"(tmp2), [cnt] "+&r"(cnt), [zp] "+r"(zp)                                       \
  : [acc] "r"(acc), [bp] "r"(base), [lines] "r"(lines), [k] "r"(k)                           \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
    "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", \
    "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "memory", \
    "cc"
#define QNT_WO_O_HEAD                                                                         \
  "vmovups (%[acc]), %%zmm0\n\t" "vmovups 64(%[acc]), %%zmm1\n\t"                             \
  "vmovups 128(%[acc]), %%zmm2\n\t" "vmovups 192(%[acc]), %%zmm3\n\t"                         \
  "vmovups (%[bp]), %%zmm13\n\t"
#define QNT_WO_O_TAIL                                                                         \
  "vmovups %%zmm0, (%[acc])\n\t" "vmovups %%zmm1, 64(%[acc])\n\t"                             \
  "vmovups %%zmm2, 128(%[acc])\n\t" "vmovups %%zmm3, 192(%[acc])\n\t"

// acc: the 4 sums (loaded and stored), x at the first group's elements, codes at the first
// group's, sp at its first block's scales ([block][P]), base: the 16 values c - zc (or NF4's
// codebook) that every block's scale multiplies.
template <int CPB, bool Z>
void f32_one_asm(const float *x, const uint8_t *codes, const float *sp, const uint8_t *zp,
                 const float *base, size_t groups, size_t k, float *acc, const uint8_t *pf,
                 size_t lines) noexcept {
  size_t tmp2 = 0, cnt = 1;
  if constexpr (CPB == 0) {
    // Tables every k groups: a counter per group, from 1 so that the first group makes them.
#define QNT_WO_O_G0(L)                                                                        \
  __asm__ volatile(QNT_WO_O_HEAD L(0) "1:\n\t" "dec %[cnt]\n\t" "jnz 3f\n\t" QNT_WO_O_SWAP   \
                   L(1) "add $16, %[sp]\n\t" "add $4, %[zp]\n\t" "mov %[k], %[cnt]\n\t"      \
                   "3:\n\t" QNT_WO_O_CODES QNT_WO_O_CHUNKS(L, 0) QNT_WO_O_PF                    \
                   "add $256, %[cp]\n\t" "add $512, %[x]\n\t" "dec %[n]\n\t" "jnz 1b\n\t"     \
                   QNT_WO_O_TAIL QNT_WO_O_OPS)
    if constexpr (Z) QNT_WO_O_G0(QNT_WO_O_LUTZ);
    else QNT_WO_O_G0(QNT_WO_O_LUT);
#undef QNT_WO_O_G0
  } else {
    // Blocks of C chunks (STEP of them a group), the tables made inside the group.
#define QNT_WO_O_G(STEP, C, L)                                                                \
  __asm__ volatile(QNT_WO_O_HEAD L(0) "1:\n\t" QNT_WO_O_CODES QNT_WO_O_SWAP L(1)               \
                   QNT_WO_O_CHUNKS(L, C) QNT_WO_O_PF "add $256, %[cp]\n\t" "add $512, %[x]\n\t" \
                   "add $" #STEP "*16, %[sp]\n\t" "add $" #STEP "*4, %[zp]\n\t" "dec %[n]\n\t"  \
                   "jnz 1b\n\t" QNT_WO_O_TAIL QNT_WO_O_OPS)
#define QNT_WO_O_GS(STEP, C)                                                                  \
  if constexpr (Z) QNT_WO_O_G(STEP, C, QNT_WO_O_LUTZ);                                        \
  else QNT_WO_O_G(STEP, C, QNT_WO_O_LUT);
    if constexpr (CPB == 1) { QNT_WO_O_GS(8, 1) }
    else if constexpr (CPB == 2) { QNT_WO_O_GS(4, 2) }
    else { QNT_WO_O_GS(2, 4) }
#undef QNT_WO_O_GS
#undef QNT_WO_O_G
  }
  (void)k;
  (void)cnt;
}

// The batch-1 assembly's requests: w.prefetch spread over `groups` groups (>= 1), as
// WoPrefetcher does: the lines a group, pf set to where they start (left as it is, with 0
// lines, when there is nothing to request).
inline size_t group_lines(const WoPanelArgs &w, size_t groups, const uint8_t *&pf) noexcept {
  if (w.prefetch == nullptr) return 0;
  pf = w.prefetch;
  return (w.prefetch_bytes + 64 * groups - 1) / (64 * groups);
}

// f32_rows512<1>'s result for 4-bit codes with K >= 128 and blocks of 16, 32, 64 or a multiple
// of 128 elements, or one block a row: the whole groups in f32_one_asm, the rest (chunks after
// them, the partial last one) here in intrinsics.
template <bool Z>
void f32_one512(const WoPanelArgs &w, const float *x, float *out) noexcept {
  const auto K = static_cast<size_t>(w.K), B = static_cast<size_t>(w.block);
  const size_t groups = K / 128, cpb = B / 16, chunks = (K + 15) / 16;
  // The base of every table: NF4's codebook, or c - zc of the one zero point (kZeroBases' row),
  // or kZeroBases itself for zero points per block.
  const float *bp = Z ? &kZeroBases.v[0][0]
                      : w.code == WoCode::NF4 ? ref::kNF4Codebook : kZeroBases.v[w.zp_const & 15];
  alignas(64) float acc[P * 16] = {};
  const uint8_t *pf = w.codes;
  const size_t lines = group_lines(w, groups, pf);
  const uint8_t *zp = Z ? w.zps : w.codes;  // (read only with Z)
  switch (cpb) {
    case 1: f32_one_asm<1, Z>(x, w.codes, w.scales, zp, bp, groups, 0, acc, pf, lines); break;
    case 2: f32_one_asm<2, Z>(x, w.codes, w.scales, zp, bp, groups, 0, acc, pf, lines); break;
    case 4: f32_one_asm<4, Z>(x, w.codes, w.scales, zp, bp, groups, 0, acc, pf, lines); break;
    default:  // blocks of k whole groups; one block a row: k = B / 128 >= K / 128 = groups
      f32_one_asm<0, Z>(x, w.codes, w.scales, zp, bp, groups, cpb / 8, acc, pf, lines);
      break;
  }
  __m512 a[P];
  for (int p = 0; p < P; ++p) a[p] = _mm512_load_ps(acc + 16 * p);
  for (size_t t = 8 * groups; t < chunks; ++t) {
    const auto mk = static_cast<__mmask16>(mask_of(K - 16 * t));
    const __m512 xv = _mm512_maskz_loadu_ps(mk, x + 16 * t);
    for (int p = 0; p < P; ++p)
      a[p] = _mm512_mask3_fmadd_ps(
          xv, _mm512_permutexvar_ps(lane_codes512(w, t, p), lut512(w, t / cpb, p)), a[p], mk);
  }
  for (int p = 0; p < P; ++p) out[p] = reduce16(a[p]);
}

// The f32 mode's batch-1 kernel for byte weights (W8A16) in assembly, one zero point for every
// block: per chunk of 16 and feature a `vpmovsxbd` of its 16 bytes, the zero point's
// `vpsubd` (Z), a `vcvtdq2ps`, a `vmulps` by the block's scale as an embedded broadcast (no
// table, no broadcast op: a `vbroadcastss` would take a shuffle pipe) and the lane's fma; x
// loaded once for the 4 features. Two of its four 512-bit operations go to the FMA pipes, so 8
// cycles per 64 weights at best: this loop ran at 8.9 in L1, GCC's code for f32_bytes512<1>
// (a chunk an iteration, its addresses in scalars) at 12.6 from DRAM.
// Registers: sums zmm0-3, x zmm12, the zero point zmm13, values zmm14-17. A group is 4 chunks
// (feature p's 64 bytes at 64 p); `so` is the chunk's block's offset into the group's scales.
#define QNT_WO_B_ACCS4                                                                        \
  "vmovups %%zmm0, (%[acc])\n\t" "vmovups %%zmm1, 64(%[acc])\n\t"                             \
  "vmovups %%zmm2, 128(%[acc])\n\t" "vmovups %%zmm3, 192(%[acc])\n\t"
#define QNT_WO_Y_Z(v) "vpsubd %%zmm13, %%zmm" #v ", %%zmm" #v "\n\t"
#define QNT_WO_Y_NOZ(v)
#define QNT_WO_Y_V(c, f, so, a, v, ZS)                                                        \
  "vpmovsxbd " #f "*64+" #c "*16(%[cp]), %%zmm" #v "\n\t" ZS(v)                               \
  "vcvtdq2ps %%zmm" #v ", %%zmm" #v "\n\t"                                                     \
  "vmulps " #so "+" #f "*4(%[sp])%{1to16%}, %%zmm" #v ", %%zmm" #v "\n\t"                     \
  "vfmadd231ps %%zmm12, %%zmm" #v ", %%zmm" #a "\n\t"
#define QNT_WO_Y_CHUNK(c, so, ZS)                                                             \
  "vmovups " #c "*64(%[x]), %%zmm12\n\t" QNT_WO_Y_V(c, 0, so, 0, 14, ZS)                      \
  QNT_WO_Y_V(c, 1, so, 1, 15, ZS) QNT_WO_Y_V(c, 2, so, 2, 16, ZS) QNT_WO_Y_V(c, 3, so, 3, 17, ZS)
#define QNT_WO_Y_GROUP(s0, s1, s2, s3, ZS)                                                    \
  QNT_WO_Y_CHUNK(0, s0, ZS) QNT_WO_Y_CHUNK(1, s1, ZS) QNT_WO_Y_CHUNK(2, s2, ZS)               \
  QNT_WO_Y_CHUNK(3, s3, ZS)
#define QNT_WO_Y_HEAD                                                                         \
  "vpxord %%zmm0, %%zmm0, %%zmm0\n\t" "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"                     \
  "vpxord %%zmm2, %%zmm2, %%zmm2\n\t" "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"                     \
  "vpbroadcastd (%[zv]), %%zmm13\n\t"
#define QNT_WO_Y_OPS                                                                          \
  : [x] "+r"(x), [cp] "+r"(codes), [sp] "+r"(sp), [n] "+r"(groups), [pf] "+r"(pf),          \
    [tmp2] "+&r"(tmp2), [cnt] "+&r"(cnt)                                                        \
  : [acc] "r"(acc), [zv] "r"(&z8), [lines] "r"(lines), [k] "r"(k)                            \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17",     \
    "memory", "cc"

// CPB: chunks per block, 1, 2 or 4; 0: blocks of k whole groups (one block a row: k >= groups).
// acc: the 4 sums, stored; x at the first group's elements, codes at its bytes, sp at its
// first block's scales ([block][P]); z8: the zero point subtracted from the stored bytes (Z).
template <int CPB, bool Z>
void f32_bytes_one_asm(const float *x, const uint8_t *codes, const float *sp, int32_t z8,
                       size_t groups, size_t k, float *acc, const uint8_t *pf,
                       size_t lines) noexcept {
  size_t tmp2 = 0, cnt = k;
#define QNT_WO_Y_ASM(ZS)                                                                      \
  if constexpr (CPB == 0) {                                                                   \
    __asm__ volatile(QNT_WO_Y_HEAD "1:\n\t" QNT_WO_Y_GROUP(0, 0, 0, 0, ZS) QNT_WO_O_PF         \
                     "add $256, %[cp]\n\t" "add $256, %[x]\n\t" "dec %[cnt]\n\t" "jnz 3f\n\t" \
                     "add $16, %[sp]\n\t" "mov %[k], %[cnt]\n\t" "3:\n\t" "dec %[n]\n\t"      \
                     "jnz 1b\n\t" QNT_WO_B_ACCS4 QNT_WO_Y_OPS);                               \
  } else if constexpr (CPB == 1) {                                                            \
    __asm__ volatile(QNT_WO_Y_HEAD "1:\n\t" QNT_WO_Y_GROUP(0, 16, 32, 48, ZS) QNT_WO_O_PF    \
                     "add $256, %[cp]\n\t" "add $256, %[x]\n\t" "add $64, %[sp]\n\t"        \
                     "dec %[n]\n\t" "jnz 1b\n\t" QNT_WO_B_ACCS4 QNT_WO_Y_OPS);                \
  } else if constexpr (CPB == 2) {                                                            \
    __asm__ volatile(QNT_WO_Y_HEAD "1:\n\t" QNT_WO_Y_GROUP(0, 0, 16, 16, ZS) QNT_WO_O_PF     \
                     "add $256, %[cp]\n\t" "add $256, %[x]\n\t" "add $32, %[sp]\n\t"        \
                     "dec %[n]\n\t" "jnz 1b\n\t" QNT_WO_B_ACCS4 QNT_WO_Y_OPS);                \
  } else {                                                                                    \
    __asm__ volatile(QNT_WO_Y_HEAD "1:\n\t" QNT_WO_Y_GROUP(0, 0, 0, 0, ZS) QNT_WO_O_PF       \
                     "add $256, %[cp]\n\t" "add $256, %[x]\n\t" "add $16, %[sp]\n\t"        \
                     "dec %[n]\n\t" "jnz 1b\n\t" QNT_WO_B_ACCS4 QNT_WO_Y_OPS);                \
  }
  if constexpr (Z) {
    QNT_WO_Y_ASM(QNT_WO_Y_Z)
  } else {
    QNT_WO_Y_ASM(QNT_WO_Y_NOZ)
  }
#undef QNT_WO_Y_ASM
  (void)k;
}

// Whether f32_bytes_one512 takes w (batch 1): one zero point, and blocks that start on a chunk
// of a group of 4 in the same place (16, 32, or a multiple of 64 elements), or one block a row.
inline bool bytes_one_takes(const WoPanelArgs &w) noexcept {
  return w.K >= 64 && w.zps == nullptr &&
         (w.block == 16 || w.block == 32 || w.block % 64 == 0 || w.block >= w.K);
}

// f32_bytes512<1>'s result where bytes_one_takes: the whole groups of 64 elements in
// f32_bytes_one_asm, the chunks after them (the last one partial) here in intrinsics.
inline void f32_bytes_one512(const WoPanelArgs &w, const float *x, float *out) noexcept {
  const auto K = static_cast<size_t>(w.K), B = static_cast<size_t>(w.block);
  const size_t groups = K / 64, cpb = B / 16, chunks = (K + 15) / 16;
  const int32_t z8 = w.zp_const - 128;  // (stored as z8 + 128)
  alignas(64) float acc[P * 16];
  const uint8_t *pf = w.codes;
  const size_t lines = group_lines(w, groups, pf);
  auto run = [&](auto z) {
    constexpr bool kZ = decltype(z)::value;
    switch (cpb) {
      case 1: return f32_bytes_one_asm<1, kZ>(x, w.codes, w.scales, z8, groups, 0, acc, pf, lines);
      case 2: return f32_bytes_one_asm<2, kZ>(x, w.codes, w.scales, z8, groups, 0, acc, pf, lines);
      case 4: return f32_bytes_one_asm<4, kZ>(x, w.codes, w.scales, z8, groups, 0, acc, pf, lines);
      default:  // k = B / 64 groups a block; one block a row: B / 64 >= K / 64 = groups
        return f32_bytes_one_asm<0, kZ>(x, w.codes, w.scales, z8, groups, cpb / 4, acc, pf, lines);
    }
  };
  if (z8 != 0) run(std::true_type{});
  else run(std::false_type{});
  __m512 a[P];
  for (int p = 0; p < P; ++p) a[p] = _mm512_load_ps(acc + 16 * p);
  const __m512i zv = _mm512_set1_epi32(z8);
  for (size_t t = 4 * groups; t < chunks; ++t) {
    const auto mk = static_cast<__mmask16>(mask_of(K - 16 * t));
    const __m512 xv = _mm512_maskz_loadu_ps(mk, x + 16 * t);
    const size_t blk = t / cpb;
    for (int p = 0; p < P; ++p)
      a[p] = _mm512_mask3_fmadd_ps(
          xv, byte_values512(w, t, p, zv, _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p)])),
          a[p], mk);
  }
  for (int p = 0; p < P; ++p) out[p] = reduce16(a[p]);
}
#endif  // !QNT_WO_EMULATED

inline void f32_512(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out) noexcept {
  if (w.code == WoCode::Byte) {
    switch (rows) {
      case 1:
#if !defined(QNT_WO_EMULATED)
        if (bytes_one_takes(w)) return f32_bytes_one512(w, x, out);
#endif
        return f32_bytes512<1>(w, x, ldx, out);
      case 2: return f32_bytes512<2>(w, x, ldx, out);
      case 3: return f32_bytes512<3>(w, x, ldx, out);
      default: return f32_bytes512<4>(w, x, ldx, out);
    }
  }
  switch (rows) {
    case 1:
#if !defined(QNT_WO_EMULATED)
      // Blocks of 16, 32, 64 or a multiple of 128 elements, or one block a row (with its
      // shifts a chunk ahead, f32_one_asm ran one scale per row 3 % faster than f32_rows512,
      // 116 against 119 us at 4096 x 1024, blocks of 256 6 %); the others (blocks of 48, 80,
      // 96, ...) in intrinsics. With zero points per block, each table is a load of its base
      // and a vmulps by the broadcast scale: a vbroadcastss of the scale and a vmulps from the
      // base in memory (as the intrinsics compile) cost a shuffle more each (on Zen 4's FP1/FP2
      // pipes, with the vpermps) and ran level with f32_rows512; this way uint4 affine at
      // 4096 x 1024, weights in L3, went from 244 to 185 us at block 16, 180 to 148 at 32, 138
      // to 132 at 128.
      if (w.K >= 128 &&
          (w.block == 16 || w.block == 32 || w.block == 64 || w.block % 128 == 0 || w.block >= w.K)) {
        if (w.zps == nullptr || w.code == WoCode::NF4) return f32_one512<false>(w, x, out);
        return f32_one512<true>(w, x, out);
      }
#endif
      return f32_rows512<1>(w, x, ldx, out);
    case 2: return f32_rows512<2>(w, x, ldx, out);
    case 3: return f32_rows512<3>(w, x, ldx, out);
    default: return f32_rows512<4>(w, x, ldx, out);
  }
}

// WoF32RangeFn: f32_512 for one row over consecutive panels, without the driver's call, panel
// arguments and results per panel (about 30 of the 80 cycles a panel costs besides its loop on
// Zen 4).
inline void f32_one_range512(const WoPanelArgs &first, size_t stride, size_t panels, size_t ahead,
                             size_t reach, const float *x, float *out) noexcept {
  WoPanelArgs w = first;
  const auto *scales = reinterpret_cast<const uint8_t *>(first.scales);
  for (size_t i = 0; i < panels; ++i) {
    w.codes = first.codes + i * stride;
    w.scales = reinterpret_cast<const float *>(scales + i * stride);
    if (first.zps != nullptr) w.zps = first.zps + i * stride;
    const bool request = ahead > 0 && i + ahead < reach;
    w.prefetch = request ? w.codes + ahead * stride : nullptr;
    w.prefetch_bytes = request ? stride : 0;
    f32_512(w, x, static_cast<size_t>(w.K), 1, out + i * P);
  }
}

// Rows [r0, rows) of x 4 at a time through kernel(std::integral_constant<int, MR>, w, x, ldx,
// o) (f32_bytes512, f32_rows512: o[m * P + p]) into out[r * ldo + p]; with `request`, the first
// call requests w's next panel (w.prefetch), the others nothing.
template <class Kernel>
void rows_by_four(const WoPanelArgs &w, bool request, const float *x, size_t ldx, size_t r0,
                  size_t rows, float *out, size_t ldo, Kernel &&kernel) noexcept {
  WoPanelArgs wr = w;
  if (!request) wr.prefetch = nullptr;
  for (size_t r = r0; r < rows; r += 4) {
    float o[4 * P];
    const float *xr = x + r * ldx;
    const size_t n = std::min<size_t>(4, rows - r);
    switch (n) {
      case 1: kernel(std::integral_constant<int, 1>{}, wr, xr, ldx, o); break;
      case 2: kernel(std::integral_constant<int, 2>{}, wr, xr, ldx, o); break;
      case 3: kernel(std::integral_constant<int, 3>{}, wr, xr, ldx, o); break;
      default: kernel(std::integral_constant<int, 4>{}, wr, xr, ldx, o); break;
    }
    wr.prefetch = nullptr;
    for (size_t m = 0; m < n; ++m)
      for (size_t p = 0; p < P; ++p) out[(r + m) * ldo + p] = o[m * P + p];
  }
}

// Byte weights in the f32 mode, a batch (W8A16; the AVX-512 tables' `f32_batch`, bytes only).
// Each chunk's 16 values cost a vmulps (the rule's product by the scale), and on Zen 4 that
// product takes an FMA slot (a conversion and a sign-extending load do not: measured beside 16
// independent fma, 4 vcvtdq2ps or 4 vpmovsxbd add nothing, 4 vmulps add 4 cycles). f32_bytes512's
// 4 rows give 4 fma per product, at most 0.8 of the FMA peak; it ran at 0.70 (batch 16, int8
// block 128, 4096^2, one thread). Here a tile of 8 rows x 2 features makes each value once for
// 8 rows (16 fma per 2 products: at most 0.89) and runs over the whole of K with its 16 sums in
// registers, the panel's two pairs of features one after the other (the second reads the 8
// rows' x from L2 again: slices of K kept in L1 for both pairs were slower, 0.70-0.77 against
// 0.85, as the hardware's stream of x restarts every slice). Every lane gets its elements in
// order of K and the same instructions, so the bits are f32_bytes512's.

// The tile's scales (and z8) come from a table made once per panel: [chunk][P] (blocks of 16 or
// 32 elements) or [group of 4 chunks][P] (blocks that are whole groups: B % 64 == 0).
inline bool bytes_group_params(const WoPanelArgs &w) noexcept { return w.block % 64 == 0; }

#if !defined(QNT_WO_EMULATED)
// The 8 x 2 tile over `groups` groups of 4 chunks (64 elements), in assembly: with the
// intrinsics GCC 12 kept four of the eight rows' x offsets on the stack and spilled an x vector
// every chunk (0.75 of the FMA peak with everything in L1, against 0.88 here). Per chunk: the
// two features' 16 bytes sign-extended, less z8 (Z), converted, times the scale (embedded
// broadcasts from the tables at sp and zp: the tile's first feature, then the second 4 bytes
// on), then each row's x loaded once for its two fma. x rows: x0, x0 + s, x0 + 2s, x3 = x0 + 3s,
// x0 + 4s, x3 + 2s, x6 = x3 + 3s, x6 + s. acc: row m's two sums, from 0, stored at acc + 256 m
// bytes and + 64 on exit. CS: the tables' bytes per chunk (16, or 0: one entry per
// group). PF: lines requested into L2 per group at pf (0, 1 or 2).
#define QNT_WO_B_ZERO(m, a, b) "vpxord %%zmm" #a ", %%zmm" #a ", %%zmm" #a "\n\t" "vpxord %%zmm" #b ", %%zmm" #b ", %%zmm" #b "\n\t"
#define QNT_WO_B_ST(m, a, b) "vmovups %%zmm" #a ", " #m "*256(%[acc])\n\t" "vmovups %%zmm" #b ", " #m "*256+64(%[acc])\n\t"
#define QNT_WO_B_ACCS(OP)                                                                     \
  OP(0, 0, 1) OP(1, 2, 3) OP(2, 4, 5) OP(3, 6, 7) OP(4, 8, 9) OP(5, 10, 11) OP(6, 12, 13)     \
  OP(7, 14, 15)
#define QNT_WO_B_ROW(c, addr, xr, a, b)                                                        \
  "vmovups " #c "*64" addr ", %%zmm" #xr "\n\t"                                               \
  "vfmadd231ps %%zmm" #xr ", %%zmm16, %%zmm" #a "\n\t"                                        \
  "vfmadd231ps %%zmm" #xr ", %%zmm17, %%zmm" #b "\n\t"
#define QNT_WO_B_ZP(c, cs)                                                                    \
  "vpsubd " #c "*" #cs "(%[zp])%{1to16%}, %%zmm16, %%zmm16\n\t"                               \
  "vpsubd " #c "*" #cs "+4(%[zp])%{1to16%}, %%zmm17, %%zmm17\n\t"
#define QNT_WO_B_NOZP(c, cs)
#define QNT_WO_B_CHUNK(c, cs, ZP)                                                             \
  "vpmovsxbd " #c "*16(%[cp]), %%zmm16\n\t"                                                   \
  "vpmovsxbd " #c "*16+64(%[cp]), %%zmm17\n\t" ZP(c, cs)                                      \
  "vcvtdq2ps %%zmm16, %%zmm16\n\t"                                                            \
  "vcvtdq2ps %%zmm17, %%zmm17\n\t"                                                            \
  "vmulps " #c "*" #cs "(%[sp])%{1to16%}, %%zmm16, %%zmm16\n\t"                               \
  "vmulps " #c "*" #cs "+4(%[sp])%{1to16%}, %%zmm17, %%zmm17\n\t"                             \
  QNT_WO_B_ROW(c, "(%[x0])", 18, 0, 1) QNT_WO_B_ROW(c, "(%[x0], %[s])", 19, 2, 3)             \
  QNT_WO_B_ROW(c, "(%[x0], %[s], 2)", 20, 4, 5) QNT_WO_B_ROW(c, "(%[x3])", 21, 6, 7)          \
  QNT_WO_B_ROW(c, "(%[x0], %[s], 4)", 22, 8, 9) QNT_WO_B_ROW(c, "(%[x3], %[s], 2)", 23, 10, 11) \
  QNT_WO_B_ROW(c, "(%[x6])", 24, 12, 13) QNT_WO_B_ROW(c, "(%[x6], %[s])", 25, 14, 15)
#define QNT_WO_B_PF1 "prefetcht0 (%[pf])\n\t" "add $64, %[pf]\n\t"
#define QNT_WO_B_PF2 "prefetcht0 (%[pf])\n\t" "prefetcht0 64(%[pf])\n\t" "add $128, %[pf]\n\t"
// TADD: the tables' step per group ("$64" or "$16"); ZADD: zp's, or nothing.
#define QNT_WO_B_TEXT(cs, ZP, TADD, ZADD, PF)                                                 \
  QNT_WO_B_ACCS(QNT_WO_B_ZERO)                                                                \
  "1:\n\t"                                                                                    \
  QNT_WO_B_CHUNK(0, cs, ZP) QNT_WO_B_CHUNK(1, cs, ZP) QNT_WO_B_CHUNK(2, cs, ZP)               \
  QNT_WO_B_CHUNK(3, cs, ZP) PF                                                                \
  "add $256, %[cp]\n\t" "add " TADD ", %[sp]\n\t" ZADD "add $256, %[x0]\n\t"                  \
  "add $256, %[x3]\n\t" "add $256, %[x6]\n\t" "dec %[n]\n\t" "jnz 1b\n\t"                     \
  QNT_WO_B_ACCS(QNT_WO_B_ST)

template <bool Z, int PF, bool PerChunk>
void bytes_tile8_asm(const float *x, size_t ldx, const uint8_t *codes, const float *sc,
                     const int32_t *z8, size_t groups, float *acc, const uint8_t *pf) noexcept {
  const size_t s = ldx * sizeof(float);
  const char *x0 = reinterpret_cast<const char *>(x);
  const char *x3 = x0 + 3 * s, *x6 = x0 + 6 * s;
#define QNT_WO_B_ASM(cs, ZP, TADD, ZADD, PFT)                                                 \
  __asm__ volatile(QNT_WO_B_TEXT(cs, ZP, TADD, ZADD, PFT)                                     \
                   : [x0] "+r"(x0), [x3] "+r"(x3), [x6] "+r"(x6), [cp] "+r"(codes), [sp] "+r"(sc), \
                     [zp] "+r"(z8), [n] "+r"(groups), [pf] "+r"(pf)                           \
                   : [s] "r"(s), [acc] "r"(acc)                                               \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",   \
                     "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",  \
                     "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", \
                     "xmm25", "memory", "cc")
#define QNT_WO_B_PFS(cs, ZP, TADD, ZADD)                                                      \
  if constexpr (PF == 2) QNT_WO_B_ASM(cs, ZP, TADD, ZADD, QNT_WO_B_PF2);                     \
  else if constexpr (PF == 1) QNT_WO_B_ASM(cs, ZP, TADD, ZADD, QNT_WO_B_PF1);                \
  else QNT_WO_B_ASM(cs, ZP, TADD, ZADD, "")
  if constexpr (PerChunk) {
    if constexpr (Z) QNT_WO_B_PFS(16, QNT_WO_B_ZP, "$64", "add $64, %[zp]\n\t");
    else QNT_WO_B_PFS(16, QNT_WO_B_NOZP, "$64", "");
  } else {
    if constexpr (Z) QNT_WO_B_PFS(0, QNT_WO_B_ZP, "$16", "add $16, %[zp]\n\t");
    else QNT_WO_B_PFS(0, QNT_WO_B_NOZP, "$16", "");
  }
#undef QNT_WO_B_PFS
#undef QNT_WO_B_ASM
}
#endif  // !QNT_WO_EMULATED

// The same tile in intrinsics, over whole chunks [t0, t1) from the sums in acc (row m's pair at
// acc + P * 16 m floats): the chunks after the assembly's groups, and the emulated tests' whole
// tile. pf, if set, has a line requested per chunk.
template <bool Z>
void bytes_tile8(const WoPanelArgs &w, const float *x, size_t ldx, int p0, size_t t0, size_t t1,
                 float *acc_mem, const uint8_t **pf) noexcept {
  constexpr int MR = 8;
  __m512 acc[MR][2];
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < 2; ++j) acc[m][j] = _mm512_loadu_ps(acc_mem + (m * P + j) * 16);
  const size_t cpb = static_cast<size_t>(w.block) / 16;
  for (size_t t = t0; t < t1;) {
    const size_t blk = t / cpb, te = std::min(t1, (blk + 1) * cpb);
    __m512i z8[2];
    __m512 sc[2];
    for (int j = 0; j < 2; ++j) {
      z8[j] = Z ? byte_zero512(w, blk, p0 + j) : _mm512_setzero_si512();
      sc[j] = _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p0 + j)]);
    }
    for (; t < te; ++t) {
      if (pf != nullptr) {
        __builtin_prefetch(*pf, 0, 3);
        *pf += 64;
      }
      const uint8_t *c = w.codes + ((t >> 2) * P + static_cast<size_t>(p0)) * 64 + 16 * (t & 3);
      __m512 wv[2];
      for (int j = 0; j < 2; ++j) {
        __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(c + 64 * j)));
        if constexpr (Z) q = _mm512_sub_epi32(q, z8[j]);
        wv[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(q), sc[j]);
      }
      for (int m = 0; m < MR; ++m) {
        const __m512 xv = _mm512_loadu_ps(x + m * ldx + 16 * t);
        for (int j = 0; j < 2; ++j) acc[m][j] = _mm512_fmadd_ps(xv, wv[j], acc[m][j]);
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < 2; ++j) _mm512_storeu_ps(acc_mem + (m * P + j) * 16, acc[m][j]);
}

// Rows in groups of 8 through the 8 x 2 tiles, the rest (fewer than 8) 4 at a time through
// f32_bytes512 (its 4 x 4 reads x once per panel, where the tiles read it twice). Blocks of 64
// elements or more take the tiles from 16 rows on: at 5-15 rows they were 2-6 % slower than
// f32_bytes512 there (int8 block 128, 4096^2, weights from DRAM), and 1.2-1.4x faster at
// block 32 (whose per-block work the tables take out of f32_bytes512's loop).
template <bool Z>
void f32_bytes_batch512(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out,
                        size_t ldo, float *scratch) noexcept {
  const auto K = static_cast<size_t>(w.K);
  const size_t whole = K / 16, cpb = static_cast<size_t>(w.block) / 16;
  const size_t groups = whole / 4, tg = 4 * groups;
  const bool per_group = bytes_group_params(w);
  const size_t full = per_group && rows < 16 ? 0 : rows / 8 * 8;  // rows through the tiles
  // The next panel is requested (prefetcht0) over the tiles, in the order of its bytes: a line
  // per group for 16 rows or more (4 tiles of 8 rows x 2 features request 16 KiB at K = 4096),
  // two for 8 to 15; what remains (up to the panel's scales and zero points) at the end: first
  // (before the codes) or not at all, the weights from DRAM took 1.5-3 % longer. Without tiles,
  // by f32_bytes512's first call.
  const uint8_t *pf = w.prefetch, *pf_end = w.prefetch + (w.prefetch ? w.prefetch_bytes : 0);
  if (full > 0) {
    // scratch (wo_batch_scratch): the sums, then the tables.
    float *acc = scratch;                                          // [8 rows][P][16]
    float *sc = acc + 8 * P * 16;                                  // scales [chunk or group][P]
    auto *z8 = reinterpret_cast<int32_t *>(sc + P * (whole + 1));  // z8, the same
    // The tables: one entry per group when blocks are whole groups, else per chunk.
    const size_t entries = per_group ? groups : tg, per_block = per_group ? cpb / 4 : cpb;
    for (size_t e = 0, blk = 0; e < entries; ++blk) {
      const __m128 s4 = _mm_loadu_ps(w.scales + blk * P);
      __m128i z4 = _mm_setzero_si128();
      if constexpr (Z)
        z4 = _mm_setr_epi32(zc_of(w, blk, 0) - 128, zc_of(w, blk, 1) - 128, zc_of(w, blk, 2) - 128,
                            zc_of(w, blk, 3) - 128);
      for (const size_t ee = std::min(entries, e + per_block); e < ee; ++e) {
        _mm_storeu_ps(sc + e * P, s4);
        if constexpr (Z) _mm_storeu_si128(reinterpret_cast<__m128i *>(z8 + e * P), z4);
      }
    }
    for (size_t g = 0; g < full; g += 8) {
      const float *xg = x + g * ldx;
      for (int p0 = 0; p0 < P; p0 += 2) {
        float *a = acc + static_cast<size_t>(p0) * 16;  // row m's pair at a + m * P * 16
        size_t t = 0;
#if !defined(QNT_WO_EMULATED)
        if (groups > 0) {
          const uint8_t *c = w.codes + static_cast<size_t>(p0) * 64;
          const float *sp = sc + p0;
          const int32_t *zp = z8 + p0;
          const int pf_lines = full >= 16 ? 1 : 2;
          const size_t want = 64 * static_cast<size_t>(pf_lines) * groups;
          const int lines = pf != nullptr && want <= static_cast<size_t>(pf_end - pf) ? pf_lines : 0;
          auto run = [&](auto per_chunk) {
            constexpr bool kPerChunk = decltype(per_chunk)::value;
            if (lines == 2) bytes_tile8_asm<Z, 2, kPerChunk>(xg, ldx, c, sp, zp, groups, a, pf);
            else if (lines == 1) bytes_tile8_asm<Z, 1, kPerChunk>(xg, ldx, c, sp, zp, groups, a, pf);
            else bytes_tile8_asm<Z, 0, kPerChunk>(xg, ldx, c, sp, zp, groups, a, pf);
          };
          if (per_group) run(std::false_type{});
          else run(std::true_type{});
          if (lines > 0) pf += want;
          t = tg;
        }
#endif
        if (t == 0)  // no assembly: the sums start from 0 here
          for (size_t m = 0; m < 8; ++m) std::fill(a + m * P * 16, a + m * P * 16 + 32, 0.0f);
        const uint8_t **pfp =
            pf != nullptr && 64 * (whole - t) <= static_cast<size_t>(pf_end - pf) ? &pf : nullptr;
        if (t < whole) bytes_tile8<Z>(w, xg, ldx, p0, t, whole, a, pfp);
        if (K % 16 != 0) {  // the last, partial chunk, with masks (f32_bytes512's)
          const size_t blk = whole / cpb;
          const auto mk = static_cast<__mmask16>(mask_of(K - 16 * whole));
          for (int j = 0; j < 2; ++j) {
            const int p = p0 + j;
            const __m512 wv = byte_values512(
                w, whole, p, Z ? byte_zero512(w, blk, p) : _mm512_setzero_si512(),
                _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]));
            for (size_t m = 0; m < 8; ++m) {
              float *am = a + m * P * 16 + 16 * j;
              const __m512 xv = _mm512_maskz_loadu_ps(mk, xg + m * ldx + 16 * whole);
              _mm512_storeu_ps(am, _mm512_mask3_fmadd_ps(xv, wv, _mm512_loadu_ps(am), mk));
            }
          }
        }
        store_tile_sums(a, out + g * ldo + p0, ldo);
      }
    }
  }
  // The other rows, 4 at a time; the first call requests the next panel when no tile did.
  rows_by_four(w, full == 0, x, ldx, full, rows, out, ldo, [](auto mr, auto &&...a) {
    f32_bytes512<decltype(mr)::value, Z>(a...);
  });
  if (full > 0)
    for (; pf < pf_end; pf += 64) __builtin_prefetch(pf, 0, 3);
}

// 4-bit codes in the f32 mode, a batch, blocks of 16 or 32 elements (the AVX-512 tables'
// f32_batch, from 16 rows; f32_rows512 takes the rest): tiles of 8 rows x 2 features, as the
// byte tiles above. f32_rows512's 4 rows x 4 features make each block's 16 values (a vmulps
// per feature) for every 4 rows, and with its tables, the next block's and the group's codes
// GCC 12 kept some of its 16 sums on the stack (11 % of its samples on zmm stack moves at
// block 32, batch 16). Here a table serves 8 rows: at block 32, 16 fma per chunk beside one
// vmulps (0.94 of the FMA peak at most, against 0.89).
inline bool nibble_tiles(const WoPanelArgs &w) noexcept {
  return w.code != WoCode::Byte && (w.block == 16 || w.block == 32);
}

#if !defined(QNT_WO_EMULATED)
// The tile over `groups` groups of 8 chunks (128 elements) in the lane layout: per group each
// feature's 64 code bytes once (zmm16, zmm17), then per chunk q the codes shifted down by
// 8 (q % 4) + 4 (q / 4), vpermps from the block's table (zmm20, zmm21), each row's x once for
// its two fma. The tables are made where a block starts (every CPB chunks): the base (zmm22:
// c - zc of the one zero point, or NF4's codebook) times the block's scale (an embedded
// broadcast from sp: the layout's scales [block][P], from the tile's first feature), or with
// zero points per block (Aff) kZeroBases' row zc (zp: the zero points [block][P] as bytes)
// times the scale.
#define QNT_WO_N_ROW(c, addr, xr, a, b)                                                        \
  "vmovups " #c "*64" addr ", %%zmm" #xr "\n\t"                                               \
  "vfmadd231ps %%zmm" #xr ", %%zmm18, %%zmm" #a "\n\t"                                        \
  "vfmadd231ps %%zmm" #xr ", %%zmm19, %%zmm" #b "\n\t"
#define QNT_WO_N_ROWS(c)                                                                      \
  QNT_WO_N_ROW(c, "(%[x0])", 23, 0, 1) QNT_WO_N_ROW(c, "(%[x0], %[s])", 24, 2, 3)             \
  QNT_WO_N_ROW(c, "(%[x0], %[s], 2)", 25, 4, 5) QNT_WO_N_ROW(c, "(%[x3])", 26, 6, 7)          \
  QNT_WO_N_ROW(c, "(%[x0], %[s], 4)", 27, 8, 9) QNT_WO_N_ROW(c, "(%[x3], %[s], 2)", 28, 10, 11) \
  QNT_WO_N_ROW(c, "(%[x6])", 29, 12, 13) QNT_WO_N_ROW(c, "(%[x6], %[s])", 30, 14, 15)
// Block b's tables (b-th block of the group).
#define QNT_WO_N_LUT(b)                                                                       \
  "vmulps " #b "*16(%[sp])%{1to16%}, %%zmm22, %%zmm20\n\t"                                    \
  "vmulps " #b "*16+4(%[sp])%{1to16%}, %%zmm22, %%zmm21\n\t"
#define QNT_WO_N_LUT_AFF(b)                                                                   \
  "movzbl " #b "*4(%[zp]), %k[tmp]\n\t" "and $15, %k[tmp]\n\t" "shl $6, %k[tmp]\n\t"         \
  "vmovaps (%[zb], %[tmp]), %%zmm20\n\t" "vmulps " #b "*16(%[sp])%{1to16%}, %%zmm20, %%zmm20\n\t" \
  "movzbl " #b "*4+1(%[zp]), %k[tmp]\n\t" "and $15, %k[tmp]\n\t" "shl $6, %k[tmp]\n\t"       \
  "vmovaps (%[zb], %[tmp]), %%zmm21\n\t" "vmulps " #b "*16+4(%[sp])%{1to16%}, %%zmm21, %%zmm21\n\t"
// Chunk q's values: its codes (shifted unless q is 0) through the tables.
#define QNT_WO_N_VAL0                                                                         \
  "vpermps %%zmm20, %%zmm16, %%zmm18\n\t" "vpermps %%zmm21, %%zmm17, %%zmm19\n\t"
#define QNT_WO_N_VAL(sh)                                                                      \
  "vpsrld $" #sh ", %%zmm16, %%zmm18\n\t" "vpsrld $" #sh ", %%zmm17, %%zmm19\n\t"             \
  "vpermps %%zmm20, %%zmm18, %%zmm18\n\t" "vpermps %%zmm21, %%zmm19, %%zmm19\n\t"
#define QNT_WO_N_PF1 "prefetcht0 (%[pf])\n\t" "add $64, %[pf]\n\t"
#define QNT_WO_N_PF2 "prefetcht0 (%[pf])\n\t" "prefetcht0 64(%[pf])\n\t" "add $128, %[pf]\n\t"

template <int CPB, bool Aff, int PF>
void nibble_tile8_asm(const float *x, size_t ldx, const uint8_t *codes, const float *sp,
                      const uint8_t *zp, const float *base, size_t groups, float *acc,
                      const uint8_t *pf) noexcept {
  static_assert(CPB == 1 || CPB == 2, "blocks of 16 or 32 elements");
  const size_t s = ldx * sizeof(float);
  const char *x0 = reinterpret_cast<const char *>(x);
  const char *x3 = x0 + 3 * s, *x6 = x0 + 6 * s;
  const float *zb = &kZeroBases.v[0][0];
  size_t tmp = 0;
  // The chunks' shifts, the tables at block starts (L(b): block b of the group), the rows.
#define QNT_WO_N_EV(j, j1, L) L(j)
#define QNT_WO_N_GROUP(L, C)                                                                  \
  "vmovups (%[cp]), %%zmm16\n\t" "vmovups 64(%[cp]), %%zmm17\n\t"                             \
  L(0) QNT_WO_N_VAL0 QNT_WO_N_ROWS(0)                                                         \
  QNT_WO_BLK(C, 1, QNT_WO_N_EV, L) QNT_WO_N_VAL(8) QNT_WO_N_ROWS(1)                           \
  QNT_WO_BLK(C, 2, QNT_WO_N_EV, L) QNT_WO_N_VAL(16) QNT_WO_N_ROWS(2)                          \
  QNT_WO_BLK(C, 3, QNT_WO_N_EV, L) QNT_WO_N_VAL(24) QNT_WO_N_ROWS(3)                          \
  QNT_WO_BLK(C, 4, QNT_WO_N_EV, L) QNT_WO_N_VAL(4) QNT_WO_N_ROWS(4)                           \
  QNT_WO_BLK(C, 5, QNT_WO_N_EV, L) QNT_WO_N_VAL(12) QNT_WO_N_ROWS(5)                          \
  QNT_WO_BLK(C, 6, QNT_WO_N_EV, L) QNT_WO_N_VAL(20) QNT_WO_N_ROWS(6)                          \
  QNT_WO_BLK(C, 7, QNT_WO_N_EV, L) QNT_WO_N_VAL(28) QNT_WO_N_ROWS(7)
#define QNT_WO_N_ASM(L, PFT, STEP, C)                                                         \
  __asm__ volatile(QNT_WO_B_ACCS(QNT_WO_B_ZERO) "vmovups (%[bp]), %%zmm22\n\t"               \
                   "1:\n\t" QNT_WO_N_GROUP(L, C) PFT                                        \
                   "add $256, %[cp]\n\t" "add $" #STEP "*16, %[sp]\n\t" "add $" #STEP "*4, %[zp]\n\t" \
                   "add $512, %[x0]\n\t" "add $512, %[x3]\n\t" "add $512, %[x6]\n\t"         \
                   "dec %[n]\n\t" "jnz 1b\n\t" QNT_WO_B_ACCS(QNT_WO_B_ST)                    \
                   : [x0] "+r"(x0), [x3] "+r"(x3), [x6] "+r"(x6), [cp] "+r"(codes), [sp] "+r"(sp), \
                     [zp] "+r"(zp), [n] "+r"(groups), [pf] "+r"(pf), [tmp] "+&r"(tmp)          \
                   : [s] "r"(s), [acc] "r"(acc), [zb] "r"(zb), [bp] "r"(base)                 \
                   : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",   \
                     "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",  \
                     "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",  \
                     "xmm25",                                                                  \
                     "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "memory", "cc")
  // Blocks of CPB chunks, STEP of them a group.
#define QNT_WO_N_DISPATCH(STEP, C)                                                            \
  if constexpr (Aff) {                                                                        \
    if constexpr (PF == 2) QNT_WO_N_ASM(QNT_WO_N_LUT_AFF, QNT_WO_N_PF2, STEP, C);             \
    else if constexpr (PF == 1) QNT_WO_N_ASM(QNT_WO_N_LUT_AFF, QNT_WO_N_PF1, STEP, C);        \
    else QNT_WO_N_ASM(QNT_WO_N_LUT_AFF, "", STEP, C);                                         \
  } else {                                                                                    \
    if constexpr (PF == 2) QNT_WO_N_ASM(QNT_WO_N_LUT, QNT_WO_N_PF2, STEP, C);                 \
    else if constexpr (PF == 1) QNT_WO_N_ASM(QNT_WO_N_LUT, QNT_WO_N_PF1, STEP, C);            \
    else QNT_WO_N_ASM(QNT_WO_N_LUT, "", STEP, C);                                             \
  }
  if constexpr (CPB == 1) {
    QNT_WO_N_DISPATCH(8, 1)
  } else {
    QNT_WO_N_DISPATCH(4, 2)
  }
#undef QNT_WO_N_DISPATCH
#undef QNT_WO_N_ASM
#undef QNT_WO_N_GROUP
}
#endif  // !QNT_WO_EMULATED

// The 8 x 2 tile in intrinsics over chunks [t0, K) (the last one masked), the sums in acc as
// above: the chunks after the assembly's groups, and the emulated tests' whole tile.
inline void nibble_tile8(const WoPanelArgs &w, const float *x, size_t ldx, int p0, size_t t0,
                         float *acc_mem, const uint8_t **pf) noexcept {
  __m512 acc[8][2];
  for (int m = 0; m < 8; ++m)
    for (int j = 0; j < 2; ++j) acc[m][j] = _mm512_loadu_ps(acc_mem + (m * P + j) * 16);
  const auto K = static_cast<size_t>(w.K);
  const size_t cpb = static_cast<size_t>(w.block) / 16, chunks = (K + 15) / 16;
  for (size_t t = t0; t < chunks; ++t) {
    if (pf != nullptr) {
      __builtin_prefetch(*pf, 0, 3);
      *pf += 64;
    }
    const auto mk = static_cast<__mmask16>(mask_of(K - 16 * t));
    __m512 wv[2];
    for (int j = 0; j < 2; ++j)
      wv[j] = _mm512_permutexvar_ps(lane_codes512(w, t, p0 + j), lut512(w, t / cpb, p0 + j));
    for (int m = 0; m < 8; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mk, x + m * ldx + 16 * t);
      for (int j = 0; j < 2; ++j) acc[m][j] = _mm512_mask3_fmadd_ps(xv, wv[j], acc[m][j], mk);
    }
  }
  for (int m = 0; m < 8; ++m)
    for (int j = 0; j < 2; ++j) _mm512_storeu_ps(acc_mem + (m * P + j) * 16, acc[m][j]);
}

template <int CPB, bool Aff>
void f32_nibble_batch512(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out,
                         size_t ldo, float *scratch) noexcept {
  const auto K = static_cast<size_t>(w.K);
  const size_t full = rows / 8 * 8;
  float *acc = scratch;  // [8 rows][P][16]
  alignas(64) float base[16];
  if (w.code == WoCode::NF4) {
    std::memcpy(base, ref::kNF4Codebook, sizeof(base));
  } else {
    for (int c = 0; c < 16; ++c) base[c] = static_cast<float>(c - w.zp_const);
  }
  // The next panel requested as the byte tiles do.
  const uint8_t *pf = w.prefetch, *pf_end = w.prefetch + (w.prefetch ? w.prefetch_bytes : 0);
  for (size_t g = 0; g < full; g += 8) {
    const float *xg = x + g * ldx;
    for (int p0 = 0; p0 < P; p0 += 2) {
      float *a = acc + static_cast<size_t>(p0) * 16;
      size_t t = 0;
#if !defined(QNT_WO_EMULATED)
      if (const size_t groups = K / 128; groups > 0) {
        const int pf_lines = full >= 16 ? 1 : 2;
        const size_t want = 64 * static_cast<size_t>(pf_lines) * groups;
        const int lines = pf != nullptr && want <= static_cast<size_t>(pf_end - pf) ? pf_lines : 0;
        const uint8_t *c = w.codes + static_cast<size_t>(p0) * 64;
        const float *sp = w.scales + p0;
        const uint8_t *zp = Aff ? w.zps + p0 : nullptr;
        if (lines == 2) nibble_tile8_asm<CPB, Aff, 2>(xg, ldx, c, sp, zp, base, groups, a, pf);
        else if (lines == 1) nibble_tile8_asm<CPB, Aff, 1>(xg, ldx, c, sp, zp, base, groups, a, pf);
        else nibble_tile8_asm<CPB, Aff, 0>(xg, ldx, c, sp, zp, base, groups, a, pf);
        if (lines > 0) pf += want;
        t = 8 * groups;
      }
#endif
      if (t == 0)
        for (size_t m = 0; m < 8; ++m) std::fill(a + m * P * 16, a + m * P * 16 + 32, 0.0f);
      const size_t chunks = (K + 15) / 16;
      const uint8_t **pfp =
          pf != nullptr && 64 * (chunks - t) <= static_cast<size_t>(pf_end - pf) ? &pf : nullptr;
      if (t < chunks) nibble_tile8(w, xg, ldx, p0, t, a, pfp);
      store_tile_sums(a, out + g * ldo + p0, ldo);
    }
  }
  rows_by_four(w, full == 0, x, ldx, full, rows, out, ldo, [](auto mr, auto &&...a) {
    f32_rows512<decltype(mr)::value>(a...);
  });
  if (full > 0)
    for (; pf < pf_end; pf += 64) __builtin_prefetch(pf, 0, 3);
}

// wo.hpp's WoBatchFn for the AVX-512 tables: byte weights, and 4-bit codes in blocks of 16-64
// elements (f32_batch512_takes: others run 4 rows at a time through f32_512).
inline void f32_batch512(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out,
                         size_t ldo, float *scratch) noexcept {
  if (w.code == WoCode::Byte) {
    if (w.zps == nullptr && w.zp_const == 128) return f32_bytes_batch512<false>(w, x, ldx, rows, out, ldo, scratch);
    return f32_bytes_batch512<true>(w, x, ldx, rows, out, ldo, scratch);
  }
  const bool aff = w.code != WoCode::NF4 && w.zps != nullptr;
  switch (w.block) {
    case 16: return aff ? f32_nibble_batch512<1, true>(w, x, ldx, rows, out, ldo, scratch)
                        : f32_nibble_batch512<1, false>(w, x, ldx, rows, out, ldo, scratch);
    case 32: return aff ? f32_nibble_batch512<2, true>(w, x, ldx, rows, out, ldo, scratch)
                        : f32_nibble_batch512<2, false>(w, x, ldx, rows, out, ldo, scratch);
    default:  // not taken (f32_batch512_takes): the 4-row kernel, whatever the block
      return rows_by_four(w, true, x, ldx, 0, rows, out, ldo, [](auto mr, auto &&...a) {
        f32_rows512<decltype(mr)::value>(a...);
      });
  }
}

// WoKernels::f32_batch_takes of the AVX-512 tables: byte weights from 5 rows (kFusedBatchRows),
// 4-bit codes in blocks of 16-64 elements from 16 rows.
inline bool f32_batch512_takes(const WoPanelArgs &w, size_t rows) noexcept {
  if (w.code == WoCode::Byte) return rows >= 5;
  return nibble_tiles(w) && rows >= 16;
}

// out[r][f] for MR rows x PP features: MR * PP independent FMA chains, w and x each loaded once
// per 16 elements.
template <int MR, int PP>
void dots512(const float *x, size_t ldx, const float *w, size_t ldw, size_t K, float *out,
             size_t ldo) noexcept {
  __m512 acc[MR][PP];
  for (int m = 0; m < MR; ++m)
    for (int f = 0; f < PP; ++f) acc[m][f] = _mm512_setzero_ps();
  const size_t whole = K / 16;
  for (size_t t = 0; t < whole; ++t) {
    __m512 wv[PP];
    for (int f = 0; f < PP; ++f) wv[f] = _mm512_loadu_ps(w + f * ldw + 16 * t);
    for (int m = 0; m < MR; ++m) {
      const __m512 xv = _mm512_loadu_ps(x + m * ldx + 16 * t);
      for (int f = 0; f < PP; ++f) acc[m][f] = _mm512_fmadd_ps(xv, wv[f], acc[m][f]);
    }
  }
  if (K % 16 != 0) {
    const auto mk = static_cast<__mmask16>(mask_of(K - 16 * whole));
    for (int m = 0; m < MR; ++m) {
      const __m512 xv = _mm512_maskz_loadu_ps(mk, x + m * ldx + 16 * whole);
      for (int f = 0; f < PP; ++f)
        acc[m][f] = _mm512_mask3_fmadd_ps(xv, _mm512_maskz_loadu_ps(mk, w + f * ldw + 16 * whole),
                                          acc[m][f], mk);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int f = 0; f < PP; ++f) out[m * ldo + f] = reduce16(acc[m][f]);
}

template <int MR>
void dots512_rows(const float *x, size_t ldx, const float *w, size_t ldw, size_t feats, size_t K,
                  float *out, size_t ldo) noexcept {
  size_t f = 0;
  for (; f + 4 <= feats; f += 4) dots512<MR, 4>(x, ldx, w + f * ldw, ldw, K, out + f, ldo);
  switch (feats - f) {
    case 3: return dots512<MR, 3>(x, ldx, w + f * ldw, ldw, K, out + f, ldo);
    case 2: return dots512<MR, 2>(x, ldx, w + f * ldw, ldw, K, out + f, ldo);
    case 1: return dots512<MR, 1>(x, ldx, w + f * ldw, ldw, K, out + f, ldo);
    default: return;
  }
}

inline void dot512(const float *x, size_t ldx, size_t rows, const float *w, size_t ldw,
                   size_t feats, int64_t K, float *out, size_t ldo) noexcept {
  const auto k = static_cast<size_t>(K);
  size_t r = 0;
  for (; r + 6 <= rows; r += 6) dots512_rows<6>(x + r * ldx, ldx, w, ldw, feats, k, out + r * ldo, ldo);
  const float *xr = x + r * ldx;
  float *o = out + r * ldo;
  switch (rows - r) {
    case 5: return dots512_rows<5>(xr, ldx, w, ldw, feats, k, o, ldo);
    case 4: return dots512_rows<4>(xr, ldx, w, ldw, feats, k, o, ldo);
    case 3: return dots512_rows<3>(xr, ldx, w, ldw, feats, k, o, ldo);
    case 2: return dots512_rows<2>(xr, ldx, w, ldw, feats, k, o, ldo);
    case 1: return dots512_rows<1>(xr, ldx, w, ldw, feats, k, o, ldo);
    default: return;
  }
}

inline void dequant512(const WoPanelArgs &w, float *out, size_t ldo) noexcept {
  wo_prefetch_all(w);
  const auto K = static_cast<size_t>(w.K);
  const size_t cpb = static_cast<size_t>(w.block) / 16;
  const size_t chunks = (K + 15) / 16;
  if (w.code == WoCode::Byte) {
    for (size_t t0 = 0, blk = 0; t0 < chunks; t0 += cpb, ++blk)
      for (int p = 0; p < P; ++p) {
        const __m512i z8 = byte_zero512(w, blk, p);
        const __m512 sc = _mm512_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
        for (size_t t = t0; t < std::min(chunks, t0 + cpb); ++t)
          _mm512_storeu_ps(out + p * ldo + 16 * t, byte_values512(w, t, p, z8, sc));
      }
    return;
  }
  for (size_t t0 = 0, blk = 0; t0 < chunks; t0 += cpb, ++blk) {
    __m512 lut[P];
    for (int p = 0; p < P; ++p) lut[p] = lut512(w, blk, p);
    const size_t t1 = std::min(chunks, t0 + cpb);
    for (size_t t = t0; t < t1; ++t)
      for (int p = 0; p < P; ++p)
        _mm512_storeu_ps(out + p * ldo + 16 * t, _mm512_permutexvar_ps(lane_codes512(w, t, p), lut[p]));
  }
}

#endif  // __AVX512F__

#if defined(__AVX512VNNI__)

// [a x 8 | b x 8] as float lanes.
inline __m512 halves_ps(float a, float b) noexcept {
  return _mm512_mask_mov_ps(_mm512_set1_ps(a), 0xFF00, _mm512_set1_ps(b));
}
inline __m512i halves_epi32(int32_t a, int32_t b) noexcept {
  return _mm512_mask_set1_epi32(_mm512_set1_epi32(a), 0xFF00, b);
}

// The u8 operand of vpdpbusd for 4-bit codes (one in the low nibble of each byte): the codes,
// or NF4's integers + 128 (a vpshufb into kNF4U8).
template <WoCode Code>
struct VnniOperand {
  __m512i nf4 = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i *>(kNF4U8)));
  __m512i operator()(__m512i v) const noexcept {
    if constexpr (Code == WoCode::NF4) return _mm512_shuffle_epi8(nf4, v);
    else return v;
  }
};

// PP features from p0 (all four for one or two rows; two for more, so that the 2 * MR * PP
// sums stay in the 32 zmm registers). The code kind is a template parameter and a unit's chunks
// are counted, not divided: the loop had a branch on the kind and an integer division per
// 64-element chunk. A 4-bit group's two chunks (low and high nibbles) come from one load.
template <WoCode Code, int MR, int PP>
void int8_feat_vnni(const WoPanelArgs &w, const WoActs &a, int p0, float *out) noexcept {
  __m512 facc[MR][PP];
  __m512i iacc[MR][PP];
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < PP; ++p) {
      facc[m][p] = _mm512_setzero_ps();
      iacc[m][p] = _mm512_setzero_si512();
    }
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const VnniOperand<Code> operand;
  constexpr bool four_bit = Code != WoCode::Byte;
  // The u8 operand of a code byte or nibble.
  // The zero point in the u8 operand's terms, when every block shares it.
  const int32_t zk = Code == WoCode::NF4 ? 128 : w.zp_const;
  const size_t nc = w.chunks;
  for (size_t c = 0, unit = 0; c < nc; ++unit) {
    const size_t cend = nc - c < w.unit_chunks ? nc : c + w.unit_chunks;
    while (c < cend) {
      if (four_bit && (c & 1) == 0 && c + 1 < cend) {  // both nibbles of a group
        const uint8_t *src = w.codes + (c / 2) * P * 64;
        __m512i x0[MR], x1[MR];
        for (int m = 0; m < MR; ++m) {
          x0[m] = _mm512_loadu_si512(a.qx + m * a.qx_stride + 64 * c);
          x1[m] = _mm512_loadu_si512(a.qx + m * a.qx_stride + 64 * (c + 1));
        }
        for (int p = 0; p < PP; ++p) {
          const __m512i raw = _mm512_loadu_si512(src + (p0 + p) * 64);
          const __m512i lo = operand(_mm512_and_si512(raw, nib));
          const __m512i hi = operand(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nib));
          for (int m = 0; m < MR; ++m) {
            iacc[m][p] = _mm512_dpbusd_epi32(iacc[m][p], lo, x0[m]);
            iacc[m][p] = _mm512_dpbusd_epi32(iacc[m][p], hi, x1[m]);
          }
        }
        c += 2;
        continue;
      }
      const uint8_t *src = four_bit ? w.codes + (c / 2) * P * 64 : w.codes + c * P * 64;
      __m512i xq[MR];
      for (int m = 0; m < MR; ++m) xq[m] = _mm512_loadu_si512(a.qx + m * a.qx_stride + 64 * c);
      for (int p = 0; p < PP; ++p) {
        const __m512i raw = _mm512_loadu_si512(src + (p0 + p) * 64);
        __m512i u;
        if constexpr (four_bit)
          u = operand((c & 1) ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), nib) : _mm512_and_si512(raw, nib));
        else
          u = _mm512_xor_si512(raw, flip);
        for (int m = 0; m < MR; ++m) iacc[m][p] = _mm512_dpbusd_epi32(iacc[m][p], u, xq[m]);
      }
      ++c;
    }
    // The unit ends: each lane's integer sum into its float sum.
    const auto mk = static_cast<__mmask16>(c == nc ? w.last_unit_lanes : 0xFFFFu);
    __m512i sums[MR], corr[MR];
    __m512 sxv[MR];
    for (int m = 0; m < MR; ++m) {
      sums[m] = _mm512_loadu_si512(a.sums + m * a.unit_stride + unit * 16);
      sxv[m] = _mm512_loadu_ps(a.sxv + m * a.unit_stride + unit * 16);
      corr[m] = _mm512_mullo_epi32(sums[m], _mm512_set1_epi32(zk));
    }
    for (int p = 0; p < PP; ++p) {
      __m512 sw;
      __m512i zv = _mm512_setzero_si512();
      if (w.half_units) {
        sw = halves_ps(w.scales[(2 * unit) * P + p0 + p], w.scales[(2 * unit + 1) * P + p0 + p]);
        if (w.zps != nullptr) {
          const int32_t z0 = zc_of(w, 2 * unit, p0 + p), z1 = zc_of(w, 2 * unit + 1, p0 + p);
          zv = halves_epi32(z0, z1);
        }
      } else {
        sw = _mm512_set1_ps(w.scales[unit * P + p0 + p]);
        if (w.zps != nullptr) zv = _mm512_set1_epi32(zc_of(w, unit, p0 + p));
      }
      for (int m = 0; m < MR; ++m) {
        const __m512i cm = w.zps != nullptr ? _mm512_mullo_epi32(sums[m], zv) : corr[m];
        const __m512i ip = _mm512_sub_epi32(iacc[m][p], cm);
        const __m512 d = _mm512_mul_ps(sxv[m], sw);
        facc[m][p] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(ip), d, facc[m][p], mk);
        iacc[m][p] = _mm512_setzero_si512();
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < PP; ++p) out[m * P + p0 + p] = reduce16(facc[m][p]);
}

template <WoCode Code, int MR>
void int8_rows_vnni(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  constexpr int PP = MR <= 2 ? P : 2;
  for (int p0 = 0; p0 < P; p0 += PP) int8_feat_vnni<Code, MR, PP>(w, a, p0, out);
}

// Whether int8_batch_vnni takes the panel: one zero point, and for 4-bit codes whole groups
// (an even number of chunks) in units of one chunk (B = 32, 64) or of whole groups.
inline bool int8_batch_fits(const WoPanelArgs &w) noexcept {
  if (w.zps != nullptr) return false;
  if (w.code == WoCode::Byte) return true;
  return w.chunks % 2 == 0 && (w.half_units || w.unit_chunks == 1 || w.unit_chunks % 2 == 0);
}

// Batches (2 to 4 rows) with one zero point for every block (symmetric i4, NF4, i8; see
// int8_batch_fits): the general kernel above spends about 3.5 instructions besides each
// vpdpbusd on work that depends on the row or the feature alone, and its loop over chunks,
// with two paths (a whole group, or one chunk), had its sums copied between registers and the
// stack at every chunk. Here, per slice of kSlice units, once per call:
//  - each row's integer start, -zk * (the lane's sum of qx), stored: a unit's integer sums
//    are loaded from it (a load, not an ALU instruction) and vpdpbusd adds to them;
//  - each row and feature's sx * sw (one unit's four features from one 4-float product),
//    stored, so that the unit's end is a vcvtdq2ps and an fma with a broadcast operand per
//    row and feature (B = 32, whose lanes hold two blocks: the product per row and feature,
//    as before);
// and each layout of units (one chunk, one group, whole groups, bytes) has its own loop with
// one path through its body. The float sums of the features not in the registers wait in
// memory between slices. Every value is the general kernel's: the same products, in the same
// order per lane. On an Emerald Rapids Xeon (family 6, model 207; one thread, 4096^2, batch
// 16) the int8 mode took 1.1-1.3x less time than with the general kernel; at block 128 it
// still runs at 0.18 of the vpdpbusd peak measured in the same run (kernels/README.md).
template <WoCode Code, int MR>
void int8_batch_vnni(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  constexpr int PP = MR <= 2 ? P : 2;
  constexpr size_t kSlice = 16;
  constexpr bool four_bit = Code != WoCode::Byte;
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const VnniOperand<Code> operand;
  const int32_t zk = Code == WoCode::NF4 ? 128 : w.zp_const;
  const __m512i zv = _mm512_set1_epi32(zk);
  const size_t nc = w.chunks, uc = w.unit_chunks;
  const size_t units = w.half_units ? nc : (nc + uc - 1) / uc;
  // A lane's sum of qx over a unit is at most 4 * 127 * uc in magnitude: within int16 for
  // uc <= 64, where -sum * zk is one vpmaddwd (zk < 256 over a zero high half; see
  // int8_one_vnni), else a vpmulld.
  const bool madd = w.half_units || uc <= 64;
  alignas(64) int32_t start[kSlice][MR][16];
  alignas(64) float dd[kSlice][MR][P];
  alignas(64) float fsum[MR][P][16] = {};
  for (size_t u0 = 0; u0 < units; u0 += kSlice) {
    const size_t u1 = std::min(units, u0 + kSlice);
    for (size_t u = u0; u < u1; ++u)
      for (int m = 0; m < MR; ++m) {
        const __m512i s = _mm512_loadu_si512(a.sums + m * a.unit_stride + u * 16);
        const __m512i st = madd ? _mm512_madd_epi16(_mm512_sub_epi32(_mm512_setzero_si512(), s), zv)
                                : _mm512_mullo_epi32(s, _mm512_set1_epi32(-zk));
        _mm512_storeu_si512(start[u - u0][m], st);
        if (!w.half_units)
          _mm_storeu_ps(dd[u - u0][m], _mm_mul_ps(_mm_set1_ps(a.sxv[m * a.unit_stride + u * 16]),
                                                  _mm_loadu_ps(w.scales + u * P)));
      }
    for (int p0 = 0; p0 < P; p0 += PP) {
      __m512 facc[MR][PP];
      for (int m = 0; m < MR; ++m)
        for (int p = 0; p < PP; ++p) facc[m][p] = _mm512_loadu_ps(fsum[m][p0 + p]);
      __m512i acc[MR][PP];
      // Each loop below has one path through its body, so that the sums stay in registers (a
      // loop whose chunks took either of two paths had its sums copied between registers and
      // the stack at every chunk).
      auto begin = [&](size_t u) __attribute__((always_inline)) {
        for (int m = 0; m < MR; ++m) {
          const __m512i st = _mm512_loadu_si512(start[u - u0][m]);
          for (int p = 0; p < PP; ++p) acc[m][p] = st;
        }
      };
      // Chunk c's u8 operands v[p] into the sums.
      auto madds = [&](size_t c, const __m512i (&v)[PP]) __attribute__((always_inline)) {
        for (int m = 0; m < MR; ++m) {
          const __m512i x = _mm512_loadu_si512(a.qx + m * a.qx_stride + 64 * c);
          for (int p = 0; p < PP; ++p) acc[m][p] = _mm512_dpbusd_epi32(acc[m][p], v[p], x);
        }
      };
      auto finish = [&](size_t u) __attribute__((always_inline)) {
        const auto mk = static_cast<__mmask16>(u + 1 == units ? w.last_unit_lanes : 0xFFFFu);
        for (int p = 0; p < PP; ++p) {
          if (w.half_units) {
            const __m512 sw = halves_ps(w.scales[(2 * u) * P + p0 + p], w.scales[(2 * u + 1) * P + p0 + p]);
            for (int m = 0; m < MR; ++m) {
              const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(a.sxv + m * a.unit_stride + u * 16), sw);
              facc[m][p] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(acc[m][p]), d, facc[m][p], mk);
            }
          } else {
            for (int m = 0; m < MR; ++m)
              facc[m][p] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(acc[m][p]),
                                                 _mm512_set1_ps(dd[u - u0][m][p0 + p]), facc[m][p], mk);
          }
        }
      };
      if constexpr (four_bit) {
        if (uc == 1) {
          // A unit per chunk (B = 32 or 64): group g's low nibbles are unit 2g, its high 2g + 1
          // (u0 is even: kSlice is).
          for (size_t u = u0; u < u1; u += 2) {
            const uint8_t *src = w.codes + (u / 2) * P * 64 + p0 * 64;
            __m512i v[PP];
            begin(u);
            for (int p = 0; p < PP; ++p) v[p] = operand(_mm512_and_si512(_mm512_loadu_si512(src + p * 64), nib));
            madds(u, v);
            finish(u);
            begin(u + 1);
            for (int p = 0; p < PP; ++p)
              v[p] = operand(_mm512_and_si512(_mm512_srli_epi16(_mm512_loadu_si512(src + p * 64), 4), nib));
            madds(u + 1, v);
            finish(u + 1);
          }
        } else {
          // Group g (chunks 2g and 2g + 1) into the sums.
          auto group = [&](size_t g) __attribute__((always_inline)) {
            const uint8_t *src = w.codes + g * P * 64 + p0 * 64;
            __m512i lo[PP], hi[PP];
            for (int p = 0; p < PP; ++p) {
              const __m512i raw = _mm512_loadu_si512(src + p * 64);
              lo[p] = operand(_mm512_and_si512(raw, nib));
              hi[p] = operand(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nib));
            }
            madds(2 * g, lo);
            madds(2 * g + 1, hi);
          };
          if (uc == 2) {  // B = 128: a group a unit, no loop inside the unit
            for (size_t u = u0; u < u1; ++u) {
              begin(u);
              group(u);
              finish(u);
            }
          } else {  // whole groups a unit (uc even)
            for (size_t u = u0; u < u1; ++u) {
              begin(u);
              const size_t g1 = std::min(nc, (u + 1) * uc) / 2;
              for (size_t g = u * uc / 2; g < g1; ++g) group(g);
              finish(u);
            }
          }
        }
      } else {
        for (size_t u = u0; u < u1; ++u) {
          begin(u);
          const size_t c1 = std::min(nc, (u + 1) * uc);
          for (size_t c = u * uc; c < c1; ++c) {
            const uint8_t *src = w.codes + c * P * 64 + p0 * 64;
            __m512i v[PP];
            for (int p = 0; p < PP; ++p) v[p] = _mm512_xor_si512(_mm512_loadu_si512(src + p * 64), flip);
            madds(c, v);
          }
          finish(u);
        }
      }
      for (int m = 0; m < MR; ++m)
        for (int p = 0; p < PP; ++p) _mm512_storeu_ps(fsum[m][p0 + p], facc[m][p]);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < P; ++p) out[m * P + p] = reduce16(_mm512_loadu_ps(fsum[m][p]));
}

// Batch 1, the panel's four features together, for the shapes of LLM layers (4-bit codes:
// K a multiple of 128; bytes: of 64). Per unit, each feature's integer sums start from the
// zero-point term, -z * (the lane's sum of qx), so a unit's end is one vcvtdq2ps, one vmulps
// (sx * sw) and one fma per feature: the general kernel subtracted the term, rebuilt scale
// vectors from scalars, and loaded each 4-bit group twice when a unit was one chunk. A 4-bit
// group (both nibbles: 2 chunks) is loaded once per feature, for two units (B = 32, 64) or
// inside one (B >= 128). B = 32: a unit's two blocks' scales come as one 8-float load,
// permuted into each feature's [sw(2u) x 8 | sw(2u + 1) x 8].
template <WoCode Code>
void int8_one_vnni(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  constexpr bool four_bit = Code != WoCode::Byte;
  __m512 facc[P];
  for (auto &f : facc) f = _mm512_setzero_ps();
  const __m512i nib = _mm512_set1_epi8(0x0F);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const VnniOperand<Code> operand;
  const int32_t zk = Code == WoCode::NF4 ? 128 : w.zp_const;
  const __m512i negz = _mm512_set1_epi32(-zk);
  __m512i half_idx[P];
  for (int p = 0; p < P; ++p)
    half_idx[p] = _mm512_mask_set1_epi32(_mm512_set1_epi32(p), 0xFF00, 4 + p);
  // The integer sums' start for unit u and feature p: -zc * sums.
  auto start = [&](size_t u, const __m512i &sums, const __m512i &common, int p) {
    if (w.zps == nullptr) return common;
    __m512i z;
    if (w.half_units)
      z = halves_epi32(-zc_of(w, 2 * u, p), -zc_of(w, 2 * u + 1, p));
    else
      z = _mm512_set1_epi32(-zc_of(w, u, p));
    return _mm512_mullo_epi32(sums, z);
  };
  // Unit u's integer sums into the float sums.
  auto finish = [&](size_t u, const __m512i *iacc) {
    const __m512 sx = _mm512_loadu_ps(a.sxv + u * 16);
    if (w.half_units) {
      const __m512 s8 = _mm512_maskz_loadu_ps(0x00FF, w.scales + 2 * u * P);
      for (int p = 0; p < P; ++p) {
        const __m512 d = _mm512_mul_ps(sx, _mm512_permutexvar_ps(half_idx[p], s8));
        facc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iacc[p]), d, facc[p]);
      }
    } else {
      for (int p = 0; p < P; ++p) {
        const __m512 d = _mm512_mul_ps(sx, _mm512_set1_ps(w.scales[u * P + static_cast<size_t>(p)]));
        facc[p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(iacc[p]), d, facc[p]);
      }
    }
  };
  const size_t nc = w.chunks;
  // The next panels' bytes requested into L2 a few lines per group read (the driver's burst of
  // a whole panel's requests at once left this loop waiting on its own loads).
  WoPrefetcher pf(w, four_bit ? nc / 2 : nc);
  auto request = [&]() { pf.step(); };
  if (four_bit && w.unit_chunks == 1) {
    // Two units per group.
    for (size_t c = 0; c < nc; c += 2) {
      request();
      const uint8_t *src = w.codes + (c / 2) * P * 64;
      const __m512i x0 = _mm512_loadu_si512(a.qx + 64 * c), x1 = _mm512_loadu_si512(a.qx + 64 * (c + 1));
      const __m512i s0 = _mm512_loadu_si512(a.sums + c * 16), s1 = _mm512_loadu_si512(a.sums + (c + 1) * 16);
      __m512i z0[P], z1[P];  // each feature's start for units c and c + 1
      if (w.zps == nullptr) {
        const __m512i c0 = _mm512_mullo_epi32(s0, negz), c1 = _mm512_mullo_epi32(s1, negz);
        for (int p = 0; p < P; ++p) {
          z0[p] = c0;
          z1[p] = c1;
        }
      } else {
        // The two units' zero points (blocks 4c/2 .. +3 at B = 32, c and c + 1 at B = 64) as
        // dwords from one load, spread per feature by a permute: [block's z x 8 | next's] or
        // the block's z x 16. Then -z * sums.
        // (4 blocks of 4 bytes at B = 32, 2 at B = 64: exactly the units' own bytes.)
        const auto *zp = reinterpret_cast<const __m128i *>(w.zps + (w.half_units ? 2 * c : c) * P);
        const __m512i zz = _mm512_cvtepu8_epi32(w.half_units ? _mm_loadu_si128(zp) : _mm_loadl_epi64(zp));
        const __m512i n0 = _mm512_sub_epi32(_mm512_setzero_si512(), s0);
        const __m512i n1 = _mm512_sub_epi32(_mm512_setzero_si512(), s1);
        for (int p = 0; p < P; ++p) {
          const __m512i i0 = w.half_units ? half_idx[p] : _mm512_set1_epi32(p);
          const __m512i i1 = w.half_units ? _mm512_add_epi32(half_idx[p], _mm512_set1_epi32(8))
                                          : _mm512_set1_epi32(4 + p);
          // -sums * z by vpmaddwd: a lane's sum over one chunk is at most 4 * 127 in magnitude,
          // so its int32 is its low int16 (sign-extended), and z's dword is z (< 256) over a
          // zero high half: the pair sum is exactly -sum * z (a vpmulld costs more).
          z0[p] = _mm512_madd_epi16(n0, _mm512_permutexvar_epi32(i0, zz));
          z1[p] = _mm512_madd_epi16(n1, _mm512_permutexvar_epi32(i1, zz));
        }
      }
      __m512i i0[P], i1[P];
      for (int p = 0; p < P; ++p) {
        const __m512i raw = _mm512_loadu_si512(src + p * 64);
        const __m512i lo = operand(_mm512_and_si512(raw, nib));
        const __m512i hi = operand(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nib));
        i0[p] = _mm512_dpbusd_epi32(z0[p], lo, x0);
        i1[p] = _mm512_dpbusd_epi32(z1[p], hi, x1);
      }
      finish(c, i0);
      finish(c + 1, i1);
    }
  } else {
    const size_t uc = w.unit_chunks;
    for (size_t c = 0, u = 0; c < nc; ++u) {
      const size_t end = std::min(nc, c + uc);
      const __m512i su = _mm512_loadu_si512(a.sums + u * 16);
      const __m512i cu = _mm512_mullo_epi32(su, negz);
      __m512i acc[P];
      for (int p = 0; p < P; ++p) acc[p] = start(u, su, cu, p);
      if constexpr (four_bit) {
        for (; c < end; c += 2) {  // uc even, or a whole K: chunks in pairs (nc is even)
          request();
          const uint8_t *src = w.codes + (c / 2) * P * 64;
          const __m512i x0 = _mm512_loadu_si512(a.qx + 64 * c), x1 = _mm512_loadu_si512(a.qx + 64 * (c + 1));
          for (int p = 0; p < P; ++p) {
            const __m512i raw = _mm512_loadu_si512(src + p * 64);
            acc[p] = _mm512_dpbusd_epi32(acc[p], operand(_mm512_and_si512(raw, nib)), x0);
            acc[p] = _mm512_dpbusd_epi32(acc[p], operand(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nib)), x1);
          }
        }
      } else {
        for (; c < end; ++c) {
          request();
          const uint8_t *src = w.codes + c * P * 64;
          const __m512i xq = _mm512_loadu_si512(a.qx + 64 * c);
          for (int p = 0; p < P; ++p)
            acc[p] = _mm512_dpbusd_epi32(acc[p], _mm512_xor_si512(_mm512_loadu_si512(src + p * 64), flip), xq);
        }
      }
      finish(u, acc);
    }
  }
  for (int p = 0; p < P; ++p) out[p] = reduce16(facc[p]);
}

template <WoCode Code>
void int8_code_vnni(const WoPanelArgs &w, const WoActs &a, size_t rows, float *out) noexcept {
  if (rows > 1) wo_prefetch_all(w);
  switch (rows) {
    case 1:
      if (int8_one_fits(w)) return int8_one_vnni<Code>(w, a, out);
      wo_prefetch_all(w);
      return int8_rows_vnni<Code, 1>(w, a, out);
    case 2: return int8_batch_fits(w) ? int8_batch_vnni<Code, 2>(w, a, out) : int8_rows_vnni<Code, 2>(w, a, out);
    case 3: return int8_batch_fits(w) ? int8_batch_vnni<Code, 3>(w, a, out) : int8_rows_vnni<Code, 3>(w, a, out);
    default: return int8_batch_fits(w) ? int8_batch_vnni<Code, 4>(w, a, out) : int8_rows_vnni<Code, 4>(w, a, out);
  }
}

inline void int8_vnni(const WoPanelArgs &w, const WoActs &a, size_t rows, float *out) noexcept {
  switch (w.code) {
    case WoCode::NF4: return int8_code_vnni<WoCode::NF4>(w, a, rows, out);
    case WoCode::Byte: return int8_code_vnni<WoCode::Byte>(w, a, rows, out);
    default: return int8_code_vnni<WoCode::Int4>(w, a, rows, out);
  }
}

#endif  // __AVX512VNNI__

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// The per-token mode on AVX-512 VNNI (the avx512_vnni table): token256's loops with vpdpbusd on
// 256-bit vectors, so that a 32-byte group and a plane's 32 activations meet in the layout's own
// order. c (0..2, unsigned) times qx (signed), four products a lane added to the int32 sums
// directly (wrapping: exact modulo 2^32, and sum(c * qx) - xsum = sum(v * qx) fits int32 for
// K <= kMaxK): no 16-bit stage, so a group and feature takes a load, 3 shifts, 4 ands and 4
// vpdpbusd (token_rows256: 4 vpmaddubsw and 4 additions, and a widening every 16 groups). On
// Zen 4 a 256-bit vpdpbusd does half a 512-bit one's products at twice its rate.
// One row of activations, F features; each feature's four planes in their own sums (one
// vpdpbusd a group in each dependency chain).
template <int F>
inline void token_rows_vnni(const uint8_t *w, size_t row_bytes, size_t groups, const int8_t *qx,
                            int32_t xsum, int32_t *acc, uintptr_t next) noexcept {
  const __m256i m3 = _mm256_set1_epi8(3);
  __m256i s[F][4];
  for (int f = 0; f < F; ++f)
    for (int p = 0; p < 4; ++p) s[f][p] = _mm256_setzero_si256();
  for (size_t g = 0; g < groups; ++g) {
    for (size_t l = 0; l < F * 32; l += 64)
      _mm_prefetch(reinterpret_cast<const char *>(next + F * 32 * g + l), _MM_HINT_T1);
    const auto *xg = reinterpret_cast<const __m256i *>(qx + 128 * g);
    const __m256i x0 = _mm256_loadu_si256(xg), x1 = _mm256_loadu_si256(xg + 1);
    const __m256i x2 = _mm256_loadu_si256(xg + 2), x3 = _mm256_loadu_si256(xg + 3);
    for (int f = 0; f < F; ++f) {
      const __m256i v = _mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(w + static_cast<size_t>(f) * row_bytes + 32 * g));
      s[f][0] = _mm256_dpbusd_epi32(s[f][0], _mm256_and_si256(_mm256_srli_epi16(v, 6), m3), x0);
      s[f][1] = _mm256_dpbusd_epi32(s[f][1], _mm256_and_si256(_mm256_srli_epi16(v, 4), m3), x1);
      s[f][2] = _mm256_dpbusd_epi32(s[f][2], _mm256_and_si256(_mm256_srli_epi16(v, 2), m3), x2);
      s[f][3] = _mm256_dpbusd_epi32(s[f][3], _mm256_and_si256(v, m3), x3);
    }
  }
  for (int f = 0; f < F; ++f) {
    const __m256i t = _mm256_add_epi32(_mm256_add_epi32(s[f][0], s[f][1]), _mm256_add_epi32(s[f][2], s[f][3]));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    acc[f] = wrap_sub(_mm_cvtsi128_si32(h), xsum);
  }
}
#endif  // __AVX512VNNI__ && __AVX512VL__

#if defined(__AVX2__)

// The 16 lanes as two ymm: lanes 0-7 and 8-15.
inline float reduce16(__m256 lo, __m256 hi) noexcept {
  const __m256 a = _mm256_add_ps(lo, hi);
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_shuffle_ps(b, b, 1));
  return _mm_cvtss_f32(b);
}

// Lanes i < n of a ymm as an all-ones mask.
inline __m256i lanes8(size_t n) noexcept {
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(n > 8 ? 8 : n)), iota);
}

// The f32 mode's 4-bit codes on AVX2 are in the lane layout (wo.hpp), read as ymm: a group's
// 64 bytes of a feature are two ymm of dwords, lanes 0-7 (dwords 0-7) and lanes 8-15, and
// chunk 8g + q's codes are the 4 bits at lane_shift(q) of every dword. So one load serves 64
// elements, and a code needs a shift and an and (neither for some q) instead of a widening
// load, a shift and an and: on Zen 3, 1.7-2.0 cycles per 8 weights in a loop that takes 3.1-3.2
// on the packed layout (a microbenchmark of the two inner loops, weights in L1).
constexpr int lane_shift(int q) { return 8 * (q & 3) + 4 * (q >> 2); }

// A block's values: NF4 as a table of its 16 values (entries 0-7 and 8-15); the integer codes
// as their zero point (a float) and scale, (float)c - (float)zc (exact: both are small
// integers) times the scale, the dequantize rule's (float)(c - zc) * scale without a table
// (two vpermps and a blend per 8 elements are slower on Zen 3 than the conversion).
template <bool NF4>
struct LaneVals {
  __m256 a, b;
};

template <bool NF4>
inline LaneVals<NF4> lane_vals(const WoPanelArgs &w, size_t blk, int p) noexcept {
  const __m256 s = _mm256_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
  if constexpr (NF4)
    return {_mm256_mul_ps(_mm256_loadu_ps(ref::kNF4Codebook), s),
            _mm256_mul_ps(_mm256_loadu_ps(ref::kNF4Codebook + 8), s)};
  else
    return {_mm256_set1_ps(static_cast<float>(zc_of(w, blk, p))), s};
}

// The dequantized values of chunk q's codes in the dwords d. NF4: vpermps reads the low 3 bits
// of each lane, and bit 3, moved to the sign, picks the table's half.
template <bool NF4, int Q>
[[gnu::always_inline]] inline __m256 lane_value(const LaneVals<NF4> &t, __m256i d) noexcept {
  constexpr int s = lane_shift(Q);
  if constexpr (NF4) {
    const __m256i idx = s == 0 ? d : _mm256_srli_epi32(d, s);
    const __m256i top = s == 28 ? d : _mm256_slli_epi32(d, 28 - s);
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(t.a, idx), _mm256_permutevar8x32_ps(t.b, idx),
                            _mm256_castsi256_ps(top));
  } else {
    const __m256i nib = _mm256_set1_epi32(15);
    const __m256i c = s == 28 ? _mm256_srli_epi32(d, 28)
                              : _mm256_and_si256(s == 0 ? d : _mm256_srli_epi32(d, s), nib);
    return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(c), t.a), t.b);
  }
}

// The two ymm of feature p's codes in group g.
inline void lane_load(const WoPanelArgs &w, size_t g, int p, __m256i *d) noexcept {
  const uint8_t *src = w.codes + (g * P + static_cast<size_t>(p)) * 64;
  d[0] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src));
  d[1] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + 32));
}

// A feature's block as the chunks go by: the values of chunk t's block, t in increasing order.
template <bool NF4>
struct LaneBlocks {
  const WoPanelArgs *w = nullptr;
  int p = 0;
  size_t cpb = 1, blk = 0, left = 0;
  LaneVals<NF4> v{};
  // From chunk t0 of feature p on.
  void start(const WoPanelArgs &wa, int pa, size_t t0) noexcept {
    w = &wa;
    p = pa;
    cpb = static_cast<size_t>(wa.block) / 16;
    blk = t0 / cpb;
    left = cpb - t0 % cpb;
    v = lane_vals<NF4>(wa, blk, pa);
  }
  // Called once per chunk, before its values are used.
  void next() noexcept {
    if (left == 0) {
      left = cpb;
      v = lane_vals<NF4>(*w, ++blk, p);
    }
    --left;
  }
};

// Chunk t (whole) of MR rows x PP features, values(pp, h) giving feature pp's 8 weights of half
// h (lanes 8h .. 8h + 7). Lane l of the 16 takes element 16t + l of every chunk t in order, as
// f32_rows512 and ref::dot do.
template <int MR, int PP, class Values>
[[gnu::always_inline]] inline void rows_chunk(const float *x, size_t ldx, size_t t, Values &&values,
                                              __m256 (&acc)[MR][PP][2]) noexcept {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    __m256 xv[MR];
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) xv[m] = _mm256_loadu_ps(x + m * ldx + 16 * t + 8 * h);
#pragma GCC unroll 2
    for (int pp = 0; pp < PP; ++pp) {
      const __m256 wv = values(pp, h);
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) acc[m][pp][h] = _mm256_fmadd_ps(xv[m], wv, acc[m][pp][h]);
    }
  }
}

// The same for the last, partial chunk (rest = K - 16t elements), with masks: lanes past K
// keep their sums' bits.
template <int MR, int PP, class Values>
inline void rows_chunk_masked(const float *x, size_t ldx, size_t t, size_t rest, Values &&values,
                              __m256 (&acc)[MR][PP][2]) noexcept {
  for (int h = 0; h < 2; ++h) {
    const __m256i mk = lanes8(rest > 8 * static_cast<size_t>(h) ? rest - 8 * static_cast<size_t>(h) : 0);
    for (int pp = 0; pp < PP; ++pp) {
      const __m256 wv = values(pp, h);
      for (int m = 0; m < MR; ++m) {
        const __m256 f = _mm256_fmadd_ps(_mm256_maskload_ps(x + m * ldx + 16 * t + 8 * h, mk), wv, acc[m][pp][h]);
        acc[m][pp][h] = _mm256_blendv_ps(acc[m][pp][h], f, _mm256_castsi256_ps(mk));
      }
    }
  }
}

// The lane layout's walk: chunk(q, t, d, v) for chunks t of [t0, t1) (t0 a multiple of 8) in
// order, with q = t % 8 known when compiling (std::integral_constant), d the group's codes
// ([PP][2]) and v the values of the chunk's block for features p0 .. p0 + PP - 1.
// - Blocks of 1, 2 or 4 chunks, or of whole groups (B a multiple of 128), over whole groups:
//   a block's values are made where it starts, at a place of the unrolled group known when
//   compiling, with no other branch in the loop.
// - Other blocks (48, 80, ...) and the last group if t1 ends inside one: LaneBlocks, a counter
//   per chunk.
// pf.step() once per group.
template <int PP, bool NF4, int CPB, class Chunk, int... Q>
[[gnu::always_inline]] inline void lane_groups(const WoPanelArgs &w, int p0, size_t g0, size_t g1, WoPrefetcher &pf, Chunk &chunk,
                 std::integer_sequence<int, Q...>) noexcept {
  const size_t gpb = CPB == 8 ? static_cast<size_t>(w.block) / 128 : 1;  // groups per block
  LaneVals<NF4> v[PP] = {};
  size_t blk = g0 / gpb, left = CPB == 8 && g0 % gpb != 0 ? gpb - g0 % gpb : 0;
  if (left != 0) {  // g0 inside a block (a walk from a later slice or the last chunk)
    for (int pp = 0; pp < PP; ++pp) v[pp] = lane_vals<NF4>(w, blk, p0 + pp);
    ++blk;
  }
  for (size_t g = g0; g < g1; ++g) {
    pf.step();
    __m256i d[PP][2];
    for (int pp = 0; pp < PP; ++pp) lane_load(w, g, p0 + pp, d[pp]);
    if constexpr (CPB == 8) {
      if (left == 0) {
        for (int pp = 0; pp < PP; ++pp) v[pp] = lane_vals<NF4>(w, blk, p0 + pp);
        left = gpb;
        ++blk;
      }
      --left;
    }
    auto one = [&](auto qc) __attribute__((always_inline)) {
      constexpr int q = decltype(qc)::value;
      if constexpr (CPB < 8 && q % CPB == 0)
        for (int pp = 0; pp < PP; ++pp) v[pp] = lane_vals<NF4>(w, (8 * g + q) / CPB, p0 + pp);
      chunk(qc, 8 * g + q, d, v);
    };
    (one(std::integral_constant<int, Q>{}), ...);
  }
}

template <int PP, bool NF4, class Chunk, int... Q>
[[gnu::always_inline]] inline void lane_walk(const WoPanelArgs &w, int p0, size_t t0, size_t t1, WoPrefetcher &pf, Chunk &&chunk,
               std::integer_sequence<int, Q...> qs) noexcept {
  size_t g = t0 / 8;
  const size_t gw = t1 / 8;  // groups whose chunks are all below t1
  switch (w.block % 128 == 0 ? 128 : w.block) {
    case 16: lane_groups<PP, NF4, 1>(w, p0, g, gw, pf, chunk, qs); g = gw; break;
    case 32: lane_groups<PP, NF4, 2>(w, p0, g, gw, pf, chunk, qs); g = gw; break;
    case 64: lane_groups<PP, NF4, 4>(w, p0, g, gw, pf, chunk, qs); g = gw; break;
    case 128: lane_groups<PP, NF4, 8>(w, p0, g, gw, pf, chunk, qs); g = gw; break;
    default: break;
  }
  if (8 * g >= t1) return;
  LaneBlocks<NF4> blk[PP];
  for (int pp = 0; pp < PP; ++pp) blk[pp].start(w, p0 + pp, 8 * g);
  for (; 8 * g < t1; ++g) {
    pf.step();
    __m256i d[PP][2];
    for (int pp = 0; pp < PP; ++pp) lane_load(w, g, p0 + pp, d[pp]);
    auto one = [&](auto qc) __attribute__((always_inline)) {
      const size_t t = 8 * g + decltype(qc)::value;
      if (t >= t1) return;
      LaneVals<NF4> v[PP];
      for (int pp = 0; pp < PP; ++pp) {
        blk[pp].next();
        v[pp] = blk[pp].v;
      }
      chunk(qc, t, d, v);
    };
    (one(std::integral_constant<int, Q>{}), ...);
  }
}

using LaneQs = std::integer_sequence<int, 0, 1, 2, 3, 4, 5, 6, 7>;

// MR rows x PP features of the f32 mode (PP features at a time: 16 ymm cannot hold four
// features' sums, codes and values at once; two for a single row, so that four FMA chains hide
// the latency).
template <int MR, int PP, bool NF4>
void f32_lane256(const WoPanelArgs &w, const float *x, size_t ldx, int p0, float *out, WoPrefetcher &pf) noexcept {
  __m256 acc[MR][PP][2];
  for (int m = 0; m < MR; ++m)
    for (int pp = 0; pp < PP; ++pp) acc[m][pp][0] = acc[m][pp][1] = _mm256_setzero_ps();
  const auto K = static_cast<size_t>(w.K);
  const size_t whole = K / 16;
  lane_walk<PP, NF4>(w, p0, 0, whole, pf, [&](auto qc, size_t t, const __m256i (&d)[PP][2], const LaneVals<NF4> (&v)[PP]) __attribute__((always_inline)) {
    rows_chunk<MR, PP>(x, ldx, t, [&](int pp, int h) __attribute__((always_inline)) {
      return lane_value<NF4, decltype(qc)::value>(v[pp], d[pp][h]);
    }, acc);
  }, LaneQs{});
  if (K % 16 != 0) {  // the last, partial chunk (its group's step comes again: harmless)
    const size_t g = whole / 8;
    WoPrefetcher none(WoPanelArgs{}, 0);
    lane_walk<PP, NF4>(w, p0, 8 * g, whole + 1, none, [&](auto qc, size_t t, const __m256i (&d)[PP][2], const LaneVals<NF4> (&v)[PP]) {
      if (t == whole)
        rows_chunk_masked<MR, PP>(x, ldx, t, K - 16 * t, [&](int pp, int h) {
          return lane_value<NF4, decltype(qc)::value>(v[pp], d[pp][h]);
        }, acc);
    }, LaneQs{});
  }
  for (int m = 0; m < MR; ++m)
    for (int pp = 0; pp < PP; ++pp) out[m * P + p0 + pp] = reduce16(acc[m][pp][0], acc[m][pp][1]);
}

// Byte weights in the f32 mode on AVX2 (W8A16; `WoKernels::f32_bytes`), f32_bytes512's rule on
// ymm: 8 stored bytes w8 at src sign-extended by one widening load, less the block's z8 (Z),
// converted and multiplied by the block's scale: (float)(q - z) * s exactly (w8 - z8 = q - z),
// then each lane's fma in order.
template <bool Z>
[[gnu::always_inline]] inline __m256 byte_values256(const uint8_t *src, __m256i z8, __m256 s) noexcept {
  __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(src)));
  if constexpr (Z) q = _mm256_sub_epi32(q, z8);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(q), s);
}

// Half h of chunk t of feature p, in the byte layout (wo.hpp: a group of 4 chunks of a feature
// is 64 contiguous bytes, the panel's features side by side).
inline const uint8_t *byte_src(const WoPanelArgs &w, size_t t, int h, int p) noexcept {
  return w.codes + ((t >> 2) * P + static_cast<size_t>(p)) * 64 + 16 * (t & 3) + 8 * static_cast<size_t>(h);
}

// MR rows x PP features (as f32_lane256). A feature's group of 4 chunks is 64 contiguous bytes,
// so whole groups run with the chunks' offsets known when compiling (one pointer a group; the
// chunk-by-chunk address arithmetic had cost as many instructions as the rule), a block's zero
// points and scales made where it starts (a counter per chunk: any block of whole chunks); the
// last group's chunks one by one, the partial chunk with masks.
template <int MR, int PP, bool Z>
void f32_bytes256(const WoPanelArgs &w, const float *x, size_t ldx, int p0, float *out, WoPrefetcher &pf) noexcept {
  __m256 acc[MR][PP][2];
  for (int m = 0; m < MR; ++m)
    for (int pp = 0; pp < PP; ++pp) acc[m][pp][0] = acc[m][pp][1] = _mm256_setzero_ps();
  const auto K = static_cast<size_t>(w.K);
  const size_t cpb = static_cast<size_t>(w.block) / 16;
  const size_t chunks = (K + 15) / 16, whole = K / 16;
  __m256i z8[PP];
  __m256 sc[PP];
  size_t blk = 0, left = 0;
  auto next = [&]() __attribute__((always_inline)) {  // before each chunk
    if (left == 0) {
      for (int pp = 0; pp < PP; ++pp) {
        z8[pp] = Z ? _mm256_set1_epi32(zc_of(w, blk, p0 + pp) - 128) : _mm256_setzero_si256();  // stored as z8 + 128
        sc[pp] = _mm256_set1_ps(w.scales[blk * P + static_cast<size_t>(p0 + pp)]);
      }
      ++blk;
      left = cpb;
    }
    --left;
  };
  const uint8_t *g = w.codes + static_cast<size_t>(p0) * 64;  // the group's bytes of feature p0
  size_t t = 0;
  for (; t + 4 <= whole; t += 4, g += P * 64) {
    pf.step();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      next();
      rows_chunk<MR, PP>(x, ldx, t + static_cast<size_t>(c), [&](int pp, int h) __attribute__((always_inline)) {
        return byte_values256<Z>(g + 64 * pp + 16 * c + 8 * h, z8[pp], sc[pp]);
      }, acc);
    }
  }
  auto values = [&](int pp, int h) __attribute__((always_inline)) {  // of chunk t, in the last group
    return byte_values256<Z>(g + 64 * pp + 16 * (t & 3) + 8 * h, z8[pp], sc[pp]);
  };
  for (; t < whole; ++t) {
    next();
    rows_chunk<MR, PP>(x, ldx, t, values, acc);
  }
  if (t < chunks) {  // the last, partial chunk
    next();
    rows_chunk_masked<MR, PP>(x, ldx, t, K - 16 * t, values, acc);
  }
  for (int m = 0; m < MR; ++m)
    for (int pp = 0; pp < PP; ++pp) out[m * P + p0 + pp] = reduce16(acc[m][pp][0], acc[m][pp][1]);
}

template <int MR>
void f32_rows256(const WoPanelArgs &w, const float *x, size_t ldx, float *out) noexcept {
  constexpr int PP = MR == 1 ? 2 : 1;
  if (w.code == WoCode::Byte) {
    if constexpr (MR == 4) {
      // Two passes of 2 rows (the second reads the panel from L1 or L2; the next panel is
      // requested in the first): 4 rows x 2 features would need 16 ymm of sums alone, and
      // 4 rows x 1 feature took 1.15-1.2x the time (Zen 3, 4096^2, one thread).
      f32_rows256<2>(w, x, ldx, out);
      WoPanelArgs again = w;
      again.prefetch = nullptr;
      return f32_rows256<2>(again, x + 2 * ldx, ldx, out + 2 * P);
    } else {
      // Two features a pass for 1-3 rows (4-12 ymm of sums): one feature a pass took 1.54x the
      // time at 3 rows and 1.47x at 2; four at one row 1.44x (8 sums, 4 scales and the
      // activations do not fit 16 ymm).
      constexpr int PB = 2;
      WoPrefetcher pf(w, (P / PB) * ((static_cast<size_t>(w.K) + 63) / 64));  // a step per group
      const bool z = w.zps != nullptr || w.zp_const != 128;
      for (int p0 = 0; p0 < P; p0 += PB) {
        if (z)
          f32_bytes256<MR, PB, true>(w, x, ldx, p0, out, pf);
        else
          f32_bytes256<MR, PB, false>(w, x, ldx, p0, out, pf);
      }
      return;
    }
  }
  // The next panel's bytes requested a few lines per group (WoPrefetcher), over every pass.
  WoPrefetcher pf(w, (P / PP) * ((static_cast<size_t>(w.K) + 127) / 128));
  for (int p0 = 0; p0 < P; p0 += PP) {
    if (w.code == WoCode::NF4)
      f32_lane256<MR, PP, true>(w, x, ldx, p0, out, pf);
    else
      f32_lane256<MR, PP, false>(w, x, ldx, p0, out, pf);
  }
}

inline void f32_256(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out) noexcept {
  switch (rows) {
    case 1: return f32_rows256<1>(w, x, ldx, out);
    case 2: return f32_rows256<2>(w, x, ldx, out);
    case 3: return f32_rows256<3>(w, x, ldx, out);
    default: return f32_rows256<4>(w, x, ldx, out);
  }
}

// One half of the 16 lanes (q: lanes 8q..8q + 7) of MR rows x PP features over n elements of
// x (stride ldx) and w (stride ldw), which start at a multiple of 16 of K, continuing the sums
// in st (st[(m * PP + f) * 16 + l]). The halves' sums are independent, so a tile of 12 sums
// takes one ymm each: x and w each loaded once per 8 elements, 7 loads for 12 FMAs.
template <int MR, int PP>
void dot_half256(const float *x, size_t ldx, const float *w, size_t ldw, size_t n, int q, float *st) noexcept {
  __m256 acc[MR][PP];
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int f = 0; f < PP; ++f) acc[m][f] = _mm256_loadu_ps(st + (m * PP + f) * 16 + 8 * q);
  const size_t whole = n / 16, qs = 8 * static_cast<size_t>(q);
  const float *xq = x + qs, *wq = w + qs;
  for (size_t t = 0; t < whole; ++t) {
    __m256 wv[PP];
#pragma GCC unroll 4
    for (int f = 0; f < PP; ++f) wv[f] = _mm256_loadu_ps(wq + f * ldw + 16 * t);
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_loadu_ps(xq + m * ldx + 16 * t);
#pragma GCC unroll 4
      for (int f = 0; f < PP; ++f) acc[m][f] = _mm256_fmadd_ps(xv, wv[f], acc[m][f]);
    }
  }
  const size_t rest = n - 16 * whole;
  if (rest > qs) {
    const __m256i mk = lanes8(rest - qs);
    for (int m = 0; m < MR; ++m) {
      const __m256 xv = _mm256_maskload_ps(xq + m * ldx + 16 * whole, mk);
      for (int f = 0; f < PP; ++f) {
        const __m256 g = _mm256_fmadd_ps(xv, _mm256_maskload_ps(wq + f * ldw + 16 * whole, mk), acc[m][f]);
        acc[m][f] = _mm256_blendv_ps(acc[m][f], g, _mm256_castsi256_ps(mk));
      }
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int f = 0; f < PP; ++f) _mm256_storeu_ps(st + (m * PP + f) * 16 + 8 * q, acc[m][f]);
}

// nr rows (at x, stride ldx) against PP features' n elements (w, stride ldw), both halves, in
// tiles of 3 rows (4 left: 2 + 2; 2; 1), sums continued in st ([row][PP][16]).
template <int PP>
void dot_tiles256(const float *x, size_t ldx, size_t nr, const float *w, size_t ldw, size_t n,
                  float *st) noexcept {
  size_t r = 0;
  for (; nr - r >= 3 && nr - r != 4; r += 3)
    for (int q = 0; q < 2; ++q) dot_half256<3, PP>(x + r * ldx, ldx, w, ldw, n, q, st + r * PP * 16);
  for (; nr - r >= 2; r += 2)
    for (int q = 0; q < 2; ++q) dot_half256<2, PP>(x + r * ldx, ldx, w, ldw, n, q, st + r * PP * 16);
  if (r < nr)
    for (int q = 0; q < 2; ++q) dot_half256<1, PP>(x + r * ldx, ldx, w, ldw, n, q, st + r * PP * 16);
}

// K in slices of kWoSlice elements, so that a slice of the features' weights stays in L1 while
// every row meets it, and rows in groups of kDotGroup whose sums wait in st between slices.
// slice(k0, n) gives the PP features' weights for elements [k0, k0 + n) (stride ldw). Each
// lane still takes its elements in increasing order of K; the 16 lane sums of each row and
// feature are then added in ref::dot's pairwise order into out.
constexpr size_t kDotGroup = 48;

template <int PP, class Slice>
void dot_slices256(const float *x, size_t ldx, size_t rows, size_t K, size_t ldw, float *out,
                   size_t ldo, Slice &&slice) noexcept {
  alignas(32) float st[kDotGroup * PP * 16];
  for (size_t r0 = 0; r0 < rows; r0 += kDotGroup) {
    const size_t nr = std::min(kDotGroup, rows - r0);
    std::memset(st, 0, sizeof(float) * nr * PP * 16);
    for (size_t k0 = 0; k0 < K; k0 += kWoSlice) {
      const size_t n = std::min(kWoSlice, K - k0);
      dot_tiles256<PP>(x + r0 * ldx + k0, ldx, nr, slice(k0, n), ldw, n, st);
    }
    for (size_t r = 0; r < nr; ++r)
      for (size_t f = 0; f < static_cast<size_t>(PP); ++f) {
        const float *l = st + (r * PP + f) * 16;
        out[(r0 + r) * ldo + f] = reduce16(_mm256_load_ps(l), _mm256_load_ps(l + 8));
      }
  }
}

template <int PP>
void dot_rows256(const float *x, size_t ldx, size_t rows, const float *w, size_t ldw, size_t K,
                 float *out, size_t ldo) noexcept {
  dot_slices256<PP>(x, ldx, rows, K, ldw, out, ldo, [&](size_t k0, size_t) { return w + k0; });
}

inline void dot256(const float *x, size_t ldx, size_t rows, const float *w, size_t ldw,
                   size_t feats, int64_t K, float *out, size_t ldo) noexcept {
  const auto k = static_cast<size_t>(K);
  for (size_t f = 0; f < feats; f += 4) {
    switch (std::min<size_t>(4, feats - f)) {
      case 1: dot_rows256<1>(x, ldx, rows, w + f * ldw, ldw, k, out + f, ldo); break;
      case 2: dot_rows256<2>(x, ldx, rows, w + f * ldw, ldw, k, out + f, ldo); break;
      case 3: dot_rows256<3>(x, ldx, rows, w + f * ldw, ldw, k, out + f, ldo); break;
      default: dot_rows256<4>(x, ldx, rows, w + f * ldw, ldw, k, out + f, ldo); break;
    }
  }
}

// Feature p's chunks [t0, t1) (t0 a multiple of 8) dequantized into out[16 * (t - t0) ...]
// from the lane layout: one pair of loads per group, lane_value per 8 elements.
template <bool NF4>
inline void dequant_lane256(const WoPanelArgs &w, int p, size_t t0, size_t t1, float *out) noexcept {
  WoPrefetcher none(WoPanelArgs{}, 0);
  lane_walk<1, NF4>(w, p, t0, t1, none, [&](auto qc, size_t t, const __m256i (&d)[1][2], const LaneVals<NF4> (&v)[1]) __attribute__((always_inline)) {
    float *o = out + 16 * (t - t0);
    _mm256_storeu_ps(o, lane_value<NF4, decltype(qc)::value>(v[0], d[0][0]));
    _mm256_storeu_ps(o + 8, lane_value<NF4, decltype(qc)::value>(v[0], d[0][1]));
  }, LaneQs{});
}

// Byte weights: feature p's chunks [t0, t1) by byte_values256, block by block; inside a block,
// a group's 4 chunks at offsets known when compiling where the block holds them whole.
template <bool Z>
inline void dequant_bytes_blocks256(const WoPanelArgs &w, int p, size_t t0, size_t t1, float *out) noexcept {
  const size_t cpb = static_cast<size_t>(w.block) / 16;
  for (size_t t = t0, blk = t0 / cpb; t < t1; ++blk) {
    const __m256i z8 = Z ? _mm256_set1_epi32(zc_of(w, blk, p) - 128) : _mm256_setzero_si256();  // stored as z8 + 128
    const __m256 sc = _mm256_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
    const size_t end = std::min(t1, (blk + 1) * cpb);
    for (; t < end && (t & 3) != 0; ++t)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(out + 16 * (t - t0) + 8 * static_cast<size_t>(h), byte_values256<Z>(byte_src(w, t, h, p), z8, sc));
    const uint8_t *g = byte_src(w, t, 0, p);
    for (; t + 4 <= end; t += 4, g += P * 64) {
      float *o = out + 16 * (t - t0);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(o + 8 * i, byte_values256<Z>(g + 8 * i, z8, sc));
    }
    for (; t < end; ++t)
      for (int h = 0; h < 2; ++h)
        _mm256_storeu_ps(out + 16 * (t - t0) + 8 * static_cast<size_t>(h), byte_values256<Z>(byte_src(w, t, h, p), z8, sc));
  }
}

// Blocks of CPB = 1 or 2 chunks (16 or 32 elements) from a group's start t0: whole groups with
// each block's zero point and scale made at a chunk known when compiling; the rest as above.
template <bool Z, int CPB>
inline void dequant_bytes_small256(const WoPanelArgs &w, int p, size_t t0, size_t t1, float *out) noexcept {
  const uint8_t *g = byte_src(w, t0, 0, p);
  size_t t = t0;
  for (; t + 4 <= t1; t += 4, g += P * 64) {
    float *o = out + 16 * (t - t0);
    __m256i z8 = _mm256_setzero_si256();
    __m256 sc = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      if (c % CPB == 0) {
        const size_t blk = (t + static_cast<size_t>(c)) / CPB;
        if constexpr (Z) z8 = _mm256_set1_epi32(zc_of(w, blk, p) - 128);  // stored as z8 + 128
        sc = _mm256_set1_ps(w.scales[blk * P + static_cast<size_t>(p)]);
      }
      _mm256_storeu_ps(o + 16 * c, byte_values256<Z>(g + 16 * c, z8, sc));
      _mm256_storeu_ps(o + 16 * c + 8, byte_values256<Z>(g + 16 * c + 8, z8, sc));
    }
  }
  if (t < t1) dequant_bytes_blocks256<Z>(w, p, t, t1, out + 16 * (t - t0));
}

template <bool Z>
inline void dequant_bytes256(const WoPanelArgs &w, int p, size_t t0, size_t t1, float *out) noexcept {
  if (t0 % 4 == 0 && w.block == 16) return dequant_bytes_small256<Z, 1>(w, p, t0, t1, out);
  if (t0 % 4 == 0 && w.block == 32) return dequant_bytes_small256<Z, 2>(w, p, t0, t1, out);
  dequant_bytes_blocks256<Z>(w, p, t0, t1, out);
}

inline void dequant_chunks256(const WoPanelArgs &w, size_t t0, size_t t1, float *out, size_t ldo) noexcept {
  for (int p = 0; p < P; ++p) {
    if (w.code == WoCode::Byte && (w.zps != nullptr || w.zp_const != 128))
      dequant_bytes256<true>(w, p, t0, t1, out + p * ldo);
    else if (w.code == WoCode::Byte)
      dequant_bytes256<false>(w, p, t0, t1, out + p * ldo);
    else if (w.code == WoCode::NF4)
      dequant_lane256<true>(w, p, t0, t1, out + p * ldo);
    else
      dequant_lane256<false>(w, p, t0, t1, out + p * ldo);
  }
}

inline void dequant256(const WoPanelArgs &w, float *out, size_t ldo) noexcept {
  wo_prefetch_all(w);
  dequant_chunks256(w, 0, (static_cast<size_t>(w.K) + 15) / 16, out, ldo);
}

// wo.hpp's WoBatchFn: per slice of kWoSlice elements of K, the panel's features dequantized
// into scratch (in L1), then every row against them (dot_rows256's order, so the bits of
// dequant256 + dot256).
inline void f32_batch256(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out,
                         size_t ldo, float *scratch) noexcept {
  const auto K = static_cast<size_t>(w.K);
  // The next panel's bytes requested a share per slice (WoPrefetcher), over every row group.
  WoPrefetcher pf(w, ((K + kWoSlice - 1) / kWoSlice) * ((rows + kDotGroup - 1) / kDotGroup));
  dot_slices256<P>(x, ldx, rows, K, kWoSlice, out, ldo, [&](size_t k0, size_t n) {
    pf.step();
    dequant_chunks256(w, k0 / 16, (k0 + n + 15) / 16, scratch, kWoSlice);
    return static_cast<const float *>(scratch);
  });
}

template <int MR, int PP>
void int8_feat256(const WoPanelArgs &w, const WoActs &a, int p0, float *out) noexcept {
  __m256 facc[MR][PP][2];
  __m256i iacc[MR][PP][2];
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < PP; ++p)
      for (int q = 0; q < 2; ++q) {
        facc[m][p][q] = _mm256_setzero_ps();
        iacc[m][p][q] = _mm256_setzero_si256();
      }
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i nf4 = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(ref::kNF4Int8)));
  const bool four_bit = w.code != WoCode::Byte;
  // The zero point of the integers the kernel multiplies (codes; NF4's signed integers: 0;
  // bytes as s8: z8), when every block shares it.
  const int32_t zk = w.code == WoCode::NF4 ? 0 : w.code == WoCode::Byte ? w.zp_const - 128 : w.zp_const;
  const int32_t zoff = w.code == WoCode::Byte ? 128 : 0;
  const size_t nc = w.chunks;
  // A whole group at once (both nibbles) when units hold whole groups: integer codes then sum
  // their two vpmaddubsw results in int16 (at most 2 * 3810) before one vpmaddwd.
  const bool pairs = four_bit && w.unit_chunks % 2 == 0;
  size_t unit = 0;
  for (size_t c = 0; c < nc;) {
    const uint8_t *src = four_bit ? w.codes + (c / 2) * P * 64 : w.codes + c * P * 64;
    if (pairs && c + 1 < nc) {
      __m256i xq[MR][2][2];  // [row][nibble half][ymm]
      for (int m = 0; m < MR; ++m)
        for (int h = 0; h < 2; ++h)
          for (int q = 0; q < 2; ++q)
            xq[m][h][q] = _mm256_loadu_si256(
                reinterpret_cast<const __m256i *>(a.qx + m * a.qx_stride + 64 * (c + h) + 32 * q));
      for (int p = 0; p < PP; ++p) {
        for (int q = 0; q < 2; ++q) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + (p0 + p) * 64 + 32 * q));
          const __m256i lo = _mm256_and_si256(raw, nib);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib);
          if (w.code == WoCode::Int4) {
            for (int m = 0; m < MR; ++m) {
              const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xq[m][0][q]),
                                                   _mm256_maddubs_epi16(hi, xq[m][1][q]));
              iacc[m][p][q] = _mm256_add_epi32(iacc[m][p][q], _mm256_madd_epi16(s16, ones));
            }
          } else {
            const __m256i vl = _mm256_shuffle_epi8(nf4, lo), vh = _mm256_shuffle_epi8(nf4, hi);
            const __m256i al = _mm256_abs_epi8(vl), ah = _mm256_abs_epi8(vh);
            for (int m = 0; m < MR; ++m)
              iacc[m][p][q] = _mm256_add_epi32(
                  iacc[m][p][q],
                  _mm256_add_epi32(
                      _mm256_madd_epi16(_mm256_maddubs_epi16(al, _mm256_sign_epi8(xq[m][0][q], vl)), ones),
                      _mm256_madd_epi16(_mm256_maddubs_epi16(ah, _mm256_sign_epi8(xq[m][1][q], vh)), ones)));
          }
        }
      }
      c += 2;
    } else {
    __m256i xq[MR][2];
    for (int m = 0; m < MR; ++m)
      for (int q = 0; q < 2; ++q)
        xq[m][q] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a.qx + m * a.qx_stride + 64 * c + 32 * q));
    for (int p = 0; p < PP; ++p) {
      for (int q = 0; q < 2; ++q) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + (p0 + p) * 64 + 32 * q));
        if (w.code == WoCode::Int4) {
          const __m256i u = (c & 1) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib)
                                    : _mm256_and_si256(raw, nib);
          for (int m = 0; m < MR; ++m)
            iacc[m][p][q] = _mm256_add_epi32(
                iacc[m][p][q], _mm256_madd_epi16(_mm256_maddubs_epi16(u, xq[m][q]), ones));
        } else {
          __m256i v = raw;
          if (w.code == WoCode::NF4) {
            const __m256i u = (c & 1) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib)
                                      : _mm256_and_si256(raw, nib);
            v = _mm256_shuffle_epi8(nf4, u);
          }
          const __m256i av = _mm256_abs_epi8(v);
          for (int m = 0; m < MR; ++m)
            iacc[m][p][q] = _mm256_add_epi32(
                iacc[m][p][q],
                _mm256_madd_epi16(_mm256_maddubs_epi16(av, _mm256_sign_epi8(xq[m][q], v)), ones));
        }
      }
    }
      ++c;
    }
    if (c % w.unit_chunks != 0 && c != nc) continue;
    const bool last = c == nc;
    const uint32_t lanes = last ? w.last_unit_lanes : 0xFFFFu;
    __m256i mk[2];
    for (int q = 0; q < 2; ++q) {
      const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
      const __m256i lv = _mm256_set1_epi32(static_cast<int32_t>((lanes >> (8 * q)) & 0xFF));
      mk[q] = _mm256_cmpeq_epi32(_mm256_and_si256(lv, bits), bits);
    }
    for (int m = 0; m < MR; ++m) {
      const int32_t *sm = a.sums + m * a.unit_stride + unit * 16;
      const float *xm = a.sxv + m * a.unit_stride + unit * 16;
      for (int q = 0; q < 2; ++q) {
        const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(sm + 8 * q));
        const __m256 sxv = _mm256_loadu_ps(xm + 8 * q);
        const __m256i corr = _mm256_mullo_epi32(sums, _mm256_set1_epi32(zk));
        for (int p = 0; p < PP; ++p) {
          const size_t blk = w.half_units ? 2 * unit + static_cast<size_t>(q) : unit;
          const __m256 sw = _mm256_set1_ps(w.scales[blk * P + static_cast<size_t>(p0 + p)]);
          const __m256i cm =
              w.zps != nullptr ? _mm256_mullo_epi32(sums, _mm256_set1_epi32(zc_of(w, blk, p0 + p) - zoff))
                               : corr;
          const __m256i ip = _mm256_sub_epi32(iacc[m][p][q], cm);
          const __m256 f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ip), _mm256_mul_ps(sxv, sw), facc[m][p][q]);
          facc[m][p][q] = last ? _mm256_blendv_ps(facc[m][p][q], f, _mm256_castsi256_ps(mk[q])) : f;
          iacc[m][p][q] = _mm256_setzero_si256();
        }
      }
    }
    ++unit;
  }
  for (int m = 0; m < MR; ++m)
    for (int p = 0; p < PP; ++p) out[m * P + p0 + p] = reduce16(facc[m][p][0], facc[m][p][1]);
}

template <int MR>
void int8_rows256(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  int8_feat256<MR, P>(w, a, 0, out);
}

// Batch 1 on AVX2: int8_one_vnni's plan on ymm (lanes 0-7 and 8-15 of the 16 as two halves).
// A 4-bit group is loaded once per feature; its four 32-element quarters are the halves of
// two chunks (low nibbles: chunk c, high: c + 1). Each feature's integer sums start from the
// zero-point term, -z * (the lane's sum of qx), so a unit's end is one vcvtdq2ps, one vmulps
// (sx * sw) and one fma per half and feature; the weights' bytes arrive a few lines per group
// ahead (WoPrefetcher). vpmaddubsw's exactness: see the head of this file; at B >= 128 two
// integer codes' pair sums are added in int16 (at most 2 * 3810) before one vpmaddwd.
template <WoCode Code>
void int8_one256(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  constexpr bool four_bit = Code != WoCode::Byte;
  __m256 facc[P][2];
  for (auto &f : facc) f[0] = f[1] = _mm256_setzero_ps();
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i nf4 = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(ref::kNF4Int8)));
  // The zero point of the integers multiplied (int8_feat256's zk), and the offset of the
  // per-block zero-point bytes (z8 + 128 for bytes).
  const int32_t zk = Code == WoCode::NF4 ? 0 : Code == WoCode::Byte ? w.zp_const - 128 : w.zp_const;
  const int32_t zoff = Code == WoCode::Byte ? 128 : 0;
  const __m256i negz = _mm256_set1_epi32(-zk);
  // qx (32 bytes) times the operand u: 8 int32 lanes of 4 products each.
  auto dot = [&](__m256i u, __m256i x) {
    if constexpr (Code == WoCode::Int4) return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), ones);
    const __m256i v = Code == WoCode::NF4 ? _mm256_shuffle_epi8(nf4, u) : u;
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v)), ones);
  };
  auto x_at = [&](size_t c, int q) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a.qx + 64 * c + 32 * q));
  };
  auto sums_at = [&](size_t u, int q) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a.sums + u * 16 + 8 * static_cast<size_t>(q)));
  };
  auto block_of = [&](size_t u, int q) { return w.half_units ? 2 * u + static_cast<size_t>(q) : u; };
  // Half q of unit u (its lane sums s): feature p's start, -zc * s.
  auto start = [&](size_t u, int q, __m256i s, __m256i common, int p) {
    if (w.zps == nullptr) return common;
    return _mm256_mullo_epi32(s, _mm256_set1_epi32(zoff - zc_of(w, block_of(u, q), p)));
  };
  // Half q of unit u's integer sums of feature p into its float sums.
  auto finish = [&](size_t u, int q, __m256i acc, int p) {
    const __m256 sx = _mm256_loadu_ps(a.sxv + u * 16 + 8 * static_cast<size_t>(q));
    const __m256 d = _mm256_mul_ps(sx, _mm256_broadcast_ss(w.scales + block_of(u, q) * P + static_cast<size_t>(p)));
    facc[p][q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), d, facc[p][q]);
  };
  const size_t nc = w.chunks;
  WoPrefetcher pf(w, four_bit ? nc / 2 : nc);
  if (four_bit && w.unit_chunks == 1) {
    // Two units per group: chunk c's halves from the low nibbles, c + 1's from the high.
    for (size_t c = 0; c < nc; c += 2) {
      pf.step();
      const uint8_t *src = w.codes + (c / 2) * P * 64;
      __m256i x[2][2], s[2][2], common[2][2];
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < 2; ++q) {
          x[h][q] = x_at(c + static_cast<size_t>(h), q);
          s[h][q] = sums_at(c + static_cast<size_t>(h), q);
          common[h][q] = _mm256_mullo_epi32(s[h][q], negz);
        }
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < 2; ++q) {
          const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + p * 64 + 32 * q));
          const __m256i lo = _mm256_and_si256(raw, nib);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib);
          finish(c, q, _mm256_add_epi32(start(c, q, s[0][q], common[0][q], p), dot(lo, x[0][q])), p);
          finish(c + 1, q, _mm256_add_epi32(start(c + 1, q, s[1][q], common[1][q], p), dot(hi, x[1][q])), p);
        }
    }
  } else {
    const size_t uc = w.unit_chunks;
    for (size_t c = 0, u = 0; c < nc; ++u) {
      const size_t end = std::min(nc, c + uc);
      __m256i acc[P][2];
      for (int q = 0; q < 2; ++q) {
        const __m256i s = sums_at(u, q);
        const __m256i common = _mm256_mullo_epi32(s, negz);
        for (int p = 0; p < P; ++p) acc[p][q] = start(u, q, s, common, p);
      }
      if constexpr (four_bit) {
        for (; c < end; c += 2) {  // uc even, or a whole K: chunks in pairs (nc is even)
          pf.step();
          const uint8_t *src = w.codes + (c / 2) * P * 64;
          const __m256i x00 = x_at(c, 0), x01 = x_at(c, 1), x10 = x_at(c + 1, 0), x11 = x_at(c + 1, 1);
          for (int p = 0; p < P; ++p)
            for (int q = 0; q < 2; ++q) {
              const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + p * 64 + 32 * q));
              const __m256i lo = _mm256_and_si256(raw, nib);
              const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib);
              const __m256i xl = q == 0 ? x00 : x01, xh = q == 0 ? x10 : x11;
              if constexpr (Code == WoCode::Int4) {
                const __m256i s16 = _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl), _mm256_maddubs_epi16(hi, xh));
                acc[p][q] = _mm256_add_epi32(acc[p][q], _mm256_madd_epi16(s16, ones));
              } else {
                acc[p][q] = _mm256_add_epi32(acc[p][q], _mm256_add_epi32(dot(lo, xl), dot(hi, xh)));
              }
            }
        }
      } else {
        for (; c < end; ++c) {
          pf.step();
          const uint8_t *src = w.codes + c * P * 64;
          const __m256i x0 = x_at(c, 0), x1 = x_at(c, 1);
          for (int p = 0; p < P; ++p)
            for (int q = 0; q < 2; ++q)
              acc[p][q] = _mm256_add_epi32(
                  acc[p][q], dot(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + p * 64 + 32 * q)),
                                 q == 0 ? x0 : x1));
        }
      }
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < 2; ++q) finish(u, q, acc[p][q], p);
    }
  }
  for (int p = 0; p < P; ++p) out[p] = reduce16(facc[p][0], facc[p][1]);
}

// The int8 mode for batches at units of one chunk (B = 32: two blocks a chunk; B = 64) or of
// one group (UC = 2: B = 128), 4-bit codes and NF4, whole groups and a full last unit. One
// half of the 16 lanes (q: lanes 8q..8q + 7) at a time, since the halves' sums are
// independent: MR rows x 4 features of float sums in ymm registers. A group's half (32 bytes a
// feature) is loaded once for its two chunks. The weights' integers v (codes less their block's
// zero point, |v| <= 15; NF4's integers, |v| <= 127) meet the activations as vpmaddubsw(|v|,
// sign(qx, v)), exactly v * qx in pairs (at most 3810, or 32258 for NF4), so no zero-point
// term is needed; B = 128 adds a group's two pair sums in int16 (codes) before vpmaddwd. Per
// unit, row and feature: one vcvtdq2ps, one vmulps (sx * sw) and one fma, in the header's order.
// Measured on Zen 3, batch 16, 4096 x 4096: 1.5-1.8x int8_feat256 (which spilled at four rows by
// four features) at B = 32 and 64.
template <WoCode Code, int MR, int UC>
void int8_unit_half256(const WoPanelArgs &w, const WoActs &a, int q, float *lanes) noexcept {
  __m256 facc[MR][P];
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int f = 0; f < P; ++f) facc[m][f] = _mm256_setzero_ps();
  const __m256i nib = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i nf4 = _mm256_broadcastsi128_si256(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(ref::kNF4Int8)));
  const __m256i zc8 = _mm256_set1_epi8(static_cast<char>(w.zp_const));
  const auto qs = static_cast<size_t>(q);
  const int8_t *xq = a.qx + 32 * qs;
  // Chunk h of a group: its integers v for feature f (the block blk's zero point off).
  auto values = [&](__m256i raw, size_t h, size_t blk, int f) {
    if constexpr (Code == WoCode::Byte) return raw;
    const __m256i cu = h == 0 ? _mm256_and_si256(raw, nib) : _mm256_and_si256(_mm256_srli_epi16(raw, 4), nib);
    if constexpr (Code == WoCode::NF4) return _mm256_shuffle_epi8(nf4, cu);
    const __m256i z = w.zps != nullptr ? _mm256_set1_epi8(static_cast<char>(w.zps[blk * P + static_cast<size_t>(f)])) : zc8;
    return _mm256_sub_epi8(cu, z);
  };
  auto pairs = [&](__m256i v, __m256i x) { return _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(x, v)); };
  // A unit's integer sums p of row m and feature f (block blk) into the float sums.
  auto finish = [&](int m, size_t blk, __m256 sx, int f, __m256i p) {
    const __m256 d = _mm256_mul_ps(sx, _mm256_broadcast_ss(w.scales + blk * P + static_cast<size_t>(f)));
    facc[m][f] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), d, facc[m][f]);
  };
  // Bytes: chunk c + h's 32 bytes of feature f; 4-bit codes: both chunks' in one load.
  auto load = [&](size_t c, size_t h, int f) {
    const uint8_t *src = Code == WoCode::Byte ? w.codes + (c + h) * P * 64 : w.codes + (c / 2) * P * 64;
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + 64 * static_cast<size_t>(f) + 32 * qs));
  };
  for (size_t c = 0; c < w.chunks; c += 2) {
    __m256i raw[P];
#pragma GCC unroll 4
    for (int f = 0; f < P; ++f) raw[f] = load(c, 0, f);
    if constexpr (UC == 1) {
#pragma GCC unroll 2
      for (size_t h = 0; h < 2; ++h) {
        const size_t u = c + h;
        const size_t blk = w.half_units ? 2 * u + qs : u;
        __m256i v[P];
#pragma GCC unroll 4
        for (int f = 0; f < P; ++f) v[f] = values(Code == WoCode::Byte && h == 1 ? load(c, 1, f) : raw[f], h, blk, f);
#pragma GCC unroll 4
        for (int m = 0; m < MR; ++m) {
          const auto ms = static_cast<size_t>(m);
          const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xq + ms * a.qx_stride + 64 * u));
          const __m256 sx = _mm256_broadcast_ss(a.sxv + ms * a.unit_stride + u * 16 + 8 * qs);
#pragma GCC unroll 4
          for (int f = 0; f < P; ++f) finish(m, blk, sx, f, _mm256_madd_epi16(pairs(v[f], x), ones));
        }
      }
    } else {
      const size_t u = c / 2, blk = u;
      __m256i lo[P], hi[P];
#pragma GCC unroll 4
      for (int f = 0; f < P; ++f) {
        lo[f] = values(raw[f], 0, blk, f);
        hi[f] = values(Code == WoCode::Byte ? load(c, 1, f) : raw[f], 1, blk, f);
      }
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const auto ms = static_cast<size_t>(m);
        const int8_t *xm = xq + ms * a.qx_stride + 64 * c;
        const __m256i xl = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xm));
        const __m256i xh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xm + 64));
        const __m256 sx = _mm256_broadcast_ss(a.sxv + ms * a.unit_stride + u * 16 + 8 * qs);
#pragma GCC unroll 4
        for (int f = 0; f < P; ++f) {
          const __m256i p = Code != WoCode::Int4
                                ? _mm256_add_epi32(_mm256_madd_epi16(pairs(lo[f], xl), ones),
                                                   _mm256_madd_epi16(pairs(hi[f], xh), ones))
                                : _mm256_madd_epi16(_mm256_add_epi16(pairs(lo[f], xl), pairs(hi[f], xh)), ones);
          finish(m, blk, sx, f, p);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 4
    for (int f = 0; f < P; ++f) _mm256_storeu_ps(lanes + (m * P + f) * 16 + 8 * q, facc[m][f]);
}

// Whether int8_units256 takes the panel (see int8_unit_half256).
inline bool int8_units_fit(const WoPanelArgs &w) noexcept {
  const bool values = w.code != WoCode::Byte || (w.zps == nullptr && w.zp_const == 128);  // bytes: z8 = 0
  return values && w.last_unit_lanes == 0xFFFFu && w.chunks % 2 == 0 && (w.half_units || w.unit_chunks <= 2);
}

template <WoCode Code, int MR>
void int8_units256(const WoPanelArgs &w, const WoActs &a, float *out) noexcept {
  alignas(32) float lanes[MR * P * 16];
  for (int q = 0; q < 2; ++q) {
    if (w.half_units || w.unit_chunks == 1)
      int8_unit_half256<Code, MR, 1>(w, a, q, lanes);
    else
      int8_unit_half256<Code, MR, 2>(w, a, q, lanes);
  }
  for (int m = 0; m < MR; ++m)
    for (int f = 0; f < P; ++f) {
      const float *l = lanes + (m * P + f) * 16;
      out[m * P + f] = reduce16(_mm256_load_ps(l), _mm256_load_ps(l + 8));
    }
}

template <WoCode Code>
void int8_units256_rows(const WoPanelArgs &w, const WoActs &a, size_t rows, float *out) noexcept {
  switch (rows) {
    case 1: return int8_units256<Code, 1>(w, a, out);
    case 2: return int8_units256<Code, 2>(w, a, out);
    case 3: return int8_units256<Code, 3>(w, a, out);
    default: return int8_units256<Code, 4>(w, a, out);
  }
}

inline void int8_256(const WoPanelArgs &w, const WoActs &a, size_t rows, float *out) noexcept {
  if (rows == 1 && int8_one_fits(w)) {
    switch (w.code) {
      case WoCode::NF4: return int8_one256<WoCode::NF4>(w, a, out);
      case WoCode::Byte: return int8_one256<WoCode::Byte>(w, a, out);
      default: return int8_one256<WoCode::Int4>(w, a, out);
    }
  }
  wo_prefetch_all(w);
  if (int8_units_fit(w)) {
    switch (w.code) {
      case WoCode::NF4: return int8_units256_rows<WoCode::NF4>(w, a, rows, out);
      case WoCode::Byte: return int8_units256_rows<WoCode::Byte>(w, a, rows, out);
      default: return int8_units256_rows<WoCode::Int4>(w, a, rows, out);
    }
  }
  switch (rows) {
    case 1: return int8_rows256<1>(w, a, out);
    case 2: return int8_rows256<2>(w, a, out);
    case 3: return int8_rows256<3>(w, a, out);
    default: return int8_rows256<4>(w, a, out);
  }
}

// The per-token mode (wo.hpp's WoTokenFn): F feature rows at a time share each load of qx. Per
// 32-byte group and shift s, the codes c (0..2) of 32 elements meet 32 activations in vpmaddubsw
// (c unsigned, qx signed): pairs of products at most 2 * 2 * 127 = 508 in magnitude, so it never
// saturates; 16-bit sums take 16 groups (64 additions, at most 32512) before they are widened
// into 32-bit sums by vpmaddwd. acc = sum(c * qx) - xsum, exact.
// `next`: where F rows ahead begin (token_ahead; an address, maybe past the weights, where a
// prefetch is harmless), requested into L2 as the loop goes (F rows are F * 32 bytes a group,
// contiguous), two lines a group.
template <int F>
inline void token_rows256(const uint8_t *w, size_t row_bytes, size_t groups, const int8_t *qx,
                          int32_t xsum, int32_t *acc, uintptr_t next) noexcept {
  const __m256i m3 = _mm256_set1_epi8(3), ones16 = _mm256_set1_epi16(1);
  __m256i s32[F];
  for (int f = 0; f < F; ++f) s32[f] = _mm256_setzero_si256();
  for (size_t g0 = 0; g0 < groups; g0 += 16) {
    const size_t g1 = std::min(groups, g0 + 16);
    __m256i s16[F];
    for (int f = 0; f < F; ++f) s16[f] = _mm256_setzero_si256();
    for (size_t g = g0; g < g1; ++g) {
      for (size_t l = 0; l < F * 32; l += 64)
        _mm_prefetch(reinterpret_cast<const char *>(next + F * 32 * g + l), _MM_HINT_T1);
      const int8_t *xg = qx + 128 * g;
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xg));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xg + 32));
      const __m256i x2 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xg + 64));
      const __m256i x3 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(xg + 96));
      for (int f = 0; f < F; ++f) {
        const __m256i v = _mm256_loadu_si256(
            reinterpret_cast<const __m256i *>(w + static_cast<size_t>(f) * row_bytes + 32 * g));
        __m256i t = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 6), m3), x0);
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m3), x1));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 2), m3), x2));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(_mm256_and_si256(v, m3), x3));
        s16[f] = _mm256_add_epi16(s16[f], t);
      }
    }
    for (int f = 0; f < F; ++f) s32[f] = _mm256_add_epi32(s32[f], _mm256_madd_epi16(s16[f], ones16));
  }
  for (int f = 0; f < F; ++f) {
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s32[f]), _mm256_extracti128_si256(s32[f], 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    acc[f] = wrap_sub(_mm_cvtsi128_si32(h), xsum);
  }
}

// R rows of activations (R > 1) against one feature's codes: each 32-byte group is split into
// its four code vectors once and meets the R rows' activations (vpmaddubsw with the activations
// from memory), so that the split is shared and the rows cost 4 multiplies and 4 additions a
// group each. 16-bit sums take 16 groups, as above; the 32-bit sums wait in memory.
template <int R>
inline void token_batch256(const uint8_t *row, size_t groups, const int8_t *qx, size_t xs,
                           const int32_t *xsum, int32_t *acc, size_t ld) noexcept {
  const __m256i m3 = _mm256_set1_epi8(3);
  alignas(32) int32_t s32[R][8] = {};
  for (size_t g0 = 0; g0 < groups; g0 += 16) {
    const size_t g1 = std::min(groups, g0 + 16);
    __m256i s16[R];
    for (int r = 0; r < R; ++r) s16[r] = _mm256_setzero_si256();
    for (size_t g = g0; g < g1; ++g) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 32 * g));
      const __m256i c0 = _mm256_and_si256(_mm256_srli_epi16(v, 6), m3);
      const __m256i c1 = _mm256_and_si256(_mm256_srli_epi16(v, 4), m3);
      const __m256i c2 = _mm256_and_si256(_mm256_srli_epi16(v, 2), m3);
      const __m256i c3 = _mm256_and_si256(v, m3);
      for (int r = 0; r < R; ++r) {
        const auto *xg = reinterpret_cast<const __m256i *>(qx + static_cast<size_t>(r) * xs + 128 * g);
        __m256i t = _mm256_maddubs_epi16(c0, _mm256_loadu_si256(xg));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(c1, _mm256_loadu_si256(xg + 1)));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(c2, _mm256_loadu_si256(xg + 2)));
        t = _mm256_add_epi16(t, _mm256_maddubs_epi16(c3, _mm256_loadu_si256(xg + 3)));
        s16[r] = _mm256_add_epi16(s16[r], t);
      }
    }
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int r = 0; r < R; ++r) {
      auto *p = reinterpret_cast<__m256i *>(s32[r]);
      _mm256_store_si256(p, _mm256_add_epi32(_mm256_load_si256(p), _mm256_madd_epi16(s16[r], ones16)));
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i *>(s32[r]));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    h = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0xB1));
    acc[static_cast<size_t>(r) * ld] = wrap_sub(_mm_cvtsi128_si32(h), xsum[r]);
  }
}

// wo.hpp's WoTokenFn's plan: rows in blocks of 4 and 2 through token_batch256 feature by feature
// (the weights are reused from cache; blocks of 8 rows spilled their 16-bit sums to the stack and
// were no faster), the last row 4 features at a time through the row kernel, which requests the
// rows ahead (the weights come from DRAM): row(F, w_f, qx, xsum, acc, next) for F = 4 or 1.
template <class Row>
inline void token_plan(const uint8_t *w, size_t row_bytes, size_t feats, size_t groups, const int8_t *qx,
                       size_t xs, size_t rows, const int32_t *xsum, int32_t *acc, size_t ld, Row &&row) noexcept {
  size_t r = 0;
  auto batch = [&](auto rows_c) {
    constexpr int B = decltype(rows_c)::value;
    for (size_t f = 0; f < feats; ++f)
      token_batch256<B>(w + f * row_bytes, groups, qx + r * xs, xs, xsum + r, acc + r * ld + f, ld);
    r += B;
  };
  while (rows - r >= 4) batch(std::integral_constant<int, 4>{});
  if (rows - r >= 2) batch(std::integral_constant<int, 2>{});
  if (r < rows) {
    const int8_t *x = qx + r * xs;
    int32_t *a = acc + r * ld;
    size_t f = 0;
    for (; f + 4 <= feats; f += 4)
      row(std::integral_constant<int, 4>{}, w + f * row_bytes, x, xsum[r], a + f,
          token_ahead(w + f * row_bytes, row_bytes));
    for (; f < feats; ++f)
      row(std::integral_constant<int, 1>{}, w + f * row_bytes, x, xsum[r], a + f,
          token_ahead(w + f * row_bytes, row_bytes));
  }
}

// wo.hpp's WoTokenFn (the avx2 and avx512 tables): the row kernel token_rows256.
inline void token256(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats, const int8_t *qx,
                     size_t xs, size_t rows, const int32_t *xsum, int32_t *acc, size_t ld) noexcept {
  token_plan(w, row_bytes, feats, groups, qx, xs, rows, xsum, acc, ld,
             [&](auto fc, const uint8_t *wf, const int8_t *x, int32_t s, int32_t *a, uintptr_t next) {
               token_rows256<decltype(fc)::value>(wf, row_bytes, groups, x, s, a, next);
             });
}

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// wo.hpp's WoTokenFn on AVX-512 VNNI: the row kernel token_rows_vnni. The blocks of rows keep
// token_batch256: a vpdpbusd form with a sum per row and plane measured level with it (GCC
// copied its 16 sums between registers around each vpdpbusd and spilled).
inline void token_vnni(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats, const int8_t *qx,
                       size_t xs, size_t rows, const int32_t *xsum, int32_t *acc, size_t ld) noexcept {
  token_plan(w, row_bytes, feats, groups, qx, xs, rows, xsum, acc, ld,
             [&](auto fc, const uint8_t *wf, const int8_t *x, int32_t s, int32_t *a, uintptr_t next) {
               token_rows_vnni<decltype(fc)::value>(wf, row_bytes, groups, x, s, a, next);
             });
}
#endif  // __AVX512VNNI__ && __AVX512VL__

#endif  // __AVX2__

}  // namespace wo
}  // namespace
}  // namespace qnt::kern
