#include "core/device.hpp"

#include "core/error.hpp"
#include "hw/machine.hpp"

#include <sstream>

namespace qnt {

std::string place_name(const Place &p) {
  if (p.is_cpu()) return "the CPU";
  std::ostringstream os;
  os << "cuda:" << p.id;
  return os.str();
}

const qnt_cuda_module &cuda_for(int32_t device) {
  const auto &devices = hw::cuda_devices();
  const qnt_cuda_module *m = hw::cuda_module();
  if (m == nullptr || device < 0 || static_cast<size_t>(device) >= devices.size())
    fail(QNT_ERR_NO_DEVICE, "no CUDA device ", device, " (", devices.size(),
         devices.size() == 1 ? " device" : " devices",
         " usable: qnt looks for libqnt_cuda.so, the CUDA driver and a GPU)");
  return *m;
}

void cuda_check(const qnt_cuda_module &m, int rc, const char *what) {
  if (rc == 0) return;
  fail(m.status_of(rc), what, ": CUDA error ", rc, " (", m.error_string(rc), ")");
}

Place checked_place(qnt_device_type type, int32_t id) {
  if (type == QNT_DEVICE_CPU) {
    if (id != 0) fail(QNT_ERR_INVALID_ARGUMENT, "the CPU is device 0, not ", id);
    return Place{};
  }
  if (type != QNT_DEVICE_CUDA)
    fail(QNT_ERR_INVALID_ARGUMENT, "device type ", type,
         " is not QNT_DEVICE_CPU (1) or QNT_DEVICE_CUDA (2)");
  if (id < 0) fail(QNT_ERR_INVALID_ARGUMENT, "device ", id, " < 0");
  (void)cuda_for(id);
  return Place{QNT_DEVICE_CUDA, id};
}

std::shared_ptr<void> device_alloc(int32_t device, size_t bytes) {
  const qnt_cuda_module &m = cuda_for(device);
  void *p = nullptr;
  cuda_check(m, m.alloc(device, bytes, &p), "cudaMalloc");
  try {
    return std::shared_ptr<void>(p, [mp = &m, device](void *q) { (void)mp->release(device, q); });
  } catch (...) {
    (void)m.release(device, p);
    throw;
  }
}

std::shared_ptr<void> device_upload(int32_t device, const void *host, size_t bytes) {
  auto p = device_alloc(device, bytes == 0 ? 1 : bytes);
  if (bytes > 0) {
    const qnt_cuda_module &m = cuda_for(device);
    cuda_check(m, m.copy(device, nullptr, p.get(), host, bytes, 1), "copy to the device");
  }
  return p;
}

void Launch::finish(const char *what) const {
  if (wait) cuda_check(*m, m->synchronize(device, stream), what);
}

Launch launch_for(const Context &ctx, const Place &where) {
  Launch l;
  l.m = &cuda_for(where.id);
  l.device = where.id;
  if (ctx.cuda_device >= 0) {
    if (ctx.cuda_device != where.id)
      fail(QNT_ERR_INVALID_ARGUMENT, "the context is bound to cuda:", ctx.cuda_device,
           " but the tensors are on cuda:", where.id);
    l.stream = ctx.cuda_stream;
    l.wait = false;
  }
  return l;
}

DeviceScratch::DeviceScratch(const Launch &l, size_t bytes) : l_(l) {
  if (bytes == 0) return;
  cuda_check(*l.m, l.m->scratch_alloc(l.device, l.stream, bytes, &p_), "cudaMallocAsync");
}

DeviceScratch::~DeviceScratch() {
  if (p_ != nullptr) (void)l_.m->scratch_free(l_.device, l_.stream, p_);
}

}  // namespace qnt
