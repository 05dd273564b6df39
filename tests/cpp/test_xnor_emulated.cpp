// The binary GEMM's AVX-512 VPOPCNTDQ kernel (kernels/gemm/xnor_x86.hpp: xnor_cols_vpopcnt)
// compiled over a scalar model of its 512- and 256-bit instructions, so that its logic is tested
// on machines without VPOPCNTDQ too (natively it runs in Gemm.BinaryMatmul where the CPU has
// it). Every model follows Intel's pseudo-code of its instruction. A translation unit of its
// own: the models replace __m256i, which the AVX2 kernels of test_gemm_emulated.cpp use
// natively. x86-64 only (the kernel's header is x86's).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace emu {
struct Z {  // a 512-bit register: eight 64-bit lanes
  uint64_t q[8];
};
struct Y {  // a 256-bit register: four 64-bit lanes
  uint64_t q[4];
};
inline uint64_t count(uint64_t x) {
  uint64_t n = 0;
  for (; x != 0; x &= x - 1) ++n;
  return n;
}
// VPXORQ, VPOPCNTQ and VPADDQ on any width (Z, Y or X: lane by lane).
template <class T>
inline T xorq(T a, T b) {
  for (size_t i = 0; i < sizeof(a.q) / sizeof(a.q[0]); ++i) a.q[i] ^= b.q[i];
  return a;
}
template <class T>
inline T popcntq(T v) {
  for (uint64_t &x : v.q) x = count(x);
  return v;
}
template <class T>
inline T addq(T a, T b) {
  for (size_t i = 0; i < sizeof(a.q) / sizeof(a.q[0]); ++i) a.q[i] += b.q[i];
  return a;
}
inline Z zero512() { return Z{}; }
inline Z set1_64(long long x) {  // VPBROADCASTQ
  Z v;
  for (uint64_t &q : v.q) q = static_cast<uint64_t>(x);
  return v;
}
inline Z sub512(Z a, Z b) {  // VPSUBQ
  for (int i = 0; i < 8; ++i) a.q[i] -= b.q[i];
  return a;
}
inline Y narrow32(Z v) {  // VPMOVQD: each lane's low 32 bits, in order
  uint32_t d[8];
  for (int i = 0; i < 8; ++i) d[i] = static_cast<uint32_t>(v.q[i]);
  Y r;
  std::memcpy(r.q, d, 32);
  return r;
}
inline void storeu256(Y *p, Y v) { std::memcpy(static_cast<void *>(p), v.q, 32); }  // VMOVDQU
inline Z loadu512(const void *p) {  // VMOVDQU64
  Z v;
  std::memcpy(v.q, p, 64);
  return v;
}
}  // namespace emu

#undef __m512i
#define __m512i emu::Z
#undef __m256i
#define __m256i emu::Y
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 emu::zero512
#undef _mm512_set1_epi64
#define _mm512_set1_epi64 emu::set1_64
#undef _mm512_sub_epi64
#define _mm512_sub_epi64 emu::sub512
#undef _mm512_cvtepi64_epi32
#define _mm512_cvtepi64_epi32 emu::narrow32
#undef _mm256_storeu_si256
#define _mm256_storeu_si256 emu::storeu256
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 emu::loadu512
#undef _mm512_xor_si512
#define _mm512_xor_si512 emu::xorq
#undef _mm512_popcnt_epi64
#define _mm512_popcnt_epi64 emu::popcntq
#undef _mm512_add_epi64
#define _mm512_add_epi64 emu::addq
#if !defined(__AVX512VPOPCNTDQ__)
#define __AVX512VPOPCNTDQ__ 1
#endif
#if !defined(__AVX512VL__)
#define __AVX512VL__ 1
#endif
#include "kernels/gemm/xnor_x86.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

// The column kernel (xnor_cols_vpopcnt) against the portable row kernel on the same bits: 1 to
// 13 rows (tiles of 8, 4 and 1-3), 1 to 3 groups of 8 columns, 4 to 20 words, an all-ones row
// and an all-zeros column, a row equal to a column, and the output stride.
TEST(XnorEmulated, ColumnKernelMatchesThePortableKernel) {
  std::mt19937_64 rng(43);
  for (size_t words = 4; words <= 20; words += 8)
    for (size_t groups = 1; groups <= 3; ++groups)
      for (size_t rows = 1; rows <= 13; rows += 2) {
        const size_t cols = 8 * groups;
        std::vector<uint64_t> a(rows * words), b(cols * words), packed(cols * words);
        for (auto &v : a) v = rng();
        for (auto &v : b) v = rng();
        for (size_t i = 0; i < words; ++i) {
          a[i] = ~uint64_t{0};  // row 0: all ones
          b[5 * words + i] = 0;  // column 5: all zeros
          if (rows > 2) a[2 * words + i] = b[(cols - 1) * words + i];  // row 2 equals the last column
        }
        for (size_t n = 0; n < cols; ++n)
          for (size_t w = 0; w < words; ++w) packed[(n / 8 * words + w) * 8 + n % 8] = b[n * words + w];
        const auto k = static_cast<int32_t>(64 * words);
        const size_t ld = cols + 3;
        std::vector<int32_t> got(rows * ld, -1), want(rows * ld, -1);
        qnt::kern::xnor_cols_vpopcnt(a.data(), rows, packed.data(), groups, words, k, got.data(), ld);
        for (size_t n0 = 0; n0 < cols; n0 += 3) {  // the row kernel: 3 columns at a time, rows in pairs
          std::vector<uint64_t> a2((rows + 1) * words, 0), b3(3 * words, 0);
          std::copy(a.begin(), a.end(), a2.begin());
          for (size_t j = 0; j < 3 && n0 + j < cols; ++j)
            std::copy(b.begin() + static_cast<std::ptrdiff_t>((n0 + j) * words),
                      b.begin() + static_cast<std::ptrdiff_t>((n0 + j + 1) * words),
                      b3.begin() + static_cast<std::ptrdiff_t>(j * words));
          std::vector<int32_t> part((rows + 1) * 3);
          qnt::kern::xnor_generic(a2.data(), (rows + 1) / 2 * 2, b3.data(), words, k, part.data(), 3);
          for (size_t r = 0; r < rows; ++r)
            for (size_t j = 0; j < 3 && n0 + j < cols; ++j) want[r * ld + n0 + j] = part[r * 3 + j];
        }
        ASSERT_EQ(got, want) << "words " << words << " groups " << groups << " rows " << rows;
        EXPECT_EQ(got[5], -k);  // all ones against all zeros
        if (rows > 2) {
          EXPECT_EQ(got[2 * ld + cols - 1], k);
        }
      }
}

#endif  // __x86_64__
