// qparams validation, group layouts, tensor sizes and storage.
#include "core/error.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace {

qnt_status status_of(void (*fn)()) {
  try {
    fn();
    return QNT_OK;
  } catch (const qnt::Error &e) {
    return e.status();
  }
}

TEST(QParams, ValidationOfScalesAndZeroPoints) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    qnt_dtype d;
    float s;
    int32_t z;
    qnt_status want;
  } cases[] = {
      {QNT_DTYPE_I8, 0.1f, 0, QNT_OK},
      {QNT_DTYPE_I8, 0.0f, 0, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, -0.1f, 0, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, -0.0f, 0, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, nan, 0, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, inf, 0, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, std::numeric_limits<float>::denorm_min(), 0, QNT_OK},
      {QNT_DTYPE_I8, 1.0f, 127, QNT_OK},
      {QNT_DTYPE_I8, 1.0f, 128, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I8, 1.0f, -129, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_U8, 1.0f, 255, QNT_OK},
      {QNT_DTYPE_U8, 1.0f, -1, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_U4, 1.0f, 15, QNT_OK},
      {QNT_DTYPE_U4, 1.0f, 16, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I4, 1.0f, -8, QNT_OK},
      {QNT_DTYPE_I4, 1.0f, 8, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_U16, 1.0f, 65535, QNT_OK},
      {QNT_DTYPE_I16, 1.0f, 32768, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_I32, 1.0f, INT32_MIN, QNT_OK},
      {QNT_DTYPE_NF4, 1.0f, 0, QNT_OK},
      {QNT_DTYPE_NF4, 1.0f, 1, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_BINARY, 1.0f, 1, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_TERNARY, 1.0f, 1, QNT_ERR_INVALID_QPARAMS},
      {QNT_DTYPE_F32, 1.0f, 0, QNT_ERR_INVALID_QPARAMS},
      {static_cast<qnt_dtype>(77), 1.0f, 0, QNT_ERR_INVALID_ARGUMENT},
  };
  for (const Case &c : cases) {
    qnt_qparams *qp = nullptr;
    EXPECT_EQ(qnt_qparams_create_per_tensor(c.d, c.s, c.z, &qp), c.want)
        << qnt_dtype_name(c.d) << " s=" << c.s << " z=" << c.z;
    EXPECT_EQ(qp != nullptr, c.want == QNT_OK);
    qnt_qparams_destroy(qp);
  }
}

TEST(QParams, SchemeFollowsTheZeroPoints) {
  const float s[2] = {0.5f, 0.25f};
  const int32_t z128[2] = {128, 128}, z3[2] = {128, 3};
  auto u8 = qnt::QParams::create(QNT_DTYPE_U8, QNT_GRANULARITY_PER_AXIS, 0, 0, s, nullptr, 2);
  EXPECT_TRUE(u8->symmetric());
  EXPECT_EQ(u8->zero_points()[1], 128);
  EXPECT_TRUE(
      qnt::QParams::create(QNT_DTYPE_U8, QNT_GRANULARITY_PER_AXIS, 0, 0, s, z128, 2)->symmetric());
  EXPECT_FALSE(
      qnt::QParams::create(QNT_DTYPE_U8, QNT_GRANULARITY_PER_AXIS, 0, 0, s, z3, 2)->symmetric());
  EXPECT_EQ(qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, 0, s, nullptr, 2)
                ->zero_points()[0],
            0);
}

TEST(QParams, ArgumentErrors) {
  EXPECT_EQ(status_of([] {
              const float s = 1;
              qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 8, 0, &s, nullptr, 1);
            }),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] {
              const float s = 1;
              qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_BLOCK, 0, 0, &s, nullptr, 1);
            }),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] {
              const float s = 1;
              qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, 0, &s, nullptr, 0);
            }),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] {
              qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, 0, nullptr, nullptr,
                                   3);
            }),
            QNT_ERR_NULL_POINTER);
  EXPECT_EQ(status_of([] {
              const float s = 1;
              qnt::QParams::create(QNT_DTYPE_I8, static_cast<qnt_granularity>(9), 0, 0, &s, nullptr,
                                   1);
            }),
            QNT_ERR_INVALID_ARGUMENT);
}

TEST(Layout, PerAxisAndPerBlockIndices) {
  const int64_t shape[3] = {2, 5, 3};
  const qnt::GroupLayout axis1 = qnt::make_layout(QNT_GRANULARITY_PER_AXIS, 1, 0, shape, 3);
  EXPECT_EQ(axis1.groups, 5u);
  // element (o, d, i) is at (o * 5 + d) * 3 + i; its group is d
  EXPECT_EQ(axis1.group_of((1 * 5 + 4) * 3 + 2), 4u);
  EXPECT_EQ(axis1.group_of((0 * 5 + 2) * 3 + 0), 2u);

  const qnt::GroupLayout neg = qnt::make_layout(QNT_GRANULARITY_PER_AXIS, -1, 0, shape, 3);
  EXPECT_EQ(neg.groups, 3u);
  EXPECT_EQ(neg.group_of(7), 1u);

  // blocks of 2 along axis 1 (size 5): ceil(5/2) = 3 blocks, the last one short
  const qnt::GroupLayout blk = qnt::make_layout(QNT_GRANULARITY_PER_BLOCK, 1, 2, shape, 3);
  EXPECT_EQ(blk.blocks, 3);
  EXPECT_EQ(blk.groups, 2u * 3u * 3u);
  // element (1, 4, 2): block 2, group (1 * 3 + 2) * 3 + 2 = 17
  EXPECT_EQ(blk.group_of((1 * 5 + 4) * 3 + 2), 17u);
  // element (0, 3, 1): block 1, group (0 * 3 + 1) * 3 + 1 = 4
  EXPECT_EQ(blk.group_of((0 * 5 + 3) * 3 + 1), 4u);

  const qnt::GroupLayout t = qnt::make_layout(QNT_GRANULARITY_PER_TENSOR, 0, 0, shape, 3);
  EXPECT_EQ(t.groups, 1u);
  EXPECT_EQ(t.group_of(29), 0u);
}

TEST(Tensor, ElementCountsAndByteSizes) {
  const int64_t s5[1] = {5};
  const int64_t s7x3[2] = {7, 3};
  struct Case {
    qnt_dtype d;
    const int64_t *shape;
    size_t rank;
    size_t count, bytes;
  } cases[] = {
      {QNT_DTYPE_F32, s5, 1, 5, 20},    {QNT_DTYPE_I8, s7x3, 2, 21, 21},
      {QNT_DTYPE_U16, s5, 1, 5, 10},    {QNT_DTYPE_I4, s5, 1, 5, 3},
      {QNT_DTYPE_NF4, s7x3, 2, 21, 11}, {QNT_DTYPE_BINARY, s7x3, 2, 21, 3},
      {QNT_DTYPE_TERNARY, s5, 1, 5, 2}, {QNT_DTYPE_I32, nullptr, 0, 1, 4},
      {QNT_DTYPE_BINARY, s5, 1, 5, 1},  {QNT_DTYPE_U4, s7x3, 2, 21, 11},
  };
  for (const Case &c : cases) {
    qnt::Tensor t(c.d, c.shape, c.rank, nullptr, qnt::Tensor::Storage::Zeroed, nullptr, 0);
    EXPECT_EQ(t.element_count(), c.count) << qnt_dtype_name(c.d);
    EXPECT_EQ(t.byte_size(), c.bytes) << qnt_dtype_name(c.d);
  }
}

TEST(Tensor, OverflowAndBadShapes) {
  EXPECT_EQ(status_of([] {
              const int64_t s[3] = {int64_t{1} << 31, int64_t{1} << 31, 4};
              qnt::checked_element_count(s, 3);
            }),
            QNT_ERR_OVERFLOW);
  EXPECT_EQ(status_of([] {
              const int64_t s[2] = {INT64_MAX, 2};
              qnt::checked_element_count(s, 2);
            }),
            QNT_ERR_OVERFLOW);
  EXPECT_EQ(status_of([] {
              const int64_t s[2] = {3, -1};
              qnt::checked_element_count(s, 2);
            }),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([] {
              const int64_t s[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
              qnt::checked_element_count(s, 9);
            }),
            QNT_ERR_UNSUPPORTED);
  // A zero dimension makes an empty tensor, but the other dimensions stay bounded: each, and
  // their product, at most QNT_MAX_ELEMENTS (an empty [0, 2^62] used to be accepted, and then
  // overflowed the size arithmetic of the ops).
  const int64_t empty[2] = {0, QNT_MAX_ELEMENTS};
  EXPECT_EQ(qnt::checked_element_count(empty, 2), 0u);
  EXPECT_EQ(status_of([] {
              const int64_t s[2] = {0, int64_t{1} << 62};
              qnt::checked_element_count(s, 2);
            }),
            QNT_ERR_OVERFLOW);
  EXPECT_EQ(status_of([] {
              const int64_t s[3] = {int64_t{1} << 40, int64_t{1} << 40, 0};
              qnt::checked_element_count(s, 3);
            }),
            QNT_ERR_OVERFLOW);
  // PTRDIFF_MAX / 4 elements of f32 would need PTRDIFF_MAX bytes: refused as overflow.
  EXPECT_EQ(status_of([] {
              const int64_t s[1] = {INT64_MAX / 4};
              qnt::Tensor t(QNT_DTYPE_F32, s, 1, nullptr, qnt::Tensor::Storage::Borrow,
                            reinterpret_cast<void *>(64), SIZE_MAX);
            }),
            QNT_ERR_OVERFLOW);
}

TEST(Tensor, QParamsMustFitTheShape) {
  const float s3[3] = {1, 2, 3};
  auto axis0 = qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, 0, s3, nullptr, 3);
  const int64_t ok[2] = {3, 4}, bad[2] = {4, 3};
  qnt::Tensor t(QNT_DTYPE_I8, ok, 2, axis0, qnt::Tensor::Storage::Zeroed, nullptr, 0);
  EXPECT_EQ(t.qparams().get(), axis0.get());
  try {
    qnt::Tensor u(QNT_DTYPE_I8, bad, 2, axis0, qnt::Tensor::Storage::Zeroed, nullptr, 0);
    FAIL();
  } catch (const qnt::Error &e) {
    EXPECT_EQ(e.status(), QNT_ERR_SHAPE_MISMATCH);
  }
  try {
    qnt::Tensor u(QNT_DTYPE_U8, ok, 2, axis0, qnt::Tensor::Storage::Zeroed, nullptr, 0);
    FAIL();
  } catch (const qnt::Error &e) {
    EXPECT_EQ(e.status(), QNT_ERR_DTYPE_MISMATCH);
  }
  try {  // axis 2 does not exist in a rank-2 tensor
    auto a2 = qnt::QParams::create(QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 2, 0, s3, nullptr, 3);
    qnt::Tensor u(QNT_DTYPE_I8, ok, 2, a2, qnt::Tensor::Storage::Zeroed, nullptr, 0);
    FAIL();
  } catch (const qnt::Error &e) {
    EXPECT_EQ(e.status(), QNT_ERR_SHAPE_MISMATCH);
  }
  // blocks of 3 along axis 1 (size 4): 2 blocks per row, 6 in all
  const float s6[6] = {1, 1, 1, 1, 1, 1};
  auto blk = qnt::QParams::create(QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 1, 3, s6, nullptr, 6);
  qnt::Tensor b(QNT_DTYPE_I4, ok, 2, blk, qnt::Tensor::Storage::Zeroed, nullptr, 0);
  EXPECT_EQ(b.byte_size(), 6u);
}

TEST(Tensor, OwnedStorageIsAlignedAndZeroed) {
  const int64_t s[1] = {13};
  qnt::Tensor t(QNT_DTYPE_F32, s, 1, nullptr, qnt::Tensor::Storage::Zeroed, nullptr, 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  for (size_t i = 0; i < t.byte_size(); ++i) EXPECT_EQ(t.data()[i], 0);
}

}  // namespace
