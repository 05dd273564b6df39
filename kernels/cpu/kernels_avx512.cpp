// The xsimd kernels (kernels/simd/kernels.hpp) and the GEMM tile (kernels/gemm/tiles_x86.hpp)
// instantiated for AVX-512 (F, BW, VL); this translation unit is compiled with its own -m flags
// and runs only where the CPU and the OS support them.
#include "kernels/gemm/tiles_x86.hpp"
#include "kernels/simd/kernels.hpp"
#include "kernels/simd/tables.hpp"
#include "kernels/wo/blk_x86.hpp"
#include "kernels/wo/wo_x86.hpp"

namespace qnt::simd {
namespace {
constexpr kern::GemmKernel kGemm{"avx512", kern::Split512::kMR, kern::Split512::kNP, 8,
                                 &kern::gemm_tile<kern::Split512>, &kern::gemm_epilogue_avx512,
                                 nullptr, nullptr, 0, &kern::gemm_correct_avx512, false,
                                 &kern::gemm_pack<false, false>, &kern::gemm_pack<true, false>,
                                 &kern::depthwise_avx512, nullptr, nullptr, nullptr,
                                 &kern::xnor_avx2};
// The f32 weight-only kernel with 16-entry vpermps; the int8 mode keeps AVX2's vpmaddubsw.
constexpr kern::WoKernels kWo{"avx512", &kern::wo::f32_512, &kern::wo::int8_256,
                              &kern::wo::dot512, &kern::wo::dequant512, true, true,
                              &kern::wo::token256, &kern::wo::f32_batch512, /*dequant_batches=*/false,
                              &kern::wo::blk256_kernel, &kern::wo::f32_batch512_takes,
                              &kern::wo::f32_one_range512};
constexpr kern::KernelTable kTable =
    make_table<xsimd::avx512bw>("avx512", QNT_ISA_AVX512, &kGemm, &kWo);
}  // namespace

const kern::KernelTable &avx512_table() noexcept { return kTable; }

}  // namespace qnt::simd
