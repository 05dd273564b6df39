// The block-dot mode's kernels (QNT_WEIGHT_ONLY_INT8_BLOCK; layout in wo.hpp): AVX-512 VNNI
// (compiled in that table's translation unit) and AVX2 (the AVX2 and AVX-512 tables), each
// under its ISA's macro.
//
// Features go across the vector: one zmm holds 16 features' int32 block sums, and a step of 64
// packed bytes is vpdpbusd's unsigned operand for those 16 features and 4 elements (8 for 4-bit
// codes: the low nibbles, then the high ones), the activations' 4 bytes its broadcast signed
// operand. So a block costs, per row and 16 features, B / 4 vpdpbusd, then one vcvtdq2ps, one
// vmulps (sx * sw) and one fma: the rule's float work is once per block, and the nibbles are
// split once per step for every row of the tile.
//
// Exactness: vpdpbusd multiplies u8 by s8 (each product fits int16) and adds four of them to the
// int32 lane with wrap-around (not vpdpbusds, which saturates). The lane starts at zc * (minus
// the block's sum of qx): a broadcast from the activations' side when zc is the same for every
// feature and block, else zc's bytes times it by vpmulld. So it ends at
// sum((operand - zc) * qx) = sum(v * qx) modulo 2^32, the rule's p. The float part is the
// rule's: (float)p, sx * sw rounded, one fma per block in order.
#pragma once

#include "kernels/ref/ops_ref.hpp"
#include "kernels/wo/wo.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace qnt::kern {
namespace {  // (one translation unit: wo_x86.hpp's convention)
namespace wo {

// run(code, vary) with w's code and whether its zero points vary, as compile-time constants
// (std::integral_constant; NF4's zc is always 128).
template <class Run>
inline void blk_dispatch(const WoBlkArgs &w, Run &&run) noexcept {
  using Int4 = std::integral_constant<WoCode, WoCode::Int4>;
  using Byte = std::integral_constant<WoCode, WoCode::Byte>;
  const bool vary = w.zc_const < 0;
  switch (w.code) {
    case WoCode::Int4:
      return vary ? run(Int4{}, std::true_type{}) : run(Int4{}, std::false_type{});
    case WoCode::NF4:
      return run(std::integral_constant<WoCode, WoCode::NF4>{}, std::false_type{});
    default:
      return vary ? run(Byte{}, std::true_type{}) : run(Byte{}, std::false_type{});
  }
}

#if defined(__AVX512VNNI__)
namespace blk_detail {

inline __m512i bcast4(const int8_t *p) noexcept {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Requests the line `off` bytes past p into L2. The address is made as an integer: it may lie
// past the packed weights' end (the last tiles'), where a prefetch is harmless but a pointer
// may not point.
inline void prefetch_l2(const void *p, size_t off) noexcept {
  _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(p) + off), _MM_HINT_T1);
}

// Holds each sum in its register across the loop's back edge: without it GCC keeps two
// registers a sum and copies between them every step (a vmovdqa per vpdpbusd, on the same two
// ports as vpdpbusd where the copy is not eliminated).
template <int R, int PN>
inline void keep([[maybe_unused]] __m512i (&s)[R][PN]) noexcept {
#if !defined(QNT_WO_EMULATED)
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < PN; ++q) asm("" : "+v"(s[r][q]));
#endif
}

// NF4's operands kNF4Int8[c] + 128, for vpshufb (the same 16 bytes in each 128-bit lane).
inline __m512i nf4_table() noexcept {
  alignas(16) uint8_t t[16];
  for (int c = 0; c < 16; ++c) t[c] = static_cast<uint8_t>(ref::kNF4Int8[c] + 128);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i *>(t)));
}

// R rows (from row r0) against PN panels (from panel p) over all of K. kOut: the float sums
// live in out (read and written once a block) rather than in registers, which leaves the
// registers to R x PN int32 sums: the 8 x 2 tiles below.
template <int R, int PN, WoCode C, bool kVary, bool kOut = false>
inline void tile(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, float *out,
                 size_t ldo) noexcept {
  constexpr bool kFour = C != WoCode::Byte;
  constexpr size_t kPer = kFour ? 8 : 4;
  constexpr size_t F = kWoBlkPanel;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  const __m512i table = C == WoCode::NF4 ? nf4_table() : _mm512_setzero_si512();
  // Byte 0 of each dword into all four (vpshufb within 128-bit lanes).
  [[maybe_unused]] const __m512i spread = _mm512_set_epi8(12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0, 12, 12, 12, 12, 8, 8,
                                         8, 8, 4, 4, 4, 4, 0, 0, 0, 0, 12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4,
                                         0, 0, 0, 0, 12, 12, 12, 12, 8, 8, 8, 8, 4, 4, 4, 4, 0, 0, 0, 0);
  const uint8_t *codes[PN];
  const float *scales[PN];
  const uint8_t *zcs[PN];
  for (int q = 0; q < PN; ++q) {
    codes[q] = w.data + (p + static_cast<size_t>(q)) * w.panel_stride;
    scales[q] = reinterpret_cast<const float *>(codes[q] + w.code_bytes);
    zcs[q] = codes[q] + w.code_bytes + 4 * F * w.blocks;
  }
  const int8_t *qx[R];
  for (int r = 0; r < R; ++r) qx[r] = x.qx + (r0 + static_cast<size_t>(r)) * x.qx_stride;
  const float *sx = x.sx + r0 * x.blk_stride;
  const int32_t *nsum = x.nsum + r0 * x.blk_stride;
  const size_t bs = x.blk_stride;
  const size_t ahead = PN * w.panel_stride;
  [[maybe_unused]] __m512 acc[R][PN];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < PN; ++q) {
      if constexpr (kOut)
        _mm512_storeu_ps(out + static_cast<size_t>(r) * ldo + F * static_cast<size_t>(q), _mm512_setzero_ps());
      else
        acc[r][q] = _mm512_setzero_ps();
    }
  for (size_t j = 0; j < w.blocks; ++j) {
    __m512i s[R][PN];
    // 4-bit codes with zero points that vary: each operand is c - zc + 16 (in [1, 31]), the
    // bytes 16 - zc added to the split nibbles, so that every feature's sum starts at the same
    // 16 * (minus the block's sum of qx) instead of a vpmulld of zc per row.
    [[maybe_unused]] __m512i shift[PN];
    for (int q = 0; q < PN; ++q) {
      // The next tile's scales (and zero points) of this block, beside its codes below.
      prefetch_l2(scales[q] + F * j, ahead);
      if constexpr (kVary && kFour) {
        prefetch_l2(zcs[q] + F * j, ahead);
        const __m512i zc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(zcs[q] + F * j)));
        shift[q] = _mm512_sub_epi8(_mm512_set1_epi8(16), _mm512_shuffle_epi8(zc, spread));
        for (int r = 0; r < R; ++r)
          s[r][q] = _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(nsum[static_cast<size_t>(r) * bs + j]) << 4));
      } else if constexpr (kVary) {
        prefetch_l2(zcs[q] + F * j, ahead);
        const __m512i zc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(zcs[q] + F * j)));
        for (int r = 0; r < R; ++r)
          s[r][q] = _mm512_mullo_epi32(zc, _mm512_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]));
      } else {  // (nsum holds zc * -sum)
        for (int r = 0; r < R; ++r) s[r][q] = _mm512_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]);
      }
    }
    const size_t t1 = std::min(w.steps, (j + 1) * w.block_steps);
    for (size_t t = j * w.block_steps; t < t1; ++t) {
      if constexpr (kOut && kFour && !kVary) {
        // Every panel's nibbles first, then each row's two broadcasts meet all of them: per step
        // 3 (NF4: 5) vector operations a panel for 2 R vpdpbusd.
        __m512i lo[PN], hi[PN];
        for (int q = 0; q < PN; ++q) {
          prefetch_l2(codes[q], ahead + 64 * t);
          const __m512i raw = _mm512_loadu_si512(codes[q] + 64 * t);
          lo[q] = _mm512_and_si512(raw, mask);
          hi[q] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
          if constexpr (C == WoCode::NF4) {
            lo[q] = _mm512_shuffle_epi8(table, lo[q]);
            hi[q] = _mm512_shuffle_epi8(table, hi[q]);
          }
        }
        for (int r = 0; r < R; ++r) {
          const __m512i b0 = bcast4(qx[r] + kPer * t), b1 = bcast4(qx[r] + kPer * t + 4);
          for (int q = 0; q < PN; ++q) s[r][q] = _mm512_dpbusd_epi32(s[r][q], lo[q], b0);
          for (int q = 0; q < PN; ++q) s[r][q] = _mm512_dpbusd_epi32(s[r][q], hi[q], b1);
        }
        keep(s);
        continue;
      }
      for (int q = 0; q < PN; ++q) {
        // The same line of the panel PN places on (the next tile's) into L2.
        prefetch_l2(codes[q], ahead + 64 * t);
        const __m512i raw = _mm512_loadu_si512(codes[q] + 64 * t);
        if constexpr (kFour) {
          __m512i lo = _mm512_and_si512(raw, mask);
          __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
          if constexpr (C == WoCode::NF4) {
            lo = _mm512_shuffle_epi8(table, lo);
            hi = _mm512_shuffle_epi8(table, hi);
          }
          if constexpr (kVary) {
            lo = _mm512_add_epi8(lo, shift[q]);
            hi = _mm512_add_epi8(hi, shift[q]);
          }
          for (int r = 0; r < R; ++r) s[r][q] = _mm512_dpbusd_epi32(s[r][q], lo, bcast4(qx[r] + kPer * t));
          for (int r = 0; r < R; ++r) s[r][q] = _mm512_dpbusd_epi32(s[r][q], hi, bcast4(qx[r] + kPer * t + 4));
        } else {
          for (int r = 0; r < R; ++r) s[r][q] = _mm512_dpbusd_epi32(s[r][q], raw, bcast4(qx[r] + kPer * t));
        }
      }
      keep(s);
    }
    for (int q = 0; q < PN; ++q) {
      const __m512 sw = _mm512_loadu_ps(scales[q] + F * j);
      for (int r = 0; r < R; ++r) {
        const __m512 d = _mm512_mul_ps(sw, _mm512_set1_ps(sx[static_cast<size_t>(r) * bs + j]));
        if constexpr (kOut) {
          float *o = out + static_cast<size_t>(r) * ldo + F * static_cast<size_t>(q);
          _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][q]), d, _mm512_loadu_ps(o)));
        } else {
          acc[r][q] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[r][q]), d, acc[r][q]);
        }
      }
    }
  }
  if constexpr (!kOut)
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < PN; ++q) _mm512_storeu_ps(out + static_cast<size_t>(r) * ldo + F * static_cast<size_t>(q), acc[r][q]);
}

// A tile of 4 rows and 3 panels (12 int32 and 12 float sums in zmm). Measured on Zen 4 (4096^2,
// int4 block 128, batch 16, one thread, weights in L3): 6 x 2 spilled and took 1.8 ms; 4 x 3,
// 5 x 2 and 8 x 1 1.5-1.6 ms, 4 x 4 1.7-1.8 ms.
constexpr int kRows = 4;
constexpr int kPanels = 3;

// rows (1 .. kRows) against PN panels.
template <int PN, WoCode C, bool V>
inline void rows_tile(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, size_t rows,
                      float *out, size_t ldo) noexcept {
  switch (rows) {
    case 1: return tile<1, PN, C, V>(w, p, x, r0, out, ldo);
    case 2: return tile<2, PN, C, V>(w, p, x, r0, out, ldo);
    case 3: return tile<3, PN, C, V>(w, p, x, r0, out, ldo);
    default: return tile<4, PN, C, V>(w, p, x, r0, out, ldo);
  }
}

// Groups of 8 rows of 4-bit codes. Those whose zero points vary add 16 - zc to both nibbles of
// every step (two vpaddb a panel), so their groups take tiles of 8 rows x 1 panel: the split and
// the additions once for 16 vpdpbusd instead of 8 (Zen 4, uint4 affine block 32, batch 16, one
// thread, best of 5 alternated: 1805 -> 1700 us; two threads 1229 -> 1124 us). Bytes whose zero
// points vary (a vpmulld per row, panel and block) ran slower so (uint8 block 128: 1467 -> 1582
// us). Symmetric int4 and NF4 gained nothing from 8 x 1 on the Zen 4; since 0.12.9 they take
// 8 x 2 with the float sums in out (32 vpdpbusd a step for 6 nibble operations; on the Emerald
// Rapids Xeon, int4 block 128 at batch 16 1.77x and NF4 block 64 1.20x, best of three rounds).
constexpr int kRowGroup = 8;

template <WoCode C, bool V>
void run(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows, float *out,
         size_t ldo) noexcept {
  constexpr size_t F = kWoBlkPanel;
  size_t first = 0;  // the first row of the 4 x 3 tiles
  if constexpr (C != WoCode::Byte) {
    // 4-bit codes: groups of 8 rows first, symmetric ones 2 panels a tile (the float sums in
    // out), varying zero points and an odd last panel 1.
    first = rows / kRowGroup * kRowGroup;
    size_t p = p0;
    if constexpr (!V)
      for (; p + 2 <= p1; p += 2)
        for (size_t r0 = 0; r0 < first; r0 += kRowGroup)
          tile<kRowGroup, 2, C, V, true>(w, p, x, r0, out + r0 * ldo + F * (p - p0), ldo);
    for (; p < p1; ++p)
      for (size_t r0 = 0; r0 < first; r0 += kRowGroup)
        tile<kRowGroup, 1, C, V>(w, p, x, r0, out + r0 * ldo + F * (p - p0), ldo);
  }
  size_t p = p0;
  if (rows == 1) {  // four streams of weights at once
    for (; p + 4 <= p1; p += 4) tile<1, 4, C, V>(w, p, x, 0, out + F * (p - p0), ldo);
  }
  for (; p + kPanels <= p1 && first < rows; p += kPanels)
    for (size_t r0 = first; r0 < rows; r0 += kRows)
      rows_tile<kPanels, C, V>(w, p, x, r0, std::min<size_t>(kRows, rows - r0), out + r0 * ldo + F * (p - p0), ldo);
  for (; p < p1 && first < rows; ++p)
    for (size_t r0 = first; r0 < rows; r0 += kRows)
      rows_tile<1, C, V>(w, p, x, r0, std::min<size_t>(kRows, rows - r0), out + r0 * ldo + F * (p - p0), ldo);
}

}  // namespace blk_detail

inline void blk_vnni(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows,
                     float *out, size_t ldo) noexcept {
  blk_dispatch(w, [&](auto code, auto vary) {
    blk_detail::run<decltype(code)::value, decltype(vary)::value>(w, p0, p1, x, rows, out, ldo);
  });
}
#endif  // __AVX512VNNI__

#if defined(__AVX2__)
// The AVX2 kernel (the AVX2 and AVX-512 tables): 8 features a ymm, a panel's step as two halves
// (features 0-7, 8-15). Without vpdpbusd, each dword of unsigned operands (4 elements of a
// feature) is split into its even and odd bytes as int16 (vpand, vpsrlw), and so are the
// activations' 4 bytes (sign-extended: vpsllw + vpsraw, vpsraw); two vpmaddwd give the dword's
// four products, each at most 255 * 127, summed exactly in int32. (vpmaddubsw would saturate its
// pair sums on operands above 128, as NF4's and bytes' are.) Int4 and uint4 codes (operands at
// most 15) take vpmaddubsw instead (tile_nib, tile_nib1, tile_nibr). Batches of 1 to 4 rows
// read four panels at once (tile_nib1, tile_nibr, tile_r), larger ones 2 rows against a panel
// (tile_nib, tile).
namespace blk256 {

inline __m256i bcast4(const int8_t *p) noexcept {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// A tile's pointers: panel p's codes, scales and zero points, and rows r0.. of the activations
// (their qx rows, sx and nsum, and the stride of the last two).
template <int R>
struct TileView {
  const uint8_t *codes;
  const float *scales;
  const uint8_t *zcs;
  std::array<const int8_t *, R> qx;
  const float *sx;
  const int32_t *nsum;
  size_t bs;
  TileView(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0) noexcept
      : codes(w.data + p * w.panel_stride),
        scales(reinterpret_cast<const float *>(codes + w.code_bytes)),
        zcs(codes + w.code_bytes + 4 * kWoBlkPanel * w.blocks),
        qx(),
        sx(x.sx + r0 * x.blk_stride),
        nsum(x.nsum + r0 * x.blk_stride),
        bs(x.blk_stride) {
    for (int r = 0; r < R; ++r) qx[static_cast<size_t>(r)] = x.qx + (r0 + static_cast<size_t>(r)) * x.qx_stride;
  }
};

template <int R, WoCode C, bool kVary>
inline void tile(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, float *out,
                 size_t ldo) noexcept {
  constexpr bool kFour = C != WoCode::Byte;
  constexpr size_t kPer = kFour ? 8 : 4;
  constexpr size_t F = kWoBlkPanel;
  const __m256i mask4 = _mm256_set1_epi8(0x0f), mask_even = _mm256_set1_epi16(0x00ff);
  alignas(16) uint8_t tb[16];
  for (int c = 0; c < 16; ++c) tb[c] = static_cast<uint8_t>(ref::kNF4Int8[c] + 128);
  const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(tb)));
  const auto [codes, scales, zcs, qx, sx, nsum, bs] = TileView<R>(w, p, x, r0);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (size_t j = 0; j < w.blocks; ++j) {
    __m256i s[R][2];
    for (int h = 0; h < 2; ++h) {
      if constexpr (kVary) {
        const __m256i zc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(zcs + F * j + 8 * h)));
        for (int r = 0; r < R; ++r)
          s[r][h] = _mm256_mullo_epi32(zc, _mm256_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]));
      } else {  // (nsum holds zc * -sum)
        for (int r = 0; r < R; ++r) s[r][h] = _mm256_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]);
      }
    }
    const size_t t1 = std::min(w.steps, (j + 1) * w.block_steps);
    for (size_t t = j * w.block_steps; t < t1; ++t) {
      for (int e = 0; e < (kFour ? 2 : 1); ++e) {  // the step's quads (low nibbles, high ones)
        __m256i xe[R], xo[R];
        for (int r = 0; r < R; ++r) {
          const __m256i b = bcast4(qx[static_cast<size_t>(r)] + kPer * t + 4 * static_cast<size_t>(e));
          xe[r] = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
          xo[r] = _mm256_srai_epi16(b, 8);
        }
        for (int h = 0; h < 2; ++h) {
          __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(codes + 64 * t + 32 * static_cast<size_t>(h)));
          if constexpr (kFour) {
            v = _mm256_and_si256(e == 0 ? v : _mm256_srli_epi16(v, 4), mask4);
            if constexpr (C == WoCode::NF4) v = _mm256_shuffle_epi8(table, v);
          }
          const __m256i we = _mm256_and_si256(v, mask_even), wo = _mm256_srli_epi16(v, 8);
          for (int r = 0; r < R; ++r)
            s[r][h] = _mm256_add_epi32(s[r][h], _mm256_add_epi32(_mm256_madd_epi16(we, xe[r]),
                                                                 _mm256_madd_epi16(wo, xo[r])));
        }
      }
    }
    for (int h = 0; h < 2; ++h) {
      const __m256 sw = _mm256_loadu_ps(scales + F * j + 8 * static_cast<size_t>(h));
      for (int r = 0; r < R; ++r) {
        const __m256 d = _mm256_mul_ps(sw, _mm256_set1_ps(sx[static_cast<size_t>(r) * bs + j]));
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][h]), d, acc[r][h]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out + static_cast<size_t>(r) * ldo + 8 * static_cast<size_t>(h), acc[r][h]);
}

// 4-bit integer codes (int4, uint4: operands 0..15) by vpmaddubsw, which cannot saturate on
// them: a pair of products is at most 2 * 15 * 127 = 3810, so the 16-bit sums take both nibbles
// of 4 steps (8 pairs, at most 30480) before one vpmaddwd by ones widens them into the block's
// int32 sums. Per half panel and step: a load, vpsrlw and two vpand, then per row two
// vpmaddubsw and two vpaddw (the even/odd split above costs a row four vpmaddwd, four vpaddd
// and the activations' split). Each half panel runs a whole block before the other (its bytes
// are in L1 by then), so a row keeps one 16-bit, one 32-bit and two float sums in registers.
// One step of R rows on a half panel (c: its first byte): both nibbles of 8 features' 8
// elements against each row's 8 activations, into the rows' 16-bit sums a.
template <int R>
[[gnu::always_inline]] inline void nib_step(const uint8_t *c, const std::array<const int8_t *, R> &qx, size_t t, __m256i mask4,
                                            __m256i (&a)[R]) noexcept {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 64 * t));
  const __m256i lo = _mm256_and_si256(v, mask4);
  const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask4);
  for (int r = 0; r < R; ++r) {
    const __m256i pl = _mm256_maddubs_epi16(lo, bcast4(qx[static_cast<size_t>(r)] + 8 * t));
    const __m256i ph = _mm256_maddubs_epi16(hi, bcast4(qx[static_cast<size_t>(r)] + 8 * t + 4));
    a[r] = _mm256_add_epi16(a[r], _mm256_add_epi16(pl, ph));
    // (keeps GCC from hoisting every step's loads and products ahead of the sums, which
    // spilled them)
    asm("" : "+x"(a[r]));
  }
}

// step(u) for u in [t, u1), a run of at most kFlush = 4 steps (a 16-bit sum's), unrolled when whole.
template <class Step>
[[gnu::always_inline]] inline void steps_to(size_t t, size_t u1, Step &step) noexcept {
  if (u1 - t == 4) {
    step(t);
    step(t + 1);
    step(t + 2);
    step(t + 3);
  } else {
    for (size_t u = t; u < u1; ++u) step(u);
  }
}

template <int R, bool kVary>
inline void tile_nib(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, float *out,
                     size_t ldo) noexcept {
  constexpr size_t F = kWoBlkPanel;
  constexpr size_t kFlush = 4;  // steps a 16-bit sum takes
  const __m256i mask4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const auto [codes, scales, zcs, qx, sx, nsum, bs] = TileView<R>(w, p, x, r0);
  __m256 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (size_t j = 0; j < w.blocks; ++j) {
    const size_t t0 = j * w.block_steps, t1 = std::min(w.steps, t0 + w.block_steps);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      const uint8_t *c = codes + 32 * static_cast<size_t>(h);
      __m256i s[R];
      if constexpr (kVary) {
        const __m256i zc = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(zcs + F * j + 8 * static_cast<size_t>(h))));
        for (int r = 0; r < R; ++r)
          s[r] = _mm256_mullo_epi32(zc, _mm256_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]));
      } else {  // (nsum holds zc * -sum)
        for (int r = 0; r < R; ++r) s[r] = _mm256_set1_epi32(nsum[static_cast<size_t>(r) * bs + j]);
      }
      size_t t = t0;
      for (; t < t1;) {
        const size_t u1 = std::min(t1, t + kFlush);
        __m256i a[R];
        for (int r = 0; r < R; ++r) a[r] = _mm256_setzero_si256();
        if (u1 - t == kFlush) {
          nib_step<R>(c, qx, t, mask4, a);
          nib_step<R>(c, qx, t + 1, mask4, a);
          nib_step<R>(c, qx, t + 2, mask4, a);
          nib_step<R>(c, qx, t + 3, mask4, a);
          t += kFlush;
        } else {
          for (; t < u1; ++t) nib_step<R>(c, qx, t, mask4, a);
        }
        for (int r = 0; r < R; ++r) s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(a[r], ones));
      }
      const __m256 sw = _mm256_loadu_ps(scales + F * j + 8 * static_cast<size_t>(h));
      for (int r = 0; r < R; ++r) {
        const __m256 d = _mm256_mul_ps(sw, _mm256_set1_ps(sx[static_cast<size_t>(r) * bs + j]));
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r]), d, acc[r][h]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out + static_cast<size_t>(r) * ldo + 8 * static_cast<size_t>(h), acc[r][h]);
}

// A block's starting sums (wo.hpp): s[r][q][h] for the tile's R rows and PN panels of block j.
template <int R, int PN, bool kVary>
[[gnu::always_inline]] inline void block_start(const WoBlkArgs &w, const TileView<R> &tv, size_t j,
                                               __m256i (&s)[R][PN][2]) noexcept {
  for (int q = 0; q < PN; ++q) {
    const uint8_t *zcs = tv.zcs + static_cast<size_t>(q) * w.panel_stride + kWoBlkPanel * j;
    for (int r = 0; r < R; ++r) {
      const int32_t n = tv.nsum[static_cast<size_t>(r) * tv.bs + j];
      if constexpr (kVary) {
        s[r][q][0] = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(zcs))), _mm256_set1_epi32(n));
        s[r][q][1] = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(zcs + 8))), _mm256_set1_epi32(n));
      } else {  // (nsum holds zc * -sum)
        s[r][q][0] = s[r][q][1] = _mm256_set1_epi32(n);
      }
    }
  }
}

// A block's end: out[r * ldo + 16 q + f] += (float)s * (sw * sx), rows r and panels q.
template <int R, int PN>
[[gnu::always_inline]] inline void block_end(const WoBlkArgs &w, const TileView<R> &tv, size_t j,
                                             const __m256i (&s)[R][PN][2], float *out, size_t ldo) noexcept {
  for (int q = 0; q < PN; ++q) {
    const auto *scales = reinterpret_cast<const float *>(tv.codes + static_cast<size_t>(q) * w.panel_stride + w.code_bytes) + kWoBlkPanel * j;
    for (int r = 0; r < R; ++r) {
      const __m256 sxr = _mm256_set1_ps(tv.sx[static_cast<size_t>(r) * tv.bs + j]);
      for (int h = 0; h < 2; ++h) {
        float *o = out + static_cast<size_t>(r) * ldo + kWoBlkPanel * static_cast<size_t>(q) + 8 * static_cast<size_t>(h);
        _mm256_storeu_ps(o, _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[r][q][h]), _mm256_mul_ps(_mm256_loadu_ps(scales + 8 * h), sxr), _mm256_loadu_ps(o)));
      }
    }
  }
}

template <int R, int PN>
inline void zero_out(float *out, size_t ldo) noexcept {
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < 2 * PN; ++q) _mm256_storeu_ps(out + static_cast<size_t>(r) * ldo + 8 * static_cast<size_t>(q), _mm256_setzero_ps());
}

// One row (batch 1): PN panels (PN streams of weights at once) 4 steps (256 bytes) of each in
// turn, both half panels a step, so that the step's activations are broadcast once; the rows'
// int32 sums of a block for all PN panels stay in registers, the float sums in out.
template <int PN, bool kVary>
inline void tile_nib1(const WoBlkArgs &w, size_t p, const WoBlkActs &x, float *out) noexcept {
  constexpr size_t kFlush = 4;
  const __m256i mask4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const int8_t *qx = x.qx;
  const TileView<1> tv(w, p, x, 0);
  const uint8_t *codes = tv.codes;
  const size_t ps = w.panel_stride;
  zero_out<1, PN>(out, 0);
  for (size_t j = 0; j < w.blocks; ++j) {
    const size_t t0 = j * w.block_steps, t1 = std::min(w.steps, t0 + w.block_steps);
    __m256i s[1][PN][2];
    block_start<1, PN, kVary>(w, tv, j, s);
    for (size_t t = t0; t < t1; t += kFlush) {
      const size_t u1 = std::min(t1, t + kFlush);
      for (int q = 0; q < PN; ++q) {
        const uint8_t *c = codes + static_cast<size_t>(q) * ps;
        __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
        const auto step = [&](size_t u) {
          const __m256i xl = bcast4(qx + 8 * u), xh = bcast4(qx + 8 * u + 4);
          const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 64 * u));
          const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 64 * u + 32));
          const __m256i l0 = _mm256_and_si256(v0, mask4), h0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), mask4);
          const __m256i l1 = _mm256_and_si256(v1, mask4), h1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), mask4);
          a0 = _mm256_add_epi16(a0, _mm256_add_epi16(_mm256_maddubs_epi16(l0, xl), _mm256_maddubs_epi16(h0, xh)));
          a1 = _mm256_add_epi16(a1, _mm256_add_epi16(_mm256_maddubs_epi16(l1, xl), _mm256_maddubs_epi16(h1, xh)));
          // (keeps GCC from hoisting every step's loads and products ahead of the sums, which
          // spilled them)
          asm("" : "+x"(a0), "+x"(a1));
        };
        steps_to(t, u1, step);
        s[0][q][0] = _mm256_add_epi32(s[0][q][0], _mm256_madd_epi16(a0, ones));
        s[0][q][1] = _mm256_add_epi32(s[0][q][1], _mm256_madd_epi16(a1, ones));
      }
    }
    block_end<1, PN>(w, tv, j, s, out, 0);
  }
}

// Small batches (R rows, 1 to 4) of int4 and uint4 codes: PN panels (PN streams of weights at
// once) 4 steps (256 bytes) of each in turn, both half panels a step, so that the step's
// activations are broadcast once per row; a block's int32 sums of every row and panel wait in
// s (registers at one row), the float sums in out.
template <int R, int PN, bool kVary>
inline void tile_nibr(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, float *out, size_t ldo) noexcept {
  constexpr size_t kFlush = 4;
  const __m256i mask4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
  const TileView<R> tv(w, p, x, r0);  // (not a structured binding: lambdas capture tv.qx)
  const size_t ps = w.panel_stride;
  zero_out<R, PN>(out, ldo);
  for (size_t j = 0; j < w.blocks; ++j) {
    const size_t t0 = j * w.block_steps, t1 = std::min(w.steps, t0 + w.block_steps);
    __m256i s[R][PN][2];
    block_start<R, PN, kVary>(w, tv, j, s);
    for (size_t t = t0; t < t1; t += kFlush) {
      const size_t u1 = std::min(t1, t + kFlush);
      for (int q = 0; q < PN; ++q) {
        const uint8_t *c = tv.codes + static_cast<size_t>(q) * ps;
        __m256i a[R][2];
        for (int r = 0; r < R; ++r) a[r][0] = a[r][1] = _mm256_setzero_si256();
        const auto step = [&](size_t u) {
          const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 64 * u));
          const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 64 * u + 32));
          const __m256i l0 = _mm256_and_si256(v0, mask4), h0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), mask4);
          const __m256i l1 = _mm256_and_si256(v1, mask4), h1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), mask4);
          for (int r = 0; r < R; ++r) {
            const __m256i xl = bcast4(tv.qx[static_cast<size_t>(r)] + 8 * u), xh = bcast4(tv.qx[static_cast<size_t>(r)] + 8 * u + 4);
            a[r][0] = _mm256_add_epi16(a[r][0], _mm256_add_epi16(_mm256_maddubs_epi16(l0, xl), _mm256_maddubs_epi16(h0, xh)));
            a[r][1] = _mm256_add_epi16(a[r][1], _mm256_add_epi16(_mm256_maddubs_epi16(l1, xl), _mm256_maddubs_epi16(h1, xh)));
            // (keeps GCC from hoisting every step's loads and products ahead of the sums,
            // which spilled them)
            asm("" : "+x"(a[r][0]), "+x"(a[r][1]));
          }
        };
        steps_to(t, u1, step);
        for (int r = 0; r < R; ++r)
          for (int h = 0; h < 2; ++h) s[r][q][h] = _mm256_add_epi32(s[r][q][h], _mm256_madd_epi16(a[r][h], ones));
      }
    }
    block_end<R, PN>(w, tv, j, s, out, ldo);
  }
}

// Small batches (R rows, 1 to 4) of NF4 or byte codes: PN panels a step at a time, both half
// panels, by the even/odd split of tile, each row's activations split once for the PN panels;
// the float sums in out.
template <int R, int PN, WoCode C, bool kVary>
inline void tile_r(const WoBlkArgs &w, size_t p, const WoBlkActs &x, size_t r0, float *out, size_t ldo) noexcept {
  constexpr bool kFour = C != WoCode::Byte;
  constexpr size_t kPer = kFour ? 8 : 4;
  const __m256i mask4 = _mm256_set1_epi8(0x0f), mask_even = _mm256_set1_epi16(0x00ff);
  alignas(16) uint8_t tb[16];
  for (int c = 0; c < 16; ++c) tb[c] = static_cast<uint8_t>(ref::kNF4Int8[c] + 128);
  const __m256i table = _mm256_broadcastsi128_si256(_mm_load_si128(reinterpret_cast<const __m128i *>(tb)));
  const TileView<R> tv(w, p, x, r0);
  const size_t ps = w.panel_stride;
  zero_out<R, PN>(out, ldo);
  for (size_t j = 0; j < w.blocks; ++j) {
    const size_t t0 = j * w.block_steps, t1 = std::min(w.steps, t0 + w.block_steps);
    __m256i s[R][PN][2];
    block_start<R, PN, kVary>(w, tv, j, s);
    for (size_t t = t0; t < t1; ++t) {
      for (int e = 0; e < (kFour ? 2 : 1); ++e) {  // the step's quads (low nibbles, high ones)
        __m256i xe[R], xo[R];
        for (int r = 0; r < R; ++r) {
          const __m256i b = bcast4(tv.qx[static_cast<size_t>(r)] + kPer * t + 4 * static_cast<size_t>(e));
          xe[r] = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
          xo[r] = _mm256_srai_epi16(b, 8);
        }
        for (int q = 0; q < PN; ++q) {
          const uint8_t *c = tv.codes + static_cast<size_t>(q) * ps + 64 * t;
          for (int h = 0; h < 2; ++h) {
            __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(c + 32 * h));
            if constexpr (kFour) v = _mm256_shuffle_epi8(table, _mm256_and_si256(e == 0 ? v : _mm256_srli_epi16(v, 4), mask4));
            const __m256i we = _mm256_and_si256(v, mask_even), wo = _mm256_srli_epi16(v, 8);
            for (int r = 0; r < R; ++r)
              s[r][q][h] = _mm256_add_epi32(s[r][q][h], _mm256_add_epi32(_mm256_madd_epi16(we, xe[r]), _mm256_madd_epi16(wo, xo[r])));
          }
        }
      }
    }
    block_end<R, PN>(w, tv, j, s, out, ldo);
  }
}

// Panels a batch-1 tile reads at once. Measured on Zen 3 (4096^2, int4 block 128, weights from
// DRAM, one thread, best of 8 alternated): one panel at a time 617 us, with its next panel
// requested ahead (prefetcht1) 497-512; two panels with the next two requested 414-435; four
// panels, nothing requested, 419-440; requests inside the stream (2-8 KiB ahead) were slower.
// The four panels must take turns at a fine grain: a block at a time, int4 block 512 took
// 587-624 us (one thread) against 372-377 for 4 steps at a time, and int8 block 128 (2 KiB a
// panel) 952-1000 against 698 for a step at a time. A plain 4-stream sum reads 20-22 GB/s on
// this VM.
constexpr size_t kNibStreams = 4;

// Batches up to kSmallRows rows run R rows against kNibStreams panels at once (tile_nib1,
// tile_nibr, tile_r); larger ones 2 rows against a panel (tile_nib, tile). One row of 4-bit
// integer codes keeps tile_nib1, whose sums stay in named registers: tile_nibr<1, 4> took 5.2
// TSC ticks a step of a panel from L2 against its 4.5 (Zen 3, 16 panels of K = 4096).
constexpr size_t kSmallRows = 4;

template <int R, WoCode C, bool V>
void small(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, float *out, size_t ldo) noexcept {
  constexpr size_t F = kWoBlkPanel;
  size_t p = p0;
  for (; p + kNibStreams <= p1; p += kNibStreams) {
    if constexpr (C == WoCode::Int4 && R == 1)
      tile_nib1<kNibStreams, V>(w, p, x, out + F * (p - p0));
    else if constexpr (C == WoCode::Int4)
      tile_nibr<R, kNibStreams, V>(w, p, x, 0, out + F * (p - p0), ldo);
    else
      tile_r<R, kNibStreams, C, V>(w, p, x, 0, out + F * (p - p0), ldo);
  }
  for (; p < p1; ++p) {
    if constexpr (C == WoCode::Int4 && R == 1)
      tile_nib1<1, V>(w, p, x, out + F * (p - p0));
    else if constexpr (C == WoCode::Int4)
      tile_nibr<R, 1, V>(w, p, x, 0, out + F * (p - p0), ldo);
    else
      tile_r<R, 1, C, V>(w, p, x, 0, out + F * (p - p0), ldo);
  }
}

template <WoCode C, bool V>
void run(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows, float *out,
         size_t ldo) noexcept {
  constexpr size_t F = kWoBlkPanel;
  if (rows <= kSmallRows) {
    switch (rows) {
      case 1: return small<1, C, V>(w, p0, p1, x, out, ldo);
      case 2: return small<2, C, V>(w, p0, p1, x, out, ldo);
      case 3: return small<3, C, V>(w, p0, p1, x, out, ldo);
      default: return small<4, C, V>(w, p0, p1, x, out, ldo);
    }
  }
  for (size_t p = p0; p < p1; ++p)
    for (size_t r0 = 0; r0 < rows; r0 += 2) {
      float *o = out + r0 * ldo + F * (p - p0);
      if constexpr (C == WoCode::Int4) {
        if (rows - r0 >= 2)
          tile_nib<2, V>(w, p, x, r0, o, ldo);
        else
          tile_nib<1, V>(w, p, x, r0, o, ldo);
      } else {
        if (rows - r0 >= 2)
          tile<2, C, V>(w, p, x, r0, o, ldo);
        else
          tile<1, C, V>(w, p, x, r0, o, ldo);
      }
    }
}

}  // namespace blk256

inline void blk256_kernel(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x,
                          size_t rows, float *out, size_t ldo) noexcept {
  blk_dispatch(w, [&](auto code, auto vary) {
    blk256::run<decltype(code)::value, decltype(vary)::value>(w, p0, p1, x, rows, out, ldo);
  });
}
#endif  // __AVX2__

}  // namespace wo
}  // namespace
}  // namespace qnt::kern
