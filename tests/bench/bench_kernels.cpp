// The issue-8 workloads through the public API, with the machine's limits measured in the same
// run: a streaming read and a streaming copy over buffers much larger than the last-level cache,
// and a plain auto-vectorized quantize loop (no semantics checks) for the L2-resident size.
// Prints one tab-separated line per measurement:
//   work  threads  seconds  bytes  limit  limit_bytes_per_s  read_bytes  read_bytes_per_s
// where `limit` names the denominator (copy, read, plain, none); the last two give the share of
// the streaming read bandwidth the op's reads reached. scripts/bench.sh adds PyTorch's
// times (same run) and prints the table.
#include <qnt/qnt.h>

#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define QNT_BENCH_X86 1
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using qnt_bench::check;
using qnt_bench::Tensor;
using qnt_bench::now;

// The best of `reps` runs (after one warm-up).
double best_of(int reps, const std::function<void()> &f) {
  f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}


double g_read_bw = 0;  // this thread count's streaming read bandwidth

void line(const std::string &work, int threads, double sec, double bytes, const char *limit,
          double limit_bw, double read_bytes = 0) {
  std::printf("%s\t%d\t%.6g\t%.6g\t%s\t%.6g\t%.6g\t%.6g\n", work.c_str(), threads, sec, bytes,
              limit, limit_bw, read_bytes, g_read_bw);
  std::fflush(stdout);
}

// Streaming read (a sum the compiler cannot drop) and streaming copy, on `threads` threads.
double read_bw(const std::vector<float> &x, int threads) {
  volatile float sink = 0.0f;
  const size_t n = x.size();
  const double t = best_of(3, [&] {
    float total = 0.0f;
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
    for (ptrdiff_t c = 0; c < 64; ++c) {
      const size_t b = n * static_cast<size_t>(c) / 64, e = n * static_cast<size_t>(c + 1) / 64;
      float acc[16] = {};
      for (size_t i = b; i + 16 <= e; i += 16)
        for (int k = 0; k < 16; ++k) acc[k] += x[i + static_cast<size_t>(k)];
      for (float a : acc) total += a;
    }
    sink = total;
  });
  (void)sink;
  return static_cast<double>(n) * 4.0 / t;
}

#if defined(QNT_BENCH_X86)
// Compiled for AVX2 through a target attribute (the test build never uses -march=native) and
// called only where the CPU has it.
__attribute__((target("avx2"))) void stream_copy_avx2(const std::vector<float> &x,
                                                      std::vector<float> &y, int threads) {
  const size_t n = x.size();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (ptrdiff_t c = 0; c < 64; ++c) {
    size_t b = n * static_cast<size_t>(c) / 64;
    const size_t e = n * static_cast<size_t>(c + 1) / 64;
    for (; b < e && reinterpret_cast<uintptr_t>(y.data() + b) % 32 != 0; ++b) y[b] = x[b];
    for (; b + 8 <= e; b += 8) _mm256_stream_ps(y.data() + b, _mm256_loadu_ps(x.data() + b));
    for (; b < e; ++b) y[b] = x[b];
  }
  _mm_sfence();
}
#endif

// The better of memcpy and a copy with non-temporal stores (which skip reading the lines they
// write), so the limit is what the machine's best copy reaches.
double copy_bw(const std::vector<float> &x, std::vector<float> &y, int threads) {
  const size_t n = x.size();
  const double t = best_of(3, [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (ptrdiff_t c = 0; c < 64; ++c) {
      const size_t b = n * static_cast<size_t>(c) / 64, e = n * static_cast<size_t>(c + 1) / 64;
      std::memcpy(y.data() + b, x.data() + b, (e - b) * 4);
    }
  });
  double best = t;
#if defined(QNT_BENCH_X86)
  if (__builtin_cpu_supports("avx2"))
    best = std::min(best, best_of(3, [&] { stream_copy_avx2(x, y, threads); }));
#endif
  return static_cast<double>(n) * 8.0 / best;  // bytes read + bytes written
}

// The plain loop: multiply by the inverse scale, convert (the MXCSR rounding), narrow with
// saturation, store; no NaN, tie, division or rounding-mode rules. Written with the widest
// vectors of the machine (the compiler does not vectorize nearbyint), so it is the fast loop a
// user could write by hand.
__attribute__((noinline)) void scalar_tail(const float *x, int8_t *q, size_t i, size_t n, float c,
                                           bool divide) {
  for (; i < n; ++i) {
    const float r = std::nearbyint(divide ? x[i] / c : x[i] * c);
    q[i] = static_cast<int8_t>(std::min(127.0f, std::max(-128.0f, r)));
  }
}

// Divide: x / c (a true division), else x * c. One version per ISA through target attributes,
// each run only where the CPU has it (plain_quantize picks), as the library's kernels are.
#if defined(QNT_BENCH_X86)
template <bool Divide>
__attribute__((target("avx512f,avx512bw"), noinline)) void plain_quantize_avx512(
    const float *x, int8_t *q, size_t n, float c) {
  size_t i = 0;
  const __m512 vc = _mm512_set1_ps(c);
  // The zero-masked forms: GCC 12's unmasked ones pass _mm*_undefined_*(), which its own
  // -Wmaybe-uninitialized then reports.
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512i r =
        _mm512_maskz_cvtps_epi32(0xffff, Divide ? _mm512_div_ps(v, vc) : _mm512_mul_ps(v, vc));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(q + i), _mm512_maskz_cvtsepi32_epi8(0xffff, r));
  }
  scalar_tail(x, q, i, n, c, Divide);
}

template <bool Divide>
__attribute__((target("avx2"))) inline __m256i plain_convert_avx2(const float *x, __m256 vc) {
  const __m256 v = _mm256_loadu_ps(x);
  return _mm256_cvtps_epi32(Divide ? _mm256_div_ps(v, vc) : _mm256_mul_ps(v, vc));
}

template <bool Divide>
__attribute__((target("avx2"), noinline)) void plain_quantize_avx2(const float *x, int8_t *q,
                                                                   size_t n, float c) {
  size_t i = 0;
  const __m256 vc = _mm256_set1_ps(c);
  for (; i + 32 <= n; i += 32) {
    const __m256i p = _mm256_packs_epi16(
        _mm256_packs_epi32(plain_convert_avx2<Divide>(x + i, vc),
                           plain_convert_avx2<Divide>(x + i + 8, vc)),
        _mm256_packs_epi32(plain_convert_avx2<Divide>(x + i + 16, vc),
                           plain_convert_avx2<Divide>(x + i + 24, vc)));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(q + i),
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  scalar_tail(x, q, i, n, c, Divide);
}
#endif

template <bool Divide>
void plain_quantize(const float *x, int8_t *q, size_t n, float c) {
#if defined(QNT_BENCH_X86)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return plain_quantize_avx512<Divide>(x, q, n, c);
  if (__builtin_cpu_supports("avx2")) return plain_quantize_avx2<Divide>(x, q, n, c);
#endif
  scalar_tail(x, q, 0, n, c, Divide);
}

size_t bytes_of(qnt_dtype d, size_t n) {
  switch (d) {
    case QNT_DTYPE_I16: case QNT_DTYPE_U16: return 2 * n;
    case QNT_DTYPE_I8: case QNT_DTYPE_U8: return n;
    case QNT_DTYPE_BINARY: return n / 8;
    case QNT_DTYPE_TERNARY: return n / 4;
    default: return n / 2;
  }
}

}  // namespace

int main(int argc, char **argv) {
  check(QNT_ABI_CHECK(), "abi");
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const size_t big = quick ? (size_t{1} << 22) : (size_t{1} << 26);  // 64 Mi elements: 256 MiB
  const size_t alloc = std::max(big, size_t{4096} * 4096);  // the weight matrix needs 16 Mi
  std::vector<float> x(alloc), y(alloc);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t i = 0; i < alloc; i += 4096) {
    const float v = nd(rng);
    for (size_t k = i; k < std::min(alloc, i + 4096); ++k) x[k] = v + static_cast<float>(k - i) * 1e-4f;
  }
  std::vector<uint8_t> qbuf(alloc * 2);

  for (int threads : {1, 2}) {
    const double rbw = read_bw(x, threads), cbw = copy_bw(x, y, threads);
    g_read_bw = rbw;
    line("stream read", threads, 0, 0, "none", rbw);
    line("stream copy", threads, 0, 0, "none", cbw);
    qnt_context *ctx = nullptr;
    check(qnt_context_create(&ctx), "context");
    check(qnt_context_set_num_threads(ctx, threads), "threads");

    // quantize / dequantize, per tensor, per axis (axis 0 of [64, n / 64]) and per block (32
    // along the last axis), over 64 Mi elements.
    for (qnt_dtype d : {QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I16, QNT_DTYPE_U16}) {
      const char *dn = d == QNT_DTYPE_I8 ? "i8" : d == QNT_DTYPE_U8 ? "u8" : d == QNT_DTYPE_I16 ? "i16" : "u16";
      const int32_t zp = d == QNT_DTYPE_U8 ? 128 : d == QNT_DTYPE_U16 ? 32768 : 0;
      for (const char *g : {"per_tensor", "per_axis", "per_block32"}) {
        qnt_qparams *qp = nullptr;
        int64_t shape[2] = {64, static_cast<int64_t>(big / 64)};
        if (g[4] == 't') {
          check(qnt_qparams_create_per_tensor(d, 0.02f, zp, &qp), "qp");
        } else if (g[4] == 'a') {
          std::vector<float> s(64, 0.02f);
          std::vector<int32_t> z(64, zp);
          check(qnt_qparams_create_per_axis(d, 0, 64, s.data(), z.data(), &qp), "qp");
        } else {
          const size_t count = big / 32;
          std::vector<float> s(count, 0.02f);
          std::vector<int32_t> z(count, zp);
          check(qnt_qparams_create_per_block(d, 1, 32, count, s.data(), z.data(), &qp), "qp");
        }
        Tensor tx, tq, ty;
        check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 2, nullptr, x.data(), big * 4, &tx.t), "x");
        check(qnt_tensor_wrap(d, shape, 2, qp, qbuf.data(), bytes_of(d, big), &tq.t), "q");
        check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 2, nullptr, y.data(), big * 4, &ty.t), "y");
        const double bytes = static_cast<double>(big) * 4 + static_cast<double>(bytes_of(d, big));
        const double tqz = best_of(5, [&] { check(qnt_quantize(ctx, tx.t, tq.t), "quantize"); });
        line(std::string("quantize f32->") + dn + " " + g + " 64Mi", threads, tqz, bytes, "copy", cbw,
             static_cast<double>(big) * 4);
        if (g[4] == 't' || d == QNT_DTYPE_I8) {
          const double tdq = best_of(5, [&] { check(qnt_dequantize(ctx, tq.t, ty.t), "dequantize"); });
          line(std::string("dequantize ") + dn + "->f32 " + g + " 64Mi", threads, tdq, bytes, "copy", cbw,
               static_cast<double>(bytes_of(d, big)));
        }
        qnt_qparams_destroy(qp);
      }
    }

    // DRAM-sized quantize against the plain loop over the same 64 Mi (one thread; what the
    // machine gives a loop that reads floats and computes as it goes).
    if (threads == 1) {
      int64_t shape[1] = {static_cast<int64_t>(big)};
      qnt_qparams *qp = nullptr;
      check(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.02f, 0, &qp), "qp");
      Tensor tx, tq;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, x.data(), big * 4, &tx.t), "x");
      check(qnt_tensor_wrap(QNT_DTYPE_I8, shape, 1, qp, qbuf.data(), big, &tq.t), "q");
      const double plain = best_of(5, [&] {
        plain_quantize<false>(x.data(), reinterpret_cast<int8_t *>(qbuf.data() + big), big, 50.0f);
      });
      const double t = best_of(5, [&] { check(qnt_quantize(ctx, tx.t, tq.t), "quantize"); });
      line("plain loop f32->i8 64Mi (DRAM)", 1, plain, static_cast<double>(big) * 5, "copy", cbw,
           static_cast<double>(big) * 4);
      line("quantize f32->i8 per_tensor 64Mi vs the plain loop", 1, t, static_cast<double>(big),
           "plain", static_cast<double>(big) / plain);
      qnt_qparams_destroy(qp);
    }

    // L2-resident quantize (128 Ki elements) against the plain loop.
    {
      const size_t n = size_t{1} << 17;
      int64_t shape[1] = {static_cast<int64_t>(n)};
      qnt_qparams *qp = nullptr;
      check(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.02f, 0, &qp), "qp");
      Tensor tx, tq;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, x.data(), n * 4, &tx.t), "x");
      check(qnt_tensor_wrap(QNT_DTYPE_I8, shape, 1, qp, qbuf.data(), n, &tq.t), "q");
      qnt_context *one = nullptr;
      check(qnt_context_create(&one), "ctx");
      check(qnt_context_set_num_threads(one, 1), "threads");
      const double plain = best_of(50, [&] {
        plain_quantize<false>(x.data(), reinterpret_cast<int8_t *>(qbuf.data() + n), n, 50.0f);
      });
      const double plain_div = best_of(50, [&] {
        plain_quantize<true>(x.data(), reinterpret_cast<int8_t *>(qbuf.data() + n), n, 0.02f);
      });
      const double t = best_of(50, [&] { check(qnt_quantize(one, tx.t, tq.t), "quantize"); });
      if (threads == 1) {
        line("plain loop f32->i8 128Ki (L2)", 1, plain, static_cast<double>(n), "none", 0);
        line("plain loop, true division, 128Ki (L2)", 1, plain_div, static_cast<double>(n),
             "plain", static_cast<double>(n) / plain);
        line("quantize f32->i8 per_tensor 128Ki (L2)", 1, t, static_cast<double>(n), "plain",
             static_cast<double>(n) / plain);
        line("quantize f32->i8 vs the division loop (L2)", 1, t, static_cast<double>(n), "plain",
             static_cast<double>(n) / plain_div);
      }
      qnt_context_destroy(one);
      qnt_qparams_destroy(qp);
    }

    // Weight conversion, 4096 x 4096: int4 / uint4 blocks of 128, NF4 blocks of 64, ternary and
    // binary per row.
    {
      const size_t n = size_t{4096} * 4096;
      int64_t shape[2] = {4096, 4096};
      struct W { qnt_dtype d; const char *name; int64_t block; };
      const W ws[] = {{QNT_DTYPE_I4, "int4 block128", 128}, {QNT_DTYPE_U4, "uint4 block128", 128},
                      {QNT_DTYPE_NF4, "nf4 block64", 64}, {QNT_DTYPE_TERNARY, "ternary per-row", 0},
                      {QNT_DTYPE_BINARY, "binary per-row", 0}};
      for (const W &w : ws) {
        qnt_qparams *qp = nullptr;
        if (w.block > 0) {
          const size_t count = n / static_cast<size_t>(w.block);
          std::vector<float> s(count, 0.05f);
          std::vector<int32_t> z(count, w.d == QNT_DTYPE_U4 ? 8 : 0);
          check(qnt_qparams_create_per_block(w.d, 1, w.block, count, s.data(), z.data(), &qp), "qp");
        } else {
          std::vector<float> s(4096, 0.05f);
          check(qnt_qparams_create_per_axis(w.d, 0, 4096, s.data(), nullptr, &qp), "qp");
        }
        Tensor tx, tq;
        check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 2, nullptr, x.data(), n * 4, &tx.t), "x");
        check(qnt_tensor_wrap(w.d, shape, 2, qp, qbuf.data(), bytes_of(w.d, n), &tq.t), "q");
        const double t = best_of(10, [&] { check(qnt_quantize(ctx, tx.t, tq.t), "quantize"); });
        line(std::string("weights 4096x4096 -> ") + w.name, threads, t,
             static_cast<double>(n) * 4 + static_cast<double>(bytes_of(w.d, n)), "copy", cbw,
             static_cast<double>(n) * 4);
        qnt_qparams_destroy(qp);
      }
    }

    // One-shot min-max calibration, 64 Mi elements.
    {
      int64_t shape[1] = {static_cast<int64_t>(big)};
      Tensor tx;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, x.data(), big * 4, &tx.t), "x");
      const double t = best_of(5, [&] {
        qnt_qparams *qp = nullptr;
        check(qnt_calibrate_minmax(ctx, tx.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp), "minmax");
        qnt_qparams_destroy(qp);
      });
      line("calibrate_minmax 64Mi", threads, t, static_cast<double>(big) * 4, "read", rbw,
           static_cast<double>(big) * 4);
    }

    // Per-channel entropy / MSE / adaptive compute: 768 channels x 2048 bins.
    {
      const int64_t shape[2] = {768, 4096};
      Tensor tx;
      check(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 2, nullptr, x.data(), 768 * 4096 * 4, &tx.t), "x");
      for (qnt_calib_method m : {QNT_CALIB_ENTROPY, QNT_CALIB_MSE, QNT_CALIB_ADAPTIVE}) {
        qnt_calibrator *c = nullptr;
        check(qnt_calibrator_create(m, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS,
                                    0, &c), "calibrator");
        check(qnt_calibrator_observe(ctx, c, tx.t), "observe");
        const double t = best_of(2, [&] {
          qnt_qparams *qp = nullptr;
          check(qnt_calibrator_compute(ctx, c, &qp), "compute");
          qnt_qparams_destroy(qp);
        });
        const char *name = m == QNT_CALIB_ENTROPY ? "entropy" : m == QNT_CALIB_MSE ? "mse" : "adaptive";
        line(std::string("calibrator compute ") + name + " 768ch x 2048 bins", threads, t, 0, "none", 0);
        qnt_calibrator_destroy(c);
      }
    }
    qnt_context_destroy(ctx);
  }
  return 0;
}
