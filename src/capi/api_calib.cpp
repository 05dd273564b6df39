// Entry points: streaming calibrators and error reports.
#include "calib/calibrator.hpp"
#include "calib/recommend.hpp"
#include "calib/report.hpp"
#include "capi/boundary.hpp"

#include <cstddef>
#include <cstring>
#include <memory>

using namespace qnt;
using qnt::capi::guard;
using qnt::capi::require;
using qnt::capi::tensor_of;
using qnt::capi::host_tensor_of;

struct qnt_calibrator {
  uint32_t magic;
  std::unique_ptr<calib::Calibrator> c;
  qnt::capi::LiveHandle live{};
};

struct qnt_recommender {
  uint32_t magic;
  calib::Recommender r;
  qnt::capi::LiveHandle live{};
};

namespace {

constexpr uint32_t kCalibratorMagic = 0x7143616c;  // "qCal"

const calib::Calibrator &calibrator_of(const qnt_calibrator *c, const char *name) {
  require(c, name);
  if (c->magic != kCalibratorMagic || !c->c)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_calibrator");
  return *c->c;
}

calib::Calibrator &calibrator_of(qnt_calibrator *c, const char *name) {
  return const_cast<calib::Calibrator &>(
      calibrator_of(static_cast<const qnt_calibrator *>(c), name));
}

constexpr uint32_t kRecommenderMagic = 0x71526563;  // "qRec"

const calib::Recommender &recommender_of(const qnt_recommender *r, const char *name) {
  require(r, name);
  if (r->magic != kRecommenderMagic) fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_recommender");
  return r->r;
}

calib::Recommender &recommender_of(qnt_recommender *r, const char *name) {
  return const_cast<calib::Recommender &>(
      recommender_of(static_cast<const qnt_recommender *>(r), name));
}

qnt_calibrator *new_handle(std::unique_ptr<calib::Calibrator> c) {
  return new qnt_calibrator{kCalibratorMagic, std::move(c)};
}

}  // namespace

extern "C" {

qnt_status qnt_calibrator_create(qnt_calib_method method, qnt_dtype dtype, qnt_scheme scheme,
                                 qnt_granularity granularity, int64_t axis, qnt_calibrator **out) {
  return guard(__func__, [&] {
    require(out, "out");
    auto c = std::make_unique<calib::Calibrator>(method, dtype, scheme, granularity, axis);
    *out = new_handle(std::move(c));
  });
}

void qnt_calibrator_destroy(qnt_calibrator *c) {
  if (c == nullptr || c->magic != kCalibratorMagic) return;
  c->magic = capi::kDeadMagic;
  delete c;
}

qnt_status qnt_calibrator_set_option(qnt_calibrator *c, qnt_calib_option option, double value) {
  return guard(__func__, [&] { calibrator_of(c, "c").set_option(option, value); });
}

qnt_status qnt_calibrator_observe(qnt_context *ctx, qnt_calibrator *c, const qnt_tensor *x) {
  return guard(__func__, [&] {
    const Context &context = capi::context_of(ctx);
    calibrator_of(c, "c").observe(context, host_tensor_of(x, "x", __func__));
  });
}

qnt_status qnt_calibrator_compute(qnt_context *ctx, const qnt_calibrator *c, qnt_qparams **out) {
  return guard(__func__, [&] {
    const Context &context = capi::context_of(ctx);
    const calib::Calibrator &cal = calibrator_of(c, "c");
    require(out, "out");
    *out = capi::new_qparams_handle(cal.compute(context));
  });
}

qnt_status qnt_calibrator_chosen_method(const qnt_calibrator *c, qnt_calib_method *out) {
  return guard(__func__, [&] {
    const calib::Calibrator &cal = calibrator_of(c, "c");
    require(out, "out");
    *out = cal.chosen();
  });
}

qnt_status qnt_calibrator_reset(qnt_calibrator *c) {
  return guard(__func__, [&] { calibrator_of(c, "c").reset(); });
}

qnt_status qnt_calibrator_merge(qnt_calibrator *into, const qnt_calibrator *from) {
  return guard(__func__, [&] { calibrator_of(into, "into").merge(calibrator_of(from, "from")); });
}

qnt_status qnt_calibrator_counts(const qnt_calibrator *c, uint64_t *finite_out, uint64_t *nan_out,
                                 uint64_t *inf_out) {
  return guard(__func__, [&] {
    const calib::Calibrator &cal = calibrator_of(c, "c");
    require(finite_out, "finite_out");
    require(nan_out, "nan_out");
    require(inf_out, "inf_out");
    cal.counts(*finite_out, *nan_out, *inf_out);
  });
}

qnt_status qnt_calibrator_serialize(const qnt_calibrator *c, void *buf, size_t capacity,
                                    size_t *size_out) {
  return guard(__func__, [&] {
    const calib::Calibrator &cal = calibrator_of(c, "c");
    require(size_out, "size_out");
    const std::vector<uint8_t> bytes = cal.serialize();
    *size_out = bytes.size();
    if (buf == nullptr && capacity == 0) return;
    require(buf, "buf");
    if (capacity < bytes.size())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "the calibrator needs ", bytes.size(), " bytes, capacity is ",
           capacity);
    std::memcpy(buf, bytes.data(), bytes.size());
  });
}

qnt_status qnt_calibrator_deserialize(const void *buf, size_t size, qnt_calibrator **out) {
  return guard(__func__, [&] {
    require(buf, "buf");
    require(out, "out");
    auto c = calib::Calibrator::deserialize(static_cast<const uint8_t *>(buf), size);
    *out = new_handle(std::move(c));
  });
}

qnt_status qnt_error_report_compute(qnt_context *ctx, const qnt_tensor *x, const qnt_qparams *qp,
                                    qnt_error_report *report, size_t report_size) {
  return guard(__func__, [&] {
    (void)capi::context_of(ctx);
    const Tensor &t = host_tensor_of(x, "x", __func__);
    const auto &p = capi::qparams_of(qp, "qp");
    require(report, "report");
    if (report_size < sizeof(double))
      fail(QNT_ERR_INVALID_ARGUMENT, "report_size is ", report_size,
           "; pass sizeof *report (at least the first field)");
    qnt_error_report r{};
    calib::error_report(t, *p, r);
    // Only whole fields that fit in the caller's struct: an older, shorter struct is never
    // overrun, and a newer, longer one keeps its later fields as the caller set them.
    struct Field {
      size_t offset, size;
    };
    static const Field fields[] = {{offsetof(qnt_error_report, mse), 8},
                                   {offsetof(qnt_error_report, sqnr_db), 8},
                                   {offsetof(qnt_error_report, max_abs_error), 8},
                                   {offsetof(qnt_error_report, saturated_fraction), 8},
                                   {offsetof(qnt_error_report, count), 8}};
    for (const Field &f : fields)
      if (f.offset + f.size <= report_size)
        std::memcpy(reinterpret_cast<unsigned char *>(report) + f.offset,
                    reinterpret_cast<const unsigned char *>(&r) + f.offset, f.size);
  });
}

qnt_status qnt_recommender_create(qnt_recommender **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = new qnt_recommender{kRecommenderMagic, calib::Recommender{}};
  });
}

void qnt_recommender_destroy(qnt_recommender *r) {
  if (r == nullptr || r->magic != kRecommenderMagic) return;
  r->magic = capi::kDeadMagic;
  delete r;
}

qnt_status qnt_recommender_add_format(qnt_recommender *r, const char *format) {
  return guard(__func__, [&] {
    calib::Recommender &rec = recommender_of(r, "r");
    require(format, "format");
    rec.add_format(format);
  });
}

qnt_status qnt_recommender_add_tensor(qnt_context *ctx, qnt_recommender *r, const char *name,
                                      const qnt_tensor *w, const float *importance,
                                      size_t importance_count) {
  return guard(__func__, [&] {
    const Context &context = capi::context_of(ctx);
    calib::Recommender &rec = recommender_of(r, "r");
    require(name, "name");
    rec.add_tensor(context, name, host_tensor_of(w, "w", __func__), importance, importance_count);
  });
}

qnt_status qnt_recommender_run(qnt_recommender *r, qnt_budget budget, double value) {
  return guard(__func__, [&] { recommender_of(r, "r").run(budget, value); });
}

qnt_status qnt_recommender_tensor_count(const qnt_recommender *r, size_t *out) {
  return guard(__func__, [&] {
    const calib::Recommender &rec = recommender_of(r, "r");
    require(out, "out");
    *out = rec.tensor_count();
  });
}

qnt_status qnt_recommender_choice(const qnt_recommender *r, size_t index, const char **name_out,
                                  const char **format_out, uint64_t *bytes_out,
                                  double *sqnr_db_out) {
  return guard(__func__, [&] {
    recommender_of(r, "r").choice(index, name_out, format_out, bytes_out, sqnr_db_out);
  });
}

qnt_status qnt_recommender_report(const qnt_recommender *r, const char **out) {
  return guard(__func__, [&] {
    const calib::Recommender &rec = recommender_of(r, "r");
    require(out, "out");
    *out = rec.report().c_str();
  });
}

}  // extern "C"
