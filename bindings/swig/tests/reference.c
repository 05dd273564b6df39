/* The C API's results on fixed inputs, for the Java and C# tests to compare with bit for bit.
 * Writes to OUTDIR:
 *   x.bin        the f32 input [37, 131] (random, with NaN, infinities, signed zeros, ties)
 *   cases.txt    one line per quantize case: "index dtype scheme granularity axis block codebook"
 *   q<i>.bin     the quantized bytes of case i; back<i>.bin its dequantized f32
 *   w.bin, wx.bin, bias.bin: a [24, 160] f32 weight, a [3, 160] input, a [24] bias
 *   lin<mode>.bin  the prepared weight-only linear's output ([3, 24] f32) with w as int4 per
 *                  block of 32 (min-max symmetric), mode 0 (f32), 1 (int8 activations) and 3
 *                  (block-dot)
 * usage: reference OUTDIR */
#include <qnt/qnt.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    qnt_status s_ = (call);                                                             \
    if (s_ != QNT_OK) {                                                                 \
      fprintf(stderr, "%s: %s\n", #call, qnt_last_error_message());                     \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static unsigned long long state = 7;
static float unit(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(state >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

static void write_file(const char *dir, const char *name, const void *data, size_t bytes) {
  char path[4096];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "wb");
  if (f == NULL || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
}

static void write_tensor(const char *dir, const char *name, const qnt_tensor *t) {
  size_t bytes = 0;
  void *buf;
  CHECK(qnt_tensor_byte_size(t, &bytes));
  buf = malloc(bytes ? bytes : 1);
  CHECK(qnt_tensor_copy_to(t, buf, bytes));
  write_file(dir, name, buf, bytes);
  free(buf);
}

int main(int argc, char **argv) {
  enum { ROWS = 37, COLS = 131, N = 24, K = 160, M = 3 };
  static const float specials[] = {0.0f / 0.0f, 1.0f / 0.0f, -1.0f / 0.0f, -0.0f, 0.25f, -0.75f, 1e30f};
  static const struct { qnt_dtype dtype; qnt_scheme scheme; qnt_granularity g; int64_t axis, block; int codebook; } cases[] = {
      {QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_TENSOR, 0, 0, 0},
      {QNT_DTYPE_U8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_AXIS, 0, 0, 0},
      {QNT_DTYPE_I16, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS, 1, 0, 0},
      {QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK, 1, 32, 0},
      {QNT_DTYPE_U4, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_BLOCK, 1, 64, 0},
      {QNT_DTYPE_NF4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK, 1, 64, 1},
      {QNT_DTYPE_TERNARY, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_AXIS, 0, 0, 1},
      {QNT_DTYPE_LOG4, QNT_SCHEME_LOG2, QNT_GRANULARITY_PER_BLOCK, 1, 32, 1},
      {QNT_DTYPE_LOG8, QNT_SCHEME_LOG2, QNT_GRANULARITY_PER_AXIS, 0, 0, 1},
  };
  const int64_t shape[2] = {ROWS, COLS}, wshape[2] = {N, K}, xshape[2] = {M, K}, yshape[2] = {M, N},
                bshape[1] = {N};
  static float x[ROWS * COLS], w[N * K], wx[M * K], bias[N];
  qnt_tensor *xt = NULL;
  FILE *manifest;
  char path[4096], name[64];
  size_t i;
  if (argc != 2) {
    fprintf(stderr, "usage: reference OUTDIR\n");
    return 2;
  }
  for (i = 0; i < ROWS * COLS; ++i) x[i] = (i % 7 == 3) ? specials[(i / 7) % 7] : 3.0f * unit();
  write_file(argv[1], "x.bin", x, sizeof x);
  CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 2, NULL, x, sizeof x, &xt));
  snprintf(path, sizeof path, "%s/cases.txt", argv[1]);
  manifest = fopen(path, "w");
  if (manifest == NULL) return 1;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    qnt_qparams *qp = NULL;
    qnt_tensor *q = NULL, *back = NULL;
    if (cases[i].codebook)
      CHECK(qnt_calibrate_codebook(NULL, xt, cases[i].dtype, cases[i].g, cases[i].axis, cases[i].block, &qp));
    else
      CHECK(qnt_calibrate_minmax(NULL, xt, cases[i].dtype, cases[i].scheme, cases[i].g, cases[i].axis,
                                 cases[i].block, &qp));
    CHECK(qnt_tensor_create(cases[i].dtype, shape, 2, qp, &q));
    CHECK(qnt_tensor_create(QNT_DTYPE_F32, shape, 2, NULL, &back));
    CHECK(qnt_quantize(NULL, xt, q));
    CHECK(qnt_dequantize(NULL, q, back));
    snprintf(name, sizeof name, "q%zu.bin", i);
    write_tensor(argv[1], name, q);
    snprintf(name, sizeof name, "back%zu.bin", i);
    write_tensor(argv[1], name, back);
    fprintf(manifest, "%zu %d %d %d %lld %lld %d\n", i, (int)cases[i].dtype, (int)cases[i].scheme,
            (int)cases[i].g, (long long)cases[i].axis, (long long)cases[i].block, cases[i].codebook);
    qnt_qparams_destroy(qp);
    qnt_tensor_destroy(q);
    qnt_tensor_destroy(back);
  }
  fclose(manifest);

  for (i = 0; i < N * K; ++i) w[i] = 0.1f * unit();
  for (i = 0; i < M * K; ++i) wx[i] = unit();
  for (i = 0; i < N; ++i) bias[i] = unit();
  write_file(argv[1], "w.bin", w, sizeof w);
  write_file(argv[1], "wx.bin", wx, sizeof wx);
  write_file(argv[1], "bias.bin", bias, sizeof bias);
  {
    qnt_tensor *wt = NULL, *wq = NULL, *xq = NULL, *bt = NULL;
    qnt_qparams *wqp = NULL;
    int mode;
    CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, wshape, 2, NULL, w, sizeof w, &wt));
    CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, xshape, 2, NULL, wx, sizeof wx, &xq));
    CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, bshape, 1, NULL, bias, sizeof bias, &bt));
    CHECK(qnt_calibrate_minmax(NULL, wt, QNT_DTYPE_I4, QNT_SCHEME_SYMMETRIC, QNT_GRANULARITY_PER_BLOCK,
                               1, 32, &wqp));
    CHECK(qnt_tensor_create(QNT_DTYPE_I4, wshape, 2, wqp, &wq));
    CHECK(qnt_quantize(NULL, wt, wq));
    for (mode = 0; mode <= 3; mode += mode == 1 ? 2 : 1) {  /* 0, 1, 3 */
      qnt_op_desc *d = NULL;
      qnt_prepared *op = NULL;
      qnt_tensor *y = NULL;
      CHECK(qnt_op_desc_create(&d));
      CHECK(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, mode));
      CHECK(qnt_prepared_create_linear_weight_only(NULL, wq, bt, d, &op));
      CHECK(qnt_tensor_create(QNT_DTYPE_F32, yshape, 2, NULL, &y));
      CHECK(qnt_prepared_run(NULL, op, xq, y));
      snprintf(name, sizeof name, "lin%d.bin", mode);
      write_tensor(argv[1], name, y);
      qnt_tensor_destroy(y);
      qnt_prepared_destroy(op);
      qnt_op_desc_destroy(d);
    }
    qnt_tensor_destroy(wt);
    qnt_tensor_destroy(wq);
    qnt_tensor_destroy(xq);
    qnt_tensor_destroy(bt);
    qnt_qparams_destroy(wqp);
  }
  qnt_tensor_destroy(xt);
  return 0;
}
