// The issue-10 workloads (the weight-only linear layer, LLM decode and prefill) through qnt's
// public API, beside the machine's limits and oneDNN, all measured in this run on 1 and 2
// threads:
//  - the DRAM read bandwidth (a streaming sum over 128 MiB), against which batch 1 is measured:
//    the prepared weights (qnt_prepared_packed_size: codes, scales, zero points) are rotated
//    over copies whose total exceeds the last-level cache, so every step reads them from DRAM;
//  - the FMA peak (independent vfmadd231ps chains in assembly), for the f32 mode at batch 16;
//  - oneDNN's f32 and u8s8s32 matmul of the same shape (weights reordered once, rotated too).
// Each format runs in the three modes (rows int8blk: block-dot, int8act: int8 activations, f32),
// batch 1 against the roofline, batch 16 of the two int8 modes against oneDNN's u8s8s32 GEMM.
// Then the weight conversion time (f32 -> int4 / NF4, calibrated, quantized and prepared), and
// the int8 mode's accuracy against the f32 mode (output SQNR) on LLM-like data.
// Prints TSV: work  threads  qnt_s  limit_or_peer  peer_s  ratio(peer_s / qnt_s)  bytes  GB/s
// usage: qnt_bench_weight_only [--quick]
#include <dnnl.hpp>
#include <omp.h>
#include <qnt/qnt.h>

#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

bool g_quick = false;
// For working on one kernel: --format NAME (repeatable) keeps those formats, --threads N runs
// on N threads only, --focus leaves out the 11008 shape, the peers, conversion and accuracy.
std::vector<std::string> g_formats;
int g_threads = 0;
bool g_focus = false;
bool g_zmm = false;  // the FMA peak on zmm (the kernels are AVX-512)

using qnt_bench::check;
using qnt_bench::make;
using T = qnt_bench::Tensor;
using qnt_bench::now;

// The best time of f over repeats filling about `budget` s (a fifth of it with --quick).
double best_time(const std::function<void()> &f, double budget = 0.5) {
  return qnt_bench::best_time(f, g_quick ? budget / 5 : budget, 5, 2000);
}

// The DRAM read bandwidth: each thread sums its part of 256 MiB as four interleaved sequential
// streams (one stream leaves a core short of lines in flight). main() takes the better of this
// and oneDNN's f32 GEMV bandwidth as the roofline.
double read_bw(int threads) {
  const size_t n = size_t{1} << 28;
  std::vector<uint64_t> v(n / 8, 1);
  volatile uint64_t sink = 0;
  const double t = best_time([&] {
    uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      const size_t per = v.size() / static_cast<size_t>(threads);
      const uint64_t *b = v.data() + per * static_cast<size_t>(omp_get_thread_num());
      const size_t q = per / 4;
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t i = 0; i < q; ++i) {
        s0 += b[i];
        s1 += b[q + i];
        s2 += b[2 * q + i];
        s3 += b[3 * q + i];
      }
      total += s0 + s1 + s2 + s3;
    }
    sink = sink + total;
  });
  return static_cast<double>(n) / t;
}

// FMA peak in GFLOPS: 10 independent chains of vfmadd231ps (ymm, or zmm where the weight-only
// kernels use AVX-512).
void fma_ymm(long iters) {
  __asm__ volatile(
      "vxorps %%xmm14, %%xmm14, %%xmm14\n\t"
      "vxorps %%xmm15, %%xmm15, %%xmm15\n\t"
      "1:\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm0\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm1\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm2\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm3\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm4\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm5\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm6\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm7\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm8\n\t"
      "vfmadd231ps %%ymm14, %%ymm15, %%ymm9\n\t"
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(iters)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm14", "xmm15", "cc");
}
void fma_zmm(long iters) {
  __asm__ volatile(
      "vxorps %%xmm14, %%xmm14, %%xmm14\n\t"
      "vxorps %%xmm15, %%xmm15, %%xmm15\n\t"
      "1:\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm0\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm1\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm2\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm3\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm4\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm5\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm6\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm7\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm8\n\t"
      "vfmadd231ps %%zmm14, %%zmm15, %%zmm9\n\t"
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(iters)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm14", "xmm15", "cc");
}
// `iters` steps of the FMA loop on every one of `threads`, and the GFLOPS of taking dt for it.
void fma_loop(bool zmm, int threads, long iters) {
#pragma omp parallel num_threads(threads)
  {
    if (zmm)
      fma_zmm(iters);
    else
      fma_ymm(iters);
  }
}
double fma_gflops_of(bool zmm, int threads, long iters, double dt) {
  return 10.0 * (zmm ? 32 : 16) * static_cast<double>(iters) * threads / dt / 1e9;
}
double fma_peak(bool zmm, int threads) {
  const long iters = g_quick ? 20000000 : 50000000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = now();
    fma_loop(zmm, threads, iters);
    best = std::max(best, fma_gflops_of(zmm, threads, iters, now() - t0));
  }
  return best;
}

std::vector<float> normal(size_t n, float sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sd);
  std::vector<float> v(n);
  for (auto &x : v) x = d(rng);
  return v;
}

struct Format {
  const char *name;
  qnt_dtype dtype;
  qnt_scheme scheme;
  int64_t block;
};

// w [N, K] quantized to the format (calibrated per block along K).
qnt_tensor *quantized(const std::vector<float> &w, int64_t N, int64_t K, const Format &f) {
  T tw;
  tw.t = make(QNT_DTYPE_F32, {N, K}, nullptr, w.data(), 4 * w.size());
  qnt_qparams *qp = nullptr;
  if (f.dtype == QNT_DTYPE_NF4)
    check(qnt_calibrate_codebook(nullptr, tw.t, f.dtype, QNT_GRANULARITY_PER_BLOCK, 1, f.block, &qp), "cal");
  else
    check(qnt_calibrate_minmax(nullptr, tw.t, f.dtype, f.scheme, QNT_GRANULARITY_PER_BLOCK, 1, f.block, &qp),
          "cal");
  qnt_tensor *q = make(f.dtype, {N, K}, qp);
  qnt_qparams_destroy(qp);
  check(qnt_quantize(nullptr, tw.t, q), "quantize");
  return q;
}

qnt_prepared *prepare(qnt_context *ctx, const qnt_tensor *w, int64_t mode) {
  qnt_op_desc *d = nullptr;
  check(qnt_op_desc_create(&d), "desc");
  check(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, mode), "mode");
  qnt_prepared *p = nullptr;
  check(qnt_prepared_create_linear_weight_only(ctx, w, nullptr, d, &p), "prepare");
  qnt_op_desc_destroy(d);
  return p;
}

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

// oneDNN matmul [M, K] x [K, N] (f32, or u8 x s8 -> s32), weights reordered once.
struct DnnlMatmul {
  engine eng{engine::kind::cpu, 0};
  stream st{eng};
  memory a, b, c;
  matmul prim;
  DnnlMatmul(int64_t M, int64_t K, int64_t N, bool int8, unsigned seed) {
    const dt at = int8 ? dt::u8 : dt::f32, bt = int8 ? dt::s8 : dt::f32, ct = int8 ? dt::s32 : dt::f32;
    memory::desc a_md({M, K}, at, tag::ab), b_md({K, N}, bt, tag::any), c_md({M, N}, ct, tag::ab);
    matmul::primitive_desc pd(matmul::desc(a_md, b_md, c_md), eng);
    a = memory(a_md, eng);
    std::memset(a.get_data_handle(), 1, a_md.get_size());
    memory b_user({{K, N}, bt, tag::ab}, eng);
    std::mt19937 rng(seed);
    auto *bp = static_cast<uint8_t *>(b_user.get_data_handle());
    for (size_t i = 0; i < b_user.get_desc().get_size(); ++i) bp[i] = static_cast<uint8_t>(rng() & 0x3F);
    b = memory(pd.weights_desc(), eng);
    reorder(b_user, b).execute(st, b_user, b);
    c = memory(c_md, eng);
    prim = matmul(pd);
  }
  void run() {
    prim.execute(st, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    st.wait();
  }
};

// oneDNN's matmul over `copies` rotated weight copies, one copy a run.
struct DnnlCopies {
  std::vector<std::unique_ptr<DnnlMatmul>> v;
  size_t next = 0;
  DnnlCopies(int64_t M, int64_t K, int64_t N, bool int8, int copies) {
    for (int i = 0; i < copies; ++i) v.push_back(std::make_unique<DnnlMatmul>(M, K, N, int8, 7 + i));
  }
  void run() {
    v[next]->run();
    next = (next + 1) % v.size();
  }
};

// The best time of oneDNN's matmul over `copies` rotated weight copies.
double dnnl_time(int64_t M, int64_t K, int64_t N, bool int8, int copies, int threads) {
  DnnlCopies d(M, K, N, int8, copies);
  omp_set_num_threads(threads);
  return best_time([&] { d.run(); });
}

size_t llc_bytes();

// The u8s8s32 matmul over rotated copies whose total exceeds the last-level cache, as qnt's
// weights are (two copies had left oneDNN's 16 MiB of weights in a 300 MiB L3 against qnt's
// from DRAM), or one copy under QNT_BENCH_HOT; kept for the shape and thread count of the last
// call (batch 16 of every format alternates with it).
DnnlCopies &dnnl_copies(int64_t M, int64_t K, int64_t N, int threads) {
  static std::unique_ptr<DnnlCopies> d;
  static std::string key;
  const std::string k = std::to_string(M) + " " + std::to_string(K) + " " + std::to_string(N) + " " +
                        std::to_string(threads);
  if (key != k) {
    d.reset();
    const double bytes = static_cast<double>(K) * static_cast<double>(N);
    const int copies = std::getenv("QNT_BENCH_HOT")
                           ? 1
                           : static_cast<int>(std::max<double>(2, 2.0 * llc_bytes() / bytes + 1));
    d = std::make_unique<DnnlCopies>(M, K, N, true, copies);
    key = k;
  }
  return *d;
}

// Alternating turns of fs (qnt_bench::best_times) over about twice best_time's budget.
std::vector<double> best_times(const std::vector<std::function<void()>> &fs) {
  return qnt_bench::best_times(fs, g_quick ? 0.2 : 1.0, g_quick ? 2 : 4, 3);
}

size_t llc_bytes() {
  size_t l3 = 0;
  qnt_context *c = nullptr;
  if (qnt_context_create(&c) == QNT_OK) {
    if (qnt_context_cache_size(c, 3, &l3) != QNT_OK) l3 = 0;
    qnt_context_destroy(c);
  }
  return l3 > 0 ? l3 : size_t{32} << 20;
}

void row(const std::string &work, int threads, double qs, const std::string &peer, double ps,
         double bytes) {
  std::printf("%s\t%d\t%.6g\t%s\t%.6g\t%.3f\t%.6g\t%.2f\n", work.c_str(), threads, qs, peer.c_str(),
              ps, ps > 0 ? ps / qs : 0.0, bytes, bytes / qs / 1e9);
  std::fflush(stdout);
}

const char *mode_name(int64_t mode) {
  return mode == QNT_WEIGHT_ONLY_F32 ? "f32" : mode == QNT_WEIGHT_ONLY_INT8_ACT ? "int8act" : "int8blk";
}

void bench_shape(int64_t N, int64_t K, int threads, double bw, double fma_gflops) {
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  std::vector<Format> formats = {{"i4_sym_b32", QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, 32},
                                 {"i4_sym_b128", QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, 128},
                                 {"u4_affine_b32", QNT_DTYPE_U4, QNT_SCHEME_AFFINE, 32},
                                 {"u4_affine_b128", QNT_DTYPE_U4, QNT_SCHEME_AFFINE, 128},
                                 {"nf4_b64", QNT_DTYPE_NF4, QNT_SCHEME_SYMMETRIC, 64},
                                 {"i8_sym_b128", QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, 128}};
  if (g_quick) formats = {formats[1], formats[4]};
  if (!g_formats.empty())
    formats.erase(std::remove_if(formats.begin(), formats.end(),
                                 [](const Format &f) {
                                   return std::find(g_formats.begin(), g_formats.end(),
                                                    std::string(f.name)) == g_formats.end();
                                 }),
                  formats.end());
  const std::string shape = "N" + std::to_string(N) + " K" + std::to_string(K);
  const auto w = normal(static_cast<size_t>(N * K), 0.02f, 1);
  for (const Format &f : formats) {
    T wq;
    wq.t = quantized(w, N, K, f);
    for (int64_t mode : {QNT_WEIGHT_ONLY_INT8_BLOCK, QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_F32}) {
      // Copies rotated so that their total exceeds the last-level cache.
      std::vector<qnt_prepared *> ps;
      size_t bytes = 0;
      ps.push_back(prepare(ctx, wq.t, mode));
      check(qnt_prepared_packed_size(ps[0], &bytes), "size");
      // QNT_BENCH_HOT=1: one copy, from the cache (the kernels' compute rate, for working on them).
      const size_t copies =
          std::getenv("QNT_BENCH_HOT") ? 1 : std::max<size_t>(2, 2 * llc_bytes() / bytes + 1);
      while (ps.size() < copies) ps.push_back(prepare(ctx, wq.t, mode));
      for (int64_t M : {int64_t{1}, int64_t{16}}) {
        const auto xv = normal(static_cast<size_t>(M * K), 1.0f, 2);
        T x, y;
        x.t = make(QNT_DTYPE_F32, {M, K}, nullptr, xv.data(), 4 * xv.size());
        y.t = make(QNT_DTYPE_F32, {M, N}, nullptr);
        size_t next = 0;
        auto run = [&] {
          check(qnt_prepared_run(ctx, ps[next], x.t, y.t), "run");
          next = (next + 1) % ps.size();
        };
        // Batch 16: qnt and its reference (the FMA loop of fma_peak, or oneDNN's GEMM over its
        // own rotated copies) in alternating turns (qnt_bench::best_times); the FMA peak is the
        // better of this reading and main's.
        double qs = 0, peer_s = 0, fma_now = fma_gflops;
        if (M == 16 && mode == QNT_WEIGHT_ONLY_F32) {
          const long iters = 1000000;
          const auto ts = best_times({run, [&] { fma_loop(g_zmm, threads, iters); }});
          qs = ts[0];
          fma_now = std::max(fma_gflops, fma_gflops_of(g_zmm, threads, iters, ts[1]));
        } else if (M == 16) {
          omp_set_num_threads(threads);
          DnnlCopies &d = dnnl_copies(M, K, N, threads);
          const auto ts = best_times({run, [&] { d.run(); }});
          qs = ts[0];
          peer_s = ts[1];
        } else {
          qs = best_time(run);
        }
        const std::string work = std::string("wo_") + mode_name(mode) + " " + f.name + " M" +
                                 std::to_string(M) + " " + shape;
        if (M == 1) {
          row(work, threads, qs, "dram_roofline", static_cast<double>(bytes) / bw,
              static_cast<double>(bytes));
        } else if (mode == QNT_WEIGHT_ONLY_F32) {
          row(work, threads, qs, "fma_peak", 2.0 * M * N * K / (fma_now * 1e9),
              static_cast<double>(bytes));
        }
        if (M == 16 && mode != QNT_WEIGHT_ONLY_F32)
          row(work, threads, qs, "onednn_u8s8s32", peer_s, static_cast<double>(bytes));
      }
      for (auto *p : ps) qnt_prepared_destroy(p);
    }
  }
  if (g_focus) {
    qnt_context_destroy(ctx);
    return;
  }
  // The peers at batch 1: oneDNN's f32 and int8 GEMV, weights from DRAM.
  const double f32_bytes = 4.0 * N * K, i8_bytes = 1.0 * N * K;
  const int f32_copies = static_cast<int>(std::max<double>(2, 2.0 * llc_bytes() / f32_bytes + 1));
  const int i8_copies = static_cast<int>(std::max<double>(2, 2.0 * llc_bytes() / i8_bytes + 1));
  const double df = dnnl_time(1, K, N, false, f32_copies, threads);
  row("onednn_f32_gemv M1 " + shape, threads, df, "dram_roofline", f32_bytes / bw, f32_bytes);
  const double di = dnnl_time(1, K, N, true, i8_copies, threads);
  row("onednn_u8s8s32_gemv M1 " + shape, threads, di, "dram_roofline", i8_bytes / bw, i8_bytes);
  qnt_context_destroy(ctx);
}

// f32 -> prepared int4 / NF4: calibration, quantization and packing of a 4096 x 4096 matrix.
void bench_conversion(int threads) {
  const int64_t N = 4096, K = 4096;
  const auto w = normal(static_cast<size_t>(N * K), 0.02f, 3);
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  T tw;
  tw.t = make(QNT_DTYPE_F32, {N, K}, nullptr, w.data(), 4 * w.size());
  for (const Format &f : {Format{"i4_sym_b128", QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, 128},
                          Format{"nf4_b64", QNT_DTYPE_NF4, QNT_SCHEME_SYMMETRIC, 64}}) {
    for (int64_t mode : {QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT}) {
      const double s = best_time([&] {
        qnt_qparams *qp = nullptr;
        if (f.dtype == QNT_DTYPE_NF4)
          check(qnt_calibrate_codebook(ctx, tw.t, f.dtype, QNT_GRANULARITY_PER_BLOCK, 1, f.block, &qp), "cal");
        else
          check(qnt_calibrate_minmax(ctx, tw.t, f.dtype, f.scheme, QNT_GRANULARITY_PER_BLOCK, 1, f.block, &qp),
                "cal");
        qnt_tensor *q = make(f.dtype, {N, K}, qp);
        check(qnt_quantize(ctx, tw.t, q), "quantize");
        qnt_prepared *p = prepare(ctx, q, mode);
        qnt_prepared_destroy(p);
        qnt_tensor_destroy(q);
        qnt_qparams_destroy(qp);
      }, 1.0);
      row(std::string("convert_f32_to_prepared ") + f.name + " " + mode_name(mode) + " N4096 K4096",
          threads, s, "target_20ms", 0.020, 4.0 * N * K);
    }
  }
  qnt_context_destroy(ctx);
}

// The int8 mode against the f32 mode on LLM-like data: weights with heavy tails (Student-t,
// 3 degrees of freedom), activations with a few outlier channels 20x the others.
void accuracy() {
  const int64_t N = 1024, K = 4096, M = 8;
  std::mt19937 rng(9);
  std::student_t_distribution<float> t3(3.0f);
  std::vector<float> w(static_cast<size_t>(N * K));
  for (auto &v : w) v = 0.01f * t3(rng);
  auto x = normal(static_cast<size_t>(M * K), 1.0f, 10);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; k += 331) x[static_cast<size_t>(m * K + k)] *= 20.0f;
  T tx, y1, y2;
  tx.t = make(QNT_DTYPE_F32, {M, K}, nullptr, x.data(), 4 * x.size());
  y1.t = make(QNT_DTYPE_F32, {M, N}, nullptr);
  y2.t = make(QNT_DTYPE_F32, {M, N}, nullptr);
  for (const Format &f : {Format{"i4_sym_b32", QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, 32},
                          Format{"u4_affine_b128", QNT_DTYPE_U4, QNT_SCHEME_AFFINE, 128},
                          Format{"nf4_b64", QNT_DTYPE_NF4, QNT_SCHEME_SYMMETRIC, 64},
                          Format{"i8_sym_b128", QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, 128}}) {
    T wq;
    wq.t = quantized(w, N, K, f);
    qnt_prepared *pf = prepare(nullptr, wq.t, QNT_WEIGHT_ONLY_F32);
    qnt_prepared *pi = prepare(nullptr, wq.t, QNT_WEIGHT_ONLY_INT8_ACT);
    check(qnt_prepared_run(nullptr, pf, tx.t, y1.t), "f32");
    check(qnt_prepared_run(nullptr, pi, tx.t, y2.t), "int8");
    std::vector<float> a(static_cast<size_t>(M * N)), b(a.size());
    check(qnt_tensor_copy_to(y1.t, a.data(), 4 * a.size()), "copy");
    check(qnt_tensor_copy_to(y2.t, b.data(), 4 * b.size()), "copy");
    double sig = 0, noise = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      sig += static_cast<double>(a[i]) * a[i];
      noise += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    }
    std::printf("# accuracy %s: int8-activation mode vs f32 mode, output SQNR %.1f dB\n", f.name,
                10.0 * std::log10(sig / noise));
    qnt_prepared_destroy(pf);
    qnt_prepared_destroy(pi);
  }
}

}  // namespace

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) g_quick = true;
    if (std::strcmp(argv[i], "--focus") == 0) g_focus = true;
    if (std::strcmp(argv[i], "--format") == 0 && i + 1 < argc) g_formats.push_back(argv[++i]);
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) g_threads = std::atoi(argv[++i]);
  }
  qnt_context *c = nullptr;
  check(qnt_context_create(&c), "ctx");
  const char *kernels = nullptr;
  check(qnt_context_kernels(c, &kernels), "kernels");
  const char *k = std::strstr(kernels, "linear.weight_only=");
  const std::string wo = k ? std::string(k + 19, std::strcspn(k + 19, "\n")) : "?";
  qnt_context_destroy(c);
  std::printf("# qnt weight-only kernels: %s; oneDNN %d.%d\n", wo.c_str(), dnnl_version()->major,
              dnnl_version()->minor);
  std::printf("work\tthreads\tqnt_s\tlimit_or_peer\tpeer_s\tratio\tbytes\tqnt_GB/s\n");
  const bool zmm = wo.rfind("avx512", 0) == 0;
  g_zmm = zmm;
  for (int threads : {1, 2}) {
    if (g_threads > 0 && threads != g_threads) continue;
    // The roofline is the better of two same-run readings: the streaming sum above, and the
    // weight bandwidth of oneDNN's f32 GEMV at 4096 x 4096 (which, from its many prefetch streams,
    // can read faster than the plain loop; a limit that a peer beats is no limit).
    const double stream_bw = read_bw(threads);
    const double gemv_bytes = 4.0 * 4096 * 4096;
    const int gemv_copies =
        static_cast<int>(std::max<double>(2, 2.0 * llc_bytes() / gemv_bytes + 1));
    const double gemv_bw = gemv_bytes / dnnl_time(1, 4096, 4096, false, gemv_copies, threads);
    const double bw = std::max(stream_bw, gemv_bw);
    const double fma = fma_peak(zmm, threads);
    std::printf("# threads %d: read bandwidth %.2f GB/s (streaming sum %.2f, oneDNN f32 GEMV "
                "%.2f), FMA peak %.1f GFLOPS (%s)\n",
                threads, bw / 1e9, stream_bw / 1e9, gemv_bw / 1e9, fma, zmm ? "zmm" : "ymm");
    bench_shape(4096, 4096, threads, bw, fma);
    if (g_focus) continue;
    if (!g_quick) bench_shape(11008, 4096, threads, bw, fma);
    bench_conversion(threads);
  }
  if (!g_focus) accuracy();
  return 0;
}
