// AVX2 versions of the calibrators' batch passes; compiled with -mavx2, called only where the
// CPU and OS support it.
#include "kernels/cpu/calib_kernels.hpp"

#include <immintrin.h>

// No C++ library headers here: an inline library function used in an ISA translation unit can
// leave a weak copy compiled for this ISA (tests/check_isa_objects.sh checks there is none).

namespace qnt::cpu::avx2 {

void scan(const float *x, size_t n, ref::ScanResult *out) noexcept {
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 lo = inf, hi = _mm256_set1_ps(-__builtin_inff());
  uint64_t finite = 0, nan = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 fin = _mm256_cmp_ps(_mm256_and_ps(v, abs_mask), inf, _CMP_LT_OQ);
    const __m256 isnan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    // Where v is not finite keep the running value: blend on the mask.
    lo = _mm256_blendv_ps(lo, _mm256_min_ps(v, lo), fin);
    hi = _mm256_blendv_ps(hi, _mm256_max_ps(v, hi), fin);
    finite +=
        static_cast<uint64_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(fin))));
    nan +=
        static_cast<uint64_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(isnan))));
  }
  alignas(32) float l[8], h[8];
  _mm256_store_ps(l, lo);
  _mm256_store_ps(h, hi);
  ref::finish_scan(l, h, 8, finite, nan, x + i, n - i, out);
}

void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept {
  const __m256d vinv = _mm256_set1_pd(inv), vrange = _mm256_set1_pd(range);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m128i voff = _mm_set1_epi32(offset), none = _mm_set1_epi32(-1);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i));  // exact
    const __m256d in = _mm256_cmp_pd(_mm256_and_pd(v, abs_mask), vrange, _CMP_LT_OQ);
    const __m256d f = _mm256_floor_pd(_mm256_mul_pd(v, vinv));
    const __m128i j = _mm_add_epi32(_mm256_cvtpd_epi32(f), voff);
    // The 64-bit lane mask narrowed to 32-bit lanes: pick the odd (high) halves.
    const __m128i keep = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
        _mm256_castpd_si256(in), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(idx + i), _mm_blendv_epi8(none, j, keep));
  }
  ref::bin_indices(x + i, n - i, inv, range, offset, idx + i);
}

}  // namespace qnt::cpu::avx2
