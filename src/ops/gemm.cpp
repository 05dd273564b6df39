#include "ops/gemm.hpp"

#include "hw/machine.hpp"
#include "ops/parallel.hpp"

#include <algorithm>
#include <atomic>

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

GemmPlan::GemmPlan(const kern::GemmKernel &k, const GemmB &b, int64_t rows, int threads,
                   const TuneValue *blocks)
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
  // tile being run), and 256 columns; halved until every thread has two tasks, so that every
  // shape uses every thread: rows first while a block keeps 8 panels or more (each worker then
  // packs its own rows of A, where blocks of columns had two workers pack the same m-block:
  // 256^2 on two threads 41.5 -> 39.5 us on the Zen 4), then columns, then rows.
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
  if (blocks != nullptr) {  // the tuning table's blocks, within the shape
    mb = static_cast<size_t>(std::clamp<int64_t>(blocks->p1, 1, static_cast<int64_t>(std::max<size_t>(1, m_panels))));
    nb = static_cast<size_t>(std::clamp<int64_t>(blocks->p2, 1, static_cast<int64_t>(std::max<size_t>(1, n_tiles))));
    count();
  }
  while (blocks == nullptr && count() < want && (nb > 1 || mb > 1)) {
    if (nb > 1 && mb < 8)
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

std::vector<TuneValue> gemm_candidates(const GemmPlan &base) {
  const auto mp = static_cast<int64_t>(std::max<size_t>(1, base.m_panels));
  const auto nt = static_cast<int64_t>(std::max<size_t>(1, base.n_tiles));
  const auto mb = static_cast<int64_t>(base.mb), nb = static_cast<int64_t>(base.nb);
  auto even = [](int64_t v, int64_t total) {
    v = std::clamp<int64_t>(v, 1, total);
    const int64_t blocks = (total + v - 1) / v;
    return (total + blocks - 1) / blocks;
  };
  std::vector<TuneValue> out;
  const int64_t tries[][2] = {{mb, nb},     {mb, 2 * nb}, {mb, nb / 2}, {2 * mb, nb},
                              {mb / 2, nb}, {mb, nt},     {2 * mb, 2 * nb}};
  for (const auto &t : tries) {
    const TuneValue v{even(t[0], mp), even(t[1], nt)};
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
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

void gemm_row_sum(const GemmPlan &plan, const uint8_t *row, int32_t *row_sum) noexcept {
  *row_sum = static_cast<int32_t>(byte_sum(row, plan.row_bytes));
}

void gemm_pack_a(const GemmPlan &plan, int64_t m, const uint8_t *row, uint8_t *panel,
                 int32_t *row_sum) noexcept {
  const kern::GemmKernel &k = *plan.kernel;
  const auto r = static_cast<size_t>(m % k.mr);
  const size_t groups = plan.row_bytes / kern::kGemmGroup;
  const auto stride = static_cast<size_t>(k.mr) * static_cast<size_t>(k.a_bytes);
  if (row_sum != nullptr) gemm_row_sum(plan, row, row_sum);
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

namespace {

// Sizes and parameters of a pack; data sized (not cleared: the packers write every byte).
void start_pack(GemmB &g, int64_t K, int64_t N, bool is_signed, const int32_t *zero_points) {
  g.K = K;
  g.N = N;
  g.groups = static_cast<size_t>((K + kern::kGemmGroup - 1) / kern::kGemmGroup);
  g.panels = static_cast<size_t>((N + kern::kGemmPanel - 1) / kern::kGemmPanel);
  g.data.resize(g.panels * g.panel_stride());
  g.zb.resize(static_cast<size_t>(N));
  g.col.resize(static_cast<size_t>(N));
  g.zb_zero = true;
  for (int64_t n = 0; n < N; ++n) {
    const int32_t z = zero_points[n] - (is_signed ? 0 : 128);
    g.zb[static_cast<size_t>(n)] = z;
    if (z != 0) g.zb_zero = false;
  }
}

// col[n] = K * zb'[n] - sum, modulo 2^32.
void finish_column(GemmB &g, int64_t n, uint32_t sum) {
  g.col[static_cast<size_t>(n)] = static_cast<int32_t>(
      static_cast<uint32_t>(g.K) * static_cast<uint32_t>(g.zb[static_cast<size_t>(n)]) - sum);
}

// The columns of panel p (those inside N) from their sums.
void finish_panel(GemmB &g, size_t p, const uint32_t *sums) {
  const auto n0 = static_cast<int64_t>(p) * kern::kGemmPanel;
  for (int64_t j = 0; j < kern::kGemmPanel && n0 + j < g.N; ++j)
    finish_column(g, n0 + j, sums[j]);
}

// Panels per task: about 64 KiB of packed B.
size_t panel_grain(const GemmB &g) {
  return std::max<size_t>(1, (size_t{1} << 16) / std::max<size_t>(1, g.panel_stride()));
}

#if defined(__SSE2__)
// 16 bytes of a row at p, of which `n` (<= 16) exist, XORed with flip; zeros past n.
inline __m128i load_part(const uint8_t *p, size_t n, __m128i flip) noexcept {
  if (n >= 16) return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)), flip);
  alignas(16) uint8_t t[16] = {};
  std::memcpy(t, p, n);
  const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i *>(t));
  const __m128i live = _mm_cmplt_epi8(_mm_set_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                      _mm_set1_epi8(static_cast<char>(n)));
  return _mm_xor_si128(v, _mm_and_si128(flip, live));
}

// The 16 bytes as sign-extended int16, low and high halves.
inline void widen_i8(__m128i v, __m128i &lo, __m128i &hi) noexcept {
  lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);
  hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
}

inline void add_i16_to_i32(__m128i v, __m128i &lo, __m128i &hi) noexcept {
  lo = _mm_add_epi32(lo, _mm_srai_epi32(_mm_unpacklo_epi16(v, v), 16));
  hi = _mm_add_epi32(hi, _mm_srai_epi32(_mm_unpackhi_epi16(v, v), 16));
}
#endif

}  // namespace

namespace {

// Panel p's groups g0 .. g1 (at most 16) of a [K, N] b, adding its columns' sums of b' to sums.
void kn_panel(GemmB &gb, const uint8_t *b, size_t ld, bool is_signed, size_t p, size_t g0,
              size_t g1, uint32_t *sums) {
  const auto n0 = static_cast<int64_t>(p) * kern::kGemmPanel;
  const auto cols = static_cast<size_t>(std::min<int64_t>(kern::kGemmPanel, gb.N - n0));
  int8_t *out = gb.data.data() + p * gb.panel_stride();
#if defined(__SSE2__)
  // Per group: rows 4g .. 4g + 3 of the panel's 16 columns (16 bytes each), interleaved into
  // 16 columns x 4 bytes by two rounds of unpacks; sums in int16 (16 groups: at most 64 x 128).
  const __m128i flip = _mm_set1_epi8(static_cast<char>(is_signed ? 0 : 0x80));
  __m128i s16lo = _mm_setzero_si128(), s16hi = _mm_setzero_si128();
  for (size_t g = g0; g < g1; ++g) {
    __m128i r[4];
    for (int i = 0; i < 4; ++i) {
      const auto k = static_cast<int64_t>(4 * g) + i;
      const uint8_t *src = b + static_cast<size_t>(k) * ld + static_cast<size_t>(n0);
      r[i] = k < gb.K ? load_part(src, cols, flip) : _mm_setzero_si128();
      __m128i lo, hi;
      widen_i8(r[i], lo, hi);
      s16lo = _mm_add_epi16(s16lo, lo);
      s16hi = _mm_add_epi16(s16hi, hi);
    }
    const __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpackhi_epi8(r[0], r[1]);
    const __m128i t2 = _mm_unpacklo_epi8(r[2], r[3]), t3 = _mm_unpackhi_epi8(r[2], r[3]);
    auto *o = reinterpret_cast<__m128i *>(out + g * 64);
    _mm_storeu_si128(o, _mm_unpacklo_epi16(t0, t2));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(t0, t2));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(t1, t3));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(t1, t3));
  }
  __m128i s32[4];
  for (int i = 0; i < 4; ++i) s32[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(sums + 4 * i));
  add_i16_to_i32(s16lo, s32[0], s32[1]);
  add_i16_to_i32(s16hi, s32[2], s32[3]);
  for (int i = 0; i < 4; ++i) _mm_storeu_si128(reinterpret_cast<__m128i *>(sums + 4 * i), s32[i]);
#else
  const uint8_t fl = is_signed ? 0 : 0x80;
  for (size_t g = g0; g < g1; ++g)
    for (size_t j = 0; j < 16; ++j)
      for (size_t i = 0; i < 4; ++i) {
        const auto k = static_cast<int64_t>(4 * g + i);
        const auto v = static_cast<int8_t>(
            k < gb.K && j < cols ? b[static_cast<size_t>(k) * ld + static_cast<size_t>(n0) + j] ^ fl : 0);
        out[g * 64 + 4 * j + i] = v;
        sums[j] += static_cast<uint32_t>(static_cast<int32_t>(v));
      }
#endif
}

// Panel p's groups g0 .. groups (g0 a multiple of 4) of an [N, K] w, adding its rows' sums of
// b' to sums.
void nk_panel(GemmB &gb, const uint8_t *w, size_t ld, bool is_signed, size_t p, size_t g0,
              uint32_t *sums) {
  const auto n0 = static_cast<int64_t>(p) * kern::kGemmPanel;
  const auto rows = static_cast<size_t>(std::min<int64_t>(kern::kGemmPanel, gb.N - n0));
  const auto K = static_cast<size_t>(gb.K);
  const size_t groups = gb.groups;
  int8_t *out = gb.data.data() + p * gb.panel_stride();
  const uint8_t *src[16];
  for (size_t j = 0; j < 16; ++j) src[j] = j < rows ? w + (static_cast<size_t>(n0) + j) * ld : nullptr;
#if defined(__SSE2__)
  // Four groups (16 bytes) of each of the 16 rows at a time: four 4 x 4 transposes of dwords
  // (unpacks of 32 and 64 bits). A row's sum: psadbw over its bytes with the sign bit flipped,
  // less 128 a byte (bytes past K are 0 and count as 128 too: the padded chunk is taken off).
  const __m128i flip = _mm_set1_epi8(static_cast<char>(is_signed ? 0 : 0x80));
  const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
  __m128i sad[16];
  for (auto &v : sad) v = _mm_setzero_si128();
  for (size_t g = g0; g < groups; g += 4) {
    const size_t k0 = 4 * g, have = K > k0 ? K - k0 : 0;
    const size_t ng = std::min<size_t>(4, groups - g);
    __m128i v[16];
    for (size_t j = 0; j < 16; ++j) {
      v[j] = src[j] != nullptr ? load_part(src[j] + k0, have, flip) : _mm_setzero_si128();
      sad[j] = _mm_add_epi64(sad[j], _mm_sad_epu8(_mm_xor_si128(v[j], bias), _mm_setzero_si128()));
    }
    for (size_t q = 0; q < 4; ++q) {
      const __m128i a = v[4 * q], bb = v[4 * q + 1], c = v[4 * q + 2], d = v[4 * q + 3];
      const __m128i u0 = _mm_unpacklo_epi32(a, bb), u1 = _mm_unpacklo_epi32(c, d);
      const __m128i u2 = _mm_unpackhi_epi32(a, bb), u3 = _mm_unpackhi_epi32(c, d);
      const __m128i t[4] = {_mm_unpacklo_epi64(u0, u1), _mm_unpackhi_epi64(u0, u1),
                            _mm_unpacklo_epi64(u2, u3), _mm_unpackhi_epi64(u2, u3)};
      for (size_t i = 0; i < ng; ++i)
        _mm_storeu_si128(reinterpret_cast<__m128i *>(out + (g + i) * 64 + 16 * q), t[i]);
    }
  }
  const uint64_t padded = static_cast<uint64_t>((groups - g0 + 3) / 4 * 16);
  for (size_t j = 0; j < rows; ++j) {
    const uint64_t total = static_cast<uint64_t>(_mm_cvtsi128_si64(sad[j])) +
                           static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sad[j], sad[j])));
    sums[j] += static_cast<uint32_t>(total - 128 * padded);
  }
#else
  const uint8_t fl = is_signed ? 0 : 0x80;
  for (size_t j = 0; j < 16; ++j)
    for (size_t g = g0; g < groups; ++g)
      for (size_t i = 0; i < 4; ++i) {
        const size_t k = 4 * g + i;
        const auto v = static_cast<int8_t>(src[j] != nullptr && k < K ? src[j][k] ^ fl : 0);
        out[g * 64 + 4 * j + i] = v;
        sums[j] += static_cast<uint32_t>(static_cast<int32_t>(v));
      }
#endif
}

constexpr size_t kPackBlock = 128;  // panels packed together at most (their column sums on the stack)
// Packed B from this size on is written with streaming stores where the packer can (it is
// larger than what a core's share of the caches would keep for the GEMM that reads it).
constexpr size_t kStreamBytes = size_t{8} << 20;

}  // namespace

void GemmB::pack_kn(const Context &ctx, int64_t k_count, int64_t n_count, bool is_signed,
                    const int32_t *zero_points, const uint8_t *b, size_t ld) {
  start_pack(*this, k_count, n_count, is_signed, zero_points);
  const kern::GemmKernel *k = ctx.kernels().gemm;
  const kern::GemmPackFn fast = k != nullptr ? k->pack_kn : nullptr;
  const size_t full_panels = static_cast<size_t>(N / kern::kGemmPanel);
  const size_t full_groups = static_cast<size_t>(K / kern::kGemmGroup);
  const uint8_t flip = is_signed ? 0 : 0x80;
  // Blocks of up to 128 panels (2 KiB of each row of B), which the packer takes 32 groups at a
  // time (gemm_pack_kn_t; the edges here, 16): a row is a page away from
  // the next when N is large, so each visit of a row reads 2 KiB of it, not 16 bytes (one panel
  // at a time paid a TLB miss every 16 bytes; 1 KiB blocks took 1.1x as long at 4096^2, the
  // prefetchers' streams cut short). Smaller blocks only to give every thread one.
  const bool stream = data.size() >= kStreamBytes;
  const auto threads = static_cast<size_t>(std::max(1, ctx.threads()));
  const size_t block = std::clamp<size_t>((panels + threads - 1) / threads, 16, kPackBlock);
  const size_t blocks = (panels + block - 1) / block;
  parallel_for(ctx.threads(), blocks, 1, [&](size_t q0, size_t q1) {
    for (size_t q = q0; q < q1; ++q) {
      const size_t pb = q * block, pe = std::min(panels, pb + block);
      uint32_t sums[kPackBlock * 16] = {};
      // The kernel's interior: whole panels and groups; the rest here.
      const size_t fe = fast != nullptr && full_groups > 0 ? std::max(pb, std::min(pe, full_panels)) : pb;
      if (fe > pb) fast(b, ld, pb, fe, full_groups, flip, data.data(), panel_stride(), sums, stream);
      for (size_t p = pb; p < fe; ++p)
        if (full_groups < groups) kn_panel(*this, b, ld, is_signed, p, full_groups, groups, sums + (p - pb) * 16);
      for (size_t g0 = 0; g0 < groups; g0 += 16)
        for (size_t p = fe; p < pe; ++p)
          kn_panel(*this, b, ld, is_signed, p, g0, std::min(groups, g0 + 16), sums + (p - pb) * 16);
      for (size_t p = pb; p < pe; ++p) finish_panel(*this, p, sums + (p - pb) * 16);
    }
  });
  classify(ctx.threads());
}

void GemmB::pack_nk(const Context &ctx, int64_t k_count, int64_t n_count, bool is_signed,
                    const int32_t *zero_points, const uint8_t *w, size_t ld) {
  start_pack(*this, k_count, n_count, is_signed, zero_points);
  const kern::GemmKernel *k = ctx.kernels().gemm;
  const kern::GemmPackFn fast = k != nullptr ? k->pack_nk : nullptr;
  const size_t full_panels = static_cast<size_t>(N / kern::kGemmPanel);
  const size_t groups8 = static_cast<size_t>(K / 32) * 8;  // whole steps of 8 groups
  const bool stream = data.size() >= kStreamBytes;
  const uint8_t flip = is_signed ? 0 : 0x80;
  parallel_for(ctx.threads(), panels, panel_grain(*this), [&](size_t c0, size_t c1) {
    for (size_t pb = c0; pb < c1; pb += kPackBlock) {
      const size_t pe = std::min(c1, pb + kPackBlock);
      uint32_t sums[kPackBlock * 16] = {};
      const size_t fe = fast != nullptr && groups8 > 0 ? std::max(pb, std::min(pe, full_panels)) : pb;
      if (fe > pb) fast(w, ld, pb, fe, groups8, flip, data.data(), panel_stride(), sums, stream);
      for (size_t p = pb; p < pe; ++p) {
        const size_t g0 = p < fe ? groups8 : 0;
        if (g0 < groups) nk_panel(*this, w, ld, is_signed, p, g0, sums + (p - pb) * 16);
        finish_panel(*this, p, sums + (p - pb) * 16);
      }
    }
  });
  classify(ctx.threads());
}

void GemmB::classify(int threads) noexcept {
  // b' + 1 as a byte is 0, 1 or 2 exactly when b' is -1, 0 or +1: an OR of compares the
  // compiler vectorizes, over blocks of 16 KiB. Most int8 weights have another value in the
  // first block and leave there, so the pass over all of B (half of pack_kn's time at 4096^2
  // on Zen 3) is paid only by weights that are ternary, and then on the context's threads.
  const auto *p = reinterpret_cast<const uint8_t *>(data.data());
  const size_t n = data.size();
  constexpr size_t kBlock = 16384;
  auto ternary_block = [&](size_t b) {
    uint8_t over = 0;
    for (size_t i = b * kBlock, e = std::min(n, (b + 1) * kBlock); i < e; ++i)
      over |= static_cast<uint8_t>(static_cast<uint8_t>(p[i] + 1) > 2);
    return over == 0;
  };
  const size_t blocks = (n + kBlock - 1) / kBlock;
  ternary = blocks == 0 || ternary_block(0);
  if (!ternary || blocks < 2) return;
  std::atomic<bool> all{true};
  parallel_for(threads, blocks - 1, 16, [&](size_t b0, size_t b1) {
    for (size_t b = b0; b < b1 && all.load(std::memory_order_relaxed); ++b)
      if (!ternary_block(b + 1)) all.store(false, std::memory_order_relaxed);
  });
  ternary = all.load();
}

void gemm_tile_correct(const GemmB &b, int64_t n0, int cols, const int32_t *row_sum,
                       const int32_t *za, int rows, int32_t *acc, size_t ldc) noexcept {
  // acc = P - zb' * Sa' + (K * zb' - Sb') * za', modulo 2^32.
  const int32_t *zb = b.zb.data() + n0;
  const int32_t *col = b.col.data() + n0;
  for (int r = 0; r < rows; ++r) {
    const auto s = b.zb_zero ? 0u : static_cast<uint32_t>(row_sum[r]);  // no sums without zb
    const auto z = static_cast<uint32_t>(za[r]);
    auto *a = reinterpret_cast<uint32_t *>(acc + static_cast<size_t>(r) * ldc);
    for (int j = 0; j < cols; ++j)
      a[j] = a[j] - static_cast<uint32_t>(zb[j]) * s + static_cast<uint32_t>(col[j]) * z;
  }
}

}  // namespace qnt::ops
