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
// 2 rows of a x 3 of b, 256 bits (4 words: `words` is a multiple of 4) a step: per pair of rows,
// vpxor, vpopcntq (four 64-bit counts) and vpaddq into 64-bit sums, which cannot overflow (at
// most 64 a word); 18 vector instructions and 5 loads a step. On 256-bit vectors: on Zen 4 the
// same kernel on 512-bit ones (masked last step) ran the binary GEMM at 4096 x 4096, batch 64,
// in 1.84 ms against 1.53 (one thread, the same process), vpopcntq zmm holding the vector pipes
// that vpaddq needs; a loop of vpopcntq + vpaddq alone counts 1.37x as fast on ymm as on zmm
// there. Exact.
inline void xnor_vpopcnt(const uint64_t *a, size_t rows, const uint64_t *b, size_t words,
                         int32_t *pop, size_t ld) noexcept {
  const uint64_t *b0 = b, *b1 = b + words, *b2 = b + 2 * words;
  auto load = [](const uint64_t *p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); };
  auto total = [](__m256i v) {
    const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return static_cast<int32_t>(static_cast<uint64_t>(_mm_cvtsi128_si64(h)) +
                                static_cast<uint64_t>(_mm_extract_epi64(h, 1)));
  };
  for (size_t r = 0; r < rows; r += 2) {
    const uint64_t *a0 = a + r * words, *a1 = a0 + words;
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    for (size_t o = 0; o < words; o += 4) {
      const __m256i x0 = load(a0 + o), x1 = load(a1 + o);
      const __m256i y0 = load(b0 + o), y1 = load(b1 + o), y2 = load(b2 + o);
      c0 = _mm256_add_epi64(c0, _mm256_popcnt_epi64(_mm256_xor_si256(x0, y0)));
      c1 = _mm256_add_epi64(c1, _mm256_popcnt_epi64(_mm256_xor_si256(x0, y1)));
      c2 = _mm256_add_epi64(c2, _mm256_popcnt_epi64(_mm256_xor_si256(x0, y2)));
      c3 = _mm256_add_epi64(c3, _mm256_popcnt_epi64(_mm256_xor_si256(x1, y0)));
      c4 = _mm256_add_epi64(c4, _mm256_popcnt_epi64(_mm256_xor_si256(x1, y1)));
      c5 = _mm256_add_epi64(c5, _mm256_popcnt_epi64(_mm256_xor_si256(x1, y2)));
    }
    int32_t *p0 = pop + r * ld, *p1 = p0 + ld;
    p0[0] = total(c0);
    p0[1] = total(c1);
    p0[2] = total(c2);
    p1[0] = total(c3);
    p1[1] = total(c4);
    p1[2] = total(c5);
  }
}
#endif

}  // namespace
}  // namespace qnt::kern
