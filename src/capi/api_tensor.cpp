// Entry points: qparams, tensors, quantize / dequantize / requantize, calibration.
#include "calib/calibrate.hpp"
#include "capi/boundary.hpp"
#include "io/dlpack.hpp"
#include "ops/common.hpp"
#include "ops/quantize.hpp"

#include <cstring>
#include <memory>

using namespace qnt;
using qnt::capi::guard;
using qnt::capi::qparams_of;
using qnt::capi::require;
using qnt::capi::tensor_of;
using qnt::capi::host_tensor_of;

namespace {

qnt_tensor *make_tensor(qnt_dtype dtype, const int64_t *shape, size_t rank,
                        const qnt_qparams *qparams, Tensor::Storage storage, void *data,
                        size_t data_bytes, Place place = {}) {
  std::shared_ptr<const QParams> qp;
  if (qparams != nullptr) qp = qparams_of(qparams, "qparams");
  auto h = std::make_unique<qnt_tensor>();
  h->t.emplace(dtype, shape, rank, std::move(qp), storage, data, data_bytes, nullptr, false,
               place);
  h->magic = qnt::capi::kTensorMagic;
  return h.release();
}

// A host <-> device copy of a whole device tensor's bytes (t's byte size, from src to dst) on
// the legacy default stream, finished on return.
void device_host_copy(const Tensor &t, void *dst, const void *src) {
  const qnt_cuda_module &m = cuda_for(t.place().id);
  cuda_check(m, m.copy(t.place().id, nullptr, dst, src, t.byte_size(), 1), "cudaMemcpy");
}

}  // namespace

extern "C" {

qnt_status qnt_tensor_create_on_device(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                       const qnt_qparams *qparams, qnt_device_type device_type,
                                       int32_t device, qnt_tensor **out) {
  return guard(__func__, [&] {
    require(out, "out");
    const Place where = checked_place(device_type, device);
    *out = make_tensor(dtype, shape, rank, qparams, Tensor::Storage::Zeroed, nullptr, 0, where);
  });
}

qnt_status qnt_tensor_wrap_device(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                  const qnt_qparams *qparams, qnt_device_type device_type,
                                  int32_t device, void *data, size_t data_bytes,
                                  qnt_tensor **out) {
  return guard(__func__, [&] {
    require(out, "out");
    const Place where = checked_place(device_type, device);
    if (!where.is_cpu() && data != nullptr) {
      const qnt_cuda_module &m = cuda_for(device);
      int32_t holder = -1;
      cuda_check(m, m.pointer_device(data, &holder), "cudaPointerGetAttributes");
      if (holder != device)
        fail(QNT_ERR_INVALID_ARGUMENT, "data is not device memory of cuda:", device,
             holder < 0 ? " (it is host or unregistered memory)" : "");
    }
    *out = make_tensor(dtype, shape, rank, qparams, Tensor::Storage::Borrow, data, data_bytes,
                       where);
  });
}

qnt_status qnt_tensor_copy(qnt_context *ctx, const qnt_tensor *src, qnt_tensor *dst) {
  return guard(__func__, [&] {
    const Context &c = qnt::capi::context_of(static_cast<const qnt_context *>(ctx));
    const Tensor &s = tensor_of(src, "src");
    Tensor &d = tensor_of(dst, "dst");
    if (s.dtype() != d.dtype())
      fail(QNT_ERR_DTYPE_MISMATCH, "src is ", s.info().name, " but dst is ", d.info().name);
    ops::require_same_shape(s, "src", d, "dst");
    ops::require_writable(d, "dst");
    if (&s == &d) fail(QNT_ERR_INVALID_ARGUMENT, "src and dst are the same tensor");
    if (s.place() == d.place()) ops::require_disjoint(d, s, "dst", "src");
    if (s.byte_size() == 0) return;
    if (s.on_cpu() && d.on_cpu()) {
      std::memcpy(d.data(), s.data(), s.byte_size());
      return;
    }
    // The device that runs the copy: dst's, or src's for a copy to the host.
    const Place &where = d.on_cpu() ? s.place() : d.place();
    const qnt_cuda_module &m = cuda_for(where.id);
    void *stream = nullptr;
    bool wait = true;
    if (c.cuda_device == where.id) {
      stream = c.cuda_stream;
      wait = s.on_cpu() || d.on_cpu();  // the host buffer is reusable on return
    }
    cuda_check(m, m.copy(where.id, stream, d.data(), s.data(), s.byte_size(), wait ? 1 : 0),
               "cudaMemcpyAsync");
  });
}

qnt_status qnt_qparams_create_per_tensor(qnt_dtype dtype, float scale, int32_t zero_point,
                                         qnt_qparams **out) {
  return guard(__func__, [&] {
    require(out, "out");
    auto p = QParams::create(dtype, QNT_GRANULARITY_PER_TENSOR, 0, 0, &scale, &zero_point, 1);
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

qnt_status qnt_qparams_create_per_axis(qnt_dtype dtype, int64_t axis, size_t count,
                                       const float *scales, const int32_t *zero_points,
                                       qnt_qparams **out) {
  return guard(__func__, [&] {
    require(out, "out");
    auto p = QParams::create(dtype, QNT_GRANULARITY_PER_AXIS, axis, 0, scales, zero_points, count);
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

qnt_status qnt_qparams_create_per_block(qnt_dtype dtype, int64_t axis, int64_t block_size,
                                        size_t count, const float *scales,
                                        const int32_t *zero_points, qnt_qparams **out) {
  return guard(__func__, [&] {
    require(out, "out");
    auto p = QParams::create(dtype, QNT_GRANULARITY_PER_BLOCK, axis, block_size, scales,
                             zero_points, count);
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

void qnt_qparams_destroy(qnt_qparams *qp) {
  if (qp == nullptr || qp->magic != qnt::capi::kQParamsMagic) return;
  qp->magic = qnt::capi::kDeadMagic;
  delete qp;
}

qnt_status qnt_qparams_dtype(const qnt_qparams *qp, qnt_dtype *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->dtype();
  });
}

qnt_status qnt_qparams_granularity(const qnt_qparams *qp, qnt_granularity *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->granularity();
  });
}

qnt_status qnt_qparams_scheme(const qnt_qparams *qp, qnt_scheme *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->info().rule == Rule::Log2 ? QNT_SCHEME_LOG2
           : p->symmetric()             ? QNT_SCHEME_SYMMETRIC
                                        : QNT_SCHEME_AFFINE;
  });
}

qnt_status qnt_qparams_axis(const qnt_qparams *qp, int64_t *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->axis();
  });
}

qnt_status qnt_qparams_block_size(const qnt_qparams *qp, int64_t *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->block_size();
  });
}

qnt_status qnt_qparams_scale_count(const qnt_qparams *qp, size_t *out) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    *out = p->count();
  });
}

qnt_status qnt_qparams_scales(const qnt_qparams *qp, float *out, size_t capacity) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    if (capacity < p->count())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "capacity ", capacity, " < ", p->count(), " scales");
    std::memcpy(out, p->scales(), p->count() * sizeof(float));
  });
}

qnt_status qnt_qparams_zero_points(const qnt_qparams *qp, int32_t *out, size_t capacity) {
  return guard(__func__, [&] {
    const auto &p = qparams_of(qp, "qp");
    require(out, "out");
    if (capacity < p->count())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "capacity ", capacity, " < ", p->count(), " zero points");
    std::memcpy(out, p->zero_points(), p->count() * sizeof(int32_t));
  });
}

qnt_status qnt_tensor_create(qnt_dtype dtype, const int64_t *shape, size_t rank,
                             const qnt_qparams *qparams, qnt_tensor **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = make_tensor(dtype, shape, rank, qparams, Tensor::Storage::Zeroed, nullptr, 0);
  });
}

qnt_status qnt_tensor_create_from_data(qnt_dtype dtype, const int64_t *shape, size_t rank,
                                       const qnt_qparams *qparams, const void *data,
                                       size_t data_bytes, qnt_tensor **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = make_tensor(dtype, shape, rank, qparams, Tensor::Storage::Copy, const_cast<void *>(data),
                       data_bytes);
  });
}

qnt_status qnt_tensor_wrap(qnt_dtype dtype, const int64_t *shape, size_t rank,
                           const qnt_qparams *qparams, void *data, size_t data_bytes,
                           qnt_tensor **out) {
  return guard(__func__, [&] {
    require(out, "out");
    *out = make_tensor(dtype, shape, rank, qparams, Tensor::Storage::Borrow, data, data_bytes);
  });
}

void qnt_tensor_destroy(qnt_tensor *t) {
  if (t == nullptr || t->magic != qnt::capi::kTensorMagic) return;
  t->magic = qnt::capi::kDeadMagic;
  delete t;
}

qnt_status qnt_tensor_dtype(const qnt_tensor *t, qnt_dtype *out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.dtype();
  });
}

qnt_status qnt_tensor_rank(const qnt_tensor *t, size_t *out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.rank();
  });
}

qnt_status qnt_tensor_shape(const qnt_tensor *t, int64_t *shape_out, size_t capacity) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    if (x.rank() == 0) return;
    require(shape_out, "shape_out");
    if (capacity < x.rank())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "capacity ", capacity, " < rank ", x.rank());
    std::memcpy(shape_out, x.shape(), x.rank() * sizeof(int64_t));
  });
}

qnt_status qnt_tensor_element_count(const qnt_tensor *t, size_t *out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.element_count();
  });
}

qnt_status qnt_tensor_byte_size(const qnt_tensor *t, size_t *out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.byte_size();
  });
}

qnt_status qnt_tensor_qparams(const qnt_tensor *t, qnt_qparams **out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.qparams() ? qnt::capi::new_qparams_handle(x.qparams()) : nullptr;
  });
}

qnt_status qnt_tensor_data(qnt_tensor *t, void **out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(static_cast<const qnt_tensor *>(t), "t");
    require(out, "out");
    *out = const_cast<uint8_t *>(x.data());
  });
}

qnt_status qnt_tensor_device(const qnt_tensor *t, qnt_device_type *type_out, int32_t *id_out) {
  return guard(__func__, [&] {
    require(type_out, "type_out");
    require(id_out, "id_out");
    const Tensor &x = tensor_of(t, "t");
    *type_out = x.place().type;
    *id_out = x.place().id;
  });
}

qnt_status qnt_tensor_is_read_only(const qnt_tensor *t, int32_t *out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    *out = x.read_only() ? 1 : 0;
  });
}

qnt_status qnt_tensor_copy_from(qnt_tensor *t, const void *src, size_t src_bytes) {
  return guard(__func__, [&] {
    Tensor &x = tensor_of(t, "t");
    ops::require_writable(x, "t");
    if (x.byte_size() == 0) return;
    require(src, "src");
    if (src_bytes < x.byte_size())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "src holds ", src_bytes, " bytes, the tensor has ",
           x.byte_size());
    const auto s = reinterpret_cast<uintptr_t>(src), d = reinterpret_cast<uintptr_t>(x.data());
    if (s < d + x.byte_size() && d < s + x.byte_size())
      fail(QNT_ERR_INVALID_ARGUMENT, "src overlaps the tensor's storage");
    if (!x.on_cpu()) {
      device_host_copy(x, x.data(), src);
      const uint8_t mask = ops::last_byte_mask(x);
      if (mask != 0xFF) {  // the unused bits of the last byte are written as 0
        const auto last = static_cast<uint8_t>(static_cast<const uint8_t *>(src)[x.byte_size() - 1] & mask);
        const qnt_cuda_module &m = cuda_for(x.place().id);
        cuda_check(m, m.copy(x.place().id, nullptr, x.data() + x.byte_size() - 1, &last, 1, 1),
                   "cudaMemcpy");
      }
      return;
    }
    std::memcpy(x.data(), src, x.byte_size());
    ops::clear_tail_bits(x);
  });
}

qnt_status qnt_tensor_from_dlpack(void *managed, int32_t versioned, const qnt_qparams *qparams,
                                  qnt_tensor **out) {
  return guard(__func__, [&] {
    require(managed, "managed");
    require(out, "out");
    if (versioned != 0 && versioned != 1)
      fail(QNT_ERR_INVALID_ARGUMENT, "versioned = ", versioned, " (expected 0 or 1)");
    std::shared_ptr<const QParams> qp;
    if (qparams != nullptr) qp = qparams_of(qparams, "qparams");
    // The handle first: once the import succeeds nothing may fail, or `managed` would be both
    // released by qnt and still owned by the caller.
    auto h = std::make_unique<qnt_tensor>();
    std::unique_ptr<Tensor> t = dlpack::import(managed, versioned == 1, std::move(qp));
    h->t.emplace(std::move(*t));
    h->magic = qnt::capi::kTensorMagic;
    *out = h.release();
  });
}

qnt_status qnt_tensor_to_dlpack(const qnt_tensor *t, int32_t versioned, void **out) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    require(out, "out");
    if (versioned != 0 && versioned != 1)
      fail(QNT_ERR_INVALID_ARGUMENT, "versioned = ", versioned, " (expected 0 or 1)");
    *out = dlpack::export_tensor(x, versioned == 1);
  });
}

qnt_status qnt_tensor_copy_to(const qnt_tensor *t, void *dst, size_t dst_bytes) {
  return guard(__func__, [&] {
    const Tensor &x = tensor_of(t, "t");
    if (x.byte_size() == 0) return;
    require(dst, "dst");
    if (dst_bytes < x.byte_size())
      fail(QNT_ERR_BUFFER_TOO_SMALL, "dst holds ", dst_bytes, " bytes, the tensor has ",
           x.byte_size());
    if (!x.on_cpu()) return device_host_copy(x, dst, x.data());
    std::memcpy(dst, x.data(), x.byte_size());
  });
}

qnt_status qnt_quantize(qnt_context *ctx, const qnt_tensor *x, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::quantize(qnt::capi::context_of(ctx), tensor_of(x, "x"), tensor_of(y, "y"));
  });
}

qnt_status qnt_dequantize(qnt_context *ctx, const qnt_tensor *q, qnt_tensor *y) {
  return guard(__func__, [&] {
    ops::dequantize(qnt::capi::context_of(ctx), tensor_of(q, "q"), tensor_of(y, "y"));
  });
}

qnt_status qnt_requantize(qnt_context *ctx, const qnt_tensor *src, qnt_tensor *dst) {
  return guard(__func__, [&] {
    ops::requantize(qnt::capi::context_of(ctx), tensor_of(src, "src"), tensor_of(dst, "dst"));
  });
}

qnt_status qnt_calibrate_minmax(qnt_context *ctx, const qnt_tensor *x, qnt_dtype dtype,
                                qnt_scheme scheme, qnt_granularity granularity, int64_t axis,
                                int64_t block_size, qnt_qparams **out) {
  return guard(__func__, [&] {
    const Context &c = qnt::capi::context_of(ctx);
    const Tensor &t = host_tensor_of(x, "x", __func__);
    require(out, "out");
    auto p = calib::minmax(c, t, dtype, scheme, granularity, axis, block_size, std::nullopt);
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

qnt_status qnt_calibrate_minmax_range(qnt_context *ctx, const qnt_tensor *x, qnt_dtype dtype,
                                      qnt_scheme scheme, qnt_granularity granularity, int64_t axis,
                                      int64_t block_size, int32_t quant_min, int32_t quant_max,
                                      qnt_qparams **out) {
  return guard(__func__, [&] {
    const Context &c = qnt::capi::context_of(ctx);
    const Tensor &t = host_tensor_of(x, "x", __func__);
    require(out, "out");
    auto p = calib::minmax(c, t, dtype, scheme, granularity, axis, block_size,
                           std::make_pair(quant_min, quant_max));
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

qnt_status qnt_qparams_pow2_scales(qnt_context *ctx, const qnt_qparams *qp, const qnt_tensor *x,
                                   qnt_qparams **out) {
  return guard(__func__, [&] {
    (void)qnt::capi::context_of(ctx);
    const auto &p = qparams_of(qp, "qp");
    const Tensor *t = x == nullptr ? nullptr : &host_tensor_of(x, "x", __func__);
    require(out, "out");
    *out = qnt::capi::new_qparams_handle(calib::pow2_scales(*p, t));
  });
}

qnt_status qnt_calibrate_codebook(qnt_context *ctx, const qnt_tensor *x, qnt_dtype dtype,
                                  qnt_granularity granularity, int64_t axis, int64_t block_size,
                                  qnt_qparams **out) {
  return guard(__func__, [&] {
    (void)qnt::capi::context_of(ctx);
    const Tensor &t = host_tensor_of(x, "x", __func__);
    require(out, "out");
    auto p = calib::codebook(capi::context_of(ctx), t, dtype, granularity, axis, block_size);
    *out = qnt::capi::new_qparams_handle(std::move(p));
  });
}

}  // extern "C"
