// The integer GEMM driver of the fast kernel sets: B packed once (the prepared operators hold
// it), A packed per run from a row source (int8 rows, floats quantized on the fly, or a
// convolution's windows), micro-tiles from the context's kernel (kernels/gemm/gemm.hpp), and an
// epilogue called on each tile while its accumulators are in L1.
//
// The accumulators an epilogue sees are exactly the reference's: sum_k (a - za)(b - zb) modulo
// 2^32 (kernels/ref/ops_ref.hpp's qgemm), whatever the kernel, the blocking or the threads.
#pragma once

#include "core/context.hpp"
#include "kernels/gemm/gemm.hpp"
#include "kernels/registry.hpp"
#include "ops/parallel.hpp"
#include "ops/tune.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace qnt::ops {

// Scratch memory of one call: the context's workspace when no other call holds it (it grows to
// the largest request and is kept), else memory of its own. Allocates in the constructor only.
class Scratch {
 public:
  Scratch(const Context &ctx, size_t bytes);
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  uint8_t *data() noexcept { return data_; }

 private:
  std::unique_lock<std::mutex> lock_;
  std::vector<uint8_t> own_;
  uint8_t *data_ = nullptr;
};

// An allocator that leaves new elements uninitialized: packed B is written whole by its packers,
// so a zero fill first would be one more pass over memory (a third of pack_kn's time).
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U> &) noexcept {}
  template <class U>
  void construct(U *p) noexcept {
    ::new (static_cast<void *>(p)) U;
  }
  template <class U, class... Args>
  void construct(U *p, Args &&...args) {
    ::new (static_cast<void *>(p)) U(std::forward<Args>(args)...);
  }
  // 64-byte aligned: packed panels start on cache lines (the packers' streaming stores need
  // 32 bytes, and a tile's loads of a group never straddle two lines).
  T *allocate(size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t{64}));
  }
  void deallocate(T *p, size_t) noexcept { ::operator delete(p, std::align_val_t{64}); }
};

// A constant B [K, N] in the packed layout, with the per-column terms of the zero-point
// correction.
struct GemmB {
  int64_t K = 0, N = 0;
  size_t groups = 0, panels = 0;
  std::vector<int8_t, UninitializedAllocator<int8_t>> data;
  std::vector<int32_t> zb;   // zb' = zb - 128 for u8 b, zb for i8 b
  std::vector<int32_t> col;  // K * zb' - sum_k b'(k, n), modulo 2^32
  bool zb_zero = true;       // every zb' is 0 (i8 b with zero points 0): no row-sum term
  bool ternary = false;      // every b' is -1, 0 or +1 (GemmKernel::ternary may multiply it)

  size_t panel_stride() const noexcept { return groups * 64; }
  // Sets `ternary` from the packed bytes (the packers call it last), on `threads` threads
  // when the first block is ternary.
  void classify(int threads = 1) noexcept;
  size_t bytes() const noexcept { return data.size() + 4 * (zb.size() + col.size()); }

  // B stored [K, N] row-major (ld bytes between rows; qnt_qmatmul's b), or [N, K] (ld bytes
  // between the rows of K values; the linear layers' w): packed in parallel over panels on the
  // context's threads, 64-byte groups built by vector interleaves (pack_rows.cpp's notes), at
  // memory speed rather than one strided byte at a time.
  void pack_kn(const Context &ctx, int64_t k_count, int64_t n_count, bool is_signed,
               const int32_t *zero_points, const uint8_t *b, size_t ld);
  void pack_nk(const Context &ctx, int64_t k_count, int64_t n_count, bool is_signed,
               const int32_t *zero_points, const uint8_t *w, size_t ld);

  // get(k, n) gives b(k, n)'s stored byte; zero_points[n] is column n's zero point.
  template <class Get>
  void pack(int64_t k_count, int64_t n_count, bool is_signed, const int32_t *zero_points,
            Get &&get) {
    K = k_count;
    N = n_count;
    zb_zero = true;
    groups = static_cast<size_t>((K + kern::kGemmGroup - 1) / kern::kGemmGroup);
    panels = static_cast<size_t>((N + kern::kGemmPanel - 1) / kern::kGemmPanel);
    data.assign(panels * panel_stride(), 0);
    zb.resize(static_cast<size_t>(N));
    col.resize(static_cast<size_t>(N));
    const uint8_t flip = is_signed ? 0 : 0x80;
    for (int64_t n = 0; n < N; ++n) {
      const auto p = static_cast<size_t>(n / kern::kGemmPanel);
      const auto j = static_cast<size_t>(n % kern::kGemmPanel);
      const size_t base = p * panel_stride() + 4 * j;  // (data is empty when K is 0)
      uint32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        const auto v = static_cast<int8_t>(static_cast<uint8_t>(get(k, n) ^ flip));
        data[base + static_cast<size_t>(k / 4) * 64 + static_cast<size_t>(k % 4)] = v;
        sum += static_cast<uint32_t>(static_cast<int32_t>(v));
      }
      const int32_t z = zero_points[n] - (is_signed ? 0 : 128);
      zb[static_cast<size_t>(n)] = z;
      if (z != 0) zb_zero = false;
      col[static_cast<size_t>(n)] = static_cast<int32_t>(
          static_cast<uint32_t>(K) * static_cast<uint32_t>(z) - sum);
    }
    classify();
  }
};

// The kernel that multiplies by b: k's ternary kernel when b is ternary and k has one.
inline const kern::GemmKernel &gemm_kernel_for(const kern::GemmKernel &k, const GemmB &b) noexcept {
  return b.ternary && k.ternary != nullptr ? *k.ternary : k;
}

// The shape of one run's work on a kernel: how A is packed and how the tiles are cut into tasks.
// A task is a block of rows (m-panels of the kernel's mr rows) times a block of n-tiles; it packs
// its rows of A into its worker's scratch (an L2-sized block: never the whole of A, so a
// convolution never holds its full im2col matrix), then runs its tiles, the n-tile outer so that
// its panels of B stay in cache while the A panels pass.
struct GemmPlan {
  const kern::GemmKernel *kernel = nullptr;
  int64_t M = 0;
  size_t m_panels = 0, a_panel_bytes = 0, n_tiles = 0, tile_cols = 0;
  size_t row_bytes = 0;  // one row of a' values, padded to whole groups
  size_t K = 0;
  size_t mb = 1, nb = 1, m_blocks = 1, n_blocks = 1, workers = 1;
  bool unpack = false;  // the kernel unpacks B panels (room for one in each worker's scratch)

  // blocks (optional): the m-panels and n-tiles of a block, from the tuning table (tune.hpp),
  // clamped to the shape and evened out; null: the heuristic's.
  GemmPlan(const kern::GemmKernel &k, const GemmB &b, int64_t rows, int threads,
           const TuneValue *blocks = nullptr);
  static constexpr size_t kHeaderBytes = 64;  // before each worker's scratch: its packed m-block
  size_t tasks() const noexcept { return m_blocks * n_blocks; }
  // Block i's first m-panel (n-tile): the panels shared out as evenly as the block count
  // allows (sizes differ by one at most; mb and nb are the largest), so that the workers'
  // contiguous runs of tasks hold equal work. (Blocks of mb with the remainder last had given
  // one of two workers 45 panels and the other 41 at 512^2.)
  size_t m_begin(size_t i) const noexcept { return i * std::max<size_t>(1, m_panels) / m_blocks; }
  size_t n_begin(size_t i) const noexcept { return i * std::max<size_t>(1, n_tiles) / n_blocks; }
  size_t worker_bytes() const noexcept;
  // The scratch the run needs: every worker's A block, row terms and row buffer.
  size_t scratch_bytes() const noexcept { return workers * worker_bytes(); }
};

// The blockings worth measuring around the heuristic's plan (the first): twice and half as many
// rows or columns of tiles a block, each evened out as the plan does, without repeats.
std::vector<TuneValue> gemm_candidates(const GemmPlan &base);

// run(plan) with the plan the context's tuning gives this shape: the heuristic's, the tuning
// table's, or (QNT_TUNING_MEASURE, on a miss) each candidate's in turn, the fastest stored.
// run performs the whole operation with the plan it gets; every plan gives the same bits.
template <class Run>
void gemm_tuned(const Context &ctx, const kern::GemmKernel &k, const GemmB &b, int64_t rows,
                Run &&run) {
  const int threads = ctx.threads();
  const GemmPlan base(k, b, rows, threads);
  if (ctx.tuning == QNT_TUNING_OFF) {
    run(base);
    return;
  }
  const TuneValue heuristic{static_cast<int64_t>(base.mb), static_cast<int64_t>(base.nb)};
  const TuneKey key{"gemm", k.name, rows, b.N, b.K, threads};
  tuned(ctx, key, heuristic, [&] { return gemm_candidates(base); }, [&](const TuneValue &v) {
    if (v == heuristic) run(base);
    else run(GemmPlan(k, b, rows, threads, &v));
  });
}

// Packs row m's a' values (row: row_bytes, zero past K) into its micro-panel; sets its sum
// unless row_sum is null (the sums serve only B's zero points: none for symmetric weights). With
// a kernel whose A is rows (a_rows), row is already the row's place in the panel.
void gemm_pack_a(const GemmPlan &plan, int64_t m, const uint8_t *row, uint8_t *panel,
                 int32_t *row_sum) noexcept;
// *row_sum = the sum of the row's plan.row_bytes bytes of a', modulo 2^32 (gemm_pack_a's).
void gemm_row_sum(const GemmPlan &plan, const uint8_t *row, int32_t *row_sum) noexcept;
// Turns the raw sums of a tile into exact accumulators (see kernels/gemm/gemm.hpp).
void gemm_tile_correct(const GemmB &b, int64_t n0, int cols, const int32_t *row_sum,
                       const int32_t *za, int rows, int32_t *acc, size_t ldc) noexcept;

// A source of rows of A may also gather many at once (a convolution's windows, pixel after
// pixel, without recomputing each pixel's coordinates): za = source.rows(m0, m1, dst, stride)
// writes a'(m, 0 .. K) for m0 <= m < m1 at dst + (m - m0) * stride and returns za', the same for
// every row. gemm_run uses it with the a_rows kernels, whose packed A is exactly those rows.
template <class S, class = void>
struct HasRows : std::false_type {};
template <class S>
struct HasRows<S, std::void_t<decltype(std::declval<const S &>().rows(
                      int64_t{}, int64_t{}, static_cast<uint8_t *>(nullptr), size_t{}))>>
    : std::true_type {};

// A source may also hold its a' rows in memory as they are (an unsigned A whose rows are
// whole groups): source.in_place(stride, za) returns a'(0, 0), with stride bytes between rows
// and za' in za, or null. gemm_run then reads its full panels there through the kernel's
// conv_tile (one tap) instead of copying them into the packed block.
template <class S, class = void>
struct HasInPlace : std::false_type {};
template <class S>
struct HasInPlace<S, std::void_t<decltype(std::declval<const S &>().in_place(
                         std::declval<size_t &>(), std::declval<int32_t &>()))>>
    : std::true_type {};

// An epilogue with direct(m0, n0, ld) may give the place where a full tile's exact sums are its
// output (ld: elements between its rows), or null: the kernel then writes there itself.
template <class E, class = void>
struct HasDirect : std::false_type {};
template <class E>
struct HasDirect<E, std::void_t<decltype(std::declval<const E &>().direct(
                        int64_t{}, int64_t{}, std::declval<size_t &>()))>> : std::true_type {};

// source(m, row) writes all of a'(m, 0 .. K) into row (row_bytes long, zero past K) and returns
// za'(m).
// epi(m0, rows, n0, cols, acc, ldc): the tile of rows m0 .. m0 + rows and columns
// n0 .. n0 + cols; acc[r * ldc + j] is the exact accumulator of (m0 + r, n0 + j).
// scratch: plan.scratch_bytes() bytes.
template <class Source, class Epilogue>
void gemm_run(const Context &ctx, const GemmPlan &plan, const GemmB &b, uint8_t *scratch,
              Source &&source, Epilogue &&epi) {
  const kern::GemmKernel &k = *plan.kernel;
  const auto mr = static_cast<size_t>(k.mr);
  const size_t ps = b.panel_stride();
  // Each worker's scratch starts with the index of the m-block it holds: a worker's tasks are
  // consecutive and share their m-block, which is packed once (the body is called per task).
  for (size_t w = 0; w < plan.workers; ++w) {
    const size_t none = SIZE_MAX;
    std::memcpy(scratch + w * plan.worker_bytes(), &none, sizeof none);
  }
  // A read in place (see HasInPlace): with the kernel's conv_tile, full tiles of columns only
  // (it computes np panels), and short rows. Measured on Zen 4 (one thread, best of 6
  // alternated): 256^3 79.6-80.2 -> 75.0-78.9 us, 512^3 level; 1024^3 4.89-5.00 -> 5.12-5.59
  // ms (rows 1 KiB apart share L1 sets with each other and with the B panels, 16 KiB apart;
  // packed rows are a line longer for that reason), so rows up to 512 bytes only.
  const uint8_t *in_place = nullptr;
  size_t in_stride = 0;
  int32_t in_za = 0;
  if constexpr (HasInPlace<std::decay_t<Source>>::value) {
    if (k.conv_tile != nullptr && b.N % static_cast<int64_t>(plan.tile_cols) == 0 && !plan.unpack &&
        static_cast<size_t>(plan.K) == 4 * b.groups)
      in_place = source.in_place(in_stride, in_za);
    if (in_stride > 512) in_place = nullptr;
  }
  const size_t tap_off[2] = {0, 0};
  parallel_for_workers(ctx.threads(), plan.tasks(), 1, [&](size_t t0, size_t t1, size_t w) {
    uint8_t *header = scratch + w * plan.worker_bytes();
    uint8_t *apack = header + GemmPlan::kHeaderBytes;
    auto *row_sum = reinterpret_cast<int32_t *>(apack + plan.mb * plan.a_panel_bytes);
    int32_t *za = row_sum + plan.mb * mr;
    auto *row = reinterpret_cast<uint8_t *>(za + plan.mb * mr);
    auto *unpacked = reinterpret_cast<int8_t *>(row + plan.row_bytes);
    alignas(64) int32_t acc[16 * 64];
    size_t packed;  // the m-block in apack
    std::memcpy(&packed, header, sizeof packed);
    for (size_t t = t0; t < t1; ++t) {
      const size_t mi = t / plan.n_blocks, ni = t % plan.n_blocks;
      const size_t p0 = plan.m_begin(mi), p1 = std::min(plan.m_panels, plan.m_begin(mi + 1));
      if (packed != mi) {
        // A source with rows() writes the block's rows at once: they are evenly spaced in apack
        // with the a_rows kernels (a_panel_bytes = mr * row stride).
        bool at_once = false;
        int32_t zr = 0;
        if constexpr (HasRows<std::decay_t<Source>>::value) {
          if (k.a_rows) {
            at_once = true;
            const auto m0 = static_cast<int64_t>(p0 * mr);
            zr = source.rows(m0, std::min<int64_t>(plan.M, static_cast<int64_t>(p1 * mr)), apack,
                             kern::gemm_row_stride(b.groups));
          }
        }
        for (size_t p = p0; p < p1; ++p)
          for (size_t r = 0; r < mr; ++r) {
            const auto m = static_cast<int64_t>(p * mr + r);
            const size_t i = (p - p0) * mr + r;
            if (in_place != nullptr && static_cast<int64_t>((p + 1) * mr) <= plan.M) {
              // A full panel read in place: only its zero point and row sums.
              za[i] = in_za;
              if (!b.zb_zero)
                gemm_row_sum(plan, in_place + static_cast<size_t>(m) * in_stride, row_sum + i);
              continue;
            }
            uint8_t *panel = apack + (p - p0) * plan.a_panel_bytes;
            // A as rows: the source writes the row in its place, nothing is moved after.
            uint8_t *dst = k.a_rows ? panel + r * kern::gemm_row_stride(b.groups) : row;
            // The source writes all K values; past K (and in the panel's rows past M) zeros.
            const size_t from = m < plan.M ? plan.K : 0;
            if (plan.row_bytes > from) std::memset(dst + from, 0, plan.row_bytes - from);
            za[i] = m >= plan.M ? 0 : at_once ? zr : source(m, dst);
            gemm_pack_a(plan, m, dst, panel, b.zb_zero ? nullptr : row_sum + i);
          }
        packed = mi;
        std::memcpy(header, &packed, sizeof packed);
      }
      const size_t n_end = std::min(plan.n_tiles, plan.n_begin(ni + 1));
      // With several A panels to meet it, a B panel is first unpacked for the kernel.
      const bool unpack = plan.unpack && p1 - p0 >= 2;
      for (size_t nt = plan.n_begin(ni); nt < n_end; ++nt) {
        const auto n0 = static_cast<int64_t>(nt * plan.tile_cols);
        const int cols = static_cast<int>(
            std::min<int64_t>(static_cast<int64_t>(plan.tile_cols), b.N - n0));
        const int panels = (cols + kern::kGemmPanel - 1) / kern::kGemmPanel;
        const int8_t *bp = b.data.data() + nt * static_cast<size_t>(k.np) * ps;
        size_t bps = ps;
        kern::GemmTileFn tile = k.tile;
        if (unpack) {
          k.unpack_b(bp, ps, b.groups, panels, unpacked);
          bp = unpacked;
          bps = b.groups * static_cast<size_t>(k.unpacked_bytes);
          tile = k.tile_unpacked;
        }
        for (size_t p = p0; p < p1; ++p) {
          const auto m0 = static_cast<int64_t>(p * mr);
          const int rows = static_cast<int>(std::min<int64_t>(k.mr, plan.M - m0));
          const size_t i = (p - p0) * mr;
          // Nothing to correct when every zero point is 0 (the raw sums are the result).
          bool za_zero = true;
          for (int r = 0; r < rows; ++r) za_zero = za_zero && za[i + static_cast<size_t>(r)] == 0;
          // A's rows in place (a full tile; see above): conv_tile with one tap, its sums
          // starting from the zeros put in c's first row.
          const bool own = in_place != nullptr && rows == k.mr;
          auto run_tile = [&](int32_t *c, size_t ldc) {
            if (own) {
              std::memset(c, 0, plan.tile_cols * sizeof(int32_t));
              k.conv_tile(in_place + static_cast<size_t>(m0) * in_stride, in_stride, tap_off, 1,
                          b.groups, bp, bps, c, ldc);
            } else {
              tile(apack + (p - p0) * plan.a_panel_bytes, bp, bps, b.groups, rows, panels, c, ldc);
            }
          };
          if constexpr (HasDirect<std::decay_t<Epilogue>>::value) {
            size_t ld = 0;
            int32_t *out = b.zb_zero && za_zero && rows == k.mr && cols == static_cast<int>(plan.tile_cols)
                               ? epi.direct(m0, n0, ld)
                               : nullptr;
            if (out != nullptr) {
              run_tile(out, ld);
              continue;
            }
          }
          run_tile(acc, plan.tile_cols);
          if (b.zb_zero && za_zero) {
          } else if (k.correct != nullptr) {
            k.correct(b.zb_zero ? nullptr : b.zb.data() + n0, b.col.data() + n0, cols,
                      row_sum + i, za + i, rows, acc, plan.tile_cols);
          } else {
            gemm_tile_correct(b, n0, cols, row_sum + i, za + i, rows, acc, plan.tile_cols);
          }
          epi(m0, rows, n0, cols, static_cast<const int32_t *>(acc), plan.tile_cols);
        }
      }
    }
  });
}

}  // namespace qnt::ops
