/* Loads libqnt.so with dlopen, as a program in another language would, and quantizes through
 * function pointers found with dlsym. */
#include <qnt/qnt.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define LOAD(var, name)                                        \
  *(void **)(&var) = dlsym(lib, name);                         \
  if (var == NULL) {                                           \
    fprintf(stderr, "FAIL: dlsym(%s): %s\n", name, dlerror()); \
    return 1;                                                  \
  }

int main(int argc, char **argv) {
  uint32_t (*version)(void);
  qnt_status (*qp_create)(qnt_dtype, float, int32_t, qnt_qparams **);
  void (*qp_destroy)(qnt_qparams *);
  qnt_status (*t_from)(qnt_dtype, const int64_t *, size_t, const qnt_qparams *, const void *,
                       size_t, qnt_tensor **);
  qnt_status (*t_create)(qnt_dtype, const int64_t *, size_t, const qnt_qparams *, qnt_tensor **);
  void (*t_destroy)(qnt_tensor *);
  qnt_status (*t_copy)(const qnt_tensor *, void *, size_t);
  qnt_status (*quantize)(qnt_context *, const qnt_tensor *, qnt_tensor *);
  qnt_status (*abi_check)(uint32_t);
  const float x[4] = {-1.0f, 0.25f, 0.75f, 100.0f};
  const int64_t shape[1] = {4};
  int8_t q[4] = {0, 0, 0, 0};
  const int8_t want[4] = {-4, 1, 3, 127};
  qnt_qparams *qp = NULL;
  qnt_tensor *tx = NULL, *tq = NULL;
  void *lib;

  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/libqnt.so\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "FAIL: dlopen(%s): %s\n", argv[1], dlerror());
    return 1;
  }
  LOAD(version, "qnt_version");
  LOAD(qp_create, "qnt_qparams_create_per_tensor");
  LOAD(qp_destroy, "qnt_qparams_destroy");
  LOAD(t_from, "qnt_tensor_create_from_data");
  LOAD(t_create, "qnt_tensor_create");
  LOAD(t_destroy, "qnt_tensor_destroy");
  LOAD(t_copy, "qnt_tensor_copy_to");
  LOAD(quantize, "qnt_quantize");
  LOAD(abi_check, "qnt_abi_check");
  /* What a program loading qnt with dlopen does first: check the ABI it was built for. */
  if (abi_check(QNT_ABI_VERSION) != QNT_OK || abi_check(QNT_ABI_VERSION + 1) == QNT_OK) {
    fprintf(stderr, "FAIL: qnt_abi_check through dlsym\n");
    return 1;
  }
  if (dlsym(lib, "_ZN3qnt3ref16quantize_integerEffiii") != NULL) {
    fprintf(stderr, "FAIL: an internal C++ symbol is visible\n");
    return 1;
  }
  if (version() != QNT_VERSION_NUMBER) {
    fprintf(stderr, "FAIL: version %u, header says %u\n", version(), (unsigned)QNT_VERSION_NUMBER);
    return 1;
  }
  if (qp_create(QNT_DTYPE_I8, 0.25f, 0, &qp) != QNT_OK ||
      t_from(QNT_DTYPE_F32, shape, 1, NULL, x, sizeof x, &tx) != QNT_OK ||
      t_create(QNT_DTYPE_I8, shape, 1, qp, &tq) != QNT_OK || quantize(NULL, tx, tq) != QNT_OK ||
      t_copy(tq, q, sizeof q) != QNT_OK) {
    fprintf(stderr, "FAIL: a call through dlsym failed\n");
    return 1;
  }
  t_destroy(tq);
  t_destroy(tx);
  qp_destroy(qp); /* destroyed after the tensor that references it, and before: either works */
  if (memcmp(q, want, sizeof q) != 0) {
    fprintf(stderr, "FAIL: got %d %d %d %d\n", q[0], q[1], q[2], q[3]);
    return 1;
  }
  dlclose(lib);
  printf("dlopen: 1 passed, 0 failed\n");
  return 0;
}
