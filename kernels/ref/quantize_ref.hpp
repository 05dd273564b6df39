// Scalar reference kernels for quantize and dequantize: the executable definition of every
// result qnt produces. Written to be read; every fast kernel must match them bit for bit.
#pragma once

#include "core/layout.hpp"

#include <cstddef>
#include <cstdint>

namespace qnt::ref {

// How q values are encoded and which rule produces them (mirrors qnt::Rule, kept local so the
// kernels depend on nothing but plain values).
enum class Code { Integer, NF4, Binary, Log2 };

// Everything a kernel needs to know about the quantized side of an op.
struct QuantSpec {
  Code code = Code::Integer;
  int bits = 8;  // 1, 2, 4, 8, 16 or 32
  bool is_signed = true;
  int32_t qmin = -128;  // the integer range (Code::Integer)
  int32_t qmax = 127;
  GroupLayout layout;  // element -> parameter index
  const float *scales = nullptr;
  const int32_t *zero_points = nullptr;
};

// --- the scalar rules -----------------------------------------------------------------------

// Rounds to the nearest integer, ties to even, whatever the FP environment's rounding mode.
float round_half_to_even(float v) noexcept;

// saturate(round_half_to_even(v) + zero_point) into [qmin, qmax]; NaN -> zero_point. The common
// last step of quantize and requantize.
int32_t round_and_saturate(float v, int32_t zero_point, int32_t qmin, int32_t qmax) noexcept;

// q = saturate(round_half_to_even(x / scale) + zero_point) into [qmin, qmax]; NaN -> zero_point.
int32_t quantize_integer(float x, float scale, int32_t zero_point, int32_t qmin,
                         int32_t qmax) noexcept;

// x = (float)(q - zero_point) * scale, q - zero_point computed exactly in 64 bits.
float dequantize_integer(int32_t q, float scale, int32_t zero_point) noexcept;

// The bitsandbytes NF4 codebook and its 15 decision thresholds, ascending.
extern const float kNF4Codebook[16];
extern const float kNF4Thresholds[15];

// n = x * (1.0f / scale); the number of thresholds below n (ties to the lower code); NaN -> 7.
uint8_t quantize_nf4(float x, float scale) noexcept;
float dequantize_nf4(uint8_t code, float scale) noexcept;

// 1 (+1) unless x < 0; 0 (-1) for x < 0.
uint8_t quantize_binary(float x) noexcept;
float dequantize_binary(uint8_t bit, float scale) noexcept;

// The logarithmic codes of `bits` bits (4 or 8): kernels/common/scalar.hpp has the rule.
uint8_t quantize_log2(float x, float scale, int bits) noexcept;
float dequantize_log2(uint32_t code, float scale, int bits) noexcept;

// The code of x under any rule (Integer: quantize_integer; NF4; Binary; Log2 of `bits` bits),
// and back: the one
// switch every kernel's scalar path goes through.
int32_t quantize_code(Code code, float x, float scale, int32_t zero_point, int32_t qmin,
                      int32_t qmax, int bits) noexcept;
float dequantize_code(Code code, int32_t v, float scale, int32_t zero_point,
                      int bits) noexcept;

// --- element access in packed storage -------------------------------------------------------

// The q value of element i: sign-extended for signed types, zero-extended otherwise.
int32_t load_element(const uint8_t *base, size_t i, int bits, bool is_signed) noexcept;
// Writes the low `bits` bits of v as element i, leaving the other bits of its byte alone.
void store_element(uint8_t *base, size_t i, int bits, int32_t v) noexcept;

// --- kernels over a range of flat element indices [begin, end) -------------------------------
// q is the whole quantized tensor; x points at the float of element `begin` (x[0] is element
// begin), so a caller may pass a slice or a small buffer. For sub-byte types, ranges handled by
// different threads must not share a byte.

void quantize(const QuantSpec &spec, const float *x, uint8_t *q, size_t begin, size_t end);
void dequantize(const QuantSpec &spec, const uint8_t *q, float *x, size_t begin, size_t end);

}  // namespace qnt::ref
