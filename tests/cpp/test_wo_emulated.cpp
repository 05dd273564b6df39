// The AVX-512 and AVX-512 VNNI weight-only kernels (kernels/wo/wo_x86.hpp, blk_x86.hpp) on any x86-64: their
// source compiled over a scalar model of the AVX-512 intrinsics they use, so that their logic
// (the packed layouts, block and unit boundaries, masks, row and K tails, the zero-point
// corrections) is tested on machines without AVX-512 too; where AVX-512 runs, test_weight_only
// runs the real instructions. Each model follows Intel's pseudo-code of its instruction. The
// layers built with the emulated kernels are checked against the reference paths bit for bit.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "emu512.hpp"

namespace emu {
using Mask = uint16_t;
inline float f32(const V &v, int i) {
  float x;
  std::memcpy(&x, v.b + 4 * i, 4);
  return x;
}
inline void putf(V &v, int i, float x) { std::memcpy(v.b + 4 * i, &x, 4); }
inline uint16_t u16(const V &v, int i) {
  uint16_t x;
  std::memcpy(&x, v.b + 2 * i, 2);
  return x;
}
inline void put16(V &v, int i, uint16_t x) { std::memcpy(v.b + 2 * i, &x, 2); }
// Masked-off lanes are neither read nor written (the real instruction does not fault there).
inline V maskz_loadu_ps(Mask k, const float *p) {
  V v{};
  for (int i = 0; i < 16; ++i)
    if (k & (1u << i)) putf(v, i, p[i]);
  return v;
}
inline V set1_ps(float x) {
  V v;
  for (int i = 0; i < 16; ++i) putf(v, i, x);
  return v;
}
inline V set1_epi8(char x) {
  V v;
  std::memset(v.b, static_cast<unsigned char>(x), 64);
  return v;
}
inline V setr_epi32(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9,
                    int a10, int a11, int a12, int a13, int a14, int a15) {
  const int a[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
  V v;
  for (int i = 0; i < 16; ++i) put32(v, i, static_cast<uint32_t>(a[i]));
  return v;
}
inline V cvtepi8_epi32(__m128i x) {
  int8_t b[16];
  std::memcpy(b, &x, 16);
  V v;
  for (int i = 0; i < 16; ++i) put32(v, i, static_cast<uint32_t>(static_cast<int32_t>(b[i])));
  return v;
}
inline V broadcast_i32x4(__m128i x) {
  V v;
  for (int i = 0; i < 4; ++i) std::memcpy(v.b + 16 * i, &x, 16);
  return v;
}
inline V srli_epi32(V v, unsigned n) {
  for (int i = 0; i < 16; ++i) put32(v, i, n > 31 ? 0 : u32(v, i) >> n);
  return v;
}
inline V srl_epi32(V v, __m128i count) {
  uint64_t n;
  std::memcpy(&n, &count, 8);
  return srli_epi32(v, n > 31 ? 32 : static_cast<unsigned>(n));
}
inline V srli_epi16(V v, unsigned n) {
  for (int i = 0; i < 32; ++i) put16(v, i, static_cast<uint16_t>(n > 15 ? 0 : u16(v, i) >> n));
  return v;
}
// VPERMPS: lane i takes a[idx[i] & 15].
inline V permutexvar_ps(V idx, V a) {
  V r;
  for (int i = 0; i < 16; ++i) putf(r, i, f32(a, static_cast<int>(u32(idx, i) & 15)));
  return r;
}
inline V permutexvar_epi32(V idx, V a) {
  V r;
  for (int i = 0; i < 16; ++i) put32(r, i, u32(a, static_cast<int>(u32(idx, i) & 15)));
  return r;
}
// VPMADDWD: per dword lane, the two int16 products summed.
inline V madd_epi16(V a, V b) {
  V r;
  for (int i = 0; i < 16; ++i) {
    int16_t x[2], y[2];
    std::memcpy(x, a.b + 4 * i, 4);
    std::memcpy(y, b.b + 4 * i, 4);
    put32(r, i, static_cast<uint32_t>(int32_t{x[0]} * y[0] + int32_t{x[1]} * y[1]));
  }
  return r;
}
inline V add_epi32(V a, V b) {
  V r;
  for (int i = 0; i < 16; ++i) put32(r, i, u32(a, i) + u32(b, i));
  return r;
}
// VPSHUFB: within each 128-bit lane, byte j takes a[lane][b[j] & 15], or 0 when b[j] has bit 7.
inline V shuffle_epi8(V a, V b) {
  V r;
  for (int j = 0; j < 64; ++j)
    r.b[j] = (b.b[j] & 0x80) ? 0 : a.b[(j / 16) * 16 + (b.b[j] & 15)];
  return r;
}
// VPADDB and VPSUBB: bytewise, wrapping.
inline V add_epi8(V a, V b) {
  for (int j = 0; j < 64; ++j) a.b[j] = static_cast<uint8_t>(a.b[j] + b.b[j]);
  return a;
}
inline V sub_epi8(V a, V b) {
  for (int j = 0; j < 64; ++j) a.b[j] = static_cast<uint8_t>(a.b[j] - b.b[j]);
  return a;
}
// _mm512_set_epi8: the last argument is byte 0.
template <class... T>
inline V set_epi8(T... x) {
  static_assert(sizeof...(T) == 64, "64 bytes");
  const char in[64] = {static_cast<char>(x)...};
  V v;
  for (int j = 0; j < 64; ++j) v.b[j] = static_cast<uint8_t>(in[63 - j]);
  return v;
}
inline V and_si512(V a, V b) {
  for (int j = 0; j < 64; ++j) a.b[j] &= b.b[j];
  return a;
}
inline V xor_si512(V a, V b) {
  for (int j = 0; j < 64; ++j) a.b[j] ^= b.b[j];
  return a;
}
inline V sub_epi32(V a, V b) {
  for (int i = 0; i < 16; ++i) put32(a, i, u32(a, i) - u32(b, i));
  return a;
}
inline V mullo_epi32(V a, V b) {
  for (int i = 0; i < 16; ++i) put32(a, i, u32(a, i) * u32(b, i));
  return a;
}
inline V cvtepi32_ps(V a) {
  for (int i = 0; i < 16; ++i) putf(a, i, static_cast<float>(static_cast<int32_t>(u32(a, i))));
  return a;
}
inline V mul_ps(V a, V b) {
  for (int i = 0; i < 16; ++i) putf(a, i, f32(a, i) * f32(b, i));
  return a;
}
// VFMADD with the mask applied to the addend: lanes off keep c.
inline V mask3_fmadd_ps(V a, V b, V c, Mask k) {
  for (int i = 0; i < 16; ++i)
    if (k & (1u << i)) putf(c, i, std::fma(f32(a, i), f32(b, i), f32(c, i)));
  return c;
}
inline V fmadd_ps(V a, V b, V c) {
  for (int i = 0; i < 16; ++i) putf(c, i, std::fma(f32(a, i), f32(b, i), f32(c, i)));
  return c;
}
inline V add_ps(V a, V b) {
  for (int i = 0; i < 16; ++i) putf(a, i, f32(a, i) + f32(b, i));
  return a;
}
// VSHUFF32X4: result blocks 0-1 from a, 2-3 from b, each chosen by two bits of imm.
inline V shuffle_f32x4(V a, V b, int imm) {
  V r;
  for (int j = 0; j < 4; ++j)
    std::memcpy(r.b + 16 * j, (j < 2 ? a : b).b + 16 * ((imm >> (2 * j)) & 3), 16);
  return r;
}
// VSHUFPS: in each 128-bit block, lanes 0-1 from a, 2-3 from b, each chosen by two bits of imm.
inline V shuffle_ps(V a, V b, int imm) {
  V r;
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 4; ++l) putf(r, 4 * j + l, f32(l < 2 ? a : b, 4 * j + ((imm >> (2 * l)) & 3)));
  return r;
}
inline V mask_mov_ps(V src, Mask k, V a) {
  for (int i = 0; i < 16; ++i)
    if (k & (1u << i)) putf(src, i, f32(a, i));
  return src;
}
inline V mask_set1_epi32(V src, Mask k, int32_t x) {
  for (int i = 0; i < 16; ++i)
    if (k & (1u << i)) put32(src, i, static_cast<uint32_t>(x));
  return src;
}

}  // namespace emu

namespace {
namespace tok256 {
// The 256-bit instructions of the per-token row kernel (token_rows_vnni, AVX-512 VL + VNNI), in
// a namespace of their own with internal linkage: test_xnor_emulated.cpp has its own 256-bit
// model under the same names (emu::Y, emu::loadu256, ...), and two inline definitions of one
// name would be one function to the linker (not inlined at -O0, one TU's would serve both).
struct Y {
  uint8_t b[32];
};
inline uint32_t y32(const Y &v, int i) {
  uint32_t x;
  std::memcpy(&x, v.b + 4 * i, 4);
  return x;
}
inline Y zero256() { return Y{}; }
inline Y loadu256(const void *p) {
  Y v;
  std::memcpy(v.b, p, 32);
  return v;
}
inline Y set1_epi8_256(char x) {
  Y v;
  std::memset(v.b, static_cast<unsigned char>(x), 32);
  return v;
}
inline Y srli_epi16_256(Y a, int n) {  // VPSRLW
  for (int i = 0; i < 16; ++i) {
    uint16_t x;
    std::memcpy(&x, a.b + 2 * i, 2);
    x = n > 15 ? 0 : static_cast<uint16_t>(x >> n);
    std::memcpy(a.b + 2 * i, &x, 2);
  }
  return a;
}
inline Y and256(Y a, Y b) {
  for (int i = 0; i < 32; ++i) a.b[i] &= b.b[i];
  return a;
}
inline Y add_epi32_256(Y a, Y b) {
  for (int i = 0; i < 8; ++i) {
    const uint32_t x = y32(a, i) + y32(b, i);
    std::memcpy(a.b + 4 * i, &x, 4);
  }
  return a;
}
// VPDPBUSD on 8 lanes: four u8 (a) x s8 (b) products added to src, wrapping.
inline Y dpbusd256(Y src, Y a, Y b) {
  for (int i = 0; i < 8; ++i) {
    uint32_t s = y32(src, i);
    for (int j = 0; j < 4; ++j)
      s += static_cast<uint32_t>(static_cast<int32_t>(a.b[4 * i + j]) *
                                 static_cast<int32_t>(static_cast<int8_t>(b.b[4 * i + j])));
    std::memcpy(src.b + 4 * i, &s, 4);
  }
  return src;
}
inline __m128i low128(Y v) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(v.b)); }
inline __m128i extract128(Y v, int i) {  // VEXTRACTI128
  return _mm_loadu_si128(reinterpret_cast<const __m128i *>(v.b + 16 * (i & 1)));
}
}  // namespace tok256
}  // namespace

// Some of these are macros when not optimizing.
#undef __m512
#undef __m512i
#undef __mmask16
#define __m512 emu::V
#define __m512i emu::V
#define __mmask16 emu::Mask
#undef _mm512_setzero_ps
#define _mm512_setzero_ps emu::zero
#undef _mm512_setzero_si512
#define _mm512_setzero_si512 emu::zero
#undef _mm512_loadu_ps
#define _mm512_loadu_ps emu::loadu
#undef _mm512_loadu_si512
#define _mm512_loadu_si512 emu::loadu
#undef _mm512_storeu_ps
#define _mm512_storeu_ps emu::storeu
#undef _mm512_storeu_si512
#define _mm512_storeu_si512 emu::storeu
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps emu::maskz_loadu_ps
#undef _mm512_set1_ps
#define _mm512_set1_ps emu::set1_ps
#undef _mm512_set1_epi32
#define _mm512_set1_epi32 emu::set1_epi32
#undef _mm512_set1_epi8
#define _mm512_set1_epi8 emu::set1_epi8
#undef _mm512_setr_epi32
#define _mm512_setr_epi32 emu::setr_epi32
#undef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32 emu::cvtepu8_epi32
#undef _mm512_madd_epi16
#define _mm512_madd_epi16 emu::madd_epi16
#undef _mm512_permutexvar_epi32
#define _mm512_permutexvar_epi32 emu::permutexvar_epi32
#undef _mm512_add_epi32
#define _mm512_add_epi32 emu::add_epi32
#undef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32 emu::cvtepi8_epi32
#undef _mm512_broadcast_i32x4
#define _mm512_broadcast_i32x4 emu::broadcast_i32x4
#undef _mm512_srli_epi32
#define _mm512_srli_epi32 emu::srli_epi32
#undef _mm512_srl_epi32
#define _mm512_srl_epi32 emu::srl_epi32
#undef _mm512_srli_epi16
#define _mm512_srli_epi16 emu::srli_epi16
#undef _mm512_permutexvar_ps
#define _mm512_permutexvar_ps emu::permutexvar_ps
#undef _mm512_shuffle_epi8
#define _mm512_shuffle_epi8 emu::shuffle_epi8
#undef _mm512_and_si512
#define _mm512_and_si512 emu::and_si512
#undef _mm512_add_epi8
#define _mm512_add_epi8 emu::add_epi8
#undef _mm512_sub_epi8
#define _mm512_sub_epi8 emu::sub_epi8
#undef _mm512_set_epi8
#define _mm512_set_epi8 emu::set_epi8
#undef _mm512_xor_si512
#define _mm512_xor_si512 emu::xor_si512
#undef _mm512_sub_epi32
#define _mm512_sub_epi32 emu::sub_epi32
#undef _mm512_mullo_epi32
#define _mm512_mullo_epi32 emu::mullo_epi32
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps emu::cvtepi32_ps
#undef _mm512_mul_ps
#define _mm512_mul_ps emu::mul_ps
#undef _mm512_mask3_fmadd_ps
#define _mm512_mask3_fmadd_ps emu::mask3_fmadd_ps
#undef _mm512_add_ps
#define _mm512_add_ps emu::add_ps
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4 emu::shuffle_f32x4
#undef _mm512_shuffle_ps
#define _mm512_shuffle_ps emu::shuffle_ps
#undef _mm512_store_ps
#define _mm512_store_ps emu::storeu
#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps emu::fmadd_ps
#undef _mm512_mask_mov_ps
#define _mm512_mask_mov_ps emu::mask_mov_ps
#undef _mm512_mask_set1_epi32
#define _mm512_mask_set1_epi32 emu::mask_set1_epi32
#undef _mm512_dpbusd_epi32
#define _mm512_dpbusd_epi32 emu::dpbusd
#if !defined(__AVX512F__)
#define __AVX512F__ 1
#define QNT_TEST_DEFINED_F
#endif
#if !defined(__AVX512VNNI__)
#define __AVX512VNNI__ 1
#define QNT_TEST_DEFINED_VNNI
#endif
#if !defined(__AVX512VL__)
#define __AVX512VL__ 1
#define QNT_TEST_DEFINED_VL
#endif
#undef __m256i
#define __m256i ::tok256::Y
#undef _mm256_setzero_si256
#define _mm256_setzero_si256 ::tok256::zero256
#undef _mm256_loadu_si256
#define _mm256_loadu_si256 ::tok256::loadu256
#undef _mm256_set1_epi8
#define _mm256_set1_epi8 ::tok256::set1_epi8_256
#undef _mm256_srli_epi16
#define _mm256_srli_epi16 ::tok256::srli_epi16_256
#undef _mm256_and_si256
#define _mm256_and_si256 ::tok256::and256
#undef _mm256_add_epi32
#define _mm256_add_epi32 ::tok256::add_epi32_256
#undef _mm256_dpbusd_epi32
#define _mm256_dpbusd_epi32 ::tok256::dpbusd256
#undef _mm256_castsi256_si128
#define _mm256_castsi256_si128 ::tok256::low128
#undef _mm256_extracti128_si256
#define _mm256_extracti128_si256 ::tok256::extract128
// The kernels' intrinsics only: the byte tile's assembly (f32_bytes_batch512) runs natively.
#define QNT_WO_EMULATED 1
#include "kernels/wo/wo_x86.hpp"
#include "kernels/wo/blk_x86.hpp"
#undef QNT_WO_EMULATED
#if defined(QNT_TEST_DEFINED_F)
#undef __AVX512F__
#endif
#if defined(QNT_TEST_DEFINED_VNNI)
#undef __AVX512VNNI__
#endif
#if defined(QNT_TEST_DEFINED_VL)
#undef __AVX512VL__
#endif

#include "capi/boundary.hpp"
#include "core/context.hpp"
#include "ops/prepared.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

// The f32 kernel with 16-entry vpermps (and byte weights' batches in tiles of 8 rows), and the
// int8 and block-dot kernels with vpdpbusd.
const qnt::kern::WoKernels kEmulated{"emulated_avx512_vnni", &qnt::kern::wo::f32_512,
                                     &qnt::kern::wo::int8_vnni, &qnt::kern::wo::dot512,
                                     &qnt::kern::wo::dequant512, true, true, nullptr,
                                     &qnt::kern::wo::f32_batch512, false, &qnt::kern::wo::blk_vnni,
                                     &qnt::kern::wo::f32_batch512_takes,
                                     &qnt::kern::wo::f32_one_range512};
// The same with batches of 8 rows or more dequantized first (the tables' other choice).
const qnt::kern::WoKernels kEmulatedDequant{"emulated_avx512_vnni_dequant", &qnt::kern::wo::f32_512,
                                            &qnt::kern::wo::int8_vnni, &qnt::kern::wo::dot512,
                                            &qnt::kern::wo::dequant512, true, true};

struct H {
  qnt_tensor *t = nullptr;
  qnt_qparams *q = nullptr;
  H() = default;
  H(const H &) = delete;
  H &operator=(const H &) = delete;
  ~H() {
    qnt_tensor_destroy(t);
    qnt_qparams_destroy(q);
  }
};

bool same(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, 4) == 0;
}

void check(std::mt19937 &rng, qnt_dtype d, qnt_granularity g, int64_t block, bool affine,
           int64_t M, int64_t N, int64_t K, int64_t mode, bool positive = false) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(N * K)), x(static_cast<size_t>(M * K));
  for (auto &v : w) v = 0.05f * normal(rng);
  for (auto &v : x) v = positive ? 3.0f + std::fabs(normal(rng)) : normal(rng);
  if (M > 1) x[static_cast<size_t>(K + K / 2)] = std::numeric_limits<float>::quiet_NaN();
  if (M > 2)
    for (int64_t k = 0; k < K; ++k) x[static_cast<size_t>(2 * K + k)] = 0.0f;
  const int64_t ws[2] = {N, K}, xs[2] = {M, K}, ys[2] = {M, N};
  H tw, wq, tx, y1, y2;
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, ws, 2, nullptr, w.data(), 4 * w.size(), &tw.t), QNT_OK);
  if (d == QNT_DTYPE_NF4) {
    ASSERT_EQ(qnt_calibrate_codebook(nullptr, tw.t, d, g, 1, block, &wq.q), QNT_OK);
  } else {
    ASSERT_EQ(qnt_calibrate_minmax(nullptr, tw.t, d, affine ? QNT_SCHEME_AFFINE : QNT_SCHEME_SYMMETRIC,
                                   g, g == QNT_GRANULARITY_PER_AXIS ? 0 : 1, block, &wq.q),
              QNT_OK);
  }
  ASSERT_EQ(qnt_tensor_create(d, ws, 2, wq.q, &wq.t), QNT_OK);
  ASSERT_EQ(qnt_quantize(nullptr, tw.t, wq.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_create_from_data(QNT_DTYPE_F32, xs, 2, nullptr, x.data(), 4 * x.size(), &tx.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, ys, 2, nullptr, &y1.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, ys, 2, nullptr, &y2.t), QNT_OK);
  qnt::Context ctx;
  ctx.requested_threads = 1 + static_cast<int>(N % 2);
  const qnt::Tensor &tw8 = qnt::capi::tensor_of(wq.t, "w");
  const qnt::Tensor &txx = qnt::capi::tensor_of(tx.t, "x");
  auto ref = qnt::ops::prepare_linear_weight_only_with(ctx, tw8, nullptr, mode, nullptr);
  ref->run(ctx, txx, qnt::capi::tensor_of(y1.t, "y"));
  std::vector<float> a(static_cast<size_t>(M * N)), b(a.size());
  ASSERT_EQ(qnt_tensor_copy_to(y1.t, a.data(), 4 * a.size()), QNT_OK);
  for (const qnt::kern::WoKernels *table : {&kEmulated, &kEmulatedDequant}) {
    if (table == &kEmulatedDequant && (mode != QNT_WEIGHT_ONLY_F32 || M < 8)) continue;
    auto emu = qnt::ops::prepare_linear_weight_only_with(ctx, tw8, nullptr, mode, table);
    emu->run(ctx, txx, qnt::capi::tensor_of(y2.t, "y"));
    ASSERT_EQ(qnt_tensor_copy_to(y2.t, b.data(), 4 * b.size()), QNT_OK);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(same(a[i], b[i])) << table->name << " " << qnt_dtype_name(d) << " gran " << g
                                    << " block " << block << " M " << M << " N " << N << " K " << K
                                    << " mode " << mode << " at " << i << ": " << b[i] << " vs " << a[i];
    }
  }
}

TEST(WoEmulatedAvx512, KernelsMatchTheReference) {
  std::mt19937 rng(5);
  struct F {
    qnt_dtype d;
    qnt_granularity g;
    int64_t block;
    bool affine;
  };
  const F f32_formats[] = {{QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 32, false},
                           {QNT_DTYPE_U4, QNT_GRANULARITY_PER_BLOCK, 64, true},
                           {QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 16, false},
                           {QNT_DTYPE_U4, QNT_GRANULARITY_PER_AXIS, 0, true},
                           {QNT_DTYPE_I8, QNT_GRANULARITY_PER_BLOCK, 32, false},
                           {QNT_DTYPE_U8, QNT_GRANULARITY_PER_AXIS, 0, true}};
  const F int8_formats[] = {{QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 32, false},
                            {QNT_DTYPE_U4, QNT_GRANULARITY_PER_BLOCK, 32, true},
                            {QNT_DTYPE_U4, QNT_GRANULARITY_PER_BLOCK, 128, true},
                            {QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 64, false},
                            {QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, false},
                            {QNT_DTYPE_U8, QNT_GRANULARITY_PER_BLOCK, 64, true},
                            {QNT_DTYPE_I8, QNT_GRANULARITY_PER_BLOCK, 256, true},
                            {QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 256, false},
                            {QNT_DTYPE_I4, QNT_GRANULARITY_PER_AXIS, 0, false}};
  for (int64_t K : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{127}, int64_t{128},
                    int64_t{129}, int64_t{256}, int64_t{300}, int64_t{384}, int64_t{640}}) {
    for (const F &f : f32_formats)
      for (int64_t M : {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{9}})
        check(rng, f.d, f.g, f.block, f.affine, M, 1 + K % 9, K, QNT_WEIGHT_ONLY_F32);
    // Batches in tiles of 8 rows (bytes from 8 rows at blocks of 16 or 32, else from 16; 4-bit
    // codes in blocks of 16-64 from 16), the other rows 4 at a time.
    for (const F &f : f32_formats)
        for (int64_t M : {int64_t{16}, int64_t{21}})
          check(rng, f.d, f.g, f.block, f.affine, M, 1 + K % 9, K, QNT_WEIGHT_ONLY_F32);
    for (const F &f : int8_formats)
      for (int64_t M : {int64_t{1}, int64_t{3}, int64_t{6}})
        check(rng, f.d, f.g, f.block, f.affine, M, 1 + K % 9, K, QNT_WEIGHT_ONLY_INT8_ACT);
  }
  // The block-dot mode: its tiles of 1 row x 4 panels, up to 4 rows x 3 panels and the single
  // panels after them (N = 70: five panels of 16, the last partial; 200: thirteen), and groups
  // of 8 rows before the 4 x 3 tiles of the rest (M = 11, 19): varying zero points' 8 x 1
  // tiles, symmetric int4's and NF4's 8 x 2 (the odd last panel 8 x 1).
  for (int64_t K : {int64_t{1}, int64_t{33}, int64_t{128}, int64_t{300}})
    for (const F &f : int8_formats)
      for (int64_t M : {int64_t{1}, int64_t{5}, int64_t{11}, int64_t{19}})
        for (int64_t N : {int64_t{1} + K % 9, int64_t{70}, int64_t{200}})
          check(rng, f.d, f.g, f.block, f.affine, M, N, K, QNT_WEIGHT_ONLY_INT8_BLOCK);
  // The batch kernel's slices of 16 units: 33 units (B = 32: one chunk a unit), 18 (B = 64),
  // and per-row i8 (one unit of 17 chunks), at 2 to 4 rows.
  for (int64_t K : {int64_t{1100}, int64_t{2100}})
    for (const F &f : int8_formats)
      for (int64_t M : {int64_t{2}, int64_t{4}, int64_t{7}})
        check(rng, f.d, f.g, f.block, f.affine, M, 5, K, QNT_WEIGHT_ONLY_INT8_ACT);
  // One unit of 131 chunks (per-row i8, K = 8370) with positive activations: a lane's sum of
  // qx passes 32767, so the zero-point term must be a 32-bit product.
  check(rng, QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, false, 2, 3, 8370, QNT_WEIGHT_ONLY_INT8_ACT, true);
  check(rng, QNT_DTYPE_U8, QNT_GRANULARITY_PER_TENSOR, 0, true, 3, 3, 8370, QNT_WEIGHT_ONLY_INT8_ACT, true);
}

// The per-token mode's AVX-512 VNNI row kernel (token_rows_vnni, 4 features and 1) against the
// plain C++ kernel, on the packed layout directly: 1 to 40 groups, random codes (0..2) and
// activations, and the extremes (every code 2 with qx 127, every code 0 with qx -127: the
// largest sums of c * qx, which the final - xsum brings back).
TEST(WoEmulatedAvx512, TokenRowsMatchTheGenericKernel) {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> code(0, 2), act(-127, 127);
  for (size_t groups : {size_t{1}, size_t{2}, size_t{7}, size_t{32}, size_t{40}})
    for (int extreme = 0; extreme < 3; ++extreme) {
      const size_t row_bytes = 32 * groups, feats = 4;
      std::vector<uint8_t> w(feats * row_bytes);
      std::vector<int8_t> qx(128 * groups);
      for (auto &b : w) {
        if (extreme == 0)
          b = static_cast<uint8_t>(code(rng) << 6 | code(rng) << 4 | code(rng) << 2 | code(rng));
        else
          b = extreme == 1 ? 0xAA : 0x00;  // codes 2, or 0
      }
      int32_t xsum = 0;
      for (auto &v : qx) {
        v = static_cast<int8_t>(extreme == 0 ? act(rng) : extreme == 1 ? 127 : -127);
        xsum += v;
      }
      std::vector<int32_t> want(feats), got4(feats, -1), got1(feats, -1);
      qnt::kern::wo_token_generic(w.data(), row_bytes, groups, feats, qx.data(), qx.size(), 1, &xsum,
                                  want.data(), feats);
      const uintptr_t ahead = qnt::kern::wo::token_ahead(w.data(), row_bytes);
      qnt::kern::wo::token_rows_vnni<4>(w.data(), row_bytes, groups, qx.data(), xsum, got4.data(), ahead);
      for (size_t f = 0; f < feats; ++f)
        qnt::kern::wo::token_rows_vnni<1>(w.data() + f * row_bytes, row_bytes, groups, qx.data(), xsum,
                                          got1.data() + f, ahead);
      ASSERT_EQ(got4, want) << "groups " << groups << " extreme " << extreme;
      ASSERT_EQ(got1, want) << "groups " << groups << " extreme " << extreme;
    }
}

}  // namespace

#endif  // __x86_64__
