// The kernel sets this machine runs, for the tests that call kernels below the C API: they reach
// kernels only through a KernelSet (the lookup the library's ops use), whose entries are never
// null, and never through a raw table entry.
#pragma once

#include "core/context.hpp"
#include "kernels/registry.hpp"

#include <vector>

namespace qnt_test {

// One set per cap from the reference up to the best this machine runs, the reference first.
inline std::vector<const qnt::kern::KernelSet *> machine_kernel_sets() {
#if defined(__x86_64__)
  const qnt_isa caps[] = {QNT_ISA_REFERENCE, QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI};
#elif defined(__aarch64__)
  const qnt_isa caps[] = {QNT_ISA_REFERENCE, QNT_ISA_NEON, QNT_ISA_NEON_DOTPROD};
#else
  const qnt_isa caps[] = {QNT_ISA_REFERENCE};
#endif
  std::vector<const qnt::kern::KernelSet *> out;
  for (qnt_isa cap : caps)
    if (cap <= qnt::machine_isa()) out.push_back(&qnt::kern::kernels_for(cap));
  return out;
}

}  // namespace qnt_test
