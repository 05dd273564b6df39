#include "calib/calibrator.hpp"

#include "kernels/registry.hpp"
#include "calib/search.hpp"
#include "core/error.hpp"
#include "ops/parallel.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace qnt::calib {
namespace {

bool valid_method(qnt_calib_method m) { return m >= QNT_CALIB_MINMAX && m <= QNT_CALIB_ADAPTIVE; }

// One batch's statistics of one channel, gathered before anything is changed.
struct BatchStats {
  uint64_t finite = 0, nan = 0, inf = 0;
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
};

void scan(const kern::KernelSet &k, const float *x, size_t n, BatchStats &s) {
  ref::ScanResult r;
  k.scan(x, n, &r);
  s.finite += r.finite;
  s.nan += r.nan;
  s.inf += n - r.finite - r.nan;
  s.min = std::min(s.min, r.min);
  s.max = std::max(s.max, r.max);
}

// --- serialization: little-endian fields, an FNV-1a checksum at the end ---------------------

constexpr uint8_t kMagic[4] = {'Q', 'N', 'T', 'C'};
// Format 1; format 2 adds the custom quant range (two i32 after the bins), and is written only
// by calibrators that have one, so every format-1 buffer still reads and writes back as itself.
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kFormatWithRange = 2;

class Writer {
 public:
  void bytes(const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    u32(u);
  }
  void f64(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    u64(u);
  }
  std::vector<uint8_t> &data() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  size_t left() const { return n_ - pos_; }
  const uint8_t *take(size_t n) {
    if (n > left()) fail(QNT_ERR_CORRUPT_DATA, "the buffer ends early (truncated)");
    const uint8_t *r = p_ + pos_;
    pos_ += n;
    return r;
  }
  uint8_t u8() { return *take(1); }
  uint32_t u32() {
    const uint8_t *b = take(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[i]) << (8 * i);
    return v;
  }
  uint64_t u64() {
    const uint8_t *b = take(8);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
    return v;
  }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  int64_t i64() { return static_cast<int64_t>(u64()); }
  float f32() {
    const uint32_t u = u32();
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  }
  double f64() {
    const uint64_t u = u64();
    double v;
    std::memcpy(&v, &u, 8);
    return v;
  }
  bool flag() {
    const uint8_t v = u8();
    if (v > 1) fail(QNT_ERR_CORRUPT_DATA, "a flag byte is ", static_cast<int>(v));
    return v == 1;
  }

 private:
  const uint8_t *p_;
  size_t n_;
  size_t pos_ = 0;
};

}  // namespace

uint64_t checksum(const uint8_t *p, size_t n) noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

Calibrator::Calibrator(qnt_calib_method method, qnt_dtype dtype, qnt_scheme scheme,
                       qnt_granularity granularity, int64_t axis)
    : method_(method),
      info_(&dtype_info(dtype)),
      scheme_(scheme),
      granularity_(granularity),
      axis_(axis),
      chosen_(method) {
  if (!valid_method(method))
    fail(QNT_ERR_INVALID_ARGUMENT, "method = ", static_cast<int32_t>(method),
         " is not a qnt_calib_method");
  if (info_->rule == Rule::Float)
    fail(QNT_ERR_INVALID_ARGUMENT, "the target dtype must be quantized, not ", info_->name);
  const bool log = info_->rule == Rule::Log2;
  if (!log && (info_->rule != Rule::Integer || info_->zero_point_fixed))
    fail(QNT_ERR_UNSUPPORTED, "calibrators target the integer and log dtypes, not ", info_->name,
         " (NF4, binary and ternary take their scales from qnt_calibrate_codebook)");
  if (scheme != QNT_SCHEME_SYMMETRIC && scheme != QNT_SCHEME_AFFINE && scheme != QNT_SCHEME_LOG2)
    fail(QNT_ERR_INVALID_ARGUMENT, "scheme = ", static_cast<int32_t>(scheme),
         " is not a qnt_scheme");
  if (log != (scheme == QNT_SCHEME_LOG2))
    fail(QNT_ERR_INVALID_ARGUMENT, log ? "the log dtypes take the log2 scheme, not "
                                       : "the log2 scheme belongs to the log dtypes, not ",
         log ? (scheme == QNT_SCHEME_AFFINE ? "affine" : "symmetric") : info_->name);
  if (log && method == QNT_CALIB_ENTROPY)
    fail(QNT_ERR_UNSUPPORTED, "entropy calibration has no log2 form (use min-max, percentile, "
                              "MSE or adaptive for ", info_->name, ")");
  if (granularity == QNT_GRANULARITY_PER_BLOCK)
    fail(QNT_ERR_UNSUPPORTED, "calibrators work per tensor or per axis, not per block");
  if (granularity != QNT_GRANULARITY_PER_TENSOR && granularity != QNT_GRANULARITY_PER_AXIS)
    fail(QNT_ERR_INVALID_ARGUMENT, "granularity = ", static_cast<int32_t>(granularity),
         " is not a qnt_granularity");
  if (granularity == QNT_GRANULARITY_PER_AXIS && (axis < -QNT_MAX_RANK || axis >= QNT_MAX_RANK))
    fail(QNT_ERR_INVALID_ARGUMENT, "axis ", axis, " is outside [-8, 8)");
  if (granularity == QNT_GRANULARITY_PER_TENSOR) axis_ = 0;
  range_ = quant_range(*info_, false, 0, 0);
}

bool Calibrator::uses_histogram() const noexcept {
  return method_ != QNT_CALIB_MINMAX && method_ != QNT_CALIB_MOVING_AVERAGE;
}

void Calibrator::set_option(qnt_calib_option option, double value) {
  if (started_) fail(QNT_ERR_INVALID_ARGUMENT, "options must be set before the first observe");
  switch (option) {
    case QNT_CALIB_OPT_AVERAGING:
      if (!(value > 0.0 && value <= 1.0))
        fail(QNT_ERR_INVALID_ARGUMENT, "the averaging constant ", value, " is outside (0, 1]");
      averaging_ = value;
      return;
    case QNT_CALIB_OPT_PERCENTILE:
      if (!(value > 50.0 && value <= 100.0))
        fail(QNT_ERR_INVALID_ARGUMENT, "the percentile ", value, " is outside (50, 100]");
      percentile_ = value;
      return;
    case QNT_CALIB_OPT_BINS: {
      const bool integral = value >= 128.0 && value <= 65536.0 && std::floor(value) == value;
      const auto b = integral ? static_cast<uint32_t>(value) : 0u;
      if (!integral || (b & (b - 1)) != 0)
        fail(QNT_ERR_INVALID_ARGUMENT, "bins = ", value, " is not a power of two in [128, 65536]");
      bins_ = b;
      return;
    }
    case QNT_CALIB_OPT_QUANT_MIN:
    case QNT_CALIB_OPT_QUANT_MAX: {
      if (info_->rule == Rule::Log2)
        fail(QNT_ERR_INVALID_ARGUMENT, "quant min and max are integer ranges: ", info_->name,
             " has none");
      if (!(std::floor(value) == value && value >= info_->qmin && value <= info_->qmax))
        fail(QNT_ERR_INVALID_ARGUMENT, "quant ", option == QNT_CALIB_OPT_QUANT_MIN ? "min" : "max",
             " = ", value, " is not an integer in [", info_->qmin, ", ", info_->qmax, "] of ",
             info_->name);
      const auto v = static_cast<int32_t>(value);
      const bool is_min = option == QNT_CALIB_OPT_QUANT_MIN;
      range_ = quant_range(*info_, true, is_min ? v : range_.qmin, is_min ? range_.qmax : v);
      custom_range_ = true;
      return;
    }
  }
  fail(QNT_ERR_INVALID_ARGUMENT, "option = ", static_cast<int32_t>(option),
       " is not a qnt_calib_option");
}

// a += b, or QNT_ERR_OVERFLOW (a count that would wrap would read as a small one).
static void add_count(uint64_t &a, uint64_t b) {
  if (b > UINT64_MAX - a) fail(QNT_ERR_OVERFLOW, "a value count passes 2^64 - 1");
  a += b;
}

// The calibrator's invariant: every value it has counted (finite, NaN and infinite, over all
// channels) adds up to at most 2^64 - 1, so qnt_calibrator_counts' totals never wrap and what
// serialize writes, deserialize takes back. These throw `status` (QNT_ERR_OVERFLOW from observe
// and merge, QNT_ERR_CORRUPT_DATA from deserialize) where it would not hold.
static void add_total(uint64_t &total, uint64_t v, qnt_status status) {
  if (v > UINT64_MAX - total)
    fail(status, "the calibrator's value counts (finite, NaN and infinite, over all channels) "
                 "add up past 2^64 - 1");
  total += v;
}

static void check_total(const std::vector<ChannelStats> &channels, qnt_status status) {
  uint64_t total = 0;
  for (const ChannelStats &c : channels)
    for (uint64_t v : {c.finite, c.nan, c.inf}) add_total(total, v, status);
}

void Calibrator::observe(const Context &ctx, const Tensor &x) {
  const kern::KernelSet &ks = ctx.kernels();
  if (x.dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, "x must be f32, not ", x.info().name);
  // The batch as [outer, channels, inner].
  int64_t outer = 1, chans = 1, inner = static_cast<int64_t>(x.element_count());
  if (granularity_ == QNT_GRANULARITY_PER_AXIS) {
    const auto r = static_cast<int64_t>(x.rank());
    if (axis_ < -r || axis_ >= r)
      fail(QNT_ERR_SHAPE_MISMATCH, "the batch (rank ", r, ") has no axis ", axis_);
    const auto a = static_cast<size_t>(axis_ < 0 ? axis_ + r : axis_);
    outer = inner = 1;
    for (size_t i = 0; i < a; ++i) outer *= x.dims()[i];
    chans = x.dims()[a];
    for (size_t i = a + 1; i < x.rank(); ++i) inner *= x.dims()[i];
    if (started_ && static_cast<size_t>(chans) != channels_.size())
      fail(QNT_ERR_SHAPE_MISMATCH, "the batch has ", chans, " channels along axis ", axis_,
           ", earlier batches had ", channels_.size());
    if (chans == 0) fail(QNT_ERR_SHAPE_MISMATCH, "the batch's axis ", axis_, " has size 0");
  }
  const auto *data = reinterpret_cast<const float *>(x.data());
  const auto nch = static_cast<size_t>(chans), in = static_cast<size_t>(inner);
  auto block = [&](int64_t o, size_t c) { return data + (static_cast<size_t>(o) * nch + c) * in; };
  std::vector<BatchStats> stats(nch);
  // An empty batch (outer or inner of 0, any other dimension up to 2^61) has nothing to scan.
  const bool empty = x.element_count() == 0;
  const int threads = ctx.threads();
  // One channel: its blocks cut into pieces on the context's threads, each worker's statistics
  // merged after (min, max and counts do not depend on the order). Several: a channel a task.
  constexpr size_t kPiece = size_t{1} << 16;
  if (!empty && nch == 1) {
    const size_t total = static_cast<size_t>(outer) * in;
    const size_t workers = ops::parallel_workers(threads, total, kPiece);
    std::vector<BatchStats> part(workers);
    ops::parallel_for_workers(threads, total, kPiece, [&](size_t b, size_t e, size_t w) {
      // [b, e) may span blocks of consecutive outer indices: scan each block's share.
      for (size_t i = b; i < e;) {
        const size_t o = i / in, off = i % in, len = std::min(e - i, in - off);
        scan(ks, block(static_cast<int64_t>(o), 0) + off, len, part[w]);
        i += len;
      }
    });
    for (const BatchStats &p : part) {
      stats[0].finite += p.finite;
      stats[0].nan += p.nan;
      stats[0].inf += p.inf;
      stats[0].min = std::min(stats[0].min, p.min);
      stats[0].max = std::max(stats[0].max, p.max);
    }
  } else if (!empty) {
    ops::parallel_for(threads, nch, 1, [&](size_t c0, size_t c1) {
      for (size_t c = c0; c < c1; ++c)
        for (int64_t o = 0; o < outer; ++o) scan(ks, block(o, c), in, stats[c]);
    });
  }

  uint64_t counted = 0;  // counts cannot wrap (crafted states), nor their sum
  for (size_t c = 0; c < nch; ++c) {
    uint64_t f = stats[c].finite, n = stats[c].nan, i = stats[c].inf;
    if (started_) {
      add_count(f, channels_[c].finite);
      add_count(n, channels_[c].nan);
      add_count(i, channels_[c].inf);
    }
    for (uint64_t v : {f, n, i}) add_total(counted, v, QNT_ERR_OVERFLOW);
  }
  // One channel's histogram is filled by every worker, each into its own, folded in after;
  // allocated here, before anything changes.
  const size_t total = empty ? 0 : static_cast<size_t>(outer) * in;
  const size_t hist_workers =
      uses_histogram() && nch == 1 ? ops::parallel_workers(threads, total, kPiece) : 1;
  std::vector<Histogram> part;
  if (hist_workers > 1) part.assign(hist_workers, Histogram(bins_));
  if (!started_) {
    std::vector<ChannelStats> fresh(nch);
    if (uses_histogram())
      for (ChannelStats &c : fresh) c.hist = Histogram(bins_);
    channels_.swap(fresh);
    started_ = true;
  }
  // From here on nothing can fail.
  const auto c_avg = static_cast<float>(averaging_);
  for (size_t c = 0; c < nch; ++c) {
    ChannelStats &ch = channels_[c];
    const BatchStats &b = stats[c];
    ch.nan += b.nan;
    ch.inf += b.inf;
    if (b.finite == 0) continue;
    ch.min = ch.finite == 0 ? b.min : std::min(ch.min, b.min);
    ch.max = ch.finite == 0 ? b.max : std::max(ch.max, b.max);
    ch.finite += b.finite;
    if (method_ == QNT_CALIB_MOVING_AVERAGE) {
      if (!ch.averaged) {
        ch.avg_min = b.min;
        ch.avg_max = b.max;
        ch.averaged = true;
      } else {  // PyTorch, float32: prev + c * (batch - prev)
        const float dmin = c_avg * (b.min - ch.avg_min), dmax = c_avg * (b.max - ch.avg_max);
        ch.avg_min = ch.avg_min + dmin;
        ch.avg_max = ch.avg_max + dmax;
      }
    }
    if (uses_histogram())
      ch.hist.cover(std::max(-static_cast<double>(b.min), static_cast<double>(b.max)));
  }
  if (!uses_histogram() || empty) return;
  if (hist_workers > 1) {
    if (stats[0].finite == 0) return;
    const double amax = std::max(-static_cast<double>(stats[0].min), static_cast<double>(stats[0].max));
    Histogram &h = channels_[0].hist;
    ops::parallel_for_workers(threads, total, kPiece, [&](size_t b, size_t e, size_t w) {
      part[w].cover(amax);  // this batch's range: never wider than the channel's
      for (size_t i = b; i < e;) {
        const size_t o = i / in, off = i % in, len = std::min(e - i, in - off);
        part[w].add(ks, block(static_cast<int64_t>(o), 0) + off, len);
        i += len;
      }
    });
    for (Histogram &p : part) h.absorb(p);
    return;
  }
  // Histograms: a channel a task, each channel's own counts written by one worker only.
  ops::parallel_for(threads, nch, 1, [&](size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c) {
      if (stats[c].finite == 0) continue;
      for (int64_t o = 0; o < outer; ++o) channels_[c].hist.add(ks, block(o, c), in);
    }
  });
}

// The log dtypes: the scale is the clip value of the method (qnt_calibrator_create in qnt.h).
ScaleZeroPoint Calibrator::log2_params(const ChannelStats &c) const {
  SearchInput in;
  in.hist = &c.hist;
  in.min = c.min;
  in.max = c.max;
  in.scheme = QNT_SCHEME_SYMMETRIC;
  auto absmax = [](float lo, float hi) { return std::max(std::fabs(lo), std::fabs(hi)); };
  auto of = [&](qnt_calib_method m) {
    float clip = absmax(c.min, c.max);
    switch (m) {
      case QNT_CALIB_MOVING_AVERAGE:
        clip = absmax(c.avg_min, c.avg_max);
        break;
      case QNT_CALIB_PERCENTILE: {
        const RealRange r = percentile_range(in, percentile_);
        clip = absmax(r.lo, r.hi);
        break;
      }
      case QNT_CALIB_MSE:
        clip = log2_mse_clip(in, info_->bits);
        break;
      default:
        break;
    }
    return std::max(clip, FLT_EPSILON);
  };
  if (method_ != QNT_CALIB_ADAPTIVE) return ScaleZeroPoint{of(method_), 0};
  const qnt_calib_method candidates[] = {QNT_CALIB_MINMAX, QNT_CALIB_PERCENTILE, QNT_CALIB_MSE};
  float best = 1.0f;
  double best_error = std::numeric_limits<double>::infinity();
  for (qnt_calib_method m : candidates) {
    const float s = of(m);
    const double e = log2_sq_error(c.hist, s, info_->bits);
    if (e < best_error) {
      best_error = e;
      best = s;
      if (&c == &channels_.front()) chosen_ = m;
    }
  }
  return ScaleZeroPoint{best, 0};
}

ScaleZeroPoint Calibrator::channel_params(const ChannelStats &c) const {
  if (c.finite == 0) return ScaleZeroPoint{1.0f, 0};
  if (info_->rule == Rule::Log2) return log2_params(c);
  const QuantRange &qr = range_;
  SearchInput in;
  in.hist = &c.hist;
  in.min = c.min;
  in.max = c.max;
  in.scheme = scheme_;
  in.range = qr;
  auto of = [&](qnt_calib_method m) {
    RealRange r{c.min, c.max};
    switch (m) {
      case QNT_CALIB_MOVING_AVERAGE:
        r = {c.avg_min, c.avg_max};
        break;
      case QNT_CALIB_PERCENTILE:
        r = percentile_range(in, percentile_);
        break;
      case QNT_CALIB_ENTROPY:
        r = entropy_range(in);
        break;
      case QNT_CALIB_MSE:
        r = mse_range(in);
        break;
      default:
        break;
    }
    return params_from_range(r.lo, r.hi, scheme_, qr);
  };
  if (method_ != QNT_CALIB_ADAPTIVE) return of(method_);
  const qnt_calib_method candidates[] = {QNT_CALIB_MINMAX, QNT_CALIB_PERCENTILE, QNT_CALIB_ENTROPY,
                                         QNT_CALIB_MSE};
  ScaleZeroPoint best;
  double best_error = std::numeric_limits<double>::infinity();
  for (qnt_calib_method m : candidates) {
    const ScaleZeroPoint p = of(m);
    const double e = expected_sq_error(c.hist, p.scale, p.zero_point, qr.qmin, qr.qmax);
    if (e < best_error) {
      best_error = e;
      best = p;
      if (&c == &channels_.front()) chosen_ = m;
    }
  }
  return best;
}

std::shared_ptr<const QParams> Calibrator::compute(const Context &ctx) const {
  if (!started_ && granularity_ == QNT_GRANULARITY_PER_AXIS)
    fail(QNT_ERR_INVALID_ARGUMENT, "nothing observed yet: the channel count is unknown");
  const size_t n = started_ ? channels_.size() : 1;
  std::vector<float> scales(n, 1.0f);
  std::vector<int32_t> zps(n, 0);
  // Channels are independent: one per task.
  ops::parallel_for(ctx.threads(), channels_.size(), 1, [&](size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c) {
      const ScaleZeroPoint p = channel_params(channels_[c]);
      scales[c] = p.scale;
      zps[c] = p.zero_point;
    }
  });
  return QParams::create(info_->id, granularity_, axis_, 0, scales.data(), zps.data(), n);
}

void Calibrator::reset() noexcept {
  channels_.clear();
  started_ = false;
  chosen_ = method_;
}

void Calibrator::merge(const Calibrator &other) {
  if (&other == this) fail(QNT_ERR_INVALID_ARGUMENT, "a calibrator cannot merge itself");
  if (method_ == QNT_CALIB_MOVING_AVERAGE)
    fail(QNT_ERR_UNSUPPORTED,
         "moving-average calibrators depend on the order of their batches and cannot be merged");
  if (other.method_ != method_ || other.info_ != info_ || other.scheme_ != scheme_ ||
      other.granularity_ != granularity_ || other.axis_ != axis_ ||
      other.averaging_ != averaging_ || other.percentile_ != percentile_ || other.bins_ != bins_ ||
      other.range_.qmin != range_.qmin || other.range_.qmax != range_.qmax)
    fail(QNT_ERR_INVALID_ARGUMENT,
         "the calibrators differ in method, dtype, scheme, granularity, "
         "axis or options");
  if (!other.started_) return;
  if (started_ && channels_.size() != other.channels_.size())
    fail(QNT_ERR_SHAPE_MISMATCH, "the calibrators have ", channels_.size(), " and ",
         other.channels_.size(), " channels");
  std::vector<ChannelStats> merged = started_ ? channels_ : other.channels_;
  if (started_) {
    for (size_t c = 0; c < merged.size(); ++c) {
      ChannelStats &m = merged[c];
      const ChannelStats &o = other.channels_[c];
      add_count(m.nan, o.nan);
      add_count(m.inf, o.inf);
      if (o.finite > 0) {
        m.min = m.finite == 0 ? o.min : std::min(m.min, o.min);
        m.max = m.finite == 0 ? o.max : std::max(m.max, o.max);
        add_count(m.finite, o.finite);
      }
      m.hist.merge(o.hist);
    }
    check_total(merged, QNT_ERR_OVERFLOW);
  }
  channels_.swap(merged);
  started_ = true;
}

void Calibrator::counts(uint64_t &finite, uint64_t &nan, uint64_t &inf) const noexcept {
  finite = nan = inf = 0;
  for (const ChannelStats &c : channels_) {
    finite += c.finite;
    nan += c.nan;
    inf += c.inf;
  }
}

std::vector<uint8_t> Calibrator::serialize() const {
  Writer w;
  w.bytes(kMagic, 4);
  w.u32(custom_range_ ? kFormatWithRange : kFormatVersion);
  w.i32(method_);
  w.i32(info_->id);
  w.i32(scheme_);
  w.i32(granularity_);
  w.i64(axis_);
  w.f64(averaging_);
  w.f64(percentile_);
  w.u32(bins_);
  if (custom_range_) {
    w.i32(range_.qmin);
    w.i32(range_.qmax);
  }
  w.u8(started_ ? 1 : 0);
  w.u64(channels_.size());
  for (const ChannelStats &c : channels_) {
    w.u64(c.finite);
    w.u64(c.nan);
    w.u64(c.inf);
    w.f32(c.min);
    w.f32(c.max);
    w.u8(c.averaged ? 1 : 0);
    w.f32(c.avg_min);
    w.f32(c.avg_max);
    if (uses_histogram()) {
      w.u8(c.hist.has_range() ? 1 : 0);
      w.i32(c.hist.exponent());
      for (uint64_t v : c.hist.counts()) w.u64(v);
    }
  }
  w.u64(checksum(w.data().data(), w.data().size()));
  return std::move(w.data());
}

std::unique_ptr<Calibrator> Calibrator::deserialize(const uint8_t *data, size_t size) {
  if (size < 16) fail(QNT_ERR_CORRUPT_DATA, "the buffer is too short to be a calibrator");
  const size_t body = size - 8;
  Reader sum(data + body, 8);
  if (sum.u64() != checksum(data, body))
    fail(QNT_ERR_CORRUPT_DATA, "the checksum does not match (damaged or truncated buffer)");
  Reader r(data, body);
  if (std::memcmp(r.take(4), kMagic, 4) != 0)
    fail(QNT_ERR_CORRUPT_DATA, "not a serialized qnt calibrator");
  const uint32_t version = r.u32();
  if (version != kFormatVersion && version != kFormatWithRange)
    fail(QNT_ERR_CORRUPT_DATA, "format version ", version, " (this library reads ", kFormatVersion,
         " and ", kFormatWithRange, ")");
  const auto method = static_cast<qnt_calib_method>(r.i32());
  const auto dtype = static_cast<qnt_dtype>(r.i32());
  const auto scheme = static_cast<qnt_scheme>(r.i32());
  const auto granularity = static_cast<qnt_granularity>(r.i32());
  const int64_t axis = r.i64();
  // The constructor ignores the axis of a per-tensor calibrator; a buffer must hold 0 there,
  // as serialize writes it (every buffer that deserializes serializes back to itself).
  if (granularity == QNT_GRANULARITY_PER_TENSOR && axis != 0)
    fail(QNT_ERR_CORRUPT_DATA, "a per-tensor calibrator with axis ", axis);
  std::unique_ptr<Calibrator> c;
  try {
    c = std::make_unique<Calibrator>(method, dtype, scheme, granularity, axis);
    c->set_option(QNT_CALIB_OPT_AVERAGING, r.f64());
    c->set_option(QNT_CALIB_OPT_PERCENTILE, r.f64());
    c->set_option(QNT_CALIB_OPT_BINS, static_cast<double>(r.u32()));
    if (version == kFormatWithRange) {
      const int32_t lo = r.i32(), hi = r.i32();
      // Both ends at once: checked as a pair, whatever the order of the checks one at a time.
      c->range_ = quant_range(*c->info_, true, lo, hi);
      c->custom_range_ = true;
    }
  } catch (const Error &e) {
    if (e.status() == QNT_ERR_CORRUPT_DATA) throw;
    fail(QNT_ERR_CORRUPT_DATA, "invalid settings: ", e.what());
  }
  const bool started = r.flag();
  const uint64_t n = r.u64();
  const size_t per_channel =
      3 * 8 + 4 * 4 + 1 + (c->uses_histogram() ? 1 + 4 + 2 * size_t{c->bins_} * 8 : 0);
  if (n > r.left() / per_channel || (!started && n != 0) || (started && n == 0))
    fail(QNT_ERR_CORRUPT_DATA, "the channel count ", n, " does not fit the buffer");
  std::vector<ChannelStats> channels(static_cast<size_t>(n));
  for (ChannelStats &ch : channels) {
    ch.finite = r.u64();
    ch.nan = r.u64();
    ch.inf = r.u64();
    ch.min = r.f32();
    ch.max = r.f32();
    ch.averaged = r.flag();
    ch.avg_min = r.f32();
    ch.avg_max = r.f32();
    if (ch.finite > 0 && !(std::isfinite(ch.min) && std::isfinite(ch.max) && ch.min <= ch.max))
      fail(QNT_ERR_CORRUPT_DATA, "a channel's extremes are not a finite range");
    // A moving-average channel has averages exactly when it has seen a finite value (compute
    // reads them then); other methods keep none.
    const bool moving = c->method_ == QNT_CALIB_MOVING_AVERAGE;
    if (ch.averaged != (moving && ch.finite > 0))
      fail(QNT_ERR_CORRUPT_DATA, "a channel's moving-average flag does not fit its counts");
    if (ch.averaged && !(std::isfinite(ch.avg_min) && std::isfinite(ch.avg_max)))
      fail(QNT_ERR_CORRUPT_DATA, "a channel's moving average is not finite");
    if (ch.nan > UINT64_MAX - ch.finite || ch.inf > UINT64_MAX - ch.finite - ch.nan)
      fail(QNT_ERR_CORRUPT_DATA, "a channel's counts overflow");
    if (c->uses_histogram()) {
      const bool has_range = r.flag();
      const int32_t e = r.i32();
      if (e < Histogram::kMinExponent || e > Histogram::kMaxExponent)
        fail(QNT_ERR_CORRUPT_DATA, "a histogram exponent ", e, " is out of range");
      std::vector<uint64_t> counts(2 * size_t{c->bins_});
      uint64_t total = 0;
      for (uint64_t &v : counts) {
        v = r.u64();
        if (v > ch.finite - total)
          fail(QNT_ERR_CORRUPT_DATA, "histogram counts exceed the values seen");
        total += v;
      }
      if (total != ch.finite || has_range != (ch.finite > 0))
        fail(QNT_ERR_CORRUPT_DATA, "histogram counts do not add up to the values seen");
      ch.hist = Histogram(c->bins_);
      ch.hist.restore(has_range, e, std::move(counts));
      if (ch.finite > 0 && !ch.hist.consistent_with(ch.min, ch.max))
        fail(QNT_ERR_CORRUPT_DATA,
             "a histogram does not match the channel's extremes (range or occupied bins)");
    }
  }
  if (r.left() != 0) fail(QNT_ERR_CORRUPT_DATA, r.left(), " unexpected bytes at the end");
  check_total(channels, QNT_ERR_CORRUPT_DATA);
  c->channels_.swap(channels);
  c->started_ = started;
  return c;
}

}  // namespace qnt::calib
