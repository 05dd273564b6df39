// The scalar model of a 512-bit register and of the AVX-512 instructions both emulated kernel
// tests use (test_gemm_emulated.cpp, test_wo_emulated.cpp); each test adds the ones its kernels
// need. Every model follows Intel's pseudo-code of its instruction, with the int32 wrap-around.
#pragma once

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

namespace emu {
struct V {
  uint8_t b[64];
};
inline uint32_t u32(const V &v, int i) {
  uint32_t x;
  std::memcpy(&x, v.b + 4 * i, 4);
  return x;
}
inline void put32(V &v, int i, uint32_t x) { std::memcpy(v.b + 4 * i, &x, 4); }
inline V zero() { return V{}; }
inline V loadu(const void *p) {
  V v;
  std::memcpy(v.b, p, 64);
  return v;
}
inline void storeu(void *p, V v) { std::memcpy(p, v.b, 64); }
inline V set1_epi32(int32_t x) {
  V v;
  for (int i = 0; i < 16; ++i) put32(v, i, static_cast<uint32_t>(x));
  return v;
}
// VPDPBUSD: per lane, four u8 (a) x s8 (b) products added to src, wrapping.
inline V dpbusd(V src, V a, V b) {
  V r;
  for (int i = 0; i < 16; ++i) {
    uint32_t s = u32(src, i);
    for (int j = 0; j < 4; ++j)
      s += static_cast<uint32_t>(static_cast<int32_t>(a.b[4 * i + j]) *
                                 static_cast<int32_t>(static_cast<int8_t>(b.b[4 * i + j])));
    put32(r, i, s);
  }
  return r;
}
// VPMOVZXBD: 16 bytes (an SSE register, native on every x86-64) to 16 dwords.
inline V cvtepu8_epi32(__m128i x) {
  uint8_t b[16];
  std::memcpy(b, &x, 16);
  V v;
  for (int i = 0; i < 16; ++i) put32(v, i, b[i]);
  return v;
}
}  // namespace emu
