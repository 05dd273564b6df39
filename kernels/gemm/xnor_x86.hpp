// The binary GEMM's popcount kernel on AVX-512 VPOPCNTDQ (GemmXnorFn, kernels/gemm/gemm.hpp).
// Included by its own translation unit (kernels/cpu/kernels_avx512_popcnt.cpp, compiled with
// -mavx512vpopcntdq and run only where the CPU has it) and by the emulated test; internal
// linkage.
#pragma once

#include "kernels/gemm/gemm.hpp"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace qnt::kern {
namespace {

#if defined(__AVX512VPOPCNTDQ__) && defined(__AVX512VL__)
// Keeps a loaded vector in a register: without it GCC may fold the loads into the XORs and
// load each row of a three times and each of b two or three times a step (it did: 12 loads
// instead of 5 for 2 x 3 rows on 512-bit vectors, 1.74 cycles a 256-bit pair on Zen 4 against
// 0.99). The emulated test defines it away.
#if !defined(QNT_XNOR_KEEP)
#define QNT_XNOR_KEEP(v) __asm__("" : "+v"(v))
#endif

// The sums of four 256-bit vectors of 64-bit counts, one a lane: lanes 0 + 1 and 2 + 3
// interleaved, then the halves added.
inline __m256i xnor_four(__m256i d0, __m256i d1, __m256i d2, __m256i d3) noexcept {
  const __m256i t0 = _mm256_add_epi64(_mm256_unpacklo_epi64(d0, d1), _mm256_unpackhi_epi64(d0, d1));
  const __m256i t1 = _mm256_add_epi64(_mm256_unpacklo_epi64(d2, d3), _mm256_unpackhi_epi64(d2, d3));
  return _mm256_add_epi64(_mm256_permute2x128_si256(t0, t1, 0x20),
                          _mm256_permute2x128_si256(t0, t1, 0x31));
}

// Each sum's halves added (512 to 256 bits).
inline __m256i xnor_halves(__m512i v) noexcept {
  return _mm256_add_epi64(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

// The last 4 words (when `words` is an odd multiple of 4) of R rows of a (at a0, `words` apart)
// x 3 of b on 256 bits, into d (row-major).
template <int R>
inline void xnor_tail(const uint64_t *a0, const uint64_t *b0, size_t words, __m256i *d) noexcept {
  const size_t whole = words / 8 * 8;
  auto load = [&](const uint64_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + whole));
  };
  const __m256i y0 = load(b0), y1 = load(b0 + words), y2 = load(b0 + 2 * words);
  for (int i = 0; i < R; ++i) {
    const __m256i x = load(a0 + static_cast<size_t>(i) * words);
    d[3 * i] = _mm256_add_epi64(d[3 * i], _mm256_popcnt_epi64(_mm256_xor_si256(x, y0)));
    d[3 * i + 1] = _mm256_add_epi64(d[3 * i + 1], _mm256_popcnt_epi64(_mm256_xor_si256(x, y1)));
    d[3 * i + 2] = _mm256_add_epi64(d[3 * i + 2], _mm256_popcnt_epi64(_mm256_xor_si256(x, y2)));
  }
}

// The R * 3 sums of d stored as k - 2 * pop: four at a time (xnor_four), the ninth or the fifth
// and sixth by halves.
template <int R>
inline void xnor_store(const __m256i *d, int32_t k, int32_t *out, size_t ld) noexcept {
  alignas(32) uint64_t n[12];
  _mm256_store_si256(reinterpret_cast<__m256i *>(n), xnor_four(d[0], d[1], d[2], d[3]));
  if constexpr (R == 3) {
    _mm256_store_si256(reinterpret_cast<__m256i *>(n + 4), xnor_four(d[4], d[5], d[6], d[7]));
    _mm_store_si128(reinterpret_cast<__m128i *>(n + 8),
                    _mm_add_epi64(_mm256_castsi256_si128(d[8]), _mm256_extracti128_si256(d[8], 1)));
    n[8] += n[9];
  } else {
    const __m256i t =
        _mm256_add_epi64(_mm256_unpacklo_epi64(d[4], d[5]), _mm256_unpackhi_epi64(d[4], d[5]));
    _mm_store_si128(reinterpret_cast<__m128i *>(n + 4),
                    _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1)));
  }
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < 3; ++j)
      out[static_cast<size_t>(i) * ld + static_cast<size_t>(j)] = xnor_result(k, n[3 * i + j]);
}

// R (3 or 2) rows of a (at a0, `words` apart) x 3 of b: R * 3 sums of vpxorq, vpopcntq
// (64-bit counts) and vpaddq, which cannot overflow (at most 64 a word), 512 bits (8 words) a
// step and two steps an iteration, every load kept in a register (QNT_XNOR_KEEP); then the last
// 4 words and the stores (xnor_tail, xnor_store). Inlined into xnor_vpopcnt: as a function of
// its own it ran 3-5 % slower.
template <int R>
__attribute__((always_inline)) inline void xnor_rows(const uint64_t *a0, const uint64_t *b0,
                                                     size_t words, int32_t k, int32_t *out,
                                                     size_t ld) noexcept {
  static_assert(R == 2 || R == 3, "tiles of 3 or 2 rows");
  const uint64_t *a1 = a0 + words, *a2 = a1 + words, *b1 = b0 + words, *b2 = b1 + words;
  const size_t whole = words / 8 * 8;
  __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
          c7 = c0, c8 = c0;
#pragma GCC unroll 2
  for (size_t o = 0; o < whole; o += 8) {
    __m512i x0 = _mm512_loadu_si512(a0 + o), x1 = _mm512_loadu_si512(a1 + o),
            y0 = _mm512_loadu_si512(b0 + o), y1 = _mm512_loadu_si512(b1 + o),
            y2 = _mm512_loadu_si512(b2 + o);
    QNT_XNOR_KEEP(x0);
    QNT_XNOR_KEEP(x1);
    QNT_XNOR_KEEP(y0);
    QNT_XNOR_KEEP(y1);
    QNT_XNOR_KEEP(y2);
    c0 = _mm512_add_epi64(c0, _mm512_popcnt_epi64(_mm512_xor_si512(x0, y0)));
    c1 = _mm512_add_epi64(c1, _mm512_popcnt_epi64(_mm512_xor_si512(x0, y1)));
    c2 = _mm512_add_epi64(c2, _mm512_popcnt_epi64(_mm512_xor_si512(x0, y2)));
    c3 = _mm512_add_epi64(c3, _mm512_popcnt_epi64(_mm512_xor_si512(x1, y0)));
    c4 = _mm512_add_epi64(c4, _mm512_popcnt_epi64(_mm512_xor_si512(x1, y1)));
    c5 = _mm512_add_epi64(c5, _mm512_popcnt_epi64(_mm512_xor_si512(x1, y2)));
    if constexpr (R == 3) {
      __m512i x2 = _mm512_loadu_si512(a2 + o);
      QNT_XNOR_KEEP(x2);
      c6 = _mm512_add_epi64(c6, _mm512_popcnt_epi64(_mm512_xor_si512(x2, y0)));
      c7 = _mm512_add_epi64(c7, _mm512_popcnt_epi64(_mm512_xor_si512(x2, y1)));
      c8 = _mm512_add_epi64(c8, _mm512_popcnt_epi64(_mm512_xor_si512(x2, y2)));
    }
  }
  __m256i d[3 * R];
  d[0] = xnor_halves(c0);
  d[1] = xnor_halves(c1);
  d[2] = xnor_halves(c2);
  d[3] = xnor_halves(c3);
  d[4] = xnor_halves(c4);
  d[5] = xnor_halves(c5);
  if constexpr (R == 3) {
    d[6] = xnor_halves(c6);
    d[7] = xnor_halves(c7);
    d[8] = xnor_halves(c8);
  }
  if (whole < words) xnor_tail<R>(a0, b0, words, d);
  xnor_store<R>(d, k, out, ld);
}

// GemmXnorFn: the rows (a multiple of 2) in tiles of 3 rows of a x 3 of b, and of 2 for the
// rest (rows = 3a + 2b). Exact.
//
// Measured on Zen 4 (4096 x 4096, 66 rows, one thread, the kernel alone, best of 60
// alternated, 16-byte aligned rows): this form 0.95 cycles a 256-bit pair (0.93 on 64-byte
// aligned rows, as the driver's are); tiles of 2 x 3 0.99, with two steps an iteration
// 0.97-0.98; 3 x 3 one step an iteration 0.96-0.97; 3 x 4 0.95-0.96; 0.11.5-0.12.2's 2 x 3 on
// 256-bit vectors 1.14 as the library compiled it. The floor of its instructions
// alone (vpxorq + vpopcntq + vpaddq on registers) is 0.75.
inline void xnor_vpopcnt(const uint64_t *a, size_t rows, const uint64_t *b, size_t words,
                         int32_t k, int32_t *out, size_t ld) noexcept {
  size_t threes = rows / 3, twos = rows % 3 / 2;
  if (rows % 3 == 1 && threes > 0) {  // 3 + 1 rows as 2 + 2
    threes -= 1;
    twos = 2;
  }
  size_t r = 0;
  for (size_t t = 0; t < threes; ++t, r += 3) xnor_rows<3>(a + r * words, b, words, k, out + r * ld, ld);
  for (size_t t = 0; t < twos; ++t, r += 2) xnor_rows<2>(a + r * words, b, words, k, out + r * ld, ld);
}

// GemmXnorColsFn: tiles of R rows of a x C groups of 8 columns of b (R <= 8, C <= 3), one word
// a step: C loads of b (8 columns' words), per row a's word broadcast from memory, then per
// row and group vpxorq, vpopcntq and vpaddq into 64-bit lanes, one output each. Stored as
// k - 2 * pop narrowed to int32 (vpmovqd), 8 outputs at once. Exact.
template <int R, int C>
inline void xnor_cols_tile(const uint64_t *a, const uint64_t *b, size_t words, int32_t k,
                           int32_t *out, size_t ld) noexcept {
  __m512i acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
  for (size_t w = 0; w < words; ++w) {
    __m512i y[C];
    for (int c = 0; c < C; ++c) y[c] = _mm512_loadu_si512(b + (static_cast<size_t>(c) * words + w) * 8);
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_set1_epi64(static_cast<long long>(a[static_cast<size_t>(r) * words + w]));
      for (int c = 0; c < C; ++c)
        acc[r][c] = _mm512_add_epi64(acc[r][c], _mm512_popcnt_epi64(_mm512_xor_si512(x, y[c])));
    }
  }
  const __m512i kk = _mm512_set1_epi64(k);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + static_cast<size_t>(r) * ld + 8 * static_cast<size_t>(c)),
                          _mm512_cvtepi64_epi32(_mm512_sub_epi64(kk, _mm512_add_epi64(acc[r][c], acc[r][c]))));
}

template <int C>
inline void xnor_cols_rows(const uint64_t *a, size_t rows, const uint64_t *b, size_t words, int32_t k,
                           int32_t *out, size_t ld) noexcept {
  size_t r = 0;
  for (; r + 8 <= rows; r += 8) xnor_cols_tile<8, C>(a + r * words, b, words, k, out + r * ld, ld);
  if (r + 4 <= rows) {
    xnor_cols_tile<4, C>(a + r * words, b, words, k, out + r * ld, ld);
    r += 4;
  }
  switch (rows - r) {
    case 3: return xnor_cols_tile<3, C>(a + r * words, b, words, k, out + r * ld, ld);
    case 2: return xnor_cols_tile<2, C>(a + r * words, b, words, k, out + r * ld, ld);
    case 1: return xnor_cols_tile<1, C>(a + r * words, b, words, k, out + r * ld, ld);
    default: return;
  }
}

inline void xnor_cols_vpopcnt(const uint64_t *a, size_t rows, const uint64_t *b, size_t groups,
                              size_t words, int32_t k, int32_t *out, size_t ld) noexcept {
  switch (groups) {
    case 3: return xnor_cols_rows<3>(a, rows, b, words, k, out, ld);
    case 2: return xnor_cols_rows<2>(a, rows, b, words, k, out, ld);
    case 1: return xnor_cols_rows<1>(a, rows, b, words, k, out, ld);
    default: return;
  }
}
#endif

}  // namespace
}  // namespace qnt::kern
