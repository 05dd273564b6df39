// The calibrators' batch passes, one implementation per instruction set. Each x86 file is its own
// translation unit compiled with its own -m flags; which one runs is chosen at run time from the
// machine's features (src/calib/kernels.cpp). All give the reference kernels' exact results.
#pragma once

#include "kernels/ref/calib_ref.hpp"

namespace qnt::cpu {

namespace avx2 {
void scan(const float *x, size_t n, ref::ScanResult *out) noexcept;
void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept;
}  // namespace avx2

namespace avx512 {
void scan(const float *x, size_t n, ref::ScanResult *out) noexcept;
void bin_indices(const float *x, size_t n, double inv, double range, int32_t offset,
                 int32_t *idx) noexcept;
}  // namespace avx512

}  // namespace qnt::cpu
