// The kernel tables the ISA translation units export. Each is defined only where its
// translation unit is compiled (x86-64 or aarch64) and called only where the machine runs it.
#pragma once

#include "kernels/registry.hpp"

namespace qnt::simd {

const kern::KernelTable &avx2_table() noexcept;
const kern::KernelTable &avx512_table() noexcept;
const kern::KernelTable &avx512_vnni_table() noexcept;
const kern::KernelTable &neon_table() noexcept;
// The binary GEMM's kernel on AVX-512 VPOPCNTDQ (x86-64 builds; kernels_avx512_popcnt.cpp).
kern::GemmXnorColsFn xnor_cols_vpopcnt() noexcept;

}  // namespace qnt::simd
