// The quantize, dequantize and calibration-scan kernels, written once over xsimd batches and
// instantiated per ISA by kernels/cpu/kernels_avx2.cpp, kernels_avx512.cpp and
// kernels/neon/kernels_neon.cpp. They give the bits of the reference kernels (kernels/ref):
// - quantize divides in float32 (a true division, as the reference), rounds ties to even with an
//   explicit-mode instruction, saturates in float against qmin - zp and qmax - zp (exact small
//   integers for every dtype of 16 bits or fewer), and maps NaN to the zero point;
// - dequantize computes (q - zp) exactly in int32 and converts it exactly, then one multiply;
// - NF4 multiplies by 1/scale and counts the thresholds below, as the reference;
// - sub-byte codes are packed in registers, eight codes to a 64-bit word, by shifts and masks.
// Elements a vector cannot cover (a run's unaligned head and its short tail) go through the
// reference's own scalar rules. See kernels/README.md for the contract.
#pragma once

#include "kernels/common/scalar.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/registry.hpp"
#include "kernels/simd/arch_ops.hpp"

#include <xsimd/xsimd.hpp>

// Every call inside an entry point is inlined, so no out-of-line copy of an xsimd template,
// compiled with this ISA's flags, is left in the object as a weak symbol.
#define QNT_FLATTEN __attribute__((flatten))

namespace qnt::simd {
namespace {

using kern::Code;
using kern::Format;

// --- scalar element rules (heads and tails), exactly the reference's -------------------------

void scalar_quantize(const float *x, uint8_t *q, size_t first, size_t n, const float *s,
                     const int32_t *z, size_t step, const Format &f) noexcept {
  for (size_t k = 0; k < n; ++k)
    ref::store_element(q, first + k, f.bits,
                       ref::quantize_code(f.code, x[k], s[k * step], z[k * step], f.qmin, f.qmax,
                                         f.bits));
}

void scalar_dequantize(const uint8_t *q, size_t first, float *x, size_t n, const float *s,
                       const int32_t *z, size_t step, const Format &f) noexcept {
  for (size_t k = 0; k < n; ++k)
    x[k] = ref::dequantize_code(f.code, ref::load_element(q, first + k, f.bits, f.is_signed),
                                s[k * step], z[k * step], f.bits);
}

// --- sub-byte packing: eight codes (one per byte of a 64-bit word) to 8 * Bits bits -----------

template <int Bits>
uint64_t pack8(uint64_t c) noexcept {
  if constexpr (Bits == 4) {
    c = (c | (c >> 4)) & 0x00FF00FF00FF00FFull;
    c = (c | (c >> 8)) & 0x0000FFFF0000FFFFull;
    return (c | (c >> 16)) & 0xFFFFFFFFull;
  } else if constexpr (Bits == 2) {
    c = (c | (c >> 6)) & 0x000F000F000F000Full;
    c = (c | (c >> 12)) & 0x000000FF000000FFull;
    return (c | (c >> 24)) & 0xFFFFull;
  } else {
    c = (c | (c >> 7)) & 0x0003000300030003ull;
    c = (c | (c >> 14)) & 0x0000000F0000000Full;
    return (c | (c >> 28)) & 0xFFull;
  }
}

// The inverse: 8 * Bits packed bits to eight codes, one per byte.
template <int Bits>
uint64_t unpack8(uint64_t c) noexcept {
  if constexpr (Bits == 4) {
    c = (c | (c << 16)) & 0x0000FFFF0000FFFFull;
    c = (c | (c << 8)) & 0x00FF00FF00FF00FFull;
    return (c | (c << 4)) & 0x0F0F0F0F0F0F0F0Full;
  } else if constexpr (Bits == 2) {
    c = (c | (c << 24)) & 0x000000FF000000FFull;
    c = (c | (c << 12)) & 0x000F000F000F000Full;
    return (c | (c << 6)) & 0x0303030303030303ull;
  } else {
    c = (c | (c << 28)) & 0x0000000F0000000Full;
    c = (c | (c << 14)) & 0x0003000300030003ull;
    return (c | (c << 7)) & 0x0101010101010101ull;
  }
}

// --- one batch of codes ----------------------------------------------------------------------

template <class A>
struct Lanes {
  using F = xsimd::batch<float, A>;
  using I = xsimd::batch<int32_t, A>;
  static constexpr size_t W = F::size;
};

// NF4's thresholds as the binary search probes them: {t1, t5, t9, t13} and {t0, t2, ..., t14}.
// Built on first use, by the first kernel that needs them (so never by a CPU that cannot run
// this translation unit's instructions, as a load-time initializer could).
struct NF4Tables {
  alignas(32) float quarter[8];
  alignas(32) float even[8];
};

const NF4Tables &nf4_tables() noexcept {
  static const NF4Tables tables = [] {
    NF4Tables t{};
    for (int k = 0; k < 4; ++k) t.quarter[k] = ref::kNF4Thresholds[4 * k + 1];
    for (int k = 0; k < 8; ++k) t.even[k] = ref::kNF4Thresholds[2 * k];
    return t;
  }();
  return tables;
}

// The parameters of the batch at run offset k: broadcast once (shared) or loaded (per element).
template <class A, bool PerElement>
struct Params {
  using F = typename Lanes<A>::F;
  using I = typename Lanes<A>::I;
  const float *s;
  const int32_t *z;
  F scale = F(1.0f), lo = F(0.0f), hi = F(0.0f), zpf = F(0.0f), inv = F(1.0f);
  // NF4's binary search (nf4_codes): t3, t7, t11 broadcast, and its 8-entry tables.
  F t3 = F(0.0f), t7 = F(0.0f), t11 = F(0.0f);
  const NF4Tables *nf4 = nullptr;
  Params(const float *s_, const int32_t *z_, const Format &f) noexcept : s(s_), z(z_) {
    if constexpr (!PerElement) set(F(s[0]), I(z[0]), f);
    if (f.code == Code::NF4) {
      nf4 = &nf4_tables();
      t3 = F(ref::kNF4Thresholds[3]);
      t7 = F(ref::kNF4Thresholds[7]);
      t11 = F(ref::kNF4Thresholds[11]);
    }
  }
  void set(F sc, I zp, const Format &f) noexcept {
    scale = sc;
    // qmin - zp and qmax - zp, exact in int32 and in float for every dtype up to 16 bits.
    lo = xsimd::batch_cast<float>(I(f.qmin) - zp);
    hi = xsimd::batch_cast<float>(I(f.qmax) - zp);
    zpf = xsimd::batch_cast<float>(zp);
    if (f.code == Code::NF4) inv = ArchOps<A>::div(F(1.0f), sc);  // as the reference: 1.0f / scale, rounded
  }
  void at(size_t k, const Format &f) noexcept {
    if constexpr (PerElement) set(F::load_unaligned(s + k), I::load_unaligned(z + k), f);
  }
};

// Integer codes of x[0 .. W): saturate(round_half_to_even(x / scale) + zp), NaN -> zp.
template <class A, class P>
typename Lanes<A>::I integer_codes(const float *x, const P &p) noexcept {
  using F = typename Lanes<A>::F;
  const F v = ArchOps<A>::div(F::load_unaligned(x), p.scale);
  F r = ArchOps<A>::round_even(v);
  r = xsimd::min(xsimd::max(r, p.lo), p.hi);  // a NaN v is replaced below, whatever this gives
  const F qf = xsimd::select(xsimd::isnan(v), p.zpf, r + p.zpf);  // exact: small integers
  return xsimd::batch_cast<int32_t>(qf);
}

template <class A, class P>
typename Lanes<A>::I nf4_codes(const float *x, const P &p) noexcept {
  using F = typename Lanes<A>::F;
  using I = typename Lanes<A>::I;
  const F xv = F::load_unaligned(x);
  const F n = xv * p.inv;
  // The number of thresholds below n (they ascend): a binary search of four comparisons,
  // its probes taken from registers (a blend, then two 8-entry permutes); where the
  // architecture has no such permute, each comparison's all-ones lane counts -1, summed as a
  // tree.
  I c(0);
  if constexpr (ArchOps<A>::kLookup8) {
    const auto m1 = n > p.t7;
    c = ArchOps<A>::mask_to_int(m1) & I(8);
    c += ArchOps<A>::mask_to_int(n > xsimd::select(m1, p.t11, p.t3)) & I(4);
    c += ArchOps<A>::mask_to_int(n > ArchOps<A>::lookup8(p.nf4->quarter, c >> 2)) & I(2);
    c += ArchOps<A>::mask_to_int(n > ArchOps<A>::lookup8(p.nf4->even, c >> 1)) & I(1);
  } else {
    I m[15];
    for (int k = 0; k < 15; ++k) m[k] = ArchOps<A>::mask_to_int(n > F(ref::kNF4Thresholds[k]));
    c = -((((m[0] + m[1]) + (m[2] + m[3])) + ((m[4] + m[5]) + (m[6] + m[7]))) +
          (((m[8] + m[9]) + (m[10] + m[11])) + ((m[12] + m[13]) + m[14])));
  }
  // NaN -> 7, the code of 0.0 (every comparison above was false).
  return xsimd::batch_cast<int32_t>(
      xsimd::select(xsimd::isnan(xv), F(7.0f), xsimd::batch_cast<float>(c)));
}

template <class A>
typename Lanes<A>::I binary_codes(const float *x) noexcept {
  using F = typename Lanes<A>::F;
  const F xv = F::load_unaligned(x);
  return xsimd::batch_cast<int32_t>(xsimd::select(xv < F(0.0f), F(0.0f), F(1.0f)));
}

// Log codes of `Bits` bits (kernels/common/scalar.hpp, quantize_log2): r = |x| / scale, its
// exponent rounded in the log domain by an integer comparison of the significand, all in int32
// lanes. Comparisons are the sign of a difference (an arithmetic shift: all ones where a < b)
// and choices are masks, not xsimd::select (whose int32 form for AVX-512BW does not build at -O0
// with GCC 12), nor xsimd::bitwise_andnot (whose operand order differs between xsimd 8's AVX2
// and NEON); every difference below stays within int32.
template <class A, int Bits, class P>
typename Lanes<A>::I log2_codes(const float *x, const P &p) noexcept {
  using F = typename Lanes<A>::F;
  using I = typename Lanes<A>::I;
  constexpr int32_t M = (1 << (Bits - 1)) - 1;
  auto below = [](const I &a, int32_t b) { return (a - I(b)) >> 31; };  // all ones where a < b
  const F xv = F::load_unaligned(x);
  const F r = ArchOps<A>::div(xsimd::abs(xv), p.scale);
  const I u = xsimd::bitwise_cast<I>(r) & I(0x7FFFFFFF);
  const I up = I(1) + below(u & I(0x7FFFFF), static_cast<int32_t>(QNT_LOG2_SQRT2_MANT));
  const I knorm = I(127) - ((u >> 23) + up);  // -(e + up), e = biased exponent - 127
  const I ksub = I(126) - below(u, static_cast<int32_t>(QNT_LOG2_SUBNORMAL_UP));
  const I sub = below(u, 0x00800000);
  I k = (ksub & sub) | (knorm & ~sub);
  k = k & ~(k >> 31);  // k < 0 (above the top level): 0
  const I sign = ((xsimd::bitwise_cast<I>(xv) >> 31) & I(1)) << (Bits - 1);
  const I code = sign | (I(M) - k);
  // NaN (u above the infinity pattern) and magnitudes below the smallest level give 0.
  const I zero = ((I(0x7F800000) - u) >> 31) | ((I(M - 1) - k) >> 31);
  return code & ~zero;
}

template <class A, Code C, int Bits, class P>
typename Lanes<A>::I codes(const float *x, const P &p) noexcept {
  if constexpr (C == Code::NF4) return nf4_codes<A>(x, p);
  else if constexpr (C == Code::Binary) return binary_codes<A>(x);
  else if constexpr (C == Code::Log2) return log2_codes<A, Bits>(x, p);
  else return integer_codes<A>(x, p);
}

// --- quantize --------------------------------------------------------------------------------

// 8- and 16-bit storage: elements 0 .. n of the run into out (its first element's byte).
template <class A, int Bits, bool Signed, bool PerElement, Code C = Code::Integer>
void quantize_bytes_to(const float *x, uint8_t *out, size_t n, const float *s, const int32_t *z,
                       const Format &f) noexcept {
  constexpr size_t W = Lanes<A>::W;
  Params<A, PerElement> p(s, z, f);
  size_t k = 0;
  if constexpr (Bits == 8 && ArchOps<A>::kStore4) {
    for (; k + 4 * W <= n; k += 4 * W) {
      p.at(k, f);
      const auto a = codes<A, C, Bits>(x + k, p);
      p.at(k + W, f);
      const auto b = codes<A, C, Bits>(x + k + W, p);
      p.at(k + 2 * W, f);
      const auto c = codes<A, C, Bits>(x + k + 2 * W, p);
      p.at(k + 3 * W, f);
      const auto d = codes<A, C, Bits>(x + k + 3 * W, p);
      if constexpr (Signed) ArchOps<A>::store4_i8(a, b, c, d, out + k);
      else ArchOps<A>::store4_u8(a, b, c, d, out + k);
    }
  }
  for (; k + W <= n; k += W) {
    p.at(k, f);
    const auto v = codes<A, C, Bits>(x + k, p);
    if constexpr (Bits == 8) {
      if constexpr (Signed) ArchOps<A>::store_i8(v, out + k);
      else ArchOps<A>::store_u8(v, out + k);
    } else {
      if constexpr (Signed) ArchOps<A>::store_i16(v, out + k * 2);
      else ArchOps<A>::store_u16(v, out + k * 2);
    }
  }
  const size_t step = PerElement ? 1 : 0;
  scalar_quantize(x + k, out, k, n - k, s + k * step, z + k * step, step, f);
}

// Streaming runs go through a staging buffer in L1, copied out with non-temporal stores.
constexpr size_t kStage = 2048;

template <class A, int Bits, bool Signed, bool PerElement, Code C = Code::Integer>
QNT_FLATTEN void quantize_bytes(const float *x, uint8_t *q, size_t first, size_t n,
                                const float *s, const int32_t *z, const Format &f) noexcept {
  constexpr size_t B = Bits / 8;
  uint8_t *out = q + first * B;
  if (!f.stream || n < kStage) {
    quantize_bytes_to<A, Bits, Signed, PerElement, C>(x, out, n, s, z, f);
    return;
  }
  const size_t step = PerElement ? 1 : 0;
  alignas(64) uint8_t stage[kStage * B];
  for (size_t k = 0; k < n; k += kStage) {
    const size_t len = n - k < kStage ? n - k : kStage;
    quantize_bytes_to<A, Bits, Signed, PerElement, C>(x + k, stage, len, s + k * step,
                                                      z + k * step, f);
    ArchOps<A>::stream_copy(out + k * B, stage, len * B);
  }
  ArchOps<A>::stream_fence();
}

// 1-, 2- and 4-bit storage: a scalar head up to a byte boundary, then 64 elements at a time
// (whole bytes, whole batches), then a scalar tail.
template <class A, int Bits, bool PerElement, Code C>
QNT_FLATTEN void quantize_bits(const float *x, uint8_t *q, size_t first, size_t n, const float *s,
                               const int32_t *z, const Format &f) noexcept {
  constexpr size_t W = Lanes<A>::W;
  constexpr size_t per_byte = 8 / Bits;
  constexpr size_t kChunk = W > 8 ? W : 8;  // whole batches and whole 64-bit code words
  const size_t step = PerElement ? 1 : 0;
  size_t head = (per_byte - first % per_byte) % per_byte;
  if (head > n) head = n;
  scalar_quantize(x, q, first, head, s, z, step, f);
  Params<A, PerElement> p(s, z, f);
  const uint32_t mask = (1u << Bits) - 1u;
  size_t k = head;
  if constexpr (ArchOps<A>::kPack32) {
    using I = typename Lanes<A>::I;
    constexpr size_t NB = 32 / W;
    for (; k + 32 <= n; k += 32) {
      I v[NB];
      for (size_t j = 0; j < NB; ++j) {
        p.at(k + j * W, f);
        v[j] = codes<A, C, Bits>(x + k + j * W, p) & I(static_cast<int32_t>(mask));
      }
      ArchOps<A>::template store_packed<Bits>(v, q + (first + k) / per_byte);
    }
  }
  alignas(64) uint8_t buf[kChunk];
  for (; k + kChunk <= n; k += kChunk) {
    for (size_t j = 0; j < kChunk; j += W) {
      p.at(k + j, f);
      const auto v = codes<A, C, Bits>(x + k + j, p) & typename Lanes<A>::I(static_cast<int32_t>(mask));
      ArchOps<A>::store_u8(v, buf + j);
    }
    uint8_t *out = q + (first + k) / per_byte;
    for (size_t w = 0; w < kChunk / 8; ++w) {
      uint64_t c;
      __builtin_memcpy(&c, buf + 8 * w, 8);
      const uint64_t packed = pack8<Bits>(c);
      __builtin_memcpy(out + w * Bits, &packed, Bits);
    }
  }
  scalar_quantize(x + k, q, first + k, n - k, s + k * step, z + k * step, step, f);
}

// 32-bit storage: the division and the rounding in vectors, the exact saturating add per lane.
template <class A, bool PerElement>
QNT_FLATTEN void quantize_i32(const float *x, uint8_t *q, size_t first, size_t n, const float *s,
                              const int32_t *z, const Format &f) noexcept {
  using F = typename Lanes<A>::F;
  constexpr size_t W = Lanes<A>::W;
  alignas(64) float quot[W];
  size_t k = 0;
  for (; k + W <= n; k += W) {
    const F sc = PerElement ? F::load_unaligned(s + k) : F(s[0]);
    ArchOps<A>::div(F::load_unaligned(x + k), sc).store_aligned(quot);
    for (size_t j = 0; j < W; ++j) {
      const int32_t v = ref::round_and_saturate(quot[j], z[PerElement ? k + j : 0], f.qmin, f.qmax);
      __builtin_memcpy(q + 4 * (first + k + j), &v, 4);
    }
  }
  const size_t step = PerElement ? 1 : 0;
  scalar_quantize(x + k, q, first + k, n - k, s + k * step, z + k * step, step, f);
}

// --- dequantize ------------------------------------------------------------------------------

template <class A, bool PerElement>
struct DParams {
  using F = typename Lanes<A>::F;
  using I = typename Lanes<A>::I;
  const float *s;
  const int32_t *z;
  F scale = F(1.0f);
  I zp = I(0);
  DParams(const float *s_, const int32_t *z_) noexcept : s(s_), z(z_) {
    if constexpr (!PerElement) {
      scale = F(s[0]);
      zp = I(z[0]);
    }
  }
  void at(size_t k) noexcept {
    if constexpr (PerElement) {
      scale = F::load_unaligned(s + k);
      zp = I::load_unaligned(z + k);
    }
  }
};

template <class A, Code C, int Bits, class P>
typename Lanes<A>::F dequant_values_c(typename Lanes<A>::I v, const P &p) noexcept {
  using F = typename Lanes<A>::F;
  using I = typename Lanes<A>::I;
  if constexpr (C == Code::NF4) return ArchOps<A>::lookup16(ref::kNF4Codebook, v) * p.scale;
  else if constexpr (C == Code::Log2) {
    // +-(scale * 2^-k), 2^-k built from its exponent field; the zero magnitude multiplies 0.
    constexpr int32_t M = (1 << (Bits - 1)) - 1;
    const I m = v & I(M);
    const I pow2 = ((I(127 - M) + m) << 23) & ~((m - I(1)) >> 31);  // m = 0: 0
    const F mag = p.scale * xsimd::bitwise_cast<F>(pow2);
    const I sign = ((v >> (Bits - 1)) & I(1)) << 31;
    return xsimd::bitwise_cast<F>(xsimd::bitwise_cast<I>(mag) ^ sign);
  }
  else if constexpr (C == Code::Binary)
    return xsimd::select(xsimd::batch_cast<float>(v) != F(0.0f), p.scale, -p.scale);
  else return xsimd::batch_cast<float>(v - p.zp) * p.scale;
}

template <class A, int Bits, bool Signed, bool PerElement, Code C = Code::Integer>
void dequantize_bytes_to(const uint8_t *in, float *x, size_t n, const float *s, const int32_t *z,
                         const Format &f) noexcept {
  constexpr size_t W = Lanes<A>::W;
  DParams<A, PerElement> p(s, z);
  size_t k = 0;
  for (; k + W <= n; k += W) {
    p.at(k);
    typename Lanes<A>::I v;
    if constexpr (Bits == 8) v = Signed ? ArchOps<A>::load_i8(in + k) : ArchOps<A>::load_u8(in + k);
    else v = Signed ? ArchOps<A>::load_i16(in + 2 * k) : ArchOps<A>::load_u16(in + 2 * k);
    dequant_values_c<A, C, Bits>(v, p).store_unaligned(x + k);
  }
  const size_t step = PerElement ? 1 : 0;
  scalar_dequantize(in, k, x + k, n - k, s + k * step, z + k * step, step, f);
}

template <class A, int Bits, bool Signed, bool PerElement, Code C = Code::Integer>
QNT_FLATTEN void dequantize_bytes(const uint8_t *q, size_t first, float *x, size_t n,
                                  const float *s, const int32_t *z, const Format &f) noexcept {
  constexpr size_t B = Bits / 8;
  const uint8_t *in = q + first * B;
  if (!f.stream || n < kStage) {
    dequantize_bytes_to<A, Bits, Signed, PerElement, C>(in, x, n, s, z, f);
    return;
  }
  const size_t step = PerElement ? 1 : 0;
  alignas(64) float stage[kStage];
  for (size_t k = 0; k < n; k += kStage) {
    const size_t len = n - k < kStage ? n - k : kStage;
    dequantize_bytes_to<A, Bits, Signed, PerElement, C>(in + k * B, stage, len, s + k * step,
                                                        z + k * step, f);
    ArchOps<A>::stream_copy(reinterpret_cast<uint8_t *>(x + k),
                            reinterpret_cast<const uint8_t *>(stage), len * sizeof(float));
  }
  ArchOps<A>::stream_fence();
}

template <class A, int Bits, bool Signed, bool PerElement, Code C>
QNT_FLATTEN void dequantize_bits(const uint8_t *q, size_t first, float *x, size_t n,
                                 const float *s, const int32_t *z, const Format &f) noexcept {
  using I = typename Lanes<A>::I;
  constexpr size_t W = Lanes<A>::W;
  constexpr size_t per_byte = 8 / Bits;
  constexpr size_t kChunk = W > 8 ? W : 8;  // whole batches and whole 64-bit code words
  const size_t step = PerElement ? 1 : 0;
  size_t head = (per_byte - first % per_byte) % per_byte;
  if (head > n) head = n;
  scalar_dequantize(q, first, x, head, s, z, step, f);
  DParams<A, PerElement> p(s, z);
  const I sign(static_cast<int32_t>(1u << (Bits - 1)));
  size_t k = head;
  alignas(64) uint8_t buf[kChunk + 16];
  for (; k + kChunk <= n; k += kChunk) {
    const uint8_t *in = q + (first + k) / per_byte;
    for (size_t w = 0; w < kChunk / 8; ++w) {
      uint64_t c = 0;
      __builtin_memcpy(&c, in + w * Bits, Bits);
      const uint64_t codes8 = unpack8<Bits>(c);
      __builtin_memcpy(buf + 8 * w, &codes8, 8);
    }
    for (size_t j = 0; j < kChunk; j += W) {
      p.at(k + j);
      I v = ArchOps<A>::load_u8(buf + j);
      if constexpr (Signed) v = (v ^ sign) - sign;  // sign-extend the Bits-bit code
      dequant_values_c<A, C, Bits>(v, p).store_unaligned(x + k + j);
    }
  }
  scalar_dequantize(q, first + k, x + k, n - k, s + k * step, z + k * step, step, f);
}

// 32-bit storage: q - zp needs 64 bits, so it stays scalar (the reference's own rule).
template <bool PerElement>
void dequantize_i32(const uint8_t *q, size_t first, float *x, size_t n, const float *s,
                    const int32_t *z, const Format &f) noexcept {
  scalar_dequantize(q, first, x, n, s, z, PerElement ? 1 : 0, f);
}

// --- calibration passes ----------------------------------------------------------------------

template <class A>
QNT_FLATTEN void scan(const float *x, size_t n, ref::ScanResult *out) noexcept {
  using F = typename Lanes<A>::F;
  constexpr size_t W = Lanes<A>::W;
  const F inf(__builtin_inff());
  // Two independent pairs of running extremes; a pair of batches whose values are all finite
  // (the common case) costs a min and a max each. Batches with NaN or +-inf take the careful
  // path, which skips them and counts them.
  F lo0 = inf, hi0 = -inf, lo1 = inf, hi1 = -inf;
  uint64_t finite = 0, nan = 0;
  size_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const F v0 = F::load_unaligned(x + i), v1 = F::load_unaligned(x + i + W);
    const auto f0 = xsimd::abs(v0) < inf, f1 = xsimd::abs(v1) < inf;
    if (xsimd::all(f0 & f1)) {
      lo0 = xsimd::min(v0, lo0);
      hi0 = xsimd::max(v0, hi0);
      lo1 = xsimd::min(v1, lo1);
      hi1 = xsimd::max(v1, hi1);
      finite += 2 * W;
      continue;
    }
    lo0 = xsimd::select(f0, xsimd::min(v0, lo0), lo0);
    hi0 = xsimd::select(f0, xsimd::max(v0, hi0), hi0);
    lo1 = xsimd::select(f1, xsimd::min(v1, lo1), lo1);
    hi1 = xsimd::select(f1, xsimd::max(v1, hi1), hi1);
    for (size_t k = 0; k < 2 * W; ++k) {
      const float v = x[i + k];
      if (v != v) ++nan;
      else if (v - v == 0.0f) ++finite;  // finite (inf - inf is NaN)
    }
  }
  alignas(64) float l[2 * W], h[2 * W];
  lo0.store_aligned(l);
  lo1.store_aligned(l + W);
  hi0.store_aligned(h);
  hi1.store_aligned(h + W);
  ref::finish_scan(l, h, 2 * W, finite, nan, x + i, n - i, out);
}

// Histogram bin indices in float32. inv and range are powers of two; where both are normal
// floats, x * inv is exact unless its magnitude falls below the normal range, where the floor is
// 0 or -1 by the sign of x alone: the one case a rounding could change (a negative product
// rounded to -0) is mended. Elsewhere the reference (in double) runs.
template <class A>
QNT_FLATTEN void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                             int32_t *idx) noexcept {
  using F = typename Lanes<A>::F;
  constexpr size_t W = Lanes<A>::W;
  const auto finv = static_cast<float>(inv), frange = static_cast<float>(range);
  const bool usable = static_cast<double>(finv) == inv && static_cast<double>(frange) == range &&
                      finv >= 1.17549435e-38f && frange >= 1.17549435e-38f &&
                      finv < 3.0e38f && frange < 3.0e38f && offset < (1 << 23);
  size_t i = 0;
  if (usable) {
    const F vinv(finv), vrange(frange), off(static_cast<float>(offset)), none(-1.0f),
        zero(0.0f);
    for (; i + W <= n; i += W) {
      const F v = F::load_unaligned(x + i);
      const F prod = v * vinv;
      F fl = ArchOps<A>::floor(prod);
      fl = xsimd::select((v < zero) & (prod == zero), none, fl);
      const F r = xsimd::select(xsimd::abs(v) < vrange, fl + off, none);
      xsimd::batch_cast<int32_t>(r).store_unaligned(idx + i);
    }
  }
  ref::bin_indices(x + i, n - i, inv, range, offset, idx + i);
}

// --- blocked runs: the shared-parameter kernel once per block, inlined ------------------------

template <auto Shared>
QNT_FLATTEN void quantize_blocked(const float *x, uint8_t *q, size_t first, size_t n,
                                  const float *s, const int32_t *z, const Format &f) noexcept {
  const size_t B = f.block;
  for (size_t k = 0, b = 0; k < n; k += B, ++b)
    Shared(x + k, q, first + k, n - k < B ? n - k : B, s + b, z + b, f);
}

template <auto Shared>
QNT_FLATTEN void dequantize_blocked(const uint8_t *q, size_t first, float *x, size_t n,
                                    const float *s, const int32_t *z, const Format &f) noexcept {
  const size_t B = f.block;
  for (size_t k = 0, b = 0; k < n; k += B, ++b)
    Shared(q, first + k, x + k, n - k < B ? n - k : B, s + b, z + b, f);
}

// --- the table -------------------------------------------------------------------------------

// A dtype's kernels for the three run kinds: the shared and per-element kernels, and the
// blocked one built on the shared.
template <auto QShared, auto QPerElement, auto DShared, auto DPerElement>
constexpr void set_kernels(kern::KernelTable &t, qnt_dtype d) {
  t.quantize[d][kern::kShared] = QShared;
  t.quantize[d][kern::kPerElement] = QPerElement;
  t.quantize[d][kern::kBlocked] = &quantize_blocked<QShared>;
  t.dequantize[d][kern::kShared] = DShared;
  t.dequantize[d][kern::kPerElement] = DPerElement;
  t.dequantize[d][kern::kBlocked] = &dequantize_blocked<DShared>;
}

template <class A, int Bits, bool Signed, Code C = Code::Integer>
constexpr void set_bytes(kern::KernelTable &t, qnt_dtype d) {
  set_kernels<&quantize_bytes<A, Bits, Signed, false, C>, &quantize_bytes<A, Bits, Signed, true, C>,
              &dequantize_bytes<A, Bits, Signed, false, C>,
              &dequantize_bytes<A, Bits, Signed, true, C>>(t, d);
}

template <class A, int Bits, bool Signed, Code C>
constexpr void set_bits(kern::KernelTable &t, qnt_dtype d) {
  set_kernels<&quantize_bits<A, Bits, false, C>, &quantize_bits<A, Bits, true, C>,
              &dequantize_bits<A, Bits, Signed, false, C>,
              &dequantize_bits<A, Bits, Signed, true, C>>(t, d);
}

template <class A>
constexpr kern::KernelTable make_table(const char *name, qnt_isa isa,
                                      const kern::GemmKernel *gemm,
                                      const kern::WoKernels *wo = nullptr) {
  kern::KernelTable t{};
  t.name = name;
  t.isa = isa;
  t.gemm = gemm;
  t.wo = wo;
  set_bytes<A, 8, true>(t, QNT_DTYPE_I8);
  set_bytes<A, 8, false>(t, QNT_DTYPE_U8);
  set_bytes<A, 16, true>(t, QNT_DTYPE_I16);
  set_bytes<A, 16, false>(t, QNT_DTYPE_U16);
  set_kernels<&quantize_i32<A, false>, &quantize_i32<A, true>, &dequantize_i32<false>,
              &dequantize_i32<true>>(t, QNT_DTYPE_I32);
  set_bits<A, 4, true, Code::Integer>(t, QNT_DTYPE_I4);
  set_bits<A, 4, false, Code::Integer>(t, QNT_DTYPE_U4);
  set_bits<A, 4, false, Code::NF4>(t, QNT_DTYPE_NF4);
  set_bits<A, 2, true, Code::Integer>(t, QNT_DTYPE_TERNARY);
  set_bits<A, 1, false, Code::Binary>(t, QNT_DTYPE_BINARY);
  set_bits<A, 4, false, Code::Log2>(t, QNT_DTYPE_LOG4);
  set_bytes<A, 8, false, Code::Log2>(t, QNT_DTYPE_LOG8);
  t.scan = &scan<A>;
  t.bin_indices = &bin_indices<A>;
  return t;
}

}  // namespace
}  // namespace qnt::simd
