// The binary GEMM's AVX-512 VPOPCNTDQ kernel (kernels/gemm/xnor_x86.hpp: xnor_vpopcnt) compiled
// over a scalar model of its 256-bit instructions, so that its logic is tested on machines
// without VPOPCNTDQ too (natively it runs in Gemm.BinaryMatmul where the CPU has it). Every
// model follows Intel's pseudo-code of its instruction. A translation unit of its own: the
// models replace __m256i, which the AVX2 kernels of test_gemm_emulated.cpp use natively.
// x86-64 only (the kernel's header is x86's).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace emu {
struct Y {  // a 256-bit register: four 64-bit lanes
  uint64_t q[4];
};
struct X {  // a 128-bit register: two 64-bit lanes
  uint64_t q[2];
};
inline Y zero256() { return Y{}; }
inline Y loadu256(const void *p) {
  Y v;
  std::memcpy(v.q, p, 32);
  return v;
}
inline Y xor256(Y a, Y b) {  // VPXOR
  for (int i = 0; i < 4; ++i) a.q[i] ^= b.q[i];
  return a;
}
inline Y popcnt64(Y v) {  // VPOPCNTQ
  for (uint64_t &x : v.q) {
    uint64_t n = 0;
    for (uint64_t y = x; y != 0; y &= y - 1) ++n;
    x = n;
  }
  return v;
}
inline Y add64(Y a, Y b) {  // VPADDQ
  for (int i = 0; i < 4; ++i) a.q[i] += b.q[i];
  return a;
}
inline X low128(Y v) { return X{{v.q[0], v.q[1]}}; }  // a cast: the low half
inline X extract128(Y v, int i) { return X{{v.q[2 * (i & 1)], v.q[2 * (i & 1) + 1]}}; }  // VEXTRACTI128
inline X add64x(X a, X b) { return X{{a.q[0] + b.q[0], a.q[1] + b.q[1]}}; }  // PADDQ
inline int64_t lane0(X v) { return static_cast<int64_t>(v.q[0]); }  // MOVQ
inline int64_t lane(X v, int i) { return static_cast<int64_t>(v.q[i & 1]); }  // PEXTRQ
}  // namespace emu

#undef __m256i
#define __m256i emu::Y
#undef __m128i
#define __m128i emu::X
#undef _mm256_setzero_si256
#define _mm256_setzero_si256 emu::zero256
#undef _mm256_loadu_si256
#define _mm256_loadu_si256 emu::loadu256
#undef _mm256_xor_si256
#define _mm256_xor_si256 emu::xor256
#undef _mm256_popcnt_epi64
#define _mm256_popcnt_epi64 emu::popcnt64
#undef _mm256_add_epi64
#define _mm256_add_epi64 emu::add64
#undef _mm256_castsi256_si128
#define _mm256_castsi256_si128 emu::low128
#undef _mm256_extracti128_si256
#define _mm256_extracti128_si256 emu::extract128
#undef _mm_add_epi64
#define _mm_add_epi64 emu::add64x
#undef _mm_cvtsi128_si64
#define _mm_cvtsi128_si64 emu::lane0
#undef _mm_extract_epi64
#define _mm_extract_epi64 emu::lane
#if !defined(__AVX512VPOPCNTDQ__)
#define __AVX512VPOPCNTDQ__ 1
#endif
#if !defined(__AVX512VL__)
#define __AVX512VL__ 1
#endif
#include "kernels/gemm/xnor_x86.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

// Against the portable kernel (xnor_generic): words from 4 to 40 (multiples of 4), 2 to 6 rows,
// random words, an all-ones row and an all-zeros column (the largest and smallest counts), a row
// equal to a column (a count of 0), and the output stride.
TEST(XnorEmulated, VpopcntMatchesThePortableKernel) {
  std::mt19937_64 rng(41);
  for (size_t words = 4; words <= 40; words += 4)
    for (size_t rows = 2; rows <= 6; rows += 2) {
      std::vector<uint64_t> a(rows * words), b(3 * words);
      for (auto &v : a) v = rng();
      for (auto &v : b) v = rng();
      for (size_t i = 0; i < words; ++i) {
        a[i] = ~uint64_t{0};                            // row 0: all ones
        if (rows > 2) a[2 * words + i] = b[words + i];  // row 2 equals column 1
        b[2 * words + i] = 0;                           // column 2: all zeros
      }
      const size_t ld = 5;
      std::vector<int32_t> got(rows * ld, -1), want(rows * ld, -1);
      qnt::kern::xnor_vpopcnt(a.data(), rows, b.data(), words, got.data(), ld);
      qnt::kern::xnor_generic(a.data(), rows, b.data(), words, want.data(), ld);
      ASSERT_EQ(got, want) << "words " << words << " rows " << rows;
      EXPECT_EQ(got[0 * ld + 2], static_cast<int32_t>(64 * words));  // all ones vs all zeros
      if (rows > 2) {
        EXPECT_EQ(got[2 * ld + 1], 0);
      }
    }
}

#endif  // __x86_64__
