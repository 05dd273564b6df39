#include "capi/boundary.hpp"

#include <atomic>
#include <string>

namespace qnt::capi {
namespace {
thread_local std::string last_error;
}

void set_last_error(const char *function, const char *message) noexcept {
  try {
    last_error.assign(function);
    last_error.append(": ");
    last_error.append(message);
  } catch (...) {
    // Out of memory while recording an error: keep whatever fits, never throw across the ABI.
    last_error.clear();
  }
}

const char *last_error_message() noexcept { return last_error.c_str(); }

const Context &context_of(const qnt_context *ctx) {
  // The context of calls given no handle: its kernels chosen once, on first use.
  static const Context defaults = [] {
    Context c;
    c.choose_kernels();
    return c;
  }();
  if (ctx == nullptr) return defaults;
  if (ctx->magic != kContextMagic) fail(QNT_ERR_INVALID_ARGUMENT, "ctx is not a live qnt_context");
  return ctx->ctx;
}

Context &context_of(qnt_context *ctx, const char *name) {
  require(ctx, name);
  if (ctx->magic != kContextMagic)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_context");
  return ctx->ctx;
}

const std::shared_ptr<const QParams> &qparams_of(const qnt_qparams *qp, const char *name) {
  require(qp, name);
  if (qp->magic != kQParamsMagic || !qp->p)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_qparams");
  return qp->p;
}

const Tensor &tensor_of(const qnt_tensor *t, const char *name) {
  require(t, name);
  if (t->magic != kTensorMagic || !t->t)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_tensor");
  return *t->t;
}

Tensor &tensor_of(qnt_tensor *t, const char *name) {
  return const_cast<Tensor &>(tensor_of(static_cast<const qnt_tensor *>(t), name));
}

const Tensor &host_tensor_of(const qnt_tensor *t, const char *name, const char *fn) {
  const Tensor &x = tensor_of(t, name);
  if (!x.on_cpu())
    fail(QNT_ERR_UNSUPPORTED, fn, " runs on the CPU only, and ", name, " is on ",
         place_name(x.place()), " (copy it to the host with qnt_tensor_copy)");
  return x;
}

Tensor &host_tensor_of(qnt_tensor *t, const char *name, const char *fn) {
  return const_cast<Tensor &>(host_tensor_of(static_cast<const qnt_tensor *>(t), name, fn));
}

const Tensor *optional_host_tensor(const qnt_tensor *t, const char *name, const char *fn) {
  return t == nullptr ? nullptr : &host_tensor_of(t, name, fn);
}

const ops::OpDesc &desc_of(const qnt_op_desc *d, const char *name) {
  if (d == nullptr) return ops::default_desc();
  if (d->magic != kDescMagic) fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_op_desc");
  return d->d;
}

ops::OpDesc &desc_of(qnt_op_desc *d, const char *name) {
  require(d, name);
  return const_cast<ops::OpDesc &>(desc_of(static_cast<const qnt_op_desc *>(d), name));
}

const ops::Prepared &prepared_of(const qnt_prepared *p, const char *name) {
  require(p, name);
  if (p->magic != kPreparedMagic || !p->p)
    fail(QNT_ERR_INVALID_ARGUMENT, name, " is not a live qnt_prepared");
  return *p->p;
}

const Tensor *optional_tensor(const qnt_tensor *t, const char *name) {
  return t == nullptr ? nullptr : &tensor_of(t, name);
}

qnt_tensor *new_tensor_handle(std::unique_ptr<Tensor> t) {
  auto h = std::make_unique<qnt_tensor>();
  h->t.emplace(std::move(*t));
  h->magic = kTensorMagic;
  return h.release();
}

qnt_qparams *new_qparams_handle(std::shared_ptr<const QParams> p) {
  auto *h = new qnt_qparams{kQParamsMagic, std::move(p)};
  return h;
}

namespace {
std::atomic<uint64_t> g_live_handles{0};
}  // namespace

LiveHandle::LiveHandle() noexcept { g_live_handles.fetch_add(1, std::memory_order_relaxed); }
LiveHandle::LiveHandle(const LiveHandle &) noexcept {
  g_live_handles.fetch_add(1, std::memory_order_relaxed);
}
LiveHandle::~LiveHandle() { g_live_handles.fetch_sub(1, std::memory_order_relaxed); }
uint64_t live_handles() noexcept { return g_live_handles.load(std::memory_order_relaxed); }

}  // namespace qnt::capi
