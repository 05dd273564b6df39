/* A stand-in for libqnt_cuda.so with no GPU behind it: it answers like the real module on a
 * machine without devices, and marks its own loading in the environment, so a test can tell
 * when (and whether) qnt looked for its CUDA module. */
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

__attribute__((constructor)) static void mark_loaded(void) {
  setenv("QNT_TEST_CUDA_MODULE_LOADED", "1", 1);
}

EXPORT int qnt_cuda_module_abi(void) { return 1; }
EXPORT int qnt_cuda_module_device_count(int *n) {
  *n = 0;
  return 0;
}
EXPORT int qnt_cuda_module_compute_capability(int device, int *major, int *minor) {
  (void)device;
  *major = 0;
  *minor = 0;
  return 1;
}
