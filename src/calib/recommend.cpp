#include "calib/recommend.hpp"

#include "calib/calibrate.hpp"
#include "core/error.hpp"
#include "io/ggml_types.hpp"
#include "ops/quantize.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace qnt::calib {
namespace {

struct QntFormat {
  const char *name;
  qnt_dtype dtype;
};

const QntFormat kQntFormats[] = {
    {"i8", QNT_DTYPE_I8},     {"u8", QNT_DTYPE_U8},          {"i4", QNT_DTYPE_I4},
    {"u4", QNT_DTYPE_U4},     {"nf4", QNT_DTYPE_NF4},        {"ternary", QNT_DTYPE_TERNARY},
    {"binary", QNT_DTYPE_BINARY}, {"log4", QNT_DTYPE_LOG4},  {"log8", QNT_DTYPE_LOG8},
};

// The GGUF types qnt writes that are formats of a weight (not plain integer storage).
const char *const kGgmlFormats[] = {"f32",  "f16",  "bf16",  "q8_0",  "q4_0",  "q4_1", "q5_0",
                                    "q5_1", "q4_k", "q5_k",  "q6_k",  "iq4_nl", "tq1_0", "tq2_0"};

std::string lower(const char *s) {
  std::string out(s);
  for (char &c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(const std::string &s) {
  std::string out(s);
  for (char &c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string fmt(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string db(double v) { return std::isinf(v) ? std::string("inf") : fmt("%.2f", v); }

}  // namespace

FormatSpec parse_format(const char *name) {
  if (name == nullptr) fail(QNT_ERR_NULL_POINTER, "format is NULL");
  FormatSpec f;
  f.name = lower(name);
  for (const char *g : kGgmlFormats) {
    if (f.name == g) {
      const io::GgmlType *t = io::ggml_type(upper(f.name).c_str());
      if (t == nullptr || !io::ggml_quantizes(*t))
        fail(QNT_ERR_INTERNAL, "the GGUF type ", f.name, " is missing");
      f.ggml = true;
      f.ggml_id = t->id;
      return f;
    }
  }
  const size_t dot = f.name.find('.');
  const std::string base = f.name.substr(0, dot);
  bool found = false;
  for (const QntFormat &q : kQntFormats) {
    if (base == q.name) {
      f.dtype = q.dtype;
      found = true;
    }
  }
  if (!found)
    fail(QNT_ERR_INVALID_ARGUMENT, "format '", name,
         "' is none of i8, u8, i4, u4, nf4, ternary, binary, log4, log8 (per output channel, or "
         ".bN for blocks of N along the last axis) or the GGUF types f32, f16, bf16, q8_0, q4_0, "
         "q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, iq4_nl, tq1_0, tq2_0");
  if (dot != std::string::npos) {
    const std::string rest = f.name.substr(dot + 1);
    char *end = nullptr;
    const long long b = rest.size() > 1 && rest[0] == 'b' && std::isdigit(static_cast<unsigned char>(rest[1]))
                            ? std::strtoll(rest.c_str() + 1, &end, 10)
                            : 0;
    if (b <= 0 || b > (int64_t{1} << 30) || end == nullptr || *end != '\0')
      fail(QNT_ERR_INVALID_ARGUMENT, "format '", name,
           "': after the dtype, .bN (N > 0) gives blocks of N along the last axis");
    f.block = b;
  }
  return f;
}

namespace {

// The tensor's values after format f, and the bytes f stores them in; false where f does not
// apply (a GGUF block type whose block does not divide the last dimension).
bool apply(const Context &ctx, const FormatSpec &f, const Tensor &w, std::vector<float> &back,
           uint64_t &bytes) {
  const size_t n = w.element_count();
  const int64_t cols = w.rank() == 0 ? 1 : w.shape()[w.rank() - 1];
  const auto *x = reinterpret_cast<const float *>(w.data());
  back.assign(n, 0.0f);
  if (f.ggml) {
    const io::GgmlType &t = *io::ggml_type(f.ggml_id);
    if (cols <= 0 || static_cast<size_t>(cols) % t.block != 0) return false;
    std::vector<uint8_t> q(n / t.block * t.size);
    io::ggml_quantize(t, x, n, q.data());
    io::ggml_dequantize(t, q.data(), n, back.data());
    bytes = q.size();
    return true;
  }
  const DTypeInfo &info = dtype_info(f.dtype);
  const bool codebook = info.zero_point_fixed;
  const qnt_scheme scheme = info.is_signed ? QNT_SCHEME_SYMMETRIC : QNT_SCHEME_AFFINE;
  const qnt_granularity g = f.block > 0 ? QNT_GRANULARITY_PER_BLOCK : QNT_GRANULARITY_PER_AXIS;
  const int64_t axis = f.block > 0 ? static_cast<int64_t>(w.rank()) - 1 : 0;
  std::shared_ptr<const QParams> qp =
      codebook ? calib::codebook(ctx, w, f.dtype, g, axis, f.block)
               : calib::minmax(ctx, w, f.dtype, scheme, g, axis, f.block, std::nullopt);
  Tensor q(f.dtype, w.shape(), w.rank(), qp, Tensor::Storage::Zeroed, nullptr, 0);
  Tensor y(QNT_DTYPE_F32, w.shape(), w.rank(), nullptr, Tensor::Storage::Borrow, back.data(),
           n * sizeof(float));
  ops::quantize(ctx, w, q);
  ops::dequantize(ctx, q, y);
  // float32 scales, and int32 zero points where the scheme is affine.
  bytes = q.byte_size() + qp->count() * (scheme == QNT_SCHEME_AFFINE && !codebook ? 8 : 4);
  return true;
}

}  // namespace

void Recommender::add_format(const char *name) {
  if (!tensors_.empty())
    fail(QNT_ERR_INVALID_ARGUMENT, "formats must be added before the first tensor");
  FormatSpec f = parse_format(name);
  for (const FormatSpec &o : formats_)
    if (o.name == f.name) fail(QNT_ERR_INVALID_ARGUMENT, "format '", f.name, "' was already added");
  formats_.push_back(std::move(f));
}

void Recommender::add_tensor(const Context &ctx, const char *name, const Tensor &w,
                             const float *importance, size_t importance_count) {
  if (name == nullptr) fail(QNT_ERR_NULL_POINTER, "name is NULL");
  if (formats_.empty()) fail(QNT_ERR_INVALID_ARGUMENT, "add the candidate formats first");
  if (w.dtype() != QNT_DTYPE_F32)
    fail(QNT_ERR_DTYPE_MISMATCH, "w must be f32, not ", w.info().name);
  if (w.rank() < 1 || w.element_count() == 0)
    fail(QNT_ERR_SHAPE_MISMATCH, "w must have at least one axis and one element");
  for (const Entry &e : tensors_)
    if (e.name == name) fail(QNT_ERR_INVALID_ARGUMENT, "a tensor named '", name, "' was already added");
  const size_t n = w.element_count();
  const auto cols = static_cast<size_t>(w.shape()[w.rank() - 1]);
  const auto *x = reinterpret_cast<const float *>(w.data());
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i]))
      fail(QNT_ERR_INVALID_ARGUMENT, "w holds a NaN or an infinity (element ", i, ")");
  if (importance != nullptr || importance_count != 0) {
    if (importance == nullptr) fail(QNT_ERR_NULL_POINTER, "importance is NULL with a count");
    if (importance_count != cols)
      fail(QNT_ERR_SHAPE_MISMATCH, importance_count, " importances for ", cols,
           " input channels (the last axis)");
    bool any = false;
    for (size_t c = 0; c < cols; ++c) {
      if (!(std::isfinite(importance[c]) && importance[c] >= 0.0f))
        fail(QNT_ERR_INVALID_ARGUMENT, "importance ", c, " is ", importance[c],
             ": importances are finite and >= 0");
      any = any || importance[c] > 0.0f;
    }
    if (!any) fail(QNT_ERR_INVALID_ARGUMENT, "every importance is 0");
  }
  Entry e;
  e.name = name;
  std::vector<float> back;
  bool applies = false;
  for (const FormatSpec &f : formats_) {
    Measured m;
    if (apply(ctx, f, w, back, m.bytes)) {
      double signal = 0.0, noise = 0.0;
      for (size_t i = 0; i < n; ++i) {
        const double wt = importance != nullptr ? static_cast<double>(importance[i % cols]) : 1.0;
        const double v = x[i], d = v - static_cast<double>(back[i]);
        signal += wt * v * v;
        noise += wt * d * d;
      }
      m.applies = true;
      m.sqnr_db = noise == 0.0 ? std::numeric_limits<double>::infinity()
                               : 10.0 * std::log10(signal / noise);
      applies = true;
    }
    e.m.push_back(m);
  }
  if (!applies)
    fail(QNT_ERR_UNSUPPORTED, "no candidate format applies to '", name,
         "' (the GGUF block types need the last dimension, ", cols, ", to be a multiple of their block)");
  tensors_.push_back(std::move(e));
  ran_ = false;
}

void Recommender::run(qnt_budget budget, double value) {
  if (budget != QNT_BUDGET_BYTES && budget != QNT_BUDGET_MIN_SQNR)
    fail(QNT_ERR_INVALID_ARGUMENT, "budget = ", static_cast<int32_t>(budget), " is not a qnt_budget");
  if (!std::isfinite(value) || (budget == QNT_BUDGET_BYTES && value < 0.0))
    fail(QNT_ERR_INVALID_ARGUMENT, "the budget value ", value, " is not a finite ",
         budget == QNT_BUDGET_BYTES ? "byte count" : "SQNR");
  if (tensors_.empty()) fail(QNT_ERR_INVALID_ARGUMENT, "no tensor was added");
  // Each tensor's useful choices: by bytes ascending, each with a higher SQNR than every
  // smaller one (ties: the earlier format).
  std::vector<std::vector<int>> front(tensors_.size());
  for (size_t t = 0; t < tensors_.size(); ++t) {
    std::vector<int> idx;
    for (size_t f = 0; f < formats_.size(); ++f)
      if (tensors_[t].m[f].applies) idx.push_back(static_cast<int>(f));
    const auto &m = tensors_[t].m;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) {
      if (m[a].bytes != m[b].bytes) return m[a].bytes < m[b].bytes;
      return m[a].sqnr_db > m[b].sqnr_db;
    });
    for (int f : idx)
      if (front[t].empty() || m[f].sqnr_db > m[front[t].back()].sqnr_db) front[t].push_back(f);
  }
  auto M = [&](size_t t, int f) -> const Measured & { return tensors_[t].m[static_cast<size_t>(f)]; };
  std::vector<size_t> pos(tensors_.size(), 0);  // the chosen frontier position
  if (budget == QNT_BUDGET_MIN_SQNR) {
    for (size_t t = 0; t < tensors_.size(); ++t) {
      size_t p = 0;
      while (p + 1 < front[t].size() && M(t, front[t][p]).sqnr_db < value) ++p;
      pos[t] = p;
    }
  } else {
    uint64_t least = 0;
    for (size_t t = 0; t < tensors_.size(); ++t) least += M(t, front[t][0]).bytes;
    if (static_cast<double>(least) > value)
      fail(QNT_ERR_INVALID_ARGUMENT, "the budget of ", fmt("%.0f", value),
           " bytes is below the smallest choice: ", least,
           " bytes, every tensor in its smallest format");
    // The largest worst-tensor SQNR the budget affords: each tensor in its cheapest choice at or
    // above a threshold, the thresholds being the measured SQNRs (binary search: the cost only
    // grows with the threshold).
    std::vector<double> levels;
    for (size_t t = 0; t < tensors_.size(); ++t)
      for (int f : front[t]) levels.push_back(M(t, f).sqnr_db);
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    auto placed = [&](double tau, std::vector<size_t> &p) {
      double cost = 0.0;
      for (size_t t = 0; t < tensors_.size(); ++t) {
        size_t k = 0;
        while (k < front[t].size() && M(t, front[t][k]).sqnr_db < tau) ++k;
        if (k == front[t].size()) return false;
        p[t] = k;
        cost += static_cast<double>(M(t, front[t][k]).bytes);
      }
      return cost <= value;
    };
    size_t lo = 0, hi = levels.size();  // levels[lo] is affordable (it is the overall minimum)
    std::vector<size_t> trial(tensors_.size());
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (placed(levels[mid], trial)) lo = mid;
      else hi = mid;
    }
    placed(levels[lo], pos);
    double spent = 0.0;
    for (size_t t = 0; t < tensors_.size(); ++t) spent += static_cast<double>(M(t, front[t][pos[t]]).bytes);
    // What is left goes to the weakest tensors first: repeatedly, the tensor with the lowest
    // SQNR (then the lowest index) whose next choice still fits.
    for (;;) {
      std::vector<size_t> order(tensors_.size());
      for (size_t t = 0; t < order.size(); ++t) order[t] = t;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return M(a, front[a][pos[a]]).sqnr_db < M(b, front[b][pos[b]]).sqnr_db;
      });
      bool upgraded = false;
      for (size_t t : order) {
        if (pos[t] + 1 >= front[t].size()) continue;
        const double extra = static_cast<double>(M(t, front[t][pos[t] + 1]).bytes) -
                             static_cast<double>(M(t, front[t][pos[t]]).bytes);
        if (spent + extra <= value) {
          spent += extra;
          ++pos[t];
          upgraded = true;
          break;
        }
      }
      if (!upgraded) break;
    }
  }
  // The choices, the runner-up of each (the next larger useful choice, or else the next smaller),
  // and the table.
  uint64_t total = 0;
  size_t worst = 0;
  size_t short_of = 0;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    Entry &e = tensors_[t];
    e.chosen = front[t][pos[t]];
    e.runner_up = pos[t] + 1 < front[t].size() ? front[t][pos[t] + 1]
                  : pos[t] > 0                 ? front[t][pos[t] - 1]
                                               : -1;
    total += M(t, e.chosen).bytes;
    if (M(t, e.chosen).sqnr_db < M(worst, tensors_[worst].chosen).sqnr_db) worst = t;
    if (budget == QNT_BUDGET_MIN_SQNR && M(t, e.chosen).sqnr_db < value) ++short_of;
  }
  size_t wn = 6, wf = 6;
  for (const Entry &e : tensors_) wn = std::max(wn, e.name.size());
  for (const FormatSpec &f : formats_) wf = std::max(wf, f.name.size());
  auto pad = [](const std::string &s, size_t w) { return s + std::string(w > s.size() ? w - s.size() : 0, ' '); };
  auto lpad = [](const std::string &s, size_t w) { return std::string(w > s.size() ? w - s.size() : 0, ' ') + s; };
  std::string r = pad("tensor", wn) + "  " + pad("format", wf) + "  " + lpad("bytes", 12) + "  " +
                  lpad("sqnr_db", 8) + "  " + pad("runner-up", wf) + "  " + lpad("bytes", 12) + "  " +
                  lpad("sqnr_db", 8) + "\n";
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const Entry &e = tensors_[t];
    const Measured &c = M(t, e.chosen);
    r += pad(e.name, wn) + "  " + pad(formats_[static_cast<size_t>(e.chosen)].name, wf) + "  " +
         lpad(std::to_string(c.bytes), 12) + "  " + lpad(db(c.sqnr_db), 8) + "  ";
    if (e.runner_up >= 0) {
      const Measured &u = M(t, e.runner_up);
      r += pad(formats_[static_cast<size_t>(e.runner_up)].name, wf) + "  " +
           lpad(std::to_string(u.bytes), 12) + "  " + lpad(db(u.sqnr_db), 8);
    } else {
      r += pad("-", wf);
    }
    while (!r.empty() && r.back() == ' ') r.pop_back();
    r += "\n";
  }
  r += "total " + std::to_string(total) + " bytes";
  if (budget == QNT_BUDGET_BYTES) r += " of a budget of " + fmt("%.0f", value);
  r += "; worst SQNR " + db(M(worst, tensors_[worst].chosen).sqnr_db) + " dB (" +
       tensors_[worst].name + ")";
  if (budget == QNT_BUDGET_MIN_SQNR) {
    r += "; budget SQNR >= " + db(value) + " dB";
    if (short_of > 0)
      r += ": " + std::to_string(short_of) + " tensor(s) fall short with every format (given their best)";
  }
  r += "\n";
  report_ = std::move(r);
  ran_ = true;
}

void Recommender::choice(size_t i, const char **name, const char **format, uint64_t *bytes,
                         double *sqnr_db) const {
  if (!ran_) fail(QNT_ERR_INVALID_ARGUMENT, "run the recommender first (qnt_recommender_run)");
  if (i >= tensors_.size())
    fail(QNT_ERR_INVALID_ARGUMENT, "tensor ", i, " of ", tensors_.size());
  const Entry &e = tensors_[i];
  const Measured &m = e.m[static_cast<size_t>(e.chosen)];
  if (name != nullptr) *name = e.name.c_str();
  if (format != nullptr) *format = formats_[static_cast<size_t>(e.chosen)].name.c_str();
  if (bytes != nullptr) *bytes = m.bytes;
  if (sqnr_db != nullptr) *sqnr_db = m.sqnr_db;
}

const std::string &Recommender::report() const {
  if (!ran_) fail(QNT_ERR_INVALID_ARGUMENT, "run the recommender first (qnt_recommender_run)");
  return report_;
}

}  // namespace qnt::calib
