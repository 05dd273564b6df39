#include "core/context.hpp"

#include "hw/machine.hpp"
#include "kernels/registry.hpp"

#include <algorithm>

#if defined(QNT_WITH_OPENMP)
#include <omp.h>
#endif

namespace qnt {

int32_t Context::threads() const {
#if defined(QNT_WITH_OPENMP)
  if (requested_threads > 0) return requested_threads;
  // OpenMP's own default honours OMP_NUM_THREADS, and otherwise counts the CPUs this process
  // may run on; the cap keeps a stray OMP_NUM_THREADS=100000 from asking for absurd teams.
  return std::clamp(omp_get_max_threads(), 1, 1024);
#else
  return 1;
#endif
}

qnt_isa machine_isa() {
  const uint64_t f = hw::machine().cpu_features;
#if defined(__x86_64__) || defined(_M_X64)
  const uint64_t avx512 = QNT_CPU_AVX512F | QNT_CPU_AVX512BW | QNT_CPU_AVX512VL;
  if ((f & avx512) == avx512)
    return (f & QNT_CPU_AVX512VNNI) ? QNT_ISA_AVX512_VNNI : QNT_ISA_AVX512;
  if ((f & (QNT_CPU_AVX2 | QNT_CPU_FMA)) == (QNT_CPU_AVX2 | QNT_CPU_FMA)) return QNT_ISA_AVX2;
  return QNT_ISA_REFERENCE;
#elif defined(__aarch64__)
  if (f & QNT_CPU_DOTPROD) return QNT_ISA_NEON_DOTPROD;
  return (f & QNT_CPU_NEON) ? QNT_ISA_NEON : QNT_ISA_REFERENCE;
#else
  (void)f;
  return QNT_ISA_REFERENCE;
#endif
}

bool isa_of_this_arch(qnt_isa isa) noexcept {
  if (isa == QNT_ISA_NATIVE || isa == QNT_ISA_REFERENCE) return true;
#if defined(__x86_64__) || defined(_M_X64)
  return isa >= QNT_ISA_AVX2 && isa <= QNT_ISA_AVX512_VNNI;
#elif defined(__aarch64__)
  return isa == QNT_ISA_NEON || isa == QNT_ISA_NEON_DOTPROD;
#else
  return false;
#endif
}

qnt_isa Context::isa() const {
  const qnt_isa best = machine_isa();
  return max_isa == QNT_ISA_NATIVE ? best : std::min(best, max_isa);
}

const kern::KernelSet &Context::kernels() const {
  return kernel_set != nullptr ? *kernel_set : kern::kernels_for(isa());
}

void Context::choose_kernels() { kernel_set = &kern::kernels_for(isa()); }

}  // namespace qnt
