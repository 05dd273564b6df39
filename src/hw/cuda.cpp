// Finds the optional CUDA module (libqnt_cuda.so, built from kernels/cuda/) at run time, so that
// the core library loads and works on machines without a GPU, a driver or the CUDA runtime.
#include "hw/machine.hpp"
#include "hw/cuda_module.h"

#include <cstdlib>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define QNT_HW_DLOPEN 1
#endif

namespace qnt::hw {
namespace {

#if defined(QNT_HW_DLOPEN)
using AbiFn = int (*)();
using TableFn = const qnt_cuda_module *(*)();

void *open_module() {
  // 1. An explicit path, for tests and unusual installs.
  if (const char *path = std::getenv("QNT_CUDA_MODULE"); path != nullptr && *path != '\0')
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  // 2. Beside the library that holds this code (libqnt.so, or the program for libqnt.a).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&open_module), &info) != 0 && info.dli_fname != nullptr) {
    std::string dir = info.dli_fname;
    const auto slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string() : dir.substr(0, slash + 1);
    if (void *h = dlopen((dir + "libqnt_cuda.so").c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  // 3. The loader's search path.
  return dlopen("libqnt_cuda.so", RTLD_NOW | RTLD_LOCAL);
}
#endif

}  // namespace

namespace {

struct Module {
  const qnt_cuda_module *table = nullptr;
  std::vector<CudaDevice> devices;
};

Module load() {
  Module m;
#if defined(QNT_HW_DLOPEN)
  // The module stays loaded for the life of the process: its runtime keeps state.
  void *h = open_module();
  if (h == nullptr) return m;
  const auto abi = reinterpret_cast<AbiFn>(dlsym(h, "qnt_cuda_module_abi"));
  const auto table = reinterpret_cast<TableFn>(dlsym(h, "qnt_cuda_module_table"));
  if (abi == nullptr || table == nullptr || abi() != QNT_CUDA_MODULE_ABI) return m;
  const qnt_cuda_module *t = table();
  if (t == nullptr || t->size < sizeof(qnt_cuda_module)) return m;
  int32_t n = 0;
  if (t->device_count(&n) != 0 || n <= 0) return m;
  for (int32_t d = 0; d < n; ++d) {
    int32_t major = 0, minor = 0;
    if (t->compute_capability(d, &major, &minor) != 0) break;
    m.devices.push_back(CudaDevice{major, minor});
  }
  if (!m.devices.empty()) m.table = t;
#endif
  return m;
}

const Module &module() {
  static const Module m = load();
  return m;
}

}  // namespace

std::vector<CudaDevice> detect_cuda_devices() { return module().devices; }

const qnt_cuda_module *cuda_module() { return module().table; }

}  // namespace qnt::hw
