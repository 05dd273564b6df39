/* The C API as a C program sees it: only <qnt/qnt.h> and libqnt.so. Every status path, NULL
 * handles and outputs, destroy(NULL), overflowing shapes, short buffers and bad qparams. */
#include <qnt/qnt.h>

#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The conv geometry through the keyed options of a qnt_op_desc. */
static qnt_status desc_strides(qnt_op_desc *d, int64_t h, int64_t w) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_STRIDE_H, h);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_STRIDE_W, w);
}
static qnt_status desc_pads(qnt_op_desc *d, int64_t t, int64_t l, int64_t b, int64_t r) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_PAD_TOP, t);
  if (s == QNT_OK) s = qnt_op_desc_set(d, QNT_OP_PAD_LEFT, l);
  if (s == QNT_OK) s = qnt_op_desc_set(d, QNT_OP_PAD_BOTTOM, b);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_PAD_RIGHT, r);
}
static qnt_status desc_dilations(qnt_op_desc *d, int64_t h, int64_t w) {
  qnt_status s = qnt_op_desc_set(d, QNT_OP_DILATION_H, h);
  return s != QNT_OK ? s : qnt_op_desc_set(d, QNT_OP_DILATION_W, w);
}
static qnt_status desc_groups(qnt_op_desc *d, int64_t g) {
  return qnt_op_desc_set(d, QNT_OP_GROUPS, g);
}

/* The call fails with `want`, says something, and names the function. */
#define EXPECT_FAIL(call, want)                                                    \
  do {                                                                             \
    const qnt_status st_ = (call);                                                 \
    cr_expect_eq(st_, (want), "%s returned %d (%s), expected %d", #call, (int)st_, \
                 qnt_last_error_message(), (int)(want));                           \
    cr_expect(strlen(qnt_last_error_message()) > 0, "%s left no message", #call);  \
  } while (0)
#define EXPECT_OK(call)                                                          \
  do {                                                                           \
    const qnt_status st_ = (call);                                               \
    cr_assert_eq(st_, QNT_OK, "%s failed: %s", #call, qnt_last_error_message()); \
  } while (0)

static const int64_t shape4[1] = {4};

static qnt_qparams *per_tensor(qnt_dtype d, float s, int32_t z) {
  qnt_qparams *qp = NULL;
  EXPECT_OK(qnt_qparams_create_per_tensor(d, s, z, &qp));
  return qp;
}

Test(version, numbers_agree) {
  char want[32];
  cr_expect_eq(qnt_version(), (uint32_t)QNT_VERSION_NUMBER);
  snprintf(want, sizeof want, "%d.%d.%d", QNT_VERSION_MAJOR, QNT_VERSION_MINOR, QNT_VERSION_PATCH);
  cr_expect_str_eq(qnt_version_string(), want);
  cr_expect(strstr(qnt_build_info(), "openmp=") != NULL);
  cr_expect(strstr(qnt_build_info(), "cuda=") != NULL);
  cr_expect(strstr(qnt_build_info(), "cpu_kernels=") != NULL);
}

Test(status, every_code_has_its_own_string) {
  int s;
  for (s = 0; s <= 12; ++s) {
    const char *text = qnt_status_string((qnt_status)s);
    cr_expect(strncmp(text, "QNT_", 4) == 0, "status %d: %s", s, text);
  }
  cr_expect_str_eq(qnt_status_string((qnt_status)13), "unknown qnt_status");
  cr_expect_str_eq(qnt_status_string((qnt_status)-1), "unknown qnt_status");
  cr_expect(strstr(qnt_status_string(QNT_ERR_SHAPE_MISMATCH), "SHAPE") != NULL);
}

Test(status, enum_values_are_pinned) {
  cr_expect_eq(QNT_OK, 0);
  cr_expect_eq(QNT_ERR_INVALID_ARGUMENT, 1);
  cr_expect_eq(QNT_ERR_NULL_POINTER, 2);
  cr_expect_eq(QNT_ERR_OUT_OF_MEMORY, 3);
  cr_expect_eq(QNT_ERR_UNSUPPORTED, 4);
  cr_expect_eq(QNT_ERR_SHAPE_MISMATCH, 5);
  cr_expect_eq(QNT_ERR_DTYPE_MISMATCH, 6);
  cr_expect_eq(QNT_ERR_BUFFER_TOO_SMALL, 7);
  cr_expect_eq(QNT_ERR_OVERFLOW, 8);
  cr_expect_eq(QNT_ERR_INVALID_QPARAMS, 9);
  cr_expect_eq(QNT_ERR_NO_DEVICE, 10);
  cr_expect_eq(QNT_ERR_INTERNAL, 11);
  cr_expect_eq(QNT_ERR_CORRUPT_DATA, 12);
  cr_expect_eq(QNT_CALIB_MINMAX, 1);
  cr_expect_eq(QNT_CALIB_ADAPTIVE, 6);
  cr_expect_eq(QNT_CALIB_OPT_BINS, 3);
  cr_expect_eq(QNT_ACT_PER_ROW, 2);
  cr_expect_eq(QNT_ABI_VERSION, 1);
  cr_expect_eq(QNT_ISA_NATIVE, 0);
  cr_expect_eq(QNT_ISA_REFERENCE, 1);
  cr_expect_eq(QNT_ISA_AVX2, 2);
  cr_expect_eq(QNT_ISA_AVX512, 3);
  cr_expect_eq(QNT_ISA_AVX512_VNNI, 4);
  cr_expect_eq(QNT_ISA_NEON, 16);
  cr_expect_eq(QNT_ISA_NEON_DOTPROD, 17);
  cr_expect_eq(QNT_DEVICE_CPU, 1);
  cr_expect_eq(QNT_DEVICE_CUDA, 2);
  cr_expect_eq(QNT_OP_STRIDE_H, 1);
  cr_expect_eq(QNT_OP_STRIDE_W, 2);
  cr_expect_eq(QNT_OP_PAD_TOP, 3);
  cr_expect_eq(QNT_OP_PAD_LEFT, 4);
  cr_expect_eq(QNT_OP_PAD_BOTTOM, 5);
  cr_expect_eq(QNT_OP_PAD_RIGHT, 6);
  cr_expect_eq(QNT_OP_DILATION_H, 7);
  cr_expect_eq(QNT_OP_DILATION_W, 8);
  cr_expect_eq(QNT_OP_GROUPS, 9);
  cr_expect_eq(QNT_OP_FUSE_RELU, 10);
  cr_expect_eq(QNT_OP_ACT_QUANT, 11);
  cr_expect_eq(QNT_PREPARED_MATMUL, 1);
  cr_expect_eq(QNT_PREPARED_LINEAR_DYNAMIC, 2);
  cr_expect_eq(QNT_PREPARED_LINEAR_STATIC, 3);
  cr_expect_eq(QNT_PREPARED_LINEAR_WEIGHT_ONLY, 4);
  cr_expect_eq(QNT_PREPARED_CONV2D, 5);
  /* every type at the boundary is 32 bits wide, whatever the compiler does with enums */
  cr_expect_eq(sizeof(qnt_status), 4);
  cr_expect_eq(sizeof(qnt_dtype), 4);
  cr_expect_eq(sizeof(qnt_isa), 4);
  cr_expect_eq(sizeof(qnt_op_option), 4);
  cr_expect_eq(QNT_DTYPE_F32, 1);
  cr_expect_eq(QNT_DTYPE_I32, 2);
  cr_expect_eq(QNT_DTYPE_I8, 3);
  cr_expect_eq(QNT_DTYPE_U8, 4);
  cr_expect_eq(QNT_DTYPE_I16, 5);
  cr_expect_eq(QNT_DTYPE_U16, 6);
  cr_expect_eq(QNT_DTYPE_I4, 7);
  cr_expect_eq(QNT_DTYPE_U4, 8);
  cr_expect_eq(QNT_DTYPE_NF4, 9);
  cr_expect_eq(QNT_DTYPE_BINARY, 10);
  cr_expect_eq(QNT_DTYPE_TERNARY, 11);
  cr_expect_eq(QNT_GRANULARITY_PER_TENSOR, 1);
  cr_expect_eq(QNT_GRANULARITY_PER_AXIS, 2);
  cr_expect_eq(QNT_GRANULARITY_PER_BLOCK, 3);
  cr_expect_eq(QNT_SCHEME_SYMMETRIC, 1);
  cr_expect_eq(QNT_SCHEME_AFFINE, 2);
  cr_expect_eq(QNT_CPU_SSE41, 1);
  cr_expect_eq(QNT_CPU_AVXVNNI, 1 << 7);
  cr_expect_eq(QNT_CPU_NEON, 1 << 16);
}

Test(errors, message_is_per_thread_and_names_the_call) {
  qnt_qparams *qp = NULL;
  cr_expect_eq(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, -1.0f, 0, &qp), QNT_ERR_INVALID_QPARAMS);
  cr_expect(strstr(qnt_last_error_message(), "qnt_qparams_create_per_tensor") != NULL, "%s",
            qnt_last_error_message());
  cr_expect(strstr(qnt_last_error_message(), "scale") != NULL);
  cr_expect_null(qp);
}

Test(destroy, null_is_allowed) {
  qnt_context_destroy(NULL);
  qnt_qparams_destroy(NULL);
  qnt_tensor_destroy(NULL);
}

Test(dtype, queries) {
  float cb[16];
  int32_t lo = 0, hi = 0;
  cr_expect_eq(qnt_dtype_bits(QNT_DTYPE_TERNARY), 2);
  cr_expect_eq(qnt_dtype_bits(QNT_DTYPE_BINARY), 1);
  cr_expect_eq(qnt_dtype_bits((qnt_dtype)0), 0);
  cr_expect_str_eq(qnt_dtype_name(QNT_DTYPE_NF4), "nf4");
  cr_expect_str_eq(qnt_dtype_name((qnt_dtype)1000), "invalid");
  EXPECT_OK(qnt_dtype_range(QNT_DTYPE_U4, &lo, &hi));
  cr_expect(lo == 0 && hi == 15);
  EXPECT_FAIL(qnt_dtype_range(QNT_DTYPE_U4, NULL, &hi), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_dtype_range((qnt_dtype)55, &lo, &hi), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_nf4_codebook(cb, 15), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_FAIL(qnt_nf4_codebook(NULL, 16), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_nf4_codebook(cb, 16));
  cr_expect(cb[0] == -1.0f && cb[7] == 0.0f && cb[15] == 1.0f);
}

Test(context, settings_and_machine) {
  qnt_context *ctx = NULL;
  int32_t n = 0, logical = 0, physical = -1, count = -1, major = 0, minor = 0;
  uint64_t f = 0;
  size_t bytes = 0;
  EXPECT_FAIL(qnt_context_create(NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_context_create(&ctx));
  EXPECT_OK(qnt_context_num_threads(ctx, &n));
  cr_expect(n >= 1);
  EXPECT_OK(qnt_context_set_num_threads(ctx, 3));
  EXPECT_OK(qnt_context_num_threads(ctx, &n));
  cr_expect(n == 3 || n == 1); /* 1 without OpenMP */
  EXPECT_FAIL(qnt_context_set_num_threads(ctx, -1), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_context_set_num_threads(ctx, 1025), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_context_set_num_threads(NULL, 2), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_context_set_num_threads(ctx, 0));
  EXPECT_OK(qnt_context_cpu_features(ctx, &f));
  EXPECT_FAIL(qnt_context_cpu_features(NULL, &f), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_context_cpu_features(ctx, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_context_cpu_count(ctx, &logical, &physical));
  cr_expect(logical >= 1 && physical >= 0 && physical <= logical);
  EXPECT_OK(qnt_context_cache_size(ctx, 1, &bytes));
  EXPECT_FAIL(qnt_context_cache_size(ctx, 0, &bytes), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_context_cache_size(ctx, 4, &bytes), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(qnt_context_cuda_device_count(ctx, &count));
  cr_expect(count >= 0);
  EXPECT_FAIL(qnt_context_cuda_compute_capability(ctx, count, &major, &minor), QNT_ERR_NO_DEVICE);
  EXPECT_FAIL(qnt_context_cuda_compute_capability(ctx, -1, &major, &minor), QNT_ERR_NO_DEVICE);
  EXPECT_FAIL(qnt_context_cuda_compute_capability(ctx, 0, NULL, &minor), QNT_ERR_NULL_POINTER);
  cr_expect_str_eq(qnt_cpu_feature_name(QNT_CPU_AVX512VNNI), "avx512vnni");
  cr_expect_str_eq(qnt_cpu_feature_name((qnt_cpu_feature)3), "invalid");
  qnt_context_destroy(ctx);
}

Test(qparams, bad_values_are_refused) {
  qnt_qparams *qp = NULL;
  const float scales[3] = {0.5f, 0.25f, 0.125f};
  const float bad_scales[3] = {0.5f, NAN, 0.125f};
  const float zero_scale[3] = {0.5f, 0.0f, 0.125f};
  const int32_t zps[3] = {0, 255, 3};
  const int32_t bad_zps[3] = {0, 256, 3};
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.0f, 0, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, -2.0f, 0, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, NAN, 0, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, INFINITY, 0, &qp),
              QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 1.0f, 200, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_U8, 1.0f, -1, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I4, 1.0f, 8, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_NF4, 1.0f, 3, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_F32, 1.0f, 0, &qp), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_tensor((qnt_dtype)0, 1.0f, 0, &qp), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 1.0f, 0, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 3, bad_scales, zps, &qp),
              QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 3, zero_scale, zps, &qp),
              QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 3, scales, bad_zps, &qp),
              QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 0, scales, zps, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 3, NULL, zps, &qp),
              QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 9, 3, scales, zps, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_qparams_create_per_block(QNT_DTYPE_U8, 0, 0, 3, scales, zps, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_qparams_create_per_block(QNT_DTYPE_U8, 0, -32, 3, scales, zps, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  cr_expect_null(qp, "a failed create leaves *out untouched");
}

Test(qparams, getters) {
  qnt_qparams *qp = NULL;
  const float scales[3] = {0.5f, 0.25f, 0.125f};
  const int32_t zps[3] = {0, 255, 3};
  float s[3];
  int32_t z[3];
  size_t n = 0;
  int64_t axis = 0, block = 0;
  qnt_dtype d;
  qnt_granularity g;
  qnt_scheme sc;
  EXPECT_OK(qnt_qparams_create_per_block(QNT_DTYPE_U8, -1, 16, 3, scales, zps, &qp));
  EXPECT_OK(qnt_qparams_dtype(qp, &d));
  cr_expect_eq(d, QNT_DTYPE_U8);
  EXPECT_OK(qnt_qparams_granularity(qp, &g));
  cr_expect_eq(g, QNT_GRANULARITY_PER_BLOCK);
  EXPECT_OK(qnt_qparams_scheme(qp, &sc));
  cr_expect_eq(sc, QNT_SCHEME_AFFINE);
  EXPECT_OK(qnt_qparams_axis(qp, &axis));
  cr_expect_eq(axis, -1);
  EXPECT_OK(qnt_qparams_block_size(qp, &block));
  cr_expect_eq(block, 16);
  EXPECT_OK(qnt_qparams_scale_count(qp, &n));
  cr_expect_eq(n, 3);
  EXPECT_FAIL(qnt_qparams_scales(qp, s, 2), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_FAIL(qnt_qparams_zero_points(qp, z, 2), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_OK(qnt_qparams_scales(qp, s, 3));
  EXPECT_OK(qnt_qparams_zero_points(qp, z, 3));
  cr_expect(memcmp(s, scales, sizeof s) == 0);
  cr_expect(memcmp(z, zps, sizeof z) == 0);
  EXPECT_FAIL(qnt_qparams_dtype(NULL, &d), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_qparams_dtype(qp, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_qparams_scales(NULL, s, 3), QNT_ERR_NULL_POINTER);
  qnt_qparams_destroy(qp);

  EXPECT_OK(qnt_qparams_create_per_axis(QNT_DTYPE_U8, 0, 3, scales, NULL, &qp));
  EXPECT_OK(qnt_qparams_zero_points(qp, z, 3));
  cr_expect(z[0] == 128 && z[1] == 128 && z[2] == 128, "symmetric u8 zero point is 128");
  EXPECT_OK(qnt_qparams_scheme(qp, &sc));
  cr_expect_eq(sc, QNT_SCHEME_SYMMETRIC);
  qnt_qparams_destroy(qp);
}

Test(tensor, create_and_getters) {
  const int64_t shape[3] = {2, 3, 5};
  qnt_qparams *qp = per_tensor(QNT_DTYPE_I4, 0.5f, 0);
  qnt_qparams *got = NULL;
  qnt_tensor *t = NULL;
  int64_t dims[3] = {0, 0, 0};
  size_t rank = 0, n = 0, bytes = 0;
  qnt_dtype d;
  void *data = NULL;
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I4, shape, 3, qp, &t));
  qnt_qparams_destroy(qp); /* the tensor holds its own reference */
  EXPECT_OK(qnt_tensor_dtype(t, &d));
  cr_expect_eq(d, QNT_DTYPE_I4);
  EXPECT_OK(qnt_tensor_rank(t, &rank));
  cr_expect_eq(rank, 3);
  EXPECT_FAIL(qnt_tensor_shape(t, dims, 2), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_OK(qnt_tensor_shape(t, dims, 3));
  cr_expect(dims[0] == 2 && dims[1] == 3 && dims[2] == 5);
  EXPECT_OK(qnt_tensor_element_count(t, &n));
  cr_expect_eq(n, 30);
  EXPECT_OK(qnt_tensor_byte_size(t, &bytes));
  cr_expect_eq(bytes, 15);
  EXPECT_OK(qnt_tensor_data(t, &data));
  cr_expect_not_null(data);
  EXPECT_OK(qnt_tensor_qparams(t, &got));
  cr_assert_not_null(got);
  EXPECT_OK(qnt_qparams_dtype(got, &d));
  cr_expect_eq(d, QNT_DTYPE_I4);
  qnt_tensor_destroy(t); /* got stays valid after the tensor is gone */
  EXPECT_OK(qnt_qparams_dtype(got, &d));
  qnt_qparams_destroy(got);

  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, NULL, 0, NULL, &t)); /* a scalar */
  EXPECT_OK(qnt_tensor_element_count(t, &n));
  cr_expect_eq(n, 1);
  EXPECT_OK(qnt_tensor_shape(t, NULL, 0));
  EXPECT_OK(qnt_tensor_qparams(t, &got));
  cr_expect_null(got);
  qnt_tensor_destroy(t);
}

Test(tensor, bad_shapes) {
  const int64_t negative[2] = {3, -1};
  const int64_t huge[3] = {INT64_C(1) << 31, INT64_C(1) << 31, 4};
  const int64_t max2[2] = {INT64_MAX, INT64_MAX};
  const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int64_t empty[2] = {0, 7};
  qnt_tensor *t = NULL;
  size_t n = 99;
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, negative, 2, NULL, &t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, huge, 3, NULL, &t), QNT_ERR_OVERFLOW);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_I8, max2, 2, NULL, &t), QNT_ERR_OVERFLOW);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, nine, 9, NULL, &t), QNT_ERR_UNSUPPORTED);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, NULL, 2, NULL, &t), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_tensor_create((qnt_dtype)99, shape4, 1, NULL, &t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, shape4, 1, NULL, NULL), QNT_ERR_NULL_POINTER);
  cr_expect_null(t);
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, empty, 2, NULL, &t));
  EXPECT_OK(qnt_tensor_element_count(t, &n));
  cr_expect_eq(n, 0);
  EXPECT_OK(qnt_tensor_byte_size(t, &n));
  cr_expect_eq(n, 0);
  qnt_tensor_destroy(t);
}

Test(tensor, out_of_memory_is_an_error) {
  /* 2^40 floats (4 TiB): a valid size that no allocator here can provide. */
  const int64_t shape[1] = {INT64_C(1) << 40};
  qnt_tensor *t = NULL;
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, shape, 1, NULL, &t), QNT_ERR_OUT_OF_MEMORY);
  cr_expect_null(t);
}

Test(tensor, qparams_must_fit) {
  const int64_t shape[2] = {3, 4};
  const float s3[3] = {1, 1, 1};
  qnt_qparams *axis1 = NULL, *i8 = per_tensor(QNT_DTYPE_I8, 1.0f, 0);
  qnt_tensor *t = NULL;
  EXPECT_OK(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 1, 3, s3, NULL, &axis1));
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_I8, shape, 2, axis1, &t), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_U8, shape, 2, i8, &t), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_tensor_create(QNT_DTYPE_F32, shape, 2, i8, &t), QNT_ERR_INVALID_ARGUMENT);
  cr_expect_null(t);
  qnt_qparams_destroy(axis1);
  qnt_qparams_destroy(i8);
}

Test(tensor, data_buffers) {
  const float x[4] = {1, 2, 3, 4};
  float out[4] = {0, 0, 0, 0};
  char unaligned[20];
  qnt_tensor *t = NULL;
  EXPECT_FAIL(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, 15, &t),
              QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_FAIL(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, NULL, 16, &t),
              QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_tensor_wrap(QNT_DTYPE_F32, shape4, 1, NULL, out, 8, &t),
              QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_FAIL(qnt_tensor_wrap(QNT_DTYPE_F32, shape4, 1, NULL, unaligned + 1, 19, &t),
              QNT_ERR_INVALID_ARGUMENT);
  cr_expect_null(t);
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, sizeof x, &t));
  EXPECT_FAIL(qnt_tensor_copy_to(t, out, 15), QNT_ERR_BUFFER_TOO_SMALL);
  cr_expect(out[0] == 0.0f, "a failed copy writes nothing");
  EXPECT_FAIL(qnt_tensor_copy_to(t, NULL, 16), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_tensor_copy_to(NULL, out, 16), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_tensor_copy_to(t, out, sizeof out));
  cr_expect(memcmp(out, x, sizeof x) == 0);
  qnt_tensor_destroy(t);
}

Test(tensor, wrap_borrows_memory) {
  float mem[4] = {0.5f, -0.5f, 1.5f, 2.5f};
  int8_t q[4] = {9, 9, 9, 9};
  qnt_qparams *qp = per_tensor(QNT_DTYPE_I8, 1.0f, 0);
  qnt_tensor *x = NULL, *y = NULL;
  void *data = NULL;
  EXPECT_OK(qnt_tensor_wrap(QNT_DTYPE_F32, shape4, 1, NULL, mem, sizeof mem, &x));
  EXPECT_OK(qnt_tensor_wrap(QNT_DTYPE_I8, shape4, 1, qp, q, sizeof q, &y));
  EXPECT_OK(qnt_tensor_data(x, &data));
  cr_expect_eq(data, (void *)mem);
  mem[0] = 3.5f; /* the tensor sees the caller's memory */
  EXPECT_OK(qnt_quantize(NULL, x, y));
  cr_expect(q[0] == 4 && q[1] == 0 && q[2] == 2 && q[3] == 2, "%d %d %d %d", q[0], q[1], q[2],
            q[3]);
  qnt_tensor_destroy(x);
  qnt_tensor_destroy(y);
  qnt_qparams_destroy(qp);
  cr_expect(mem[1] == -0.5f, "destroying a wrapped tensor leaves the memory alone");
}

Test(ops, quantize_roundtrip_every_integer_dtype) {
  static const qnt_dtype dtypes[] = {QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I16, QNT_DTYPE_U16,
                                     QNT_DTYPE_I4, QNT_DTYPE_U4, QNT_DTYPE_I32};
  const float x[4] = {-1.0f, 0.0f, 1.0f, 2.5f};
  size_t k;
  for (k = 0; k < sizeof dtypes / sizeof dtypes[0]; ++k) {
    int32_t lo, hi, zp;
    qnt_qparams *qp;
    qnt_tensor *tx = NULL, *tq = NULL, *ty = NULL;
    float y[4];
    EXPECT_OK(qnt_dtype_range(dtypes[k], &lo, &hi));
    zp = lo < 0 ? 0 : (hi >= 255 ? 100 : 3);
    qp = per_tensor(dtypes[k], 0.5f, zp);
    EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, sizeof x, &tx));
    EXPECT_OK(qnt_tensor_create(dtypes[k], shape4, 1, qp, &tq));
    EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, shape4, 1, NULL, &ty));
    EXPECT_OK(qnt_quantize(NULL, tx, tq));
    EXPECT_OK(qnt_dequantize(NULL, tq, ty));
    EXPECT_OK(qnt_tensor_copy_to(ty, y, sizeof y));
    /* -1 and 2.5 are representable with scale 0.5 where the range allows */
    cr_expect(y[1] == 0.0f && y[2] == 1.0f, "%s: %g %g", qnt_dtype_name(dtypes[k]), y[1], y[2]);
    if (dtypes[k] != QNT_DTYPE_U4 || zp >= 2)
      cr_expect(y[0] == -1.0f, "%s", qnt_dtype_name(dtypes[k]));
    qnt_tensor_destroy(tx);
    qnt_tensor_destroy(tq);
    qnt_tensor_destroy(ty);
    qnt_qparams_destroy(qp);
  }
}

Test(ops, failures_leave_the_output_untouched) {
  const int64_t shape5[1] = {5};
  const float x[4] = {1, 2, 3, 4};
  int8_t q[5] = {7, 7, 7, 7, 7};
  qnt_qparams *qp = per_tensor(QNT_DTYPE_I8, 1.0f, 0);
  qnt_tensor *tx = NULL, *ty = NULL, *f = NULL, *raw = NULL;
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, sizeof x, &tx));
  EXPECT_OK(qnt_tensor_wrap(QNT_DTYPE_I8, shape5, 1, qp, q, sizeof q, &ty));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, shape4, 1, NULL, &f));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I8, shape4, 1, NULL, &raw));
  EXPECT_FAIL(qnt_quantize(NULL, tx, ty), QNT_ERR_SHAPE_MISMATCH);
  cr_expect(q[0] == 7 && q[4] == 7);
  EXPECT_FAIL(qnt_quantize(NULL, tx, raw), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_quantize(NULL, tx, f), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_dequantize(NULL, raw, f), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_dequantize(NULL, ty, f), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_dequantize(NULL, tx, f), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_requantize(NULL, ty, tx), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_requantize(NULL, ty, ty), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_quantize(NULL, NULL, ty), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_quantize(NULL, tx, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_dequantize(NULL, NULL, f), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_requantize(NULL, NULL, ty), QNT_ERR_NULL_POINTER);
  qnt_tensor_destroy(tx);
  qnt_tensor_destroy(ty);
  qnt_tensor_destroy(f);
  qnt_tensor_destroy(raw);
  qnt_qparams_destroy(qp);
}

Test(ops, nan_and_infinities) {
  const float x[4] = {NAN, INFINITY, -INFINITY, 0.0f};
  uint8_t q[4];
  qnt_qparams *qp = per_tensor(QNT_DTYPE_U8, 0.1f, 17);
  qnt_tensor *tx = NULL, *tq = NULL;
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, sizeof x, &tx));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_U8, shape4, 1, qp, &tq));
  EXPECT_OK(qnt_quantize(NULL, tx, tq));
  EXPECT_OK(qnt_tensor_copy_to(tq, q, sizeof q));
  cr_expect(q[0] == 17 && q[1] == 255 && q[2] == 0 && q[3] == 17, "%d %d %d %d", q[0], q[1], q[2],
            q[3]);
  qnt_tensor_destroy(tx);
  qnt_tensor_destroy(tq);
  qnt_qparams_destroy(qp);
}

Test(calibrate, bad_input) {
  const float x[4] = {1, 2, 3, 4};
  qnt_tensor *tx = NULL;
  qnt_qparams *qp = NULL;
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, shape4, 1, NULL, x, sizeof x, &tx));
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, NULL, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
              QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, tx, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_TENSOR, 0, 0, NULL),
              QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, tx, QNT_DTYPE_BINARY, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
              QNT_ERR_UNSUPPORTED);
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, tx, QNT_DTYPE_I8, (qnt_scheme)7,
                                   QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, tx, QNT_DTYPE_I8, QNT_SCHEME_AFFINE, (qnt_granularity)0, 0,
                                   0, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_calibrate_minmax(NULL, tx, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                   QNT_GRANULARITY_PER_AXIS, 1, 0, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_calibrate_minmax_range(NULL, tx, QNT_DTYPE_U8, QNT_SCHEME_AFFINE,
                                         QNT_GRANULARITY_PER_TENSOR, 0, 0, 10, 5, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_calibrate_codebook(NULL, tx, QNT_DTYPE_U8, QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(
      qnt_calibrate_codebook(NULL, tx, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 0, -4, &qp),
      QNT_ERR_INVALID_ARGUMENT);
  cr_expect_null(qp);
  EXPECT_OK(qnt_calibrate_codebook(NULL, tx, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_BLOCK, 0, 3, &qp));
  qnt_qparams_destroy(qp);
  qnt_tensor_destroy(tx);
}

/* ---- quantized operators through the C API ---- */

static qnt_tensor *tensor_u8(const int64_t *shape, size_t rank, qnt_qparams *qp) {
  qnt_tensor *t = NULL;
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_U8, shape, rank, qp, &t));
  return t;
}

Test(ops, qmatmul_modes_and_errors) {
  const int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sy[2] = {2, 2}, sbad[2] = {4, 2}, s1[1] = {3};
  const uint8_t a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
  int32_t y32[4];
  qnt_qparams *qa = per_tensor(QNT_DTYPE_U8, 0.5f, 1), *qb = per_tensor(QNT_DTYPE_U8, 0.5f, 0);
  qnt_qparams *qy = per_tensor(QNT_DTYPE_U8, 1.0f, 10);
  qnt_tensor *ta = NULL, *tb = NULL, *ti = NULL, *tq = NULL, *tbad = NULL, *vec = NULL;
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_U8, sa, 2, qa, a, 6, &ta));
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_U8, sb, 2, qb, b, 6, &tb));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I32, sy, 2, NULL, &ti));
  tq = tensor_u8(sy, 2, qy);
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I32, sbad, 2, NULL, &tbad));
  vec = tensor_u8(s1, 1, NULL);
  EXPECT_OK(qnt_qmatmul(NULL, ta, tb, NULL, ti));
  EXPECT_OK(qnt_tensor_copy_to(ti, y32, sizeof y32));
  /* (a - 1) = [0 1 2; 3 4 5]; b = [1 0; 0 1; 1 1] */
  cr_expect(y32[0] == 2 && y32[1] == 3 && y32[2] == 8 && y32[3] == 9, "%d %d %d %d", y32[0], y32[1],
            y32[2], y32[3]);
  EXPECT_OK(qnt_qmatmul(NULL, ta, tb, NULL, tq));
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, tb, NULL, tbad), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qmatmul(NULL, vec, tb, NULL, ti), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, ta, NULL, ti), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, tb, ta, ti), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qmatmul(NULL, ti, tb, NULL, ti), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, tb, NULL, vec), QNT_ERR_INVALID_QPARAMS); /* u8 y, no qparams */
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, NULL, NULL, ti), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_qmatmul(NULL, ta, tb, NULL, NULL), QNT_ERR_NULL_POINTER);
  qnt_tensor_destroy(ta);
  qnt_tensor_destroy(tb);
  qnt_tensor_destroy(ti);
  qnt_tensor_destroy(tq);
  qnt_tensor_destroy(tbad);
  qnt_tensor_destroy(vec);
  qnt_qparams_destroy(qa);
  qnt_qparams_destroy(qb);
  qnt_qparams_destroy(qy);
}

Test(ops, dynamic_quantize_linear) {
  const float x[4] = {-1.0f, 0.0f, 0.5f, 2.0f}, bad[2] = {1.0f, INFINITY};
  const int64_t s4[1] = {4}, s2[1] = {2};
  qnt_tensor *tx = NULL, *tb = NULL, *y = NULL;
  qnt_qparams *qp = NULL;
  float scale = 0;
  int32_t zp = -1;
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, s4, 1, NULL, x, sizeof x, &tx));
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, s2, 1, NULL, bad, sizeof bad, &tb));
  EXPECT_OK(qnt_dynamic_quantize_linear(NULL, tx, &y));
  EXPECT_OK(qnt_tensor_qparams(y, &qp));
  EXPECT_OK(qnt_qparams_scales(qp, &scale, 1));
  EXPECT_OK(qnt_qparams_zero_points(qp, &zp, 1));
  cr_expect(scale == 3.0f / 255.0f && zp == 85, "scale %g zero point %d", scale, zp);
  qnt_qparams_destroy(qp);
  qnt_tensor_destroy(y);
  y = NULL;
  EXPECT_FAIL(qnt_dynamic_quantize_linear(NULL, tb, &y), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_dynamic_quantize_linear(NULL, tx, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_dynamic_quantize_linear(NULL, NULL, &y), QNT_ERR_NULL_POINTER);
  cr_expect_null(y);
  qnt_tensor_destroy(tx);
  qnt_tensor_destroy(tb);
}

Test(ops, linear_layers_reject_bad_input) {
  const int64_t sx[2] = {2, 4}, sw[2] = {3, 4}, sy[2] = {2, 3}, sbad[2] = {2, 5}, sbias[1] = {3};
  qnt_qparams *qw = per_tensor(QNT_DTYPE_I8, 0.1f, 0), *q4 = per_tensor(QNT_DTYPE_I4, 0.1f, 0);
  qnt_qparams *q32 = per_tensor(QNT_DTYPE_I32, 0.1f, 0);
  qnt_tensor *x = NULL, *w = NULL, *w4 = NULL, *w32 = NULL, *y = NULL, *ybad = NULL, *bias = NULL;
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, sx, 2, NULL, &x));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I8, sw, 2, qw, &w));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I4, sw, 2, q4, &w4));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I32, sw, 2, q32, &w32));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, sy, 2, NULL, &y));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, sbad, 2, NULL, &ybad));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_F32, sbias, 1, NULL, &bias));
  qnt_op_desc *row = NULL, *relu = NULL;
  EXPECT_OK(qnt_op_desc_create(&row));
  EXPECT_OK(qnt_op_desc_create(&relu));
  EXPECT_OK(qnt_op_desc_set(row, QNT_OP_ACT_QUANT, QNT_ACT_PER_ROW));
  EXPECT_OK(qnt_op_desc_set(relu, QNT_OP_STRIDE_H, 2));
  EXPECT_FAIL(qnt_op_desc_set(row, QNT_OP_ACT_QUANT, 9), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(qnt_linear_dynamic(NULL, x, w, bias, NULL, y));
  EXPECT_OK(qnt_linear_dynamic(NULL, x, w, NULL, row, y));
  /* an option the op does not take is refused, never ignored */
  EXPECT_FAIL(qnt_linear_dynamic(NULL, x, w, bias, relu, y), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_linear_dynamic(NULL, x, w, bias, row, ybad), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_linear_dynamic(NULL, x, w4, bias, row, y), QNT_ERR_UNSUPPORTED);
  EXPECT_FAIL(qnt_linear_dynamic(NULL, w, w, bias, row, y), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_linear_dynamic(NULL, x, w, x, row, y), QNT_ERR_SHAPE_MISMATCH);
  qnt_op_desc_destroy(row);
  qnt_op_desc_destroy(relu);
  EXPECT_OK(qnt_linear_weight_only(NULL, x, w4, bias, y));
  EXPECT_OK(qnt_linear_weight_only(NULL, x, w, NULL, y));
  EXPECT_FAIL(qnt_linear_weight_only(NULL, x, w32, bias, y), QNT_ERR_UNSUPPORTED);
  EXPECT_FAIL(qnt_linear_weight_only(NULL, x, x, bias, y), QNT_ERR_DTYPE_MISMATCH);
  EXPECT_FAIL(qnt_linear_weight_only(NULL, x, w4, bias, ybad), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_linear_weight_only(NULL, x, w4, bias, NULL), QNT_ERR_NULL_POINTER);
  qnt_tensor_destroy(x);
  qnt_tensor_destroy(w);
  qnt_tensor_destroy(w4);
  qnt_tensor_destroy(w32);
  qnt_tensor_destroy(y);
  qnt_tensor_destroy(ybad);
  qnt_tensor_destroy(bias);
  qnt_qparams_destroy(qw);
  qnt_qparams_destroy(q4);
  qnt_qparams_destroy(q32);
}

Test(ops, conv2d_descriptor_and_errors) {
  const int64_t sx[4] = {1, 2, 5, 5}, sw[4] = {4, 1, 3, 3}, sy[4] = {1, 4, 3, 3};
  const int64_t sbad[4] = {1, 4, 5, 5};
  int64_t out[4] = {0, 0, 0, 0};
  qnt_op_desc *d = NULL;
  qnt_tensor *x = NULL, *w = NULL, *y = NULL, *ybad = NULL;
  qnt_op_desc_destroy(NULL);
  EXPECT_FAIL(qnt_op_desc_create(NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_op_desc_create(&d));
  EXPECT_FAIL(desc_groups(NULL, 2), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(desc_strides(d, 1, -2), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(desc_dilations(d, 0, 1), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(desc_pads(d, 0, 0, INT64_MAX, 0), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(desc_groups(d, 2));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_U8, sx, 4, NULL, &x));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I8, sw, 4, NULL, &w));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I32, sy, 4, NULL, &y));
  EXPECT_OK(qnt_tensor_create(QNT_DTYPE_I32, sbad, 4, NULL, &ybad));
  EXPECT_OK(qnt_conv2d_output_shape(x, w, d, out, 4));
  cr_expect(out[0] == 1 && out[1] == 4 && out[2] == 3 && out[3] == 3);
  EXPECT_OK(qnt_qconv2d(NULL, x, w, NULL, d, y));
  EXPECT_FAIL(qnt_qconv2d(NULL, x, w, NULL, d, ybad), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qconv2d(NULL, x, w, NULL, NULL, y), QNT_ERR_SHAPE_MISMATCH); /* 1 group */
  EXPECT_FAIL(qnt_qconv2d(NULL, NULL, w, NULL, d, y), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_conv2d_output_shape(x, w, d, out, 3), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_FAIL(qnt_op_desc_set(d, 99, 1), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_op_desc_set(d, QNT_OP_FUSE_RELU, 2), QNT_ERR_INVALID_ARGUMENT);
  {
    int64_t v = 0;
    EXPECT_OK(qnt_op_desc_get(d, QNT_OP_GROUPS, &v));
    cr_expect_eq(v, 2);
    EXPECT_OK(qnt_op_desc_get(d, QNT_OP_STRIDE_W, &v));
    cr_expect_eq(v, 1);
    EXPECT_FAIL(qnt_op_desc_get(d, 0, &v), QNT_ERR_INVALID_ARGUMENT);
  }
  EXPECT_FAIL(qnt_qconv2d(NULL, w, x, NULL, d, y), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_conv2d_output_shape(x, w, d, NULL, 4), QNT_ERR_NULL_POINTER);
  EXPECT_OK(desc_groups(d, 3)); /* 2 channels do not split into 3 groups */
  EXPECT_FAIL(qnt_qconv2d(NULL, x, w, NULL, d, y), QNT_ERR_SHAPE_MISMATCH);
  qnt_op_desc_destroy(d);
  qnt_tensor_destroy(x);
  qnt_tensor_destroy(w);
  qnt_tensor_destroy(y);
  qnt_tensor_destroy(ybad);
}

Test(ops, add_and_relu_errors) {
  const int64_t s3[1] = {3}, s4[1] = {4};
  qnt_qparams *qa = per_tensor(QNT_DTYPE_U8, 0.1f, 3), *qb = per_tensor(QNT_DTYPE_U8, 0.2f, 3);
  qnt_tensor *a = tensor_u8(s3, 1, qa), *b = tensor_u8(s3, 1, qb), *c = tensor_u8(s4, 1, qa);
  qnt_tensor *y = tensor_u8(s3, 1, qa), *raw = tensor_u8(s3, 1, NULL);
  qnt_op_desc *relu = NULL, *stride = NULL;
  EXPECT_OK(qnt_op_desc_create(&relu));
  EXPECT_OK(qnt_op_desc_create(&stride));
  EXPECT_OK(qnt_op_desc_set(relu, QNT_OP_FUSE_RELU, 1));
  EXPECT_OK(qnt_op_desc_set(stride, QNT_OP_STRIDE_H, 2));
  EXPECT_OK(qnt_qadd(NULL, a, b, NULL, y));
  EXPECT_OK(qnt_qadd(NULL, a, b, relu, y));
  EXPECT_FAIL(qnt_qadd(NULL, a, b, stride, y), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_FAIL(qnt_qadd(NULL, a, c, NULL, y), QNT_ERR_UNSUPPORTED);
  EXPECT_FAIL(qnt_qadd(NULL, a, raw, NULL, y), QNT_ERR_INVALID_QPARAMS);
  EXPECT_FAIL(qnt_qadd(NULL, a, b, NULL, a), QNT_ERR_INVALID_ARGUMENT); /* y shares a's storage */
  qnt_op_desc_destroy(relu);
  qnt_op_desc_destroy(stride);
  EXPECT_OK(qnt_qrelu(NULL, a, y));
  EXPECT_FAIL(qnt_qrelu(NULL, a, b), QNT_ERR_INVALID_QPARAMS); /* different qparams */
  EXPECT_FAIL(qnt_qrelu(NULL, a, c), QNT_ERR_SHAPE_MISMATCH);
  EXPECT_FAIL(qnt_qrelu_clamp(NULL, a, INFINITY, y), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(qnt_qrelu_clamp(NULL, a, 6.0f, y));
  qnt_tensor_destroy(a);
  qnt_tensor_destroy(b);
  qnt_tensor_destroy(c);
  qnt_tensor_destroy(y);
  qnt_tensor_destroy(raw);
  qnt_qparams_destroy(qa);
  qnt_qparams_destroy(qb);
}

/* ---- calibrators and error reports through the C API ---- */

Test(calibrator, lifecycle_and_bad_input) {
  const float x[6] = {-1.0f, 0.5f, 2.0f, NAN, INFINITY, 0.25f};
  const int64_t s6[1] = {6};
  qnt_calibrator *c = NULL, *d = NULL, *e = NULL;
  qnt_tensor *t = NULL;
  qnt_qparams *qp = NULL;
  uint64_t finite = 0, nan = 0, inf = 0;
  qnt_calib_method chosen;
  size_t size = 0;
  unsigned char *buf;
  qnt_calibrator_destroy(NULL);
  EXPECT_FAIL(qnt_calibrator_create(QNT_CALIB_ENTROPY, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                    QNT_GRANULARITY_PER_TENSOR, 0, NULL),
              QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_calibrator_create((qnt_calib_method)77, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                    QNT_GRANULARITY_PER_TENSOR, 0, &c),
              QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(qnt_calibrator_create(QNT_CALIB_ADAPTIVE, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                  QNT_GRANULARITY_PER_TENSOR, 0, &c));
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, s6, 1, NULL, x, sizeof x, &t));
  EXPECT_FAIL(qnt_calibrator_observe(NULL, NULL, t), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_calibrator_observe(NULL, c, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_calibrator_observe(NULL, c, t));
  EXPECT_OK(qnt_calibrator_counts(c, &finite, &nan, &inf));
  cr_expect(finite == 4 && nan == 1 && inf == 1);
  EXPECT_FAIL(qnt_calibrator_counts(c, NULL, &nan, &inf), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_calibrator_compute(NULL, c, &qp));
  EXPECT_FAIL(qnt_calibrator_compute(NULL, c, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_calibrator_chosen_method(c, &chosen));
  cr_expect(chosen >= QNT_CALIB_MINMAX && chosen <= QNT_CALIB_MSE);
  EXPECT_FAIL(qnt_calibrator_serialize(c, NULL, 0, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_calibrator_serialize(c, NULL, 0, &size));
  buf = malloc(size);
  cr_assert_not_null(buf);
  EXPECT_FAIL(qnt_calibrator_serialize(c, buf, size - 1, &size), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_OK(qnt_calibrator_serialize(c, buf, size, &size));
  EXPECT_OK(qnt_calibrator_deserialize(buf, size, &d));
  EXPECT_FAIL(qnt_calibrator_deserialize(buf, size / 2, &e), QNT_ERR_CORRUPT_DATA);
  EXPECT_FAIL(qnt_calibrator_deserialize(NULL, size, &e), QNT_ERR_NULL_POINTER);
  cr_expect_null(e);
  EXPECT_OK(qnt_calibrator_merge(c, d));
  EXPECT_FAIL(qnt_calibrator_merge(c, NULL), QNT_ERR_NULL_POINTER);
  EXPECT_OK(qnt_calibrator_counts(c, &finite, &nan, &inf));
  cr_expect(finite == 8 && nan == 2 && inf == 2, "merged counts %llu %llu %llu",
            (unsigned long long)finite, (unsigned long long)nan, (unsigned long long)inf);
  EXPECT_OK(qnt_calibrator_reset(c));
  EXPECT_FAIL(qnt_calibrator_reset(NULL), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_calibrator_set_option(NULL, QNT_CALIB_OPT_BINS, 256), QNT_ERR_NULL_POINTER);
  free(buf);
  qnt_qparams_destroy(qp);
  qnt_calibrator_destroy(c);
  qnt_calibrator_destroy(d);
  qnt_tensor_destroy(t);
}

Test(error_report, init_and_compute) {
  const float x[4] = {0.5f, 1.0f, 10.0f, -0.25f};
  const int64_t s4[1] = {4};
  qnt_error_report r;
  qnt_tensor *t = NULL;
  qnt_qparams *qp = per_tensor(QNT_DTYPE_I8, 0.25f, 0), *other = NULL;
  const float s2[2] = {1, 1};
  memset(&r, 0, sizeof r);
  EXPECT_OK(qnt_tensor_create_from_data(QNT_DTYPE_F32, s4, 1, NULL, x, sizeof x, &t));
  EXPECT_OK(qnt_error_report_compute(NULL, t, qp, &r, sizeof r));
  cr_expect(r.mse == 0.0 && r.count == 4 && isinf(r.sqnr_db));
  EXPECT_FAIL(qnt_error_report_compute(NULL, t, qp, NULL, sizeof r), QNT_ERR_NULL_POINTER);
  EXPECT_FAIL(qnt_error_report_compute(NULL, t, qp, &r, 7), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_OK(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 0, 2, s2, NULL, &other));
  EXPECT_FAIL(qnt_error_report_compute(NULL, t, other, &r, sizeof r), QNT_ERR_SHAPE_MISMATCH);
  qnt_qparams_destroy(other);
  qnt_qparams_destroy(qp);
  qnt_tensor_destroy(t);
}

/* ---- random bad input: thousands of calls with arbitrary shapes, dtypes, enums and qparams;
 * every call must return a known status (the sanitizer build checks memory as well) ---- */

static uint64_t fuzz_state = 0x9e3779b97f4a7c15ull;
static uint64_t fuzz_next(void) {
  fuzz_state ^= fuzz_state << 13;
  fuzz_state ^= fuzz_state >> 7;
  fuzz_state ^= fuzz_state << 17;
  return fuzz_state;
}
static int64_t fuzz_pick(const int64_t *choices, size_t n) { return choices[fuzz_next() % n]; }

/* The call is evaluated once; its status must be a known one, and never an internal error. */
#define FUZZ_STATUS_OK(call)                                                           \
  do {                                                                                 \
    const qnt_status fs_ = (call);                                                     \
    cr_assert(fs_ >= QNT_OK && fs_ <= QNT_ERR_CORRUPT_DATA && fs_ != QNT_ERR_INTERNAL, \
              "%s: status %d: %s", #call, (int)fs_, qnt_last_error_message());         \
  } while (0)

Test(robustness, random_calls_never_crash) {
  static const int64_t dims[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, 33, -1};
  static const int64_t dtypes[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  static const int64_t axes[] = {-3, -1, 0, 1, 2, 3, 9};
  static const float scales[] = {0.5f, 1e-30f, 3e30f, 0.0f, -1.0f, NAN, INFINITY, 0.1f};
  static const int64_t zps[] = {0, 1, -1, 7, 128, 255, -129, 70000};
  int iter;
  for (iter = 0; iter < 3000; ++iter) {
    int64_t sa[4], sb[4];
    const size_t ra = (size_t)(fuzz_next() % 5), rb = (size_t)(fuzz_next() % 5);
    const qnt_dtype da = (qnt_dtype)fuzz_pick(dtypes, 13), db = (qnt_dtype)fuzz_pick(dtypes, 13);
    qnt_qparams *qa = NULL, *qb = NULL;
    qnt_tensor *a = NULL, *b = NULL, *y = NULL, *x = NULL;
    qnt_op_desc *d = NULL;
    qnt_calibrator *c = NULL;
    size_t k;
    float sv[64];
    int32_t zv[64];
    for (k = 0; k < 4; ++k) {
      sa[k] = fuzz_pick(dims, 11);
      sb[k] = fuzz_pick(dims, 11);
    }
    for (k = 0; k < 64; ++k) {
      sv[k] = scales[fuzz_next() % 8];
      zv[k] = (int32_t)fuzz_pick(zps, 8);
    }
    FUZZ_STATUS_OK(qnt_qparams_create_per_tensor(da, sv[0], zv[0], &qa));
    FUZZ_STATUS_OK(qnt_qparams_create_per_axis(db, fuzz_pick(axes, 7), (size_t)(fuzz_next() % 9),
                                               sv, zv, &qb));
    FUZZ_STATUS_OK(qnt_tensor_create(da, sa, ra, fuzz_next() % 2 ? qa : NULL, &a));
    FUZZ_STATUS_OK(qnt_tensor_create(db, sb, rb, fuzz_next() % 2 ? qb : NULL, &b));
    FUZZ_STATUS_OK(
        qnt_tensor_create((qnt_dtype)fuzz_pick(dtypes, 13), sa, ra, fuzz_next() % 2 ? qa : qb, &y));
    FUZZ_STATUS_OK(qnt_tensor_create(QNT_DTYPE_F32, sb, rb, NULL, &x));
    FUZZ_STATUS_OK(qnt_quantize(NULL, x, a));
    FUZZ_STATUS_OK(qnt_dequantize(NULL, b, x));
    FUZZ_STATUS_OK(qnt_requantize(NULL, a, b));
    FUZZ_STATUS_OK(qnt_qmatmul(NULL, a, b, fuzz_next() % 3 ? NULL : y, y));
    if (qnt_op_desc_create(&d) == QNT_OK) {
      FUZZ_STATUS_OK(qnt_op_desc_set(d, (qnt_op_option)(fuzz_next() % 13), fuzz_pick(dims, 11)));
      FUZZ_STATUS_OK(qnt_linear_dynamic(NULL, x, a, NULL, d, y));
      FUZZ_STATUS_OK(qnt_qadd(NULL, a, b, d, y));
      qnt_op_desc_destroy(d);
      d = NULL;
    }
    FUZZ_STATUS_OK(qnt_linear_weight_only(NULL, x, b, NULL, y));
    FUZZ_STATUS_OK(qnt_qrelu(NULL, a, y));
    FUZZ_STATUS_OK(qnt_qrelu_clamp(NULL, b, sv[1], y));
    {
      qnt_qparams *calibrated = NULL;
      FUZZ_STATUS_OK(qnt_calibrate_minmax(NULL, x, da, (qnt_scheme)(fuzz_next() % 4),
                                          (qnt_granularity)(fuzz_next() % 5), fuzz_pick(axes, 7),
                                          fuzz_pick(dims, 11), &calibrated));
      qnt_qparams_destroy(calibrated);
    }
    if (qnt_op_desc_create(&d) == QNT_OK) {
      FUZZ_STATUS_OK(desc_strides(d, fuzz_pick(dims, 11), fuzz_pick(dims, 11)));
      FUZZ_STATUS_OK(desc_pads(d, fuzz_pick(dims, 11), fuzz_pick(dims, 11), fuzz_pick(dims, 11),
                               fuzz_pick(dims, 11)));
      FUZZ_STATUS_OK(desc_groups(d, fuzz_pick(dims, 11)));
      FUZZ_STATUS_OK(qnt_qconv2d(NULL, a, b, NULL, d, y));
      qnt_op_desc_destroy(d);
    }
    if (qnt_calibrator_create((qnt_calib_method)(fuzz_next() % 8), da, QNT_SCHEME_AFFINE,
                              (qnt_granularity)(fuzz_next() % 4), fuzz_pick(axes, 7),
                              &c) == QNT_OK) {
      qnt_qparams *out = NULL;
      FUZZ_STATUS_OK(qnt_calibrator_observe(NULL, c, x));
      FUZZ_STATUS_OK(qnt_calibrator_observe(NULL, c, a));
      FUZZ_STATUS_OK(qnt_calibrator_compute(NULL, c, &out));
      qnt_qparams_destroy(out);
      qnt_calibrator_destroy(c);
    }
    qnt_tensor_destroy(a);
    qnt_tensor_destroy(b);
    qnt_tensor_destroy(y);
    qnt_tensor_destroy(x);
    qnt_qparams_destroy(qa);
    qnt_qparams_destroy(qb);
  }
}

/* qnt_live_handles counts every handle from its creation to its destruction, failed creations
 * included (they leave nothing alive). Criterion runs each test in a process of its own, so no
 * other test's handles are counted here. */
static uint64_t live(void) {
  uint64_t n = 0;
  cr_assert_eq(qnt_live_handles(&n), QNT_OK);
  return n;
}

Test(live_handles, count_every_handle_until_it_is_destroyed) {
  const uint64_t base = live();
  qnt_context *ctx = NULL;
  qnt_qparams *qp = NULL, *ref = NULL, *bad = NULL;
  qnt_tensor *w = NULL, *t = NULL;
  qnt_op_desc *d = NULL;
  qnt_prepared *op = NULL;
  qnt_calibrator *c = NULL;
  const int64_t shape[2] = {2, 4};
  cr_assert_eq(qnt_context_create(&ctx), QNT_OK);
  cr_assert_eq(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.5f, 0, &qp), QNT_OK);
  cr_assert_eq(qnt_tensor_create(QNT_DTYPE_I8, shape, 2, qp, &w), QNT_OK);
  cr_assert_eq(qnt_tensor_qparams(w, &ref), QNT_OK); /* a new reference is a handle */
  cr_assert_eq(qnt_op_desc_create(&d), QNT_OK);
  cr_assert_eq(qnt_prepared_create_linear_dynamic(ctx, w, NULL, NULL, &op), QNT_OK);
  cr_assert_eq(qnt_calibrator_create(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                     QNT_GRANULARITY_PER_TENSOR, 0, &c),
               QNT_OK);
  cr_expect_eq(live(), base + 7);
  /* failures create nothing */
  cr_expect_eq(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, -1.0f, 0, &bad), QNT_ERR_INVALID_QPARAMS);
  cr_expect_eq(qnt_tensor_create(QNT_DTYPE_U8, shape, 2, qp, &t), QNT_ERR_DTYPE_MISMATCH);
  cr_expect_eq(live(), base + 7);
  qnt_qparams_destroy(qp); /* the tensor still holds the parameters, but this handle is gone */
  cr_expect_eq(live(), base + 6);
  qnt_tensor_destroy(w);
  qnt_qparams_destroy(ref);
  qnt_op_desc_destroy(d);
  qnt_prepared_destroy(op);
  qnt_calibrator_destroy(c);
  qnt_context_destroy(ctx);
  cr_expect_eq(live(), base);
  cr_expect_eq(qnt_live_handles(NULL), QNT_ERR_NULL_POINTER);
}
