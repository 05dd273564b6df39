// The xsimd kernels (kernels/simd/kernels.hpp) and the GEMM tile (kernels/gemm/tiles_x86.hpp)
// instantiated for AVX2; this translation unit is compiled with its own -m flags and runs only
// where the CPU and the OS support them.
#include "kernels/gemm/tiles_x86.hpp"
#include "kernels/simd/kernels.hpp"
#include "kernels/simd/tables.hpp"
#include "kernels/wo/blk_x86.hpp"
#include "kernels/wo/wo_x86.hpp"

namespace qnt::simd {
namespace {
// Ternary B: the same epilogue, correction and packers as kGemm, A as rows.
constexpr kern::GemmKernel kTernary{"avx2.ternary", kern::Tern256::kMR, kern::Tern256::kNP, 4,
                                    &kern::gemm_tile<kern::Tern256>, &kern::gemm_epilogue_avx2,
                                    nullptr, nullptr, 0, &kern::gemm_correct_avx2, true,
                                    &kern::gemm_pack<false, false>, &kern::gemm_pack<true, false>,
                                    &kern::depthwise_avx2, nullptr, nullptr, nullptr,
                                    nullptr, &kern::dw_expand<kern::DwPairs256>, &kern::dw_row<kern::DwPairs256>,
                                    kern::DwPairs256::kBlock, kern::DwPairs256::kGroup, kern::DwPairs256::kBytes};
constexpr kern::GemmKernel kGemm{"avx2", kern::Split256::kMR, kern::Split256::kNP, 8,
                                 &kern::gemm_tile<kern::Split256>, &kern::gemm_epilogue_avx2,
                                 &kern::unpack_split256,
                                 &kern::gemm_tile<kern::Split256Unpacked>, 128,
                                 &kern::gemm_correct_avx2, false, &kern::gemm_pack<false, false>,
                                 &kern::gemm_pack<true, false>, &kern::depthwise_avx2,
                                 nullptr, nullptr, &kTernary, &kern::xnor_avx2,
                                 &kern::dw_expand<kern::DwPairs256>, &kern::dw_row<kern::DwPairs256>,
                                 kern::DwPairs256::kBlock, kern::DwPairs256::kGroup, kern::DwPairs256::kBytes};
constexpr kern::WoKernels kWo{"avx2", &kern::wo::f32_256, &kern::wo::int8_256,
                              &kern::wo::dot256, &kern::wo::dequant256, true, true,
                              &kern::wo::token256, &kern::wo::f32_batch256, true,
                              &kern::wo::blk256_kernel};
constexpr kern::KernelTable kTable =
    make_table<xsimd::avx2>("avx2", QNT_ISA_AVX2, &kGemm, &kWo);
}  // namespace

const kern::KernelTable &avx2_table() noexcept { return kTable; }

}  // namespace qnt::simd
