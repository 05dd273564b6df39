// The binary GEMM's popcount kernel on AVX-512 VPOPCNTDQ (GemmXnorColsFn, kernels/gemm/gemm.hpp).
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
// GemmXnorColsFn: tiles of R rows of a x C groups of 8 columns of b (R <= 8, C <= 3), one word
// a step: C loads of b (8 columns' words), per row a's word broadcast from memory, then per
// row and group vpxorq, vpopcntq and vpaddq into 64-bit lanes, one output each. Stored as
// k - 2 * pop narrowed to int32 (vpmovqd), 8 outputs at once. Exact.
template <int R, int C>
inline void xnor_cols_tile(const uint64_t *a, const uint64_t *b, size_t words, int32_t k,
                           int32_t *out, size_t ld) noexcept {
  // Every loop over r and c unrolled: GCC left the last one (the stores) rolled, so the sums
  // went through the stack around every call (24 stores and loads a tile).
  __m512i acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_si512();
  for (size_t w = 0; w < words; ++w) {
    __m512i y[C];
#pragma GCC unroll 3
    for (int c = 0; c < C; ++c) y[c] = _mm512_loadu_si512(b + (static_cast<size_t>(c) * words + w) * 8);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i x = _mm512_set1_epi64(static_cast<long long>(a[static_cast<size_t>(r) * words + w]));
#pragma GCC unroll 3
      for (int c = 0; c < C; ++c)
        acc[r][c] = _mm512_add_epi64(acc[r][c], _mm512_popcnt_epi64(_mm512_xor_si512(x, y[c])));
    }
  }
  const __m512i kk = _mm512_set1_epi64(k);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
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
