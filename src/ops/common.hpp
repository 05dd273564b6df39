// Checks and parameter plumbing shared by the op front-ends.
#pragma once

#include "core/tensor.hpp"
#include "kernels/ref/quantize_ref.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace qnt::ops {

// "[2,3,4]"
std::string shape_string(const std::vector<int64_t> &dims);

void require_same_shape(const Tensor &a, const char *an, const Tensor &b, const char *bn);

// Output and input must not overlap in memory.
void require_disjoint(const Tensor &out, const Tensor &in, const char *out_name,
                      const char *in_name);

// QNT_ERR_DTYPE_MISMATCH unless t is i8 or u8.
void require_int8(const Tensor &t, const char *role);

// The 8-bit weights of the integer GEMM, conv and linear ops may be ternary or binary (since
// 0.10): w itself when it is i8 or u8 (or anything else: the op's own checks reject it), else
// its values -1, 0, +1 as a new i8 tensor of w's shape and qparams (whose zero points are 0),
// kept in `held`. Ternary's code 0b10 (no value) is QNT_ERR_INVALID_ARGUMENT; weights in device
// memory are QNT_ERR_UNSUPPORTED.
const Tensor &int8_weights(const Tensor &w, const char *role, std::unique_ptr<Tensor> &held);
// The values -1, 0, +1 of a ternary or binary tensor (binary's bit 1 is +1, 0 is -1), one int8
// an element; ternary's code 0b10 is QNT_ERR_INVALID_ARGUMENT.
std::vector<int8_t> ternary_values(const Tensor &w, const char *role);

// QNT_ERR_DTYPE_MISMATCH unless t is f32.
void require_float(const Tensor &t, const char *role);

// The quantized side of quantize / dequantize: t's dtype rule, qparams and layout.
ref::QuantSpec quantized_spec(const Tensor &t, const char *role);
// The kernels' code of a quantized dtype's rule (Integer for the integer rule).
ref::Code code_of(const DTypeInfo &info) noexcept;

// The scales and zero points of an integer operand, one per channel along `axis` (already
// normalized), `count` channels. Per-tensor qparams are repeated; per-axis qparams must be
// along `axis` (per_axis_allowed) ; no qparams give zero points 0 and no scales, which is an
// error (QNT_ERR_INVALID_QPARAMS) when need_scales.
struct ChannelParams {
  std::vector<float> scales;  // empty when the tensor has no qparams
  std::vector<int32_t> zero_points;
};
ChannelParams channel_params(const Tensor &t, const char *role, int64_t axis, int64_t count,
                             bool per_axis_allowed, bool need_scales);
// The checks of channel_params alone, allocating nothing (for empty ops).
void check_channel_qparams(const std::shared_ptr<const QParams> &qp, size_t rank, const char *role,
                           int64_t axis, bool per_axis_allowed, bool need_scales);

// Equal dtype, granularity, axis, block size and values.
bool same_qparams(const QParams &a, const QParams &b);

// QNT_ERR_INVALID_ARGUMENT when an op is given a read-only tensor as its output.
void require_writable(const Tensor &y, const char *role);

// The used bits of a packed tensor's last byte (0xFF when every bit is used).
uint8_t last_byte_mask(const Tensor &t);
// Packed outputs: the bits past the last element of the last byte are written as 0.
void clear_tail_bits(Tensor &t);

// f32, f16 or bf16 (QNT_ERR_DTYPE_MISMATCH otherwise).
void require_activation(const Tensor &t, const char *role);

// Host floats to and from the float dtypes (f32 copies; f16 and bf16 by the header's rules).
void widen_floats(qnt_dtype dtype, const uint8_t *in, float *out, size_t n);
void narrow_floats(qnt_dtype dtype, const float *in, uint8_t *out, size_t n);

// The output mode an op's y dtype asks for.
enum class OutputMode { Int32, Requantize, Float };
OutputMode output_mode(const Tensor &y);

// An optional bias of shape [n]: checks rank, length and dtype (i32, or f32 where allowed).
void check_bias(const Tensor *bias, int64_t n, bool float_allowed);

// x [..., K] as rows of K: the row count, checking y is [..., N].
int64_t linear_rows(const Tensor &x, int64_t K, int64_t N, const Tensor &y);
// linear_rows, and y writable and apart from x: the run-time checks of every linear layer.
int64_t linear_io(const Tensor &x, int64_t K, int64_t N, const Tensor &y);
// The weight checks of the linear layers: w is [N, K]; bias f32 (or also i32) [N].
void check_linear_weights(const Tensor &w, const Tensor *bias, bool i32_bias_allowed);
// The checks the one-shot linear layers share on x, w, bias and y, allocation-free.
void check_linear_io(const Tensor &x, const Tensor &w, const Tensor *bias, const Tensor &y);

}  // namespace qnt::ops
