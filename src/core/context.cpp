#include "core/context.hpp"

#include "core/error.hpp"
#include "hw/machine.hpp"
#include "kernels/registry.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

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

const char *isa_name(qnt_isa isa) noexcept {
  switch (isa) {
    case QNT_ISA_NATIVE:
      return "native";
    case QNT_ISA_REFERENCE:
      return "reference";
    case QNT_ISA_AVX2:
      return "avx2";
    case QNT_ISA_AVX512:
      return "avx512";
    case QNT_ISA_AVX512_VNNI:
      return "avx512_vnni";
    case QNT_ISA_NEON:
      return "neon";
    case QNT_ISA_NEON_DOTPROD:
      return "neon_dotprod";
  }
  return "invalid";
}

qnt_isa machine_isa() { return kern::best_isa(hw::machine().cpu_features); }

namespace {

// QNT_MAX_ISA, read once: the cap it names (NATIVE when unset or empty), or why it is refused.
struct EnvironmentCap {
  qnt_isa isa = QNT_ISA_NATIVE;
  std::string error;
};

EnvironmentCap read_environment_cap() {
  EnvironmentCap cap;
  const char *v = std::getenv("QNT_MAX_ISA");
  if (v == nullptr || *v == '\0') return cap;
  std::string name(v);
  for (char &ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const qnt_isa all[] = {QNT_ISA_NATIVE, QNT_ISA_REFERENCE, QNT_ISA_AVX2,
                         QNT_ISA_AVX512, QNT_ISA_AVX512_VNNI, QNT_ISA_NEON,
                         QNT_ISA_NEON_DOTPROD};
  std::string names;
  for (qnt_isa isa : all) {
    if (!isa_of_this_arch(isa)) continue;
    if (name == isa_name(isa)) {
      cap.isa = isa;
      return cap;
    }
    names += names.empty() ? "" : "|";
    names += isa_name(isa);
  }
  cap.error = "QNT_MAX_ISA=" + std::string(v) + " is not a kernel set of this machine's "
              "architecture; expected one of " + names;
  return cap;
}

}  // namespace

qnt_isa environment_isa_cap() {
  static const EnvironmentCap cap = read_environment_cap();
  if (!cap.error.empty()) throw Error(QNT_ERR_INVALID_ARGUMENT, cap.error);
  return cap.isa;
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
  qnt_isa isa = machine_isa();
  for (qnt_isa cap : {environment_isa_cap(), max_isa})
    if (cap != QNT_ISA_NATIVE) isa = std::min(isa, cap);
  return isa;
}

const kern::KernelSet &Context::kernels() const {
  return kernel_set != nullptr ? *kernel_set : kern::kernels_for(isa());
}

void Context::choose_kernels() { kernel_set = &kern::kernels_for(isa()); }

}  // namespace qnt
