// The portable GEMM micro-tile: plain C++ over the packed layouts of gemm.hpp, in uint32 so
// that the wrap-around is defined; the compiler vectorizes it for the base ISA (SSE2, NEON).
#include "kernels/gemm/depthwise.hpp"
#include "kernels/gemm/gemm.hpp"

namespace qnt::kern {
namespace {

constexpr int kMR = 4;

void generic_tile(const uint8_t *a, const int8_t *b, size_t panel_stride, size_t groups, int rows,
                  int panels, int32_t *c, size_t ldc) noexcept {
  (void)panel_stride;
  (void)panels;  // np is 1
  uint32_t acc[kMR][kGemmPanel] = {};
  for (size_t g = 0; g < groups; ++g) {
    const int8_t *bg = b + g * 64;
    const uint8_t *ag = a + g * kMR * 4;
    for (int r = 0; r < kMR; ++r) {
      const uint8_t *ar = ag + 4 * r;
      for (int j = 0; j < kGemmPanel; ++j) {
        const int32_t s = ar[0] * bg[4 * j] + ar[1] * bg[4 * j + 1] + ar[2] * bg[4 * j + 2] +
                          ar[3] * bg[4 * j + 3];  // |s| <= 4 * 255 * 128: no overflow
        acc[r][j] += static_cast<uint32_t>(s);
      }
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < kGemmPanel; ++j) c[r * ldc + j] = static_cast<int32_t>(acc[r][j]);
}

}  // namespace

void xnor_generic(const uint64_t *a, size_t rows, const uint64_t *b, size_t words, int32_t k,
                  int32_t *out, size_t ld) noexcept {
  for (size_t r = 0; r < rows; ++r)
    for (int j = 0; j < kXnorNR; ++j) {
      const uint64_t *x = a + r * words, *y = b + static_cast<size_t>(j) * words;
      uint64_t n = 0;
      for (size_t w = 0; w < words; ++w) n += static_cast<uint64_t>(__builtin_popcountll(x[w] ^ y[w]));
      out[r * ld + static_cast<size_t>(j)] = xnor_result(k, n);
    }
}

const GemmKernel kGenericGemm{"generic", kMR,    1,       4,        &generic_tile, nullptr,
                               nullptr,   nullptr, 0,       nullptr,  false,         nullptr,
                               nullptr,   &depthwise};

}  // namespace qnt::kern
