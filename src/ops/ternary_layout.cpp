// Ternary weights in bitnet.cpp's layouts (qnt_ternary_export / qnt_ternary_import): I2_S, TL1
// and TL2, as exact permutations and encodings of the weights' values (kernels/README.md gives
// each definition and its source). Each layout is one enumeration of its output, unit by unit,
// with the weights each unit holds: export writes the units, import reads them back, so the two
// are inverse by construction.
#include "core/error.hpp"
#include "ops/common.hpp"
#include "ops/qops.hpp"

#include <cstring>
#include <vector>

namespace qnt::ops {
namespace {

struct Geometry {
  int64_t M = 0, K = 0;        // rows, columns
  int64_t BM = 0, BY = 0, bm = 0, by = 0;
  int64_t K3 = 0, K2 = 0;      // TL2: the three-weight and two-weight columns
};

// The weights' values as int8 -1, 0, +1, row-major [M, K].
using Values = std::vector<int8_t>;

// Checks the shape and tiling of a layout; the geometry the enumerations use.
Geometry geometry(qnt_ternary_layout layout, int64_t rows, int64_t cols, const qnt_ternary_tiling *t) {
  if (rows < 0 || cols < 0) fail(QNT_ERR_INVALID_ARGUMENT, "negative shape [", rows, ", ", cols, "]");
  Geometry g;
  g.M = rows;
  g.K = cols;
  switch (layout) {
    case QNT_TERNARY_I2_S:
      if ((rows * cols) % 128 != 0)
        fail(QNT_ERR_UNSUPPORTED, "I2_S holds whole blocks of 128 weights: rows * cols = ", rows * cols);
      return g;
    case QNT_TERNARY_TL1:
    case QNT_TERNARY_TL2: break;
    default: fail(QNT_ERR_INVALID_ARGUMENT, "unknown qnt_ternary_layout ", layout);
  }
  if (t == nullptr) fail(QNT_ERR_NULL_POINTER, "TL1 and TL2 need their tiling (bitnet.cpp's kernel_config.ini)");
  g.BM = t->bm;
  g.BY = t->bk;
  g.bm = t->bmm;
  const char *name = layout == QNT_TERNARY_TL1 ? "TL1" : "TL2";
  if (g.BM <= 0 || g.BY <= 0 || g.bm <= 0) fail(QNT_ERR_INVALID_ARGUMENT, name, ": bm, bk and bmm must be positive");
  if (rows % g.BM != 0 || g.BM % g.bm != 0)
    fail(QNT_ERR_UNSUPPORTED, name, ": rows (", rows, ") must be a multiple of bm (", g.BM, "), bm of bmm (", g.bm, ")");
  if (layout == QNT_TERNARY_TL1) {
    if (g.bm % 16 != 0 || 256 % g.bm != 0) fail(QNT_ERR_UNSUPPORTED, "TL1: bmm must divide 256 and be a multiple of 16");
    g.by = 256 / g.bm;
    if (g.by % 4 != 0 || g.BY % g.by != 0 || cols % g.BY != 0)
      fail(QNT_ERR_UNSUPPORTED, "TL1: cols (", cols, ") must be a multiple of bk (", g.BY, "), bk of 256 / bmm (", g.by,
           "), itself a multiple of 4");
    return g;
  }
  // TL2: three weights an index in columns [0, K3), pairs in the rest (tiles of 32 x 32).
  if (g.bm != 32) fail(QNT_ERR_UNSUPPORTED, "TL2: bmm must be 32 (192 / bmm weights = 2 indices a byte)");
  g.by = 6;
  if (g.BY % 24 != 0) fail(QNT_ERR_UNSUPPORTED, "TL2: bk must be a multiple of 24, not ", g.BY);
  g.K2 = cols % g.BY;
  g.K3 = cols - g.K2;
  if (g.K2 % 32 != 0)
    fail(QNT_ERR_UNSUPPORTED, "TL2: cols % bk (", g.K2, ") must be a multiple of 32 (the two-weight tiles)");
  return g;
}

// TL2's size: bitnet.cpp pads its output to (K - 256) * M / 3 * 5 / 8 + 256 * M / 2 * 4 / 8
// bytes (Python's floor divisions, left to right).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }
int64_t tl2_padded(const Geometry &g) {
  return floor_div(floor_div((g.K - 256) * g.M, 3) * 5, 8) + 256 * g.M / 2 * 4 / 8;
}
int64_t tl2_used(const Geometry &g) { return g.M * g.K3 / 6 + g.M * g.K3 / 24 + g.M * g.K2 / 4; }

size_t layout_bytes(qnt_ternary_layout layout, const Geometry &g) {
  switch (layout) {
    case QNT_TERNARY_I2_S: return static_cast<size_t>(g.M * g.K / 4 + 32);
    case QNT_TERNARY_TL1: return static_cast<size_t>(g.M * g.K / 4);
    default: {
      const int64_t used = tl2_used(g), padded = tl2_padded(g);
      if (padded < used)
        fail(QNT_ERR_UNSUPPORTED, "TL2: bitnet.cpp's size for [", g.M, ", ", g.K, "] (", padded,
             " bytes) is smaller than its content (", used, "): such shapes have no TL2 form");
      return static_cast<size_t>(padded);
    }
  }
}

// A pair of weights as TL1's index 3 * w0 + w1 + 4 (0..8), and back.
int pair_index(const int8_t *w) { return 3 * w[0] + w[1] + 4; }
void pair_values(int idx, int8_t *w) {
  const int a = idx / 3 - 1;
  w[0] = static_cast<int8_t>(a);
  w[1] = static_cast<int8_t>(idx - 4 - 3 * a);
}

// The units of each layout. unit(offset, ...) names a byte of the output and the weights it holds.
// TL1 (and TL2's two-weight part, tiles bm = 32, by = 4): byte = index(pair c0) << 4 | index(pair c0 + 1)
// of row `row`, pairs counted from column `first`.
template <class F>
void tl1_units(const Geometry &g, int64_t BY, int64_t bm, int64_t by, int64_t cols, bool swap_rows, size_t base,
               F &&unit) {
  const int64_t M = g.M, BM = g.BM;
  size_t at = base;
  for (int64_t a = 0; a < M / BM; ++a)
    for (int64_t c = 0; c < cols / BY; ++c)
      for (int64_t e = 0; e < BM / bm; ++e)
        for (int64_t gg = 0; gg < BY / by; ++gg) {
          if (!swap_rows) {
            // TL1: (bm / 16) x (by / 4) x 16 bytes, each two pairs of one row.
            for (int64_t i = 0; i < bm / 16; ++i)
              for (int64_t p = 0; p < by / 4; ++p)
                for (int64_t l = 0; l < 16; ++l)
                  unit(at++, a * BM + e * bm + i * 16 + l, c * BY / 2 + gg * by / 2 + p * 2);
          } else {
            // TL2's pairs: bm bytes (one a row, by = 4: two pairs), rows in blocks of 8 with the
            // second and third blocks swapped.
            static const int64_t order[4] = {0, 2, 1, 3};
            for (int64_t r = 0; r < bm / 8; ++r)
              for (int64_t s = 0; s < 8; ++s)
                unit(at++, a * BM + e * bm + order[r] * 8 + s, c * BY / 2 + gg * by / 2);
          }
        }
}

// TL2's three-weight part: bytes of two magnitudes (|9 w0 + 3 w1 + w2|, 0..13) of one row, then
// the sign bits (1: negative) as little-endian uint16 words.
template <class Mag, class Sign>
void tl2_units(const Geometry &g, Mag &&mag, Sign &&sign) {
  const int64_t M = g.M, BM = g.BM, BY = g.BY, bm = g.bm, by = g.by;  // bm 32, by 6
  size_t at = 0;
  static const int64_t order[4] = {0, 2, 1, 3};
  for (int64_t a = 0; a < M / BM; ++a)
    for (int64_t c = 0; c < g.K3 / BY; ++c)
      for (int64_t e = 0; e < BM / bm; ++e)
        for (int64_t gg = 0; gg < BY / by; ++gg)
          for (int64_t r = 0; r < bm / 8; ++r)
            for (int64_t s = 0; s < 8; ++s)  // triple index t = c * BY / 3 + gg * 2 (and + 1)
              mag(at++, a * BM + e * bm + order[r] * 8 + s, c * BY / 3 + gg * 2);
  // Sign words: 16 a block of 32 bytes (offsets from the signs' start).
  size_t block = 0;
  for (int64_t a = 0; a < M / BM; ++a)
    for (int64_t c = 0; c < g.K3 / BY; ++c)
      for (int64_t e = 0; e < BM / bm; ++e)
        for (int64_t gg = 0; gg < BY / (by * 4); ++gg, block += 32)
          for (int64_t v = 0; v < 16; ++v)
            // word v: bit 15 - i is the sign of (h, f) with h * 32 + f = i * 16 + v.
            for (int64_t i = 0; i < 16; ++i) {
              const int64_t hf = i * 16 + v, h = hf / 32, f = hf % 32;
              sign(block + static_cast<size_t>(2 * v), static_cast<int>(15 - i), a * BM + e * bm + f,
                   c * BY / 3 + gg * 8 + h);
            }
}

size_t tl2_sign_base(const Geometry &g) { return static_cast<size_t>(g.M * g.K3 / 6); }
size_t tl2_pairs_base(const Geometry &g) { return static_cast<size_t>(g.M * g.K3 / 6 + g.M * g.K3 / 24); }

void check_tensor(const Tensor &w) {
  if (w.dtype() != QNT_DTYPE_TERNARY) fail(QNT_ERR_DTYPE_MISMATCH, "w must be ternary, not ", w.info().name);
  if (w.rank() != 2) fail(QNT_ERR_SHAPE_MISMATCH, "w must be [rows, cols], got ", shape_string(w.dims()));
  if (!w.on_cpu()) fail(QNT_ERR_UNSUPPORTED, "qnt_ternary_export reads host memory only");
}

}  // namespace

size_t ternary_layout_size(qnt_ternary_layout layout, int64_t rows, int64_t cols, const qnt_ternary_tiling *t) {
  return layout_bytes(layout, geometry(layout, rows, cols, t));
}

void ternary_export(qnt_ternary_layout layout, const Tensor &w, const qnt_ternary_tiling *t, uint8_t *out,
                    size_t capacity) {
  check_tensor(w);
  const Geometry g = geometry(layout, w.dims()[0], w.dims()[1], t);
  const size_t bytes = layout_bytes(layout, g);
  if (capacity < bytes) fail(QNT_ERR_BUFFER_TOO_SMALL, "the layout needs ", bytes, " bytes, the buffer holds ", capacity);
  float scale = 1.0f;
  if (layout == QNT_TERNARY_I2_S) {
    const auto &qp = w.qparams();
    if (!qp || qp->granularity() != QNT_GRANULARITY_PER_TENSOR)
      fail(QNT_ERR_INVALID_QPARAMS, "I2_S stores one scale: w needs per-tensor qparams");
    scale = qp->scales()[0];
  }
  const size_t n = w.element_count();
  const Values v = ternary_values(w, "w");
  std::memset(out, 0, bytes);
  const int64_t K = g.K;
  auto at = [&](int64_t row, int64_t col) { return v.data() + row * K + col; };
  switch (layout) {
    case QNT_TERNARY_I2_S:
      // Blocks of 128 over the whole tensor: element j of a block in byte j % 32, bits 6 - 2 (j / 32).
      for (size_t i = 0; i < n; ++i) {
        const size_t b = i / 128, j = i % 128;
        out[32 * b + j % 32] |= static_cast<uint8_t>((v[i] + 1) << (6 - 2 * (j / 32)));
      }
      std::memcpy(out + n / 4, &scale, 4);
      break;
    case QNT_TERNARY_TL1:
      tl1_units(g, g.BY, g.bm, g.by, K, false, 0, [&](size_t o, int64_t row, int64_t pair) {
        out[o] = static_cast<uint8_t>(pair_index(at(row, 2 * pair)) << 4 | pair_index(at(row, 2 * pair + 2)));
      });
      break;
    default: {
      auto tri = [&](int64_t row, int64_t t3) {
        const int8_t *p = at(row, 3 * t3);
        return 9 * p[0] + 3 * p[1] + p[2];
      };
      tl2_units(
          g,
          [&](size_t o, int64_t row, int64_t t3) {
            const int x = tri(row, t3), y = tri(row, t3 + 1);
            out[o] = static_cast<uint8_t>((x < 0 ? -x : x) << 4 | (y < 0 ? -y : y));
          },
          [&](size_t o, int bit, int64_t row, int64_t t3) {
            if (tri(row, t3) < 0) {
              const auto word = static_cast<uint16_t>(1u << bit);
              out[tl2_sign_base(g) + o] |= static_cast<uint8_t>(word & 0xFF);
              out[tl2_sign_base(g) + o + 1] |= static_cast<uint8_t>(word >> 8);
            }
          });
      if (g.K2 > 0) {
        Geometry g2 = g;
        tl1_units(g2, 32, 32, 4, g.K2, true, tl2_pairs_base(g), [&](size_t o, int64_t row, int64_t pair) {
          const int8_t *p = at(row, g.K3 + 2 * pair);
          out[o] = static_cast<uint8_t>(pair_index(p) << 4 | pair_index(p + 2));
        });
      }
    }
  }
}

std::unique_ptr<Tensor> ternary_import(qnt_ternary_layout layout, const uint8_t *data, size_t bytes, int64_t rows,
                                       int64_t cols, const qnt_ternary_tiling *t, float scale) {
  const Geometry g = geometry(layout, rows, cols, t);
  const size_t need = layout_bytes(layout, g);
  if (bytes != need) fail(QNT_ERR_SHAPE_MISMATCH, "the layout of [", rows, ", ", cols, "] is ", need, " bytes, not ", bytes);
  const size_t n = static_cast<size_t>(rows * cols);
  if (layout == QNT_TERNARY_I2_S) std::memcpy(&scale, data + n / 4, 4);
  Values v(n, 0);
  const int64_t K = g.K;
  auto corrupt = [&](size_t at, const char *what) {
    fail(QNT_ERR_CORRUPT_DATA, "byte ", at, " of the layout holds ", what);
  };
  switch (layout) {
    case QNT_TERNARY_I2_S:
      for (size_t i = 0; i < n; ++i) {
        const size_t b = i / 128, j = i % 128;
        const int c = (data[32 * b + j % 32] >> (6 - 2 * (j / 32))) & 3;
        if (c == 3) corrupt(32 * b + j % 32, "the code 3, which is no value");
        v[i] = static_cast<int8_t>(c - 1);
      }
      break;
    case QNT_TERNARY_TL1:
      tl1_units(g, g.BY, g.bm, g.by, K, false, 0, [&](size_t o, int64_t row, int64_t pair) {
        const int hi = data[o] >> 4, lo = data[o] & 15;
        if (hi > 8 || lo > 8) corrupt(o, "an index past 8");
        pair_values(hi, v.data() + row * K + 2 * pair);
        pair_values(lo, v.data() + row * K + 2 * pair + 2);
      });
      break;
    default: {
      // Magnitudes first (sign later), as 9 w0 + 3 w1 + w2 >= 0; then the signs negate.
      std::vector<int8_t> mags(static_cast<size_t>(g.M * g.K3 / 3), 0), neg(mags.size(), 0);
      const int64_t T = g.K3 / 3;
      tl2_units(
          g,
          [&](size_t o, int64_t row, int64_t t3) {
            const int hi = data[o] >> 4, lo = data[o] & 15;
            if (hi > 13 || lo > 13) corrupt(o, "a magnitude past 13");
            mags[static_cast<size_t>(row * T + t3)] = static_cast<int8_t>(hi);
            mags[static_cast<size_t>(row * T + t3 + 1)] = static_cast<int8_t>(lo);
          },
          [&](size_t o, int bit, int64_t row, int64_t t3) {
            const size_t at = tl2_sign_base(g) + o;
            const unsigned word = data[at] | static_cast<unsigned>(data[at + 1]) << 8;
            neg[static_cast<size_t>(row * T + t3)] = static_cast<int8_t>((word >> bit) & 1);
          });
      for (int64_t row = 0; row < g.M; ++row)
        for (int64_t t3 = 0; t3 < T; ++t3) {
          const size_t i = static_cast<size_t>(row * T + t3);
          if (neg[i] != 0 && mags[i] == 0) fail(QNT_ERR_CORRUPT_DATA, "TL2 gives a sign to a zero triple (row ", row, ")");
          const int val = neg[i] != 0 ? -mags[i] : mags[i];
          int8_t *p = v.data() + row * K + 3 * t3;
          const int a = (val + 13) / 9 - 1;
          p[0] = static_cast<int8_t>(a);
          pair_values(val - 9 * a + 4, p + 1);
        }
      if (g.K2 > 0) {
        Geometry g2 = g;
        tl1_units(g2, 32, 32, 4, g.K2, true, tl2_pairs_base(g), [&](size_t o, int64_t row, int64_t pair) {
          const int hi = data[o] >> 4, lo = data[o] & 15;
          if (hi > 8 || lo > 8) corrupt(o, "an index past 8");
          int8_t *p = v.data() + row * K + g.K3 + 2 * pair;
          pair_values(hi, p);
          pair_values(lo, p + 2);
        });
      }
      // The padding bitnet.cpp adds is zeros.
      for (size_t i = static_cast<size_t>(tl2_used(g)); i < bytes; ++i)
        if (data[i] != 0) corrupt(i, "a nonzero byte in the padding");
    }
  }
  if (layout == QNT_TERNARY_I2_S)
    for (size_t i = n / 4 + 4; i < bytes; ++i)
      if (data[i] != 0) corrupt(i, "a nonzero byte after the scale");
  const int32_t zero = 0;
  auto qp = QParams::create(QNT_DTYPE_TERNARY, QNT_GRANULARITY_PER_TENSOR, 0, 0, &scale, &zero, 1);
  const int64_t shape[2] = {rows, cols};
  auto out = std::make_unique<Tensor>(QNT_DTYPE_TERNARY, shape, 2, std::move(qp), Tensor::Storage::Zeroed, nullptr, 0);
  uint8_t *d = out->data();
  for (size_t i = 0; i < n; ++i) d[i / 4] |= static_cast<uint8_t>((v[i] & 3) << (2 * (i % 4)));
  return out;
}

}  // namespace qnt::ops
