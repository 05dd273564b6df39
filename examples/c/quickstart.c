/* qnt quickstart: what the machine can do, then one weight matrix quantized three ways
 * (int8 per output channel, int4 per block of 32, NF4 per block of 64), dequantized, and
 * compared with the original: signal-to-quantization-noise ratio and bytes saved.
 *
 * Build: cc quickstart.c $(pkg-config --cflags --libs qnt) -lm */
#include <qnt/qnt.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                           \
  do {                                                                        \
    qnt_status st_ = (call);                                                  \
    if (st_ != QNT_OK) {                                                      \
      fprintf(stderr, "%s failed: %s\n  %s\n", #call, qnt_status_string(st_), \
              qnt_last_error_message());                                      \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

enum { ROWS = 256, COLS = 512 };

/* A reproducible weight matrix: Gaussian (Box-Muller over a small LCG), a few outliers. */
static uint64_t lcg_state = 42;
static double uniform01(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(lcg_state >> 11) + 0.5) / 9007199254740992.0;
}
static void fill_weights(float *w, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) {
    const double r = sqrt(-2.0 * log(uniform01())), t = 6.283185307179586 * uniform01();
    w[i] = (float)(0.02 * r * cos(t));
  }
  for (i = 0; i < n; i += 997) w[i] *= 8.0f; /* outliers, as real weights have */
}

static double sqnr_db(const float *ref, const float *got, size_t n) {
  double signal = 0.0, noise = 0.0;
  size_t i;
  for (i = 0; i < n; ++i) {
    const double d = (double)ref[i] - (double)got[i];
    signal += (double)ref[i] * ref[i];
    noise += d * d;
  }
  return noise == 0.0 ? INFINITY : 10.0 * log10(signal / noise);
}

/* Quantizes x with qp, dequantizes, prints one row of the table; takes ownership of qp. */
static void report(const char *label, qnt_context *ctx, const qnt_tensor *x, const float *w,
                   qnt_dtype dtype, qnt_qparams *qp) {
  const int64_t shape[2] = {ROWS, COLS};
  qnt_tensor *q = NULL, *y = NULL;
  size_t qbytes = 0, nparams = 0;
  qnt_scheme scheme;
  float *back = malloc(sizeof(float) * ROWS * COLS);
  size_t param_bytes;
  const size_t f32_bytes = sizeof(float) * ROWS * COLS;
  if (back == NULL) exit(1);
  CHECK(qnt_tensor_create(dtype, shape, 2, qp, &q));
  CHECK(qnt_tensor_create(QNT_DTYPE_F32, shape, 2, NULL, &y));
  CHECK(qnt_quantize(ctx, x, q));
  CHECK(qnt_dequantize(ctx, q, y));
  CHECK(qnt_tensor_copy_to(y, back, sizeof(float) * ROWS * COLS));
  CHECK(qnt_tensor_byte_size(q, &qbytes));
  CHECK(qnt_qparams_scale_count(qp, &nparams));
  CHECK(qnt_qparams_scheme(qp, &scheme));
  /* A float32 scale per group, plus an int32 zero point when the scheme is affine. */
  param_bytes = nparams * (scheme == QNT_SCHEME_AFFINE ? 8 : 4);
  printf("  %-26s %7zu + %5zu bytes  saves %6zu bytes (%5.2fx smaller)  SQNR %6.2f dB\n", label,
         qbytes, param_bytes, f32_bytes - qbytes - param_bytes,
         (double)f32_bytes / (double)(qbytes + param_bytes), sqnr_db(w, back, (size_t)ROWS * COLS));
  qnt_tensor_destroy(q);
  qnt_tensor_destroy(y);
  qnt_qparams_destroy(qp);
  free(back);
}

int main(void) {
  qnt_context *ctx = NULL;
  uint64_t features = 0;
  int32_t logical = 0, physical = 0, threads = 0, cuda = 0, level;
  const int64_t shape[2] = {ROWS, COLS};
  float *w = malloc(sizeof(float) * ROWS * COLS);
  qnt_tensor *x = NULL;
  qnt_qparams *qp = NULL;
  int bit;

  if (w == NULL) return 1;
  printf("qnt %s\n%s", qnt_version_string(), qnt_build_info());

  CHECK(qnt_context_create(&ctx));
  CHECK(qnt_context_cpu_features(ctx, &features));
  CHECK(qnt_context_cpu_count(ctx, &logical, &physical));
  CHECK(qnt_context_num_threads(ctx, &threads));
  CHECK(qnt_context_cuda_device_count(ctx, &cuda));
  printf("\nmachine: %d logical CPUs, %d physical cores, %d threads for ops\n", logical, physical,
         threads);
  printf("  CPU features:");
  for (bit = 0; bit < 32; ++bit)
    if (features & ((uint64_t)1 << bit))
      printf(" %s", qnt_cpu_feature_name((qnt_cpu_feature)(1 << bit)));
  printf("\n  caches:");
  for (level = 1; level <= 3; ++level) {
    size_t bytes = 0;
    CHECK(qnt_context_cache_size(ctx, level, &bytes));
    printf(" L%d %zu KiB", level, bytes / 1024);
  }
  printf("\n  CUDA devices: %d", cuda);
  if (cuda > 0) {
    int32_t major = 0, minor = 0;
    CHECK(qnt_context_cuda_compute_capability(ctx, 0, &major, &minor));
    printf(" (device 0: compute capability %d.%d)", major, minor);
  }

  fill_weights(w, (size_t)ROWS * COLS);
  CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 2, NULL, w, sizeof(float) * ROWS * COLS,
                                    &x));
  printf("\n\nweight matrix [%d, %d] f32: %zu bytes\n", ROWS, COLS, sizeof(float) * ROWS * COLS);

  CHECK(qnt_calibrate_minmax(NULL, x, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS,
                             0, 0, &qp));
  report("int8, per output channel", ctx, x, w, QNT_DTYPE_I8, qp);

  CHECK(qnt_calibrate_minmax(NULL, x, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK,
                             1, 32, &qp));
  report("int4, per block of 32", ctx, x, w, QNT_DTYPE_I4, qp);

  CHECK(qnt_calibrate_minmax(NULL, x, QNT_DTYPE_U4, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_BLOCK, 1,
                             32, &qp));
  report("uint4 affine, block of 32", ctx, x, w, QNT_DTYPE_U4, qp);

  CHECK(qnt_calibrate_codebook(NULL, x, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 1, 64, &qp));
  report("NF4, per block of 64", ctx, x, w, QNT_DTYPE_NF4, qp);

  qnt_tensor_destroy(x);
  qnt_context_destroy(ctx);
  free(w);
  return 0;
}
