// AVX-512 (F, VL) versions of the calibrators' batch passes; compiled with -mavx512f
// -mavx512vl, called only where the CPU and OS support them.
#include "kernels/cpu/calib_kernels.hpp"

#include <immintrin.h>

// No C++ library headers here: an inline library function used in an ISA translation unit can
// leave a weak copy compiled for this ISA (tests/check_isa_objects.sh checks there is none).

namespace qnt::cpu::avx512 {

void scan(const float *x, size_t n, ref::ScanResult *out) noexcept {
  const __m512 inf = _mm512_set1_ps(__builtin_inff());
  __m512 lo = inf, hi = _mm512_set1_ps(-__builtin_inff());
  uint64_t finite = 0, nan = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __mmask16 fin = _mm512_cmp_ps_mask(_mm512_abs_ps(v), inf, _CMP_LT_OQ);
    const __mmask16 isnan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    lo = _mm512_mask_min_ps(lo, fin, lo, v);
    hi = _mm512_mask_max_ps(hi, fin, hi, v);
    finite += static_cast<uint64_t>(__builtin_popcount(fin));
    nan += static_cast<uint64_t>(__builtin_popcount(isnan));
  }
  // Lane by lane through memory: GCC 12's _mm512_reduce_* trip -Wuninitialized.
  alignas(64) float l[16], h[16];
  _mm512_store_ps(l, lo);
  _mm512_store_ps(h, hi);
  ref::finish_scan(l, h, 16, finite, nan, x + i, n - i, out);
}

void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept {
  const __m512d vinv = _mm512_set1_pd(inv), vrange = _mm512_set1_pd(range);
  const __m256i voff = _mm256_set1_epi32(offset), none = _mm256_set1_epi32(-1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));  // exact
    const __mmask8 in = _mm512_cmp_pd_mask(_mm512_abs_pd(v), vrange, _CMP_LT_OQ);
    const __m512d f =
        _mm512_roundscale_pd(_mm512_mul_pd(v, vinv), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m256i j = _mm256_add_epi32(_mm512_cvtpd_epi32(f), voff);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(idx + i), _mm256_mask_blend_epi32(in, none, j));
  }
  ref::bin_indices(x + i, n - i, inv, range, offset, idx + i);
}

}  // namespace qnt::cpu::avx512
