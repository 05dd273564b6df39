// The AVX-512 GEMM tiles (kernels/gemm/tiles_x86.hpp) on any x86-64: their source compiled over
// a scalar model of the nine AVX-512 intrinsics they use, so that their logic (register
// blocking, row and panel tails, the A and B layouts, the even/odd split) is tested on machines
// without AVX-512 too. Each model follows Intel's pseudo-code of its instruction, with the
// int32 wrap-around. Checked through the GEMM driver against the reference kernel.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "emu512.hpp"

namespace emu {
inline int16_t i16(const V &v, int i) {
  int16_t x;
  std::memcpy(&x, v.b + 2 * i, 2);
  return x;
}
inline void put16(V &v, int i, int16_t x) { std::memcpy(v.b + 2 * i, &x, 2); }
inline V srai16(V v, int n) {
  for (int i = 0; i < 32; ++i) put16(v, i, static_cast<int16_t>(i16(v, i) >> n));
  return v;
}
inline V slli16(V v, int n) {
  for (int i = 0; i < 32; ++i)
    put16(v, i, static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint16_t>(i16(v, i)) << n)));
  return v;
}
// VPMADDWD: per lane, two int16 products summed (wrapping only for -32768 * -32768 twice).
inline V madd16(V a, V b) {
  V r;
  for (int i = 0; i < 16; ++i) {
    const int64_t s = int64_t{i16(a, 2 * i)} * i16(b, 2 * i) + int64_t{i16(a, 2 * i + 1)} * i16(b, 2 * i + 1);
    put32(r, i, static_cast<uint32_t>(s));
  }
  return r;
}
inline V add32(V a, V b) {
  V r;
  for (int i = 0; i < 16; ++i) put32(r, i, u32(a, i) + u32(b, i));
  return r;
}
// VPSLLD by an immediate (counts above 31 give 0); VPORD.
inline V slli32(V v, unsigned n) {
  for (int i = 0; i < 16; ++i) put32(v, i, n > 31 ? 0u : u32(v, i) << n);
  return v;
}
inline V or512(V a, V b) {
  for (int i = 0; i < 64; ++i) a.b[i] = static_cast<uint8_t>(a.b[i] | b.b[i]);
  return a;
}
}  // namespace emu

#undef __m512i  // some are macros when not optimizing
#define __m512i emu::V
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 emu::zero
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 emu::loadu
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 emu::storeu
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 emu::set1_epi32
#undef _mm512_dpbusd_epi32
#define _mm512_dpbusd_epi32 emu::dpbusd
#undef _mm512_srai_epi16
#define _mm512_srai_epi16 emu::srai16
#undef _mm512_slli_epi16
#define _mm512_slli_epi16 emu::slli16
#undef _mm512_madd_epi16
#define _mm512_madd_epi16 emu::madd16
#undef _mm512_add_epi32
#define _mm512_add_epi32 emu::add32
#undef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32 emu::cvtepu8_epi32
#undef _mm512_slli_epi32
#define _mm512_slli_epi32 emu::slli32
#undef _mm512_or_si512
#define _mm512_or_si512 emu::or512
#if !defined(__AVX512BW__)
#define __AVX512BW__ 1
#define QNT_TEST_DEFINED_BW
#endif
#if !defined(__AVX512VNNI__)
#define __AVX512VNNI__ 1
#define QNT_TEST_DEFINED_VNNI
#endif
// The tiles' intrinsic code only: the VNNI full tile's assembly runs natively on VNNI machines.
#define QNT_GEMM_EMULATED 1
#include "kernels/gemm/tiles_x86.hpp"
#undef QNT_GEMM_EMULATED
#if defined(QNT_TEST_DEFINED_BW)
#undef __AVX512BW__
#endif
#if defined(QNT_TEST_DEFINED_VNNI)
#undef __AVX512VNNI__
#endif

#include "core/context.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "ops/gemm.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

const qnt::kern::GemmKernel kVnni{"emulated_avx512_vnni", qnt::kern::Vnni512::kMR,
                                  qnt::kern::Vnni512::kNP, 4,
                                  &qnt::kern::gemm_tile<qnt::kern::Vnni512>, nullptr, nullptr, nullptr, 0,
                                  nullptr, /*a_rows=*/true};
const qnt::kern::GemmKernel kSplit{"emulated_avx512", qnt::kern::Split512::kMR,
                                   qnt::kern::Split512::kNP, 8,
                                   &qnt::kern::gemm_tile<qnt::kern::Split512>, nullptr, nullptr, nullptr, 0};

void check(const qnt::kern::GemmKernel &k, int64_t M, int64_t K, int64_t N, bool a_signed,
           bool b_signed, int threads, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(static_cast<size_t>(M * K)), b(static_cast<size_t>(K * N));
  for (auto &v : a) v = static_cast<uint8_t>(byte(rng));
  for (auto &v : b) v = static_cast<uint8_t>(byte(rng));
  std::vector<int32_t> za(static_cast<size_t>(M), a_signed ? -128 : 255);
  std::vector<int32_t> zb(static_cast<size_t>(N));
  for (auto &z : zb) z = b_signed ? byte(rng) - 128 : byte(rng);
  // The reference.
  qnt::ref::Int8Matrix am{a.data(), a_signed, K, 1}, bm{b.data(), b_signed, N, 1};
  std::vector<int32_t> want(static_cast<size_t>(M * N));
  qnt::ref::qgemm(M, N, K, am, za.data(), bm, zb.data(), want.data(), N);
  // The driver with the emulated tile.
  qnt::ops::GemmB packed;
  packed.pack(K, N, b_signed, zb.data(), [&](int64_t kk, int64_t n) { return b[static_cast<size_t>(kk * N + n)]; });
  qnt::Context ctx;
  ctx.requested_threads = threads;
  const qnt::ops::GemmPlan plan(k, packed, M, ctx.threads());
  std::vector<uint8_t> scratch(plan.scratch_bytes());
  std::vector<int32_t> got(static_cast<size_t>(M * N), 0x5A5A5A5A);
  qnt::ops::gemm_run(
      ctx, plan, packed, scratch.data(),
      [&](int64_t m, uint8_t *row) {
        for (int64_t kk = 0; kk < K; ++kk)
          row[kk] = static_cast<uint8_t>(a[static_cast<size_t>(m * K + kk)] ^ (a_signed ? 0x80 : 0));
        return za[static_cast<size_t>(m)] + (a_signed ? 128 : 0);
      },
      [&](int64_t m0, int rows, int64_t n0, int cols, const int32_t *acc, size_t ldc) {
        for (int r = 0; r < rows; ++r)
          for (int j = 0; j < cols; ++j)
            got[static_cast<size_t>((m0 + r) * N + n0 + j)] = acc[static_cast<size_t>(r) * ldc + static_cast<size_t>(j)];
      });
  ASSERT_EQ(got, want) << k.name << " M " << M << " K " << K << " N " << N << " a_signed "
                       << a_signed << " b_signed " << b_signed << " threads " << threads;
}

TEST(GemmEmulatedAvx512, TilesMatchTheReference) {
  std::mt19937 rng(3);
  const int64_t sizes[] = {1, 3, 15, 16, 17, 63, 64, 65};
  for (const auto *k : {&kVnni, &kSplit})
    for (int64_t M : sizes)
      for (int64_t N : {int64_t{1}, int64_t{17}, int64_t{64}, int64_t{65}, int64_t{100}})
        for (int64_t K : {int64_t{1}, int64_t{5}, int64_t{64}, int64_t{67}})
          check(*k, M, K, N, (M + N) % 2 == 0, (K + N) % 2 == 1, 1 + static_cast<int>(M % 3), rng);
}

// The direct convolution tile (GemmConvTileFn): rows read in place at a stride, tap after tap
// at their A offsets, each tap's B groups at its B offset (a subset of B's taps, out of order,
// as a border tile runs them), every row starting from c's first row; against the sums it
// defines.
TEST(GemmEmulatedAvx512, ConvTileMatchesItsDefinition) {
  using qnt::kern::Vnni512;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (const size_t R : {size_t{6}, size_t{4}})  // conv_tile and conv_tile4
  for (const size_t taps : {size_t{1}, size_t{3}, size_t{9}})
    for (const size_t tap_groups : {size_t{1}, size_t{5}, size_t{16}}) {
      const size_t b_taps = taps + 2;  // B holds more taps than the tile runs
      const size_t stride = 4 * tap_groups + 12, ps = b_taps * tap_groups * 64;
      std::vector<size_t> off(2 * taps), b_tap(taps);
      for (size_t t = 0; t < taps; ++t) {
        b_tap[t] = (3 * t + 1) % b_taps;
        off[2 * t] = t * (Vnni512::kMR * stride + 8);
        off[2 * t + 1] = b_tap[t] * tap_groups * 64;
      }
      std::vector<uint8_t> a(off[2 * (taps - 1)] + Vnni512::kMR * stride + 4 * tap_groups);
      std::vector<int8_t> b(Vnni512::kNP * ps);
      for (auto &v : a) v = static_cast<uint8_t>(byte(rng));
      for (auto &v : b) v = static_cast<int8_t>(byte(rng) - 128);
      const size_t cols = 16 * Vnni512::kNP, ldc = cols + 3;
      std::vector<int32_t> got(Vnni512::kMR * ldc), want(got.size());
      for (size_t j = 0; j < cols; ++j)
        got[j] = static_cast<int32_t>(static_cast<uint32_t>(byte(rng)) * 0x01010101u);
      for (size_t r = 0; r < R; ++r)
        for (size_t j = 0; j < cols; ++j) {
          uint32_t sum = static_cast<uint32_t>(got[j]);
          for (size_t t = 0; t < taps; ++t)
            for (size_t g = 0; g < tap_groups; ++g)
              for (size_t i = 0; i < 4; ++i)
                sum += static_cast<uint32_t>(
                    a[r * stride + off[2 * t] + 4 * g + i] *
                    b[(j / 16) * ps + (b_tap[t] * tap_groups + g) * 64 + (j % 16) * 4 + i]);
          want[r * ldc + j] = static_cast<int32_t>(sum);
        }
      const auto tile = R == 6 ? &Vnni512::conv<6> : &Vnni512::conv<4>;
      tile(a.data(), stride, off.data(), taps, tap_groups, b.data(), ps, got.data(), ldc);
      for (size_t r = 0; r < Vnni512::kMR; ++r)
        for (size_t j = 0; j < cols; ++j)
          ASSERT_EQ(got[r * ldc + j], want[r * ldc + j]) << "rows " << R << " taps " << taps
                                                         << " groups " << tap_groups << " row "
                                                         << r << " col " << j;
    }
}

// Depthwise by rows on VNNI (DwVnni, GemmDwExpandFn / GemmDwRowFn): input rows expanded, then
// the row kernel, against the sums that gemm.hpp defines, computed from the image directly:
// acc[o][c] = start[c] + sum over kernel rows i and columns k < KW of x'(row i, column o - pad
// + k, channel c) * w[i][k][c], x' the u8 operand (x XOR 0x80 for i8; zx' outside the image).
// Widths across the 6-pixel register block, kernels 1 to 7 wide (one or two groups of four
// taps), channel tails, pad rows, i8 and u8 x, extreme bytes.
TEST(GemmEmulatedAvx512, DepthwiseRowsMatchTheirDefinition) {
  using qnt::kern::DwVnni;
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(0, 255);
  struct Case {
    size_t W, C, c0, KH, KW, pad;
    bool is_signed, pad_row;
  };
  const Case cases[] = {{7, 64, 0, 3, 3, 1, false, false},   {10, 100, 64, 3, 3, 1, true, false},
                        {1, 5, 0, 1, 1, 0, false, false},    {20, 130, 128, 2, 5, 2, true, true},
                        {9, 64, 0, 3, 7, 3, false, true},    {6, 70, 0, 3, 4, 0, true, false}};
  for (const Case &cs : cases) {
    const size_t OW = cs.W + 2 * cs.pad - cs.KW + 1, jg = (cs.KW + 3) / 4;
    const size_t n = OW + (jg - 1) * 4, cn = std::min<size_t>(64, cs.C - cs.c0);
    const int32_t zx = cs.is_signed ? byte(rng) - 128 : byte(rng);
    const int32_t zxp = (zx + (cs.is_signed ? 128 : 0)) & 0xFF;
    std::vector<std::vector<uint8_t>> img(cs.KH, std::vector<uint8_t>(cs.W * cs.C));
    for (auto &r : img)
      for (auto &v : r) v = byte(rng) < 32 ? (byte(rng) < 128 ? 0 : 255) : static_cast<uint8_t>(byte(rng));
    std::vector<std::vector<uint8_t>> ex(cs.KH, std::vector<uint8_t>(n * DwVnni::kEntry, 0xA5));
    std::vector<const uint8_t *> rows(cs.KH);
    for (size_t i = 0; i < cs.KH; ++i) {
      const bool pad_row = cs.pad_row && i == 0;
      qnt::kern::dw_expand<DwVnni>(pad_row ? nullptr : img[i].data(), cs.W, cs.C, cs.c0, cn,
                     -static_cast<std::ptrdiff_t>(cs.pad), n, cs.is_signed, zx, ex[i].data());
      rows[i] = ex[i].data();
    }
    std::vector<int8_t> w(cs.KH * jg * DwVnni::kEntry, 0);
    std::vector<int32_t> start(64);
    for (auto &v : start) v = static_cast<int32_t>(static_cast<uint32_t>(byte(rng)) * 0x01010101u);
    for (size_t i = 0; i < cs.KH; ++i)
      for (size_t k = 0; k < cs.KW; ++k)
        for (size_t c = 0; c < 64; ++c)
          w[((i * jg + k / 4) * 64 + c) * 4 + k % 4] = static_cast<int8_t>(byte(rng) - 128);
    const size_t ld = 64 + 16;
    std::vector<int32_t> got(OW * ld, 0x5A5A5A5A);
    qnt::kern::dw_row<DwVnni>(rows.data(), cs.KH, jg, w.data(), start.data(), OW, got.data(), ld);
    for (size_t o = 0; o < OW; ++o)
      for (size_t c = 0; c < cn; ++c) {
        uint32_t sum = static_cast<uint32_t>(start[c]);
        for (size_t i = 0; i < cs.KH; ++i)
          for (size_t k = 0; k < cs.KW; ++k) {
            const auto col = static_cast<std::ptrdiff_t>(o + k) - static_cast<std::ptrdiff_t>(cs.pad);
            const bool inside = !(cs.pad_row && i == 0) && col >= 0 && col < static_cast<std::ptrdiff_t>(cs.W);
            const uint32_t xp = inside ? (img[i][static_cast<size_t>(col) * cs.C + cs.c0 + c] ^ (cs.is_signed ? 0x80u : 0u))
                                       : static_cast<uint32_t>(zxp);
            sum += xp * static_cast<uint32_t>(static_cast<int32_t>(w[((i * jg + k / 4) * 64 + c) * 4 + k % 4]));
          }
        ASSERT_EQ(got[o * ld + c], static_cast<int32_t>(sum))
            << "W " << cs.W << " C " << cs.C << " KH " << cs.KH << " KW " << cs.KW << " pixel " << o
            << " channel " << c;
      }
    for (size_t o = 0; o < OW; ++o)  // the columns between rows are not written
      for (size_t c = 64; c < ld; ++c) ASSERT_EQ(got[o * ld + c], 0x5A5A5A5A);
  }
}

}  // namespace

#endif  // __x86_64__
