// Kernel parameters tuned by measurement (qnt_context_set_tuning in qnt.h): the process's table
// of choices per shape, its text form, and the measurement itself. Tuning chooses among
// parameters that give the same bits (block shapes, prefetch distances, worker counts), so it
// can only change how fast an operator runs.
#pragma once

#include "core/context.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
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
// The time the measurement of one shape aims at, over all its candidates and rounds.
constexpr double kTuneBudget = 0.1;
// Another candidate replaces the heuristic's only when its best time is below this share of the
// heuristic's, so that noise alone does not move a shape off the heuristic.
constexpr double kTuneMargin = 0.95;

// The parameters for `key` under ctx's tuning mode: the heuristic's when tuning is off, or the
// table's; on a miss with QNT_TUNING_MEASURE, the candidates (make_candidates(), built only
// then: the heuristic's first, then the others, without repeats) are run in
// rounds (each round runs every candidate once, in turn, so that a slow spell of the machine
// hits them all; 3 to 15 rounds within kTuneBudget) through run(value), each keeps its best
// time, and the fastest is stored: the heuristic's unless another beats it by kTuneMargin, in
// the rounds and again in a second look at the two alone.
// run(value) runs the whole operator with those parameters (every one writes the same output),
// so the caller's output is complete whichever path is taken.
template <class MakeCandidates, class Run>
void tuned(const Context &ctx, const TuneKey &key, const TuneValue &heuristic,
           MakeCandidates &&make_candidates, Run &&run) {
  TuneValue v;
  if (ctx.tuning == QNT_TUNING_OFF) {
    run(heuristic);
    return;
  }
  if (tune_lookup(key, v)) {
    run(v);
    return;
  }
  const std::vector<TuneValue> candidates =
      ctx.tuning == QNT_TUNING_MEASURE ? make_candidates() : std::vector<TuneValue>{};
  if (candidates.size() < 2) {
    run(heuristic);
    return;
  }
  using clock = std::chrono::steady_clock;
  auto timed = [&](const TuneValue &c) {
    const auto t0 = clock::now();
    run(c);
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  const double first = timed(candidates.front());
  std::vector<double> best(candidates.size(), std::numeric_limits<double>::infinity());
  best[0] = first;
  if (first <= kTuneMaxFirstRun) {
    const double per_round = std::max(first, 1e-7) * static_cast<double>(candidates.size());
    const int rounds = static_cast<int>(std::clamp(kTuneBudget / per_round, 3.0, 15.0));
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < candidates.size(); ++i) best[i] = std::min(best[i], timed(candidates[i]));
  }
  size_t pick = 0;
  for (size_t i = 1; i < candidates.size(); ++i)
    if (best[i] < kTuneMargin * best[0] && best[i] < best[pick]) pick = i;
  if (pick != 0) {
    // A second, separate look at the two alone: the winner stays only if it is still ahead by
    // the margin, so that one lucky run or an unlucky spell of the heuristic's does not decide.
    double again[2] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
    const int rounds = static_cast<int>(std::clamp(kTuneBudget / (2.0 * std::max(first, 1e-7)), 3.0, 15.0));
    for (int r = 0; r < rounds; ++r) {
      again[0] = std::min(again[0], timed(candidates[0]));
      again[1] = std::min(again[1], timed(candidates[pick]));
    }
    if (!(again[1] < kTuneMargin * again[0])) pick = 0;
  }
  tune_store(key, candidates[pick]);
}

}  // namespace qnt::ops
