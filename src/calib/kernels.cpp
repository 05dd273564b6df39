#include "calib/kernels.hpp"

#include "hw/machine.hpp"

#include <qnt/qnt.h>

#if defined(QNT_WITH_X86_KERNELS)
#include "kernels/cpu/calib_kernels.hpp"
#endif

namespace qnt::calib {

std::vector<CalibKernels> available_calib_kernels() {
  std::vector<CalibKernels> k{{"ref", QNT_ISA_REFERENCE, &ref::scan, &ref::bin_indices}};
#if defined(QNT_WITH_X86_KERNELS)
  const uint64_t f = hw::machine().cpu_features;
  if (f & QNT_CPU_AVX2)
    k.push_back({"avx2", QNT_ISA_AVX2, &cpu::avx2::scan, &cpu::avx2::bin_indices});
  const uint64_t avx512 = QNT_CPU_AVX512F | QNT_CPU_AVX512VL;
  if ((f & avx512) == avx512)
    k.push_back({"avx512", QNT_ISA_AVX512, &cpu::avx512::scan, &cpu::avx512::bin_indices});
#endif
  return k;
}

const CalibKernels &calib_kernels(qnt_isa isa) {
  static const std::vector<CalibKernels> all = available_calib_kernels();
  for (size_t i = all.size(); i-- > 1;)
    if (all[i].isa <= isa) return all[i];
  return all.front();
}

}  // namespace qnt::calib
