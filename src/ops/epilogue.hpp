// How an accumulator becomes an output element, shared by qmatmul, the static linear layer and
// qconv2d (reference and fast paths alike): an i32 bias (wrapping), then one of
//   Int32:         the accumulator;
//   Requantize:    saturate(round((float)acc * ((sa * sb[c]) / sy)) + zy);
//   Float:         (float)acc * (sa * sb[c]), + an f32 bias as a separate addition;
//   FloatQuantize: the Float value with its f32 bias, then quantized with (sy, zy) (oneDNN's and
//                  PyTorch's order: the bias is added in float before the requantization);
// then, with relu, max(y, 0) (i32, f32; NaN stays NaN) or max(q, zy) (8-bit outputs).
#pragma once

#include "core/qparams.hpp"
#include "kernels/gemm/gemm.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "ops/common.hpp"
#include "ops/packed.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace qnt::ops {

struct Epilogue {
  enum class Mode { Int32, Requantize, Float, FloatQuantize } mode = Mode::Int32;
  const int32_t *bias_i32 = nullptr;
  const float *bias_f32 = nullptr;
  // Requantize: (sa * sb[c]) / sy; Float and FloatQuantize: sa * sb[c].
  std::vector<float> multiplier;
  float sy = 1.0f;
  int32_t zy = 0, qmin = 0, qmax = 0;
  bool relu = false;
  bool finite = false;  // every multiplier and f32 bias is finite (GemmEpilogueArgs::finite)
  // The kernel set's vector epilogue (the same bits), or null for the scalar rules.
  kern::GemmEpilogueFn vector = nullptr;

  kern::GemmEpilogueArgs args() const noexcept {
    kern::GemmEpilogueArgs a;
    a.mode = static_cast<int>(mode);
    a.bias_i32 = bias_i32;
    a.bias_f32 = bias_f32;
    a.multiplier = multiplier.empty() ? nullptr : multiplier.data();
    a.sy = sy;
    a.zy = zy;
    a.qmin = qmin;
    a.qmax = qmax;
    a.relu = relu;
    a.finite = finite;
    return a;
  }

  // Element i of y from the accumulator of channel c.
  void put(int32_t acc, size_t c, uint8_t *y, size_t i) const noexcept {
    const int32_t a = bias_i32 != nullptr ? ref::wrap_add(acc, bias_i32[c]) : acc;
    switch (mode) {
      case Mode::Int32: {
        const int32_t v = relu && a < 0 ? 0 : a;
        std::memcpy(y + 4 * i, &v, 4);
        return;
      }
      case Mode::Requantize: {
        const int32_t q = ref::requantize(a, multiplier[c], zy, qmin, qmax);
        ref::store_element(y, i, 8, relu && q < zy ? zy : q);
        return;
      }
      case Mode::Float: {
        float v = ref::acc_to_float(a, multiplier[c], bias_f32 != nullptr ? bias_f32[c] : 0.0f);
        if (relu && v < 0.0f) v = 0.0f;
        std::memcpy(y + 4 * i, &v, 4);
        return;
      }
      case Mode::FloatQuantize: {
        const float v = ref::acc_to_float(a, multiplier[c], bias_f32[c]);
        const int32_t q = ref::quantize_integer(v, sy, zy, qmin, qmax);
        ref::store_element(y, i, 8, relu && q < zy ? zy : q);
        return;
      }
    }
  }

  // Elements i0 .. i0 + n of y from the accumulators of channels c0 .. c0 + n.
  void span(const int32_t *acc, size_t c0, size_t n, uint8_t *y, size_t i0) const noexcept {
    block(acc, 0, 1, c0, n, y, i0, 0);
  }
  // Rows r < rows of a tile: elements i0 + r * y_ld + j of y from acc[r * acc_ld + j], channels
  // c0 + j.
  void block(const int32_t *acc, size_t acc_ld, int rows, size_t c0, size_t n, uint8_t *y,
             size_t i0, size_t y_ld) const noexcept {
    if (vector != nullptr) return vector(args(), acc, acc_ld, rows, c0, n, y, i0, y_ld);
    for (int r = 0; r < rows; ++r)
      for (size_t j = 0; j < n; ++j)
        put(acc[static_cast<size_t>(r) * acc_ld + j], c0 + j, y,
            i0 + static_cast<size_t>(r) * y_ld + j);
  }

  size_t bytes() const noexcept { return 4 * multiplier.size(); }
};

// The epilogue for an output of `mode` (y's qparams yq for Requantize) with input scale sa and
// weight scales sb (one per channel).
inline Epilogue make_epilogue(OutputMode mode, const QParams *yq, const Bias &bias, float sa,
                              const std::vector<float> &sb, bool relu,
                              const kern::GemmKernel *kernel) {
  Epilogue e;
  e.vector = kernel != nullptr ? kernel->epilogue : nullptr;
  e.bias_i32 = bias.i32_or_null();
  e.bias_f32 = bias.f32_or_null();
  e.relu = relu;
  switch (mode) {
    case OutputMode::Int32:
      e.mode = Epilogue::Mode::Int32;
      return e;
    case OutputMode::Float:
      e.mode = Epilogue::Mode::Float;
      for (float s : sb) e.multiplier.push_back(sa * s);
      return e;
    case OutputMode::Requantize:
      break;
  }
  e.sy = yq->scales()[0];
  e.zy = yq->zero_points()[0];
  e.qmin = yq->info().qmin;
  e.qmax = yq->info().qmax;
  if (e.bias_f32 != nullptr) {
    e.mode = Epilogue::Mode::FloatQuantize;
    for (float s : sb) e.multiplier.push_back(sa * s);
  } else {
    e.mode = Epilogue::Mode::Requantize;
    for (float s : sb) e.multiplier.push_back(ref::requant_multiplier(sa, s, e.sy));
  }
  e.finite = true;
  for (float m : e.multiplier) e.finite = e.finite && std::isfinite(m);
  for (float b : bias.f32) e.finite = e.finite && std::isfinite(b);
  return e;
}

}  // namespace qnt::ops
