// Traits of the element types: width, integer range, and which quantization rule applies.
#pragma once

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>

namespace qnt {

// Which rule maps floats to q for a dtype.
enum class Rule {
  Float,    // f32, f16, bf16: not quantized types
  Integer,  // the ONNX rule, q = saturate(round(x / s) + zp)
  NF4,      // nearest NF4 code of x / absmax
  Binary,   // sign
  Log2,     // sign and the nearest power of two of |x| / scale in the log domain
};

struct DTypeInfo {
  qnt_dtype id;
  const char *name;
  int bits;
  Rule rule;
  bool is_signed;
  int32_t qmin;  // range of q (Integer rule); for NF4, Binary and Log2 the range of the stored code
  int32_t qmax;
  bool zero_point_fixed;  // NF4, binary, ternary, log: the zero point is always 0
};

// The traits of a raw enum value, or nullptr if it is not a qnt_dtype.
const DTypeInfo *find_dtype(int32_t raw) noexcept;

// The traits of d; throws QNT_ERR_INVALID_ARGUMENT (naming `what`) if d is not a qnt_dtype.
const DTypeInfo &dtype_info(qnt_dtype d, const char *what = "dtype");

// The zero point of the symmetric scheme: 0 for signed types, 2^(bits-1) for unsigned ones.
int32_t symmetric_zero_point(const DTypeInfo &info) noexcept;

}  // namespace qnt
