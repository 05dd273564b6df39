// Calibrator observe throughput, in floats per second, beside this machine's read bandwidth
// measured in the same run (a streaming reduction over the same buffer). One thread: observe is
// single-threaded; shards on several threads merge.
//
// Run: ./build/tests/qnt_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <qnt/qnt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr size_t kFloats = size_t{64} << 20;  // 64 M floats, 256 MiB: far beyond the caches

const std::vector<float> &data() {
  static const std::vector<float> v = [] {
    std::vector<float> x(kFloats);
    std::mt19937 rng(1);
    std::exponential_distribution<float> e(1.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i & 1 ? 1.0f : -1.0f) * e(rng);  // Laplace
    return x;
  }();
  return v;
}

// The read bandwidth: XOR of every 64-bit word, which the compiler vectorizes.
double read_floats_per_second() {
  static const double rate = [] {
    const auto *w = reinterpret_cast<const uint64_t *>(data().data());
    const size_t n = kFloats / 2;
    double best = 0.0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      uint64_t acc[8] = {0};
      for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) acc[k] ^= w[i + static_cast<size_t>(k)];
      benchmark::DoNotOptimize(acc);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(kFloats) / s);
    }
    return best;
  }();
  return rate;
}

void BM_ReadBandwidth(benchmark::State &state) {
  const auto *w = reinterpret_cast<const uint64_t *>(data().data());
  const size_t n = kFloats / 2;
  for (auto _ : state) {
    uint64_t acc[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
      for (int k = 0; k < 8; ++k) acc[k] ^= w[i + static_cast<size_t>(k)];
    benchmark::DoNotOptimize(acc);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kFloats));
}
BENCHMARK(BM_ReadBandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Observe(benchmark::State &state) {
  const auto method = static_cast<qnt_calib_method>(state.range(0));
  const int64_t shape[1] = {static_cast<int64_t>(kFloats)};
  qnt_tensor *x = nullptr;
  qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, const_cast<float *>(data().data()),
                  kFloats * sizeof(float), &x);
  qnt_calibrator *c = nullptr;
  qnt_calibrator_create(method, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_TENSOR, 0,
                        &c);
  const double read_rate = read_floats_per_second();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (qnt_calibrator_observe(nullptr, c, x) != QNT_OK)
      state.SkipWithError(qnt_last_error_message());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double items = static_cast<double>(state.iterations()) * static_cast<double>(kFloats);
  state.SetItemsProcessed(static_cast<int64_t>(items));
  // floats/s of observe over floats/s of a plain read of the same buffer (1.0 = memory speed)
  state.counters["vs_read_bw"] = items / seconds / read_rate;
  qnt_calibrator_destroy(c);
  qnt_tensor_destroy(x);
}
BENCHMARK(BM_Observe)
    ->ArgName("method")
    ->DenseRange(QNT_CALIB_MINMAX, QNT_CALIB_ADAPTIVE)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Compute(benchmark::State &state) {
  const auto method = static_cast<qnt_calib_method>(state.range(0));
  const int64_t shape[1] = {1 << 20};
  qnt_tensor *x = nullptr;
  qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, nullptr, const_cast<float *>(data().data()),
                  (size_t{1} << 20) * sizeof(float), &x);
  qnt_calibrator *c = nullptr;
  qnt_calibrator_create(method, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_TENSOR, 0,
                        &c);
  qnt_calibrator_observe(nullptr, c, x);
  for (auto _ : state) {
    qnt_qparams *qp = nullptr;
    qnt_calibrator_compute(nullptr, c, &qp);
    qnt_qparams_destroy(qp);
  }
  qnt_calibrator_destroy(c);
  qnt_tensor_destroy(x);
}
BENCHMARK(BM_Compute)
    ->ArgName("method")
    ->DenseRange(QNT_CALIB_MINMAX, QNT_CALIB_ADAPTIVE)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
