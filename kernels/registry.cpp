#include "kernels/registry.hpp"

#include "hw/machine.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/simd/tables.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <vector>

namespace qnt::kern {
namespace {

// --- the reference table: the scalar rules of kernels/ref over a run --------------------------

// The parameter index of run element k for a run kind.
template <int Kind>
size_t group(size_t k, const Format &f) noexcept {
  return Kind == kShared ? 0 : Kind == kPerElement ? k : k / f.block;
}

template <int Kind>
void ref_quantize(const float *x, uint8_t *q, size_t first, size_t n, const float *s,
                  const int32_t *z, const Format &f) noexcept {
  for (size_t k = 0; k < n; ++k) {
    const size_t g = group<Kind>(k, f);
    ref::store_element(q, first + k, f.bits,
                       ref::quantize_code(f.code, x[k], s[g], z[g], f.qmin, f.qmax, f.bits));
  }
}

template <int Kind>
void ref_dequantize(const uint8_t *q, size_t first, float *x, size_t n, const float *s,
                    const int32_t *z, const Format &f) noexcept {
  for (size_t k = 0; k < n; ++k) {
    const size_t g = group<Kind>(k, f);
    x[k] = ref::dequantize_code(f.code, ref::load_element(q, first + k, f.bits, f.is_signed),
                                s[g], z[g], f.bits);
  }
}

KernelTable make_reference() {
  KernelTable t{};
  t.name = "ref";
  t.isa = QNT_ISA_REFERENCE;
  for (int d = 1; d < kDTypeSlots; ++d) {
    if (!quantized_slot(d)) continue;
    t.quantize[d][kShared] = &ref_quantize<kShared>;
    t.quantize[d][kPerElement] = &ref_quantize<kPerElement>;
    t.quantize[d][kBlocked] = &ref_quantize<kBlocked>;
    t.dequantize[d][kShared] = &ref_dequantize<kShared>;
    t.dequantize[d][kPerElement] = &ref_dequantize<kPerElement>;
    t.dequantize[d][kBlocked] = &ref_dequantize<kBlocked>;
  }
  t.scan = &ref::scan;
  t.bin_indices = &ref::bin_indices;
  return t;
}

const KernelTable kReference = make_reference();

// The tables compiled in, lowest first.
std::vector<const KernelTable *> compiled() {
  std::vector<const KernelTable *> v{&kReference};
#if defined(QNT_WITH_X86_KERNELS)
  v.push_back(&simd::avx2_table());
  v.push_back(&simd::avx512_table());
  v.push_back(&simd::avx512_vnni_table());
#elif defined(QNT_WITH_NEON_KERNELS)
  v.push_back(&simd::neon_table());
#endif
  return v;
}

const std::vector<const KernelTable *> &tables() {
  static const std::vector<const KernelTable *> t = compiled();
  return t;
}

const char *dtype_name(int d) {
  static const char *const names[kDTypeSlots] = {
      "?",  "f32", "i32",    "i8",      "u8",  "i16",  "u16",  "i4",
      "u4", "nf4", "binary", "ternary", "f16", "bf16", "log4", "log8"};
  return names[d];
}

}  // namespace

qnt_isa best_isa(uint64_t features) noexcept {
#if defined(__x86_64__) || defined(_M_X64)
  const qnt_isa order[] = {QNT_ISA_AVX512_VNNI, QNT_ISA_AVX512, QNT_ISA_AVX2};
#elif defined(__aarch64__)
  const qnt_isa order[] = {QNT_ISA_NEON_DOTPROD, QNT_ISA_NEON};
#else
  const qnt_isa order[] = {QNT_ISA_REFERENCE};
#endif
  for (qnt_isa isa : order)
    if ((features & features_required(isa)) == features_required(isa)) return isa;
  return QNT_ISA_REFERENCE;
}

KernelSet build_kernel_set(uint64_t features, qnt_isa cap) {
  const qnt_isa best = best_isa(features);
  KernelSet s{};
  s.isa = cap == QNT_ISA_NATIVE ? best : std::min(best, cap);
  const auto &all = tables();
  // Each entry from the best table at most the cap, run by the machine, that has one (the
  // reference has them all).
  auto pick = [&](auto get) -> const KernelTable * {
    for (size_t i = all.size(); i-- > 0;) {
      const KernelTable &t = *all[i];
      const uint64_t need = features_required(t.isa);
      if (t.isa <= s.isa && (features & need) == need && get(t) != nullptr) return &t;
    }
    return &kReference;
  };
  for (int d = 1; d < kDTypeSlots; ++d) {
    if (!quantized_slot(d)) continue;
    for (int r = 0; r < kRunKinds; ++r) {
      const KernelTable *q = pick([&](const KernelTable &t) { return t.quantize[d][r]; });
      const KernelTable *dq = pick([&](const KernelTable &t) { return t.dequantize[d][r]; });
      s.quantize[d][r] = q->quantize[d][r];
      s.quantize_name[d][r] = q->name;
      s.dequantize[d][r] = dq->dequantize[d][r];
      s.dequantize_name[d][r] = dq->name;
    }
  }
  const KernelTable *sc = pick([](const KernelTable &t) { return t.scan; });
  const KernelTable *bi = pick([](const KernelTable &t) { return t.bin_indices; });
  s.scan = sc->scan;
  s.scan_name = sc->name;
  s.bin_indices = bi->bin_indices;
  s.bin_indices_name = bi->name;
  const KernelTable *gm = pick([](const KernelTable &t) { return t.gemm; });
  s.gemm = gm->gemm;
  s.gemm_name = gm->name;
  const bool own_xnor = s.gemm != nullptr && s.gemm->xnor != nullptr;
  s.xnor = own_xnor ? s.gemm->xnor : &xnor_generic;
  s.xnor_name = own_xnor ? s.gemm_name : "generic";
#if defined(QNT_WITH_X86_KERNELS)
  const uint64_t popcnt = QNT_CPU_AVX512F | QNT_CPU_AVX512VPOPCNTDQ;
  if (s.gemm != nullptr && s.isa >= QNT_ISA_AVX512 && (features & popcnt) == popcnt) {
    s.xnor_cols = simd::xnor_cols_vpopcnt();
    s.xnor_name = "avx512_vpopcntdq";
  }
#endif
  const KernelTable *wt = pick([](const KernelTable &t) { return t.wo; });
  s.wo = wt->wo;
  s.wo_name = wt->name;
  static const char *const runs[kRunKinds] = {"shared", "per_element", "blocked"};
  std::string &out = s.description;
  for (int d = 1; d < kDTypeSlots; ++d) {
    if (!quantized_slot(d)) continue;
    for (int r = 0; r < kRunKinds; ++r) {
      out += std::string("quantize.") + dtype_name(d) + "." + runs[r] + "=" +
             s.quantize_name[d][r] + "\n";
      out += std::string("dequantize.") + dtype_name(d) + "." + runs[r] + "=" +
             s.dequantize_name[d][r] + "\n";
    }
  }
  out += std::string("calibrate.scan=") + s.scan_name + "\n";
  out += std::string("calibrate.histogram=") + s.bin_indices_name + "\n";
  out += std::string("gemm.u8s8s32=") + s.gemm_name + "\n";
  out += std::string("gemm.binary=") + (s.gemm != nullptr ? s.xnor_name : "ref") + "\n";
  out += std::string("linear.weight_only=") + s.wo_name + "\n";
  return s;
}

const KernelSet &kernels_for(qnt_isa isa) {
  // One set per cap value; built on first use, then shared by every context with that cap.
  static std::array<std::unique_ptr<KernelSet>, 32> sets;
  static std::mutex m;
  const auto slot = static_cast<size_t>(isa) < sets.size() ? static_cast<size_t>(isa) : 0;
  std::lock_guard<std::mutex> lock(m);
  if (!sets[slot])
    sets[slot] = std::make_unique<KernelSet>(build_kernel_set(hw::machine().cpu_features, isa));
  return *sets[slot];
}

size_t compiled_table_count() { return tables().size(); }
const KernelTable &compiled_table(size_t i) { return *tables().at(i); }

const char *compiled_tables() {
#if defined(QNT_WITH_X86_KERNELS)
  return "ref,avx2,avx512,avx512_vnni";
#elif defined(QNT_WITH_NEON_KERNELS)
  return "ref,neon";
#else
  return "ref";
#endif
}

}  // namespace qnt::kern
