// Kernel parameters tuned by measurement (qnt_context_set_tuning in qnt.h): the process's table
// of choices per shape, its text form, and the measurement itself. Tuning chooses among
// parameters that give the same bits (block shapes, prefetch distances, worker counts), so it
// can only change how fast an operator runs.
#pragma once

#include "core/context.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace qnt::ops {

struct TuneKey {
  std::string family;  // "gemm" or "wo"
  std::string kernel;  // the kernel's name
  int64_t m = 0, n = 0, k = 0;
  int32_t threads = 1;
};

struct TuneValue {
  int64_t p1 = 0, p2 = 0;  // gemm: m-panels and n-tiles a block; wo: prefetch distance, workers
  bool operator==(const TuneValue &o) const noexcept { return p1 == o.p1 && p2 == o.p2; }
};

bool tune_lookup(const TuneKey &key, TuneValue &out);
void tune_store(const TuneKey &key, const TuneValue &value);
std::string tune_export();
void tune_import(const char *text);  // all or nothing; throws QNT_ERR_CORRUPT_DATA
void tune_clear() noexcept;

// A first run slower than this keeps the heuristic's parameters unmeasured.
constexpr double kTuneMaxFirstRun = 0.25;

// The parameters for `key` under ctx's tuning mode: the heuristic's (`candidates[0]`) when
// tuning is off, or the table's; on a miss with QNT_TUNING_MEASURE, each candidate is run twice
// through run(value) and the fastest is stored. run(value) runs the whole operator with those
// parameters (every one writes the same output), so the caller's output is complete whichever
// path is taken. Returns nothing: the operator has run at least once with the chosen or a
// measured value when this returns.
template <class Run>
void tuned(const Context &ctx, const TuneKey &key, const std::vector<TuneValue> &candidates,
           Run &&run) {
  if (ctx.tuning == QNT_TUNING_OFF || candidates.size() < 2) {
    run(candidates.front());
    return;
  }
  TuneValue v;
  if (tune_lookup(key, v)) {
    run(v);
    return;
  }
  if (ctx.tuning != QNT_TUNING_MEASURE) {
    run(candidates.front());
    return;
  }
  using clock = std::chrono::steady_clock;
  auto timed = [&](const TuneValue &c) {
    const auto t0 = clock::now();
    run(c);
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  double best_time = timed(candidates.front());
  TuneValue best = candidates.front();
  if (best_time <= kTuneMaxFirstRun) {
    best_time = std::min(best_time, timed(candidates.front()));
    for (size_t i = 1; i < candidates.size(); ++i) {
      const double t = std::min(timed(candidates[i]), timed(candidates[i]));
      if (t < best_time) {
        best_time = t;
        best = candidates[i];
      }
    }
  }
  tune_store(key, best);
}

}  // namespace qnt::ops
