// Scalar reference kernels of the quantized operators: integer GEMM, requantization, im2col,
// the canonical float dot product, dynamic quantization parameters. Readable first; the fast
// kernels must reproduce them bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::ref {

// A strided view of an 8-bit integer matrix: element (r, c) is data[r * row_stride +
// c * col_stride], read as int8 or uint8.
struct Int8Matrix {
  const uint8_t *data = nullptr;
  bool is_signed = false;
  int64_t row_stride = 0;
  int64_t col_stride = 1;

  int32_t at(int64_t r, int64_t c) const noexcept {
    const uint8_t v = data[r * row_stride + c * col_stride];
    return is_signed ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
  }
};

// a + b modulo 2^32, as int32 hardware adds.
int32_t wrap_add(int32_t a, int32_t b) noexcept;

// c[m * ldc + n] = sum_k (a(m, k) - za[m]) * (b(k, n) - zb[n]), exact, then wrapped to int32.
// za has M values (one per row of a), zb has N (one per column of b).
void qgemm(int64_t M, int64_t N, int64_t K, const Int8Matrix &a, const int32_t *za,
           const Int8Matrix &b, const int32_t *zb, int32_t *c, int64_t ldc);

// A constant 8-bit operand prepared once: `channels` vectors of K values (channel c's values
// contiguous at data + c * K), each with its zero point and the sum over k of (w - zw) wrapped
// to int32, so that a product needs no per-element zero point of the other operand.
struct PackedInt8 {
  const uint8_t *data = nullptr;
  bool is_signed = false;
  int64_t K = 0;
  const int32_t *zero_points = nullptr;  // per channel
  const int32_t *sums = nullptr;         // per channel
};

// The sums of PackedInt8 for `channels` vectors.
void packed_sums(const uint8_t *data, bool is_signed, int64_t channels, int64_t K,
                 const int32_t *zero_points, int32_t *sums) noexcept;

// For activation vectors r in [0, rows) (element k at act.at(r, k), zero point zact[r * zstride])
// and channels c in [c0, c1):
//   out[r * out_rs + (c - c0) * out_cs] = sum_k (act(r, k) - zact) * (w(c, k) - zw[c])
// computed as sum_k act(r, k) * (w(c, k) - zw[c]) - zact * sums[c], modulo 2^32: the same bits
// as qgemm.
void qgemm_packed(int64_t rows, const Int8Matrix &act, const int32_t *zact, int64_t zstride,
                  const PackedInt8 &w, int64_t c0, int64_t c1, int32_t *out, int64_t out_rs,
                  int64_t out_cs) noexcept;

// (sa * sb) / sy in float32: one product, one division.
float requant_multiplier(float sa, float sb, float sy) noexcept;

// saturate(round_half_to_even((float)acc * multiplier) + zy) into [qmin, qmax].
int32_t requantize(int32_t acc, float multiplier, int32_t zy, int32_t qmin, int32_t qmax) noexcept;

// (float)acc * scale, then + bias as a separate float32 addition (bias 0 adds nothing).
float acc_to_float(int32_t acc, float scale, float bias) noexcept;

// The canonical float dot product: 16 float32 partial sums, x[k] * w[k] fused-added into sum
// k % 16, then the sums added pairwise (i += i + 8, + 4, + 2, + 1).
float dot(const float *x, const float *w, int64_t K) noexcept;

// --- the weight-only layer's int8-activation mode (qnt.h, QNT_WEIGHT_ONLY_INT8_ACT) ----------

// The NF4 codebook as integers: round_half_to_even(127 * kNF4Codebook[c]).
extern const int8_t kNF4Int8[16];

// Quantizes x[0 .. K) per block of B elements: sx[j] = max |x| / 127 over block j and
// qx[k] = saturate(round_half_to_even(x[k] / sx[j])) into [-127, 127]; a block with a NaN or an
// infinity gets sx = NaN and qx = 0, a block with sx = 0 gets qx = 0.
void act_quantize_blocks(const float *x, int64_t K, int64_t B, int8_t *qx, float *sx) noexcept;

// One output of the mode: v[k] the weight integers, sw[j] the weight scale of block j.
float dot_int8_act(const int8_t *qx, const float *sx, const int32_t *v, const float *sw,
                   int64_t K, int64_t B) noexcept;
// One output of the block-dot mode (QNT_WEIGHT_ONLY_INT8_BLOCK): the same operands, one exact
// int32 dot product per block and one float sum, block by block.
float dot_int8_block(const int8_t *qx, const float *sx, const int32_t *v, const float *sw,
                     int64_t K, int64_t B) noexcept;

// ONNX DynamicQuantizeLinear's parameters for n floats (NaN skipped) and u8 range [0, qmax]
// (255; 127 for PyTorch's reduce_range): scale = (hi - lo) / qmax, zero point =
// clamp(round_half_to_even((0 - lo) / scale), 0, qmax), with lo = min(min, 0), hi = max(max, 0);
// hi == lo gives scale 1, zero point 0. Returns false if an infinity is seen.
bool dynamic_qparams(const float *x, size_t n, float *scale, int32_t *zero_point,
                     int32_t qmax = 255) noexcept;
// The same from the finite values' extremes (lo <= 0 <= hi already folded in), for callers
// that scan x with a vector kernel; false for a range too wide for float32.
bool dynamic_qparams_of_range(float lo, float hi, float *scale, int32_t *zero_point,
                              int32_t qmax = 255) noexcept;

// The geometry of one convolution, for im2col.
struct ConvGeometry {
  int64_t channels = 1;  // per group
  int64_t height = 1, width = 1;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t out_h = 1, out_w = 1;
};

// Lowers one image's channels of one group (x: [channels, height, width] bytes) to
// col[(c * kernel_h + i) * kernel_w + j][oh * out_w + ow] (bytes), writing pad_byte (the zero
// point's stored byte) where the window falls outside the image.
void im2col(const ConvGeometry &g, const uint8_t *x, uint8_t pad_byte, uint8_t *col);

}  // namespace qnt::ref
