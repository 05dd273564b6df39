// dtype traits and the public enum values (pinned: renumbering breaks the ABI).
#include "core/dtype.hpp"
#include "core/error.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

namespace {

static_assert(QNT_OK == 0 && QNT_ERR_INVALID_ARGUMENT == 1 && QNT_ERR_NULL_POINTER == 2 &&
                  QNT_ERR_OUT_OF_MEMORY == 3 && QNT_ERR_UNSUPPORTED == 4 &&
                  QNT_ERR_SHAPE_MISMATCH == 5 && QNT_ERR_DTYPE_MISMATCH == 6 &&
                  QNT_ERR_BUFFER_TOO_SMALL == 7 && QNT_ERR_OVERFLOW == 8 &&
                  QNT_ERR_INVALID_QPARAMS == 9 && QNT_ERR_NO_DEVICE == 10 && QNT_ERR_INTERNAL == 11,
              "qnt_status values are part of the ABI");
static_assert(QNT_DTYPE_F32 == 1 && QNT_DTYPE_I32 == 2 && QNT_DTYPE_I8 == 3 && QNT_DTYPE_U8 == 4 &&
                  QNT_DTYPE_I16 == 5 && QNT_DTYPE_U16 == 6 && QNT_DTYPE_I4 == 7 &&
                  QNT_DTYPE_U4 == 8 && QNT_DTYPE_NF4 == 9 && QNT_DTYPE_BINARY == 10 &&
                  QNT_DTYPE_TERNARY == 11,
              "qnt_dtype values are part of the ABI");

struct Expected {
  qnt_dtype d;
  const char *name;
  int bits;
  int32_t qmin, qmax, sym_zp;
};

TEST(DType, TraitsOfEveryDtype) {
  const Expected all[] = {
      {QNT_DTYPE_I32, "i32", 32, INT32_MIN, INT32_MAX, 0},
      {QNT_DTYPE_I8, "i8", 8, -128, 127, 0},
      {QNT_DTYPE_U8, "u8", 8, 0, 255, 128},
      {QNT_DTYPE_I16, "i16", 16, -32768, 32767, 0},
      {QNT_DTYPE_U16, "u16", 16, 0, 65535, 32768},
      {QNT_DTYPE_I4, "i4", 4, -8, 7, 0},
      {QNT_DTYPE_U4, "u4", 4, 0, 15, 8},
      {QNT_DTYPE_TERNARY, "ternary", 2, -1, 1, 0},
  };
  for (const Expected &e : all) {
    const qnt::DTypeInfo &info = qnt::dtype_info(e.d);
    EXPECT_STREQ(info.name, e.name);
    EXPECT_EQ(info.bits, e.bits) << e.name;
    EXPECT_EQ(qnt_dtype_bits(e.d), e.bits) << e.name;
    EXPECT_STREQ(qnt_dtype_name(e.d), e.name);
    int32_t lo = 0, hi = 0;
    ASSERT_EQ(qnt_dtype_range(e.d, &lo, &hi), QNT_OK) << e.name;
    EXPECT_EQ(lo, e.qmin) << e.name;
    EXPECT_EQ(hi, e.qmax) << e.name;
    EXPECT_EQ(qnt::symmetric_zero_point(info), e.sym_zp) << e.name;
  }
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_F32), 32);
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_NF4), 4);
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_BINARY), 1);
}

TEST(DType, InvalidValues) {
  EXPECT_EQ(qnt_dtype_bits(static_cast<qnt_dtype>(0)), 0);
  EXPECT_EQ(qnt_dtype_bits(static_cast<qnt_dtype>(16)), 0);
  EXPECT_EQ(qnt_dtype_bits(static_cast<qnt_dtype>(-3)), 0);
  EXPECT_STREQ(qnt_dtype_name(static_cast<qnt_dtype>(99)), "invalid");
  EXPECT_EQ(qnt::find_dtype(0), nullptr);
  try {
    (void)qnt::dtype_info(static_cast<qnt_dtype>(42));
    FAIL() << "expected an error";
  } catch (const qnt::Error &e) {
    EXPECT_EQ(e.status(), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("42"), std::string::npos);
  }
  int32_t lo = 5, hi = 6;
  EXPECT_EQ(qnt_dtype_range(QNT_DTYPE_F32, &lo, &hi), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_dtype_range(QNT_DTYPE_NF4, &lo, &hi), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lo, 5);  // outputs untouched on failure
  EXPECT_EQ(hi, 6);
}

}  // namespace
