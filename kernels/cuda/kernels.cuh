// The CUDA kernels of qnt: each gives the bits of its reference kernel (kernels/ref), through
// the shared scalar rules of kernels/common/scalar.hpp, built with --fmad=false.
#pragma once

#include "hw/cuda_module.h"

#include <cuda_runtime.h>

namespace qnt::cuda {

// quantize, dequantize or requantize (a.op) over a.count elements.
cudaError_t launch_convert(const qnt_cuda_convert_args &a, cudaStream_t s);

// The integer GEMM with its epilogue (src/ops/epilogue.hpp).
cudaError_t launch_gemm(const qnt_cuda_gemm_args &a, cudaStream_t s);

// The weight-only linear layer in either mode (qnt.h, qnt_linear_weight_only).
cudaError_t launch_weight_only(const qnt_cuda_wo_args &a, cudaStream_t s);

}  // namespace qnt::cuda
