/* A two-layer MLP, y = W2 relu(W1 x + b1) + b2, run in float and with its weights quantized:
 * int8 per output channel (dynamic linear: activations quantized at run time, per tensor or per
 * row), int4 per block of 32 and NF4 per block of 64 (weight-only linear). Prints each variant's
 * largest error against float and the size of its weights.
 *
 * Build: cc linear.c $(pkg-config --cflags --libs qnt) -lm */
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

enum { BATCH = 8, IN = 256, HIDDEN = 512, OUT = 64 };

static uint64_t lcg_state = 7;
static double uniform01(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(lcg_state >> 11) + 0.5) / 9007199254740992.0;
}
static float gaussian(double sd) {
  const double r = sqrt(-2.0 * log(uniform01())), t = 6.283185307179586 * uniform01();
  return (float)(sd * r * cos(t));
}
static float *random_floats(size_t n, double sd) {
  float *p = malloc(n * sizeof(float));
  size_t i;
  if (p == NULL) exit(1);
  for (i = 0; i < n; ++i) p[i] = gaussian(sd);
  return p;
}

static qnt_tensor *f32_tensor(const float *data, int64_t rows, int64_t cols) {
  const int64_t shape[2] = {rows, cols};
  qnt_tensor *t = NULL;
  CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 2, NULL, data,
                                    sizeof(float) * (size_t)(rows * cols), &t));
  return t;
}

static qnt_tensor *vector_tensor(const float *data, int64_t n) {
  qnt_tensor *t = NULL;
  CHECK(
      qnt_tensor_create_from_data(QNT_DTYPE_F32, &n, 1, NULL, data, sizeof(float) * (size_t)n, &t));
  return t;
}

/* The float layer: y[m][n] = sum_k x[m][k] w[n][k] + b[n], summed in double. */
static void float_linear(const float *x, const float *w, const float *b, int64_t m_count,
                         int64_t k_count, int64_t n_count, float *y) {
  int64_t m, n, k;
  for (m = 0; m < m_count; ++m)
    for (n = 0; n < n_count; ++n) {
      double s = b[n];
      for (k = 0; k < k_count; ++k) s += (double)x[m * k_count + k] * w[n * k_count + k];
      y[m * n_count + n] = (float)s;
    }
}

static void relu(float *v, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f;
}

/* One quantized weight matrix, and its size: payload plus 4 bytes a scale, 4 a zero point when
 * the scheme is affine. */
typedef struct {
  qnt_tensor *w;
  size_t bytes;
} qweight;

static qweight quantize_weight(const float *w, int64_t rows, int64_t cols, qnt_dtype dtype,
                               qnt_granularity g, int64_t block) {
  const int64_t shape[2] = {rows, cols};
  qnt_tensor *x = f32_tensor(w, rows, cols);
  qnt_qparams *qp = NULL;
  qnt_scheme scheme;
  size_t payload = 0, count = 0;
  qweight out;
  if (dtype == QNT_DTYPE_NF4)
    CHECK(qnt_calibrate_codebook(NULL, x, dtype, g, 1, block, &qp));
  else
    CHECK(qnt_calibrate_minmax(NULL, x, dtype, QNT_SCHEME_SYMMETRIC, g,
                               g == QNT_GRANULARITY_PER_AXIS ? 0 : 1, block, &qp));
  CHECK(qnt_tensor_create(dtype, shape, 2, qp, &out.w));
  CHECK(qnt_quantize(NULL, x, out.w));
  CHECK(qnt_tensor_byte_size(out.w, &payload));
  CHECK(qnt_qparams_scale_count(qp, &count));
  CHECK(qnt_qparams_scheme(qp, &scheme));
  out.bytes = payload + count * (scheme == QNT_SCHEME_AFFINE ? 8 : 4);
  qnt_qparams_destroy(qp);
  qnt_tensor_destroy(x);
  return out;
}

typedef enum { DYNAMIC_PER_TENSOR, DYNAMIC_PER_ROW, WEIGHT_ONLY, WEIGHT_ONLY_INT8_ACT } path;

/* One layer through a prepared operator: the weights are packed once (a real model keeps `op`
 * for every batch it runs), then run on this batch. */
static void layer(qnt_context *ctx, path p, const float *x, int64_t m, int64_t k, qweight w,
                  const float *b, int64_t n, float *y) {
  const int64_t yshape[2] = {m, n};
  qnt_tensor *tx = f32_tensor(x, m, k), *tb = vector_tensor(b, n), *ty = NULL;
  qnt_op_desc *desc = NULL;
  qnt_prepared *op = NULL;
  CHECK(qnt_tensor_create(QNT_DTYPE_F32, yshape, 2, NULL, &ty));
  if (p == WEIGHT_ONLY || p == WEIGHT_ONLY_INT8_ACT) {
    CHECK(qnt_op_desc_create(&desc));
    CHECK(qnt_op_desc_set(desc, QNT_OP_WEIGHT_ONLY_MODE,
                          p == WEIGHT_ONLY ? QNT_WEIGHT_ONLY_F32 : QNT_WEIGHT_ONLY_INT8_ACT));
    CHECK(qnt_prepared_create_linear_weight_only(ctx, w.w, tb, desc, &op));
  } else {
    CHECK(qnt_op_desc_create(&desc));
    CHECK(qnt_op_desc_set(desc, QNT_OP_ACT_QUANT,
                          p == DYNAMIC_PER_ROW ? QNT_ACT_PER_ROW : QNT_ACT_PER_TENSOR));
    CHECK(qnt_prepared_create_linear_dynamic(ctx, w.w, tb, desc, &op));
  }
  CHECK(qnt_prepared_run(ctx, op, tx, ty));
  CHECK(qnt_tensor_copy_to(ty, y, sizeof(float) * (size_t)(m * n)));
  qnt_prepared_destroy(op);
  qnt_op_desc_destroy(desc);
  qnt_tensor_destroy(tx);
  qnt_tensor_destroy(tb);
  qnt_tensor_destroy(ty);
}

int main(void) {
  float *x = random_floats(BATCH * IN, 1.0), *w1 = random_floats((size_t)HIDDEN * IN, 0.06);
  float *b1 = random_floats(HIDDEN, 0.1), *w2 = random_floats((size_t)OUT * HIDDEN, 0.05);
  float *b2 = random_floats(OUT, 0.1);
  float *h = malloc(sizeof(float) * BATCH * HIDDEN), *ref = malloc(sizeof(float) * BATCH * OUT);
  float *y = malloc(sizeof(float) * BATCH * OUT);
  const size_t f32_bytes = sizeof(float) * ((size_t)HIDDEN * IN + (size_t)OUT * HIDDEN);
  qnt_context *ctx = NULL;
  double ref_max = 0.0;
  int i;
  struct {
    const char *label;
    qnt_dtype dtype;
    qnt_granularity g;
    int64_t block;
    path p;
  } variants[] = {
      {"int8/channel, dynamic per tensor", QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0,
       DYNAMIC_PER_TENSOR},
      {"int8/channel, dynamic per row", QNT_DTYPE_I8, QNT_GRANULARITY_PER_AXIS, 0, DYNAMIC_PER_ROW},
      {"int4/block 32, weight-only", QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 32, WEIGHT_ONLY},
      {"NF4/block 64, weight-only", QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 64, WEIGHT_ONLY},
      {"int4/block 32, W4A8", QNT_DTYPE_I4, QNT_GRANULARITY_PER_BLOCK, 32, WEIGHT_ONLY_INT8_ACT},
      {"NF4/block 64, W4A8", QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 64, WEIGHT_ONLY_INT8_ACT},
  };
  if (!h || !ref || !y) return 1;
  CHECK(qnt_context_create(&ctx));

  float_linear(x, w1, b1, BATCH, IN, HIDDEN, h);
  relu(h, (size_t)BATCH * HIDDEN);
  float_linear(h, w2, b2, BATCH, HIDDEN, OUT, ref);
  for (i = 0; i < BATCH * OUT; ++i) ref_max = fmax(ref_max, fabs(ref[i]));
  printf("MLP %d -> %d -> %d, batch %d; float weights %zu bytes; largest |y| %.4f\n\n", IN, HIDDEN,
         OUT, BATCH, f32_bytes, ref_max);

  for (i = 0; i < (int)(sizeof variants / sizeof variants[0]); ++i) {
    qweight q1 =
        quantize_weight(w1, HIDDEN, IN, variants[i].dtype, variants[i].g, variants[i].block);
    qweight q2 =
        quantize_weight(w2, OUT, HIDDEN, variants[i].dtype, variants[i].g, variants[i].block);
    double err = 0.0;
    int j;
    layer(ctx, variants[i].p, x, BATCH, IN, q1, b1, HIDDEN, h);
    relu(h, (size_t)BATCH * HIDDEN);
    layer(ctx, variants[i].p, h, BATCH, HIDDEN, q2, b2, OUT, y);
    for (j = 0; j < BATCH * OUT; ++j) err = fmax(err, fabs((double)y[j] - ref[j]));
    printf("  %-34s max |error| %.5f  weights %7zu bytes (%.2fx smaller)\n", variants[i].label, err,
           q1.bytes + q2.bytes, (double)f32_bytes / (double)(q1.bytes + q2.bytes));
    qnt_tensor_destroy(q1.w);
    qnt_tensor_destroy(q2.w);
  }
  qnt_context_destroy(ctx);
  free(x);
  free(w1);
  free(b1);
  free(w2);
  free(b2);
  free(h);
  free(ref);
  free(y);
  return 0;
}
