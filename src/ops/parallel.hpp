// One way to split an element range over threads. Chunks start at multiples of `grain`, so a
// grain that is a multiple of 8 keeps packed sub-byte elements of one byte in one chunk.
#pragma once

#include <algorithm>
#include <cstddef>

namespace qnt::ops {

template <class F>
void parallel_for(int threads, size_t n, size_t grain, F &&body) {
  if (n == 0) return;
  const size_t chunks = (n + grain - 1) / grain;
  if (threads <= 1 || chunks == 1) {
    body(size_t{0}, n);
    return;
  }
#if defined(QNT_WITH_OPENMP)
#pragma omp parallel for num_threads(threads) schedule(static)
  for (ptrdiff_t c = 0; c < static_cast<ptrdiff_t>(chunks); ++c) {
    const size_t begin = static_cast<size_t>(c) * grain;
    body(begin, std::min(n, begin + grain));
  }
#else
  body(size_t{0}, n);
#endif
}

}  // namespace qnt::ops
