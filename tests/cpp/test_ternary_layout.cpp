// qnt_ternary_export / qnt_ternary_import (bitnet.cpp's I2_S, TL1 and TL2): exact round trips
// both ways on random weights over shapes and tilings (TL2 with and without its two-weight
// tail), hand-checked bytes of each layout, and the refusals. The bytes against bitnet.cpp's own
// conversion are checked by digests in bindings/python/tests/test_core.py.
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace qnt_test;

// A ternary [rows, cols] tensor of the values v (-1, 0, +1), scale 0.5.
void make_ternary(T &t, QP &qp, int64_t rows, int64_t cols, const std::vector<int> &v) {
  per_tensor(qp, QNT_DTYPE_TERNARY, 0.5f, 0);
  std::vector<uint8_t> bytes((v.size() + 3) / 4, 0);
  for (size_t i = 0; i < v.size(); ++i) bytes[i / 4] |= static_cast<uint8_t>((v[i] & 3) << (2 * (i % 4)));
  make_raw(t, QNT_DTYPE_TERNARY, {rows, cols}, qp.p, bytes.data(), bytes.size());
}

std::vector<uint8_t> export_bytes(qnt_ternary_layout layout, const T &w, int64_t rows, int64_t cols,
                                  const qnt_ternary_tiling *tiling) {
  size_t n = 0;
  EXPECT_EQ(qnt_ternary_layout_size(layout, rows, cols, tiling, &n), QNT_OK) << qnt_last_error_message();
  std::vector<uint8_t> out(n, 0xCD);
  EXPECT_EQ(qnt_ternary_export(layout, w.t, tiling, out.data(), out.size()), QNT_OK) << qnt_last_error_message();
  return out;
}

struct Case {
  qnt_ternary_layout layout;
  int64_t rows, cols;
  qnt_ternary_tiling tiling;
};

TEST(TernaryLayout, RoundTripsBothWays) {
  const Case cases[] = {
      {QNT_TERNARY_I2_S, 1, 128, {0, 0, 0}},      {QNT_TERNARY_I2_S, 3, 384, {0, 0, 0}},
      {QNT_TERNARY_I2_S, 2, 64, {0, 0, 0}},       // 128 weights straddling rows
      {QNT_TERNARY_TL1, 32, 128, {32, 64, 16}},   {QNT_TERNARY_TL1, 128, 512, {64, 256, 64}},
      {QNT_TERNARY_TL1, 256, 256, {256, 128, 32}},
      {QNT_TERNARY_TL2, 128, 288, {128, 96, 32}},  // whole bk tiles
      {QNT_TERNARY_TL2, 64, 416, {64, 192, 32}},   // a 32-column two-weight tail
      {QNT_TERNARY_TL2, 32, 512, {32, 96, 32}},    // a 32-column tail after 5 tiles
      {QNT_TERNARY_TL2, 32, 96, {32, 96, 32}},     // cols < 256: bitnet's size from floor divisions
  };
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> tern(-1, 1);
  for (const Case &c : cases) {
    const std::string what = "layout " + std::to_string(c.layout) + " [" + std::to_string(c.rows) + ", " +
                             std::to_string(c.cols) + "]";
    std::vector<int> v(static_cast<size_t>(c.rows * c.cols));
    for (int &e : v) e = tern(rng);
    T w;
    QP qp;
    make_ternary(w, qp, c.rows, c.cols, v);
    const qnt_ternary_tiling *tiling = c.layout == QNT_TERNARY_I2_S ? nullptr : &c.tiling;
    const std::vector<uint8_t> data = export_bytes(c.layout, w, c.rows, c.cols, tiling);
    qnt_tensor *back = nullptr;
    ASSERT_EQ(qnt_ternary_import(c.layout, data.data(), data.size(), c.rows, c.cols, tiling, 0.5f, &back), QNT_OK)
        << what << ": " << qnt_last_error_message();
    T b;
    b.t = back;
    EXPECT_EQ(bytes_of(b.t), bytes_of(w.t)) << what;
    qnt_qparams *bq = nullptr;
    ASSERT_EQ(qnt_tensor_qparams(b.t, &bq), QNT_OK);
    float s = 0;
    ASSERT_EQ(qnt_qparams_scales(bq, &s, 1), QNT_OK);
    EXPECT_EQ(s, 0.5f) << what;
    qnt_qparams_destroy(bq);
    EXPECT_EQ(export_bytes(c.layout, b, c.rows, c.cols, tiling), data) << what;
  }
}

TEST(TernaryLayout, HandCheckedBytes) {
  // I2_S: weight j of a 128-block in byte j % 32 at bits 6 - 2 (j / 32), as v + 1; the scale after.
  std::vector<int> v(128, 0);
  v[0] = 1;     // byte 0, bits 7-6: 2
  v[32] = -1;   // byte 0, bits 5-4: 0
  v[97] = 1;    // byte 1, bits 1-0: 2
  T w;
  QP qp;
  make_ternary(w, qp, 1, 128, v);
  const std::vector<uint8_t> i2 = export_bytes(QNT_TERNARY_I2_S, w, 1, 128, nullptr);
  ASSERT_EQ(i2.size(), 32u + 32u);
  EXPECT_EQ(i2[0], 0x80 | 0x00 | 0x04 | 0x01);
  EXPECT_EQ(i2[1], 0x40 | 0x10 | 0x04 | 0x02);
  EXPECT_EQ(i2[2], 0x55);
  float s = 0;
  std::memcpy(&s, i2.data() + 32, 4);
  EXPECT_EQ(s, 0.5f);
  for (size_t i = 36; i < i2.size(); ++i) EXPECT_EQ(i2[i], 0) << i;
  // TL1, one tile of 16 rows x 16 columns (bm 16, bk 16, bmm 16: by 16): byte (p, l) holds row l's
  // pairs 2p and 2p + 1 as 3 w0 + w1 + 4, the first in the high nibble.
  std::vector<int> t(16 * 16, 0);
  t[3 * 16 + 4] = 1;   // row 3, pair 2 (p 1, first): index 3 + 0 + 4 = 7
  t[3 * 16 + 7] = -1;  // row 3, pair 3 (p 1, second): 0 - 1 + 4 = 3
  T w1;
  QP q1;
  make_ternary(w1, q1, 16, 16, t);
  const qnt_ternary_tiling tl{16, 16, 16};
  const std::vector<uint8_t> tl1 = export_bytes(QNT_TERNARY_TL1, w1, 16, 16, &tl);
  ASSERT_EQ(tl1.size(), 64u);
  for (size_t i = 0; i < tl1.size(); ++i) EXPECT_EQ(tl1[i], i == 16 + 3 ? 0x73 : 0x44) << i;
}

TEST(TernaryLayout, Refusals) {
  std::vector<int> v(32 * 96, 0);
  T w;
  QP qp;
  make_ternary(w, qp, 32, 96, v);
  size_t n = 0;
  const qnt_ternary_tiling bad{32, 100, 32};
  const qnt_ternary_tiling wide{32, 384, 32};
  // bitnet.cpp's size for a 352-column tail is smaller than the content
  EXPECT_EQ(qnt_ternary_layout_size(QNT_TERNARY_TL2, 32, 736, &wide, &n), QNT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(qnt_last_error_message()).find("no TL2 form"), std::string::npos) << qnt_last_error_message();
  EXPECT_EQ(qnt_ternary_layout_size(QNT_TERNARY_TL2, 32, 400, &bad, &n), QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_ternary_layout_size(QNT_TERNARY_TL1, 32, 96, nullptr, &n), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_ternary_layout_size(7, 32, 96, nullptr, &n), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_ternary_layout_size(QNT_TERNARY_I2_S, 3, 5, nullptr, &n), QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_ternary_layout_size(QNT_TERNARY_I2_S, 32, 96, nullptr, nullptr), QNT_ERR_NULL_POINTER);
  std::vector<uint8_t> small(8);
  EXPECT_EQ(qnt_ternary_export(QNT_TERNARY_I2_S, w.t, nullptr, small.data(), small.size()), QNT_ERR_BUFFER_TOO_SMALL);
  // Import: a wrong size, a code 3, a sign on a zero triple, nonzero padding, a bad scale.
  ASSERT_EQ(qnt_ternary_layout_size(QNT_TERNARY_I2_S, 32, 96, nullptr, &n), QNT_OK);
  std::vector<uint8_t> data(n, 0x55);
  std::memset(data.data() + 32 * 96 / 4, 0, 32);
  const float one = 1.0f;
  std::memcpy(data.data() + 32 * 96 / 4, &one, 4);
  qnt_tensor *out = nullptr;
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_I2_S, data.data(), data.size() - 1, 32, 96, nullptr, 0, &out),
            QNT_ERR_SHAPE_MISMATCH);
  data[5] = 0xFF;
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_I2_S, data.data(), data.size(), 32, 96, nullptr, 0, &out),
            QNT_ERR_CORRUPT_DATA);
  data[5] = 0x55;
  data[n - 1] = 1;
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_I2_S, data.data(), data.size(), 32, 96, nullptr, 0, &out),
            QNT_ERR_CORRUPT_DATA);
  data[n - 1] = 0;
  const float neg = -1.0f;
  std::memcpy(data.data() + 32 * 96 / 4, &neg, 4);
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_I2_S, data.data(), data.size(), 32, 96, nullptr, 0, &out),
            QNT_ERR_INVALID_QPARAMS);
  EXPECT_EQ(out, nullptr);
  const qnt_ternary_tiling tl2b{64, 192, 32};
  ASSERT_EQ(qnt_ternary_layout_size(QNT_TERNARY_TL2, 64, 416, &tl2b, &n), QNT_OK);
  std::vector<uint8_t> t2(n, 0);
  for (size_t i = 0; i < static_cast<size_t>(64 * 384 / 6); ++i) t2[i] = 0;
  // all-zero magnitudes with one sign bit set: no weights give that
  t2[64 * 384 / 6] = 1;
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_TL2, t2.data(), t2.size(), 64, 416, &tl2b, 1.0f, &out), QNT_ERR_CORRUPT_DATA);
  t2[64 * 384 / 6] = 0;
  t2[n - 1] = 9;  // the padding
  EXPECT_EQ(qnt_ternary_import(QNT_TERNARY_TL2, t2.data(), t2.size(), 64, 416, &tl2b, 1.0f, &out), QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(out, nullptr);
  // Not ternary.
  T i8;
  const uint8_t raw[4] = {};
  make_raw(i8, QNT_DTYPE_I8, {2, 2}, nullptr, raw, 4);
  EXPECT_EQ(qnt_ternary_export(QNT_TERNARY_I2_S, i8.t, nullptr, small.data(), small.size()), QNT_ERR_DTYPE_MISMATCH);
}

}  // namespace
