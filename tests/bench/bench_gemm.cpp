// The issue-9 workloads (the int8 GEMM family) through qnt's public API, side by side with
// oneDNN (Debian's libdnnl-dev: matmul and convolution primitives with weights reordered once)
// and the machine's own limits, all measured in this run on 1 and 2 threads:
//  - the integer multiply peak of the exact instruction qnt's chosen GEMM kernel uses
//    (vpdpbusd with VNNI, vpmaddwd otherwise), from a loop of independent chains;
//  - the read bandwidth, for the GEMV whose weights come from DRAM.
// Prints TSV: work  threads  qnt_s  peer  peer_s  ratio(peer_s / qnt_s)  ops  qnt_gops  limit_gops
// usage: qnt_bench_gemm [--quick]
#include <dnnl.hpp>
#include <immintrin.h>
#include <omp.h>
#include <qnt/qnt.h>

#include "bench_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

bool g_quick = false;
// --shape M,K,N (repeatable): the GEMM section's shapes instead of its own.
std::vector<std::array<int64_t, 3>> g_shapes;

using qnt_bench::check;
using qnt_bench::make;
using qnt_bench::Tensor;
using qnt_bench::now;

// The best time of f over repeats filling about 0.4 s (0.08 s with --quick).
double best_time(const std::function<void()> &f) {
  return qnt_bench::best_time(f, g_quick ? 0.08 : 0.4, 3, 1000);
}
// qnt's time and its peer's, timed in alternating turns (qnt_bench::best_times) over the same
// total budget as two best_time calls.
const double kBudget = 0.4;
std::vector<double> pair_times(const std::function<void()> &q, const std::function<void()> &peer) {
  return qnt_bench::best_times({q, peer}, g_quick ? kBudget / 5 : kBudget, g_quick ? 2 : 4);
}

// The peak of the exact multiply instruction, GOPS (2 ops per multiply-add) on `threads`, from
// an assembly loop the compiler cannot reshape: independent vpmaddwd + vpaddd pairs (what the
// int16 tiles issue per 16 multiply-adds), or independent vpdpbusd chains.
double peak_avx2_once(long iters) {
  __asm__ volatile(
      "vpxor %%xmm14, %%xmm14, %%xmm14\n\t"
      "vpxor %%xmm15, %%xmm15, %%xmm15\n\t"
      "1:\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm0\n\t"
      "vpaddd %%ymm0, %%ymm1, %%ymm1\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm2\n\t"
      "vpaddd %%ymm2, %%ymm3, %%ymm3\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm4\n\t"
      "vpaddd %%ymm4, %%ymm5, %%ymm5\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm6\n\t"
      "vpaddd %%ymm6, %%ymm7, %%ymm7\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm8\n\t"
      "vpaddd %%ymm8, %%ymm9, %%ymm9\n\t"
      "vpmaddwd %%ymm14, %%ymm15, %%ymm10\n\t"
      "vpaddd %%ymm10, %%ymm11, %%ymm11\n\t"
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(iters)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm14", "xmm15", "cc");
  return 0;
}
double peak_vnni_once(long iters) {
  __asm__ volatile(
      "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
      "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
      "1:\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm0\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm1\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm2\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm3\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm4\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm5\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm6\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm7\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm8\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm9\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm10\n\t"
      "vpdpbusd %%zmm14, %%zmm15, %%zmm11\n\t"
      "dec %0\n\t"
      "jnz 1b\n\t"
      "vzeroupper\n\t"
      : "+r"(iters)
      :
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
        "xmm10", "xmm11", "xmm14", "xmm15", "cc");
  return 0;
}
// vpdpbusd: 64 multiply-adds per zmm (12 per iteration); vpmaddwd: 16 per ymm (6 per iteration).
double peak_gops(bool vnni, int threads) {
  const long iters = g_quick ? 20000000 : 50000000;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {  // the best of three (the first also warms the clock up)
    volatile double sink = 0;
    const double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += vnni ? peak_vnni_once(iters) : peak_avx2_once(iters);
    const double dt = now() - t0;
    const double macs = vnni ? 12.0 * 64 : 6.0 * 16;
    best = std::max(best, 2.0 * macs * static_cast<double>(iters) * threads / dt / 1e9);
  }
  return best;
}

double read_bw(int threads) {
  const size_t n = size_t{1} << 27;  // 128 MiB
  std::vector<uint64_t> v(n / 8, 1);
  volatile uint64_t sink = 0;
  const double t = best_time([&] {
    uint64_t s = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : s)
    for (size_t i = 0; i < v.size(); ++i) s += v[i];
    sink = sink + s;
  });
  return static_cast<double>(n) / t;
}

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto &x : v) x = static_cast<uint8_t>(rng());
  return v;
}

void row(const std::string &work, int threads, double qs, const char *peer, double ps, double ops,
         double limit_gops) {
  std::printf("%s\t%d\t%.6g\t%s\t%.6g\t%.3f\t%.6g\t%.2f\t%.2f\n", work.c_str(), threads, qs, peer,
              ps, ps > 0 ? ps / qs : 0.0, ops, ops / qs / 1e9, limit_gops);
  std::fflush(stdout);
}

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

// oneDNN matmul u8 x s8 with weights in its own layout (reordered once).
struct DnnlMatmul {
  engine eng{engine::kind::cpu, 0};
  stream st{eng};
  memory a, b, c, bias;
  matmul prim;
  DnnlMatmul(int64_t M, int64_t K, int64_t N, dt out, bool with_bias, const std::vector<float> &scales,
             const uint8_t *av, const uint8_t *bv) {
    memory::desc a_md({M, K}, dt::u8, tag::ab), b_md({K, N}, dt::s8, tag::any),
        c_md({M, N}, out, tag::ab), bias_md({1, N}, dt::f32, tag::ab);
    primitive_attr attr;
    if (!scales.empty()) attr.set_output_scales(1 << 1, scales);
    auto d = with_bias ? matmul::desc(a_md, b_md, bias_md, c_md) : matmul::desc(a_md, b_md, c_md);
    matmul::primitive_desc pd(d, attr, eng);
    a = memory(a_md, eng);
    std::memcpy(a.get_data_handle(), av, static_cast<size_t>(M * K));
    memory b_user({{K, N}, dt::s8, tag::ab}, eng);
    std::memcpy(b_user.get_data_handle(), bv, static_cast<size_t>(K * N));
    b = memory(pd.weights_desc(), eng);
    reorder(b_user, b).execute(st, b_user, b);
    c = memory(c_md, eng);
    if (with_bias) {
      bias = memory(bias_md, eng);
      std::fill_n(static_cast<float *>(bias.get_data_handle()), N, 0.25f);
    }
    prim = matmul(pd);
  }
  void run() {
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
    if (bias) args[DNNL_ARG_BIAS] = bias;
    prim.execute(st, args);
    st.wait();
  }
};

void bench_gemm(int threads, double limit) {
  omp_set_num_threads(threads);  // before oneDNN creates its primitives, which keep the count
  std::vector<std::array<int64_t, 3>> shapes = {{256, 256, 256},   {512, 512, 512},
                                                {1024, 1024, 1024}, {2048, 2048, 2048},
                                                {16, 4096, 4096},  {128, 4096, 4096},
                                                {1, 4096, 4096}};
  if (g_quick) shapes = {{512, 512, 512}, {16, 4096, 4096}, {1, 4096, 4096}};
  if (!g_shapes.empty()) shapes = g_shapes;
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  for (const auto &s : shapes) {
    const int64_t M = s[0], K = s[1], N = s[2];
    const auto av = random_bytes(static_cast<size_t>(M * K), 1);
    const auto bv = random_bytes(static_cast<size_t>(K * N), 2);
    Tensor a, b, y;
    a.t = make(QNT_DTYPE_U8, {M, K}, nullptr, av.data(), av.size());
    b.t = make(QNT_DTYPE_I8, {K, N}, nullptr, bv.data(), bv.size());
    y.t = make(QNT_DTYPE_I32, {M, N}, nullptr);
    qnt_prepared *p = nullptr;
    check(qnt_prepared_create_matmul(ctx, b.t, nullptr, nullptr, &p), "prepare");
    DnnlMatmul d(M, K, N, dt::s32, false, {}, av.data(), bv.data());
    omp_set_num_threads(threads);
    const auto ts = pair_times([&] { check(qnt_prepared_run(ctx, p, a.t, y.t), "run"); }, [&] { d.run(); });
    qnt_prepared_destroy(p);
    const double qs = ts[0], ds = ts[1];
    const std::string name = "gemm_u8s8s32 M" + std::to_string(M) + " K" + std::to_string(K) +
                             " N" + std::to_string(N);
    row(name, threads, qs, "onednn", ds, 2.0 * M * K * N, limit);
  }
  // GEMV with the weights from DRAM: copies of B rotated so that none is in cache.
  if (g_shapes.empty()) {
    const int64_t K = 4096, N = 4096;
    const int copies = g_quick ? 4 : 8;
    const auto av = random_bytes(static_cast<size_t>(K), 3);
    Tensor a, y;
    a.t = make(QNT_DTYPE_U8, {1, K}, nullptr, av.data(), av.size());
    y.t = make(QNT_DTYPE_I32, {1, N}, nullptr);
    std::vector<qnt_prepared *> ps;
    for (int i = 0; i < copies; ++i) {
      const auto bv = random_bytes(static_cast<size_t>(K * N), 10 + static_cast<unsigned>(i));
      Tensor b;
      b.t = make(QNT_DTYPE_I8, {K, N}, nullptr, bv.data(), bv.size());
      qnt_prepared *p = nullptr;
      check(qnt_prepared_create_matmul(ctx, b.t, nullptr, nullptr, &p), "prepare");
      ps.push_back(p);
    }
    int next = 0;
    const double qs = best_time([&] {
      check(qnt_prepared_run(ctx, ps[static_cast<size_t>(next)], a.t, y.t), "run");
      next = (next + 1) % copies;
    });
    for (auto *p : ps) qnt_prepared_destroy(p);
    const double bw = read_bw(threads);
    // The read roofline: K * N weight bytes at the machine's read bandwidth.
    std::printf("gemv_dram M1 K4096 N4096\t%d\t%.6g\troofline\t%.6g\t%.3f\t%.6g\t%.2f\t%.2f\n",
                threads, qs, static_cast<double>(K * N) / bw, static_cast<double>(K * N) / bw / qs,
                2.0 * K * N, 2.0 * K * N / qs / 1e9, limit);
  }
  qnt_context_destroy(ctx);
}

void bench_linear(int threads, double limit) {
  omp_set_num_threads(threads);  // before oneDNN creates its primitives, which keep the count
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  const int64_t K = 4096, N = 4096;
  const auto wv = random_bytes(static_cast<size_t>(N * K), 4);
  std::vector<float> sw(static_cast<size_t>(N));
  for (size_t i = 0; i < sw.size(); ++i) sw[i] = 0.001f + 0.0001f * static_cast<float>(i % 7);
  std::vector<int32_t> zw(static_cast<size_t>(N), 0);
  qnt_qparams *wq = nullptr;
  check(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, static_cast<size_t>(N), sw.data(), zw.data(), &wq), "wq");
  Tensor w, bias;
  w.t = make(QNT_DTYPE_I8, {N, K}, wq, wv.data(), wv.size());
  std::vector<float> bv(static_cast<size_t>(N), 0.25f);
  bias.t = make(QNT_DTYPE_F32, {N}, nullptr, bv.data(), 4 * bv.size());
  // The oneDNN weights are w transposed ([K, N]).
  std::vector<uint8_t> wt(wv.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wt[static_cast<size_t>(k * N + n)] = wv[static_cast<size_t>(n * K + k)];
  qnt_prepared *dyn = nullptr;
  check(qnt_prepared_create_linear_dynamic(ctx, w.t, bias.t, nullptr, &dyn), "dyn");
  qnt_qparams *xq = nullptr, *yq = nullptr;
  check(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.02f, 128, &xq), "xq");
  check(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.5f, 100, &yq), "yq");
  qnt_prepared *stat = nullptr;
  check(qnt_prepared_create_linear_static(ctx, w.t, bias.t, xq, yq, nullptr, &stat), "static");
  std::vector<int64_t> batches = {1, 16, 128};
  for (int64_t M : batches) {
    std::vector<float> xv(static_cast<size_t>(M * K));
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (auto &v : xv) v = nd(rng);
    const auto xb = random_bytes(static_cast<size_t>(M * K), 6);
    Tensor x, y, xs, ys;
    x.t = make(QNT_DTYPE_F32, {M, K}, nullptr, xv.data(), 4 * xv.size());
    y.t = make(QNT_DTYPE_F32, {M, N}, nullptr);
    xs.t = make(QNT_DTYPE_U8, {M, K}, xq, xb.data(), xb.size());
    ys.t = make(QNT_DTYPE_U8, {M, N}, yq);
    DnnlMatmul g(M, K, N, dt::s32, false, {}, xb.data(), wt.data());
    std::vector<float> scales(static_cast<size_t>(N));
    for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.02f * sw[i] / 0.5f;
    DnnlMatmul st(M, K, N, dt::u8, true, scales, xb.data(), wt.data());
    omp_set_num_threads(threads);
    const auto ts = qnt_bench::best_times(
        {[&] { check(qnt_prepared_run(ctx, dyn, x.t, y.t), "dyn"); },
         [&] { check(qnt_prepared_run(ctx, stat, xs.t, ys.t), "static"); }, [&] { g.run(); },
         [&] { st.run(); }},
        2 * (g_quick ? kBudget / 5 : kBudget), g_quick ? 2 : 4);
    const double qd = ts[0], qst = ts[1], dg = ts[2], dst = ts[3];
    const double ops = 2.0 * M * K * N;
    row("linear_dynamic_f32 M" + std::to_string(M) + " K4096 N4096 (vs onednn static s32 gemm)",
        threads, qd, "onednn_gemm", dg, ops, limit);
    row("linear_static_u8 M" + std::to_string(M) + " K4096 N4096 f32 bias", threads, qst,
        "onednn", dst, ops, limit);
  }
  qnt_prepared_destroy(dyn);
  qnt_prepared_destroy(stat);
  qnt_qparams_destroy(wq);
  qnt_qparams_destroy(xq);
  qnt_qparams_destroy(yq);
  qnt_context_destroy(ctx);
}

void bench_conv(int threads, double limit) {
  omp_set_num_threads(threads);  // before oneDNN creates its primitives, which keep the count
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  struct Shape {
    int64_t C, H, G;  // G: groups (G == C: depthwise)
  };
  for (const Shape s : {Shape{64, 56, 1}, Shape{256, 14, 1}, Shape{256, 28, 256}}) {
    const int64_t C = s.C, H = s.H, W = s.H, M = s.C, G = s.G, Cg = C / G;
    const auto xv = random_bytes(static_cast<size_t>(C * H * W), 7);
    const auto wv = random_bytes(static_cast<size_t>(M * Cg * 9), 8);
    std::vector<float> sw(static_cast<size_t>(M), 0.003f), bv(static_cast<size_t>(M), 0.1f);
    std::vector<int32_t> zw(static_cast<size_t>(M), 0);
    qnt_qparams *wq = nullptr, *xq = nullptr, *yq = nullptr;
    check(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, static_cast<size_t>(M), sw.data(), zw.data(), &wq), "wq");
    check(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.02f, 128, &xq), "xq");
    check(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 0.1f, 100, &yq), "yq");
    Tensor w, bias;
    w.t = make(QNT_DTYPE_I8, {M, Cg, 3, 3}, wq, wv.data(), wv.size());
    bias.t = make(QNT_DTYPE_F32, {M}, nullptr, bv.data(), 4 * bv.size());
    // The prepared convolution of weights wt in one layout (pad 1, G groups), with its x and y.
    struct ConvRun {
      Tensor x, y;
      qnt_prepared *p = nullptr;
      ~ConvRun() { qnt_prepared_destroy(p); }
    };
    auto make_conv = [&](const Tensor &wt, int layout, const char *what) {
      auto r = std::make_unique<ConvRun>();
      qnt_op_desc *d = nullptr;
      check(qnt_op_desc_create(&d), "desc");
      for (qnt_op_option k : {QNT_OP_PAD_TOP, QNT_OP_PAD_LEFT, QNT_OP_PAD_BOTTOM, QNT_OP_PAD_RIGHT})
        check(qnt_op_desc_set(d, k, 1), "pad");
      check(qnt_op_desc_set(d, QNT_OP_LAYOUT, layout), "layout");
      check(qnt_op_desc_set(d, QNT_OP_GROUPS, G), "groups");
      const bool nhwc = layout == QNT_LAYOUT_NHWC;
      r->x.t = make(QNT_DTYPE_U8, nhwc ? std::vector<int64_t>{1, H, W, C} : std::vector<int64_t>{1, C, H, W},
                    xq, xv.data(), xv.size());
      r->y.t = make(QNT_DTYPE_U8, nhwc ? std::vector<int64_t>{1, H, W, M} : std::vector<int64_t>{1, M, H, W}, yq);
      check(qnt_prepared_create_conv2d(ctx, wt.t, bias.t, d, &r->p), what);
      qnt_op_desc_destroy(d);
      return r;
    };
    auto run_conv = [&](const std::unique_ptr<ConvRun> &r) {
      return [&ctx, &r] { check(qnt_prepared_run(ctx, r->p, r->x.t, r->y.t), "conv run"); };
    };
    const auto nchw = make_conv(w, QNT_LAYOUT_NCHW, "conv"), nhwc = make_conv(w, QNT_LAYOUT_NHWC, "conv");
    // oneDNN: NHWC u8 in and out, s8 weights in its layout, per-channel scales, f32 bias.
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    const memory::dims wdims = G == 1 ? memory::dims{M, C, 3, 3} : memory::dims{G, M / G, Cg, 3, 3};
    memory::desc src({1, C, H, W}, dt::u8, tag::nhwc), wts(wdims, dt::s8, tag::any),
        bmd({M}, dt::f32, tag::a), dst({1, M, H, W}, dt::u8, tag::nhwc);
    primitive_attr attr;
    attr.set_output_scales(1 << 1, std::vector<float>(static_cast<size_t>(M), 0.02f * 0.003f / 0.1f));
    convolution_forward::desc cd(prop_kind::forward_inference, algorithm::convolution_direct, src,
                                 wts, bmd, dst, {1, 1}, {1, 1}, {1, 1});
    convolution_forward::primitive_desc pd(cd, attr, eng);
    memory sm(src, eng), dm(dst, eng), bm(bmd, eng), wm(pd.weights_desc(), eng);
    std::memcpy(sm.get_data_handle(), xv.data(), xv.size());
    memory wu({wdims, dt::s8, G == 1 ? tag::oihw : tag::goihw}, eng);
    std::memcpy(wu.get_data_handle(), wv.data(), wv.size());
    reorder(wu, wm).execute(st, wu, wm);
    convolution_forward conv(pd);
    omp_set_num_threads(threads);
    const auto ts = qnt_bench::best_times(
        {run_conv(nchw), run_conv(nhwc),
         [&] {
           conv.execute(st, {{DNNL_ARG_SRC, sm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, dm}});
           st.wait();
         }},
        g_quick ? kBudget / 5 : kBudget, g_quick ? 2 : 4);
    const double qt[2] = {ts[0], ts[1]}, ds = ts[2];
    const double ops = 2.0 * M * Cg * 9 * H * W;
    const std::string shape = std::to_string(C) + "->" + std::to_string(M) + " " + std::to_string(H) +
                              "^2 3x3" + (G == C ? " depthwise" : "");
    row("conv_nhwc " + shape, threads, qt[1], "onednn_nhwc", ds, ops, limit);
    row("conv_nchw " + shape, threads, qt[0], "onednn_nhwc", ds, ops, limit);
    if (G == 1) {
      // Ternary weights (qnt's 2-bit dtype, values -1, 0, +1, per-channel scales) in the same
      // convolution, against qnt's int8 convolution above (ratio = int8 time / ternary time).
      std::vector<uint8_t> tv(static_cast<size_t>((M * Cg * 9 + 3) / 4));
      for (size_t i = 0; i < tv.size(); ++i) {
        static const uint8_t codes[3] = {0x3, 0x0, 0x1};  // -1, 0, +1
        uint8_t b = 0;
        for (int e = 0; e < 4; ++e) b = static_cast<uint8_t>(b | codes[wv[(4 * i + static_cast<size_t>(e)) % wv.size()] % 3] << (2 * e));
        tv[i] = b;
      }
      qnt_qparams *tq = nullptr;
      check(qnt_qparams_create_per_axis(QNT_DTYPE_TERNARY, 0, static_cast<size_t>(M), sw.data(), zw.data(), &tq), "tq");
      Tensor wt3;
      wt3.t = make(QNT_DTYPE_TERNARY, {M, Cg, 3, 3}, tq, tv.data(), tv.size());
      for (int layout : {QNT_LAYOUT_NHWC, QNT_LAYOUT_NCHW}) {
        const bool nl = layout == QNT_LAYOUT_NHWC;
        const auto tern = make_conv(wt3, layout, "ternary conv");
        const auto tt = pair_times(run_conv(tern), run_conv(nl ? nhwc : nchw));
        row(std::string("conv_ternary_") + (nl ? "nhwc " : "nchw ") + shape + " (vs qnt's int8 conv)",
            threads, tt[0], "qnt_int8_conv", tt[1], ops, limit);
      }
      qnt_qparams_destroy(tq);
      // The implicit GEMM against qnt's own GEMM of the same size: the static linear layer with
      // x [H * W, 9C] (the im2col matrix, made once outside the timing) and the same
      // parameters, epilogue included.
      const int64_t P = H * W, K = 9 * C;
      std::vector<uint8_t> cols(static_cast<size_t>(P * K));
      for (int64_t oh = 0; oh < H; ++oh)
        for (int64_t ow = 0; ow < W; ++ow)
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j)
              for (int64_t c = 0; c < C; ++c) {
                const int64_t h = oh + i - 1, w2 = ow + j - 1;
                cols[static_cast<size_t>((oh * W + ow) * K + (i * 3 + j) * C + c)] =
                    h < 0 || h >= H || w2 < 0 || w2 >= W ? 128 : xv[static_cast<size_t>((h * W + w2) * C + c)];
              }
      std::vector<uint8_t> wl(static_cast<size_t>(M * K));
      for (int64_t m = 0; m < M; ++m)
        for (int64_t t = 0; t < 9; ++t)
          for (int64_t c = 0; c < C; ++c)  // k = (i, j, c), w's order (c, i, j)
            wl[static_cast<size_t>(m * K + t * C + c)] = wv[static_cast<size_t>((m * C + c) * 9 + t)];
      Tensor wt, xl, yl;
      wt.t = make(QNT_DTYPE_I8, {M, K}, wq, wl.data(), wl.size());
      xl.t = make(QNT_DTYPE_U8, {P, K}, xq, cols.data(), cols.size());
      yl.t = make(QNT_DTYPE_U8, {P, M}, yq);
      qnt_prepared *lin = nullptr;
      check(qnt_prepared_create_linear_static(ctx, wt.t, bias.t, xq, yq, nullptr, &lin), "linear");
      const auto lt = pair_times(run_conv(nhwc), [&] { check(qnt_prepared_run(ctx, lin, xl.t, yl.t), "linear run"); });
      qnt_prepared_destroy(lin);
      row("conv_nhwc " + shape + " (vs qnt's static linear of the same GEMM)", threads, lt[0],
          "qnt_gemm", lt[1], ops, limit);
    }
    qnt_qparams_destroy(wq);
    qnt_qparams_destroy(xq);
    qnt_qparams_destroy(yq);
  }
  qnt_context_destroy(ctx);
}

// The machine's popcount throughput, Gbit/s on `threads`: the best of a 256-bit nibble-table
// count (vpshufb, the method of qnt's AVX2 binary kernel), scalar popcnt and, where the CPU has
// AVX-512 VPOPCNTDQ, vpopcntq + vpaddq on 512 bits (the method of qnt's kernel there) and on 256
// bits over a buffer in L1, each in four independent chains. The kernels XOR too: one more instruction per
// count than this peak has.
__attribute__((target("avx2"))) uint64_t popcount_vector(const uint8_t *p, size_t n, long reps) {
  const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2,
                                       2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low = _mm256_set1_epi8(0x0F);
  __m256i total = _mm256_setzero_si256();
  for (long r = 0; r < reps; ++r) {
    __m256i c[4] = {total, _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
    c[0] = _mm256_setzero_si256();
    for (size_t i = 0; i < n; i += 128)  // n <= 31 * 128: byte counts cannot overflow
      for (int j = 0; j < 4; ++j) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i + 32 * static_cast<size_t>(j)));
        c[j] = _mm256_add_epi8(c[j], _mm256_add_epi8(_mm256_shuffle_epi8(lut, _mm256_and_si256(x, low)),
                                                     _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), low))));
      }
    for (int j = 0; j < 4; ++j) total = _mm256_add_epi64(total, _mm256_sad_epu8(c[j], _mm256_setzero_si256()));
  }
  alignas(32) uint64_t o[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(o), total);
  return o[0] + o[1] + o[2] + o[3];
}
__attribute__((target("popcnt"))) uint64_t popcount_scalar(const uint64_t *p, size_t n, long reps) {
  uint64_t total = 0;
  for (long r = 0; r < reps; ++r) {
    uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (size_t i = 0; i < n; i += 4) {
      c0 += static_cast<uint64_t>(__builtin_popcountll(p[i]));
      c1 += static_cast<uint64_t>(__builtin_popcountll(p[i + 1]));
      c2 += static_cast<uint64_t>(__builtin_popcountll(p[i + 2]));
      c3 += static_cast<uint64_t>(__builtin_popcountll(p[i + 3]));
    }
    total += c0 + c1 + c2 + c3;
    __asm__ volatile("" : "+r"(total));
  }
  return total;
}
__attribute__((target("avx512f,avx512vpopcntdq"))) uint64_t popcount_vpopcntq(const uint64_t *p, size_t n,
                                                                             long reps) {
  __m512i total = _mm512_setzero_si512();
  for (long r = 0; r < reps; ++r) {
    __asm__ volatile("" : "+r"(p));  // the loads may not be hoisted out of the repeats
    __m512i c[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
    for (size_t i = 0; i + 32 <= n; i += 32)
      for (int j = 0; j < 4; ++j)
        c[j] = _mm512_add_epi64(c[j], _mm512_popcnt_epi64(_mm512_loadu_si512(p + i + 8 * static_cast<size_t>(j))));
    total = _mm512_add_epi64(total, _mm512_add_epi64(_mm512_add_epi64(c[0], c[1]), _mm512_add_epi64(c[2], c[3])));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(total));
}
__attribute__((target("avx512f,avx512vl,avx512vpopcntdq"))) uint64_t popcount_vpopcntq256(const uint64_t *p,
                                                                                     size_t n, long reps) {
  __m256i total = _mm256_setzero_si256();
  for (long r = 0; r < reps; ++r) {
    __asm__ volatile("" : "+r"(p));  // the loads may not be hoisted out of the repeats
    __m256i c[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
    for (size_t i = 0; i + 16 <= n; i += 16)
      for (int j = 0; j < 4; ++j)
        c[j] = _mm256_add_epi64(
            c[j], _mm256_popcnt_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + i + 4 * static_cast<size_t>(j)))));
    total = _mm256_add_epi64(total, _mm256_add_epi64(_mm256_add_epi64(c[0], c[1]), _mm256_add_epi64(c[2], c[3])));
  }
  alignas(32) uint64_t o[4];
  _mm256_store_si256(reinterpret_cast<__m256i *>(o), total);
  return o[0] + o[1] + o[2] + o[3];
}
double popcount_peak_gbits(int threads) {
  const size_t bytes = 31 * 128;
  const long reps = g_quick ? 100000 : 400000;
  double best = 0;
  for (int method = 0; method < 4; ++method) {
    if (method == 0 && !__builtin_cpu_supports("avx2")) continue;
    if (method >= 2 && !__builtin_cpu_supports("avx512vpopcntdq")) continue;
    if (method == 3 && !__builtin_cpu_supports("avx512vl")) continue;
    // The best of 15: on a shared machine a neighbour's load slows some repeats by a fifth or
    // more, and a slow peak would flatter every ratio to it.
    for (int rep = 0; rep < 15; ++rep) {
      volatile uint64_t sink = 0;
      const double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
      {
        // 64-byte aligned: from malloc's 16-byte alignment, every 512-bit load (and every other
        // 256-bit one) straddles two lines, and the peak read 20-30 % low in some runs.
        std::vector<uint64_t> raw(bytes / 8 + 8);
        auto *buf = reinterpret_cast<uint64_t *>((reinterpret_cast<uintptr_t>(raw.data()) + 63) / 64 * 64);
        for (size_t i = 0; i < bytes / 8; ++i) buf[i] = 0x9E3779B97F4A7C15ull * (i + 1);
        sink += method == 0   ? popcount_vector(reinterpret_cast<const uint8_t *>(buf), bytes, reps)
                : method == 1 ? popcount_scalar(buf, bytes / 8, reps)
                : method == 2 ? popcount_vpopcntq(buf, bytes / 8, reps)
                              : popcount_vpopcntq256(buf, bytes / 8, reps);
      }
      const double dt = now() - t0;
      best = std::max(best, 8.0 * bytes * static_cast<double>(reps) * threads / dt / 1e9);
    }
  }
  return best;
}

// qnt_binary_matmul (prepared b), M x K times N x K bits: each bit of each pair of rows is one
// XNOR-popcount step, against the popcount peak (ratio = time at the peak / qnt's time).
void bench_binary(int threads) {
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  double peak = popcount_peak_gbits(threads);
  const int64_t K = 4096, N = 4096;
  const auto bv = random_bytes(static_cast<size_t>(N * K / 8), 31);
  Tensor b;
  b.t = make(QNT_DTYPE_BINARY, {N, K}, nullptr, bv.data(), bv.size());
  qnt_prepared *p = nullptr;
  check(qnt_prepared_create_binary_matmul(ctx, b.t, nullptr, &p), "binary prepare");
  for (int64_t M : {int64_t{1}, int64_t{64}}) {
    const auto av = random_bytes(static_cast<size_t>(M * K / 8), 32);
    Tensor a, y;
    a.t = make(QNT_DTYPE_BINARY, {M, K}, nullptr, av.data(), av.size());
    y.t = make(QNT_DTYPE_I32, {M, N}, nullptr);
    const double t = best_time([&] { check(qnt_prepared_run(ctx, p, a.t, y.t), "binary run"); });
    peak = std::max(peak, popcount_peak_gbits(threads));  // and again after qnt's: the better
    const double bits = static_cast<double>(M * N * K);
    row("binary_xnor M" + std::to_string(M) + " K4096 N4096 (vs popcount peak, Gbit/s)", threads, t,
        "popcount_peak", bits / (peak * 1e9), bits, peak);
  }
  qnt_prepared_destroy(p);
  qnt_context_destroy(ctx);
}

}  // namespace

// Packing: prepare a [K, N] b (qnt_qmatmul's orientation) and an [N, K] w (the linear layers'),
// 4096 x 4096 bytes, as a share of a streaming copy of the same bytes on the same threads
// (ratio = copy time / pack time); and one-shot qnt_qmatmul at M = 1 against pack + run.
void bench_packing(int threads, double limit) {
  qnt_context *ctx = nullptr;
  check(qnt_context_create(&ctx), "ctx");
  check(qnt_context_set_num_threads(ctx, threads), "threads");
  const int64_t K = 4096, N = 4096;
  const size_t bytes = static_cast<size_t>(K * N);
  const auto bv = random_bytes(bytes, 21);
  std::vector<uint8_t> dst(bytes);
  const double copy = best_time([&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int c = 0; c < 64; ++c)
      std::memcpy(dst.data() + bytes / 64 * static_cast<size_t>(c),
                  bv.data() + bytes / 64 * static_cast<size_t>(c), bytes / 64);
  });
  // The same copy into memory allocated for it, as a prepared operator allocates its own
  // (first touch of new pages: the kernel's page faults and zeroing).
  const double copy_fresh = best_time([&] {
    std::unique_ptr<uint8_t[]> fresh(new uint8_t[bytes]);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int c = 0; c < 64; ++c)
      std::memcpy(fresh.get() + bytes / 64 * static_cast<size_t>(c),
                  bv.data() + bytes / 64 * static_cast<size_t>(c), bytes / 64);
    volatile uint8_t sink = fresh[bytes / 2];
    (void)sink;
  });
  Tensor b, w, a, y;
  b.t = make(QNT_DTYPE_I8, {K, N}, nullptr, bv.data(), bytes);
  qnt_qparams *wq = nullptr;
  check(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.01f, 0, &wq), "wq");
  w.t = make(QNT_DTYPE_I8, {N, K}, wq, bv.data(), bytes);
  qnt_qparams_destroy(wq);
  const auto av = random_bytes(static_cast<size_t>(K), 22);
  a.t = make(QNT_DTYPE_U8, {1, K}, nullptr, av.data(), av.size());
  y.t = make(QNT_DTYPE_I32, {1, N}, nullptr);
  qnt_prepared *p = nullptr;
  const double pack_kn = best_time([&] {
    check(qnt_prepared_create_matmul(ctx, b.t, nullptr, nullptr, &p), "prepare");
    qnt_prepared_destroy(p);
  });
  const double pack_nk = best_time([&] {
    check(qnt_prepared_create_linear_dynamic(ctx, w.t, nullptr, nullptr, &p), "prepare");
    qnt_prepared_destroy(p);
  });
  check(qnt_prepared_create_matmul(ctx, b.t, nullptr, nullptr, &p), "prepare");
  const double run = best_time([&] { check(qnt_prepared_run(ctx, p, a.t, y.t), "run"); });
  qnt_prepared_destroy(p);
  const double one_shot = best_time([&] { check(qnt_qmatmul(ctx, a.t, b.t, nullptr, y.t), "qmatmul"); });
  const double ops = static_cast<double>(bytes);  // bytes packed
  row("pack_matmul_b [K4096, N4096] (vs streaming copy)", threads, pack_kn, "copy", copy, ops, limit);
  row("pack_linear_w [N4096, K4096] (vs streaming copy)", threads, pack_nk, "copy", copy, ops, limit);
  row("pack_matmul_b [K4096, N4096] (vs copy into new memory)", threads, pack_kn, "copy_new",
      copy_fresh, ops, limit);
  row("pack_linear_w [N4096, K4096] (vs copy into new memory)", threads, pack_nk, "copy_new",
      copy_fresh, ops, limit);
  row("qmatmul_one_shot M1 K4096 N4096 (vs pack + prepared run)", threads, one_shot,
      "pack+run", pack_kn + run, 2.0 * K * N, limit);
  qnt_context_destroy(ctx);
}

// Tuning by measurement (qnt_context_set_tuning): each workload untuned and tuned, on the same
// prepared operator and inputs; the tuned context measures on its first run (not timed), then
// runs from the table. Rows: work, threads, tuned_s, "untuned", untuned_s, ratio (untuned_s /
// tuned_s: above 1 the tuning helped), the noise (the untuned context's ratio to itself, measured
// interleaved with the others), and the two parameters the table holds for the shape
// (gemm: m-panels and n-tiles a block; wo: prefetch distance and workers).
void bench_tune(int threads) {
  struct Work {
    const char *kind;  // "gemm" or "wo_f32" / "wo_int8"
    int64_t M, K, N;
  };
  std::vector<Work> works = {{"gemm", 1, 4096, 4096},  {"gemm", 7, 1024, 1024}, {"gemm", 16, 4096, 4096},
                             {"gemm", 64, 512, 4096},  {"gemm", 256, 256, 256},  {"gemm", 512, 512, 512},
                             {"gemm", 2048, 64, 2048}, {"gemm", 128, 4096, 1024}, {"wo_f32", 1, 4096, 4096},
                             {"wo_int8", 1, 4096, 4096}, {"wo_int8", 4, 4096, 4096}, {"wo_f32", 1, 1024, 11008}};
  if (g_quick) works = {{"gemm", 16, 1024, 1024}, {"gemm", 256, 256, 256}, {"wo_int8", 1, 2048, 2048}};
  for (const Work &w : works) {
    qnt_context *plain = nullptr, *tuned = nullptr;
    check(qnt_context_create(&plain), "ctx");
    check(qnt_context_create(&tuned), "ctx");
    check(qnt_context_set_num_threads(plain, threads), "threads");
    check(qnt_context_set_num_threads(tuned, threads), "threads");
    check(qnt_context_set_tuning(tuned, QNT_TUNING_MEASURE), "tuning");
    qnt_tuning_clear();
    const bool gemm = std::strcmp(w.kind, "gemm") == 0;
    Tensor x, y, wt;
    qnt_prepared *p = nullptr;
    if (gemm) {
      const auto av = random_bytes(static_cast<size_t>(w.M * w.K), 1);
      const auto bv = random_bytes(static_cast<size_t>(w.K * w.N), 2);
      x.t = make(QNT_DTYPE_U8, {w.M, w.K}, nullptr, av.data(), av.size());
      wt.t = make(QNT_DTYPE_I8, {w.K, w.N}, nullptr, bv.data(), bv.size());
      y.t = make(QNT_DTYPE_I32, {w.M, w.N}, nullptr);
      check(qnt_prepared_create_matmul(plain, wt.t, nullptr, nullptr, &p), "prepare");
    } else {
      const auto bv = random_bytes(static_cast<size_t>(w.N * w.K / 2), 3);
      std::vector<float> scales(static_cast<size_t>(w.N * w.K / 128), 0.01f);
      qnt_qparams *qp = nullptr;
      check(qnt_qparams_create_per_block(QNT_DTYPE_I4, 1, 128, scales.size(), scales.data(), nullptr, &qp), "qp");
      wt.t = make(QNT_DTYPE_I4, {w.N, w.K}, qp, bv.data(), bv.size());
      qnt_qparams_destroy(qp);
      std::vector<float> xv(static_cast<size_t>(w.M * w.K));
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
      x.t = make(QNT_DTYPE_F32, {w.M, w.K}, nullptr, xv.data(), 4 * xv.size());
      y.t = make(QNT_DTYPE_F32, {w.M, w.N}, nullptr);
      qnt_op_desc *d = nullptr;
      check(qnt_op_desc_create(&d), "desc");
      check(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE,
                            std::strcmp(w.kind, "wo_f32") == 0 ? QNT_WEIGHT_ONLY_F32 : QNT_WEIGHT_ONLY_INT8_ACT),
            "mode");
      check(qnt_prepared_create_linear_weight_only(plain, wt.t, nullptr, d, &p), "prepare");
      qnt_op_desc_destroy(d);
    }
    check(qnt_prepared_run(tuned, p, x.t, y.t), "measure");
    // Interleaved, so that a slow spell of the machine (a shared VM) falls on all; the untuned
    // context twice, whose ratio is the noise of the comparison.
    double us = 1e30, ts = 1e30, us2 = 1e30;
    for (int r = 0; r < 6; ++r) {
      for (int which = 0; which < 3; ++which) {
        qnt_context *c = which == 1 ? tuned : plain;
        const double t = qnt_bench::best_time([&] { check(qnt_prepared_run(c, p, x.t, y.t), "run"); },
                                              g_quick ? 0.02 : 0.06, 3, 1000);
        double &slot = which == 0 ? us : which == 1 ? ts : us2;
        slot = std::min(slot, t);
      }
    }
    size_t n = 0;
    check(qnt_tuning_export(nullptr, 0, &n), "export");
    std::string table(n, '\0');
    check(qnt_tuning_export(&table[0], n, &n), "export");
    // The entry's two parameters (the last two fields of the table's second line).
    std::string params = "?";
    const size_t nl = table.find('\n');
    if (nl != std::string::npos && nl + 1 < table.size()) {
      std::string line = table.substr(nl + 1, table.find('\n', nl + 1) - nl - 1);
      const size_t b = line.rfind(' ', line.rfind(' ') - 1);
      params = line.substr(b + 1);
    }
    std::printf("tune %s M%lld K%lld N%lld\t%d\t%.6g\tuntuned\t%.6g\t%.3f\tnoise %.3f\tparams %s\n",
                w.kind, static_cast<long long>(w.M), static_cast<long long>(w.K),
                static_cast<long long>(w.N), threads, ts, us, us / ts, us / us2, params.c_str());
    qnt_prepared_destroy(p);
    qnt_context_destroy(plain);
    qnt_context_destroy(tuned);
  }
  qnt_tuning_clear();
}

int main(int argc, char **argv) {
  // --only gemm|linear|conv|packing|binary|tune: one section (for working on it); --shape M,K,N: the GEMM
  // section's shapes.
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) g_quick = true;
    if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    if (std::strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
      long long m = 0, k = 0, n = 0;
      if (std::sscanf(argv[++i], "%lld,%lld,%lld", &m, &k, &n) != 3 || m < 1 || k < 1 || n < 1) {
        std::fprintf(stderr, "--shape M,K,N: three positive integers\n");
        return 2;
      }
      g_shapes.push_back({m, k, n});
    }
  }
  auto want = [&](const char *section) { return only.empty() || only == section; };
  qnt_context *c = nullptr;
  check(qnt_context_create(&c), "ctx");
  const char *kernels = nullptr;
  check(qnt_context_kernels(c, &kernels), "kernels");
  const bool vnni = std::strstr(kernels, "gemm.u8s8s32=avx512_vnni") != nullptr;
  const char *g = std::strstr(kernels, "gemm.u8s8s32=");
  std::string gemm_kernel = g ? std::string(g + 13, std::strcspn(g + 13, "\n")) : "?";
  qnt_context_destroy(c);
  std::printf("# qnt gemm kernel: %s; oneDNN %d.%d\n", gemm_kernel.c_str(), dnnl_version()->major,
              dnnl_version()->minor);
  std::printf("work\tthreads\tqnt_s\tpeer\tpeer_s\tratio\tops\tqnt_gops\tlimit_gops\n");
  for (int threads : {1, 2}) {
    const double limit = peak_gops(vnni, threads);
    if (want("gemm")) bench_gemm(threads, limit);
    if (want("linear")) bench_linear(threads, limit);
    if (want("conv")) bench_conv(threads, limit);
    if (want("packing")) bench_packing(threads, limit);
    if (want("binary")) bench_binary(threads);
    if (want("tune")) bench_tune(threads);
  }
  return 0;
}
