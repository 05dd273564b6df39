// The one boundary between C callers and the C++ core: handle layouts, handle checks, and the
// guard that turns every exception into a qnt_status plus a thread-local message.
#pragma once

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/qparams.hpp"
#include "core/tensor.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"

#include <qnt/qnt.h>

#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>

namespace qnt::capi {
// A member of every handle: counts the handles alive in the process (qnt_live_handles), however
// the handle is made and freed (a destroy call, or a failed create that drops it).
class LiveHandle {
 public:
  LiveHandle() noexcept;
  LiveHandle(const LiveHandle &) noexcept;
  LiveHandle &operator=(const LiveHandle &) noexcept { return *this; }
  ~LiveHandle();
};
uint64_t live_handles() noexcept;
}  // namespace qnt::capi

// A magic number per handle type catches a handle of the wrong type or one already destroyed
// (as far as freed memory allows) with an error instead of a crash.
struct qnt_context {
  uint32_t magic;
  qnt::Context ctx;
  qnt::capi::LiveHandle live{};
};
struct qnt_qparams {
  uint32_t magic;
  std::shared_ptr<const qnt::QParams> p;
  qnt::capi::LiveHandle live{};
};
struct qnt_tensor {
  uint32_t magic;
  std::optional<qnt::Tensor> t;
  qnt::capi::LiveHandle live{};
};
struct qnt_op_desc {
  uint32_t magic;
  qnt::ops::OpDesc d;
  qnt::capi::LiveHandle live{};
};
struct qnt_prepared {
  uint32_t magic;
  std::unique_ptr<const qnt::ops::Prepared> p;
  qnt::capi::LiveHandle live{};
};

namespace qnt::capi {

constexpr uint32_t kContextMagic = 0x71437478;   // "qCtx"
constexpr uint32_t kQParamsMagic = 0x71507273;   // "qPrs"
constexpr uint32_t kTensorMagic = 0x7154656e;    // "qTen"
constexpr uint32_t kDescMagic = 0x71446573;      // "qDes"
constexpr uint32_t kPreparedMagic = 0x71507265;  // "qPre"
constexpr uint32_t kDeadMagic = 0xdeadbeef;

// Records "function: message" as this thread's last error.
void set_last_error(const char *function, const char *message) noexcept;
const char *last_error_message() noexcept;

// Runs body; returns QNT_OK, or the status of what it threw (with the message recorded).
template <class Body>
qnt_status guard(const char *function, Body &&body) noexcept {
  try {
    body();
    return QNT_OK;
  } catch (const Error &e) {
    set_last_error(function, e.what());
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error(function, "out of memory");
    return QNT_ERR_OUT_OF_MEMORY;
  } catch (const std::length_error &) {  // a size above what an allocator can even ask for
    set_last_error(function, "out of memory (a buffer larger than the address space)");
    return QNT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    set_last_error(function, e.what());
    return QNT_ERR_INTERNAL;
  } catch (...) {
    set_last_error(function, "unknown exception");
    return QNT_ERR_INTERNAL;
  }
}

template <class T>
void require(const T *p, const char *name) {
  if (p == nullptr) fail(QNT_ERR_NULL_POINTER, name, " is NULL");
}

const Context &context_of(const qnt_context *ctx);  // NULL gives the default context
Context &context_of(qnt_context *ctx, const char *name);
const std::shared_ptr<const QParams> &qparams_of(const qnt_qparams *qp, const char *name);
const Tensor &tensor_of(const qnt_tensor *t, const char *name);
Tensor &tensor_of(qnt_tensor *t, const char *name);
// As tensor_of, for the entry points that run on the CPU only: QNT_ERR_UNSUPPORTED (naming the
// function) for a device tensor. NULL stays NULL in the optional form.
const Tensor &host_tensor_of(const qnt_tensor *t, const char *name, const char *fn);
Tensor &host_tensor_of(qnt_tensor *t, const char *name, const char *fn);
const Tensor *optional_host_tensor(const qnt_tensor *t, const char *name, const char *fn);

// NULL gives the defaults (every option unset).
const ops::OpDesc &desc_of(const qnt_op_desc *d, const char *name);
ops::OpDesc &desc_of(qnt_op_desc *d, const char *name);
const ops::Prepared &prepared_of(const qnt_prepared *p, const char *name);
// NULL stays NULL (an optional tensor argument).
const Tensor *optional_tensor(const qnt_tensor *t, const char *name);
// Wraps a tensor made by the library in a handle.
qnt_tensor *new_tensor_handle(std::unique_ptr<Tensor> t);

// Wraps a fresh qparams in a handle.
qnt_qparams *new_qparams_handle(std::shared_ptr<const QParams> p);

}  // namespace qnt::capi
