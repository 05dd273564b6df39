#include "ops/quantize.hpp"

#include "core/error.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/parallel.hpp"

namespace qnt::ops {
namespace {

// Elements per task; a multiple of 8 so that no byte of packed output is shared by two tasks.
constexpr size_t kGrain = 16384;

}  // namespace

void quantize(const Context &ctx, const Tensor &x, Tensor &y) {
  require_float(x, "x");
  const ref::QuantSpec spec = quantized_spec(y, "y");
  require_same_shape(x, "x", y, "y");
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  const auto *in = reinterpret_cast<const float *>(x.data());
  uint8_t *out = y.data();
  parallel_for(ctx.threads(), x.element_count(), kGrain,
               [&](size_t b, size_t e) { ref::quantize(spec, in + b, out, b, e); });
  clear_tail_bits(y);
}

void dequantize(const Context &ctx, const Tensor &q, Tensor &y) {
  const ref::QuantSpec spec = quantized_spec(q, "q");
  require_float(y, "y");
  require_same_shape(q, "q", y, "y");
  require_writable(y, "y");
  require_disjoint(y, q, "y", "q");
  const uint8_t *in = q.data();
  auto *out = reinterpret_cast<float *>(y.data());
  parallel_for(ctx.threads(), q.element_count(), kGrain,
               [&](size_t b, size_t e) { ref::dequantize(spec, in, out + b, b, e); });
}

void requantize(const Context &ctx, const Tensor &src, Tensor &dst) {
  const ref::QuantSpec from = quantized_spec(src, "src");
  const ref::QuantSpec to = quantized_spec(dst, "dst");
  require_same_shape(src, "src", dst, "dst");
  require_writable(dst, "dst");
  require_disjoint(dst, src, "dst", "src");
  const uint8_t *in = src.data();
  uint8_t *out = dst.data();
  parallel_for(ctx.threads(), src.element_count(), kGrain, [&](size_t b, size_t e) {
    // Through float32, a small piece at a time, so no allocation is needed.
    constexpr size_t kPiece = 1024;
    float buf[kPiece];
    for (size_t piece = b; piece < e; piece += kPiece) {
      const size_t end = piece + kPiece < e ? piece + kPiece : e;
      ref::dequantize(from, in, buf, piece, end);
      ref::quantize(to, buf, out, piece, end);
    }
  });
  clear_tail_bits(dst);
}

}  // namespace qnt::ops
