#include "kernels/ref/quantize_ref.hpp"

#include "kernels/common/scalar.hpp"

#include <cmath>
#include <cstring>

namespace qnt::ref {

// The rules themselves live in kernels/common/scalar.hpp, shared with the CUDA kernels.
float round_half_to_even(float v) noexcept { return rules::round_half_to_even(v); }

int32_t round_and_saturate(float v, int32_t zero_point, int32_t qmin, int32_t qmax) noexcept {
  return rules::round_and_saturate(v, zero_point, qmin, qmax);
}

int32_t quantize_integer(float x, float scale, int32_t zero_point, int32_t qmin,
                         int32_t qmax) noexcept {
  return rules::quantize_integer(x, scale, zero_point, qmin, qmax);
}

float dequantize_integer(int32_t q, float scale, int32_t zero_point) noexcept {
  return rules::dequantize_integer(q, scale, zero_point);
}

const float kNF4Codebook[16] = {QNT_NF4_CODEBOOK};

const float kNF4Thresholds[15] = {QNT_NF4_THRESHOLDS};

uint8_t quantize_nf4(float x, float scale) noexcept {
  return rules::quantize_nf4(x, scale, kNF4Thresholds);
}

float dequantize_nf4(uint8_t code, float scale) noexcept { return kNF4Codebook[code & 15] * scale; }

uint8_t quantize_binary(float x) noexcept { return x < 0.0f ? 0 : 1; }

float dequantize_binary(uint8_t bit, float scale) noexcept { return bit ? scale : -scale; }

uint8_t quantize_log2(float x, float scale, int bits) noexcept {
  return rules::quantize_log2(x, scale, bits);
}

float dequantize_log2(uint32_t code, float scale, int bits) noexcept {
  return rules::dequantize_log2(code, scale, bits);
}

int32_t load_element(const uint8_t *base, size_t i, int bits, bool is_signed) noexcept {
  switch (bits) {
    case 32: {
      int32_t v;
      std::memcpy(&v, base + 4 * i, 4);
      return v;
    }
    case 16: {
      uint16_t u;
      std::memcpy(&u, base + 2 * i, 2);
      return is_signed ? static_cast<int32_t>(static_cast<int16_t>(u)) : static_cast<int32_t>(u);
    }
    case 8:
      return is_signed ? static_cast<int32_t>(static_cast<int8_t>(base[i]))
                       : static_cast<int32_t>(base[i]);
    default: {
      const size_t per_byte = static_cast<size_t>(8 / bits);
      const unsigned shift = static_cast<unsigned>((i % per_byte) * static_cast<size_t>(bits));
      const unsigned mask = (1u << bits) - 1u;
      const unsigned u = (static_cast<unsigned>(base[i / per_byte]) >> shift) & mask;
      if (is_signed && (u >> (bits - 1)) != 0) return static_cast<int32_t>(u) - (1 << bits);
      return static_cast<int32_t>(u);
    }
  }
}

void store_element(uint8_t *base, size_t i, int bits, int32_t v) noexcept {
  switch (bits) {
    case 32:
      std::memcpy(base + 4 * i, &v, 4);
      return;
    case 16: {
      const auto u = static_cast<uint16_t>(static_cast<uint32_t>(v) & 0xFFFFu);
      std::memcpy(base + 2 * i, &u, 2);
      return;
    }
    case 8:
      base[i] = static_cast<uint8_t>(static_cast<uint32_t>(v) & 0xFFu);
      return;
    default: {
      const size_t per_byte = static_cast<size_t>(8 / bits);
      const unsigned shift = static_cast<unsigned>((i % per_byte) * static_cast<size_t>(bits));
      const unsigned mask = ((1u << bits) - 1u) << shift;
      uint8_t &b = base[i / per_byte];
      b = static_cast<uint8_t>((b & ~mask) | ((static_cast<unsigned>(v) << shift) & mask));
      return;
    }
  }
}

int32_t quantize_code(Code code, float x, float scale, int32_t zero_point, int32_t qmin,
                      int32_t qmax, int bits) noexcept {
  switch (code) {
    case Code::Log2:
      return quantize_log2(x, scale, bits);
    case Code::NF4:
      return quantize_nf4(x, scale);
    case Code::Binary:
      return quantize_binary(x);
    default:
      return quantize_integer(x, scale, zero_point, qmin, qmax);
  }
}

float dequantize_code(Code code, int32_t v, float scale, int32_t zero_point, int bits) noexcept {
  switch (code) {
    case Code::Log2:
      return dequantize_log2(static_cast<uint32_t>(v), scale, bits);
    case Code::NF4:
      return dequantize_nf4(static_cast<uint8_t>(v), scale);
    case Code::Binary:
      return dequantize_binary(static_cast<uint8_t>(v), scale);
    default:
      return dequantize_integer(v, scale, zero_point);
  }
}

void quantize(const QuantSpec &spec, const float *x, uint8_t *q, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const size_t g = spec.layout.group_of(i);
    store_element(q, i, spec.bits,
                  quantize_code(spec.code, x[i - begin], spec.scales[g], spec.zero_points[g],
                                spec.qmin, spec.qmax, spec.bits));
  }
}

void dequantize(const QuantSpec &spec, const uint8_t *q, float *x, size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    const size_t g = spec.layout.group_of(i);
    x[i - begin] = dequantize_code(spec.code, load_element(q, i, spec.bits, spec.is_signed),
                                   spec.scales[g], spec.zero_points[g], spec.bits);
  }
}

}  // namespace qnt::ref
