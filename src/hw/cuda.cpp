// Finds the optional CUDA module (libqnt_cuda.so, built from kernels/cuda/) at run time, so that
// the core library loads and works on machines without a GPU, a driver or the CUDA runtime.
#include "hw/machine.hpp"

#include <cstdlib>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#define QNT_HW_DLOPEN 1
#endif

namespace qnt::hw {
namespace {

#if defined(QNT_HW_DLOPEN)
// The module's entry points (see kernels/cuda/module.cu); each returns 0 on success.
using AbiFn = int (*)();
using CountFn = int (*)(int *);
using CapabilityFn = int (*)(int, int *, int *);
constexpr int kModuleAbi = 1;

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

std::vector<CudaDevice> detect_cuda_devices() {
  std::vector<CudaDevice> devices;
#if defined(QNT_HW_DLOPEN)
  // The module stays loaded for the life of the process: its runtime keeps state.
  void *h = open_module();
  if (h == nullptr) return devices;
  const auto abi = reinterpret_cast<AbiFn>(dlsym(h, "qnt_cuda_module_abi"));
  const auto count = reinterpret_cast<CountFn>(dlsym(h, "qnt_cuda_module_device_count"));
  const auto cap = reinterpret_cast<CapabilityFn>(dlsym(h, "qnt_cuda_module_compute_capability"));
  if (abi == nullptr || count == nullptr || cap == nullptr || abi() != kModuleAbi) return devices;
  int n = 0;
  if (count(&n) != 0 || n <= 0) return devices;
  for (int d = 0; d < n; ++d) {
    int major = 0, minor = 0;
    if (cap(d, &major, &minor) != 0) break;
    devices.push_back(CudaDevice{major, minor});
  }
#endif
  return devices;
}

}  // namespace qnt::hw
