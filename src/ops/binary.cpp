// qnt_binary_matmul: binary activations times binary weights by XOR and popcount (the rule is
// qnt.h's). Both operands are first laid out as rows of 64-bit words, zero past K (the same zero
// bits in both, so they never count), rows padded to the kernel's tile; the kernel counts the
// differing bits of each pair of rows, and acc = K - 2 * count.
#include "core/error.hpp"
#include "kernels/common/scalar.hpp"
#include "kernels/gemm/gemm.hpp"
#include "kernels/registry.hpp"
#include "ops/common.hpp"
#include "ops/gemm.hpp"
#include "ops/parallel.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace qnt::ops {
namespace {

// Row r of a binary tensor of rows x K (element k of row r is bit (r * K + k) of the bytes,
// element 0 in bit 0) into `words` uint64, zero past K.
void row_words(const uint8_t *bits, size_t bytes, size_t r, size_t K, uint64_t *out, size_t words) {
  std::memset(out, 0, words * 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // Rows of whole bytes: the words are the row's bytes as they are (little-endian: element
  // 8 * b + i in bit i of byte b is bit 8 * (b % 8) + i of word b / 8), zero past K.
  if (K % 8 == 0) {
    if (K > 0) std::memcpy(out, bits + r * (K / 8), K / 8);  // (K = 0: bits may be null)
    return;
  }
#endif
  const size_t first = r * K;
  for (size_t w = 0; w * 64 < K; ++w) {
    const size_t pos = first + 64 * w, n = std::min<size_t>(64, K - 64 * w);
    const size_t byte = pos / 8, shift = pos % 8;
    // Up to 9 bytes hold the 64 bits from pos; the ones past the tensor are not read.
    uint8_t buf[9] = {};
    std::memcpy(buf, bits + byte, std::min<size_t>(9, bytes - byte));
    uint64_t v = 0;
    std::memcpy(&v, buf, 8);
    v >>= shift;
    if (shift != 0) v |= static_cast<uint64_t>(buf[8]) << (64 - shift);
    if (n < 64) v &= (uint64_t{1} << n) - 1;
    out[w] = v;
  }
}

// One scale per row (per tensor repeated, or per axis 0), checked.
std::vector<float> row_scales(const Tensor &t, const char *role, int64_t rows) {
  const auto &qp = t.qparams();
  if (!qp) fail(QNT_ERR_INVALID_QPARAMS, role, " needs qparams for an f32 y");
  const qnt_granularity g = qp->granularity();
  if (g == QNT_GRANULARITY_PER_TENSOR) return std::vector<float>(static_cast<size_t>(rows), qp->scales()[0]);
  if (g == QNT_GRANULARITY_PER_AXIS && qp->axis() == 0)
    return std::vector<float>(qp->scales(), qp->scales() + rows);
  fail(QNT_ERR_UNSUPPORTED, role, ": qnt_binary_matmul takes qparams per tensor or per row (axis 0)");
}

// b prepared: its rows as words (padded to the kernel's tile) and its scales.
class PreparedBinaryMatmul final : public Prepared {
 public:
  PreparedBinaryMatmul(const Context &ctx, const Tensor &b)
      : Prepared(QNT_PREPARED_BINARY_MATMUL, ctx.isa()), kernel_(ctx.kernels().gemm),
        xnor_(ctx.kernels().xnor), xnor_cols_(ctx.kernels().xnor_cols) {
    if (b.dtype() != QNT_DTYPE_BINARY) fail(QNT_ERR_DTYPE_MISMATCH, "b must be binary, not ", b.info().name);
    if (b.rank() != 2) fail(QNT_ERR_SHAPE_MISMATCH, "b must be [N, K], got ", shape_string(b.dims()));
    if (!b.on_cpu()) fail(QNT_ERR_UNSUPPORTED, "qnt_binary_matmul runs on host memory only in this release");
    N_ = b.dims()[0];
    K_ = b.dims()[1];
    if (K_ > INT32_MAX) fail(QNT_ERR_UNSUPPORTED, "qnt_binary_matmul takes K up to 2^31 - 1, not ", K_);
    if (b.qparams()) {
      has_scales_ = true;
      sb_ = row_scales(b, "b", N_);
    }
    const auto K = static_cast<size_t>(K_);
    if (kernel_ == nullptr) {  // the reference reads the bits as they are
      bits_.assign(b.data(), b.data() + b.byte_size());
      return;
    }
    words_ = std::max<size_t>(4, (K + 255) / 256 * 4);
    const auto N = static_cast<size_t>(N_);
    if (xnor_cols_ != nullptr) {
      // Groups of 8 columns, word w of column 8g + j at (g * words + w) * 8 + j (gemm.hpp's
      // GemmXnorColsFn), the padding columns zero.
      constexpr size_t G = kern::kXnorColGroup;
      bc_.assign((N + G - 1) / G * G * words_, 0);
      parallel_for(ctx.threads(), N, 64, [&](size_t r0, size_t r1) {
        std::vector<uint64_t> row(words_);
        for (size_t r = r0; r < r1; ++r) {
          row_words(b.data(), b.byte_size(), r, K, row.data(), words_);
          for (size_t w = 0; w < words_; ++w) bc_[(r / G * words_ + w) * G + r % G] = row[w];
        }
      });
      return;
    }
    const size_t Np = (N + kern::kXnorNR - 1) / kern::kXnorNR * kern::kXnorNR;
    bw_.assign(Np * words_, 0);
    parallel_for(ctx.threads(), N, 64, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) row_words(b.data(), b.byte_size(), r, K, bw_.data() + r * words_, words_);
    });
  }

  size_t packed_size() const noexcept override {
    return 8 * (bw_.size() + bc_.size()) + bits_.size() + 4 * sb_.size();
  }

  void run(const Context &ctx, const Tensor &a, Tensor &y) const override {
    if (a.dtype() != QNT_DTYPE_BINARY) fail(QNT_ERR_DTYPE_MISMATCH, "a must be binary, not ", a.info().name);
    if (a.rank() != 2 || a.dims()[1] != K_)
      fail(QNT_ERR_SHAPE_MISMATCH, "qnt_binary_matmul takes a [M, K] and b [N, K], got ", shape_string(a.dims()),
           " and ", shape_string({N_, K_}));
    const int64_t M = a.dims()[0], N = N_, K = K_;
    if (y.dims() != std::vector<int64_t>{M, N})
      fail(QNT_ERR_SHAPE_MISMATCH, "y has shape ", shape_string(y.dims()), ", expected ", shape_string({M, N}));
    if (y.dtype() != QNT_DTYPE_I32 && y.dtype() != QNT_DTYPE_F32)
      fail(QNT_ERR_DTYPE_MISMATCH, "y must be i32 or f32, not ", y.info().name);
    if (y.dtype() == QNT_DTYPE_I32 && y.qparams())
      fail(QNT_ERR_INVALID_QPARAMS, "an i32 y of qnt_binary_matmul carries no qparams");
    const bool f32 = y.dtype() == QNT_DTYPE_F32;
    const std::vector<float> sa = f32 ? row_scales(a, "a", M) : std::vector<float>();
    if (f32 && !has_scales_) fail(QNT_ERR_INVALID_QPARAMS, "b needs qparams for an f32 y");
    require_writable(y, "y");
    require_disjoint(y, a, "y", "a");
    if (!a.on_cpu() || !y.on_cpu())
      fail(QNT_ERR_UNSUPPORTED, "qnt_binary_matmul runs on host memory only in this release");
    if (y.element_count() == 0) return;

    auto put = [&](size_t m, size_t n, int64_t acc) {
      const size_t i = m * static_cast<size_t>(N) + n;
      if (f32)
        reinterpret_cast<float *>(y.data())[i] =
            rules::canonical_nan(static_cast<float>(acc) * (sa[m] * sb_[n]));
      else
        reinterpret_cast<int32_t *>(y.data())[i] = static_cast<int32_t>(acc);
    };
    const auto Ku = static_cast<size_t>(K);
    if (kernel_ == nullptr) {
      // The reference: the products of the +-1 values, element by element.
      parallel_for(ctx.threads(), static_cast<size_t>(M), 1, [&](size_t m0, size_t m1) {
        for (size_t m = m0; m < m1; ++m)
          for (size_t n = 0; n < static_cast<size_t>(N); ++n) {
            int64_t acc = 0;
            for (size_t e = 0; e < Ku; ++e) {
              const int32_t va = 2 * ref::load_element(a.data(), m * Ku + e, 1, false) - 1;
              const int32_t vb = 2 * ref::load_element(bits_.data(), n * Ku + e, 1, false) - 1;
              acc += va * vb;
            }
            put(m, n, acc);
          }
      });
      return;
    }
    const kern::GemmXnorFn xnor = xnor_;
    const size_t Mp = (static_cast<size_t>(M) + kern::kXnorMR - 1) / kern::kXnorMR * kern::kXnorMR;
    std::vector<uint64_t, UninitializedAllocator<uint64_t>> aw(Mp * words_, 0);
    parallel_for(ctx.threads(), static_cast<size_t>(M), 64, [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) row_words(a.data(), a.byte_size(), r, Ku, aw.data() + r * words_, words_);
    });
    const size_t mb =
        std::max<size_t>(kern::kXnorMR, (size_t{65536} / (words_ * 8)) / kern::kXnorMR * kern::kXnorMR);
    const auto Mz = static_cast<size_t>(M), Nz = static_cast<size_t>(N);
    const auto k32 = static_cast<int32_t>(K);
    auto *yi = reinterpret_cast<int32_t *>(y.data());
    auto *yf = reinterpret_cast<float *>(y.data());
    const auto threads = static_cast<size_t>(std::max(ctx.threads(), 1));
    // f32 y, or an i32 tile past N: through a buffer of `rows` x `cols` results at buf (ld).
    auto put_tile = [&](const int32_t *buf, size_t ld, size_t m0, size_t rows, size_t n0, size_t cols) {
      for (size_t r = 0; r < rows; ++r)
        for (size_t j = 0; j < cols; ++j) {
          const int32_t v = buf[r * ld + j];
          const size_t i = (m0 + r) * Nz + n0 + j;
          if (f32)
            yf[i] = rules::canonical_nan(static_cast<float>(v) * (sa[m0 + r] * sb_[n0 + j]));
          else
            yi[i] = v;
        }
    };
    if (xnor_cols_ != nullptr) {
      // Tasks: the groups of 8 columns split evenly, one range a worker, in tiles of 3 groups
      // (the last 1 or 2); within it, a in blocks of rows that stay in L2 (64 KiB). An i32 y
      // takes whole tiles in place.
      constexpr size_t G = kern::kXnorColGroup, T = 3 * G;
      const size_t groups = bc_.size() / (words_ * G);
      const size_t workers = std::min(threads, groups);
      parallel_for(ctx.threads(), workers, 1, [&](size_t w0, size_t w1) {
        std::vector<int32_t> buf(mb * T);
        for (size_t w = w0; w < w1; ++w) {
          const size_t ga = groups * w / workers, gb = groups * (w + 1) / workers;
          for (size_t m0 = 0; m0 < Mz; m0 += mb) {
            const size_t rows = std::min(mb, Mz - m0);
            for (size_t g0 = ga; g0 < gb; g0 += 3) {
              const size_t gc = std::min<size_t>(3, gb - g0);
              const size_t n0 = G * g0, cols = std::min(G * gc, Nz - n0);
              const uint64_t *bt = bc_.data() + g0 * words_ * G;
              if (!f32 && cols == G * gc) {
                xnor_cols_(aw.data() + m0 * words_, rows, bt, gc, words_, k32, yi + m0 * Nz + n0, Nz);
                continue;
              }
              xnor_cols_(aw.data() + m0 * words_, rows, bt, gc, words_, k32, buf.data(), T);
              put_tile(buf.data(), T, m0, rows, n0, cols);
            }
          }
        }
      });
      return;
    }
    // Tasks: triples of b's rows; within a task, a in blocks of rows that stay in L2 (64 KiB).
    // An i32 y takes the kernel's results in place (pairs of rows inside M, triples inside N);
    // the rest (an f32 y, the padded row, the columns past N) pass through a buffer.
    const size_t triples = bw_.size() / words_ / kern::kXnorNR;
    // One contiguous range of triples a worker: a body call per triple had allocated a buffer
    // per triple (two threads, 4096^2 at batch 64: 590 -> 554-575 us).
    parallel_for(ctx.threads(), triples, (triples + threads - 1) / threads, [&](size_t t0, size_t t1) {
      std::vector<int32_t> buf(mb * kern::kXnorNR);
      for (size_t m0 = 0; m0 < Mp; m0 += mb) {
        const size_t rows = std::min(mb, Mp - m0);
        const size_t in_place = f32 ? 0 : std::min(rows, (Mz - m0) / kern::kXnorMR * kern::kXnorMR);
        for (size_t t = t0; t < t1; ++t) {
          const size_t n0 = t * kern::kXnorNR;
          const size_t first = n0 + kern::kXnorNR <= Nz ? in_place : 0;
          if (first > 0)
            xnor(aw.data() + m0 * words_, first, bw_.data() + n0 * words_, words_, k32, yi + m0 * Nz + n0, Nz);
          if (first == rows) continue;
          xnor(aw.data() + (m0 + first) * words_, rows - first, bw_.data() + n0 * words_, words_, k32,
               buf.data(), kern::kXnorNR);
          put_tile(buf.data(), kern::kXnorNR, m0 + first, std::min(rows, Mz - m0) - first, n0,
              std::min<size_t>(kern::kXnorNR, Nz - n0));
        }
      }
    });
  }

 private:
  const kern::GemmKernel *kernel_;
  kern::GemmXnorFn xnor_;  // the set's popcount kernel (KernelSet::xnor)
  kern::GemmXnorColsFn xnor_cols_;  // its column kernel, when the set has one (then bc_, not bw_)
  int64_t N_ = 0, K_ = 0;
  bool has_scales_ = false;
  std::vector<float> sb_;
  size_t words_ = 0;
  // The kernels': rows of words, padded to whole triples, 64-byte aligned as aw (with rows of
  // whole cache lines no 512-bit load straddles two: the kernel ran 0.955 against 0.93 cycles
  // a 256-bit pair on 16-byte aligned rows).
  std::vector<uint64_t, UninitializedAllocator<uint64_t>> bw_;
  std::vector<uint64_t, UninitializedAllocator<uint64_t>> bc_;  // xnor_cols_'s groups of 8 columns
  std::vector<uint8_t> bits_;  // the reference's: b's bits as given
};

}  // namespace

std::unique_ptr<Prepared> prepare_binary_matmul(const Context &ctx, const Tensor &b, const OpDesc &desc) {
  desc.require_only(0, "a prepared binary matmul");
  return std::make_unique<PreparedBinaryMatmul>(ctx, b);
}

void binary_matmul(const Context &ctx, const Tensor &a, const Tensor &b, Tensor &y) {
  require_disjoint(y, b, "y", "b");
  PreparedBinaryMatmul(ctx, b).run(ctx, a, y);
}

}  // namespace qnt::ops
