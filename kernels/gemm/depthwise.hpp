// The depthwise convolution's inner loop (GemmKernel::depthwise), written once as plain C++ and
// compiled in each ISA's translation unit with its own flags, where the compiler vectorizes it
// over the channels; internal linkage, so that no two units share a symbol.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::kern {
namespace {

// acc[c] = sum over the taps t with x[t] != null of (x[t][c] - zx) * w[t * C + c], for c < C,
// x[t][c] read as i8 (Signed) or u8. Each product is at most 255 * 255 in magnitude (exact in
// int32); the sum wraps modulo 2^32 as the header's rule says (uint32 arithmetic). Channels go
// in chunks of kChunk whose sums stay in registers over all the taps.
template <bool Signed>
void depthwise_t(const uint8_t *const *x, size_t taps, int32_t zx, const int16_t *w, size_t C,
                 int32_t *acc) noexcept {
  constexpr size_t kChunk = 64;
  for (size_t c0 = 0; c0 < C; c0 += kChunk) {
    const size_t n = C - c0 < kChunk ? C - c0 : kChunk;
    uint32_t a[kChunk] = {};
    for (size_t t = 0; t < taps; ++t) {
      if (x[t] == nullptr) continue;  // outside the image: x = zx adds nothing
      const uint8_t *xt = x[t] + c0;
      const int16_t *wt = w + t * C + c0;
      if (n == kChunk) {
        for (size_t c = 0; c < kChunk; ++c) {
          const int32_t v = (Signed ? static_cast<int32_t>(static_cast<int8_t>(xt[c]))
                                    : static_cast<int32_t>(xt[c])) - zx;
          a[c] += static_cast<uint32_t>(v * static_cast<int32_t>(wt[c]));
        }
      } else {
        for (size_t c = 0; c < n; ++c) {
          const int32_t v = (Signed ? static_cast<int32_t>(static_cast<int8_t>(xt[c]))
                                    : static_cast<int32_t>(xt[c])) - zx;
          a[c] += static_cast<uint32_t>(v * static_cast<int32_t>(wt[c]));
        }
      }
    }
    for (size_t c = 0; c < n; ++c) acc[c0 + c] = static_cast<int32_t>(a[c]);
  }
}

void depthwise(const uint8_t *const *x, size_t taps, bool is_signed, int32_t zx,
               const int16_t *w, size_t C, int32_t *acc) noexcept {
  if (is_signed)
    depthwise_t<true>(x, taps, zx, w, C, acc);
  else
    depthwise_t<false>(x, taps, zx, w, C, acc);
}

}  // namespace
}  // namespace qnt::kern
