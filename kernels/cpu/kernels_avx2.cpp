// The xsimd kernels (kernels/simd/kernels.hpp) instantiated for AVX2; this translation unit is
// compiled with its own -m flags and runs only where the CPU and the OS support them.
#include "kernels/simd/kernels.hpp"
#include "kernels/simd/tables.hpp"

namespace qnt::simd {
namespace {
constexpr kern::KernelTable kTable = make_table<xsimd::avx2>("avx2", QNT_ISA_AVX2);
}  // namespace

const kern::KernelTable &avx2_table() noexcept { return kTable; }

}  // namespace qnt::simd
