// The x86-64 micro-tiles of the integer GEMM (layouts in gemm.hpp). Included by the ISA
// translation units, each compiled with its own -m flags; everything here has internal linkage.
//
// Exact instructions only (kernels/README.md):
//  - VNNI: vpdpbusd (u8 x s8, four products summed into int32, wrapping). Never vpdpbusds,
//    which saturates.
//  - AVX2 / AVX-512BW: b' is split into its even and odd bytes, sign-extended to int16 by
//    shifts (vpsllw / vpsraw); a' comes packed as int16 (a_bytes 8); vpmaddwd multiplies int16
//    pairs and adds each pair into int32 (|a' b'| <= 32640: exact), vpaddd wraps. Never
//    vpmaddubsw, whose int16 pair sums saturate (255 * 127 * 2 > 32767), but on ternary B
//    (Tern256), whose pairs are at most 510.
#pragma once

#include "kernels/gemm/gemm.hpp"

#include <immintrin.h>

#include <cstring>
#include <type_traits>

namespace qnt::kern {
namespace {

inline int32_t load_i32(const uint8_t *p) noexcept {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Calls F::template run<R, P>(args...) for the runtime rows (1..MR) and panels (1..NP).
template <class F, int MR, int NP, int R = MR>
struct RowDispatch {
  template <int P = NP>
  static void panels(int rows, int p, const uint8_t *a, const int8_t *b, size_t ps, size_t groups,
                     int32_t *c, size_t ldc) noexcept {
    if constexpr (P > 1) {
      if (p < P) return panels<P - 1>(rows, p, a, b, ps, groups, c, ldc);
    }
    F::template run<R, P>(a, b, ps, groups, c, ldc);
  }
  static void go(int rows, int p, const uint8_t *a, const int8_t *b, size_t ps, size_t groups,
                 int32_t *c, size_t ldc) noexcept {
    if constexpr (R > 1) {
      if (rows < R) return RowDispatch<F, MR, NP, R - 1>::go(rows, p, a, b, ps, groups, c, ldc);
    }
    panels<NP>(rows, p, a, b, ps, groups, c, ldc);
  }
};

#if defined(__AVX512VNNI__)
// One row of the VNNI assembly tile: the row's four A bytes at `addr`, broadcast, times the four B vectors in zmm0-3 into the row's accumulators zmm<c>..zmm<c+3>.
#define QNT_VNNI_ROW(addr, c0, c1, c2, c3)      \
  "vpbroadcastd " addr ", %%zmm4\n\t"          \
  "vpdpbusd %%zmm0, %%zmm4, %%zmm" #c0 "\n\t"   \
  "vpdpbusd %%zmm1, %%zmm4, %%zmm" #c1 "\n\t"   \
  "vpdpbusd %%zmm2, %%zmm4, %%zmm" #c2 "\n\t"   \
  "vpdpbusd %%zmm3, %%zmm4, %%zmm" #c3 "\n\t"
// Row r's four accumulators stored at c (then c += ldc bytes).
#define QNT_VNNI_STORE(c0, c1, c2, c3)          \
  "vmovdqu32 %%zmm" #c0 ", (%[c])\n\t"          \
  "vmovdqu32 %%zmm" #c1 ", 64(%[c])\n\t"        \
  "vmovdqu32 %%zmm" #c2 ", 128(%[c])\n\t"       \
  "vmovdqu32 %%zmm" #c3 ", 192(%[c])\n\t"       \
  "add %[ldc], %[c]\n\t"
// The group's four B vectors into zmm0-3.
#define QNT_VNNI_LOAD_B                        \
  "vmovdqu64 (%[b]), %%zmm0\n\t"              \
  "vmovdqu64 (%[b], %[ps]), %%zmm1\n\t"      \
  "vmovdqu64 (%[b], %[ps], 2), %%zmm2\n\t"   \
  "vmovdqu64 (%[b3]), %%zmm3\n\t"
// Rows 0-3 (and 4-5) of a group: A's bytes from the operands named A (rows 0-2) and A3 (3-5).
#define QNT_VNNI_ROWS4(A, A3)                                                              \
  QNT_VNNI_ROW("(%[" A "])", 8, 9, 10, 11) QNT_VNNI_ROW("(%[" A "], %[s])", 12, 13, 14, 15) \
  QNT_VNNI_ROW("(%[" A "], %[s], 2)", 16, 17, 18, 19) QNT_VNNI_ROW("(%[" A3 "])", 20, 21, 22, 23)
#define QNT_VNNI_ROWS6(A, A3)                                       \
  QNT_VNNI_ROWS4(A, A3) QNT_VNNI_ROW("(%[" A3 "], %[s])", 24, 25, 26, 27) \
  QNT_VNNI_ROW("(%[" A3 "], %[s], 2)", 28, 29, 30, 31)
// The next group: B and A one step on, and the group count down to label L.
#define QNT_VNNI_NEXT(A, A3, L)                                                        \
  "add $64, %[b]\n\t" "add $64, %[b3]\n\t" "add $4, %[" A "]\n\t" "add $4, %[" A3 "]\n\t" \
  "dec %[g]\n\t" "jnz " L "\n\t"
#define QNT_VNNI_STORE4                                                        \
  QNT_VNNI_STORE(8, 9, 10, 11) QNT_VNNI_STORE(12, 13, 14, 15)                  \
  QNT_VNNI_STORE(16, 17, 18, 19) QNT_VNNI_STORE(20, 21, 22, 23)
#define QNT_VNNI_STORE6 QNT_VNNI_STORE4 QNT_VNNI_STORE(24, 25, 26, 27) QNT_VNNI_STORE(28, 29, 30, 31)
#define QNT_VNNI_CLOBBER4                                                                        \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13",  \
      "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", \
      "memory", "cc"
#define QNT_VNNI_CLOBBER6 \
  QNT_VNNI_CLOBBER4, "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
// Row 0's accumulators (zmm8-11) zeroed; rows 1-3 (and 4-5) given row 0's values.
#define QNT_VNNI_ZERO_ROW0                                                       \
  "vpxord %%zmm8, %%zmm8, %%zmm8\n\t" "vmovdqa64 %%zmm8, %%zmm9\n\t"            \
  "vmovdqa64 %%zmm8, %%zmm10\n\t" "vmovdqa64 %%zmm8, %%zmm11\n\t"
#define QNT_VNNI_FILL4                                                            \
  "vmovdqa64 %%zmm8, %%zmm12\n\t" "vmovdqa64 %%zmm9, %%zmm13\n\t"               \
  "vmovdqa64 %%zmm10, %%zmm14\n\t" "vmovdqa64 %%zmm11, %%zmm15\n\t"             \
  "vmovdqa64 %%zmm8, %%zmm16\n\t" "vmovdqa64 %%zmm9, %%zmm17\n\t"               \
  "vmovdqa64 %%zmm10, %%zmm18\n\t" "vmovdqa64 %%zmm11, %%zmm19\n\t"             \
  "vmovdqa64 %%zmm8, %%zmm20\n\t" "vmovdqa64 %%zmm9, %%zmm21\n\t"               \
  "vmovdqa64 %%zmm10, %%zmm22\n\t" "vmovdqa64 %%zmm11, %%zmm23\n\t"
#define QNT_VNNI_FILL6                                                            \
  QNT_VNNI_FILL4 "vmovdqa64 %%zmm8, %%zmm24\n\t" "vmovdqa64 %%zmm9, %%zmm25\n\t"  \
  "vmovdqa64 %%zmm10, %%zmm26\n\t" "vmovdqa64 %%zmm11, %%zmm27\n\t"             \
  "vmovdqa64 %%zmm8, %%zmm28\n\t" "vmovdqa64 %%zmm9, %%zmm29\n\t"               \
  "vmovdqa64 %%zmm10, %%zmm30\n\t" "vmovdqa64 %%zmm11, %%zmm31\n\t"

// The direct convolution's tile (Vnni512::conv, conv_fused): the accumulators from c's first row
// (FILL copies them to the others), then per tap: JOB (conv_fused's epilogue job, or nothing),
// the tap's A rows and B groups from its pair of offsets (9 scalar instructions), and its
// groups as in the GEMM tile; then STORE.
#define QNT_VNNI_CONV_TEXT(FILL, JOB, ROWS, STORE)                                           \
  "vmovdqu32 (%[c]), %%zmm8\n\t" "vmovdqu32 64(%[c]), %%zmm9\n\t"                             \
  "vmovdqu32 128(%[c]), %%zmm10\n\t" "vmovdqu32 192(%[c]), %%zmm11\n\t"                       \
  FILL                                                                                        \
  "1:\n\t"                                                                                    \
  JOB                                                                                         \
  "mov (%[off]), %[at]\n\t" "add %[a], %[at]\n\t"                                             \
  "lea (%[at], %[s], 2), %[a3]\n\t" "add %[s], %[a3]\n\t"                                     \
  "mov 8(%[off]), %[b]\n\t" "add %[b0], %[b]\n\t"                                             \
  "lea (%[b], %[ps], 2), %[b3]\n\t" "add %[ps], %[b3]\n\t"                                    \
  "mov %[tg], %[g]\n\t"                                                                       \
  "2:\n\t"                                                                                    \
  QNT_VNNI_LOAD_B ROWS QNT_VNNI_NEXT("at", "a3", "2b")                                        \
  "add $16, %[off]\n\t" "dec %[t]\n\t" "jnz 1b\n\t"                                           \
  STORE

// mr 6 x np 4 (64 columns): 24 accumulators, 4 B vectors, A broadcast from its rows (a_rows:
// row r at a + r * gemm_row_stride(groups)): per group 4 loads, 6 broadcasts and 24 vpdpbusd, nothing else
// but the loop's 6 scalar instructions. The
// full tile is one block of assembly with the accumulators in zmm8-31: with the intrinsics, GCC
// 12 copies each accumulator around the destructive vpdpbusd and spills them to the stack (67
// moves and stores per 24 vpdpbusd, measured in the -O3 object: 0.4 of the VNNI peak); the
// partial tiles (edges) are intrinsics.
struct Vnni512 {
  static constexpr int kMR = 6, kNP = 4;

#if !defined(QNT_GEMM_EMULATED)
  // The full tile's block of assembly for 6 rows (FILL6, ROWS6, STORE6, CLOBBER6) or 4.
#define QNT_VNNI_TILE(FILL, ROWS, STORE, CLOBBER)                                            \
  __asm__ volatile(QNT_VNNI_ZERO_ROW0 FILL "test %[g], %[g]\n\t" "jz 2f\n\t" "1:\n\t"       \
                   QNT_VNNI_LOAD_B ROWS QNT_VNNI_NEXT("a", "a3", "1b") "2:\n\t" STORE          \
                   : [a] "+r"(a), [a3] "+r"(a3), [b] "+r"(b), [b3] "+r"(b3), [g] "+r"(groups), \
                     [c] "+r"(c)                                                             \
                   : [ps] "r"(ps), [s] "r"(stride), [ldc] "r"(ldc_bytes)                     \
                   : CLOBBER)
  // R = 6, or 4 (16 accumulators in zmm8-23): a panel of M = 4 (mod 6) rows, such as the last
  // of M = 16, computes no zero rows (the six-row tile there made 18 rows' work for 16).
  template <int R>
  static void full(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int32_t *c,
                   size_t ldc) noexcept {
    const int8_t *b3 = b + 3 * ps;
    const size_t ldc_bytes = ldc * 4, stride = gemm_row_stride(groups);  // A as rows (a_rows)
    const uint8_t *a3 = a + 3 * stride;
    if constexpr (R == 6)
      QNT_VNNI_TILE(QNT_VNNI_FILL6, QNT_VNNI_ROWS6("a", "a3"), QNT_VNNI_STORE6, QNT_VNNI_CLOBBER6);
    else
      QNT_VNNI_TILE(QNT_VNNI_FILL4, QNT_VNNI_ROWS4("a", "a3"), QNT_VNNI_STORE4, QNT_VNNI_CLOBBER4);
  }
#undef QNT_VNNI_TILE
#endif

  // GemmConvTileFn: the full tile (R = 6 rows, or 4: conv_tile4) with A read in place, tap
  // after tap (taps, tap_groups >= 1), each tap's A and B from its pair of offsets; every row's
  // accumulators start from c's first row.
  template <int R>
  static void conv(const uint8_t *a, size_t s, const size_t *off, size_t taps, size_t tap_groups,
                   const int8_t *b, size_t ps, int32_t *c, size_t ldc) noexcept {
    static_assert(R == 6 || R == 4, "the conv tile has 6 or 4 rows");
#if !defined(QNT_GEMM_EMULATED)
    const size_t ldc_bytes = ldc * 4;
    const uint8_t *at = nullptr, *a3 = nullptr;
    const int8_t *bt = nullptr, *b3 = nullptr;
    size_t g = 0;
    // Per tap: its A rows and B groups from the offsets (9 scalar instructions), then its
    // groups as in the GEMM tile. ldc, tap_groups and b are read from memory there, so that
    // the operands fit the 15 usable registers.
#define QNT_VNNI_CONV(FILL, ROWS, STORE, CLOBBER)                                           \
  __asm__ volatile(QNT_VNNI_CONV_TEXT(FILL, "", ROWS, STORE)                                \
                   : [at] "+&r"(at), [a3] "+&r"(a3), [g] "+&r"(g), [b] "+&r"(bt),            \
                     [b3] "+&r"(b3), [off] "+r"(off), [t] "+r"(taps), [c] "+r"(c)            \
                   : [a] "r"(a), [ps] "r"(ps), [s] "r"(s), [b0] "m"(b), [tg] "m"(tap_groups), \
                     [ldc] "m"(ldc_bytes)                                                    \
                   : CLOBBER)
    if constexpr (R == 6)
      QNT_VNNI_CONV(QNT_VNNI_FILL6, QNT_VNNI_ROWS6("at", "a3"), QNT_VNNI_STORE6, QNT_VNNI_CLOBBER6);
    else
      QNT_VNNI_CONV(QNT_VNNI_FILL4, QNT_VNNI_ROWS4("at", "a3"), QNT_VNNI_STORE4, QNT_VNNI_CLOBBER4);
#undef QNT_VNNI_CONV
#else
    __m512i acc[R][kNP];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < kNP; ++p) acc[r][p] = _mm512_loadu_si512(c + 16 * p);
    for (size_t t = 0; t < taps; ++t) {
      const int8_t *bt = b + off[2 * t + 1];
      for (size_t g = 0; g < tap_groups; ++g, bt += 64) {
        __m512i bv[kNP];
        for (int p = 0; p < kNP; ++p) bv[p] = _mm512_loadu_si512(bt + p * ps);
        for (int r = 0; r < R; ++r) {
          const __m512i av = _mm512_set1_epi32(load_i32(a + static_cast<size_t>(r) * s + off[2 * t] + 4 * g));
          for (int p = 0; p < kNP; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < kNP; ++p) _mm512_storeu_si512(c + r * ldc + 16 * p, acc[r][p]);
#endif
  }

  // GemmConvFusedFn: conv<R> with one of the previous tile's epilogue jobs (a row: 4 vectors
  // of 16 outputs) at the start of each tap, in zmm5 (free in both tiles), the constants
  // broadcast from the job ({1to16}).
  // Each job is Epi512::put16's intrinsics (modes 1 and 3) as instructions, in their order:
  // vcvtdq2ps, vmulps by the
  // multipliers, (divide: vaddps of the biases, vdivps by sy), vmaxps lo, vminps hi,
  // vcvtps2dq {rn-sae}, vpaddd zy, vpmovdb. Beside the tap's 16 or more groups of 24 vpdpbusd,
  // they issue on the pipes that the multiplies leave idle (on Zen 4 a conversion, compare,
  // add or narrowing costs nothing there; the vmulps and vdivps take a cycle or two of the
  // vpdpbusd pipes): the separate epilogue was 6 % of conv 64->64 56^2 on one thread.
  template <int R, bool Div>
  static void conv_fused_div(const uint8_t *a, size_t s, const size_t *off, size_t taps,
                             size_t tap_groups, const int8_t *b, size_t ps, int32_t *c,
                             size_t ldc, GemmConvJobs *jobs) noexcept {
#if !defined(QNT_GEMM_EMULATED)
    const size_t ldc_bytes = ldc * 4;
    const uint8_t *at = nullptr, *a3 = nullptr;
    const int8_t *bt = nullptr, *b3 = nullptr;
    size_t g = 0;
    static_assert(kGemmConvJobVectors == 4, "a job is the tile's 4 vectors (offsets below)");
    const GemmConvJob *jp = jobs->next, *const jend = jobs->end;
    const uint8_t *jt = nullptr;
#define QNT_VNNI_JOBV(DIV, OA, OO)                                                             \
  "mov (%[jp]), %[jt]\n\t" "vcvtdq2ps " OA "(%[jt]), %%zmm5\n\t"                               \
  "mov 16(%[jp]), %[jt]\n\t" "vmulps " OA "(%[jt]), %%zmm5, %%zmm5\n\t"                        \
  DIV(OA)                                                                                      \
  "vmaxps 32(%[jp])%{1to16%}, %%zmm5, %%zmm5\n\t" "vminps 36(%[jp])%{1to16%}, %%zmm5, %%zmm5\n\t" \
  "vcvtps2dq %{rn-sae%}, %%zmm5, %%zmm5\n\t" "vpaddd 44(%[jp])%{1to16%}, %%zmm5, %%zmm5\n\t"    \
  "mov 8(%[jp]), %[jt]\n\t" "vpmovdb %%zmm5, " OO "(%[jt])\n\t"
#define QNT_VNNI_DIV(OA)                                                                       \
  "mov 24(%[jp]), %[jt]\n\t" "vaddps " OA "(%[jt]), %%zmm5, %%zmm5\n\t"                        \
  "vdivps 40(%[jp])%{1to16%}, %%zmm5, %%zmm5\n\t"
#define QNT_VNNI_NODIV(OA)
// One job (a row of 64 outputs) unless none is left.
#define QNT_VNNI_JOB(DIV)                                                                      \
  "cmp %[jend], %[jp]\n\t" "jae 3f\n\t"                                                       \
  QNT_VNNI_JOBV(DIV, "", "") QNT_VNNI_JOBV(DIV, "64", "16") QNT_VNNI_JOBV(DIV, "128", "32")     \
  QNT_VNNI_JOBV(DIV, "192", "48") "add $48, %[jp]\n\t" "3:\n\t"
#define QNT_VNNI_CONV_FUSED(FILL, ROWS, STORE, CLOBBER, JOB)                                 \
  __asm__ volatile(QNT_VNNI_CONV_TEXT(FILL, JOB, ROWS, STORE)                               \
                   : [at] "+&r"(at), [a3] "+&r"(a3), [g] "+&r"(g), [b] "+&r"(bt),            \
                     [b3] "+&r"(b3), [off] "+r"(off), [t] "+r"(taps), [c] "+r"(c),           \
                     [jp] "+r"(jp), [jt] "+&r"(jt)                                           \
                   : [a] "r"(a), [ps] "r"(ps), [s] "r"(s), [b0] "m"(b), [tg] "m"(tap_groups), \
                     [ldc] "m"(ldc_bytes), [jend] "m"(jend)                                  \
                   : CLOBBER, "xmm5")
    if constexpr (R == 6 && Div)
      QNT_VNNI_CONV_FUSED(QNT_VNNI_FILL6, QNT_VNNI_ROWS6("at", "a3"), QNT_VNNI_STORE6,
                          QNT_VNNI_CLOBBER6, QNT_VNNI_JOB(QNT_VNNI_DIV));
    else if constexpr (R == 6)
      QNT_VNNI_CONV_FUSED(QNT_VNNI_FILL6, QNT_VNNI_ROWS6("at", "a3"), QNT_VNNI_STORE6,
                          QNT_VNNI_CLOBBER6, QNT_VNNI_JOB(QNT_VNNI_NODIV));
    else if constexpr (Div)
      QNT_VNNI_CONV_FUSED(QNT_VNNI_FILL4, QNT_VNNI_ROWS4("at", "a3"), QNT_VNNI_STORE4,
                          QNT_VNNI_CLOBBER4, QNT_VNNI_JOB(QNT_VNNI_DIV));
    else
      QNT_VNNI_CONV_FUSED(QNT_VNNI_FILL4, QNT_VNNI_ROWS4("at", "a3"), QNT_VNNI_STORE4,
                          QNT_VNNI_CLOBBER4, QNT_VNNI_JOB(QNT_VNNI_NODIV));
#undef QNT_VNNI_CONV_FUSED
#undef QNT_VNNI_JOB
#undef QNT_VNNI_JOBV
#undef QNT_VNNI_DIV
#undef QNT_VNNI_NODIV
    jobs->next = jp;
#else  // the emulated suite: the tile, its jobs left to the caller
    conv<R>(a, s, off, taps, tap_groups, b, ps, c, ldc);
#endif
  }
  template <int R>
  static void conv_fused(const uint8_t *a, size_t s, const size_t *off, size_t taps,
                         size_t tap_groups, const int8_t *b, size_t ps, int32_t *c, size_t ldc,
                         GemmConvJobs *jobs) noexcept {
    if (jobs->divide) return conv_fused_div<R, true>(a, s, off, taps, tap_groups, b, ps, c, ldc, jobs);
    conv_fused_div<R, false>(a, s, off, taps, tap_groups, b, ps, c, ldc, jobs);
  }

  template <int R, int P>
  static void run(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int32_t *c,
                  size_t ldc) noexcept {
#if !defined(QNT_GEMM_EMULATED)  // the emulated suite models the intrinsics, not the assembly
    // From 3 rows: the panel's rows past R are zeros and c has room for them (GemmTileFn); fewer
    // rows (M = 1, 2: memory-bound GEMV) would multiply mostly zeros.
    if constexpr (P == kNP && R == 4) return full<4>(a, b, ps, groups, c, ldc);
    if constexpr (P == kNP && R >= 3) return full<6>(a, b, ps, groups, c, ldc);
#endif
    __m512i acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
    for (size_t g = 0; g < groups; ++g) {
      __m512i bv[P];
      for (int p = 0; p < P; ++p) bv[p] = _mm512_loadu_si512(b + p * ps + g * 64);
      const uint8_t *ag = a + g * 4;  // A as rows (a_rows)
      for (int r = 0; r < R; ++r) {
        const __m512i av = _mm512_set1_epi32(load_i32(ag + static_cast<size_t>(r) * gemm_row_stride(groups)));
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbusd_epi32(acc[r][p], av, bv[p]);
      }
    }
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) _mm512_storeu_si512(c + r * ldc + 16 * p, acc[r][p]);
  }
};
#undef QNT_VNNI_ROW
#undef QNT_VNNI_STORE
#undef QNT_VNNI_LOAD_B
#undef QNT_VNNI_ROWS4
#undef QNT_VNNI_ROWS6
#undef QNT_VNNI_NEXT
#undef QNT_VNNI_STORE4
#undef QNT_VNNI_STORE6
#undef QNT_VNNI_CLOBBER4
#undef QNT_VNNI_CLOBBER6
#undef QNT_VNNI_ZERO_ROW0
#undef QNT_VNNI_FILL4
#undef QNT_VNNI_FILL6
#undef QNT_VNNI_CONV_TEXT
#endif

#if defined(__AVX512BW__)
// mr 8 x np 2 (32 columns), split: 16 accumulators, 4 split B vectors, 2 A broadcasts.
struct Split512 {
  static constexpr int kMR = 8, kNP = 2;
  template <int R, int P>
  static void run(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int32_t *c,
                  size_t ldc) noexcept {
    __m512i acc[R][P];
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_si512();
    for (size_t g = 0; g < groups; ++g) {
      __m512i even[P], odd[P];
      for (int p = 0; p < P; ++p) {
        const __m512i v = _mm512_loadu_si512(b + p * ps + g * 64);
        even[p] = _mm512_srai_epi16(_mm512_slli_epi16(v, 8), 8);
        odd[p] = _mm512_srai_epi16(v, 8);
      }
      const uint8_t *ag = a + g * kMR * 8;
      for (int r = 0; r < R; ++r) {
        const __m512i ae = _mm512_set1_epi32(load_i32(ag + 8 * r));
        const __m512i ao = _mm512_set1_epi32(load_i32(ag + 8 * r + 4));
        for (int p = 0; p < P; ++p) {
          acc[r][p] = _mm512_add_epi32(acc[r][p], _mm512_madd_epi16(ae, even[p]));
          acc[r][p] = _mm512_add_epi32(acc[r][p], _mm512_madd_epi16(ao, odd[p]));
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) _mm512_storeu_si512(c + r * ldc + 16 * p, acc[r][p]);
  }
};
#endif

// The bytes of `width` (8 or 16) channels of a pixel, in the low bytes of an SSE register, of
// which the first n are read (n < width: the rest are 0, so that a block's last chunk never
// reads past the image).
inline __m128i dw_chunk(const uint8_t *p, size_t n, size_t width) noexcept {
  if (n >= width)
    return width == 16 ? _mm_loadu_si128(reinterpret_cast<const __m128i *>(p))
                       : _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
  alignas(16) uint8_t t[16] = {};
  std::memcpy(t, p, n);
  return _mm_load_si128(reinterpret_cast<const __m128i *>(t));
}

// A depthwise-by-rows kernel K's GemmDwExpandFn (i8 or u8 x: K::expand_t's template
// parameter) and GemmDwRowFn (register blocks of K::kPixels output pixels, then one of the
// remaining count: K::pixels<N>).
template <class K>
void dw_expand(const uint8_t *line, size_t W, size_t C, size_t c0, size_t cn, std::ptrdiff_t iw0,
               size_t n, bool is_signed, int32_t zx, uint8_t *out) noexcept {
  if (is_signed)
    K::template expand_t<true>(line, W, C, c0, cn, iw0, n, zx, out);
  else
    K::template expand_t<false>(line, W, C, c0, cn, iw0, n, zx, out);
}
template <class K, int N>
void dw_pixels_tail(const uint8_t *const *rows, size_t kh, size_t jg, const typename K::Weight *w,
                    const int32_t *start, size_t o, size_t left, int32_t *acc, size_t ld) noexcept {
  if constexpr (N > 0) {
    if (left == N) return K::template pixels<N>(rows, kh, jg, w, start, o, acc, ld);
    dw_pixels_tail<K, N - 1>(rows, kh, jg, w, start, o, left, acc, ld);
  }
}
template <class K>
void dw_row(const uint8_t *const *rows, size_t kh, size_t jg, const void *wp, const int32_t *start,
            size_t ow, int32_t *acc, size_t ld) noexcept {
  const auto *w = static_cast<const typename K::Weight *>(wp);
  size_t o = 0;
  for (; o + K::kPixels <= ow; o += K::kPixels) K::template pixels<K::kPixels>(rows, kh, jg, w, start, o, acc, ld);
  dw_pixels_tail<K, K::kPixels - 1>(rows, kh, jg, w, start, o, ow - o, acc, ld);
}

#if defined(__AVX512VNNI__)
// Depthwise by rows on VNNI (GemmDwExpandFn / GemmDwRowFn: dw_block 64, dw_group 4, dw_bytes 1).
// Expansion: an entry's dword per channel holds the bytes of four consecutive columns, built
// from the right: d(e) = d(e + 1) << 8 | x'(e) (vpmovzxbd, vpslld, vpord per 16 channels and
// column, channel order kept, no lane shuffle). The row kernel then needs one vpdpbusd per 16
// channels, output pixel and group of four taps of a kernel row (three for a 3 x 3 kernel),
// its x' operand a load of an entry: 5 pixels x 64 channels in 20 accumulators, the group's 4
// weight vectors in registers (with 6 pixels, GCC kept 4 of the 24 sums on the stack).
// DwVnni::pixels' assembly, for pixel u (each part only when u < UR): its sums start from
// pixel 0's; its four x' vectors at byte `off` of the group's entries times the group's four
// weight vectors; its sums stored at c, then c += ld.
#define QNT_DW_COPY(u, a0, a1, a2, a3)                                                   \
  ".if %c[ur] > " #u "\n\t" "vmovdqa64 %%zmm0, %%zmm" #a0 "\n\t"                       \
  "vmovdqa64 %%zmm1, %%zmm" #a1 "\n\t" "vmovdqa64 %%zmm2, %%zmm" #a2 "\n\t"              \
  "vmovdqa64 %%zmm3, %%zmm" #a3 "\n\t" ".endif\n\t"
#define QNT_DW_PIXEL(u, off, a0, a1, a2, a3, t0, t1, t2, t3)                              \
  ".if %c[ur] > " #u "\n\t"                                                             \
  "vmovdqu64 " #off "(%%rax), %%zmm" #t0 "\n\t" "vmovdqu64 " #off "+64(%%rax), %%zmm" #t1 "\n\t" \
  "vmovdqu64 " #off "+128(%%rax), %%zmm" #t2 "\n\t"                                      \
  "vmovdqu64 " #off "+192(%%rax), %%zmm" #t3 "\n\t"                                      \
  "vpdpbusd %%zmm20, %%zmm" #t0 ", %%zmm" #a0 "\n\t"                                     \
  "vpdpbusd %%zmm21, %%zmm" #t1 ", %%zmm" #a1 "\n\t"                                     \
  "vpdpbusd %%zmm22, %%zmm" #t2 ", %%zmm" #a2 "\n\t"                                     \
  "vpdpbusd %%zmm23, %%zmm" #t3 ", %%zmm" #a3 "\n\t" ".endif\n\t"
#define QNT_DW_STORE(u, a0, a1, a2, a3)                                                  \
  ".if %c[ur] > " #u "\n\t" "vmovdqu32 %%zmm" #a0 ", (%[c])\n\t"                         \
  "vmovdqu32 %%zmm" #a1 ", 64(%[c])\n\t" "vmovdqu32 %%zmm" #a2 ", 128(%[c])\n\t"          \
  "vmovdqu32 %%zmm" #a3 ", 192(%[c])\n\t" "add %[ld], %[c]\n\t" ".endif\n\t"
struct DwVnni {
  static constexpr size_t kBlock = 64, kGroup = 4, kEntry = kBlock * kGroup;
  static constexpr int kPixels = 5, kBytes = 1;
  using Weight = int8_t;
  template <bool Signed>
  static void expand_t(const uint8_t *line, size_t W, size_t C, size_t c0, size_t cn,
                       std::ptrdiff_t iw0, size_t n, int32_t zx, uint8_t *out) noexcept {
    const int32_t pad = (zx + (Signed ? 128 : 0)) & 0xFF;
    const __m512i padv = _mm512_set1_epi32(pad);
    const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));
    for (size_t v = 0; v < kBlock / 16; ++v) {
      uint8_t *o = out + 64 * v;
      if (16 * v >= cn) {  // channels past the block's last: any value (zeros)
        for (size_t e = 0; e < n; ++e) _mm512_storeu_si512(o + e * kEntry, _mm512_setzero_si512());
        continue;
      }
      const size_t m = cn - 16 * v;
      // 16 bytes of x to their x', one per dword.
      auto convert = [&](__m128i b) __attribute__((always_inline)) {
        return _mm512_cvtepu8_epi32(Signed ? _mm_xor_si128(b, flip) : b);
      };
      // Column iw's x' (zx' outside the image).
      auto col = [&](std::ptrdiff_t iw) __attribute__((always_inline)) {
        if (line == nullptr || iw < 0 || iw >= static_cast<std::ptrdiff_t>(W)) return padv;
        return convert(dw_chunk(line + static_cast<size_t>(iw) * C + c0 + 16 * v, m, 16));
      };
      // Entries from the right, d(e) = d(e + 1) << 8 | x'(e); the interior (every column in the
      // image, a whole chunk of 16 channels) without tests.
      __m512i d = _mm512_setzero_si512();
      std::ptrdiff_t e = static_cast<std::ptrdiff_t>(n + kGroup - 2);
      for (; e >= static_cast<std::ptrdiff_t>(n); --e) d = _mm512_or_si512(_mm512_slli_epi32(d, 8), col(iw0 + e));
      const std::ptrdiff_t lo = iw0 < 0 ? -iw0 : 0;                        // first entry inside
      const std::ptrdiff_t hi = static_cast<std::ptrdiff_t>(W) - 1 - iw0;  // last entry inside
      for (; e >= 0 && e > hi; --e) {
        d = _mm512_or_si512(_mm512_slli_epi32(d, 8), col(iw0 + e));
        _mm512_storeu_si512(o + static_cast<size_t>(e) * kEntry, d);
      }
      if (line != nullptr && m >= 16) {
        const uint8_t *p = line + c0 + 16 * v;
        for (; e >= lo; --e) {
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + static_cast<size_t>(iw0 + e) * C));
          d = _mm512_or_si512(_mm512_slli_epi32(d, 8), convert(b));
          _mm512_storeu_si512(o + static_cast<size_t>(e) * kEntry, d);
        }
      }
      for (; e >= 0; --e) {
        d = _mm512_or_si512(_mm512_slli_epi32(d, 8), col(iw0 + e));
        _mm512_storeu_si512(o + static_cast<size_t>(e) * kEntry, d);
      }
    }
  }
  template <int UR>
  static void pixels(const uint8_t *const *rows, size_t kh, size_t jg, const int8_t *w,
                     const int32_t *start, size_t o0, int32_t *acc, size_t ld) noexcept {
    static_assert(UR >= 1 && UR <= kPixels, "1 to 5 pixels");
#if !defined(QNT_GEMM_EMULATED)
    // Assembly: with the intrinsics, GCC 12 kept the 20 sums in registers only inside the
    // loop over j, and moved and spilled them around it and around the call (about 190 cycles
    // a call for 60 vpdpbusd, measured on a Zen 4). Sums in zmm0-19 (pixel u: zmm4u..4u+3),
    // the group's weights in zmm20-23, x' through zmm24-31; `.if` drops the pixels past UR.
    const size_t off = o0 * kEntry, ld_bytes = ld * 4;
    int32_t *c = acc + o0 * ld;
    size_t j = 0;
    __asm__ volatile(
        "vmovdqu32 (%[st]), %%zmm0\n\t" "vmovdqu32 64(%[st]), %%zmm1\n\t"
        "vmovdqu32 128(%[st]), %%zmm2\n\t" "vmovdqu32 192(%[st]), %%zmm3\n\t"
        QNT_DW_COPY(1, 4, 5, 6, 7) QNT_DW_COPY(2, 8, 9, 10, 11) QNT_DW_COPY(3, 12, 13, 14, 15)
        QNT_DW_COPY(4, 16, 17, 18, 19)
        "1:\n\t"
        "mov (%[rows]), %%rax\n\t" "add %[off], %%rax\n\t" "add $8, %[rows]\n\t"
        "mov %[jg], %[j]\n\t"
        "2:\n\t"
        "vmovdqu64 (%[w]), %%zmm20\n\t" "vmovdqu64 64(%[w]), %%zmm21\n\t"
        "vmovdqu64 128(%[w]), %%zmm22\n\t" "vmovdqu64 192(%[w]), %%zmm23\n\t"
        QNT_DW_PIXEL(0, 0, 0, 1, 2, 3, 24, 25, 26, 27)
        QNT_DW_PIXEL(1, 256, 4, 5, 6, 7, 28, 29, 30, 31)
        QNT_DW_PIXEL(2, 512, 8, 9, 10, 11, 24, 25, 26, 27)
        QNT_DW_PIXEL(3, 768, 12, 13, 14, 15, 28, 29, 30, 31)
        QNT_DW_PIXEL(4, 1024, 16, 17, 18, 19, 24, 25, 26, 27)
        "add $256, %[w]\n\t" "add $1024, %%rax\n\t" "dec %[j]\n\t" "jnz 2b\n\t"
        "dec %[kh]\n\t" "jnz 1b\n\t"
        QNT_DW_STORE(0, 0, 1, 2, 3) QNT_DW_STORE(1, 4, 5, 6, 7) QNT_DW_STORE(2, 8, 9, 10, 11)
        QNT_DW_STORE(3, 12, 13, 14, 15) QNT_DW_STORE(4, 16, 17, 18, 19)
        : [rows] "+r"(rows), [kh] "+r"(kh), [w] "+r"(w), [c] "+r"(c), [j] "+&r"(j)
        : [st] "r"(start), [off] "r"(off), [jg] "r"(jg), [ld] "r"(ld_bytes), [ur] "i"(UR)
        : "rax", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
          "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19",
          "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",
          "xmm29", "xmm30", "xmm31", "cc", "memory");
#else
    __m512i a[UR][4];
    for (int v = 0; v < 4; ++v) {
      const __m512i s = _mm512_loadu_si512(start + 16 * v);
      for (int u = 0; u < UR; ++u) a[u][v] = s;
    }
    for (size_t i = 0; i < kh; ++i)
      for (size_t j = 0; j < jg; ++j) {
        const int8_t *wt = w + (i * jg + j) * kEntry;
        __m512i wv[4];
        for (int v = 0; v < 4; ++v) wv[v] = _mm512_loadu_si512(wt + 64 * v);
        const uint8_t *x = rows[i] + (o0 + j * kGroup) * kEntry;
        for (int u = 0; u < UR; ++u)
          for (int v = 0; v < 4; ++v)
            a[u][v] = _mm512_dpbusd_epi32(a[u][v], _mm512_loadu_si512(x + u * kEntry + 64 * v), wv[v]);
      }
    for (int u = 0; u < UR; ++u)
      for (int v = 0; v < 4; ++v) _mm512_storeu_si512(acc + (o0 + static_cast<size_t>(u)) * ld + 16 * v, a[u][v]);
#endif
  }
};
#undef QNT_DW_COPY
#undef QNT_DW_PIXEL
#undef QNT_DW_STORE
#endif


#if defined(__AVX2__)
// One row of the AVX2 assembly tile: the row's A pair at byte `off` of its 8 bytes, broadcast,
// times the two B vectors in ymm8 and ymm9, added to the row's accumulators lo and hi.
#define QNT_AVX2_ROW(off, lo, hi)                 \
  "vpbroadcastd " #off "(%[a]), %%ymm10\n\t"      \
  "vpmaddwd %%ymm8, %%ymm10, %%ymm11\n\t"         \
  "vpmaddwd %%ymm9, %%ymm10, %%ymm12\n\t"         \
  "vpaddd %%ymm11, %[" #lo "], %[" #lo "]\n\t"    \
  "vpaddd %%ymm12, %[" #hi "], %[" #hi "]\n\t"
#define QNT_AVX2_EVEN_ROWS \
  QNT_AVX2_ROW(0, c0, c1) QNT_AVX2_ROW(8, c2, c3) QNT_AVX2_ROW(16, c4, c5) QNT_AVX2_ROW(24, c6, c7)
#define QNT_AVX2_ODD_ROWS \
  QNT_AVX2_ROW(4, c0, c1) QNT_AVX2_ROW(12, c2, c3) QNT_AVX2_ROW(20, c4, c5) QNT_AVX2_ROW(28, c6, c7)
#define QNT_AVX2_OPERANDS                                                                        \
  : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4), [c5] "+x"(c5), \
    [c6] "+x"(c6), [c7] "+x"(c7)                                                                 \
  : [a] "r"(ag), [b] "r"(bg)                                                                     \
  : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "memory"

// mr 4 x np 1 (16 columns: two vectors), int16. Per group, the even bytes of both B vectors
// meet every row's even A pair, then the odd bytes the odd pairs, so that each broadcast feeds
// two multiplies and 8 accumulators, 2 B vectors, 1 A broadcast and 2 products fit the 16
// registers. Unpacked = false: B as packed, split here by shifts; true: B as unpack_split256
// laid it out (no shifts). The full tile is assembly: compilers hoist and share the loads of
// the two halves, run out of registers and spill accumulators (a third slower); the partial
// tiles are the same instructions as intrinsics.
template <bool Unpacked>
struct Split256T {
  static constexpr int kMR = 4, kNP = 1;
  static constexpr size_t kGroupBytes = Unpacked ? 128 : 64;

  // The two B vectors of one half (0 even, 1 odd) of group bg, as int16.
  static void half(const int8_t *bg, int h, __m256i &v0, __m256i &v1) noexcept {
    const auto *p = reinterpret_cast<const __m256i *>(bg);
    if (Unpacked) {
      v0 = _mm256_loadu_si256(p + 2 * h);
      v1 = _mm256_loadu_si256(p + 2 * h + 1);
      return;
    }
    v0 = _mm256_loadu_si256(p);
    v1 = _mm256_loadu_si256(p + 1);
    if (h == 0) {
      v0 = _mm256_slli_epi16(v0, 8);
      v1 = _mm256_slli_epi16(v1, 8);
    }
    v0 = _mm256_srai_epi16(v0, 8);
    v1 = _mm256_srai_epi16(v1, 8);
  }

  template <int R, int P>
  static void run(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int32_t *c,
                  size_t ldc) noexcept {
    (void)ps;
    __m256i acc[R][2];
    if constexpr (R == 4) {
      __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0,
              c7 = c0;
      for (size_t g = 0; g < groups; ++g) {
        const int8_t *bg = b + g * kGroupBytes;
        const uint8_t *ag = a + g * kMR * 8;
        if constexpr (Unpacked) {
          __asm__("vmovdqu (%[b]), %%ymm8\n\t"
                  "vmovdqu 32(%[b]), %%ymm9\n\t" QNT_AVX2_EVEN_ROWS
                  "vmovdqu 64(%[b]), %%ymm8\n\t"
                  "vmovdqu 96(%[b]), %%ymm9\n\t" QNT_AVX2_ODD_ROWS QNT_AVX2_OPERANDS);
        } else {
          __asm__("vmovdqu (%[b]), %%ymm8\n\t"
                  "vmovdqu 32(%[b]), %%ymm9\n\t"
                  "vpsllw $8, %%ymm8, %%ymm8\n\t"
                  "vpsllw $8, %%ymm9, %%ymm9\n\t"
                  "vpsraw $8, %%ymm8, %%ymm8\n\t"
                  "vpsraw $8, %%ymm9, %%ymm9\n\t" QNT_AVX2_EVEN_ROWS
                  "vmovdqu (%[b]), %%ymm8\n\t"
                  "vmovdqu 32(%[b]), %%ymm9\n\t"
                  "vpsraw $8, %%ymm8, %%ymm8\n\t"
                  "vpsraw $8, %%ymm9, %%ymm9\n\t" QNT_AVX2_ODD_ROWS QNT_AVX2_OPERANDS);
        }
      }
      acc[0][0] = c0, acc[0][1] = c1, acc[1][0] = c2, acc[1][1] = c3;
      acc[2][0] = c4, acc[2][1] = c5, acc[3][0] = c6, acc[3][1] = c7;
    } else {
      for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
      for (size_t g = 0; g < groups; ++g) {
        const uint8_t *ag = a + g * kMR * 8;
        for (int h = 0; h < 2; ++h) {
          __m256i v0, v1;
          half(b + g * kGroupBytes, h, v0, v1);
          for (int r = 0; r < R; ++r) {
            const __m256i av = _mm256_set1_epi32(load_i32(ag + 8 * r + 4 * h));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, v0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, v1));
          }
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(c + r * ldc), acc[r][0]);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(c + r * ldc + 8), acc[r][1]);
    }
  }
};
using Split256 = Split256T<false>;
using Split256Unpacked = Split256T<true>;

// Ternary B (gemm.hpp's GemmKernel::ternary: every b' is -1, 0 or +1), mr 6 x np 1 (16
// columns), A as rows (a_rows). vpmaddubsw multiplies a' (u8) by b' (s8) and adds each pair of
// products into int16: a pair is at most 2 * 255 = 510 in magnitude, so it never saturates here
// (it does on general int8 operands: see the top of this file). The int16 sums take kChunk = 64
// groups (at most 64 * 510 = 32640) before vpmaddwd by ones adds each column's two int16 lanes
// into int32, where the chunks are summed (wrapping). Exact. Per group: 2 loads of B, 6
// broadcasts, 12 vpmaddubsw and 12 vpaddw for 384 products, against the split kernel's 16
// vpmaddwd for 256 (twice the products per multiply).
// One row of Tern256's assembly tile: the row's 4 A bytes at `addr`, broadcast, times the two B
// vectors in ymm12 and ymm13 (vpmaddubsw: the broadcast is its unsigned operand), added to the
// row's int16 sums lo and hi.
#define QNT_TERN_ROW(addr, lo, hi)                  \
  "vpbroadcastd " addr ", %%ymm14\n\t"             \
  "vpmaddubsw %%ymm12, %%ymm14, %%ymm15\n\t"       \
  "vpaddw %%ymm15, %[" #lo "], %[" #lo "]\n\t"     \
  "vpmaddubsw %%ymm13, %%ymm14, %%ymm15\n\t"       \
  "vpaddw %%ymm15, %[" #hi "], %[" #hi "]\n\t"
struct Tern256 {
  static constexpr int kMR = 6, kNP = 1;
  static constexpr size_t kChunk = 64;

  template <int R, int P>
  static void run(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int32_t *c,
                  size_t ldc) noexcept {
    (void)ps;  // np is 1
    const size_t s = gemm_row_stride(groups);
    // The int32 sums stay in c (one chunk's worth of registers holds the int16 sums).
    for (int r = 0; r < R; ++r) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(c + r * ldc), _mm256_setzero_si256());
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(c + r * ldc + 8), _mm256_setzero_si256());
    }
    for (size_t g0 = 0; g0 < groups; g0 += kChunk) {
      const size_t g1 = groups - g0 < kChunk ? groups : g0 + kChunk;
      __m256i s0[R], s1[R];
      for (int r = 0; r < R; ++r) s0[r] = s1[r] = _mm256_setzero_si256();
      if constexpr (R == 6) {
        // The full tile in assembly: with intrinsics GCC holds several broadcasts at once and
        // spills 8 of the 12 accumulators to the stack.
        __m256i c0 = s0[0], c1 = s1[0], c2 = s0[1], c3 = s1[1], c4 = s0[2], c5 = s1[2],
                c6 = s0[3], c7 = s1[3], c8 = s0[4], c9 = s1[4], c10 = s0[5], c11 = s1[5];
        // (30 operands at most: row 3's pointer is r10, and the loop ends at B's end.)
        const uint8_t *a0 = a + 4 * g0;
        const int8_t *bg = b + 64 * g0, *bend = b + 64 * g1;
        __asm__("lea (%[s], %[s], 2), %%r10\n\t"
                "add %[a0], %%r10\n\t"
                "1:\n\t"
                "vmovdqu (%[b]), %%ymm12\n\t"
                "vmovdqu 32(%[b]), %%ymm13\n\t"
                QNT_TERN_ROW("(%[a0])", c0, c1) QNT_TERN_ROW("(%[a0], %[s])", c2, c3)
                QNT_TERN_ROW("(%[a0], %[s], 2)", c4, c5) QNT_TERN_ROW("(%%r10)", c6, c7)
                QNT_TERN_ROW("(%%r10, %[s])", c8, c9) QNT_TERN_ROW("(%%r10, %[s], 2)", c10, c11)
                "add $64, %[b]\n\t"
                "add $4, %[a0]\n\t"
                "add $4, %%r10\n\t"
                "cmp %[bend], %[b]\n\t"
                "jne 1b\n\t"
                : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4),
                  [c5] "+x"(c5), [c6] "+x"(c6), [c7] "+x"(c7), [c8] "+x"(c8), [c9] "+x"(c9),
                  [c10] "+x"(c10), [c11] "+x"(c11), [a0] "+r"(a0), [b] "+r"(bg)
                : [s] "r"(s), [bend] "r"(bend)
                : "r10", "xmm12", "xmm13", "xmm14", "xmm15", "memory", "cc");
        s0[0] = c0, s1[0] = c1, s0[1] = c2, s1[1] = c3, s0[2] = c4, s1[2] = c5;
        s0[3] = c6, s1[3] = c7, s0[4] = c8, s1[4] = c9, s0[5] = c10, s1[5] = c11;
      } else {
        for (size_t g = g0; g < g1; ++g) {
          const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 64 * g));
          const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + 64 * g + 32));
          for (int r = 0; r < R; ++r) {
            const __m256i av = _mm256_set1_epi32(load_i32(a + static_cast<size_t>(r) * s + 4 * g));
            s0[r] = _mm256_add_epi16(s0[r], _mm256_maddubs_epi16(av, b0));
            s1[r] = _mm256_add_epi16(s1[r], _mm256_maddubs_epi16(av, b1));
          }
        }
      }
      const __m256i ones = _mm256_set1_epi16(1);
      for (int r = 0; r < R; ++r) {
        auto *c0 = reinterpret_cast<__m256i *>(c + r * ldc);
        auto *c1 = reinterpret_cast<__m256i *>(c + r * ldc + 8);
        _mm256_storeu_si256(c0, _mm256_add_epi32(_mm256_loadu_si256(c0), _mm256_madd_epi16(s0[r], ones)));
        _mm256_storeu_si256(c1, _mm256_add_epi32(_mm256_loadu_si256(c1), _mm256_madd_epi16(s1[r], ones)));
      }
    }
  }
};
#undef QNT_TERN_ROW

// The binary GEMM (gemm.hpp's GemmXnorFn) on AVX2: 2 rows of a x 3 of b, 256 bits at a time;
// each XOR counted by nibbles through a 16-entry vpshufb table (the low nibble masked, the high
// one shifted down and masked), the byte counts (at most 8 a step) summed in bytes for 31
// steps (at most 248), then into 64-bit sums by vpsadbw. Exact.
inline void xnor_avx2(const uint64_t *a, size_t rows, const uint64_t *b, size_t words, int32_t k,
                      int32_t *out, size_t ld) noexcept {
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1,
                                       2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low = _mm256_set1_epi8(0x0F);
  const size_t steps = words / 4;
  const auto *b0 = reinterpret_cast<const __m256i *>(b);
  const auto *b1 = reinterpret_cast<const __m256i *>(b + words);
  const auto *b2 = reinterpret_cast<const __m256i *>(b + 2 * words);
  auto count = [&](__m256i x) {
    return _mm256_add_epi8(_mm256_shuffle_epi8(lut, _mm256_and_si256(x, low)),
                           _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), low)));
  };
  for (size_t r = 0; r < rows; r += 2) {
    const auto *a0 = reinterpret_cast<const __m256i *>(a + r * words);
    const auto *a1 = reinterpret_cast<const __m256i *>(a + (r + 1) * words);
    alignas(32) uint64_t tot[6][4] = {};  // the 64-bit sums wait in memory (registers: the bytes)
    for (size_t s0 = 0; s0 < steps; s0 += 31) {
      const size_t s1 = steps - s0 < 31 ? steps : s0 + 31;
      __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
      for (size_t i = s0; i < s1; ++i) {
        const __m256i x0 = _mm256_loadu_si256(a0 + i), x1 = _mm256_loadu_si256(a1 + i);
        const __m256i y0 = _mm256_loadu_si256(b0 + i), y1 = _mm256_loadu_si256(b1 + i),
                      y2 = _mm256_loadu_si256(b2 + i);
        c0 = _mm256_add_epi8(c0, count(_mm256_xor_si256(x0, y0)));
        c1 = _mm256_add_epi8(c1, count(_mm256_xor_si256(x0, y1)));
        c2 = _mm256_add_epi8(c2, count(_mm256_xor_si256(x0, y2)));
        c3 = _mm256_add_epi8(c3, count(_mm256_xor_si256(x1, y0)));
        c4 = _mm256_add_epi8(c4, count(_mm256_xor_si256(x1, y1)));
        c5 = _mm256_add_epi8(c5, count(_mm256_xor_si256(x1, y2)));
      }
      const __m256i zero = _mm256_setzero_si256();
      const __m256i c[6] = {c0, c1, c2, c3, c4, c5};
      for (int i = 0; i < 6; ++i) {
        auto *t = reinterpret_cast<__m256i *>(tot[i]);
        _mm256_store_si256(t, _mm256_add_epi64(_mm256_load_si256(t), _mm256_sad_epu8(c[i], zero)));
      }
    }
    for (int i = 0; i < 6; ++i)
      out[(r + static_cast<size_t>(i / 3)) * ld + static_cast<size_t>(i % 3)] =
          xnor_result(k, tot[i][0] + tot[i][1] + tot[i][2] + tot[i][3]);
  }
}

// B unpacked for Split256Unpacked: per group, the int16 even and odd halves of the panel's two
// vectors (128 bytes: even 0, even 1, odd 0, odd 1), split once per panel.
inline void unpack_split256(const int8_t *b, size_t ps, size_t groups, int panels,
                            int8_t *out) noexcept {
  (void)ps;
  (void)panels;  // np is 1
  for (size_t g = 0; g < groups; ++g) {
    auto *o = reinterpret_cast<__m256i *>(out + g * 128);
    for (int h = 0; h < 2; ++h) {
      __m256i v0, v1;
      Split256::half(b + g * 64, h, v0, v1);
      _mm256_storeu_si256(o + 2 * h, v0);
      _mm256_storeu_si256(o + 2 * h + 1, v1);
    }
  }
}
#undef QNT_AVX2_ROW
#undef QNT_AVX2_EVEN_ROWS
#undef QNT_AVX2_ODD_ROWS
#undef QNT_AVX2_OPERANDS

// The packers of B's interior (GemmPackFn) on 32-byte vectors. Column sums of b' by vpmaddubsw
// with all-ones as its unsigned operand, where it cannot saturate (|1 * b'| <= 128, a pair <=
// 256), then vpmaddwd by ones: four k of a column, exact in int32.
inline __m256i column_sums_avx2(__m256i packed) noexcept {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), packed), _mm256_set1_epi16(1));
}
// sum + the column sums of a packed vector: by column_sums_avx2, or (Vnni, in a translation
// unit with AVX-512 VNNI and VL) one vpdpbusd with all-ones as its u8 operand.
template <bool Vnni>
inline __m256i add_sums(__m256i sum, __m256i packed) noexcept {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  if constexpr (Vnni) return _mm256_dpbusd_epi32(sum, _mm256_set1_epi8(1), packed);
#endif
  return _mm256_add_epi32(sum, column_sums_avx2(packed));
}

// [K, N]: blocks of 32 groups (128 rows of B) per run of panels, so that each visit of a row
// (a page apart when N is large) reads its bytes for 32 groups of output. Two panels (32
// columns, 32 bytes of 4 rows) make a pair: interleaved by two rounds of in-lane unpacks, the
// lanes put in order by vperm2i128, and an odd last panel goes through its 16-byte half.
// Vnni: the column sums by one vpdpbusd (all-ones as the u8 operand, b' as the s8: the four k
// of a column, wrapping) instead of vpmaddubsw, vpmaddwd and vpaddd; Flip: whether bytes are
// XORed with 0x80 (u8 b), so that i8 b costs no XOR.
// stream (large B, 32-byte aligned data): four panels a step, each row's whole 64-byte line
// read in one visit and the one two lines on prefetched, and the packed lines written with
// streaming stores (no read of the destination, which a 16 MiB B does not have in cache):
// about twice as fast at 4096^2 (kernels/README.md); four panels a step with ordinary stores,
// or streaming stores two panels a step, were no faster than the plain loop.
template <bool Vnni, bool Flip>
inline void gemm_pack_kn_t(const uint8_t *src, size_t ld, size_t p0, size_t p1, size_t groups,
                           int8_t *data, size_t ps, uint32_t *colsum, bool stream) noexcept {
  const __m256i fl = _mm256_set1_epi8(static_cast<char>(0x80));
  auto add = [](uint32_t *c, __m256i v) {
    auto *q = reinterpret_cast<__m256i *>(c);
    _mm256_storeu_si256(q, _mm256_add_epi32(_mm256_loadu_si256(q), v));
  };
  // A pair of panels from 32 bytes of the 4 rows, streamed: panel pp's and pp + 1's lines of
  // group g, each written whole.
  auto stream_pair = [&](const __m256i (&r)[4], size_t pp, size_t g, __m256i &s0, __m256i &s1,
                         __m256i &s2, __m256i &s3) __attribute__((always_inline)) {
    const __m256i t0 = _mm256_unpacklo_epi8(r[0], r[1]), t1 = _mm256_unpackhi_epi8(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi8(r[2], r[3]), t3 = _mm256_unpackhi_epi8(r[2], r[3]);
    const __m256i o0 = _mm256_unpacklo_epi16(t0, t2), o1 = _mm256_unpackhi_epi16(t0, t2);
    const __m256i o2 = _mm256_unpacklo_epi16(t1, t3), o3 = _mm256_unpackhi_epi16(t1, t3);
    const __m256i a0 = _mm256_permute2x128_si256(o0, o1, 0x20), a1 = _mm256_permute2x128_si256(o2, o3, 0x20);
    const __m256i b0 = _mm256_permute2x128_si256(o0, o1, 0x31), b1 = _mm256_permute2x128_si256(o2, o3, 0x31);
    auto *out = reinterpret_cast<__m256i *>(data + pp * ps + g * 64);
    auto *outb = reinterpret_cast<__m256i *>(data + (pp + 1) * ps + g * 64);
    _mm256_stream_si256(out, a0);
    _mm256_stream_si256(out + 1, a1);
    _mm256_stream_si256(outb, b0);
    _mm256_stream_si256(outb + 1, b1);
    s0 = add_sums<Vnni>(s0, a0);
    s1 = add_sums<Vnni>(s1, a1);
    s2 = add_sums<Vnni>(s2, b0);
    s3 = add_sums<Vnni>(s3, b1);
  };
  stream = stream && (reinterpret_cast<uintptr_t>(data) & 31) == 0 && ps % 32 == 0;
  constexpr size_t kGroupBlock = 32;
  for (size_t g0 = 0; g0 < groups; g0 += kGroupBlock) {
    const size_t g1 = groups < g0 + kGroupBlock ? groups : g0 + kGroupBlock;
    size_t p = p0;
    for (; stream && p + 4 <= p1; p += 4) {
      __m256i sq[8];
      for (auto &v : sq) v = _mm256_setzero_si256();
      for (size_t g = g0; g < g1; ++g) {
        __m256i lo[4], hi[4];
        for (size_t i = 0; i < 4; ++i) {
          const uint8_t *row = src + (4 * g + i) * ld + 16 * p;
          _mm_prefetch(reinterpret_cast<const char *>(row + 128), _MM_HINT_T0);
          lo[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row));
          hi[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row + 32));
          if constexpr (Flip) {
            lo[i] = _mm256_xor_si256(lo[i], fl);
            hi[i] = _mm256_xor_si256(hi[i], fl);
          }
        }
        stream_pair(lo, p, g, sq[0], sq[1], sq[2], sq[3]);
        stream_pair(hi, p + 2, g, sq[4], sq[5], sq[6], sq[7]);
      }
      for (size_t q = 0; q < 8; ++q) add(colsum + (p - p0) * 16 + 8 * q, sq[q]);
    }
    for (; p < p1; p += 2) {
      const bool pair = p + 1 < p1;
      __m256i sa0 = _mm256_setzero_si256(), sa1 = sa0, sb0 = sa0, sb1 = sa0;
      for (size_t g = g0; g < g1; ++g) {
        __m256i r[4];
        for (size_t i = 0; i < 4; ++i) {
          const uint8_t *row = src + (4 * g + i) * ld + 16 * p;
          r[i] = pair ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row))
                      : _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row)));
          if constexpr (Flip) r[i] = _mm256_xor_si256(r[i], fl);
        }
        const __m256i t0 = _mm256_unpacklo_epi8(r[0], r[1]), t1 = _mm256_unpackhi_epi8(r[0], r[1]);
        const __m256i t2 = _mm256_unpacklo_epi8(r[2], r[3]), t3 = _mm256_unpackhi_epi8(r[2], r[3]);
        const __m256i o0 = _mm256_unpacklo_epi16(t0, t2), o1 = _mm256_unpackhi_epi16(t0, t2);
        const __m256i o2 = _mm256_unpacklo_epi16(t1, t3), o3 = _mm256_unpackhi_epi16(t1, t3);
        const __m256i a0 = _mm256_permute2x128_si256(o0, o1, 0x20);  // panel p, columns 0-7
        const __m256i a1 = _mm256_permute2x128_si256(o2, o3, 0x20);  // columns 8-15
        auto *out = reinterpret_cast<__m256i *>(data + p * ps + g * 64);
        _mm256_storeu_si256(out, a0);
        _mm256_storeu_si256(out + 1, a1);
        sa0 = add_sums<Vnni>(sa0, a0);
        sa1 = add_sums<Vnni>(sa1, a1);
        if (pair) {
          const __m256i b0 = _mm256_permute2x128_si256(o0, o1, 0x31);
          const __m256i b1 = _mm256_permute2x128_si256(o2, o3, 0x31);
          auto *outb = reinterpret_cast<__m256i *>(data + (p + 1) * ps + g * 64);
          _mm256_storeu_si256(outb, b0);
          _mm256_storeu_si256(outb + 1, b1);
          sb0 = add_sums<Vnni>(sb0, b0);
          sb1 = add_sums<Vnni>(sb1, b1);
        }
      }
      uint32_t *ca = colsum + (p - p0) * 16;
      add(ca, sa0);
      add(ca + 8, sa1);
      if (pair) {
        add(ca + 16, sb0);
        add(ca + 24, sb1);
      }
    }
  }
  if (stream) _mm_sfence();  // the streamed lines ordered before the driver's join
}

// [N, K]: per panel, 8 groups (32 bytes) of each of its 16 rows at a time: two 8 x 8 dword
// transposes (unpacks of 32 and 64 bits, then vperm2i128) make groups g .. g + 7, rows 0-7 in
// a group's first 32 bytes (held until) rows 8-15 in its last, so that each group's line is
// written whole: with streaming stores where stream (as gemm_pack_kn_t). A row's sum from the
// packed bytes, a dword per row (as gemm_pack_kn_t's column sums). Groups past the last
// multiple of 8 are left to the driver.
template <bool Vnni, bool Flip>
inline void gemm_pack_nk_t(const uint8_t *src, size_t ld, size_t p0, size_t p1, size_t groups,
                           int8_t *data, size_t ps, uint32_t *colsum, bool stream) noexcept {
  const __m256i fl = _mm256_set1_epi8(static_cast<char>(0x80));
  stream = stream && (reinterpret_cast<uintptr_t>(data) & 31) == 0 && ps % 32 == 0;
  const size_t steps = groups / 8;
  for (size_t p = p0; p < p1; ++p) {
    int8_t *out = data + p * ps;
    const uint8_t *rows = src + 16 * p * ld;
    __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // dword i: row 8h + i
    for (size_t st = 0; st < steps; ++st) {
      __m256i first[8];  // rows 0-7's halves of the 8 groups
      for (size_t h = 0; h < 2; ++h) {
        __m256i a[8], t[8], u[8], v[8];
        for (size_t j = 0; j < 8; ++j) {
          a[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(rows + (8 * h + j) * ld + 32 * st));
          if constexpr (Flip) a[j] = _mm256_xor_si256(a[j], fl);
        }
        for (size_t j = 0; j < 8; j += 2) {
          t[j] = _mm256_unpacklo_epi32(a[j], a[j + 1]);
          t[j + 1] = _mm256_unpackhi_epi32(a[j], a[j + 1]);
        }
        for (size_t j = 0; j < 8; j += 4) {
          u[j] = _mm256_unpacklo_epi64(t[j], t[j + 2]);
          u[j + 1] = _mm256_unpackhi_epi64(t[j], t[j + 2]);
          u[j + 2] = _mm256_unpacklo_epi64(t[j + 1], t[j + 3]);
          u[j + 3] = _mm256_unpackhi_epi64(t[j + 1], t[j + 3]);
        }
        for (size_t q = 0; q < 4; ++q) {
          v[q] = _mm256_permute2x128_si256(u[q], u[q + 4], 0x20);      // group 8 st + q
          v[q + 4] = _mm256_permute2x128_si256(u[q], u[q + 4], 0x31);  // group 8 st + q + 4
        }
        for (size_t g = 0; g < 8; ++g) sum[h] = add_sums<Vnni>(sum[h], v[g]);
        if (h == 0) {
          for (size_t g = 0; g < 8; ++g) first[g] = v[g];
          continue;
        }
        for (size_t g = 0; g < 8; ++g) {
          auto *o = reinterpret_cast<__m256i *>(out + (8 * st + g) * 64);
          if (stream) {
            _mm256_stream_si256(o, first[g]);
            _mm256_stream_si256(o + 1, v[g]);
          } else {
            _mm256_storeu_si256(o, first[g]);
            _mm256_storeu_si256(o + 1, v[g]);
          }
        }
      }
    }
    for (size_t h = 0; h < 2; ++h) {
      auto *c = reinterpret_cast<__m256i *>(colsum + (p - p0) * 16 + 8 * h);
      _mm256_storeu_si256(c, _mm256_add_epi32(_mm256_loadu_si256(c), sum[h]));
    }
  }
  if (stream) _mm_sfence();  // the streamed lines ordered before the driver's join
}
// The GemmPackFn of either packer (NK: gemm_pack_nk_t, else gemm_pack_kn_t), its column sums
// by vpdpbusd where Vnni (in a translation unit with AVX-512 VNNI and VL); flip is 0 (i8 b) or
// 0x80 (u8 b).
template <bool NK, bool Vnni>
inline void gemm_pack(const uint8_t *src, size_t ld, size_t p0, size_t p1, size_t groups,
                      uint8_t flip, int8_t *data, size_t ps, uint32_t *colsum, bool stream) noexcept {
  auto run = [&](auto flips) {
    constexpr bool kFlip = decltype(flips)::value;
    if constexpr (NK)
      gemm_pack_nk_t<Vnni, kFlip>(src, ld, p0, p1, groups, data, ps, colsum, stream);
    else
      gemm_pack_kn_t<Vnni, kFlip>(src, ld, p0, p1, groups, data, ps, colsum, stream);
  };
  if (flip != 0)
    run(std::true_type{});
  else
    run(std::false_type{});
}

// The zero-point correction of a tile (GemmCorrectFn) on 8 lanes: vpmulld and vpsubd / vpaddd
// wrap as the scalar uint32 arithmetic does. Columns past the last multiple of 8 go one by one
// (zb and col end at N).
// GemmDepthwiseFn on AVX2: 16 channels a chunk as int16 (x - zx, |.| <= 255), taps in pairs
// interleaved by vpunpck{l,h}wd so that vpmaddwd adds two taps' products per channel (each
// product at most 255^2, the pair at most 2 * 255^2: exact in int32), vpaddd wrapping; the two
// sums hold channels [0-3 | 8-11] and [4-7 | 12-15] and vperm2i128 puts them in order. Channels
// past the last whole chunk go through the plain loop (kernels/gemm/depthwise.hpp's rule).
inline void depthwise_avx2(const uint8_t *const *x, size_t taps, bool is_signed, int32_t zx,
                           const int16_t *w, size_t C, int32_t *acc) noexcept {
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zx));
  const size_t whole = C / 16 * 16;
  for (size_t c0 = 0; c0 < whole; c0 += 16) {
    auto xv = [&](size_t t) {
      if (t >= taps || x[t] == nullptr) return _mm256_setzero_si256();
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x[t] + c0));
      return _mm256_sub_epi16(is_signed ? _mm256_cvtepi8_epi16(b) : _mm256_cvtepu8_epi16(b), z);
    };
    auto wv = [&](size_t t) {
      return t < taps ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + t * C + c0))
                      : _mm256_setzero_si256();
    };
    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (size_t t = 0; t < taps; t += 2) {
      const __m256i x0 = xv(t), x1 = xv(t + 1), w0 = wv(t), w1 = wv(t + 1);
      a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1),
                                                  _mm256_unpacklo_epi16(w0, w1)));
      a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1),
                                                  _mm256_unpackhi_epi16(w0, w1)));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + c0), _mm256_permute2x128_si256(a0, a1, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + c0 + 8), _mm256_permute2x128_si256(a0, a1, 0x31));
  }
  for (size_t c = whole; c < C; ++c) {
    uint32_t sum = 0;
    for (size_t t = 0; t < taps; ++t) {
      if (x[t] == nullptr) continue;
      const int32_t v = (is_signed ? static_cast<int32_t>(static_cast<int8_t>(x[t][c]))
                                   : static_cast<int32_t>(x[t][c])) - zx;
      sum += static_cast<uint32_t>(v * static_cast<int32_t>(w[t * C + c]));
    }
    acc[c] = static_cast<int32_t>(sum);
  }
}

// Depthwise by rows on AVX2 (GemmDwExpandFn / GemmDwRowFn: dw_block 16, dw_group 2,
// dw_bytes 2). Expansion: an entry's dword per channel holds the int16 x - zx of two
// consecutive columns, built from the right: d(e) = x(e) | x(e + 1) << 16 (vpmovzxbd or
// vpmovsxbd, vpsubd, vpslld, vpblendw per 8 channels and column). The row kernel then needs
// one vpmaddwd + vpaddd per 8 channels, output pixel and pair of taps of a kernel row (a pair
// sum is at most 2 * 255^2: exact), its x operand a load of an entry: 4 pixels x 16 channels
// in 8 accumulators, the pair's 2 weight vectors in registers.
struct DwPairs256 {
  static constexpr size_t kBlock = 16, kGroup = 2, kEntry = kBlock * kGroup * 2;
  static constexpr int kPixels = 4, kBytes = 2;
  using Weight = int16_t;
  template <bool Signed>
  static void expand_t(const uint8_t *line, size_t W, size_t C, size_t c0, size_t cn,
                       std::ptrdiff_t iw0, size_t n, int32_t zx, uint8_t *out) noexcept {
    const __m256i z = _mm256_set1_epi32(zx);
    for (size_t v = 0; v < kBlock / 8; ++v) {
      uint8_t *o = out + 32 * v;
      if (8 * v >= cn) {
        for (size_t e = 0; e < n; ++e)
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + e * kEntry), _mm256_setzero_si256());
        continue;
      }
      const size_t m = cn - 8 * v;
      // 8 bytes of x to x - zx, one per dword.
      auto convert = [&](__m128i b) __attribute__((always_inline)) {
        return _mm256_sub_epi32(Signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b), z);
      };
      // Column iw's values (0 outside the image).
      auto col = [&](std::ptrdiff_t iw) __attribute__((always_inline)) {
        if (line == nullptr || iw < 0 || iw >= static_cast<std::ptrdiff_t>(W)) return _mm256_setzero_si256();
        return convert(dw_chunk(line + static_cast<size_t>(iw) * C + c0 + 8 * v, m, 8));
      };
      auto put = [&](size_t e, __m256i x, __m256i next) __attribute__((always_inline)) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(o + e * kEntry),
                            _mm256_blend_epi16(x, _mm256_slli_epi32(next, 16), 0xAA));
      };
      // Entries from the right; the interior (every column in the image, m >= 8) without tests.
      __m256i next = col(iw0 + static_cast<std::ptrdiff_t>(n));
      std::ptrdiff_t e = static_cast<std::ptrdiff_t>(n) - 1;
      const std::ptrdiff_t lo = iw0 < 0 ? -iw0 : 0;  // first entry inside
      const std::ptrdiff_t hi = static_cast<std::ptrdiff_t>(W) - 1 - iw0;  // last entry inside
      for (; e >= 0 && e > hi; --e) {
        const __m256i x = col(iw0 + e);
        put(static_cast<size_t>(e), x, next);
        next = x;
      }
      if (line != nullptr && m >= 8) {
        const uint8_t *p = line + c0 + 8 * v;
        for (; e >= lo; --e) {
          const __m256i x = convert(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p + static_cast<size_t>(iw0 + e) * C)));
          put(static_cast<size_t>(e), x, next);
          next = x;
        }
      }
      for (; e >= 0; --e) {
        const __m256i x = col(iw0 + e);
        put(static_cast<size_t>(e), x, next);
        next = x;
      }
    }
  }
  template <int UR>
  static void pixels(const uint8_t *const *rows, size_t kh, size_t jg, const int16_t *w,
                     const int32_t *start, size_t o0, int32_t *acc, size_t ld) noexcept {
    __m256i a[UR][2];
    for (int v = 0; v < 2; ++v) {
      const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(start + 8 * v));
      for (int u = 0; u < UR; ++u) a[u][v] = s;
    }
    for (size_t i = 0; i < kh; ++i)
      for (size_t j = 0; j < jg; ++j) {
        const int16_t *wt = w + (i * jg + j) * kBlock * kGroup;
        const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wt));
        const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wt + 16));
        const uint8_t *x = rows[i] + (o0 + j * kGroup) * kEntry;
        for (int u = 0; u < UR; ++u) {
          const auto *xu = reinterpret_cast<const __m256i *>(x + u * kEntry);
          a[u][0] = _mm256_add_epi32(a[u][0], _mm256_madd_epi16(_mm256_loadu_si256(xu), w0));
          a[u][1] = _mm256_add_epi32(a[u][1], _mm256_madd_epi16(_mm256_loadu_si256(xu + 1), w1));
        }
      }
    for (int u = 0; u < UR; ++u)
      for (int v = 0; v < 2; ++v)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(acc + (o0 + static_cast<size_t>(u)) * ld + 8 * v), a[u][v]);
  }
};

inline void gemm_correct_avx2(const int32_t *zb, const int32_t *col, int cols,
                              const int32_t *row_sum, const int32_t *za, int rows, int32_t *acc,
                              size_t ldc) noexcept {
  for (int r = 0; r < rows; ++r) {
    int32_t *a = acc + static_cast<size_t>(r) * ldc;
    // (row sums exist only where the zero points of b do: zb not null)
    const __m256i s = _mm256_set1_epi32(zb != nullptr ? row_sum[r] : 0), z = _mm256_set1_epi32(za[r]);
    int j = 0;
    for (; j + 8 <= cols; j += 8) {
      __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + j));
      if (zb != nullptr)
        v = _mm256_sub_epi32(v, _mm256_mullo_epi32(
                                    _mm256_loadu_si256(reinterpret_cast<const __m256i *>(zb + j)), s));
      const __m256i cv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(col + j));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(a + j),
                          _mm256_add_epi32(v, _mm256_mullo_epi32(cv, z)));
    }
    for (; j < cols; ++j) {
      const uint32_t zbj = zb != nullptr ? static_cast<uint32_t>(zb[j]) : 0u;
      a[j] = static_cast<int32_t>(static_cast<uint32_t>(a[j]) -
                                  zbj * static_cast<uint32_t>(zb != nullptr ? row_sum[r] : 0) +
                                  static_cast<uint32_t>(col[j]) * static_cast<uint32_t>(za[r]));
    }
  }
}

// The epilogue rules of src/ops/epilogue.hpp on 8 lanes, bit for bit: vcvtdq2ps converts as the
// scalar cast does (the current rounding mode), the multiplies, additions and the division are
// single IEEE operations (no contraction), vroundps rounds ties to even by its immediate, and
// round_and_saturate's clamp of r + zy to [qmin, qmax] is a clamp of r to [qmin - zy, qmax - zy]
// (small integers, exact in float), NaN giving zy. As Epi512 (below): everything read from the
// arguments in locals, the mode a template parameter, so that the loops keep them in registers
// (byte outputs may alias anything: fields read through the arguments were reloaded, and their
// vectors rebuilt, after every store).
struct Epi256 {
  const int32_t *bias_i32;
  const float *bias_f32, *mult;
  __m256 lo, hi, sy;
  __m256i zy;
  bool relu, finite, is_signed;
  explicit Epi256(const GemmEpilogueArgs &e, size_t c0) noexcept
      : bias_i32(e.bias_i32 != nullptr ? e.bias_i32 + c0 : nullptr),
        bias_f32(e.bias_f32 != nullptr ? e.bias_f32 + c0 : nullptr),
        mult(e.multiplier != nullptr ? e.multiplier + c0 : nullptr),
        lo(_mm256_set1_ps(static_cast<float>(e.qmin - e.zy))),
        hi(_mm256_set1_ps(static_cast<float>(e.qmax - e.zy))),
        sy(_mm256_set1_ps(e.sy)),
        zy(_mm256_set1_epi32(e.zy)),
        relu(e.relu),
        finite(e.finite),
        is_signed(e.qmin < 0) {}

  __m256i round_saturate(__m256 v) const noexcept {
    const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 c = _mm256_min_ps(_mm256_max_ps(r, lo), hi);
    if (!finite) c = _mm256_blendv_ps(c, _mm256_setzero_ps(), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(c), zy);
    if (relu) q = _mm256_max_epi32(q, zy);
    return q;
  }

  // Eight elements of the channels j .. j + 8 (from c0), row scale rs (mode 2; 0: none).
  template <int Mode>
  void put8(const int32_t *acc, size_t j, float rs, uint8_t *out) const noexcept {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(acc));
    if (bias_i32 != nullptr)
      a = _mm256_add_epi32(a, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bias_i32 + j)));
    if constexpr (Mode == 0) {
      if (relu) a = _mm256_max_epi32(a, _mm256_setzero_si256());
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out), a);
    } else {
      __m256 m = _mm256_loadu_ps(mult + j);
      if (Mode == 2 && rs != 0.0f) m = _mm256_mul_ps(_mm256_set1_ps(rs), m);
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), m);
      __m256i q;
      if constexpr (Mode == 1) {
        q = round_saturate(v);
      } else {
        v = _mm256_add_ps(v, bias_f32 != nullptr ? _mm256_loadu_ps(bias_f32 + j) : _mm256_setzero_ps());
        if constexpr (Mode == 2) {
          if (relu)
            v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
          // NaN: the canonical quiet NaN (rules::canonical_nan).
          v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)),
                               _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
          _mm256_storeu_ps(reinterpret_cast<float *>(out), v);
          return;
        }
        q = round_saturate(_mm256_div_ps(v, sy));
      }
      // Eight values in [qmin, qmax] (a byte's range) to bytes.
      const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      const __m128i b = is_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
      _mm_storel_epi64(reinterpret_cast<__m128i *>(out), b);
    }
  }
};

template <int Mode>
void epilogue_rows_avx2(const GemmEpilogueArgs &e, const int32_t *acc, size_t acc_ld, int rows,
                        size_t c0, size_t n, uint8_t *y, size_t i0, size_t y_ld) noexcept {
  constexpr size_t size = Mode == 0 || Mode == 2 ? 4 : 1;
  const Epi256 p(e, c0);
  const float *row_scales = e.row_scales;
  const float row_scale = e.row_scale;
  const size_t whole = n / 8 * 8, rest = n - whole;
  // The last columns through a staging buffer: their parameters copied, the rest zero.
  alignas(32) int32_t bi[8] = {};
  alignas(32) float m[8] = {}, bf[8] = {};
  Epi256 t = p;
  if (rest != 0) {
    for (size_t k = 0; k < rest; ++k) {
      if (p.bias_i32 != nullptr) bi[k] = p.bias_i32[whole + k];
      if (p.bias_f32 != nullptr) bf[k] = p.bias_f32[whole + k];
      if (p.mult != nullptr) m[k] = p.mult[whole + k];
    }
    t.bias_i32 = p.bias_i32 != nullptr ? bi : nullptr;
    t.bias_f32 = p.bias_f32 != nullptr ? bf : nullptr;
    t.mult = p.mult != nullptr ? m : nullptr;
  }
  for (int r = 0; r < rows; ++r) {
    const float rs = row_scales != nullptr ? row_scales[r] : row_scale;
    const int32_t *a = acc + static_cast<size_t>(r) * acc_ld;
    uint8_t *out = y + (i0 + static_cast<size_t>(r) * y_ld) * size;
    for (size_t j = 0; j < whole; j += 8) p.put8<Mode>(a + j, j, rs, out + j * size);
    if (rest != 0) {
      alignas(32) int32_t at[8] = {};
      alignas(32) uint8_t o[32];
      std::memcpy(at, a + whole, rest * 4);
      t.put8<Mode>(at, 0, rs, o);
      std::memcpy(out + whole * size, o, rest * size);
    }
  }
}

inline void gemm_epilogue_avx2(const GemmEpilogueArgs &e, const int32_t *acc, size_t acc_ld, int rows,
                               size_t c0, size_t n, uint8_t *y, size_t i0, size_t y_ld) noexcept {
  switch (e.mode) {
    case 0: return epilogue_rows_avx2<0>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    case 1: return epilogue_rows_avx2<1>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    case 2: return epilogue_rows_avx2<2>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    default: return epilogue_rows_avx2<3>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
  }
}
#endif

#if defined(__AVX512BW__) && !defined(QNT_GEMM_EMULATED)
// The same rules on 16 lanes (the avx512 and avx512_vnni tables), with masks for a row's last
// columns instead of a staging buffer: lanes past n compute on zeros and are never stored.
// vrndscaleps rounds ties to even by its immediate; max/min pass the second operand for a NaN
// as their 256-bit forms do, and NaN lanes are then set to 0 (zy after the shift) the same way.
// Everything an epilogue reads from its arguments, in locals, so that the loops below keep
// them in registers: the outputs are bytes, which may alias anything in memory, so fields read
// through the arguments would be reloaded (and their vectors rebuilt) after every store.
struct Epi512 {
  const int32_t *bias_i32;
  const float *bias_f32, *mult;
  __m512 lo, hi, sy;
  __m512i zy;
  bool relu, finite;
  explicit Epi512(const GemmEpilogueArgs &e, size_t c0) noexcept
      : bias_i32(e.bias_i32 != nullptr ? e.bias_i32 + c0 : nullptr),
        bias_f32(e.bias_f32 != nullptr ? e.bias_f32 + c0 : nullptr),
        mult(e.multiplier != nullptr ? e.multiplier + c0 : nullptr),
        lo(_mm512_set1_ps(static_cast<float>(e.qmin - e.zy))),
        hi(_mm512_set1_ps(static_cast<float>(e.qmax - e.zy))),
        sy(_mm512_set1_ps(e.sy)),
        zy(_mm512_set1_epi32(e.zy)),
        relu(e.relu),
        finite(e.finite) {}

  // Clamped to [qmin - zy, qmax - zy] (integers: clamping first rounds the same), then rounded
  // to nearest even by the conversion's embedded rounding, then shifted by zy. max/min pass the
  // second operand for a NaN, as their 256-bit forms do, and NaN lanes are then set to 0 (zy
  // after the shift) the same way; with `finite` there is none to look for.
  __m512i round_saturate(__m512 v) const noexcept {
    __m512 c = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    if (!finite)
      c = _mm512_mask_mov_ps(c, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_setzero_ps());
    __m512i q = _mm512_add_epi32(
        _mm512_cvt_roundps_epi32(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zy);
    if (relu) q = _mm512_max_epi32(q, zy);
    return q;
  }

  // Sixteen elements (those of mask k) of the channels j .. j + 16 (from c0), row scale rs
  // (mode 2; 0: none).
  template <int Mode>
  void put16(const int32_t *acc, size_t j, __mmask16 k, float rs, uint8_t *out) const noexcept {
    __m512i a = _mm512_maskz_loadu_epi32(k, acc);
    if (bias_i32 != nullptr) a = _mm512_add_epi32(a, _mm512_maskz_loadu_epi32(k, bias_i32 + j));
    if constexpr (Mode == 0) {
      if (relu) a = _mm512_max_epi32(a, _mm512_setzero_si512());
      _mm512_mask_storeu_epi32(out, k, a);
    } else {
      __m512 m = _mm512_maskz_loadu_ps(k, mult + j);
      if (Mode == 2 && rs != 0.0f) m = _mm512_mul_ps(_mm512_set1_ps(rs), m);
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(a), m);
      __m512i q;
      if constexpr (Mode == 1) {
        q = round_saturate(v);
      } else {
        if (bias_f32 != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, bias_f32 + j));
        else v = _mm512_add_ps(v, _mm512_setzero_ps());
        if constexpr (Mode == 2) {
          if (relu)
            v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ),
                                   _mm512_setzero_ps());
          // NaN: the canonical quiet NaN (rules::canonical_nan).
          v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                                 _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
          _mm512_mask_storeu_ps(out, k, v);
          return;
        }
        q = round_saturate(_mm512_div_ps(v, sy));
      }
      // Values in [qmin, qmax] (a byte's range): their low bytes are the outputs, narrowed in
      // a register and then stored.
      const __m128i b = _mm512_cvtepi32_epi8(q);
      if (k == 0xFFFF)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out), b);
      else
        _mm_mask_storeu_epi8(out, k, b);
    }
  }
};

template <int Mode>
void epilogue_rows_avx512(const GemmEpilogueArgs &e, const int32_t *acc, size_t acc_ld, int rows,
                          size_t c0, size_t n, uint8_t *y, size_t i0, size_t y_ld) noexcept {
  constexpr size_t size = Mode == 0 || Mode == 2 ? 4 : 1;
  const Epi512 p(e, c0);
  const float *row_scales = e.row_scales;
  const float row_scale = e.row_scale;
  const size_t whole = n / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (n - whole)) - 1u);
  for (int r = 0; r < rows; ++r) {
    const float rs = row_scales != nullptr ? row_scales[r] : row_scale;
    const int32_t *a = acc + static_cast<size_t>(r) * acc_ld;
    uint8_t *out = y + (i0 + static_cast<size_t>(r) * y_ld) * size;
    for (size_t j = 0; j < whole; j += 16) p.put16<Mode>(a + j, j, 0xFFFF, rs, out + j * size);
    if (tail != 0) p.put16<Mode>(a + whole, whole, tail, rs, out + whole * size);
  }
}

inline void gemm_epilogue_avx512(const GemmEpilogueArgs &e, const int32_t *acc, size_t acc_ld, int rows,
                          size_t c0, size_t n, uint8_t *y, size_t i0, size_t y_ld) noexcept {
  switch (e.mode) {
    case 0: return epilogue_rows_avx512<0>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    case 1: return epilogue_rows_avx512<1>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    case 2: return epilogue_rows_avx512<2>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
    default: return epilogue_rows_avx512<3>(e, acc, acc_ld, rows, c0, n, y, i0, y_ld);
  }
}

// Depthwise (GemmDepthwiseFn) on 32 channels at a time: x and w widened to int16 (x - zx and
// w - zw within +-255), taps taken in pairs and interleaved per channel by vpunpck{l,h}wd, so
// that one vpmaddwd adds two taps' products into each channel's int32 sum (at most 2 * 255 *
// 255: exact; vpaddd wraps as the rule says). The unpacks order the sums by 128-bit lane
// (channels 8L .. 8L + 3 in one vector, 8L + 4 .. 8L + 7 in the other), put back in channel
// order by vpermt2d once per 32 channels. A missing tap (outside the image) is a zero vector.
inline void depthwise_avx512(const uint8_t *const *x, size_t taps, bool is_signed, int32_t zx,
                             const int16_t *w, size_t C, int32_t *acc) noexcept {
  const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zx));
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (size_t c0 = 0; c0 < C; c0 += 32) {
    const size_t n = C - c0 < 32 ? C - c0 : 32;
    const auto k = static_cast<__mmask32>(n == 32 ? 0xFFFFFFFFu : (1u << n) - 1u);
    // A tap's x - zx as int16 (0 for lanes past n and for taps outside the image).
    auto xv = [&](size_t t) {
      if (t >= taps || x[t] == nullptr) return _mm512_setzero_si512();
      const __m256i b = _mm256_maskz_loadu_epi8(k, x[t] + c0);
      const __m512i v = is_signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
      return _mm512_maskz_sub_epi16(k, v, z);
    };
    auto wv = [&](size_t t) {
      return t < taps ? _mm512_maskz_loadu_epi16(k, w + t * C + c0) : _mm512_setzero_si512();
    };
    __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
    for (size_t t = 0; t < taps; t += 2) {
      const __m512i x0 = xv(t), x1 = xv(t + 1), w0 = wv(t), w1 = wv(t + 1);
      a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_unpacklo_epi16(x0, x1),
                                                   _mm512_unpacklo_epi16(w0, w1)));
      a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(_mm512_unpackhi_epi16(x0, x1),
                                                   _mm512_unpackhi_epi16(w0, w1)));
    }
    const __m512i first = _mm512_permutex2var_epi32(a0, lo_idx, a1);   // channels 0-15
    const __m512i second = _mm512_permutex2var_epi32(a0, hi_idx, a1);  // channels 16-31
    const auto k0 = static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
    const auto k1 = static_cast<__mmask16>(n <= 16 ? 0u : n == 32 ? 0xFFFFu : (1u << (n - 16)) - 1u);
    _mm512_mask_storeu_epi32(acc + c0, k0, first);
    _mm512_mask_storeu_epi32(acc + c0 + 16, k1, second);
  }
}

#if defined(__AVX512VNNI__)
// GemmDepthwise8Fn: per 64 channels, the taps four at a time: four tap vectors interleaved by
// bytes (vpunpck{l,h}bw) then by words (vpunpck{l,h}wd) give every channel's four x' bytes in
// one dword, against the weights laid out in the same order, so one vpdpbusd adds four taps'
// products for 16 channels (u8 x s8 into int32, wrapping: exact). The four sums are put back in
// channel order by a 4 x 4 transpose of 128-bit lanes (vshufi32x4) once per 64 channels.
inline void depthwise_vnni(const uint8_t *const *x, size_t taps, bool is_signed, uint8_t pad,
                           const int8_t *w8, const int32_t *corr, size_t C,
                           int32_t *acc) noexcept {
  const __m512i padv = _mm512_set1_epi8(static_cast<char>(pad));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const size_t tap_groups = (taps + 3) / 4;
  for (size_t c0 = 0; c0 < C; c0 += 64) {
    const size_t n = C - c0 < 64 ? C - c0 : 64;
    const __mmask64 k = n == 64 ? ~0ull : (1ull << n) - 1;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    const int8_t *wb = w8 + (c0 / 64) * tap_groups * 256;
    for (size_t q = 0; q < tap_groups; ++q) {
      __m512i r[4];
      for (size_t i = 0; i < 4; ++i) {
        const size_t t = 4 * q + i;
        if (t >= taps || x[t] == nullptr) {
          r[i] = padv;
          continue;
        }
        r[i] = _mm512_maskz_loadu_epi8(k, x[t] + c0);
        if (is_signed) r[i] = _mm512_xor_si512(r[i], flip);
      }
      const __m512i t0 = _mm512_unpacklo_epi8(r[0], r[1]), t1 = _mm512_unpackhi_epi8(r[0], r[1]);
      const __m512i t2 = _mm512_unpacklo_epi8(r[2], r[3]), t3 = _mm512_unpackhi_epi8(r[2], r[3]);
      const int8_t *wq = wb + q * 256;
      a0 = _mm512_dpbusd_epi32(a0, _mm512_unpacklo_epi16(t0, t2), _mm512_loadu_si512(wq));
      a1 = _mm512_dpbusd_epi32(a1, _mm512_unpackhi_epi16(t0, t2), _mm512_loadu_si512(wq + 64));
      a2 = _mm512_dpbusd_epi32(a2, _mm512_unpacklo_epi16(t1, t3), _mm512_loadu_si512(wq + 128));
      a3 = _mm512_dpbusd_epi32(a3, _mm512_unpackhi_epi16(t1, t3), _mm512_loadu_si512(wq + 192));
    }
    // a_k's lane L holds channels 16L + 4k .. 16L + 4k + 3: out_L = (a0, a1, a2, a3) lanes L.
    const __m512i u0 = _mm512_shuffle_i32x4(a0, a1, 0x44), u1 = _mm512_shuffle_i32x4(a2, a3, 0x44);
    const __m512i u2 = _mm512_shuffle_i32x4(a0, a1, 0xEE), u3 = _mm512_shuffle_i32x4(a2, a3, 0xEE);
    const __m512i o[4] = {_mm512_shuffle_i32x4(u0, u1, 0x88), _mm512_shuffle_i32x4(u0, u1, 0xDD),
                          _mm512_shuffle_i32x4(u2, u3, 0x88), _mm512_shuffle_i32x4(u2, u3, 0xDD)};
    for (size_t v = 0; v < 4 && 16 * v < n; ++v) {
      const size_t m = n - 16 * v < 16 ? n - 16 * v : 16;
      const auto km = static_cast<__mmask16>(m == 16 ? 0xFFFFu : (1u << m) - 1u);
      const __m512i cv = _mm512_maskz_loadu_epi32(km, corr + c0 + 16 * v);
      _mm512_mask_storeu_epi32(acc + c0 + 16 * v, km, _mm512_sub_epi32(o[v], cv));
    }
  }
}

#endif

// The zero-point correction (GemmCorrectFn) on 16 lanes, masked at a tile's last columns.
inline void gemm_correct_avx512(const int32_t *zb, const int32_t *col, int cols,
                                const int32_t *row_sum, const int32_t *za, int rows, int32_t *acc,
                                size_t ldc) noexcept {
  for (int j = 0; j < cols; j += 16) {
    const auto k = static_cast<__mmask16>(cols - j >= 16 ? 0xFFFFu : (1u << (cols - j)) - 1u);
    const __m512i cv = _mm512_maskz_loadu_epi32(k, col + j);
    const __m512i zbv = zb != nullptr ? _mm512_maskz_loadu_epi32(k, zb + j) : _mm512_setzero_si512();
    for (int r = 0; r < rows; ++r) {
      int32_t *a = acc + static_cast<size_t>(r) * ldc + j;
      __m512i v = _mm512_maskz_loadu_epi32(k, a);
      if (zb != nullptr) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zbv, _mm512_set1_epi32(row_sum[r])));
      v = _mm512_add_epi32(v, _mm512_mullo_epi32(cv, _mm512_set1_epi32(za[r])));
      _mm512_mask_storeu_epi32(a, k, v);
    }
  }
}
#endif

template <class F>
void gemm_tile(const uint8_t *a, const int8_t *b, size_t ps, size_t groups, int rows, int panels,
               int32_t *c, size_t ldc) noexcept {
  RowDispatch<F, F::kMR, F::kNP>::go(rows, panels, a, b, ps, groups, c, ldc);
}

}  // namespace
}  // namespace qnt::kern
