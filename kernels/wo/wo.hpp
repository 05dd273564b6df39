// The weight-only linear layer's kernels (qnt_linear_weight_only and its prepared form): the
// packed layouts of the weights (the f32 and int8-activation modes here; the block-dot and
// per-token modes below), and the kernel signatures of a kernel table.
//
// Packed weights. Output features are packed in panels of kWoPanel, each panel contiguous
// (one stream from memory), the last one padded with zero features:
//  - 4-bit codes (i4, u4, NF4): per panel, groups of 128 elements of K, and in a group 64 bytes
//    per feature: byte i holds element i in its low nibble and element 64 + i in its high one.
//    i4 codes are stored offset by 8 (q + 8), so that every 4-bit code c is in [0, 15] and its
//    integer value is c - zc, zc = z + 8 (i4) or z (u4). A 16-byte load gives two 16-element
//    chunks (low and high nibbles); a 64-byte load gives 64 elements in order per nibble.
//    Or, in the f32 mode with a kernel table whose `lane_codes` is set (the AVX-512 and AVX2
//    tables), the lane layout: in a group's 64 bytes per feature, byte 4j + r (dword j, its byte
//    r) holds element 16r + j in its low nibble and element 64 + 16r + j in its high one. Read
//    as 16 dwords (or as two ymm of 8: lanes 0-7 and 8-15), the group shifted right by 8r (or
//    8r + 4) has chunk r's (or 4 + r's) codes in the low 4 bits of lanes 0-15, in order: the
//    index operand of vpermps, with no byte widening.
//  - bytes (i8, u8; the int8-activation mode, and the f32 mode with a table whose `f32_bytes` is
//    set): per panel, chunks of 64 elements, 64 bytes
//    per feature, stored as s8: w8 = q (i8) or q - 128 (u8), value w8 - z8 with z8 = z (i8) or
//    z - 128 (u8).
// Beside the codes, per panel: the scales, [block][kWoPanel] float32 (NF4 in the int8 mode:
// scale / 127), and, unless every block of every feature has the same one, the zero points as
// bytes [block][kWoPanel]: zc for 4-bit codes, z8 + 128 for bytes.
//
// Blocks run along K with B elements (rows with one scale count as one block of K, and B is
// then the padded K). The f32 kernels need B % 16 == 0; the int8 kernels need B == 32 or
// B % 64 == 0 and group the 64-element chunks into units: one unit per block (B % 64 == 0),
// or one unit per chunk holding blocks 2u (lanes 0-7) and 2u + 1 (lanes 8-15) when B == 32.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::kern {

constexpr int kWoPanel = 4;    // output features per panel
constexpr int kWoMaxRows = 4;  // rows of x per kernel call

enum class WoCode : int { Int4 = 0, NF4 = 1, Byte = 2 };

// One panel of packed weights and its shape.
struct WoPanelArgs {
  WoCode code = WoCode::Int4;
  int64_t K = 0;
  int64_t block = 0;      // B (see above)
  size_t chunks = 0;      // 64-element chunks of K: ceil(K / 64)
  const uint8_t *codes = nullptr;
  const float *scales = nullptr;  // [block][kWoPanel]
  const uint8_t *zps = nullptr;   // [block][kWoPanel], or null: every zero point is zp_const
  int32_t zp_const = 0;           // zc (4-bit) or z8 + 128 (bytes); NF4: unused
  // The int8 mode: chunks per unit (1 when B == 32 or B == 64), whether a unit holds two blocks
  // (B == 32), and the lanes the last unit touches (bit l: lane l).
  size_t unit_chunks = 1;
  bool half_units = false;
  uint32_t last_unit_lanes = 0xFFFF;
  // Bytes that the kernel requests into L2 while it reads this panel (a later panel of the same
  // stream), or null: spread over its loop where it can (wo_x86.hpp's batch-1 kernels and the
  // AVX2 f32-mode kernels), else all at once on entry (wo_prefetch_all).
  const uint8_t *prefetch = nullptr;
  size_t prefetch_bytes = 0;
};

// Quantized activations of the int8 mode, kWoMaxRows rows at most (see wo_prepare_rows).
struct WoActs {
  const int8_t *qx = nullptr;   // [row][chunks * 64], zero past K
  size_t qx_stride = 0;
  const float *sxv = nullptr;   // [row][unit][16]: each lane's activation scale
  const int32_t *sums = nullptr;  // [row][unit][16]: each lane's sum of qx over the unit
  size_t unit_stride = 0;       // floats (and int32) per row: units * 16
};

// f32 mode: out[r * kWoPanel + p] = the canonical dot product of x row r (x + r * ldx, K
// floats) with feature p's dequantized weights (4-bit codes only), before the bias.
using WoF32Fn = void (*)(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows,
                         float *out) noexcept;
// f32 mode, batch 1, `panels` consecutive panels: the first's arguments in `first` (its
// prefetch fields unused), each next one `stride` bytes further (codes, scales, zero points);
// out[i * kWoPanel + p] = panel i's f32 result for x (one row). While running panel i it
// requests panel i + ahead into L2 when ahead > 0 and i + ahead < reach (reach >= panels: the
// panels of the stream from `first` on), as the driver's per-panel calls with
// WoPanelArgs::prefetch do. The bits of f32 called panel by panel.
using WoF32RangeFn = void (*)(const WoPanelArgs &first, size_t stride, size_t panels, size_t ahead,
                              size_t reach, const float *x, float *out) noexcept;
// int8 mode: out[r * kWoPanel + p] = the mode's sum (qnt.h), before the bias.
using WoInt8Fn = void (*)(const WoPanelArgs &w, const WoActs &x, size_t rows,
                          float *out) noexcept;
// Canonical float dot products of `rows` rows of x (stride ldx) with `feats` rows of K floats
// of w (stride ldw): out[r * ldo + f]. Register-blocked over rows and features. The f32 mode's
// path for batches (on a dequantized panel), and for the formats the f32 kernel does not take.
using WoDotFn = void (*)(const float *x, size_t ldx, size_t rows, const float *w, size_t ldw,
                         size_t feats, int64_t K, float *out, size_t ldo) noexcept;
// f32 mode, 4-bit codes (and bytes with a table whose f32_bytes is set): the panel's kWoPanel
// features dequantized by the dequantize rule into out[p * ldo + k] for k < round_up(K, 16)
// (values past K are finite and never used).
using WoDequantFn = void (*)(const WoPanelArgs &w, float *out, size_t ldo) noexcept;
// f32 mode, 4-bit codes (and bytes with a table whose f32_bytes is set), a batch:
// out[r * ldo + p] for `rows` rows of x (stride ldx) and the panel's kWoPanel features, the
// bits of dequant followed by dot, using scratch (wo_batch_scratch(K) floats, 32-byte aligned:
// the AVX2 kernel dequantizes the features kWoSlice elements of K at a time there, the AVX-512
// kernels keep their tiles' sums there, and for bytes the panel's scales per chunk);
// w.prefetch, if set, is requested over the call.
using WoBatchFn = void (*)(const WoPanelArgs &w, const float *x, size_t ldx, size_t rows, float *out,
                           size_t ldo, float *scratch) noexcept;
constexpr size_t kWoSlice = 512;
constexpr size_t wo_batch_scratch(int64_t K) noexcept {
  const size_t sliced = kWoPanel * kWoSlice;
  const size_t tables = 8 * kWoPanel * 16 + 2 * kWoPanel * (static_cast<size_t>(K) / 16 + 1);
  return sliced > tables ? sliced : tables;
}

// The per-token mode (QNT_WEIGHT_ONLY_INT8_TOKEN: ternary and binary weights). Packed weights:
// per output feature a row of `groups` = ceil(K / 128) groups of 32 bytes; byte j of group g
// holds, in bits 6 - 2s and 7 - 2s (s = 0..3), the code c = v + 1 (0, 1 or 2; v the weight's
// value -1, 0, +1) of element 128g + 32s + j, and c = 1 (v = 0) past K. This is bitnet.cpp's
// I2_S block (x86, 128 elements) row by row, so an I2_S row is already a packed row.
// For `rows` rows of activations r (qx + r * qx_stride: 128 * groups int8 values in [-127, 127],
// 0 past K, whose sum is xsum[r]) and the `feats` rows of weights w, w + row_bytes, ...:
// acc[r * acc_ld + f] = sum over k < 128 * groups of qx_r[k] * (c[f][k] - 1), exact. Kernels
// may compute sum(qx * c) - xsum: each pair of products is at most 508 in magnitude, so
// vpmaddubsw cannot saturate on these operands.
using WoTokenFn = void (*)(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats,
                           const int8_t *qx, size_t qx_stride, size_t rows, const int32_t *xsum,
                           int32_t *acc, size_t acc_ld) noexcept;

// The block-dot mode (QNT_WEIGHT_ONLY_INT8_BLOCK). Packed weights: output features in panels of
// kWoBlkPanel, each panel contiguous, the last one padded with features whose codes, zero points
// and scales are 0. Per panel, K in steps of 8 elements (4-bit codes) or 4 (bytes), 64 bytes a
// step: byte 4f + i holds feature f's code of element 8t + i in its low nibble and of element
// 8t + 4 + i in its high one (4-bit), or of element 4t + i (bytes). So a step read as 16 dwords
// is vpdpbusd's unsigned operand for 16 features and 4 elements (the low nibbles, then the high
// ones), and the activations' 4 bytes are its broadcast signed operand. The codes are unsigned:
// c = q + 8 (i4), q (u4, u8), q + 128 (i8), the NF4 index (whose operand is kNF4Int8[c] + 128,
// through a table); past K they are 0. After the codes: the scales [block][kWoBlkPanel] float32
// (NF4: scale / 127), then the zero points zc [block][kWoBlkPanel] as bytes, where v = operand -
// zc: zc = z + 8 (i4), z (u4, u8), z + 128 (i8), 128 (NF4).
// Blocks: B elements, a multiple of the step (one block of K when the parameters are per row).
constexpr int kWoBlkPanel = 16;

struct WoBlkArgs {
  WoCode code = WoCode::Int4;
  size_t steps = 0;        // per panel: ceil(K / 8) (4-bit) or ceil(K / 4) (bytes)
  size_t block_steps = 0;  // steps per block
  size_t blocks = 0;       // per row
  size_t code_bytes = 0;   // per panel: 64 * steps
  size_t panel_stride = 0; // bytes: codes, scales, zero points
  const uint8_t *data = nullptr;  // panel 0
  int32_t zc_const = -1;   // zc of every feature and block, or -1: they vary (read the bytes)
};

// The activations of the block-dot mode: rows of qx (stride qx_stride bytes, zero past K up to
// the panels' steps), and per row and block sx and minus the sum of the block's qx, times
// w.zc_const when that is set (stride blk_stride elements; wrapped to int32): the block sums'
// starting value (times zc when the zero points vary).
struct WoBlkActs {
  const int8_t *qx = nullptr;
  size_t qx_stride = 0;
  const float *sx = nullptr;
  const int32_t *nsum = nullptr;
  size_t blk_stride = 0;
};

// out[r * ldo + kWoBlkPanel * (p - p0) + f] = the mode's sum s (before the bias) of row r and
// feature f of panel p, for p0 <= p < p1 and r < rows.
using WoBlkFn = void (*)(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows,
                         float *out, size_t ldo) noexcept;

// The block-dot mode's kernel in plain C++ (kernels/wo/generic.cpp).
void wo_blk_generic(const WoBlkArgs &w, size_t p0, size_t p1, const WoBlkActs &x, size_t rows,
                    float *out, size_t ldo) noexcept;

struct WoKernels {
  const char *name;
  WoF32Fn f32;
  WoInt8Fn int8;
  WoDotFn dot;
  WoDequantFn dequant;
  bool lane_codes = false;  // the f32 mode's 4-bit codes in the lane layout (above)
  bool f32_bytes = false;   // f32 and dequant take byte weights (i8, u8: W8A16) too
  WoTokenFn token = nullptr;  // the per-token mode; null: the generic kernel's
  WoBatchFn f32_batch = nullptr;  // the f32 mode's batches; null: dequant, then dot
  // Without f32_batch: whether batches of 8 rows or more dequantize each panel, then dot (else
  // the f32 kernel runs them 4 rows at a time). The AVX-512 tables clear it: on an Emerald
  // Rapids Xeon (one thread, 4096^2, batch 8 and 16) the f32 kernel took 1.3-2.9x less time,
  // at 0.47-0.62 of the FMA peak against 0.25-0.40 (the dot kernel reads every row's x from L2
  // for each panel of four features).
  bool dequant_batches = true;
  WoBlkFn blk = nullptr;  // the block-dot mode; null: the generic kernel's
  // Which batches f32_batch takes (the layer's packed weights, the rows), where that is not
  // every format it takes from 5 rows on; the others run 4 rows at a time through f32. The
  // AVX-512 tables': byte weights from 5 rows, 4-bit codes in small blocks from 16.
  bool (*f32_batch_takes)(const WoPanelArgs &w, size_t rows) noexcept = nullptr;
  WoF32RangeFn f32_one_range = nullptr;  // batch 1 over a range of panels; null: f32 per panel
};

// The per-token mode's kernel in plain C++ (kernels/wo/generic.cpp).
void wo_token_generic(const uint8_t *w, size_t row_bytes, size_t groups, size_t feats,
                      const int8_t *qx, size_t qx_stride, size_t rows, const int32_t *xsum,
                      int32_t *acc, size_t acc_ld) noexcept;

// The whole of w.prefetch requested into L2 (the driver's way, for kernels that don't spread it).
inline void wo_prefetch_all(const WoPanelArgs &w) noexcept {
  if (w.prefetch == nullptr) return;
  for (size_t off = 0; off < w.prefetch_bytes; off += 64) __builtin_prefetch(w.prefetch + off, 0, 2);
}

// w.prefetch spread over `steps` iterations of a kernel's loop: each step() requests the same
// number of lines (at least one), `share` bytes further on each time, so that the loop has no
// data-dependent branch (a request loop of 0 or 1 lines a step was mispredicted about every
// other step); the last lines may be requested twice.
struct WoPrefetcher {
  const uint8_t *at;
  size_t share = 0, lines = 0;
  WoPrefetcher(const WoPanelArgs &w, size_t steps) noexcept : at(w.prefetch) {
    if (at == nullptr || steps == 0) return;
    share = (w.prefetch_bytes + steps - 1) / steps;
    lines = (share + 63) / 64;
  }
  void step() noexcept {
    for (size_t j = 0; j < lines; ++j) __builtin_prefetch(at + 64 * j, 0, 2);
    at += share;
  }
};

// Plain C++ over the packed layouts (kernels/wo/generic.cpp), for the ISAs without their own.
extern const WoKernels kGenericWo;

}  // namespace qnt::kern
