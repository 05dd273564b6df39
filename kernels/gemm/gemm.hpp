// The integer GEMM's kernels: the packed layouts they share, and one ISA's micro-tile.
//
// All sums are exact: every product is formed exactly and accumulated in int32 with wrap-around
// (modulo 2^32), so the order of the additions cannot change a bit. kernels/README.md lists the
// instructions each kernel uses and why they are exact.
//
// Operands are shifted to one signedness so that one instruction set covers i8 and u8 on both
// sides: the kernels multiply a' (unsigned, 0..255) by b' (signed, -128..127), where
//   a' = a        (u8 a)       or a + 128 (i8 a, stored as a ^ 0x80),
//   b' = b        (i8 b)       or b - 128 (u8 b, stored as b ^ 0x80).
// The op then turns the raw sums P = sum_k a' b' into sum_k (a - za)(b - zb) with the row sums
// of a' and the column sums of b' (modulo 2^32):
//   sum (a' - za')(b' - zb') = P - zb' * Sa' - za' * Sb' + K * za' * zb',
//   with za' = za + 128 [i8 a], zb' = zb - 128 [u8 b].
//
// Packed B (one layout for every ISA; the prepared operators hold it): K is padded with zeros
// to a multiple of 4 (groups of kGroup), N to a multiple of 16 (panels of kPanel columns).
// Panel p holds columns 16p .. 16p + 15; its group g is 64 bytes at
//   b + p * panel_stride + g * 64 (panel_stride = groups * 64),
// column j's four values (k = 4g .. 4g + 3) at bytes 4j .. 4j + 3: one 512-bit vector, the
// operand of vpdpbusd.
//
// Packed A: micro-panels of `mr` rows (the kernel's), padded with zero rows. In group g, row r
// takes `a_bytes` bytes at a + (g * mr + r) * a_bytes:
//   a_bytes 4: a'(4g), a'(4g+1), a'(4g+2), a'(4g+3) as bytes (VNNI's operand);
//   a_bytes 8: the same as four int16, even ks first: a'(4g), a'(4g+2), a'(4g+1), a'(4g+3)
//              (the split kernels multiply int16 pairs with vpmaddwd).
// Or, for kernels with a_rows (a_bytes 4): the micro-panel's rows one after the other, row r's
// a' values at a + r * gemm_row_stride(groups) (zero past K): the tile broadcasts each row's 4
// bytes from there, so that packing a row is writing it once (a convolution's window is
// gathered straight into its place) instead of interleaving it 4 bytes at a time. The stride
// is one cache line more than the row: rows of 4 KiB would all fall in one L1 set, with the B
// panels (64-byte multiples of 4 KiB apart too), more streams than the set has ways.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::kern {

constexpr int kGemmPanel = 16;  // columns per panel of packed B
constexpr int kGemmGroup = 4;   // k per group

// The distance between the rows of an a_rows micro-panel (see above).
constexpr size_t gemm_row_stride(size_t groups) { return groups * 4 + 64; }

// c[r * ldc + j] = sum over the groups of a'(r, k) * b'(k, j), wrapping, for r < rows (<= mr)
// and j < 16 * panels (panels <= np); a is one micro-panel, b the first panel. c has room for
// mr rows: a tile may compute the panel's rows past `rows` too (zero rows of A) and store them.
using GemmTileFn = void (*)(const uint8_t *a, const int8_t *b, size_t panel_stride, size_t groups,
                            int rows, int panels, int32_t *c, size_t ldc) noexcept;

// What an epilogue makes of exact accumulators (src/ops/epilogue.hpp states the rules; the
// vector epilogue gives their bits): mode 0 Int32, 1 Requantize, 2 Float, 3 FloatQuantize.
struct GemmEpilogueArgs {
  int mode = 0;
  const int32_t *bias_i32 = nullptr;  // per channel, or null
  const float *bias_f32 = nullptr;    // per channel, or null
  const float *multiplier = nullptr;  // per channel (modes 1 to 3)
  // Mode 2: when not null, row r's multiplier is row_scales[r] * multiplier[c].
  const float *row_scales = nullptr;
  float row_scale = 0.0f;  // (the current row's, inside the kernel)
  float sy = 1.0f;
  int32_t zy = 0, qmin = 0, qmax = 0;
  bool relu = false;
  // Every multiplier and f32 bias is finite, so that modes 1 and 3 can make no NaN (a finite
  // product or sum overflows to an infinity at worst): a kernel may skip its NaN handling.
  bool finite = false;
};
// For rows r < rows: elements i0 + r * y_ld + j, j < n, of y (4 bytes each in modes 0 and 2,
// 1 byte otherwise) from acc[r * acc_ld + j], the channel of element j being c0 + j.
using GemmEpilogueFn = void (*)(const GemmEpilogueArgs &e, const int32_t *acc, size_t acc_ld,
                                int rows, size_t c0, size_t n, uint8_t *y, size_t i0,
                                size_t y_ld) noexcept;

// acc[r * ldc + j] = acc - zb[j] * row_sum[r] + col[j] * za[r] (modulo 2^32), for r < rows and
// j < cols: the raw sums of a tile turned into exact accumulators (see above; src/ops/gemm.hpp).
// zb null: every zb[j] is 0 (symmetric i8 weights), so that term is left out and row_sum is not
// read (the driver computes no row sums then).
using GemmCorrectFn = void (*)(const int32_t *zb, const int32_t *col, int cols,
                               const int32_t *row_sum, const int32_t *za, int rows, int32_t *acc,
                               size_t ldc) noexcept;

// Packs B's interior for the driver (src/ops/gemm.cpp handles the edges): panels p0 .. p1, all
// 16 of whose columns exist, and groups 0 .. groups, all 4 of whose k exist. B is [K, N]
// (pack_kn: row k at src + k * ld) or [N, K] (pack_nk: row n at src + n * ld); bytes are XORed
// with flip (0x80 for u8 b: b' = b - 128); panel p's group g goes to data + p * panel_stride +
// g * 64; colsum[(p - p0) * 16 + j] += the sum of b' over the groups of column 16p + j
// (wrapping). stream: B is large, and a packer may write data with streaming (non-temporal)
// stores, fenced before it returns.
using GemmPackFn = void (*)(const uint8_t *src, size_t ld, size_t p0, size_t p1, size_t groups,
                            uint8_t flip, int8_t *data, size_t panel_stride, uint32_t *colsum,
                            bool stream) noexcept;

// Depthwise convolution (src/ops/conv.cpp), one output pixel: acc[c] = the sum over its taps t
// of (x[t][c] - zx) * w[t * C + c] for the C channels (x[t]: the tap's input pixel, null outside
// the image; i8 when is_signed, else u8; w: each tap's weights less their zero points), wrapping
// modulo 2^32 (kernels/gemm/depthwise.hpp).
using GemmDepthwiseFn = void (*)(const uint8_t *const *x, size_t taps, bool is_signed, int32_t zx,
                                 const int16_t *w, size_t C, int32_t *acc) noexcept;

// Depthwise on 8-bit weights (VNNI), one output pixel: acc[c] = sum over the taps of
// x'[t][c] * v[t][c] - corr[c], wrapping, where x' is the tap's input byte (XORed with 0x80 when
// is_signed: the u8 operand of vpdpbusd) or `pad` (zx') for a tap outside the image (null),
// v = w - zw as int8 (the prepared op checks that every one fits), and corr[c] = zx' * sum_t
// v[t][c]: so acc[c] = sum_t (x'[t][c] - zx') * v[t][c], the same sums as GemmDepthwiseFn's.
// w8 is laid out in blocks of 64 channels and groups of 4 taps (gemm_depthwise8_index): block b's
// group q is 256 bytes at w8 + (b * tap_groups + q) * 256, four vectors of 16 channels x 4 taps,
// in the order in which unpacking four tap vectors by bytes then by words leaves the channels:
// vector k's dword d of 128-bit lane L is channel 64b + 16L + 4k + d, its byte i tap 4q + i.
// Channels past C and taps past `taps` are zeros.
using GemmDepthwise8Fn = void (*)(const uint8_t *const *x, size_t taps, bool is_signed,
                                  uint8_t pad, const int8_t *w8, const int32_t *corr, size_t C,
                                  int32_t *acc) noexcept;
// The byte of w8 that holds channel c's weight of tap t (see above).
constexpr size_t gemm_depthwise8_index(size_t c, size_t t, size_t taps) {
  return ((c / 64) * ((taps + 3) / 4) + t / 4) * 256 + ((c % 16) / 4) * 64 + ((c % 64) / 16) * 16 +
         (c % 4) * 4 + t % 4;
}

// Depthwise convolution by rows, for stride 1 and dilation 1 along W (src/ops/conv.cpp): the
// channels go in blocks of dw_block, and each input row is expanded once, per block, into
// entries that the row kernel reads in place for every output row that uses it (no shuffle
// per tap and pixel). An entry holds, for each channel c < dw_block of the block, dw_group
// values (of consecutive columns) of dw_bytes bytes at byte (c * dw_group + q) * dw_bytes:
//  - dw_bytes 1 (VNNI): bytes x' = x (u8) or x XOR 0x80 (i8), the u8 operand of vpdpbusd, and
//    zx' = (zx + 128 for i8) & 0xFF where the column is outside the image; weights w - zw as
//    int8 (the op checks that every one fits);
//  - dw_bytes 2: int16 values x - zx, and 0 outside the image; weights w - zw as int16.
// dw_expand writes entries e < n of one input row (pixel iw at line + iw * C, channel c0 + c
// at + c; line null: a row outside the image): entry e holds columns iw0 + e + q, q <
// dw_group (a column outside [0, W) counts as outside the image); channels c0 + c >= c0 + cn
// hold any value.
using GemmDwExpandFn = void (*)(const uint8_t *line, size_t W, size_t C, size_t c0, size_t cn,
                                std::ptrdiff_t iw0, size_t n, bool is_signed, int32_t zx,
                                uint8_t *out) noexcept;
// dw_row: one output row of one block: for o < ow and c < dw_block,
//   acc[o * acc_ld + c] = start[c] + sum over i < kh, j < jg, q < dw_group of
//     value(rows[i], entry o + j * dw_group, c, q) * w[((i * jg + j) * dw_block + c) * dw_group + q]
// wrapping modulo 2^32 (w: int8 or int16 by dw_bytes). With start = -zx' * (the channel's sum
// of w) for dw_bytes 1, and 0 for dw_bytes 2, and zero weights past the kernel's width, the sums
// are GemmDepthwiseFn's: sum over the taps of (x - zx) * (w - zw).
using GemmDwRowFn = void (*)(const uint8_t *const *rows, size_t kh, size_t jg, const void *w,
                             const int32_t *start, size_t ow, int32_t *acc, size_t acc_ld) noexcept;

// Direct convolution, one full tile (mr rows x np panels, src/ops/conv.cpp): c[r * ldc + j] =
// c[j] (the first row's values on entry: the zero-point term, the same for every row) + the sum
// over taps t < taps and groups g < tap_groups of a'(r, t, g) * b'(t, g, j), wrapping, where row
// r's four a' bytes of group g of tap t are at
//   a + r * row_stride + tap_off[2 * t] + 4 * g
// (an output pixel's window read in place from a padded NHWC image: no im2col) and the group's
// B vectors at b + tap_off[2 * t + 1] + 64 * g (+ panel_stride per panel): a tile may run any
// subset of the filter's taps, such as those inside the image at a border. All mr rows are
// computed, so every row's bytes must be readable; the caller keeps the rows it wants. b is the
// tile's first panel of packed B.
using GemmConvTileFn = void (*)(const uint8_t *a, size_t row_stride, const size_t *tap_off,
                                size_t taps, size_t tap_groups, const int8_t *b,
                                size_t panel_stride, int32_t *c, size_t ldc) noexcept;

// The direct convolution's epilogue folded into its next tile (GemmKernel::conv_fused): jobs of
// one row of the previous tile (its kGemmConvJobVectors * 16 outputs), each its int32 sums
// (acc), the multipliers and f32 biases of their channels, and where their bytes go. The rules
// are gemm_epilogue's modes 1 (divide false: v = (float)acc * m) and 3 (divide: v = ((float)acc
// * m + bias) / sy) for finite multipliers and biases, no relu and no i32 bias: v clamped to
// [lo, hi] = [qmin - zy, qmax - zy], rounded to nearest even, plus zy, its low byte stored. Bit
// for bit the epilogue's (the same instructions, the same order). Each job carries the
// constants (the assembly reads them beside the pointers).
constexpr int kGemmConvJobVectors = 4;
struct GemmConvJob {
  const int32_t *acc;
  uint8_t *out;
  const float *mult;
  const float *bias;  // (divide)
  float lo, hi, sy;
  int32_t zy;
};
static_assert(sizeof(GemmConvJob) == 48 && offsetof(GemmConvJob, lo) == 32 &&
                  offsetof(GemmConvJob, zy) == 44,
              "the conv tile's assembly reads jobs at these offsets");
struct GemmConvJobs {
  const GemmConvJob *next = nullptr, *end = nullptr;  // the jobs not done yet
  bool divide = false;
};
// GemmConvTileFn that also does one of the jobs at the start of each of its taps, where
// the multiplies leave the pipes of the conversions, compares and stores idle (jobs->next moves
// on); the caller runs the epilogue for the rows of jobs left.
using GemmConvFusedFn = void (*)(const uint8_t *a, size_t row_stride, const size_t *tap_off,
                                 size_t taps, size_t tap_groups, const int8_t *b,
                                 size_t panel_stride, int32_t *c, size_t ldc,
                                 GemmConvJobs *jobs) noexcept;

// The binary GEMM (qnt_binary_matmul): rows of bits in uint64 words (element k of a row in bit
// k % 64 of word k / 64), `words` a row, a multiple of 4, zero past K in both operands. For
// r < rows (a multiple of kXnorMR) and j < kXnorNR: out[r * ld + j] = k - 2 * pop, where pop
// is the number of bits set in a_r XOR b_j over the row (a_r at a + r * words, b_j at
// b + j * words) and k the row's K: the sum of the products of the +-1 values, exact (pop <= K
// <= 2^31 - 1, so the result is in [-K, K]). The op passes its i32 output itself as `out`.
constexpr int kXnorMR = 2, kXnorNR = 3;
using GemmXnorFn = void (*)(const uint64_t *a, size_t rows, const uint64_t *b, size_t words,
                            int32_t k, int32_t *out, size_t ld) noexcept;

// k - 2 * pop for a count of at most k (kernels' last step).
inline int32_t xnor_result(int32_t k, uint64_t pop) noexcept {
  return static_cast<int32_t>(int64_t{k} - 2 * static_cast<int64_t>(pop));
}

// The binary GEMM with b's columns across the vector (AVX-512 VPOPCNTDQ, KernelSet::xnor_cols):
// b packed in groups of kXnorColGroup columns, each group `words` steps of kXnorColGroup words
// (word w of column 8g + j at b[(g * words + w) * 8 + j]), zero past K and in the padding
// columns; a as for GemmXnorFn. For r < rows (any) and c < 8 * groups (groups <= 3):
// out[r * ld + c] = k - 2 * pop(a_r XOR b_c), as xnor_result. Each lane of its sums is one
// output, so no sum is reduced across lanes.
constexpr int kXnorColGroup = 8;
using GemmXnorColsFn = void (*)(const uint64_t *a, size_t rows, const uint64_t *b, size_t groups,
                                size_t words, int32_t k, int32_t *out, size_t ld) noexcept;

// The portable binary GEMM: __builtin_popcountll per word (kernels/gemm/generic.cpp).
void xnor_generic(const uint64_t *a, size_t rows, const uint64_t *b, size_t words, int32_t k,
                  int32_t *out, size_t ld) noexcept;

struct GemmKernel {
  const char *name;
  int mr;       // rows of A per micro-tile
  int np;       // panels of B per micro-tile
  int a_bytes;  // 4 or 8: packed A's bytes per row and group (see above)
  GemmTileFn tile;
  GemmEpilogueFn epilogue;  // null: the scalar rules
  // Optional, for kernels that split B's bytes (the int16 kernels): unpack_b lays `panels`
  // panels of packed B out once in the kernel's own form (unpacked_bytes per group and panel),
  // and tile_unpacked multiplies from that form (its b, panel_stride = groups *
  // unpacked_bytes), so that a B panel shared by many rows of A is split once, not per tile.
  void (*unpack_b)(const int8_t *b, size_t panel_stride, size_t groups, int panels,
                   int8_t *out) noexcept = nullptr;
  GemmTileFn tile_unpacked = nullptr;
  int unpacked_bytes = 0;
  GemmCorrectFn correct = nullptr;  // null: the driver's scalar loop
  bool a_rows = false;              // packed A as plain rows (a_bytes 4; see above)
  GemmPackFn pack_kn = nullptr;     // null: the driver's SSE2 / portable packers
  GemmPackFn pack_nk = nullptr;
  GemmDepthwiseFn depthwise = nullptr;  // null: depthwise convs run as grouped GEMMs
  GemmDepthwise8Fn depthwise8 = nullptr;  // null: `depthwise` for every weight
  GemmConvTileFn conv_tile = nullptr;     // null: convolutions gather their windows (im2col)
  // Optional: the kernel for a B whose every b' is -1, 0 or +1 (ternary and binary weights, or
  // 8-bit weights that hold only those values, with zero points 0 for i8): the same packed B,
  // its own tile and packed A; it shares this kernel's epilogue, correct and packers. Null:
  // this kernel multiplies every B.
  const GemmKernel *ternary = nullptr;
  GemmXnorFn xnor = nullptr;  // null: xnor_generic
  // Optional: depthwise convolution by rows (see GemmDwRowFn); null: `depthwise` per pixel.
  GemmDwExpandFn dw_expand = nullptr;
  GemmDwRowFn dw_row = nullptr;
  int dw_block = 0, dw_group = 0, dw_bytes = 0;
  // Optional: conv_tile's form for 4 rows, so that a line of the direct convolution is cut into
  // tiles of mr and of 4 rows with fewer rows dropped (26 = 3 * 6 + 2 * 4).
  GemmConvTileFn conv_tile4 = nullptr;
  // Optional: conv_tile and conv_tile4 with the previous tile's epilogue folded in (both or
  // neither; the epilogue's instructions are those of this kernel's `epilogue`).
  GemmConvFusedFn conv_fused = nullptr;
  GemmConvFusedFn conv_fused4 = nullptr;
};

// The portable kernel (plain C++, vectorized by the compiler): mr 4, np 1, a_bytes 4.
extern const GemmKernel kGenericGemm;

}  // namespace qnt::kern
