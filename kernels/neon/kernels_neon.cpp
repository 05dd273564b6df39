// The xsimd kernels (kernels/simd/kernels.hpp) instantiated for aarch64's Advanced SIMD, which
// every aarch64 CPU has.
#include "kernels/simd/kernels.hpp"
#include "kernels/simd/tables.hpp"

namespace qnt::simd {
namespace {
constexpr kern::KernelTable kTable = make_table<xsimd::neon64>("neon", QNT_ISA_NEON, &kern::kGenericGemm,
                                                      &kern::kGenericWo);
}  // namespace

const kern::KernelTable &neon_table() noexcept { return kTable; }

}  // namespace qnt::simd
