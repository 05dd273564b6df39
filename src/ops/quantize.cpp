#include "ops/quantize.hpp"

#include "core/error.hpp"
#include "hw/machine.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/registry.hpp"
#include "ops/common.hpp"
#include "ops/device_ops.hpp"
#include "ops/parallel.hpp"
#include "ops/runs.hpp"

namespace qnt::ops {
namespace {

// Elements per task; a multiple of 64 so that no byte of packed output is shared by two tasks
// and the sub-byte kernels start their tasks on whole bytes.
constexpr size_t kGrain = 65536;

// Whether an op that reads and writes this many bytes should write with non-temporal stores:
// when its data is larger than the last-level cache (32 MiB where the machine does not say).
bool streaming(size_t bytes) {
  size_t llc = hw::machine().cache_bytes[3];
  if (llc == 0) llc = size_t{32} << 20;
  return bytes > llc;
}

// Quantizes x[0 .. end - begin) into elements [begin, end) of out.
void quantize_range(const kern::KernelSet &ks, const ref::QuantSpec &spec, const kern::Format &f,
                    const float *x, uint8_t *out, size_t begin, size_t end) {
  for_each_run(spec.layout, begin, end, [&](size_t first, size_t n, size_t g, int kind) {
    ks.quantize[f.dtype][kind](x + (first - begin), out, first, n, spec.scales + g,
                               spec.zero_points + g, f);
  });
}

}  // namespace

kern::Format format_of(const ref::QuantSpec &s, qnt_dtype dtype) {
  kern::Format f;
  f.dtype = dtype;
  f.code = s.code;
  f.bits = s.bits;
  f.is_signed = s.is_signed;
  f.qmin = s.qmin;
  f.qmax = s.qmax;
  f.block = static_cast<size_t>(s.layout.block);
  return f;
}

void dequantize_range(const kern::KernelSet &ks, const ref::QuantSpec &spec,
                      const kern::Format &f, const uint8_t *in, float *x, size_t begin,
                      size_t end) {
  for_each_run(spec.layout, begin, end, [&](size_t first, size_t n, size_t g, int kind) {
    ks.dequantize[f.dtype][kind](in, first, x + (first - begin), n, spec.scales + g,
                                 spec.zero_points + g, f);
  });
}

void quantize(const Context &ctx, const Tensor &x, Tensor &y) {
  require_activation(x, "x");
  const ref::QuantSpec spec = quantized_spec(y, "y");
  require_same_shape(x, "x", y, "y");
  require_writable(y, "y");
  require_disjoint(y, x, "y", "x");
  const Place where = op_place({{&x, "x"}, {&y, "y"}});
  if (!where.is_cpu()) {
    if (x.element_count() > 0) device_convert(ctx, where, QNT_CUDA_QUANTIZE, x, y, nullptr, &spec);
    return;
  }
  kern::Format f = format_of(spec, y.dtype());
  f.stream = streaming(x.byte_size() + y.byte_size());
  const kern::KernelSet &ks = ctx.kernels();
  uint8_t *out = y.data();
  if (x.dtype() != QNT_DTYPE_F32) {
    // 16-bit floats: widened exactly, a piece at a time (a multiple of 64, in L1).
    const qnt_dtype xd = x.dtype();
    const uint8_t *in = x.data();
    parallel_for(ctx.threads(), x.element_count(), kGrain, [&](size_t b, size_t e) {
      constexpr size_t kPiece = 2048;
      alignas(64) float buf[kPiece];
      for (size_t piece = b; piece < e; piece += kPiece) {
        const size_t end = piece + kPiece < e ? piece + kPiece : e;
        widen_floats(xd, in + 2 * piece, buf, end - piece);
        quantize_range(ks, spec, f, buf, out, piece, end);
      }
    });
  } else {
    const auto *in = reinterpret_cast<const float *>(x.data());
    parallel_for(ctx.threads(), x.element_count(), kGrain,
                 [&](size_t b, size_t e) { quantize_range(ks, spec, f, in + b, out, b, e); });
  }
  clear_tail_bits(y);
}

void dequantize(const Context &ctx, const Tensor &q, Tensor &y) {
  const ref::QuantSpec spec = quantized_spec(q, "q");
  require_activation(y, "y");
  require_same_shape(q, "q", y, "y");
  require_writable(y, "y");
  require_disjoint(y, q, "y", "q");
  const Place where = op_place({{&q, "q"}, {&y, "y"}});
  if (!where.is_cpu()) {
    if (q.element_count() > 0)
      device_convert(ctx, where, QNT_CUDA_DEQUANTIZE, q, y, &spec, nullptr);
    return;
  }
  kern::Format f = format_of(spec, q.dtype());
  f.stream = streaming(q.byte_size() + y.byte_size());
  const kern::KernelSet &ks = ctx.kernels();
  const uint8_t *in = q.data();
  if (y.dtype() != QNT_DTYPE_F32) {
    // 16-bit floats: the float32 values rounded to nearest even, a piece at a time.
    const qnt_dtype yd = y.dtype();
    uint8_t *out = y.data();
    parallel_for(ctx.threads(), q.element_count(), kGrain, [&](size_t b, size_t e) {
      constexpr size_t kPiece = 2048;
      alignas(64) float buf[kPiece];
      for (size_t piece = b; piece < e; piece += kPiece) {
        const size_t end = piece + kPiece < e ? piece + kPiece : e;
        dequantize_range(ks, spec, f, in, buf, piece, end);
        narrow_floats(yd, buf, out + 2 * piece, end - piece);
      }
    });
    return;
  }
  auto *out = reinterpret_cast<float *>(y.data());
  parallel_for(ctx.threads(), q.element_count(), kGrain,
               [&](size_t b, size_t e) { dequantize_range(ks, spec, f, in, out + b, b, e); });
}

void requantize(const Context &ctx, const Tensor &src, Tensor &dst) {
  const ref::QuantSpec from = quantized_spec(src, "src");
  const ref::QuantSpec to = quantized_spec(dst, "dst");
  require_same_shape(src, "src", dst, "dst");
  require_writable(dst, "dst");
  require_disjoint(dst, src, "dst", "src");
  const Place where = op_place({{&src, "src"}, {&dst, "dst"}});
  if (!where.is_cpu()) {
    if (src.element_count() > 0)
      device_convert(ctx, where, QNT_CUDA_REQUANTIZE, src, dst, &from, &to);
    return;
  }
  const kern::Format ff = format_of(from, src.dtype());
  const kern::Format tf = format_of(to, dst.dtype());
  const kern::KernelSet &ks = ctx.kernels();
  const uint8_t *in = src.data();
  uint8_t *out = dst.data();
  parallel_for(ctx.threads(), src.element_count(), kGrain, [&](size_t b, size_t e) {
    // Through float32, a piece at a time (a multiple of 64, in L1), so nothing is allocated.
    constexpr size_t kPiece = 2048;
    alignas(64) float buf[kPiece];
    for (size_t piece = b; piece < e; piece += kPiece) {
      const size_t end = piece + kPiece < e ? piece + kPiece : e;
      dequantize_range(ks, from, ff, in, buf, piece, end);
      quantize_range(ks, to, tf, buf, out, piece, end);
    }
  });
  clear_tail_bits(dst);
}

}  // namespace qnt::ops
