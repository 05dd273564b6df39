// f16 and bf16 (the conversion rules against independent oracles, and the ops that take them
// against their float32 forms), device tensors on a machine without a device (the errors), and
// the core's device plumbing over the stand-in module (tests/c/standin_cuda_module.c, in a
// process of its own: StandinDevice.*), all through the public ABI.
#include "helpers.hpp"
#include "kernels/common/scalar.hpp"

#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <limits>
#include <random>

#include "hw/cuda_module.h"

using namespace qnt_test;
namespace rules = qnt::rules;

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// binary16 -> double from its fields, with no shared code.
double f16_value(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  if (e == 31) v = m == 0 ? INFINITY : NAN;
  return s ? -v : v;
}

// The nearest binary16 of a finite float by search over all finite ones (ties to the even
// significand), the overflow rule of IEEE (>= 65520 rounds to infinity).
uint16_t f16_oracle(float f) {
  if (std::isnan(f)) return std::signbit(f) ? 0xFE00 : 0x7E00;
  const double x = f;
  const double ax = std::fabs(x);
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (ax >= 65520.0) return sign | 0x7C00;
  uint16_t best = 0;
  double bd = INFINITY;
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double d = std::fabs(f16_value(static_cast<uint16_t>(h)) - ax);
    if (d < bd || (d == bd && (h & 1) == 0)) {
      bd = d;
      best = static_cast<uint16_t>(h);
    }
  }
  return sign | best;
}

uint16_t bf16_oracle(float f) {
  if (std::isnan(f)) return std::signbit(f) ? 0xFFC0 : 0x7FC0;
  const uint32_t u = float_to_bits(f);
  if (std::isinf(f)) return static_cast<uint16_t>(u >> 16);
  const uint32_t lo = u & 0xFFFF0000u, hi = lo + 0x10000u;
  const double dl = std::fabs(static_cast<double>(bits_to_float(lo)) - f);
  // hi may be an infinity (rounding past the largest finite bf16): IEEE rounds there too.
  const double dh = std::fabs(static_cast<double>(bits_to_float(hi)) - static_cast<double>(f));
  const float hv = bits_to_float(hi);
  const double dhi = std::isinf(hv) ? std::ldexp(1.0, 128) - std::fabs(static_cast<double>(f)) : dh;
  if (dl < dhi || (dl == dhi && ((lo >> 16) & 1) == 0)) return static_cast<uint16_t>(lo >> 16);
  return static_cast<uint16_t>(hi >> 16);
}

std::vector<float> edge_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65505.0f, 65519.99f, 65520.0f,
                          -65520.0f, 1e-8f, 5.960464477539063e-8f, 2.9802322387695312e-8f,
                          2.98023259e-8f, 6.103515625e-05f, 6.1035149e-05f, 3.4028235e38f,
                          -3.4028235e38f, 1e-45f, INFINITY, -INFINITY, 0.33333334f,
                          1.0009766f, 1.0004883f, 1.0014648f, 3.3895314e38f, 3.3961775e38f};
  for (uint32_t u = 0x33000000u; u < 0x38900000u; u += 0x3FFFDu) v.push_back(bits_to_float(u));
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) v.push_back(bits_to_float(static_cast<uint32_t>(rng())));
  return v;
}

}  // namespace

TEST(F16Bf16, WideningIsExact) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = rules::f16_to_f32(static_cast<uint16_t>(h));
    const double want = f16_value(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
    } else {
      EXPECT_EQ(static_cast<double>(got), want) << h;
      EXPECT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
    }
    const float b = rules::bf16_to_f32(static_cast<uint16_t>(h));
    EXPECT_EQ(float_to_bits(b), h << 16);
  }
}

TEST(F16Bf16, NarrowingRoundsToNearestEven) {
  const std::vector<float> v = edge_floats();
  for (size_t i = 0; i < v.size(); ++i) {
    const float f = v[i];
    if (i < 400) {  // the search is slow
      EXPECT_EQ(rules::f32_to_f16(f), f16_oracle(f)) << f;
    }
    EXPECT_EQ(rules::f32_to_bf16(f), bf16_oracle(f)) << f;
  }
  // Every binary16 survives the round trip.
  for (uint32_t h = 0; h < 65536; ++h) {
    if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0) continue;  // NaN payloads become quiet NaN
    EXPECT_EQ(rules::f32_to_f16(rules::f16_to_f32(static_cast<uint16_t>(h))), h);
  }
  EXPECT_EQ(rules::f32_to_f16(bits_to_float(0x7FA00001u)), 0x7E00);
  EXPECT_EQ(rules::f32_to_f16(bits_to_float(0xFFA00001u)), 0xFE00);
  EXPECT_EQ(rules::f32_to_bf16(bits_to_float(0x7F800001u)), 0x7FC0);
}

namespace {

// f32 values as a 16-bit float tensor (narrowed by the rule the test above checks).
void make_half(T &out, qnt_dtype d, const std::vector<int64_t> &shape, const std::vector<float> &v,
               std::vector<float> *widened) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    h[i] = d == QNT_DTYPE_F16 ? rules::f32_to_f16(v[i]) : rules::f32_to_bf16(v[i]);
  if (widened != nullptr) {
    widened->resize(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      (*widened)[i] = d == QNT_DTYPE_F16 ? rules::f16_to_f32(h[i]) : rules::bf16_to_f32(h[i]);
  }
  make_raw(out, d, shape, nullptr, h.data(), 2 * h.size());
}

template <class E>
std::vector<E> contents(const T &t) {
  size_t bytes = 0;
  EXPECT_EQ(qnt_tensor_byte_size(t.t, &bytes), QNT_OK);
  std::vector<E> v((bytes + sizeof(E) - 1) / sizeof(E));
  EXPECT_EQ(qnt_tensor_copy_to(t.t, v.data(), v.size() * sizeof(E)), QNT_OK)
      << qnt_last_error_message();
  return v;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto &x : v) x = d(rng);
  if (n > 8) {
    v[0] = NAN;
    v[1] = INFINITY;
    v[2] = -INFINITY;
    v[3] = -0.0f;
    v[4] = 70000.0f;
  }
  return v;
}

}  // namespace

TEST(F16Bf16, QuantizeFromHalfEqualsQuantizeOfItsFloat) {
  const std::vector<int64_t> shape = {5, 67};
  const std::vector<float> x = random_floats(5 * 67, 1, 3.0f);
  for (qnt_dtype hd : {QNT_DTYPE_F16, QNT_DTYPE_BF16}) {
    for (qnt_dtype qd : {QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I4, QNT_DTYPE_NF4,
                         QNT_DTYPE_BINARY, QNT_DTYPE_TERNARY, QNT_DTYPE_U16}) {
      QP qp;
      const bool codebook = qd == QNT_DTYPE_NF4 || qd == QNT_DTYPE_BINARY || qd == QNT_DTYPE_TERNARY;
      std::vector<float> scales(5 * 3, 0.25f);
      for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.05f + 0.01f * static_cast<float>(i);
      ASSERT_EQ(qnt_qparams_create_per_block(qd, 1, 32, scales.size(), scales.data(), nullptr, &qp.p),
                QNT_OK);
      (void)codebook;
      std::vector<float> widened;
      T xh, xf, yh, yf;
      make_half(xh, hd, shape, x, &widened);
      make_f32(xf, shape, widened);
      make_q(yh, qd, shape, qp.p);
      make_q(yf, qd, shape, qp.p);
      ASSERT_EQ(qnt_quantize(nullptr, xh.t, yh.t), QNT_OK) << qnt_last_error_message();
      ASSERT_EQ(qnt_quantize(nullptr, xf.t, yf.t), QNT_OK);
      EXPECT_EQ(contents<uint8_t>(yh), contents<uint8_t>(yf)) << qnt_dtype_name(qd);
      // Every kernel set this machine runs, on 1, 2 and 3 threads, gives the same bits.
      for (qnt_isa isa : runnable_isas({QNT_ISA_REFERENCE, QNT_ISA_AVX2, QNT_ISA_AVX512,
                                        QNT_ISA_AVX512_VNNI, QNT_ISA_NEON, QNT_ISA_NEON_DOTPROD}))
        for (int32_t threads : {1, 2, 3}) {
          Ctx ctx(isa, threads);
          T yc, bc;
          make_q(yc, qd, shape, qp.p);
          make_q(bc, hd, shape, nullptr);
          ASSERT_EQ(qnt_quantize(ctx.c, xh.t, yc.t), QNT_OK);
          ASSERT_EQ(qnt_dequantize(ctx.c, yf.t, bc.t), QNT_OK);
          EXPECT_EQ(contents<uint8_t>(yc), contents<uint8_t>(yf)) << qnt_isa_name(isa) << threads;
          T bh;
          make_q(bh, hd, shape, nullptr);
          ASSERT_EQ(qnt_dequantize(nullptr, yf.t, bh.t), QNT_OK);
          EXPECT_EQ(contents<uint8_t>(bc), contents<uint8_t>(bh)) << qnt_isa_name(isa) << threads;
        }

      // Dequantize to the 16-bit dtype: the float32 result narrowed.
      T back_h, back_f;
      make_q(back_h, hd, shape, nullptr);
      make_q(back_f, QNT_DTYPE_F32, shape, nullptr);
      ASSERT_EQ(qnt_dequantize(nullptr, yf.t, back_h.t), QNT_OK) << qnt_last_error_message();
      ASSERT_EQ(qnt_dequantize(nullptr, yf.t, back_f.t), QNT_OK);
      const std::vector<uint16_t> got = contents<uint16_t>(back_h);
      const std::vector<float> want = contents<float>(back_f);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], hd == QNT_DTYPE_F16 ? rules::f32_to_f16(want[i])
                                              : rules::f32_to_bf16(want[i]))
            << i;
    }
  }
}

TEST(F16Bf16, OtherOpsRefuseThem) {
  const std::vector<int64_t> shape = {4, 8};
  T x;
  make_half(x, QNT_DTYPE_F16, shape, std::vector<float>(32, 1.0f), nullptr);
  qnt_qparams *qp = nullptr;
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
            QNT_ERR_DTYPE_MISMATCH);
  EXPECT_EQ(qp, nullptr);
  QP p;
  per_tensor(p, QNT_DTYPE_I8, 0.1f, 0);
  qnt_tensor *bad = nullptr;
  // As f32: a float tensor carries no qparams, and there are no qparams of a float dtype.
  EXPECT_EQ(qnt_tensor_create(QNT_DTYPE_BF16, shape.data(), 2, p.p, &bad),
            qnt_tensor_create(QNT_DTYPE_F32, shape.data(), 2, p.p, &bad));
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_F16, 1.0f, 0, &qp),
            qnt_qparams_create_per_tensor(QNT_DTYPE_F32, 1.0f, 0, &qp));
  EXPECT_NE(qnt_qparams_create_per_tensor(QNT_DTYPE_BF16, 1.0f, 0, &qp), QNT_OK);
  int32_t lo = 0, hi = 0;
  EXPECT_EQ(qnt_dtype_range(QNT_DTYPE_BF16, &lo, &hi), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_dtype_bits(QNT_DTYPE_F16), 16);
  EXPECT_STREQ(qnt_dtype_name(QNT_DTYPE_BF16), "bf16");
}

namespace {

// The weight-only layer with x of dtype xd and y of dtype yd against the f32 layer.
void check_wo_half(qnt_dtype xd, qnt_dtype yd, int64_t mode, qnt_dtype wd) {
  const int64_t M = 3, K = 200, N = 37, B = 64;
  const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 3, 1.0f);
  std::vector<float> wclean(wf);
  for (auto &v : wclean)
    if (!std::isfinite(v) || std::fabs(v) > 10) v = 0.5f;
  T wsrc;
  make_f32(wsrc, {N, K}, wclean);
  QP wq;
  ASSERT_EQ(wd == QNT_DTYPE_NF4
                ? qnt_calibrate_codebook(nullptr, wsrc.t, wd, QNT_GRANULARITY_PER_BLOCK, 1, B, &wq.p)
                : qnt_calibrate_minmax(nullptr, wsrc.t, wd, QNT_SCHEME_AFFINE,
                                       QNT_GRANULARITY_PER_BLOCK, 1, B, &wq.p),
            QNT_OK);
  T w;
  make_q(w, wd, {N, K}, wq.p);
  ASSERT_EQ(qnt_quantize(nullptr, wsrc.t, w.t), QNT_OK);
  std::vector<float> bias(N);
  for (int64_t n = 0; n < N; ++n) bias[static_cast<size_t>(n)] = 0.1f * static_cast<float>(n);
  T b;
  make_f32(b, {N}, bias);
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  ASSERT_EQ(qnt_op_desc_set(d, QNT_OP_WEIGHT_ONLY_MODE, mode), QNT_OK);
  qnt_prepared *op = nullptr;
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(nullptr, w.t, b.t, d, &op), QNT_OK);
  qnt_op_desc_destroy(d);
  std::vector<float> x = random_floats(static_cast<size_t>(M * K), 4, 2.0f);
  for (auto &v : x)
    if (!std::isfinite(v) || std::fabs(v) > 100) v = 1.0f;
  x[7] = NAN;  // row 0 becomes NaN, rows 1 and 2 stay finite
  std::vector<float> widened;
  T xh, xf, yh, yf;
  if (xd == QNT_DTYPE_F32) {
    make_f32(xh, {M, K}, x);
    widened = x;
  } else {
    make_half(xh, xd, {M, K}, x, &widened);
  }
  make_f32(xf, {M, K}, widened);
  make_q(yh, yd, {M, N}, nullptr);
  make_q(yf, QNT_DTYPE_F32, {M, N}, nullptr);
  ASSERT_EQ(qnt_prepared_run(nullptr, op, xh.t, yh.t), QNT_OK) << qnt_last_error_message();
  ASSERT_EQ(qnt_prepared_run(nullptr, op, xf.t, yf.t), QNT_OK);
  const std::vector<float> want = contents<float>(yf);
  if (yd == QNT_DTYPE_F32) {
    const std::vector<float> got = contents<float>(yh);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(float_to_bits(got[i]), float_to_bits(want[i])) << i;
  } else {
    const std::vector<uint16_t> got = contents<uint16_t>(yh);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], yd == QNT_DTYPE_F16 ? rules::f32_to_f16(want[i]) : rules::f32_to_bf16(want[i]))
          << i;
    EXPECT_TRUE(got[0] == 0x7E00 || got[0] == 0x7FC0);  // the NaN row
  }
  // The one-shot call (f32 mode) agrees.
  if (mode == QNT_WEIGHT_ONLY_F32) {
    T y1;
    make_q(y1, yd, {M, N}, nullptr);
    ASSERT_EQ(qnt_linear_weight_only(nullptr, xh.t, w.t, b.t, y1.t), QNT_OK);
    EXPECT_EQ(contents<uint8_t>(y1), contents<uint8_t>(yh));
  }
  qnt_prepared_destroy(op);
}

}  // namespace

TEST(F16Bf16, WeightOnlyW4A16) {
  for (int64_t mode : {QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK})
    for (qnt_dtype wd : {QNT_DTYPE_I4, QNT_DTYPE_U4, QNT_DTYPE_NF4})
      for (qnt_dtype xd : {QNT_DTYPE_F16, QNT_DTYPE_BF16}) {
        SCOPED_TRACE(std::string(qnt_dtype_name(wd)) + " x " + qnt_dtype_name(xd));
        check_wo_half(xd, xd, mode, wd);
        check_wo_half(xd, QNT_DTYPE_F32, mode, wd);
      }
  // y must be f32 or x's dtype.
  T x, y, w;
  QP q;
  per_tensor(q, QNT_DTYPE_I4, 0.1f, 0);
  make_half(x, QNT_DTYPE_F16, {1, 4}, {1, 2, 3, 4}, nullptr);
  make_q(w, QNT_DTYPE_I4, {2, 4}, q.p);
  make_q(y, QNT_DTYPE_BF16, {1, 2}, nullptr);
  EXPECT_EQ(qnt_linear_weight_only(nullptr, x.t, w.t, nullptr, y.t), QNT_ERR_DTYPE_MISMATCH);
}

// --- device tensors without a device --------------------------------------------------------------

TEST(DeviceTensors, NoDeviceGivesClearErrors) {
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  int32_t n = -1;
  ASSERT_EQ(qnt_context_cuda_device_count(ctx, &n), QNT_OK);
  if (n > 0) {
    qnt_context_destroy(ctx);
    GTEST_SKIP() << "this machine has a CUDA device";
  }
  const int64_t shape[] = {4, 4};
  qnt_tensor *t = nullptr;
  EXPECT_EQ(qnt_tensor_create_on_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CUDA, 0, &t),
            QNT_ERR_NO_DEVICE);
  EXPECT_NE(std::string(qnt_last_error_message()).find("no CUDA device 0"), std::string::npos)
      << qnt_last_error_message();
  EXPECT_EQ(t, nullptr);
  float buf[16];
  EXPECT_EQ(qnt_tensor_wrap_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CUDA, 0, buf,
                                   sizeof buf, &t),
            QNT_ERR_NO_DEVICE);
  EXPECT_EQ(qnt_tensor_create_on_device(QNT_DTYPE_F32, shape, 2, nullptr, 7, 0, &t),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_tensor_create_on_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CUDA, -1, &t),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_tensor_create_on_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CPU, 1, &t),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(qnt_context_set_cuda_stream(ctx, 0, nullptr), QNT_ERR_NO_DEVICE);
  EXPECT_EQ(qnt_context_synchronize(ctx), QNT_OK);
  // A CUDA DLPack tensor: refused, and left to its producer.
  int64_t dl_shape[1] = {4};
  float dl_data[4] = {};
  struct {
    void *data;
    int32_t device_type, device_id;
    int32_t ndim;
    uint8_t code, bits;
    uint16_t lanes;
    int64_t *shape, *strides;
    uint64_t byte_offset;
    void *manager_ctx;
    void (*deleter)(void *);
  } managed = {dl_data, 2, 0, 1, 2, 32, 1, dl_shape, nullptr, 0, nullptr, nullptr};
  EXPECT_EQ(qnt_tensor_from_dlpack(&managed, 0, nullptr, &t), QNT_ERR_NO_DEVICE);
  EXPECT_EQ(t, nullptr);

  // The CPU through the device constructors is the plain tensor.
  ASSERT_EQ(qnt_tensor_create_on_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CPU, 0, &t),
            QNT_OK);
  qnt_device_type type = 0;
  int32_t id = -1;
  ASSERT_EQ(qnt_tensor_device(t, &type, &id), QNT_OK);
  EXPECT_EQ(type, QNT_DEVICE_CPU);
  EXPECT_EQ(id, 0);
  qnt_tensor *w = nullptr;
  ASSERT_EQ(qnt_tensor_wrap_device(QNT_DTYPE_F32, shape, 2, nullptr, QNT_DEVICE_CPU, 0, buf,
                                   sizeof buf, &w),
            QNT_OK);
  for (int i = 0; i < 16; ++i) buf[i] = static_cast<float>(i);
  ASSERT_EQ(qnt_tensor_copy(nullptr, w, t), QNT_OK);
  float back[16] = {};
  ASSERT_EQ(qnt_tensor_copy_to(t, back, sizeof back), QNT_OK);
  EXPECT_EQ(std::memcmp(back, buf, sizeof back), 0);
  EXPECT_EQ(qnt_tensor_copy(nullptr, t, t), QNT_ERR_INVALID_ARGUMENT);
  qnt_tensor *other = nullptr;
  const int64_t shape2[] = {2, 8};
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, shape2, 2, nullptr, &other), QNT_OK);
  EXPECT_EQ(qnt_tensor_copy(nullptr, w, other), QNT_ERR_SHAPE_MISMATCH);
  qnt_tensor_destroy(other);
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_I32, shape, 2, nullptr, &other), QNT_OK);
  EXPECT_EQ(qnt_tensor_copy(nullptr, w, other), QNT_ERR_DTYPE_MISMATCH);
  qnt_tensor_destroy(other);
  qnt_tensor_destroy(w);
  qnt_tensor_destroy(t);
  qnt_context_destroy(ctx);
}

// --- the stand-in module: the plumbing with a pretend device ---------------------------------------

namespace {

// The stand-in's record of the last kernel call (its layout, as in standin_cuda_module.c).
struct StandinRecord {
  int32_t kernel;
  int32_t device;
  void *stream;
  int64_t calls;
  qnt_cuda_convert_args convert;
  qnt_cuda_gemm_args gemm;
  qnt_cuda_wo_args wo;
};

const StandinRecord *standin() {
  const char *path = std::getenv("QNT_CUDA_MODULE");
  if (path == nullptr) return nullptr;
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  auto *r = static_cast<const StandinRecord *>(dlsym(h, "qnt_standin_last"));
  dlclose(h);
  return r;
}

bool standin_on() {
  const char *v = std::getenv("QNT_TEST_STANDIN_DEVICES");
  return v != nullptr && std::string(v) == "1";
}

void device_tensor(T &out, qnt_dtype d, const std::vector<int64_t> &shape, const qnt_qparams *qp) {
  ASSERT_EQ(qnt_tensor_create_on_device(d, shape.data(), shape.size(), qp, QNT_DEVICE_CUDA, 0,
                                        &out.t),
            QNT_OK)
      << qnt_last_error_message();
}

}  // namespace

#define REQUIRE_STANDIN()                                                           \
  if (!standin_on()) GTEST_SKIP() << "runs in the standin_device test process only"

TEST(StandinDevice, TensorsAndCopies) {
  REQUIRE_STANDIN();
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  int32_t n = 0;
  ASSERT_EQ(qnt_context_cuda_device_count(ctx, &n), QNT_OK);
  ASSERT_EQ(n, 1);
  qnt_context_destroy(ctx);

  T d;
  device_tensor(d, QNT_DTYPE_U4, {3, 5}, nullptr);  // 15 nibbles: 8 bytes, 4 unused bits
  qnt_device_type type = 0;
  int32_t id = -1;
  ASSERT_EQ(qnt_tensor_device(d.t, &type, &id), QNT_OK);
  EXPECT_EQ(type, QNT_DEVICE_CUDA);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(contents<uint8_t>(d), std::vector<uint8_t>(8, 0));  // zero-filled
  const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 0xFF};
  ASSERT_EQ(qnt_tensor_copy_from(d.t, src, 8), QNT_OK) << qnt_last_error_message();
  std::vector<uint8_t> want(src, src + 8);
  want[7] = 0x0F;  // the unused high nibble written as 0
  EXPECT_EQ(contents<uint8_t>(d), want);

  // host -> device -> device -> host
  T h, d2, h2;
  make_raw(h, QNT_DTYPE_U4, {3, 5}, nullptr, want.data(), 8);
  device_tensor(d2, QNT_DTYPE_U4, {3, 5}, nullptr);
  make_q(h2, QNT_DTYPE_U4, {3, 5}, nullptr);
  ASSERT_EQ(qnt_tensor_copy(nullptr, h.t, d.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_copy(nullptr, d.t, d2.t), QNT_OK);
  ASSERT_EQ(qnt_tensor_copy(nullptr, d2.t, h2.t), QNT_OK);
  EXPECT_EQ(contents<uint8_t>(h2), want);

  // Wrapping: device memory of that device only.
  void *p = nullptr;
  ASSERT_EQ(qnt_tensor_data(d.t, &p), QNT_OK);
  const int64_t shape[] = {8};
  qnt_tensor *wrapped = nullptr;
  ASSERT_EQ(qnt_tensor_wrap_device(QNT_DTYPE_U8, shape, 1, nullptr, QNT_DEVICE_CUDA, 0, p, 8,
                                   &wrapped),
            QNT_OK);
  uint8_t host[8];
  EXPECT_EQ(qnt_tensor_wrap_device(QNT_DTYPE_U8, shape, 1, nullptr, QNT_DEVICE_CUDA, 0, host, 8,
                                   &wrapped),
            QNT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qnt_last_error_message()).find("not device memory"), std::string::npos);
  qnt_tensor_destroy(wrapped);
}

TEST(StandinDevice, PlacementErrors) {
  REQUIRE_STANDIN();
  QP qp;
  per_tensor(qp, QNT_DTYPE_I8, 0.5f, 3);
  T xh, yd, xd;
  make_f32(xh, {2, 3}, {1, 2, 3, 4, 5, 6});
  device_tensor(yd, QNT_DTYPE_I8, {2, 3}, qp.p);
  device_tensor(xd, QNT_DTYPE_F32, {2, 3}, nullptr);
  EXPECT_EQ(qnt_quantize(nullptr, xh.t, yd.t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qnt_last_error_message()).find("cuda:0"), std::string::npos)
      << qnt_last_error_message();
  // Ops without device kernels say so.
  qnt_qparams *out = nullptr;
  EXPECT_EQ(qnt_calibrate_minmax(nullptr, xd.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &out),
            QNT_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(qnt_last_error_message()).find("runs on the CPU only"), std::string::npos);
  T z;
  device_tensor(z, QNT_DTYPE_I8, {2, 3}, qp.p);
  EXPECT_EQ(qnt_qrelu(nullptr, yd.t, z.t), QNT_ERR_UNSUPPORTED);
  // A prepared layer made without a bound context refuses device tensors.
  T w;
  make_q(w, QNT_DTYPE_I4, {4, 3}, nullptr);
  QP wq;
  per_tensor(wq, QNT_DTYPE_I4, 0.1f, 0);
  T w2;
  make_q(w2, QNT_DTYPE_I4, {4, 3}, wq.p);
  qnt_prepared *op = nullptr;
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(nullptr, w2.t, nullptr, nullptr, &op), QNT_OK);
  T y4;
  device_tensor(y4, QNT_DTYPE_F32, {2, 4}, nullptr);
  EXPECT_EQ(qnt_prepared_run(nullptr, op, xd.t, y4.t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(qnt_last_error_message()).find("prepared for the CPU only"),
            std::string::npos);
  qnt_prepared_destroy(op);
  // Weights for prepare must be host tensors.
  T wd;
  device_tensor(wd, QNT_DTYPE_I4, {4, 3}, wq.p);
  EXPECT_EQ(qnt_prepared_create_linear_weight_only(nullptr, wd.t, nullptr, nullptr, &op),
            QNT_ERR_UNSUPPORTED);
}

TEST(StandinDevice, LaunchesCarryTheirArguments) {
  REQUIRE_STANDIN();
  const StandinRecord *rec = standin();
  ASSERT_NE(rec, nullptr);
  // quantize on the device, with a context bound to a stream: no wait, the stream passed on.
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  void *stream = reinterpret_cast<void *>(uintptr_t{0x5000});
  ASSERT_EQ(qnt_context_set_cuda_stream(ctx, 0, stream), QNT_OK);
  const float scales[3] = {0.5f, 0.25f, 2.0f};
  const int32_t zps[3] = {1, -2, 3};
  QP qp;
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 1, 3, scales, zps, &qp.p), QNT_OK);
  T x, y;
  device_tensor(x, QNT_DTYPE_BF16, {2, 3}, nullptr);
  device_tensor(y, QNT_DTYPE_I8, {2, 3}, qp.p);
  ASSERT_EQ(qnt_quantize(ctx, x.t, y.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(rec->kernel, 1);
  EXPECT_EQ(rec->stream, stream);
  EXPECT_EQ(rec->convert.op, QNT_CUDA_QUANTIZE);
  EXPECT_EQ(rec->convert.float_dtype, QNT_DTYPE_BF16);
  EXPECT_EQ(rec->convert.count, 6u);
  EXPECT_EQ(rec->convert.to.bits, 8);
  EXPECT_EQ(rec->convert.to.layout.granularity, QNT_GRANULARITY_PER_AXIS);
  EXPECT_EQ(rec->convert.to.layout.dim, 3);
  // The parameters travelled to "device memory" (host memory in the stand-in); its scratch is
  // freed after the launch in stream order, so read them through a fresh launch's record
  // before that: the stand-in frees at once, so only the pointers' distinctness is checked.
  EXPECT_NE(rec->convert.to.scales, nullptr);
  EXPECT_NE(static_cast<const void *>(rec->convert.to.scales),
            static_cast<const void *>(scales));

  // An error the device raises later is reported by qnt_context_synchronize.
  setenv("QNT_TEST_STANDIN_ASYNC_ERROR", "1", 1);
  ASSERT_EQ(qnt_quantize(ctx, x.t, y.t), QNT_OK);
  unsetenv("QNT_TEST_STANDIN_ASYNC_ERROR");
  EXPECT_EQ(qnt_context_synchronize(ctx), QNT_ERR_INTERNAL);
  EXPECT_NE(std::string(qnt_last_error_message()).find("asynchronous fault"), std::string::npos);
  EXPECT_EQ(qnt_context_synchronize(ctx), QNT_OK);  // reported once
  // Without a bound context the op waits, so the error is the call's own.
  setenv("QNT_TEST_STANDIN_ASYNC_ERROR", "1", 1);
  EXPECT_EQ(qnt_quantize(nullptr, x.t, y.t), QNT_ERR_INTERNAL);
  unsetenv("QNT_TEST_STANDIN_ASYNC_ERROR");
  EXPECT_EQ(rec->stream, nullptr);

  // qmatmul: requantized output, the multipliers and zero points as the CPU computes them.
  QP qa, qb, qy;
  per_tensor(qa, QNT_DTYPE_U8, 0.02f, 128);
  const float sb[4] = {0.1f, 0.2f, 0.3f, 0.4f};
  const int32_t zb[4] = {0, 1, 2, 3};
  ASSERT_EQ(qnt_qparams_create_per_axis(QNT_DTYPE_I8, 1, 4, sb, zb, &qb.p), QNT_OK);
  per_tensor(qy, QNT_DTYPE_I8, 0.7f, -5);
  T a, b, out;
  device_tensor(a, QNT_DTYPE_U8, {2, 5, 6}, qa.p);
  device_tensor(b, QNT_DTYPE_I8, {6, 4}, qb.p);
  device_tensor(out, QNT_DTYPE_I8, {2, 5, 4}, qy.p);
  ASSERT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, out.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(rec->kernel, 2);
  EXPECT_EQ(rec->gemm.M, 10);
  EXPECT_EQ(rec->gemm.N, 4);
  EXPECT_EQ(rec->gemm.K, 6);
  EXPECT_EQ(rec->gemm.za, 128);
  EXPECT_EQ(rec->gemm.a_signed, 0);
  EXPECT_EQ(rec->gemm.b_ks, 4);
  EXPECT_EQ(rec->gemm.b_ns, 1);
  EXPECT_EQ(rec->gemm.mode, QNT_CUDA_EPI_REQUANTIZE);
  EXPECT_EQ(rec->gemm.zy, -5);
  // A batched b has no device kernel.
  T b3;
  QP qb3;
  per_tensor(qb3, QNT_DTYPE_I8, 0.1f, 0);
  device_tensor(b3, QNT_DTYPE_I8, {2, 6, 4}, qb3.p);
  EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b3.t, nullptr, out.t), QNT_ERR_UNSUPPORTED);

  // A weight-only layer prepared with the bound context runs there.
  QP wq;
  const float ws[2] = {0.5f, 0.25f};
  ASSERT_EQ(qnt_qparams_create_per_block(QNT_DTYPE_U4, 1, 4, 2, ws, nullptr, &wq.p), QNT_OK);
  const uint8_t wbytes[4] = {0x21, 0x43, 0x65, 0x87};  // [2, 4] u4
  T w;
  make_raw(w, QNT_DTYPE_U4, {2, 4}, wq.p, wbytes, 4);
  qnt_op_desc *desc = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&desc), QNT_OK);
  ASSERT_EQ(qnt_op_desc_set(desc, QNT_OP_WEIGHT_ONLY_MODE, QNT_WEIGHT_ONLY_INT8_ACT), QNT_OK);
  qnt_prepared *op = nullptr;
  ASSERT_EQ(qnt_prepared_create_linear_weight_only(ctx, w.t, nullptr, desc, &op), QNT_OK)
      << qnt_last_error_message();
  qnt_op_desc_destroy(desc);
  T xw, yw;
  device_tensor(xw, QNT_DTYPE_F16, {3, 4}, nullptr);
  device_tensor(yw, QNT_DTYPE_F16, {3, 2}, nullptr);
  ASSERT_EQ(qnt_prepared_run(ctx, op, xw.t, yw.t), QNT_OK) << qnt_last_error_message();
  EXPECT_EQ(rec->kernel, 3);
  EXPECT_EQ(rec->wo.M, 3);
  EXPECT_EQ(rec->wo.N, 2);
  EXPECT_EQ(rec->wo.K, 4);
  EXPECT_EQ(rec->wo.mode, QNT_WEIGHT_ONLY_INT8_ACT);
  EXPECT_EQ(rec->wo.x_dtype, QNT_DTYPE_F16);
  EXPECT_EQ(rec->wo.act_block, 4);
  EXPECT_EQ(rec->wo.wblocks, 1);
  // The device copies hold the weights and the int8 mode's scales (u4: the block's scale).
  EXPECT_EQ(std::memcmp(rec->wo.w, wbytes, 4), 0);
  EXPECT_EQ(rec->wo.wscale[0], 0.5f);
  EXPECT_EQ(rec->wo.wscale[1], 0.25f);
  EXPECT_EQ(rec->wo.wq.zero_points[0], 8);  // u4's symmetric zero point
  size_t packed = 0;
  ASSERT_EQ(qnt_prepared_packed_size(op, &packed), QNT_OK);
  EXPECT_GT(packed, 4u);
  qnt_prepared_destroy(op);
  qnt_context_destroy(ctx);
}

TEST(StandinDevice, DlpackCarriesTheDevice) {
  REQUIRE_STANDIN();
  T d;
  device_tensor(d, QNT_DTYPE_I8, {4}, nullptr);
  void *managed = nullptr;
  ASSERT_EQ(qnt_tensor_to_dlpack(d.t, 1, &managed), QNT_OK);
  // DLManagedTensorVersioned: dl_tensor at 32, its device at +8.
  int32_t dev[2];
  std::memcpy(dev, static_cast<uint8_t *>(managed) + 40, 8);
  EXPECT_EQ(dev[0], 2);  // kDLCUDA
  EXPECT_EQ(dev[1], 0);
  // Imported back: a device tensor over the same memory.
  qnt_tensor *back = nullptr;
  ASSERT_EQ(qnt_tensor_from_dlpack(managed, 1, nullptr, &back), QNT_OK) << qnt_last_error_message();
  qnt_device_type type = 0;
  int32_t id = -1;
  ASSERT_EQ(qnt_tensor_device(back, &type, &id), QNT_OK);
  EXPECT_EQ(type, QNT_DEVICE_CUDA);
  void *p1 = nullptr, *p2 = nullptr;
  ASSERT_EQ(qnt_tensor_data(d.t, &p1), QNT_OK);
  ASSERT_EQ(qnt_tensor_data(back, &p2), QNT_OK);
  EXPECT_EQ(p1, p2);
  qnt_tensor_destroy(back);
}
