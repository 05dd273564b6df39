// The binary GEMM's popcount kernel on AVX-512 VPOPCNTDQ (kernels/gemm/xnor_x86.hpp), in a
// translation unit of its own: its -mavx512vpopcntdq must reach no other code (a CPU may have
// AVX-512 VNNI without VPOPCNTDQ: Cascade Lake). The registry takes it for the AVX-512 sets of a
// machine with QNT_CPU_AVX512VPOPCNTDQ.
#include "kernels/gemm/xnor_x86.hpp"
#include "kernels/simd/tables.hpp"

namespace qnt::simd {

kern::GemmXnorColsFn xnor_cols_vpopcnt() noexcept { return &kern::xnor_cols_vpopcnt; }

}  // namespace qnt::simd
