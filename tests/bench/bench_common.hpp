// Helpers shared by the benchmark programs: a clock, the best time over repeats, a status check.
#pragma once

#include <qnt/qnt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace qnt_bench {

// Seconds on a steady clock.
inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The best time of f (after one warm-up run) over repeats that fill about `budget` seconds, at
// least min_runs and at most max_runs of them.
inline double best_time(const std::function<void()> &f, double budget, int min_runs, int max_runs) {
  f();
  double best = 1e30, spent = 0;
  int runs = 0;
  while (runs < min_runs || (spent < budget && runs < max_runs)) {
    const double t0 = now();
    f();
    const double dt = now() - t0;
    best = std::min(best, dt);
    spent += dt;
    ++runs;
  }
  return best;
}

// The best time of each of fs, in `rounds` alternating turns: each turn gives every f about
// budget / rounds seconds (at least min_runs runs), after one warm-up run of each. On a shared
// machine whose speed drifts over seconds, a slow phase then slows every side of a ratio alike
// instead of whichever side was timed in it.
inline std::vector<double> best_times(const std::vector<std::function<void()>> &fs, double budget,
                                      int rounds = 4, int min_runs = 2, int max_runs = 1000) {
  std::vector<double> best(fs.size(), 1e30);
  for (const auto &f : fs) f();
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < fs.size(); ++i) {
      double spent = 0;
      for (int runs = 0; runs < min_runs || (spent < budget / rounds && runs < max_runs); ++runs) {
        const double t0 = now();
        fs[i]();
        const double dt = now() - t0;
        best[i] = std::min(best[i], dt);
        spent += dt;
      }
    }
  return best;
}

// Exits with the library's message when a call fails (a benchmark has nothing to recover).
inline void check(qnt_status s, const char *what) {
  if (s != QNT_OK) {
    std::fprintf(stderr, "%s: %s\n", what, qnt_last_error_message());
    std::exit(1);
  }
}

// A tensor handle destroyed with its holder.
struct Tensor {
  qnt_tensor *t = nullptr;
  Tensor() = default;
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;
  ~Tensor() { qnt_tensor_destroy(t); }
};

// A new tensor: a copy of `bytes` bytes of data, or zero-filled when data is null.
inline qnt_tensor *make(qnt_dtype d, std::vector<int64_t> shape, const qnt_qparams *qp,
                        const void *data = nullptr, size_t bytes = 0) {
  qnt_tensor *t = nullptr;
  if (data != nullptr)
    check(qnt_tensor_create_from_data(d, shape.data(), shape.size(), qp, data, bytes, &t), "tensor");
  else
    check(qnt_tensor_create(d, shape.data(), shape.size(), qp, &t), "tensor");
  return t;
}

}  // namespace qnt_bench
