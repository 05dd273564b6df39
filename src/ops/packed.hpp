// Constant operands of the prepared operators, copied and laid out once for the kernels.
#pragma once

#include "core/tensor.hpp"
#include "kernels/ref/ops_ref.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace qnt::ops {

// A constant 8-bit operand laid out for the kernels (see ref::PackedInt8), with its scales.
struct PackedWeights {
  int64_t channels = 0, K = 0;
  bool is_signed = false;
  std::vector<uint8_t> data;
  std::vector<int32_t> zero_points, sums;
  std::vector<float> scales;  // empty when the weights have no qparams

  ref::PackedInt8 view() const noexcept {
    ref::PackedInt8 v;
    v.data = data.data();
    v.is_signed = is_signed;
    v.K = K;
    v.zero_points = zero_points.data();
    v.sums = sums.data();
    return v;
  }
  size_t bytes() const noexcept {
    return data.size() + 4 * (zero_points.size() + sums.size() + scales.size());
  }
  void finish() {
    sums.resize(static_cast<size_t>(channels));
    ref::packed_sums(data.data(), is_signed, channels, K, zero_points.data(), sums.data());
  }
};

// A bias, copied.
struct Bias {
  bool present = false;
  qnt_dtype dtype = QNT_DTYPE_I32;
  std::vector<int32_t> i32;
  std::vector<float> f32;

  explicit Bias(const Tensor *t) {
    if (t == nullptr) return;
    present = true;
    dtype = t->dtype();
    const auto n = t->element_count();
    if (dtype == QNT_DTYPE_I32) {
      i32.resize(n);
      if (n) std::memcpy(i32.data(), t->data(), 4 * n);
    } else {
      f32.resize(n);
      if (n) std::memcpy(f32.data(), t->data(), 4 * n);
    }
  }
  const int32_t *i32_or_null() const noexcept { return i32.empty() ? nullptr : i32.data(); }
  const float *f32_or_null() const noexcept { return f32.empty() ? nullptr : f32.data(); }
  size_t bytes() const noexcept { return 4 * (i32.size() + f32.size()); }
};

}  // namespace qnt::ops
