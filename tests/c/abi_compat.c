/* The ABI as callers in other build configurations see it. Compiled with -fshort-enums (C
 * enums as small as their values allow) and run against the shared library:
 *  - every type that crosses the boundary keeps its width, so an output parameter is written
 *    exactly where the caller expects it and no byte beyond;
 *  - a caller built against an older, shorter qnt_error_report, or a newer, longer one, gets
 *    only the fields it has, and the library writes nothing past its size;
 *  - QNT_ABI_CHECK() accepts this library.
 * Plain C with its own counters (no test framework: one compiled with -fshort-enums would
 * disagree with its own library about its enums). */
#include <qnt/qnt.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;
#define CHECK(cond)                                                                          \
  do {                                                                                       \
    if (cond) {                                                                              \
      ++passed;                                                                              \
    } else {                                                                                 \
      ++failed;                                                                              \
      fprintf(stderr, "FAIL line %d: %s (%s)\n", __LINE__, #cond, qnt_last_error_message()); \
    }                                                                                        \
  } while (0)

/* Proves the flag is in effect: with -fshort-enums this enum is one byte. */
enum probe { PROBE_ONE = 1 };
typedef char short_enums_in_effect[sizeof(enum probe) == 1 ? 1 : -1];

/* What the library wrote into an output parameter surrounded by canaries. */
struct guarded_i32 {
  unsigned char before[4];
  int32_t value;
  unsigned char after[4];
};

static int canaries_intact(const unsigned char *p, size_t n) {
  size_t i;
  for (i = 0; i < n; ++i)
    if (p[i] != 0xA5) return 0;
  return 1;
}

/* A caller built against a release whose report had two fields. */
struct old_report {
  double mse;
  double sqnr_db;
};
/* A caller built against a later release that added a field. */
struct new_report {
  qnt_error_report known;
  double added_later;
};

int main(void) {
  const int64_t shape[1] = {4};
  const float x[4] = {0.5f, 1.0f, 10.0f, -0.25f};
  qnt_qparams *qp = NULL;
  qnt_tensor *t = NULL;
  struct guarded_i32 g;
  (void)sizeof(short_enums_in_effect);

  CHECK(sizeof(qnt_status) == 4 && sizeof(qnt_dtype) == 4 && sizeof(qnt_scheme) == 4 &&
        sizeof(qnt_granularity) == 4 && sizeof(qnt_calib_method) == 4 &&
        sizeof(qnt_calib_option) == 4 && sizeof(qnt_act_quant) == 4 && sizeof(qnt_isa) == 4 &&
        sizeof(qnt_op_option) == 4 && sizeof(qnt_device_type) == 4 &&
        sizeof(qnt_prepared_kind) == 4 && sizeof(qnt_cpu_feature) == 4);
  CHECK(QNT_ABI_CHECK() == QNT_OK);
  CHECK(qnt_abi_version() == QNT_ABI_VERSION);

  CHECK(qnt_qparams_create_per_tensor(QNT_DTYPE_U4, 0.25f, 3, &qp) == QNT_OK);
  /* Getters write exactly 4 bytes: the canaries on both sides survive. */
  memset(&g, 0xA5, sizeof g);
  CHECK(qnt_qparams_dtype(qp, (qnt_dtype *)&g.value) == QNT_OK);
  CHECK(g.value == QNT_DTYPE_U4 && canaries_intact(g.before, 4) && canaries_intact(g.after, 4));
  memset(&g, 0xA5, sizeof g);
  CHECK(qnt_qparams_granularity(qp, (qnt_granularity *)&g.value) == QNT_OK);
  CHECK(g.value == QNT_GRANULARITY_PER_TENSOR && canaries_intact(g.after, 4));
  memset(&g, 0xA5, sizeof g);
  CHECK(qnt_qparams_scheme(qp, (qnt_scheme *)&g.value) == QNT_OK);
  CHECK(g.value == QNT_SCHEME_AFFINE && canaries_intact(g.after, 4));
  {
    /* Adjacent one-byte enum-typed locals, as a short-enums caller would lay them out. */
    struct {
      qnt_dtype dt;
      enum probe neighbour[4];
    } s;
    memset(&s, 0xA5, sizeof s);
    CHECK(qnt_qparams_dtype(qp, &s.dt) == QNT_OK);
    CHECK(s.dt == QNT_DTYPE_U4 && canaries_intact((const unsigned char *)s.neighbour, 4));
  }
  qnt_qparams_destroy(qp);
  qp = NULL;

  /* Error reports across struct versions. */
  CHECK(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.05f, 0, &qp) == QNT_OK);
  CHECK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape, 1, NULL, x, sizeof x, &t) == QNT_OK);
  {
    qnt_error_report full;
    struct {
      struct old_report r;
      unsigned char after[16];
    } old;
    struct new_report newer;
    memset(&full, 0, sizeof full);
    CHECK(qnt_error_report_compute(NULL, t, qp, &full, sizeof full) == QNT_OK);
    CHECK(full.count == 4 && full.saturated_fraction == 0.25 && full.max_abs_error > 3.6);
    memset(&old, 0xA5, sizeof old);
    CHECK(qnt_error_report_compute(NULL, t, qp, (qnt_error_report *)&old.r, sizeof old.r) ==
          QNT_OK);
    CHECK(old.r.mse == full.mse && old.r.sqnr_db == full.sqnr_db);
    CHECK(canaries_intact(old.after, sizeof old.after));
    newer.added_later = 42.0;
    CHECK(qnt_error_report_compute(NULL, t, qp, &newer.known, sizeof newer) == QNT_OK);
    CHECK(newer.known.count == 4 && newer.known.mse == full.mse && newer.added_later == 42.0);
    CHECK(qnt_error_report_compute(NULL, t, qp, &full, 4) == QNT_ERR_INVALID_ARGUMENT);
  }
  qnt_tensor_destroy(t);
  qnt_qparams_destroy(qp);
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
