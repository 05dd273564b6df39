// The device side of the ops: where an op runs, and the launches of the CUDA module's kernels
// (src/hw/cuda_module.h) with everything they read in device memory. The front-ends check their
// arguments first, exactly as on the CPU, then call these.
#pragma once

#include "core/context.hpp"
#include "core/device.hpp"
#include "core/tensor.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/epilogue.hpp"

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace qnt::ops {

// The place of an op's tensors (null ones skipped): QNT_ERR_INVALID_ARGUMENT naming two of them
// when they are not all on one device.
Place op_place(std::initializer_list<std::pair<const Tensor *, const char *>> tensors);

// quantize (to only), dequantize (from only) or requantize on the device of `where`.
void device_convert(const Context &ctx, const Place &where, int op, const Tensor &in, Tensor &out,
                    const ref::QuantSpec *from, const ref::QuantSpec *to);

// A GEMM's constant operand on a device: b(k, n) = b[k * ks + n * ns], its zero points and
// bias. Either uploaded once (prepared operators) or borrowed from device tensors (qnt_qmatmul).
struct DeviceGemmB {
  int32_t device = -1;
  std::shared_ptr<void> keep_b, keep_zb, keep_bias;  // uploads, when owned
  const uint8_t *b = nullptr;
  int64_t K = 0, N = 0, ks = 0, ns = 0;
  bool is_signed = true;
  const int32_t *zb = nullptr;
  const void *bias = nullptr;  // i32 or f32 [N], or null
  size_t bytes = 0;            // device bytes owned

  // Uploads host b (b(k, n) = host[k * ks + n * ns]), zero points and bias to `device`.
  static DeviceGemmB upload(int32_t device, const uint8_t *host, size_t b_bytes, int64_t K,
                            int64_t N, int64_t ks, int64_t ns, bool is_signed,
                            const std::vector<int32_t> &zb, const Bias &bias);
};

// y (rows x N, row stride N) = epilogue(sum over k of (a(m, k) - za) * (b(k, n) - zb[n])), with
// a the rows x K bytes at a (row stride K), on the device of `where`.
void device_gemm(const Context &ctx, const Place &where, const uint8_t *a, bool a_signed,
                 int32_t za, int64_t rows, const DeviceGemmB &b, const Epilogue &epi, Tensor &y);

// The weight-only layer on the device: w's codes and parameters (device memory), x and y.
struct DeviceWo {
  int32_t device = -1;
  std::shared_ptr<void> keep_w, keep_params, keep_bias, keep_wscale;
  const uint8_t *w = nullptr;
  ref::QuantSpec spec;    // scales / zero_points: device pointers
  const float *bias = nullptr;
  const float *wscale = nullptr;  // the int8 mode's per-(row, block) weight scales
  int64_t wblocks = 1, act_block = 1;
  size_t bytes = 0;
};
void device_weight_only(const Context &ctx, const Place &where, const DeviceWo &w, int64_t mode,
                        int64_t rows, int64_t K, int64_t N, const Tensor &x, Tensor &y);

// Uploads spec's scales and zero points (host) to d's device and points d.spec at them.
void upload_wo_params(DeviceWo &d, const ref::QuantSpec &spec);

// Uploads the host quantized weight w (with its spec, scales on the host) and bias to `device`;
// for the int8 mode also the weight scales per (row, block) and the activation block.
DeviceWo upload_weight_only(int32_t device, const Tensor &w, const ref::QuantSpec &spec,
                            const float *bias, int64_t mode, int64_t act_block,
                            size_t act_blocks);

}  // namespace qnt::ops
