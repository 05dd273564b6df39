// The scalar rules of qnt, written once for the host compiler and for nvcc: the reference
// kernels (kernels/ref) call them on the CPU and the CUDA kernels (kernels/cuda) on the device,
// so both sides compute each result with the same expression. Only IEEE-exact operations are
// used (+, -, *, / and fmaf, all rounded to nearest even; nvcc builds with --fmad=false and
// without fast-math, so nothing is contracted or approximated), and integer bit manipulation.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define QNT_HD __host__ __device__ __forceinline__
#else
#include <math.h>
#define QNT_HD inline
#endif


// --- the NF4 tables -------------------------------------------------------------------------
// bitsandbytes' codebook (csrc/kernels.cu, dDequantizeNF4), its 15 decision thresholds (the
// pivots of dQuantizeNF4's tree, ascending: a value strictly above threshold k belongs to code
// k + 1 or higher), and the codebook as integers, round_half_to_even(127 * code): initializer
// lists, so that the host's arrays and the device's constant memory hold the same constants.
#define QNT_NF4_CODEBOOK \
  -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, \
  -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f, \
  0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f, \
  0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f
#define QNT_NF4_THRESHOLDS \
  -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f, \
  -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f, \
  0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f, \
  0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f
#define QNT_NF4_INT8 \
  -127, -88, -67, -50, -36, -23, -12, 0, 10, 20, 31, 43, 56, 71, 92, 127

namespace qnt::rules {

QNT_HD uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}

QNT_HD float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

QNT_HD bool is_nan(float v) { return v != v; }

// The one NaN a float output of an operator holds (qnt.h): the canonical quiet NaN. Which input
// NaN an IEEE operation passes on depends on the order of its operands (x86 keeps the first's
// payload, CUDA makes its own), so kernels that order their sums differently would differ.
QNT_HD float canonical_nan(float v) { return is_nan(v) ? bits_float(0x7FC00000u) : v; }

QNT_HD bool is_finite(float v) { return (float_bits(v) & 0x7F800000u) != 0x7F800000u; }

// --- 16-bit floats ------------------------------------------------------------------------

// binary16 -> float32, exact.
QNT_HD float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_float(sign | 0x7F800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in float32.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return bits_float(sign | float_bits(v));
}

// float32 -> binary16, rounded to nearest even; overflow gives +-inf, NaN the quiet NaN of its
// sign (0x7E00 / 0xFE00).
QNT_HD uint16_t f32_to_f16(float f) {
  const uint32_t x = float_bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (ax >= 0x38800000u) {                                              // a normal binary16
    const uint32_t r = (ax + 0x0FFFu + ((ax >> 13) & 1u)) >> 13;
    return static_cast<uint16_t>(sign | (r - (112u << 10)));
  }
  const uint32_t e = ax >> 23;
  if (e < 102u) return sign;  // below 2^-25 (or exactly half of 2^-24 and below): zero
  // A subnormal binary16: round(mant * 2^(e - 126)) to nearest even.
  const uint32_t mant = (ax & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14 .. 24
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  const uint32_t r = q + ((rem > half || (rem == half && (q & 1u) != 0)) ? 1u : 0u);
  return static_cast<uint16_t>(sign | r);
}

QNT_HD float bf16_to_f32(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// float32 -> bfloat16, rounded to nearest even; NaN gives the quiet NaN of its sign.
QNT_HD uint16_t f32_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7FC0u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// --- quantize and dequantize ----------------------------------------------------------------

// Rounds to the nearest integer, ties to even, whatever the FP environment's rounding mode.
// floor() and the subtraction are exact for every float (|v| >= 2^23 is already an integer);
// copysign keeps the sign of a zero result (-0.4 -> -0.0), as rint does.
QNT_HD float round_half_to_even(float v) {
  const float f = floorf(v);
  const float frac = v - f;
  float r = f;
  if (frac > 0.5f || (frac == 0.5f && fmodf(f, 2.0f) != 0.0f)) r = f + 1.0f;
  return copysignf(r, v);
}

// saturate(round_half_to_even(v) + zero_point) into [qmin, qmax]; NaN -> zero_point.
QNT_HD int32_t round_and_saturate(float v, int32_t zero_point, int32_t qmin, int32_t qmax) {
  if (is_nan(v)) return zero_point;
  const float r = round_half_to_even(v);  // +-inf stay infinite and saturate below
  // r + zero_point in double is exact whenever the sum lies near the int32 range; far outside
  // it only the clamp matters, so the sum's rounding there cannot change q.
  const double sum = static_cast<double>(r) + static_cast<double>(zero_point);
  if (sum <= static_cast<double>(qmin)) return qmin;
  if (sum >= static_cast<double>(qmax)) return qmax;
  return static_cast<int32_t>(sum);
}

QNT_HD int32_t quantize_integer(float x, float scale, int32_t zero_point, int32_t qmin,
                                int32_t qmax) {
  return round_and_saturate(x / scale, zero_point, qmin, qmax);  // NaN x: a NaN quotient
}

// (float)(q - zero_point) * scale, the difference exact in 64 bits.
QNT_HD float dequantize_integer(int32_t q, float scale, int32_t zero_point) {
  const int64_t d = static_cast<int64_t>(q) - static_cast<int64_t>(zero_point);
  return static_cast<float>(d) * scale;
}

// n = x * (1.0f / scale); the number of the 15 thresholds t with n > t; NaN -> 7 (0.0).
QNT_HD uint8_t quantize_nf4(float x, float scale, const float *thresholds) {
  if (is_nan(x)) return 7;
  const float inv = 1.0f / scale;
  const float n = x * inv;
  uint32_t code = 0;
  for (int i = 0; i < 15; ++i) code += n > thresholds[i] ? 1u : 0u;
  return static_cast<uint8_t>(code);
}

QNT_HD uint8_t quantize_binary(float x) { return x < 0.0f ? 0 : 1; }

// --- the logarithmic (power-of-two) codes: QNT_DTYPE_LOG4, QNT_DTYPE_LOG8 ---------------------
// A code of `bits` bits holds a sign (the top bit, 1 for negative) and a magnitude m in
// [0, 2^(bits-1) - 1]: m = 0 is zero, m >= 1 is scale * 2^-(M - m) with M = 2^(bits-1) - 1, so
// the largest magnitude (m = M) is scale itself and k = M - m runs over [0, kmax], kmax = M - 1.

// The significand at and above which a float rounds up an octave in the log domain: the
// smallest float32 significand above sqrt(2) (1.41421365...; sqrt(2) is irrational, so no float
// lies on the boundary and no tie can occur).
#define QNT_LOG2_SQRT2_MANT 0x3504F4u
// The smallest subnormal's multiple at and above which a subnormal float is nearer, in the log
// domain, to 2^-126 than to 2^-127: 2^22.5 = 5931641.6..., rounded up.
#define QNT_LOG2_SUBNORMAL_UP 0x5A827Au

// The exponent k of the power of two nearest r >= 0 in the log domain, r = 2^-(k + f) with
// |f| < 1/2: -(e + 1) where r's significand is at least sqrt(2), -e otherwise (e = r's binary
// exponent). +inf gives -128; subnormals give 126 or 127, and 0 gives 127 (a value that any
// log dtype stores as zero).
QNT_HD int32_t log2_round_exponent(float r) {
  const uint32_t u = float_bits(r) & 0x7FFFFFFFu;
  if (u < 0x00800000u) return u >= QNT_LOG2_SUBNORMAL_UP ? 126 : 127;
  const int32_t e = static_cast<int32_t>(u >> 23) - 127;
  const int32_t up = (u & 0x7FFFFFu) >= QNT_LOG2_SQRT2_MANT ? 1 : 0;
  return -(e + up);
}

// q = the code of x: r = |x| / scale (one float32 division); k = log2_round_exponent(r) clamped
// below at 0 (values above the top level saturate to it); k > kmax gives the zero code 0, and
// otherwise the code is sign | (M - k), the sign set for x < 0. NaN gives 0.
QNT_HD uint8_t quantize_log2(float x, float scale, int bits) {
  if (is_nan(x)) return 0;
  const int32_t M = (1 << (bits - 1)) - 1;
  const float r = fabsf(x) / scale;
  int32_t k = log2_round_exponent(r);
  if (k < 0) k = 0;
  if (k > M - 1) return 0;
  const uint32_t sign = x < 0.0f ? (1u << (bits - 1)) : 0u;
  return static_cast<uint8_t>(sign | static_cast<uint32_t>(M - k));
}

// x = +-(scale * 2^-k), one float32 multiplication by an exact power of two (exact unless the
// product falls below the normal range); the zero magnitude gives 0.0, or -0.0 with the sign bit
// set (a code quantize never writes).
QNT_HD float dequantize_log2(uint32_t code, float scale, int bits) {
  const uint32_t M = (1u << (bits - 1)) - 1u;
  const uint32_t m = code & M;
  const float p = m == 0 ? 0.0f : bits_float((127u - (M - m)) << 23);
  const float v = scale * p;
  return (code >> (bits - 1)) & 1u ? -v : v;
}

// --- the operators' epilogue ---------------------------------------------------------------

QNT_HD int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

// (sa * sb) / sy in float32: one product, one division.
QNT_HD float requant_multiplier(float sa, float sb, float sy) {
  const float product = sa * sb;
  return product / sy;
}

// saturate(round_half_to_even((float)acc * multiplier) + zy) into [qmin, qmax].
QNT_HD int32_t requantize(int32_t acc, float multiplier, int32_t zy, int32_t qmin, int32_t qmax) {
  const float v = static_cast<float>(acc) * multiplier;
  return round_and_saturate(v, zy, qmin, qmax);
}

// (float)acc * scale, then + bias as a separate float32 addition (bias 0 adds nothing but
// turns -0.0 into +0.0, on every kernel alike).
QNT_HD float acc_to_float(int32_t acc, float scale, float bias) {
  const float v = static_cast<float>(acc) * scale;
  return canonical_nan(v + bias);
}

// The weight-only layer's output: the dot product d, plus the bias as a separate float32
// addition where there is one.
QNT_HD float wo_output(float d, const float *bias, int64_t n) {
  return canonical_nan(bias != nullptr ? d + bias[n] : d);
}

}  // namespace qnt::rules
