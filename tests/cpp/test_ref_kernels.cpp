// The scalar rules of the reference kernels, against hand-computed values.
#include "kernels/ref/quantize_ref.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace qnt::ref;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();

TEST(RoundHalfToEven, Ties) {
  EXPECT_EQ(round_half_to_even(0.5f), 0.0f);
  EXPECT_EQ(round_half_to_even(1.5f), 2.0f);
  EXPECT_EQ(round_half_to_even(2.5f), 2.0f);
  EXPECT_EQ(round_half_to_even(3.5f), 4.0f);
  EXPECT_EQ(round_half_to_even(-0.5f), 0.0f);
  EXPECT_TRUE(std::signbit(round_half_to_even(-0.5f)));  // -0.0, as rint gives
  EXPECT_EQ(round_half_to_even(-1.5f), -2.0f);
  EXPECT_EQ(round_half_to_even(-2.5f), -2.0f);
  EXPECT_EQ(round_half_to_even(8388607.5f), 8388608.0f);  // 2^23 - 0.5: the largest tie
  EXPECT_EQ(round_half_to_even(8388606.5f), 8388606.0f);
}

TEST(RoundHalfToEven, NonTies) {
  EXPECT_EQ(round_half_to_even(0.49999997f), 0.0f);
  EXPECT_EQ(round_half_to_even(0.50000006f), 1.0f);
  EXPECT_EQ(round_half_to_even(-2.4f), -2.0f);
  EXPECT_EQ(round_half_to_even(-2.6f), -3.0f);
  EXPECT_EQ(round_half_to_even(16777216.0f), 16777216.0f);
  EXPECT_EQ(round_half_to_even(1e30f), 1e30f);
  EXPECT_EQ(round_half_to_even(kInf), kInf);
  EXPECT_EQ(round_half_to_even(-kInf), -kInf);
}

TEST(QuantizeInteger, TiesGoToEven) {
  EXPECT_EQ(quantize_integer(2.5f, 1.0f, 0, -128, 127), 2);
  EXPECT_EQ(quantize_integer(3.5f, 1.0f, 0, -128, 127), 4);
  EXPECT_EQ(quantize_integer(-2.5f, 1.0f, 0, -128, 127), -2);
  EXPECT_EQ(quantize_integer(0.25f, 0.5f, 0, -128, 127), 0);  // 0.5 -> 0
  EXPECT_EQ(quantize_integer(0.75f, 0.5f, 0, -128, 127), 2);  // 1.5 -> 2
  EXPECT_EQ(quantize_integer(0.25f, 0.5f, 10, 0, 255), 10);   // the zero point is added after
  EXPECT_EQ(quantize_integer(-0.75f, 0.5f, 10, 0, 255), 8);   // -1.5 -> -2, + 10
}

TEST(QuantizeInteger, Saturation) {
  EXPECT_EQ(quantize_integer(1000.0f, 1.0f, 0, -128, 127), 127);
  EXPECT_EQ(quantize_integer(-1000.0f, 1.0f, 0, -128, 127), -128);
  EXPECT_EQ(quantize_integer(-50.0f, 1.0f, -100, -128, 127), -128);
  EXPECT_EQ(quantize_integer(127.5f, 1.0f, 0, -128, 127), 127);  // 128 saturates
  EXPECT_EQ(quantize_integer(126.5f, 1.0f, 0, -128, 127), 126);  // tie to even, in range
  EXPECT_EQ(quantize_integer(255.4f, 1.0f, 0, 0, 255), 255);
  EXPECT_EQ(quantize_integer(-0.4f, 1.0f, 0, 0, 255), 0);
  EXPECT_EQ(quantize_integer(7.6f, 1.0f, 0, -8, 7), 7);
  EXPECT_EQ(quantize_integer(-9.0f, 1.0f, 0, -8, 7), -8);
  EXPECT_EQ(quantize_integer(3e38f, 1e-38f, 0, -128, 127), 127);  // x / s overflows to +inf
  EXPECT_EQ(quantize_integer(3e9f, 1.0f, 0, INT32_MIN, INT32_MAX), INT32_MAX);
  EXPECT_EQ(quantize_integer(-3e9f, 1.0f, 0, INT32_MIN, INT32_MAX), INT32_MIN);
  EXPECT_EQ(quantize_integer(2147483520.0f, 1.0f, 0, INT32_MIN, INT32_MAX), 2147483520);
  EXPECT_EQ(quantize_integer(2147483520.0f, 1.0f, 200, INT32_MIN, INT32_MAX), INT32_MAX);
}

TEST(QuantizeInteger, NanAndInfinities) {
  EXPECT_EQ(quantize_integer(kNaN, 0.1f, 17, 0, 255), 17);
  EXPECT_EQ(quantize_integer(-kNaN, 0.1f, -3, -128, 127), -3);
  EXPECT_EQ(quantize_integer(kInf, 0.1f, 17, 0, 255), 255);
  EXPECT_EQ(quantize_integer(-kInf, 0.1f, 17, 0, 255), 0);
  EXPECT_EQ(quantize_integer(kInf, 1.0f, 0, -32768, 32767), 32767);
  EXPECT_EQ(quantize_integer(-kInf, 1.0f, 0, -1, 1), -1);
}

TEST(QuantizeInteger, Denormals) {
  EXPECT_EQ(quantize_integer(kDenormMin, kDenormMin, 0, -128, 127), 1);
  EXPECT_EQ(quantize_integer(3 * kDenormMin, 2 * kDenormMin, 0, -128, 127), 2);  // 1.5
  EXPECT_EQ(quantize_integer(5 * kDenormMin, 2 * kDenormMin, 0, -128, 127), 2);  // 2.5
  EXPECT_EQ(quantize_integer(1e-40f, 1.0f, 3, -128, 127), 3);
  EXPECT_EQ(quantize_integer(1e-40f, 1e-42f, 0, -128, 127), 100);  // 1e-40 / 1e-42 in float
  EXPECT_EQ(quantize_integer(1.0f, kDenormMin, 0, -128, 127), 127);
}

TEST(DequantizeInteger, Exact) {
  EXPECT_EQ(dequantize_integer(5, 0.5f, 3), 1.0f);
  EXPECT_EQ(dequantize_integer(-128, 0.25f, 127), -63.75f);
  EXPECT_EQ(dequantize_integer(255, 1.0f, 0), 255.0f);
  EXPECT_EQ(dequantize_integer(0, 2.0f, 65535), -131070.0f);
  // i32: q - zp is exact in 64 bits, then rounded once to float.
  EXPECT_EQ(dequantize_integer(INT32_MIN, 1.0f, INT32_MAX), -4294967296.0f);
  EXPECT_EQ(dequantize_integer(INT32_MAX, 1.0f, 0), 2147483648.0f);
  EXPECT_EQ(dequantize_integer(1, kDenormMin, 0), kDenormMin);
}

TEST(NF4, CodebookIsBitsandbytes) {
  EXPECT_EQ(kNF4Codebook[0], -1.0f);
  EXPECT_EQ(kNF4Codebook[7], 0.0f);
  EXPECT_EQ(kNF4Codebook[15], 1.0f);
  EXPECT_EQ(kNF4Codebook[8], 0.07958029955625534f);
  for (int k = 0; k < 15; ++k) {
    EXPECT_LT(kNF4Codebook[k], kNF4Codebook[k + 1]);
    EXPECT_LT(kNF4Codebook[k], kNF4Thresholds[k]);
    EXPECT_GT(kNF4Codebook[k + 1], kNF4Thresholds[k]);
    // each pivot is the midpoint of its neighbours, to float precision
    const double mid = (static_cast<double>(kNF4Codebook[k]) + kNF4Codebook[k + 1]) / 2;
    EXPECT_NEAR(kNF4Thresholds[k], mid, 1e-6) << k;
  }
}

TEST(NF4, EveryCodeRoundTrips) {
  for (int k = 0; k < 16; ++k) {
    EXPECT_EQ(quantize_nf4(kNF4Codebook[k], 1.0f), k);
    EXPECT_EQ(quantize_nf4(kNF4Codebook[k] * 4.0f, 4.0f), k);  // exact: powers of two
    EXPECT_EQ(dequantize_nf4(static_cast<uint8_t>(k), 2.0f), kNF4Codebook[k] * 2.0f);
  }
}

TEST(NF4, TiesGoToTheLowerCode) {
  for (int k = 0; k < 15; ++k) {
    const float t = kNF4Thresholds[k];
    EXPECT_EQ(quantize_nf4(t, 1.0f), k) << k;
    EXPECT_EQ(quantize_nf4(std::nextafter(t, 2.0f), 1.0f), k + 1) << k;
  }
}

TEST(NF4, SpecialValues) {
  EXPECT_EQ(quantize_nf4(kNaN, 1.0f), 7);
  EXPECT_EQ(quantize_nf4(kInf, 1.0f), 15);
  EXPECT_EQ(quantize_nf4(-kInf, 1.0f), 0);
  EXPECT_EQ(quantize_nf4(5.0f, 1.0f), 15);  // beyond absmax saturates to +-1
  EXPECT_EQ(quantize_nf4(-5.0f, 1.0f), 0);
  EXPECT_EQ(quantize_nf4(0.0f, 3.0f), 7);
  EXPECT_EQ(quantize_nf4(-0.0f, 3.0f), 7);
  // n = x * (1 / scale), as bitsandbytes computes it: for this x (found by search with numpy),
  // x * (1/7) is above the last pivot while x / 7 is not, so the code is 15, not 14.
  EXPECT_EQ(quantize_nf4(6.0303493f, 7.0f), 15);
  EXPECT_EQ(quantize_nf4(9.476263f, 11.0f), 15);
}

TEST(QuantizeInteger, TrueDivisionNotReciprocal) {
  // ONNX divides. Cases (found by search with numpy) where multiplying by 1/scale would round
  // the other way: 2.25f / 0.3f = 7.4999995f -> 7 (2.25f * (1/0.3f) = 7.5f -> 8);
  // 0.114999995f / 0.01f = 11.5f -> 12 (the product is 11.499999f -> 11).
  EXPECT_EQ(quantize_integer(2.25f, 0.3f, 0, -128, 127), 7);
  EXPECT_EQ(quantize_integer(10.849999f, 0.7f, 0, -128, 127), 15);
  EXPECT_EQ(quantize_integer(0.114999995f, 0.01f, 0, -128, 127), 12);
}

TEST(Binary, Sign) {
  EXPECT_EQ(quantize_binary(1.0f), 1);
  EXPECT_EQ(quantize_binary(0.0f), 1);
  EXPECT_EQ(quantize_binary(-0.0f), 1);
  EXPECT_EQ(quantize_binary(-1e-30f), 0);
  EXPECT_EQ(quantize_binary(kNaN), 1);
  EXPECT_EQ(quantize_binary(-kInf), 0);
  EXPECT_EQ(dequantize_binary(1, 0.5f), 0.5f);
  EXPECT_EQ(dequantize_binary(0, 0.5f), -0.5f);
}

TEST(Packing, Int4LowNibbleFirst) {
  std::vector<uint8_t> buf(3, 0xAA);
  const int32_t v[] = {1, -1, 7, -8, 0};
  for (size_t i = 0; i < 5; ++i) store_element(buf.data(), i, 4, v[i]);
  EXPECT_EQ(buf[0], 0xF1);
  EXPECT_EQ(buf[1], 0x87);
  EXPECT_EQ(buf[2] & 0x0F, 0x00);
  EXPECT_EQ(buf[2] & 0xF0, 0xA0);  // the neighbour nibble is left alone
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(load_element(buf.data(), i, 4, true), v[i]);
  EXPECT_EQ(load_element(buf.data(), 1, 4, false), 15);
}

TEST(Packing, Uint4) {
  std::vector<uint8_t> buf(2, 0);
  store_element(buf.data(), 0, 4, 15);
  store_element(buf.data(), 1, 4, 0);
  store_element(buf.data(), 2, 4, 3);
  EXPECT_EQ(buf[0], 0x0F);
  EXPECT_EQ(buf[1], 0x03);
}

TEST(Packing, BinaryBitZeroFirst) {
  std::vector<uint8_t> buf(2, 0);
  const int32_t bits[] = {1, 0, 1, 1, 0, 0, 0, 1, 1};
  for (size_t i = 0; i < 9; ++i) store_element(buf.data(), i, 1, bits[i]);
  EXPECT_EQ(buf[0], 0x8D);
  EXPECT_EQ(buf[1], 0x01);
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(load_element(buf.data(), i, 1, false), bits[i]);
}

TEST(Packing, TernaryTwoBitsTwosComplement) {
  std::vector<uint8_t> buf(2, 0);
  const int32_t v[] = {-1, 0, 1, 1, -1};
  for (size_t i = 0; i < 5; ++i) store_element(buf.data(), i, 2, v[i]);
  EXPECT_EQ(buf[0], 0x53);  // 01 01 00 11
  EXPECT_EQ(buf[1], 0x03);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(load_element(buf.data(), i, 2, true), v[i]);
  buf[0] = 0x02;  // the unused pattern 0b10 reads as -2
  EXPECT_EQ(load_element(buf.data(), 0, 2, true), -2);
}

TEST(Packing, WideTypesAreLittleEndianValues) {
  std::vector<uint8_t> buf(8, 0);
  store_element(buf.data(), 1, 16, -2);
  EXPECT_EQ(load_element(buf.data(), 1, 16, true), -2);
  EXPECT_EQ(load_element(buf.data(), 1, 16, false), 65534);
  store_element(buf.data(), 1, 32, INT32_MIN);
  EXPECT_EQ(load_element(buf.data(), 1, 32, true), INT32_MIN);
  store_element(buf.data(), 3, 8, 200);
  EXPECT_EQ(load_element(buf.data(), 3, 8, false), 200);
  EXPECT_EQ(load_element(buf.data(), 3, 8, true), -56);
}

}  // namespace
