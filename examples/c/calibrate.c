/* Calibrates a heavy-tailed activation tensor with every method, in batches, and prints a table
 * of scale, zero point and SQNR (on all the data) for int8 and int4. Shows merge too: two
 * calibrators fed half the batches each give the same qparams as one fed all of them.
 *
 * Build: cc calibrate.c $(pkg-config --cflags --libs qnt) -lm */
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

enum { BATCHES = 8, BATCH = 1 << 15 };

static uint64_t lcg_state = 2026;
static double uniform01(void) {
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return ((double)(lcg_state >> 11) + 0.5) / 9007199254740992.0;
}

/* Activations after a GELU-like layer: Laplace with a rare large outlier, and a ReLU-ish skew. */
static float activation(void) {
  double v = -log(uniform01()) * (uniform01() < 0.5 ? -1.0 : 1.0);
  if (uniform01() < 0.0005) v *= 30.0;
  return (float)(v > 0 ? v : 0.2 * v);
}

static const char *method_name(qnt_calib_method m) {
  switch (m) {
    case QNT_CALIB_MINMAX:
      return "min-max";
    case QNT_CALIB_MOVING_AVERAGE:
      return "moving average";
    case QNT_CALIB_PERCENTILE:
      return "percentile 99.99";
    case QNT_CALIB_ENTROPY:
      return "entropy (KL)";
    case QNT_CALIB_MSE:
      return "MSE";
    case QNT_CALIB_ADAPTIVE:
      return "adaptive";
  }
  return "?";
}

int main(void) {
  const int64_t shape[1] = {BATCH};
  const int64_t all_shape[1] = {(int64_t)BATCHES * BATCH};
  float *data = malloc(sizeof(float) * BATCHES * BATCH);
  qnt_tensor *batch[BATCHES], *all = NULL;
  qnt_dtype dtypes[2] = {QNT_DTYPE_I8, QNT_DTYPE_I4};
  int b, m, d;
  if (data == NULL) return 1;
  for (b = 0; b < BATCHES * BATCH; ++b) data[b] = activation();
  for (b = 0; b < BATCHES; ++b)
    CHECK(qnt_tensor_wrap(QNT_DTYPE_F32, shape, 1, NULL, data + (size_t)b * BATCH,
                          sizeof(float) * BATCH, &batch[b]));
  CHECK(qnt_tensor_wrap(QNT_DTYPE_F32, all_shape, 1, NULL, data, sizeof(float) * BATCHES * BATCH,
                        &all));
  printf("%d batches of %d heavy-tailed activations, affine scheme\n", BATCHES, BATCH);
  for (d = 0; d < 2; ++d) {
    printf("\n%s                 scale   zero point   SQNR (dB)   saturated\n",
           qnt_dtype_name(dtypes[d]));
    for (m = QNT_CALIB_MINMAX; m <= QNT_CALIB_ADAPTIVE; ++m) {
      qnt_calibrator *c = NULL;
      qnt_qparams *qp = NULL;
      qnt_error_report r;
      qnt_calib_method chosen;
      float scale;
      int32_t zp;
      CHECK(qnt_calibrator_create((qnt_calib_method)m, dtypes[d], QNT_SCHEME_AFFINE,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c));
      for (b = 0; b < BATCHES; ++b) CHECK(qnt_calibrator_observe(NULL, c, batch[b]));
      CHECK(qnt_calibrator_compute(NULL, c, &qp));
      CHECK(qnt_calibrator_chosen_method(c, &chosen));
      CHECK(qnt_qparams_scales(qp, &scale, 1));
      CHECK(qnt_qparams_zero_points(qp, &zp, 1));
      CHECK(qnt_error_report_compute(NULL, all, qp, &r, sizeof r));
      printf("  %-18s %10.6f %8d %13.2f %10.5f%%", method_name((qnt_calib_method)m), scale, zp,
             r.sqnr_db, 100.0 * r.saturated_fraction);
      if (m == QNT_CALIB_ADAPTIVE) printf("   (kept: %s)", method_name(chosen));
      printf("\n");
      qnt_qparams_destroy(qp);
      qnt_calibrator_destroy(c);
    }
  }

  { /* two shards, merged, against one pass */
    qnt_calibrator *one = NULL, *left = NULL, *right = NULL;
    qnt_qparams *a = NULL, *m2 = NULL;
    float sa, sm;
    int32_t za, zm;
    CHECK(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                QNT_GRANULARITY_PER_TENSOR, 0, &one));
    CHECK(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                QNT_GRANULARITY_PER_TENSOR, 0, &left));
    CHECK(qnt_calibrator_create(QNT_CALIB_MSE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                QNT_GRANULARITY_PER_TENSOR, 0, &right));
    for (b = 0; b < BATCHES; ++b) {
      CHECK(qnt_calibrator_observe(NULL, one, batch[b]));
      CHECK(qnt_calibrator_observe(NULL, b % 2 ? right : left, batch[b]));
    }
    CHECK(qnt_calibrator_merge(left, right));
    CHECK(qnt_calibrator_compute(NULL, one, &a));
    CHECK(qnt_calibrator_compute(NULL, left, &m2));
    CHECK(qnt_qparams_scales(a, &sa, 1));
    CHECK(qnt_qparams_scales(m2, &sm, 1));
    CHECK(qnt_qparams_zero_points(a, &za, 1));
    CHECK(qnt_qparams_zero_points(m2, &zm, 1));
    printf(
        "\nMSE, one pass: scale %.9g zero point %d; two shards merged: scale %.9g zero point "
        "%d (%s)\n",
        sa, za, sm, zm, sa == sm && za == zm ? "identical" : "DIFFERENT");
    qnt_qparams_destroy(a);
    qnt_qparams_destroy(m2);
    qnt_calibrator_destroy(one);
    qnt_calibrator_destroy(left);
    qnt_calibrator_destroy(right);
  }
  for (b = 0; b < BATCHES; ++b) qnt_tensor_destroy(batch[b]);
  qnt_tensor_destroy(all);
  free(data);
  return 0;
}
