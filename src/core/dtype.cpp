#include "core/dtype.hpp"

#include "core/error.hpp"

#include <cstdint>
#include <limits>

namespace qnt {
namespace {

constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

// Indexed by the enum value; entry 0 is unused (0 is not a dtype, so zeroed memory is caught).
constexpr DTypeInfo kTable[] = {
    {static_cast<qnt_dtype>(0), "invalid", 0, Rule::Float, false, 0, 0, false},
    {QNT_DTYPE_F32, "f32", 32, Rule::Float, true, 0, 0, false},
    {QNT_DTYPE_I32, "i32", 32, Rule::Integer, true, kI32Min, kI32Max, false},
    {QNT_DTYPE_I8, "i8", 8, Rule::Integer, true, -128, 127, false},
    {QNT_DTYPE_U8, "u8", 8, Rule::Integer, false, 0, 255, false},
    {QNT_DTYPE_I16, "i16", 16, Rule::Integer, true, -32768, 32767, false},
    {QNT_DTYPE_U16, "u16", 16, Rule::Integer, false, 0, 65535, false},
    {QNT_DTYPE_I4, "i4", 4, Rule::Integer, true, -8, 7, false},
    {QNT_DTYPE_U4, "u4", 4, Rule::Integer, false, 0, 15, false},
    {QNT_DTYPE_NF4, "nf4", 4, Rule::NF4, false, 0, 15, true},
    {QNT_DTYPE_BINARY, "binary", 1, Rule::Binary, false, 0, 1, true},
    {QNT_DTYPE_TERNARY, "ternary", 2, Rule::Integer, true, -1, 1, true},
    {QNT_DTYPE_F16, "f16", 16, Rule::Float, true, 0, 0, false},
    {QNT_DTYPE_BF16, "bf16", 16, Rule::Float, true, 0, 0, false},
    {QNT_DTYPE_LOG4, "log4", 4, Rule::Log2, false, 0, 15, true},
    {QNT_DTYPE_LOG8, "log8", 8, Rule::Log2, false, 0, 255, true},
};
constexpr int32_t kCount = static_cast<int32_t>(sizeof(kTable) / sizeof(kTable[0]));

}  // namespace

const DTypeInfo *find_dtype(int32_t raw) noexcept {
  if (raw <= 0 || raw >= kCount) return nullptr;
  return &kTable[raw];
}

const DTypeInfo &dtype_info(qnt_dtype d, const char *what) {
  const DTypeInfo *info = find_dtype(static_cast<int32_t>(d));
  if (info == nullptr)
    fail(QNT_ERR_INVALID_ARGUMENT, what, " = ", static_cast<int32_t>(d), " is not a qnt_dtype");
  return *info;
}

int32_t symmetric_zero_point(const DTypeInfo &info) noexcept {
  if (info.is_signed || info.zero_point_fixed) return 0;
  return static_cast<int32_t>(int64_t{1} << (info.bits - 1));
}

}  // namespace qnt
