// ggml's tensor types as GGUF stores them: their numbers, names, block sizes and bytes per block,
// and the dequantization of those qnt reads (the formulas of ggml's dequantize_row_* and of
// gguf-py's dequantize_blocks: every product and sum a single float32 operation, never fused;
// see src/io/README.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qnt::io {

struct GgmlType {
  uint32_t id;
  const char *name;
  size_t block;  // elements per block
  size_t size;   // bytes per block
  bool dequant;  // qnt dequantizes it
};

// The type with ggml number id, or nullptr.
const GgmlType *ggml_type(uint32_t id) noexcept;
// The type named name ("Q4_K"), or nullptr.
const GgmlType *ggml_type(const char *name) noexcept;

// n elements (a whole number of blocks) of type t at src, as float32 into dst.
void ggml_dequantize(const GgmlType &t, const uint8_t *src, size_t n, float *dst);

// Whether qnt writes type t from float32 (ggml_quantize).
bool ggml_quantizes(const GgmlType &t) noexcept;
// n finite floats (a whole number of blocks) as type t into dst, with the bits of ggml's
// reference quantizers (quantize_row_*_ref: the scale search, its float operations and casts, the
// f16 conversion rounding to nearest even); F16 and BF16 round to nearest even. Throws
// QNT_ERR_INVALID_ARGUMENT for a NaN or an infinity in a block type's input, or a block whose
// range overflows float32.
void ggml_quantize(const GgmlType &t, const float *x, size_t n, uint8_t *dst);

}  // namespace qnt::io
