// The kernel registry: every op's kernels, keyed by op family x dtype x run kind x ISA, and the
// choice a context makes among them. The contract every kernel keeps is in kernels/README.md.
//
// Ops see a tensor as runs: a run is a stretch of contiguous elements along which the
// quantization parameters either stay the same (RunKind::Shared: per-tensor, per-axis with
// inner > 1, per-block along the last axis) or advance with the element (RunKind::PerElement:
// per-axis on the last axis, per-block with inner > 1), or step once per block of
// Format::block elements (RunKind::kBlocked: consecutive blocks along the last axis, the run
// starting on a block boundary). A granularity is thus a loop over runs (src/ops/runs.hpp),
// with one division per run and none per element.
#pragma once

#include "kernels/gemm/gemm.hpp"
#include "kernels/ref/calib_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/wo/wo.hpp"

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace qnt::kern {

enum RunKind : int { kShared = 0, kPerElement = 1, kBlocked = 2 };
constexpr int kRunKinds = 3;

// The quantized side of a run, as plain values.
using Code = ref::Code;
struct Format {
  qnt_dtype dtype = QNT_DTYPE_I8;
  Code code = Code::Integer;
  int bits = 8;  // 1, 2, 4, 8, 16 or 32
  bool is_signed = true;
  int32_t qmin = -128;
  int32_t qmax = 127;
  // Write 8-, 16- and 32-bit outputs with non-temporal stores: the op's data is larger than the
  // last-level cache, so the output would leave it anyway, and the stores then skip reading
  // the lines they overwrite. Changes no value.
  bool stream = false;
  size_t block = 0;  // kBlocked runs: the block length (> 0)
};

// Quantizes x[0 .. n) into elements first .. first + n of the packed tensor q. Element k of the
// run uses scale[g] and zero_point[g] with g = 0 (kShared), k (kPerElement) or k / f.block
// (kBlocked).
using QuantizeFn = void (*)(const float *x, uint8_t *q, size_t first, size_t n, const float *scale,
                            const int32_t *zero_point, const Format &f) noexcept;
// Dequantizes elements first .. first + n of q into x[0 .. n).
using DequantizeFn = void (*)(const uint8_t *q, size_t first, float *x, size_t n,
                              const float *scale, const int32_t *zero_point,
                              const Format &f) noexcept;
using ScanFn = void (*)(const float *x, size_t n, ref::ScanResult *out) noexcept;
using BinIndicesFn = void (*)(const float *x, size_t n, double inv, double range, int32_t offset,
                              int32_t *idx) noexcept;

// Dtype slots are indexed by the qnt_dtype value (1 .. QNT_DTYPE_LOG8); the float dtypes' slots
// (f32, f16, bf16) stay empty.
constexpr int kDTypeSlots = 16;
constexpr bool quantized_slot(int d) noexcept {
  return d != QNT_DTYPE_F32 && d != QNT_DTYPE_F16 && d != QNT_DTYPE_BF16;
}

// The CPU features (qnt_cpu_feature bits) a machine must have, with the OS's support, to run the
// kernels of `isa`: what each table's translation unit is compiled for (its -m flags).
constexpr uint64_t features_required(qnt_isa isa) noexcept {
  constexpr uint64_t avx2 = QNT_CPU_AVX2 | QNT_CPU_FMA;
  constexpr uint64_t avx512 = avx2 | QNT_CPU_AVX512F | QNT_CPU_AVX512BW | QNT_CPU_AVX512VL;
  switch (isa) {
    case QNT_ISA_AVX2: return avx2;
    case QNT_ISA_AVX512: return avx512;
    case QNT_ISA_AVX512_VNNI: return avx512 | QNT_CPU_AVX512VNNI;
    case QNT_ISA_NEON: return QNT_CPU_NEON;
    case QNT_ISA_NEON_DOTPROD: return QNT_CPU_NEON | QNT_CPU_DOTPROD;
    default: return 0;  // the reference (and NATIVE, which is no set of its own)
  }
}

// The best kernel set a machine with `features` runs on this build's architecture (never
// QNT_ISA_NATIVE): a pure function, so tests can ask it for machines they do not run on.
qnt_isa best_isa(uint64_t features) noexcept;

// One ISA's kernels. A null entry means the ISA has no kernel of its own there; the registry
// then takes the next lower ISA's.
struct KernelTable {
  const char *name;
  qnt_isa isa;
  QuantizeFn quantize[kDTypeSlots][kRunKinds];
  DequantizeFn dequantize[kDTypeSlots][kRunKinds];
  ScanFn scan;
  BinIndicesFn bin_indices;
  // The integer GEMM's micro-tile (gemm.hpp); null in the reference table, whose ops run the
  // scalar reference GEMM of kernels/ref instead.
  const GemmKernel *gemm;
  // The weight-only linear layer's kernels (kernels/wo/wo.hpp); null in the reference table.
  const WoKernels *wo;
};

// The kernels one context uses: for every key, the best kernel at most its ISA cap that the
// machine runs. Built once per ISA cap; contexts point at one.
struct KernelSet {
  qnt_isa isa;  // the cap it was chosen under (never QNT_ISA_NATIVE)
  QuantizeFn quantize[kDTypeSlots][kRunKinds];
  DequantizeFn dequantize[kDTypeSlots][kRunKinds];
  const char *quantize_name[kDTypeSlots][kRunKinds];
  const char *dequantize_name[kDTypeSlots][kRunKinds];
  ScanFn scan;
  BinIndicesFn bin_indices;
  const char *scan_name;
  const char *bin_indices_name;
  const GemmKernel *gemm;  // null: the scalar reference GEMM
  const char *gemm_name;
  const WoKernels *wo;  // null: the scalar reference of the weight-only layer
  const char *wo_name;
  // The binary GEMM's popcount kernels (with a gemm kernel): xnor, the row kernel, is the gemm
  // kernel's xnor, else xnor_generic; xnor_cols, the column kernel, is AVX-512 VPOPCNTDQ's in
  // the AVX-512 sets of a machine that has it (the binary op then runs it, not xnor), else null.
  // xnor_name names the kernel the op runs.
  GemmXnorFn xnor;
  const char *xnor_name;
  GemmXnorColsFn xnor_cols;
  std::string description;  // "family.dtype.run=isa" lines, as the context query returns them
};

// The kernel set a machine with `features` gets under `cap` (NATIVE: no cap): for every entry,
// the kernel of the highest compiled table whose ISA is at most the cap, whose
// features_required() the machine has, and which has that entry; the reference table has
// every entry. A pure function of (features, cap): tests build the sets of machines they do not
// have with it, and kernels_for() is this machine's.
KernelSet build_kernel_set(uint64_t features, qnt_isa cap);

// This machine's set for the kernel cap `isa` (a context's qnt::Context::isa()), built once per
// cap and shared.
const KernelSet &kernels_for(qnt_isa isa);

// The tables compiled into this build, the reference first, lowest ISA first. For inspection
// only: kernels are called through a KernelSet, whose entries are never null.
size_t compiled_table_count();
const KernelTable &compiled_table(size_t i);

// The names of the tables compiled into this build, for qnt_build_info (e.g. "ref,avx2,avx512").
const char *compiled_tables();

}  // namespace qnt::kern
