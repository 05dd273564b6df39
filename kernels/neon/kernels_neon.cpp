// The xsimd kernels (kernels/simd/kernels.hpp) instantiated for aarch64's Advanced SIMD, which
// every aarch64 CPU has, and the weight-only layer's per-token NEON kernel (kernels/wo/wo_neon.hpp).
#include "kernels/simd/kernels.hpp"
#include "kernels/simd/tables.hpp"
#include "kernels/wo/wo_neon.hpp"

namespace qnt::simd {
namespace {
// The weight-only layer: the plain C++ kernels, and the per-token mode's NEON kernel.
const kern::WoKernels kNeonWo = [] {
  kern::WoKernels k = kern::kGenericWo;
  k.name = "neon";
  k.token = &kern::token_neon;
  return k;
}();
constexpr kern::KernelTable kTable = make_table<xsimd::neon64>("neon", QNT_ISA_NEON, &kern::kGenericGemm,
                                                      &kNeonWo);
}  // namespace

const kern::KernelTable &neon_table() noexcept { return kTable; }

}  // namespace qnt::simd
