#include "kernels/common/scalar.hpp"
#include "kernels/cuda/kernels.cuh"

#include <qnt/qnt.h>

#include <stdint.h>

namespace qnt::cuda {
namespace {

using namespace qnt::rules;

// The NF4 tables of kernels/common/scalar.hpp in constant memory.
__constant__ float kCodebook[16] = {QNT_NF4_CODEBOOK};
__constant__ float kThresholds[15] = {QNT_NF4_THRESHOLDS};
__constant__ int8_t kNF4Int8[16] = {QNT_NF4_INT8};

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n units.
unsigned blocks_for(uint64_t n) {
  const uint64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536u * 16u ? (b == 0 ? 1 : b) : 65536u * 16u);
}

// --- elements and parameters -----------------------------------------------------------------

// qnt::GroupLayout::group_of.
__device__ __forceinline__ uint64_t group_of(const qnt_cuda_layout &L, uint64_t i) {
  const auto e = static_cast<int64_t>(i);
  switch (L.granularity) {
    case QNT_GRANULARITY_PER_AXIS:
      return static_cast<uint64_t>((e / L.inner) % L.dim);
    case QNT_GRANULARITY_PER_BLOCK: {
      const int64_t in = e % L.inner;
      const int64_t rest = e / L.inner;
      const int64_t d = rest % L.dim;
      const int64_t o = rest / L.dim;
      return static_cast<uint64_t>((o * L.blocks + d / L.block) * L.inner + in);
    }
    default:
      return 0;
  }
}

// qnt::ref::load_element.
__device__ __forceinline__ int32_t load_element(const uint8_t *base, uint64_t i, int bits,
                                                bool is_signed) {
  switch (bits) {
    case 32:
      return reinterpret_cast<const int32_t *>(base)[i];
    case 16: {
      const uint16_t u = reinterpret_cast<const uint16_t *>(base)[i];
      return is_signed ? static_cast<int32_t>(static_cast<int16_t>(u)) : static_cast<int32_t>(u);
    }
    case 8:
      return is_signed ? static_cast<int32_t>(static_cast<int8_t>(base[i]))
                       : static_cast<int32_t>(base[i]);
    default: {
      const uint64_t per = static_cast<uint64_t>(8 / bits);
      const unsigned shift = static_cast<unsigned>((i % per) * static_cast<uint64_t>(bits));
      const unsigned mask = (1u << bits) - 1u;
      const unsigned u = (static_cast<unsigned>(base[i / per]) >> shift) & mask;
      if (is_signed && (u >> (bits - 1)) != 0) return static_cast<int32_t>(u) - (1 << bits);
      return static_cast<int32_t>(u);
    }
  }
}

// qnt::ref::dequantize_code for element i of the quantized side s.
__device__ __forceinline__ float dequantize_at(const qnt_cuda_qside &s, const uint8_t *q,
                                               uint64_t i) {
  const uint64_t g = group_of(s.layout, i);
  const int32_t v = load_element(q, i, s.bits, s.is_signed != 0);
  const float scale = s.scales[g];
  switch (s.code) {
    case 1:
      return kCodebook[v & 15] * scale;
    case 2:
      return v ? scale : -scale;
    case 3:
      return dequantize_log2(static_cast<uint32_t>(v), scale, s.bits);
    default:
      return dequantize_integer(v, scale, s.zero_points[g]);
  }
}

// qnt::ref::quantize_code for element i of s.
__device__ __forceinline__ int32_t quantize_at(const qnt_cuda_qside &s, float x, uint64_t i) {
  const uint64_t g = group_of(s.layout, i);
  switch (s.code) {
    case 1:
      return quantize_nf4(x, s.scales[g], kThresholds);
    case 2:
      return quantize_binary(x);
    case 3:
      return quantize_log2(x, s.scales[g], s.bits);
    default:
      return quantize_integer(x, s.scales[g], s.zero_points[g], s.qmin, s.qmax);
  }
}

__device__ __forceinline__ float load_float(int32_t dtype, const void *p, uint64_t i) {
  if (dtype == QNT_DTYPE_F16) return f16_to_f32(static_cast<const uint16_t *>(p)[i]);
  if (dtype == QNT_DTYPE_BF16) return bf16_to_f32(static_cast<const uint16_t *>(p)[i]);
  return static_cast<const float *>(p)[i];
}

__device__ __forceinline__ void store_float(int32_t dtype, void *p, uint64_t i, float v) {
  if (dtype == QNT_DTYPE_F16)
    static_cast<uint16_t *>(p)[i] = f32_to_f16(v);
  else if (dtype == QNT_DTYPE_BF16)
    static_cast<uint16_t *>(p)[i] = f32_to_bf16(v);
  else
    static_cast<float *>(p)[i] = v;
}

// --- quantize, dequantize, requantize ----------------------------------------------------------

// The float of element i on the way in: the input itself (quantize) or its dequantized value
// (requantize).
__device__ __forceinline__ float source_value(const qnt_cuda_convert_args &a, uint64_t i) {
  if (a.op == QNT_CUDA_QUANTIZE) return load_float(a.float_dtype, a.in, i);
  return dequantize_at(a.from, static_cast<const uint8_t *>(a.in), i);
}

// Quantize and requantize: one unit per output element (8 bits and wider) or per output byte
// (packed dtypes: its elements, with the unused bits of the last byte written as 0).
__global__ void convert_to_quantized(const qnt_cuda_convert_args a, uint64_t units) {
  const int bits = a.to.bits;
  auto *out = static_cast<uint8_t *>(a.out);
  for (uint64_t u = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; u < units;
       u += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
    if (bits >= 8) {
      const int32_t q = quantize_at(a.to, source_value(a, u), u);
      if (bits == 32)
        reinterpret_cast<int32_t *>(out)[u] = q;
      else if (bits == 16)
        reinterpret_cast<uint16_t *>(out)[u] = static_cast<uint16_t>(static_cast<uint32_t>(q));
      else
        out[u] = static_cast<uint8_t>(static_cast<uint32_t>(q));
      continue;
    }
    const uint64_t per = static_cast<uint64_t>(8 / bits);
    const unsigned mask = (1u << bits) - 1u;
    unsigned byte = 0;
    for (uint64_t j = 0; j < per; ++j) {
      const uint64_t i = u * per + j;
      if (i >= a.count) break;
      const int32_t q = quantize_at(a.to, source_value(a, i), i);
      byte |= (static_cast<unsigned>(q) & mask) << (j * static_cast<unsigned>(bits));
    }
    out[u] = static_cast<uint8_t>(byte);
  }
}

__global__ void convert_to_float(const qnt_cuda_convert_args a) {
  const auto *in = static_cast<const uint8_t *>(a.in);
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < a.count;
       i += static_cast<uint64_t>(gridDim.x) * blockDim.x)
    store_float(a.float_dtype, a.out, i, dequantize_at(a.from, in, i));
}

// --- the integer GEMM ----------------------------------------------------------------------------

constexpr int kTileM = 64, kTileN = 64, kTileK = 16;

__device__ __forceinline__ int32_t byte_value(uint8_t v, bool is_signed) {
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
}

// One 64 x 64 tile of y per block of 256 threads, 4 x 4 outputs each. The operands are staged
// zero-point-shifted (|a - za|, |b - zb| <= 255, so every product fits in int32) and summed in
// uint32: the sum modulo 2^32 is the header's wrapped int32 accumulator, in any order.
__global__ void __launch_bounds__(256) gemm_kernel(const qnt_cuda_gemm_args g) {
  __shared__ int32_t As[kTileK][kTileM + 1];
  __shared__ int32_t Bs[kTileK][kTileN + 1];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  uint32_t acc[4][4] = {};
  for (int64_t k0 = 0; k0 < g.K; k0 += kTileK) {
    for (int e = threadIdx.x; e < kTileK * kTileM; e += blockDim.x) {
      const int kk = e % kTileK, mm = e / kTileK;
      const int64_t m = m0 + mm, k = k0 + kk;
      As[kk][mm] = (m < g.M && k < g.K)
                       ? byte_value(g.a[m * g.lda + k], g.a_signed != 0) - g.za
                       : 0;
    }
    for (int e = threadIdx.x; e < kTileK * kTileN; e += blockDim.x) {
      const int nn = e % kTileN, kk = e / kTileN;
      const int64_t n = n0 + nn, k = k0 + kk;
      Bs[kk][nn] = (n < g.N && k < g.K)
                       ? byte_value(g.b[k * g.b_ks + n * g.b_ns], g.b_signed != 0) - g.zb[n]
                       : 0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk) {
      int32_t av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bv[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += static_cast<uint32_t>(av[i] * bv[j]);
    }
    __syncthreads();
  }
  // The epilogue of src/ops/epilogue.hpp (Epilogue::put), element by element.
  for (int i = 0; i < 4; ++i) {
    const int64_t m = m0 + ty + 16 * i;
    if (m >= g.M) continue;
    for (int j = 0; j < 4; ++j) {
      const int64_t n = n0 + tx + 16 * j;
      if (n >= g.N) continue;
      const auto c = static_cast<int32_t>(acc[i][j]);
      const int32_t a = g.bias_i32 != nullptr ? wrap_add(c, g.bias_i32[n]) : c;
      const int64_t at = m * g.ldy + n;
      switch (g.mode) {
        case QNT_CUDA_EPI_INT32:
          static_cast<int32_t *>(g.y)[at] = g.relu && a < 0 ? 0 : a;
          break;
        case QNT_CUDA_EPI_REQUANTIZE: {
          const int32_t q = requantize(a, g.multiplier[n], g.zy, g.qmin, g.qmax);
          static_cast<uint8_t *>(g.y)[at] =
              static_cast<uint8_t>(static_cast<uint32_t>(g.relu && q < g.zy ? g.zy : q));
          break;
        }
        case QNT_CUDA_EPI_FLOAT: {
          float v = acc_to_float(a, g.multiplier[n], g.bias_f32 != nullptr ? g.bias_f32[n] : 0.0f);
          if (g.relu && v < 0.0f) v = 0.0f;
          static_cast<float *>(g.y)[at] = v;
          break;
        }
        default: {  // QNT_CUDA_EPI_FLOAT_QUANTIZE
          const float v = acc_to_float(a, g.multiplier[n], g.bias_f32[n]);
          const int32_t q = quantize_integer(v, g.sy, g.zy, g.qmin, g.qmax);
          static_cast<uint8_t *>(g.y)[at] =
              static_cast<uint8_t>(static_cast<uint32_t>(g.relu && q < g.zy ? g.zy : q));
          break;
        }
      }
    }
  }
}

// --- the weight-only layer ------------------------------------------------------------------------

constexpr int kWoRows = 8;      // rows of x per pass
constexpr int kWoFeatures = 8;  // output features per block: one half-warp (16 lanes) each

// The 16 lane sums added pairwise (s[i] += s[i + 8], + 4, + 2, + 1) across a half-warp; lane 0
// ends with the header's result. The additions are the reference's, in its order (a + b and
// b + a are the same IEEE operation).
__device__ __forceinline__ float reduce16(float v) {
#pragma unroll
  for (int width = 8; width >= 1; width /= 2) v = v + __shfl_down_sync(0xFFFFFFFFu, v, width, 16);
  return v;
}

__device__ __forceinline__ void store_output(const qnt_cuda_wo_args &a, int64_t m, int64_t n,
                                             float d) {
  store_float(a.y_dtype, a.y, static_cast<uint64_t>(m * a.N + n), wo_output(d, a.bias, n));
}

// f32 mode: lane l of a half-warp sums x[k] * w[k] for k = l, l + 16, ... with fmaf (the
// canonical dot product's partial sum l), each weight dequantized by the dequantize rule.
__global__ void __launch_bounds__(128) wo_f32_kernel(const qnt_cuda_wo_args a) {
  const int lane = threadIdx.x % 16;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWoFeatures + threadIdx.x / 16;
  const bool active = n < a.N;  // inactive lanes still join the shuffles
  for (int64_t m0 = 0; m0 < a.M; m0 += kWoRows) {
    const int rows = static_cast<int>(a.M - m0 < kWoRows ? a.M - m0 : kWoRows);
    float s[kWoRows];
#pragma unroll
    for (int r = 0; r < kWoRows; ++r) s[r] = 0.0f;
    if (active) {
      for (int64_t k = lane; k < a.K; k += 16) {
        const float w = dequantize_at(a.wq, a.w, static_cast<uint64_t>(n * a.K + k));
#pragma unroll
        for (int r = 0; r < kWoRows; ++r)
          if (r < rows)
            s[r] = fmaf(load_float(a.x_dtype, a.x, static_cast<uint64_t>((m0 + r) * a.K + k)), w,
                        s[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kWoRows; ++r) {
      const float d = reduce16(s[r]);
      if (active && lane == 0 && r < rows) store_output(a, m0 + r, n, d);
    }
  }
}

// int8 mode, step 1: one warp per (row m, block j): sx = max |x| / 127 (NaN when the block has
// a NaN or an infinity) and qx = the quantize rule into [-127, 127] (0 when sx is 0 or NaN).
__global__ void wo_act_quantize(const qnt_cuda_wo_args a, int64_t blocks, int8_t *qx, float *sx) {
  const int lane = threadIdx.x % 32;
  const int64_t item = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  if (item >= a.M * blocks) return;
  const int64_t m = item / blocks, j = item % blocks;
  const int64_t k0 = j * a.act_block;
  const int64_t k1 = k0 + a.act_block < a.K ? k0 + a.act_block : a.K;
  float amax = 0.0f;
  bool finite = true;
  for (int64_t k = k0 + lane; k < k1; k += 32) {
    const float v = load_float(a.x_dtype, a.x, static_cast<uint64_t>(m * a.K + k));
    if (!is_finite(v)) finite = false;
    else amax = fmaxf(amax, fabsf(v));
  }
  for (int off = 16; off >= 1; off /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, off));
    finite = __all_sync(0xFFFFFFFFu, finite);
  }
  const float s = finite ? amax / 127.0f : __int_as_float(0x7FC00000);
  if (lane == 0) sx[m * blocks + j] = s;
  for (int64_t k = k0 + lane; k < k1; k += 32) {
    const float v = load_float(a.x_dtype, a.x, static_cast<uint64_t>(m * a.K + k));
    qx[m * a.K + k] = finite && s != 0.0f
                          ? static_cast<int8_t>(quantize_integer(v, s, 0, -127, 127))
                          : int8_t{0};
  }
}

// The weight integer v of element (n, k) in the int8 mode: q - zw, or the NF4 code as an int8.
__device__ __forceinline__ int32_t weight_integer(const qnt_cuda_wo_args &a, int64_t n, int64_t k) {
  const auto i = static_cast<uint64_t>(n * a.K + k);
  const int32_t q = load_element(a.w, i, a.wq.bits, a.wq.is_signed != 0);
  if (a.wq.code == 1) return kNF4Int8[q & 15];
  return q - a.wq.zero_points[group_of(a.wq.layout, i)];
}

// int8 mode, step 2: lane l of a half-warp owns the elements k with (k / 4) % 16 == l; per block
// j (ascending) it sums qx * v exactly (wrapping int32), then s = fmaf((float)p, sx * sw, s).
__global__ void __launch_bounds__(128) wo_int8_kernel(const qnt_cuda_wo_args a, int64_t blocks,
                                                       const int8_t *qx, const float *sx) {
  const int lane = threadIdx.x % 16;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWoFeatures + threadIdx.x / 16;
  const bool active = n < a.N;
  const int64_t B = a.act_block;
  for (int64_t m0 = 0; m0 < a.M; m0 += kWoRows) {
    const int rows = static_cast<int>(a.M - m0 < kWoRows ? a.M - m0 : kWoRows);
    float s[kWoRows];
    uint32_t p[kWoRows];
#pragma unroll
    for (int r = 0; r < kWoRows; ++r) {
      s[r] = 0.0f;
      p[r] = 0;
    }
    if (active) {
      int64_t block = -1;  // the block whose products p holds (-1: none yet)
      for (int64_t base = 4 * lane; base < a.K; base += 64) {
        for (int64_t k = base; k < base + 4 && k < a.K; ++k) {
          const int64_t j = k / B;
          if (j != block) {
            if (block >= 0) {
              const float sw = a.wscale[n * a.wblocks + block];
#pragma unroll
              for (int r = 0; r < kWoRows; ++r)
                if (r < rows) {
                  const float d = sx[(m0 + r) * blocks + block] * sw;
                  s[r] = fmaf(static_cast<float>(static_cast<int32_t>(p[r])), d, s[r]);
                  p[r] = 0;
                }
            }
            block = j;
          }
          const int32_t v = weight_integer(a, n, k);
#pragma unroll
          for (int r = 0; r < kWoRows; ++r)
            if (r < rows) p[r] += static_cast<uint32_t>(static_cast<int32_t>(qx[(m0 + r) * a.K + k]) * v);
        }
      }
      if (block >= 0) {
        const float sw = a.wscale[n * a.wblocks + block];
#pragma unroll
        for (int r = 0; r < kWoRows; ++r)
          if (r < rows) {
            const float d = sx[(m0 + r) * blocks + block] * sw;
            s[r] = fmaf(static_cast<float>(static_cast<int32_t>(p[r])), d, s[r]);
          }
      }
    }
#pragma unroll
    for (int r = 0; r < kWoRows; ++r) {
      const float d = reduce16(s[r]);
      if (active && lane == 0 && r < rows) store_output(a, m0 + r, n, d);
    }
  }
}

// block-dot mode (QNT_WEIGHT_ONLY_INT8_BLOCK): one warp per feature n; per row and block j
// (ascending) the lanes sum qx * v over the block's elements (wrapping uint32: an integer sum's
// order is free), the warp adds the lanes' sums, then s = fmaf((float)p, sx * sw, s).
constexpr int kBlkWarps = 4;  // features per block of 128 threads
__global__ void __launch_bounds__(128) wo_blk_kernel(const qnt_cuda_wo_args a, int64_t blocks,
                                                      const int8_t *qx, const float *sx) {
  const int lane = threadIdx.x % 32;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kBlkWarps + threadIdx.x / 32;
  if (n >= a.N) return;  // (the whole warp)
  const int64_t B = a.act_block;
  for (int64_t m = 0; m < a.M; ++m) {
    float s = 0.0f;
    for (int64_t j = 0; j < blocks; ++j) {
      const int64_t k0 = j * B;
      const int64_t k1 = k0 + B < a.K ? k0 + B : a.K;
      uint32_t p = 0;
      for (int64_t k = k0 + lane; k < k1; k += 32)
        p += static_cast<uint32_t>(static_cast<int32_t>(qx[m * a.K + k]) * weight_integer(a, n, k));
      for (int off = 16; off >= 1; off /= 2) p += __shfl_xor_sync(0xFFFFFFFFu, p, off);
      const float d = sx[m * blocks + j] * a.wscale[n * a.wblocks + j];
      s = fmaf(static_cast<float>(static_cast<int32_t>(p)), d, s);
    }
    if (lane == 0) store_output(a, m, n, s);
  }
}

}  // namespace

cudaError_t launch_convert(const qnt_cuda_convert_args &a, cudaStream_t s) {
  if (a.count == 0) return cudaSuccess;
  if (a.op == QNT_CUDA_DEQUANTIZE) {
    convert_to_float<<<blocks_for(a.count), kThreads, 0, s>>>(a);
  } else {
    const int bits = a.to.bits;
    const uint64_t units = bits >= 8 ? a.count : (a.count * static_cast<uint64_t>(bits) + 7) / 8;
    convert_to_quantized<<<blocks_for(units), kThreads, 0, s>>>(a, units);
  }
  return cudaGetLastError();
}

cudaError_t launch_gemm(const qnt_cuda_gemm_args &a, cudaStream_t s) {
  if (a.M == 0 || a.N == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((a.N + kTileN - 1) / kTileN),
                  static_cast<unsigned>((a.M + kTileM - 1) / kTileM));
  if (grid.y > 65535u) return cudaErrorInvalidConfiguration;
  gemm_kernel<<<grid, 256, 0, s>>>(a);
  return cudaGetLastError();
}

cudaError_t launch_weight_only(const qnt_cuda_wo_args &a, cudaStream_t s) {
  if (a.M == 0 || a.N == 0) return cudaSuccess;
  const auto grid = static_cast<unsigned>((a.N + kWoFeatures - 1) / kWoFeatures);
  if (a.mode != QNT_WEIGHT_ONLY_INT8_ACT && a.mode != QNT_WEIGHT_ONLY_INT8_BLOCK) {
    wo_f32_kernel<<<grid, 128, 0, s>>>(a);
    return cudaGetLastError();
  }
  if (a.K == 0) {  // no blocks: every sum is 0
    wo_f32_kernel<<<grid, 128, 0, s>>>(a);
    return cudaGetLastError();
  }
  const int64_t blocks = (a.K + a.act_block - 1) / a.act_block;
  void *scratch = nullptr;
  const size_t qx_bytes = static_cast<size_t>(a.M * a.K);
  const size_t sx_at = (qx_bytes + 255) / 256 * 256;
  cudaError_t e = cudaMallocAsync(&scratch, sx_at + 4 * static_cast<size_t>(a.M * blocks), s);
  if (e != cudaSuccess) return e;
  auto *qx = static_cast<int8_t *>(scratch);
  auto *sx = reinterpret_cast<float *>(static_cast<uint8_t *>(scratch) + sx_at);
  const int64_t warps = a.M * blocks;
  wo_act_quantize<<<static_cast<unsigned>((warps * 32 + 255) / 256), 256, 0, s>>>(a, blocks, qx, sx);
  if (a.mode == QNT_WEIGHT_ONLY_INT8_BLOCK)
    wo_blk_kernel<<<static_cast<unsigned>((a.N + kBlkWarps - 1) / kBlkWarps), 128, 0, s>>>(a, blocks, qx, sx);
  else
    wo_int8_kernel<<<grid, 128, 0, s>>>(a, blocks, qx, sx);
  e = cudaGetLastError();
  const cudaError_t f = cudaFreeAsync(scratch, s);
  return e != cudaSuccess ? e : f;
}

}  // namespace qnt::cuda
