// The AVX-512 VNNI table: the GEMM tile with vpdpbusd (kernels/gemm/tiles_x86.hpp); every
// other entry is left to the AVX-512 table. Compiled with its own -m flags; runs only where the
// CPU and the OS support them.
#include "kernels/gemm/tiles_x86.hpp"
#include "kernels/simd/tables.hpp"
#include "kernels/wo/blk_x86.hpp"
#include "kernels/wo/wo_x86.hpp"

namespace qnt::simd {
namespace {
constexpr kern::GemmKernel kGemm{"avx512_vnni", kern::Vnni512::kMR, kern::Vnni512::kNP, 4,
                                 &kern::gemm_tile<kern::Vnni512>,
                                  &kern::gemm_epilogue_avx512, nullptr, nullptr, 0,
                                  &kern::gemm_correct_avx512, /*a_rows=*/true,
                                  &kern::gemm_pack<false, true>, &kern::gemm_pack<true, true>,
                                  &kern::depthwise_avx512, &kern::depthwise_vnni,
                                  &kern::Vnni512::conv<6>, nullptr, &kern::xnor_avx2,
                                  &kern::dw_expand<kern::DwVnni>, &kern::dw_row<kern::DwVnni>,
                                  kern::DwVnni::kBlock, kern::DwVnni::kGroup, kern::DwVnni::kBytes,
                                 &kern::Vnni512::conv<4>, &kern::Vnni512::conv_fused<6>,
                                 &kern::Vnni512::conv_fused<4>};
constexpr kern::WoKernels kWo{"avx512_vnni", &kern::wo::f32_512, &kern::wo::int8_vnni,
                              &kern::wo::dot512, &kern::wo::dequant512, true, true,
                              &kern::wo::token_vnni, &kern::wo::f32_batch512, /*dequant_batches=*/false,
                              &kern::wo::blk_vnni, &kern::wo::f32_batch512_takes,
                              &kern::wo::f32_one_range512};
constexpr kern::KernelTable make() {
  kern::KernelTable t{};
  t.name = "avx512_vnni";
  t.isa = QNT_ISA_AVX512_VNNI;
  t.gemm = &kGemm;
  t.wo = &kWo;
  return t;
}
constexpr kern::KernelTable kTable = make();
}  // namespace

const kern::KernelTable &avx512_vnni_table() noexcept { return kTable; }

}  // namespace qnt::simd
