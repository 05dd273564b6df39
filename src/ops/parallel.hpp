// One way to split a range over threads. Chunks start at multiples of `grain`, so a grain that
// is a multiple of 8 keeps the packed sub-byte elements of one byte in one chunk. An exception
// thrown by a chunk is carried out of the parallel region and rethrown on the calling thread
// (an exception must never cross an OpenMP region's boundary).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>

namespace qnt::ops {

template <class F>
void parallel_for(int threads, size_t n, size_t grain, F &&body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  const size_t chunks = (n + grain - 1) / grain;
  if (threads <= 1 || chunks == 1) {
    body(size_t{0}, n);
    return;
  }
#if defined(QNT_WITH_OPENMP)
  std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (ptrdiff_t c = 0; c < static_cast<ptrdiff_t>(chunks); ++c) {
    try {
      const size_t begin = static_cast<size_t>(c) * grain;
      body(begin, std::min(n, begin + grain));
    } catch (...) {
#pragma omp critical(qnt_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#else
  body(size_t{0}, n);
#endif
}

}  // namespace qnt::ops
