// The streaming calibrator behind qnt_calibrator: per-channel exact extremes, moving averages and
// histograms; merge; serialization.
#pragma once

#include "calib/histogram.hpp"
#include "calib/range.hpp"
#include "core/context.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"

#include <qnt/qnt.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace qnt::calib {

struct ChannelStats {
  uint64_t finite = 0, nan = 0, inf = 0;
  float min = 0.0f, max = 0.0f;          // exact, valid when finite > 0
  bool averaged = false;                 // moving average started
  float avg_min = 0.0f, avg_max = 0.0f;  // moving average
  Histogram hist;                        // histogram methods only
};

// The checksum that ends a serialized calibrator (FNV-1a over every byte before it). Exposed so
// that tests and the fuzz target can re-sign crafted buffers: a valid checksum protects nothing.
uint64_t checksum(const uint8_t *p, size_t n) noexcept;

class Calibrator {
 public:
  Calibrator(qnt_calib_method method, qnt_dtype dtype, qnt_scheme scheme,
             qnt_granularity granularity, int64_t axis);

  void set_option(qnt_calib_option option, double value);
  void observe(const Context &ctx, const Tensor &x);
  std::shared_ptr<const QParams> compute(const Context &ctx) const;
  qnt_calib_method chosen() const noexcept { return chosen_; }
  void reset() noexcept;
  void merge(const Calibrator &other);
  void counts(uint64_t &finite, uint64_t &nan, uint64_t &inf) const noexcept;

  std::vector<uint8_t> serialize() const;
  static std::unique_ptr<Calibrator> deserialize(const uint8_t *data, size_t size);

 private:
  bool uses_histogram() const noexcept;
  ScaleZeroPoint channel_params(const ChannelStats &c) const;
  ScaleZeroPoint log2_params(const ChannelStats &c) const;

  qnt_calib_method method_;
  const DTypeInfo *info_;
  qnt_scheme scheme_;
  qnt_granularity granularity_;
  int64_t axis_;
  double averaging_ = 0.01;
  double percentile_ = 99.99;
  uint32_t bins_ = 2048;
  QuantRange range_;           // the integer range the qparams target
  bool custom_range_ = false;  // range_ set by QUANT_MIN / QUANT_MAX (serialized as format 2)
  bool started_ = false;  // the channel count is known
  std::vector<ChannelStats> channels_;
  mutable qnt_calib_method chosen_;
};

}  // namespace qnt::calib
