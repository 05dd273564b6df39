#include "ops/gemm.hpp"

#include "hw/machine.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace qnt::ops {

Scratch::Scratch(const Context &ctx, size_t bytes) {
  Context::Workspace &ws = *ctx.workspace;
  std::unique_lock<std::mutex> lock(ws.mutex, std::try_to_lock);
  if (lock.owns_lock()) {
    if (ws.buffer.size() < bytes) {
      ws.buffer.clear();
      ws.buffer.shrink_to_fit();
      ws.buffer.resize(bytes);
    }
    data_ = ws.buffer.data();
    lock_ = std::move(lock);
  } else {
    own_.resize(bytes);
    data_ = own_.data();
  }
}

Scratch::~Scratch() = default;

GemmPlan::GemmPlan(const kern::GemmKernel &k, const GemmB &b, int64_t rows, int threads)
    : kernel(&k), M(rows) {
  const auto mr = static_cast<size_t>(k.mr);
  m_panels = (static_cast<size_t>(M) + mr - 1) / mr;
  a_panel_bytes = k.a_rows ? mr * kern::gemm_row_stride(b.groups)
                          : b.groups * mr * static_cast<size_t>(k.a_bytes);
  tile_cols = static_cast<size_t>(k.np) * kern::kGemmPanel;
  n_tiles = (static_cast<size_t>(b.N) + tile_cols - 1) / tile_cols;
  row_bytes = b.groups * kern::kGemmGroup;
  K = static_cast<size_t>(b.K);
  // Blocks: up to 96 rows of A, as many as fill half the L2 (the rest holds the B panel of the
  // tile being run), and 256 columns; halved (columns first) until every thread has two tasks,
  // so that every shape uses every thread.
  size_t l2 = hw::machine().cache_bytes[2];
  if (l2 == 0) l2 = size_t{256} << 10;  // unknown: a small L2
  const size_t fit = std::max<size_t>(2, l2 / 2 / std::max<size_t>(1, a_panel_bytes));
  mb = std::min({std::max<size_t>(1, 96 / mr), fit, std::max<size_t>(1, m_panels)});
  nb = std::min(std::max<size_t>(1, 256 / tile_cols), std::max<size_t>(1, n_tiles));
  auto count = [&] {
    m_blocks = (std::max<size_t>(1, m_panels) + mb - 1) / mb;
    n_blocks = (std::max<size_t>(1, n_tiles) + nb - 1) / nb;
    return m_blocks * n_blocks;
  };
  const size_t want = 2 * static_cast<size_t>(std::max(threads, 1));
  while (count() < want && (nb > 1 || mb > 1)) {
    if (nb > 1)
      nb = (nb + 1) / 2;
    else
      mb = (mb + 1) / 2;
  }
  // Blocks of equal size: 22 panels in blocks of 16 left one worker 16 panels and the other 6
  // (M = 128 on two threads). The same block count, its panels shared out evenly.
  mb = (std::max<size_t>(1, m_panels) + m_blocks - 1) / m_blocks;
  nb = (std::max<size_t>(1, n_tiles) + n_blocks - 1) / n_blocks;
  count();
  workers = parallel_workers(threads, tasks(), 1);
  unpack = k.unpack_b != nullptr && k.tile_unpacked != nullptr && mb >= 2;
}

size_t GemmPlan::worker_bytes() const noexcept {
  size_t bytes = kHeaderBytes + mb * a_panel_bytes + 8 * mb * static_cast<size_t>(kernel->mr) +
                 row_bytes;
  if (unpack) bytes += row_bytes / kern::kGemmGroup * static_cast<size_t>(kernel->np) *
                       static_cast<size_t>(kernel->unpacked_bytes);
  return (bytes + 63) / 64 * 64;
}

namespace {

// The sum of n bytes, modulo 2^32.
uint32_t byte_sum(const uint8_t *p, size_t n) noexcept {
  uint32_t sum = 0;
  size_t i = 0;
#if defined(__SSE2__)
  __m128i sums = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16)
    sums = _mm_add_epi64(sums, _mm_sad_epu8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + i)),
                                            _mm_setzero_si128()));
  sum = static_cast<uint32_t>(_mm_cvtsi128_si32(sums)) +
        static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_unpackhi_epi64(sums, sums)));
#endif
  for (; i < n; ++i) sum += p[i];
  return sum;
}

}  // namespace

void gemm_pack_a(const GemmPlan &plan, int64_t m, const uint8_t *row, uint8_t *panel,
                 int32_t *row_sum) noexcept {
  const kern::GemmKernel &k = *plan.kernel;
  const auto r = static_cast<size_t>(m % k.mr);
  const size_t groups = plan.row_bytes / kern::kGemmGroup;
  const auto stride = static_cast<size_t>(k.mr) * static_cast<size_t>(k.a_bytes);
  *row_sum = static_cast<int32_t>(byte_sum(row, plan.row_bytes));
  if (k.a_rows) {
    uint8_t *place = panel + r * kern::gemm_row_stride(groups);
    if (row != place) std::memcpy(place, row, plan.row_bytes);
    return;
  }
  uint8_t *dst = panel + r * static_cast<size_t>(k.a_bytes);
  if (k.a_bytes == 4) {
    for (size_t g = 0; g < groups; ++g) std::memcpy(dst + g * stride, row + 4 * g, 4);
    return;
  }
  size_t g = 0;
#if defined(__SSE2__)
  // Four groups at a time: bytes to int16, each group's words in the order 0, 2, 1, 3.
  const __m128i zero = _mm_setzero_si128();
  for (; g + 4 <= groups; g += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 4 * g));
    const __m128i lo =
        _mm_shufflehi_epi16(_mm_shufflelo_epi16(_mm_unpacklo_epi8(v, zero), 0xD8), 0xD8);
    const __m128i hi =
        _mm_shufflehi_epi16(_mm_shufflelo_epi16(_mm_unpackhi_epi8(v, zero), 0xD8), 0xD8);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + g * stride), lo);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (g + 1) * stride),
                     _mm_unpackhi_epi64(lo, lo));
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (g + 2) * stride), hi);
    _mm_storel_epi64(reinterpret_cast<__m128i *>(dst + (g + 3) * stride),
                     _mm_unpackhi_epi64(hi, hi));
  }
#endif
  for (; g < groups; ++g) {
    const uint8_t *s = row + 4 * g;
    const uint16_t v[4] = {s[0], s[2], s[1], s[3]};
    std::memcpy(dst + g * stride, v, 8);
  }
}

void gemm_tile_correct(const GemmB &b, int64_t n0, int cols, const int32_t *row_sum,
                       const int32_t *za, int rows, int32_t *acc, size_t ldc) noexcept {
  // acc = P - zb' * Sa' + (K * zb' - Sb') * za', modulo 2^32.
  const int32_t *zb = b.zb.data() + n0;
  const int32_t *col = b.col.data() + n0;
  for (int r = 0; r < rows; ++r) {
    const auto s = static_cast<uint32_t>(row_sum[r]);
    const auto z = static_cast<uint32_t>(za[r]);
    auto *a = reinterpret_cast<uint32_t *>(acc + static_cast<size_t>(r) * ldc);
    for (int j = 0; j < cols; ++j)
      a[j] = a[j] - static_cast<uint32_t>(zb[j]) * s + static_cast<uint32_t>(col[j]) * z;
  }
}

}  // namespace qnt::ops
