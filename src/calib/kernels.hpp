// Run-time choice of the calibrators' batch kernels (reference, AVX2, AVX-512).
#pragma once

#include "kernels/ref/calib_ref.hpp"

#include <qnt/qnt.h>

#include <vector>

namespace qnt::calib {

struct CalibKernels {
  const char *name;
  qnt_isa isa;  // the kernel set it belongs to
  void (*scan)(const float *x, size_t n, ref::ScanResult *out) noexcept;
  void (*bin_indices)(const float *x, size_t n, double inv, double range, int32_t offset,
                      int32_t *idx) noexcept;
};

// The fastest set this machine runs that is at most `isa` (a context's kernel set).
const CalibKernels &calib_kernels(qnt_isa isa);

// Every set compiled in and supported by this machine, the reference first (for the tests).
std::vector<CalibKernels> available_calib_kernels();

}  // namespace qnt::calib
