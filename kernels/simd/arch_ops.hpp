// The few operations xsimd 8 (Debian's libxsimd-dev) has no instruction for, one specialization
// per architecture: narrowing int32 lanes to 8- and 16-bit storage and widening them back
// (xsimd converts only between types of one width), a 16-entry table lookup (xsimd 8 has no
// run-time swizzle), rounding to nearest-even on NEON (xsimd's nearbyint there follows the
// FPCR rounding mode; the contract rounds ties to even whatever the mode), and float division
// on NEON (xsimd 8 divides float32 there by a reciprocal estimate and Newton-Raphson steps, which
// is not the correctly rounded quotient the contract asks for).
//
// Included only by the ISA translation units (kernels/cpu/kernels_*.cpp, kernels/neon/), each
// compiled with its own -m flags. Everything here has internal linkage, so no weak copy of it
// can leave an ISA object (tests/check_isa_objects.sh).
#pragma once

#include <xsimd/xsimd.hpp>

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace qnt::simd {
namespace {

template <class A>
struct ArchOps;

#if defined(__AVX2__)
// 32 codes, one per byte (each below 2^Bits), packed in element order into 32 * Bits / 8 bytes
// at p: neighbouring bytes merged by shifts within 16- and 32-bit lanes, then narrowed.
template <int Bits>
void store_packed32(__m256i b, uint8_t *p) noexcept {
  if constexpr (Bits == 4) {
    __m256i t = _mm256_or_si256(b, _mm256_srli_epi16(b, 4));  // low byte: b0 | b1 << 4
    t = _mm256_and_si256(t, _mm256_set1_epi16(0x00FF));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                     _mm_packus_epi16(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1)));
  } else if constexpr (Bits == 2) {
    __m256i t = _mm256_or_si256(b, _mm256_srli_epi16(b, 6));  // b0 | b1 << 2
    t = _mm256_and_si256(t, _mm256_set1_epi16(0x000F));
    t = _mm256_or_si256(t, _mm256_srli_epi32(t, 12));  // | (b2 | b3 << 2) << 4
    t = _mm256_and_si256(t, _mm256_set1_epi32(0xFF));
    const __m128i w =
        _mm_packus_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_packus_epi16(w, w));
  } else {
    // Each byte's bit 0 moved to its top bit, then gathered: bit k is element k.
    const auto m = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_slli_epi16(b, 7)));
    __builtin_memcpy(p, &m, 4);
  }
}
#endif

#if defined(__AVX2__)
// AVX2: 8 lanes. The values stored are always in the range of the storage type (the kernels
// saturate first), so the saturating packs below never saturate.
template <>
struct ArchOps<xsimd::avx2> {
  using F = xsimd::batch<float, xsimd::avx2>;
  using I = xsimd::batch<int32_t, xsimd::avx2>;
  // _mm256_round_ps with an explicit rounding mode: the MXCSR mode plays no part.
  static F round_even(F v) noexcept { return xsimd::nearbyint(v); }
  static F div(F a, F b) noexcept { return a / b; }  // vdivps: a true division
  static F floor(F v) noexcept { return xsimd::floor(v); }  // roundps, explicit mode
  // A comparison's lanes as int32: -1 where true, 0 where false (the register as it is).
  static I mask_to_int(xsimd::batch_bool<float, xsimd::avx2> m) noexcept {
    return _mm256_castps_si256(m);
  }
  // Four batches (32 values in range) stored as 32 bytes: two packs and one lane permute for
  // what would otherwise take four narrowings.
  static constexpr bool kStore4 = true;
  static __m256i pack4(I a, I b, I c, I d, bool is_signed) noexcept {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i x = is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(x, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static void store4_i8(I a, I b, I c, I d, uint8_t *p) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), pack4(a, b, c, d, true));
  }
  static void store4_u8(I a, I b, I c, I d, uint8_t *p) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), pack4(a, b, c, d, false));
  }
  // 32 sub-byte codes (four batches) packed in registers.
  static constexpr bool kPack32 = true;
  template <int Bits>
  static void store_packed(const I *v, uint8_t *p) noexcept {
    store_packed32<Bits>(pack4(v[0], v[1], v[2], v[3], false), p);
  }
  static __m128i pack16(I v) noexcept {
    return _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  }
  static void store_i8(I v, uint8_t *p) noexcept {
    const __m128i h = pack16(v);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_packs_epi16(h, h));
  }
  static void store_u8(I v, uint8_t *p) noexcept {
    const __m128i h = pack16(v);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(p), _mm_packus_epi16(h, h));
  }
  static void store_i16(I v, uint8_t *p) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), pack16(v));
  }
  static void store_u16(I v, uint8_t *p) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p),
                     _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
  }
  static I load_i8(const uint8_t *p) noexcept {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
  }
  static I load_u8(const uint8_t *p) noexcept {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)));
  }
  static I load_i16(const uint8_t *p) noexcept {
    return _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static I load_u16(const uint8_t *p) noexcept {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  // Non-temporal copy (xsimd has no streaming store): dst aligned first, 32 bytes at a time.
  static void stream_copy(uint8_t *dst, const uint8_t *src, size_t n) noexcept {
    size_t head = (32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32;
    if (head > n) head = n;
    __builtin_memcpy(dst, src, head);
    size_t i = head;
    for (; i + 32 <= n; i += 32)
      _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i)));
    __builtin_memcpy(dst + i, src + i, n - i);
  }
  static void stream_fence() noexcept { _mm_sfence(); }
  // table[idx] for idx in [0, 8): one in-register permute.
  static constexpr bool kLookup8 = true;
  static F lookup8(const float *table, I idx) noexcept {
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), idx);
  }
  // table[idx] for idx in [0, 16): two in-register permutes and a blend.
  static F lookup16(const float *table, I idx) noexcept {
    const __m256 lo = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table), idx);
    const __m256 hi = _mm256_permutevar8x32_ps(_mm256_loadu_ps(table + 8), idx);
    const __m256i upper = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7));
    return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(upper));
  }
};
#endif

#if defined(__AVX512BW__)
// AVX-512: 16 lanes; vpmov* truncate, which is exact here since the values are in range.
template <>
struct ArchOps<xsimd::avx512bw> {
  using F = xsimd::batch<float, xsimd::avx512bw>;
  using I = xsimd::batch<int32_t, xsimd::avx512bw>;
  // vrndscaleps with imm 0: round to nearest even, its mode taken from the immediate.
  static F round_even(F v) noexcept { return xsimd::nearbyint(v); }
  static F div(F a, F b) noexcept { return a / b; }  // vdivps: a true division
  static F floor(F v) noexcept { return xsimd::floor(v); }  // roundps, explicit mode
  static I mask_to_int(xsimd::batch_bool<float, xsimd::avx512bw> m) noexcept {
    return _mm512_movm_epi32(m);
  }
  static constexpr bool kStore4 = false;
  static constexpr bool kPack32 = true;
  template <int Bits>
  static void store_packed(const I *v, uint8_t *p) noexcept {
    const __m256i b = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm512_cvtepi32_epi8(v[0])),
                                              _mm512_cvtepi32_epi8(v[1]), 1);
    store_packed32<Bits>(b, p);
  }
  static void store_i8(I v, uint8_t *p) noexcept {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm512_cvtepi32_epi8(v));
  }
  static void store_u8(I v, uint8_t *p) noexcept { store_i8(v, p); }
  static void store_i16(I v, uint8_t *p) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), _mm512_cvtepi32_epi16(v));
  }
  static void store_u16(I v, uint8_t *p) noexcept { store_i16(v, p); }
  static I load_i8(const uint8_t *p) noexcept {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static I load_u8(const uint8_t *p) noexcept {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static I load_i16(const uint8_t *p) noexcept {
    return _mm512_cvtepi16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static I load_u16(const uint8_t *p) noexcept {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static F lookup16(const float *table, I idx) noexcept {
    return _mm512_permutexvar_ps(idx, _mm512_loadu_ps(table));
  }
  static constexpr bool kLookup8 = true;
  static F lookup8(const float *table, I idx) noexcept {
    return _mm512_permutexvar_ps(idx, _mm512_broadcast_f32x8(_mm256_loadu_ps(table)));
  }
  static void stream_copy(uint8_t *dst, const uint8_t *src, size_t n) noexcept {
    size_t head = (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64;
    if (head > n) head = n;
    __builtin_memcpy(dst, src, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64)
      _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i),
                          _mm512_loadu_si512(reinterpret_cast<const void *>(src + i)));
    __builtin_memcpy(dst + i, src + i, n - i);
  }
  static void stream_fence() noexcept { _mm_sfence(); }
};
#endif

#if defined(__aarch64__)
// NEON: 4 lanes. Unaligned pieces move through __builtin_memcpy (one instruction; a cast of p to
// a wider pointer type would assume an alignment the caller does not give).
template <>
struct ArchOps<xsimd::neon64> {
  using F = xsimd::batch<float, xsimd::neon64>;
  using I = xsimd::batch<int32_t, xsimd::neon64>;
  // frintn: ties to even, whatever FPCR.RMode says.
  static F round_even(F v) noexcept { return vrndnq_f32(v); }
  // fdiv: the correctly rounded quotient (xsimd's operator/ is an estimate here).
  static F div(F a, F b) noexcept { return vdivq_f32(a, b); }
  // frintm (xsimd 8 has no neon64 floor of its own; its generic one goes through int32).
  static F floor(F v) noexcept { return vrndmq_f32(v); }
  static I mask_to_int(xsimd::batch_bool<float, xsimd::neon64> m) noexcept {
    return vreinterpretq_s32_u32(m);
  }
  static constexpr bool kStore4 = false;
  static constexpr bool kPack32 = false;  // sub-byte codes go through 64-bit words
  static constexpr bool kLookup8 = false;  // NF4 counts its thresholds instead
  static void store_i8(I v, uint8_t *p) noexcept {
    const int16x4_t h = vmovn_s32(v);
    const uint32_t w = vget_lane_u32(vreinterpret_u32_s8(vmovn_s16(vcombine_s16(h, h))), 0);
    __builtin_memcpy(p, &w, 4);
  }
  static void store_u8(I v, uint8_t *p) noexcept { store_i8(v, p); }  // the low bytes
  static void store_i16(I v, uint8_t *p) noexcept {
    const uint64_t w = vget_lane_u64(vreinterpret_u64_s16(vmovn_s32(v)), 0);
    __builtin_memcpy(p, &w, 8);
  }
  static void store_u16(I v, uint8_t *p) noexcept { store_i16(v, p); }
  static uint8x8_t bytes4(const uint8_t *p) noexcept {
    uint32_t w;
    __builtin_memcpy(&w, p, 4);
    return vreinterpret_u8_u32(vdup_n_u32(w));
  }
  static int16x4_t halves4(const uint8_t *p) noexcept {
    uint64_t w;
    __builtin_memcpy(&w, p, 8);
    return vreinterpret_s16_u64(vdup_n_u64(w));
  }
  static I load_i8(const uint8_t *p) noexcept {
    return vmovl_s16(vget_low_s16(vmovl_s8(vreinterpret_s8_u8(bytes4(p)))));
  }
  static I load_u8(const uint8_t *p) noexcept {
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(vmovl_u8(bytes4(p)))));
  }
  static I load_i16(const uint8_t *p) noexcept { return vmovl_s16(halves4(p)); }
  static I load_u16(const uint8_t *p) noexcept {
    return vreinterpretq_s32_u32(vmovl_u16(vreinterpret_u16_s16(halves4(p))));
  }
  // Advanced SIMD has no streaming store of its own (STNP is a hint most cores ignore).
  static void stream_copy(uint8_t *dst, const uint8_t *src, size_t n) noexcept {
    __builtin_memcpy(dst, src, n);
  }
  static void stream_fence() noexcept {}
  static F lookup16(const float *table, I idx) noexcept {
    alignas(16) int32_t k[4];
    alignas(16) float r[4];
    vst1q_s32(k, idx);
    for (int i = 0; i < 4; ++i) r[i] = table[k[i]];
    return vld1q_f32(r);
  }
};
#endif

}  // namespace
}  // namespace qnt::simd
