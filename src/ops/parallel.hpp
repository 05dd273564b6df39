// One way to split a range over threads. Chunks start at multiples of `grain`, so a grain that
// is a multiple of 8 keeps the packed sub-byte elements of one byte in one chunk. An exception
// thrown by a chunk is carried out of the parallel region and rethrown on the calling thread
// (an exception must never cross an OpenMP region's boundary).
//
// Scratch memory: parallel_workers() says how many workers a call will use, so an op allocates
// every worker's scratch before the region; the body then gets its worker index and allocates
// nothing, and an op whose allocation fails has written nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>

#if defined(QNT_WITH_OPENMP)
#include <omp.h>
#endif

namespace qnt::ops {

// The number of workers parallel_for_workers uses for n items (>= 1).
inline size_t parallel_workers(int threads, size_t n, size_t grain) {
  if (grain == 0) grain = 1;
  const size_t chunks = n == 0 ? 1 : (n + grain - 1) / grain;
#if defined(QNT_WITH_OPENMP)
  return std::max<size_t>(1, std::min(chunks, static_cast<size_t>(std::max(threads, 1))));
#else
  (void)threads;
  (void)chunks;
  return 1;
#endif
}

// body(begin, end, worker) with worker < parallel_workers(threads, n, grain).
template <class F>
void parallel_for_workers(int threads, size_t n, size_t grain, F &&body) {
  if (n == 0) return;
  if (grain == 0) grain = 1;
  const size_t chunks = (n + grain - 1) / grain;
  const size_t workers = parallel_workers(threads, n, grain);
  if (workers <= 1) {
    body(size_t{0}, n, size_t{0});
    return;
  }
#if defined(QNT_WITH_OPENMP)
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast <int>(workers)) schedule(static)
  for (ptrdiff_t c = 0; c < static_cast<ptrdiff_t>(chunks); ++c) {
    try {
      const size_t begin = static_cast<size_t>(c) * grain;
      body(begin, std::min(n, begin + grain), static_cast<size_t>(omp_get_thread_num()));
    } catch (...) {
#pragma omp critical(qnt_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
#else
  (void)chunks;
  body(size_t{0}, n, size_t{0});
#endif
}

// body(begin, end), for bodies that need no scratch.
template <class F>
void parallel_for(int threads, size_t n, size_t grain, F &&body) {
  parallel_for_workers(threads, n, grain,
                       [&](size_t begin, size_t end, size_t) { body(begin, end); });
}

}  // namespace qnt::ops
