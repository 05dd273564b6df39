// The GPU suite: every CUDA kernel against the CPU reference kernels, bit for bit, through the
// public ABI, on random and edge inputs. Each test skips cleanly on a machine without a CUDA
// device (or without the CUDA module: ctest points QNT_CUDA_MODULE at the build's module).
// Float outputs compare their bits, except that a NaN matches any NaN (a GPU writes the
// canonical NaN where the CPU may keep an input's payload; qnt.h promises NaN, not its bits).
#include "helpers.hpp"
#include "kernels/common/scalar.hpp"

#include <cmath>
#include <random>

using namespace qnt_test;

namespace {

bool have_gpu() {
  qnt_context *c = nullptr;
  if (qnt_context_create(&c) != QNT_OK) return false;
  int32_t n = 0;
  const bool ok = qnt_context_cuda_device_count(c, &n) == QNT_OK && n > 0;
  qnt_context_destroy(c);
  return ok;
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

std::vector<uint8_t> bytes_of(qnt_tensor *t) {
  size_t n = 0;
  EXPECT_EQ(qnt_tensor_byte_size(t, &n), QNT_OK);
  std::vector<uint8_t> v(n);
  if (n > 0) {
    EXPECT_EQ(qnt_tensor_copy_to(t, v.data(), n), QNT_OK) << qnt_last_error_message();
  }
  return v;
}

// A device copy of a host tensor (same dtype, shape and qparams).
void to_device(T &out, qnt_tensor *host) {
  qnt_dtype d = 0;
  size_t rank = 0;
  ASSERT_EQ(qnt_tensor_dtype(host, &d), QNT_OK);
  ASSERT_EQ(qnt_tensor_rank(host, &rank), QNT_OK);
  int64_t shape[QNT_MAX_RANK] = {};
  ASSERT_EQ(qnt_tensor_shape(host, shape, QNT_MAX_RANK), QNT_OK);
  qnt_qparams *qp = nullptr;
  ASSERT_EQ(qnt_tensor_qparams(host, &qp), QNT_OK);
  const qnt_status st =
      qnt_tensor_create_on_device(d, shape, rank, qp, QNT_DEVICE_CUDA, 0, &out.t);
  qnt_qparams_destroy(qp);
  ASSERT_EQ(st, QNT_OK) << qnt_last_error_message();
  ASSERT_EQ(qnt_tensor_copy(nullptr, host, out.t), QNT_OK) << qnt_last_error_message();
}

// Equal bytes, where a 4- or 2-byte float NaN matches any NaN of its width.
void expect_same(const std::vector<uint8_t> &cpu, const std::vector<uint8_t> &gpu, qnt_dtype d,
                 const std::string &what) {
  ASSERT_EQ(cpu.size(), gpu.size()) << what;
  if (d == QNT_DTYPE_F32) {
    for (size_t i = 0; i + 4 <= cpu.size(); i += 4) {
      float a, b;
      std::memcpy(&a, &cpu[i], 4);
      std::memcpy(&b, &gpu[i], 4);
      if (std::isnan(a) && std::isnan(b)) continue;
      ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << what << " element " << i / 4 << ": " << a << " vs " << b;
    }
    return;
  }
  for (size_t i = 0; i < cpu.size(); ++i)
    ASSERT_EQ(cpu[i], gpu[i]) << what << " byte " << i;
}

std::vector<float> inputs(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 4.0f);
  std::vector<float> v(n);
  for (auto &x : v) x = d(rng);
  const float edge[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e30f, -1e30f, 2.5f, -2.5f, 0.125f,
                        3.5f, 1e-40f};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0] && i * 7 < n; ++i) v[i * 7] = edge[i];
  return v;
}

const qnt_dtype kQuantized[] = {QNT_DTYPE_I32, QNT_DTYPE_I8,  QNT_DTYPE_U8,     QNT_DTYPE_I16,
                                QNT_DTYPE_U16, QNT_DTYPE_I4,  QNT_DTYPE_U4,     QNT_DTYPE_NF4,
                                QNT_DTYPE_BINARY, QNT_DTYPE_TERNARY};

// qparams of granularity g for a [R, C] tensor, scales and zero points varied.
void make_qparams(QP &out, qnt_dtype d, int g, int64_t R, int64_t C) {
  int32_t lo = 0, hi = 0;
  const bool ranged = qnt_dtype_range(d, &lo, &hi) == QNT_OK;
  const bool fixed = d == QNT_DTYPE_NF4 || d == QNT_DTYPE_BINARY || d == QNT_DTYPE_TERNARY;
  auto fill = [&](size_t n, std::vector<float> &s, std::vector<int32_t> &z) {
    s.resize(n);
    z.resize(n);
    for (size_t i = 0; i < n; ++i) {
      s[i] = 0.01f + 0.37f * static_cast<float>(i % 11);
      z[i] = fixed || !ranged ? 0 : static_cast<int32_t>(lo + (static_cast<int64_t>(hi) - lo) * (i % 5) / 4);
    }
  };
  std::vector<float> s;
  std::vector<int32_t> z;
  switch (g) {
    case 0:
      fill(1, s, z);
      ASSERT_EQ(qnt_qparams_create_per_tensor(d, s[0], z[0], &out.p), QNT_OK);
      return;
    case 1:
      fill(static_cast<size_t>(C), s, z);
      ASSERT_EQ(qnt_qparams_create_per_axis(d, 1, s.size(), s.data(), z.data(), &out.p), QNT_OK);
      return;
    case 2:
      fill(static_cast<size_t>(R), s, z);
      ASSERT_EQ(qnt_qparams_create_per_axis(d, 0, s.size(), s.data(), z.data(), &out.p), QNT_OK);
      return;
    case 3:
      fill(static_cast<size_t>(R * ((C + 31) / 32)), s, z);
      ASSERT_EQ(qnt_qparams_create_per_block(d, 1, 32, s.size(), s.data(), z.data(), &out.p),
                QNT_OK);
      return;
    default:
      fill(static_cast<size_t>(((R + 2) / 3) * C), s, z);
      ASSERT_EQ(qnt_qparams_create_per_block(d, 0, 3, s.size(), s.data(), z.data(), &out.p),
                QNT_OK);
      return;
  }
}

void float_tensor(T &out, qnt_dtype fd, const std::vector<int64_t> &shape, const std::vector<float> &v) {
  if (fd == QNT_DTYPE_F32) {
    make_f32(out, shape, v);
    return;
  }
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    h[i] = fd == QNT_DTYPE_F16 ? qnt::rules::f32_to_f16(v[i]) : qnt::rules::f32_to_bf16(v[i]);
  make_raw(out, fd, shape, nullptr, h.data(), 2 * h.size());
}

}  // namespace

TEST(Gpu, QuantizeDequantizeRequantize) {
  REQUIRE_GPU();
  const int64_t R = 37, C = 131;
  const std::vector<int64_t> shape = {R, C};
  const std::vector<float> x = inputs(static_cast<size_t>(R * C), 11);
  for (qnt_dtype fd : {QNT_DTYPE_F32, QNT_DTYPE_F16, QNT_DTYPE_BF16}) {
    T xh, xd;
    float_tensor(xh, fd, shape, x);
    to_device(xd, xh.t);
    for (qnt_dtype qd : kQuantized) {
      for (int g = 0; g < 5; ++g) {
        const std::string what = std::string(qnt_dtype_name(fd)) + "->" + qnt_dtype_name(qd) +
                                 " granularity " + std::to_string(g);
        QP qp;
        make_qparams(qp, qd, g, R, C);
        T yh, yd;
        make_q(yh, qd, shape, qp.p);
        to_device(yd, yh.t);
        ASSERT_EQ(qnt_quantize(nullptr, xh.t, yh.t), QNT_OK) << what;
        ASSERT_EQ(qnt_quantize(nullptr, xd.t, yd.t), QNT_OK) << what << qnt_last_error_message();
        expect_same(bytes_of(yh.t), bytes_of(yd.t), qd, "quantize " + what);
        T bh, bd;
        make_q(bh, fd, shape, nullptr);
        to_device(bd, bh.t);
        ASSERT_EQ(qnt_dequantize(nullptr, yh.t, bh.t), QNT_OK) << what;
        ASSERT_EQ(qnt_dequantize(nullptr, yd.t, bd.t), QNT_OK) << what;
        expect_same(bytes_of(bh.t), bytes_of(bd.t), fd, "dequantize " + what);
        // requantize to another dtype and granularity
        const qnt_dtype to = qd == QNT_DTYPE_I8 ? QNT_DTYPE_U4 : QNT_DTYPE_I8;
        QP tq;
        make_qparams(tq, to, (g + 2) % 5, R, C);
        T rh, rd;
        make_q(rh, to, shape, tq.p);
        to_device(rd, rh.t);
        ASSERT_EQ(qnt_requantize(nullptr, yh.t, rh.t), QNT_OK) << what;
        ASSERT_EQ(qnt_requantize(nullptr, yd.t, rd.t), QNT_OK) << what;
        expect_same(bytes_of(rh.t), bytes_of(rd.t), to, "requantize " + what);
      }
    }
  }
}

namespace {

void int8_tensor(T &out, qnt_dtype d, const std::vector<int64_t> &shape, const qnt_qparams *qp,
                 uint32_t seed) {
  size_t n = 1;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto &b : v) b = static_cast<uint8_t>(rng());
  make_raw(out, d, shape, qp, v.data(), n);
}

}  // namespace

TEST(Gpu, QmatmulEveryOutputMode) {
  REQUIRE_GPU();
  const int64_t shapes[][3] = {{1, 1, 1}, {17, 33, 65}, {128, 256, 96}, {5, 4096, 7}, {70, 64, 130}};
  uint32_t seed = 1;
  for (const auto &s : shapes) {
    const int64_t M = s[0], K = s[1], N = s[2];
    for (qnt_dtype ad : {QNT_DTYPE_U8, QNT_DTYPE_I8})
      for (qnt_dtype bd : {QNT_DTYPE_I8, QNT_DTYPE_U8})
        for (qnt_dtype yd : {QNT_DTYPE_I32, QNT_DTYPE_U8, QNT_DTYPE_F32}) {
          const std::string what = std::to_string(M) + "x" + std::to_string(K) + "x" +
                                   std::to_string(N) + " " + qnt_dtype_name(ad) + "*" +
                                   qnt_dtype_name(bd) + "->" + qnt_dtype_name(yd);
          QP qa, qb, qy;
          per_tensor(qa, ad, 0.03f, ad == QNT_DTYPE_U8 ? 131 : -3);
          std::vector<float> sb(static_cast<size_t>(N));
          std::vector<int32_t> zb(static_cast<size_t>(N));
          for (int64_t n = 0; n < N; ++n) {
            sb[static_cast<size_t>(n)] = 0.01f * static_cast<float>(n % 7 + 1);
            zb[static_cast<size_t>(n)] = bd == QNT_DTYPE_U8 ? 120 + static_cast<int32_t>(n % 9)
                                                            : static_cast<int32_t>(n % 5) - 2;
          }
          ASSERT_EQ(qnt_qparams_create_per_axis(bd, 1, sb.size(), sb.data(), zb.data(), &qb.p),
                    QNT_OK);
          if (yd == QNT_DTYPE_U8) per_tensor(qy, yd, 0.9f, 100);
          T a, b, y, ad_, bd_, y_d, bias, bias_d;
          int8_tensor(a, ad, {M, K}, qa.p, seed++);
          int8_tensor(b, bd, {K, N}, qb.p, seed++);
          make_q(y, yd, {M, N}, qy.p);
          to_device(ad_, a.t);
          to_device(bd_, b.t);
          to_device(y_d, y.t);
          std::vector<float> bf(static_cast<size_t>(N));
          for (int64_t n = 0; n < N; ++n) bf[static_cast<size_t>(n)] = -0.5f + 0.01f * static_cast<float>(n);
          make_f32(bias, {N}, bf);
          to_device(bias_d, bias.t);
          const bool with_bias = yd == QNT_DTYPE_F32;
          ASSERT_EQ(qnt_qmatmul(nullptr, a.t, b.t, with_bias ? bias.t : nullptr, y.t), QNT_OK)
              << what << qnt_last_error_message();
          ASSERT_EQ(qnt_qmatmul(nullptr, ad_.t, bd_.t, with_bias ? bias_d.t : nullptr, y_d.t),
                    QNT_OK)
              << what << qnt_last_error_message();
          expect_same(bytes_of(y.t), bytes_of(y_d.t), yd, what);
        }
  }
}

TEST(Gpu, PreparedStaticLinearAndMatmulOnABoundContext) {
  REQUIRE_GPU();
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  ASSERT_EQ(qnt_context_set_cuda_stream(ctx, 0, nullptr), QNT_OK);
  const int64_t M = 9, K = 300, N = 77;
  QP qx, qw, qy;
  per_tensor(qx, QNT_DTYPE_U8, 0.05f, 120);
  per_tensor(qw, QNT_DTYPE_I8, 0.02f, 0);
  per_tensor(qy, QNT_DTYPE_I8, 0.3f, 4);
  T x, w, y, yd, xd, bias;
  int8_tensor(x, QNT_DTYPE_U8, {M, K}, qx.p, 5);
  int8_tensor(w, QNT_DTYPE_I8, {N, K}, qw.p, 6);
  std::vector<float> bf(static_cast<size_t>(N), 0.25f);
  make_f32(bias, {N}, bf);
  for (int relu = 0; relu < 2; ++relu)
    for (int fbias = 0; fbias < 2; ++fbias) {
      qnt_op_desc *desc = nullptr;
      ASSERT_EQ(qnt_op_desc_create(&desc), QNT_OK);
      ASSERT_EQ(qnt_op_desc_set(desc, QNT_OP_FUSE_RELU, relu), QNT_OK);
      qnt_prepared *op = nullptr;
      ASSERT_EQ(qnt_prepared_create_linear_static(ctx, w.t, fbias ? bias.t : nullptr, qx.p, qy.p,
                                                  desc, &op),
                QNT_OK)
          << qnt_last_error_message();
      qnt_op_desc_destroy(desc);
      T yh, ydev, xdev;
      make_q(yh, QNT_DTYPE_I8, {M, N}, qy.p);
      to_device(ydev, yh.t);
      to_device(xdev, x.t);
      ASSERT_EQ(qnt_prepared_run(ctx, op, x.t, yh.t), QNT_OK);
      ASSERT_EQ(qnt_prepared_run(ctx, op, xdev.t, ydev.t), QNT_OK) << qnt_last_error_message();
      ASSERT_EQ(qnt_context_synchronize(ctx), QNT_OK) << qnt_last_error_message();
      expect_same(bytes_of(yh.t), bytes_of(ydev.t), QNT_DTYPE_I8, "static linear");
      qnt_prepared_destroy(op);
    }
  // A prepared matmul with an i32 bias and an i32 output.
  T b, bi;
  int8_tensor(b, QNT_DTYPE_I8, {K, N}, qw.p, 8);
  std::vector<int32_t> ib(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) ib[static_cast<size_t>(n)] = static_cast<int32_t>(n * 1000 - 30000);
  make_raw(bi, QNT_DTYPE_I32, {N}, nullptr, ib.data(), 4 * ib.size());
  qnt_prepared *op = nullptr;
  ASSERT_EQ(qnt_prepared_create_matmul(ctx, b.t, bi.t, nullptr, &op), QNT_OK);
  T yh, ydev, xdev;
  make_q(yh, QNT_DTYPE_I32, {M, N}, nullptr);
  to_device(ydev, yh.t);
  to_device(xdev, x.t);
  ASSERT_EQ(qnt_prepared_run(ctx, op, x.t, yh.t), QNT_OK);
  ASSERT_EQ(qnt_prepared_run(ctx, op, xdev.t, ydev.t), QNT_OK);
  ASSERT_EQ(qnt_context_synchronize(ctx), QNT_OK);
  expect_same(bytes_of(yh.t), bytes_of(ydev.t), QNT_DTYPE_I32, "prepared matmul");
  qnt_prepared_destroy(op);
  qnt_context_destroy(ctx);
}

TEST(Gpu, WeightOnlyEveryModeEveryBatch) {
  REQUIRE_GPU();
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  ASSERT_EQ(qnt_context_set_cuda_stream(ctx, 0, nullptr), QNT_OK);
  struct Case {
    qnt_dtype wd;
    int64_t K, N, block;  // block 0: per output feature
  };
  const Case cases[] = {{QNT_DTYPE_I4, 4096, 129, 128}, {QNT_DTYPE_U4, 1000, 33, 32},
                        {QNT_DTYPE_NF4, 4096, 64, 64},  {QNT_DTYPE_I8, 513, 17, 0},
                        {QNT_DTYPE_U8, 256, 40, 128},   {QNT_DTYPE_U4, 31, 5, 0}};
  for (const Case &c : cases) {
    std::vector<float> wf = inputs(static_cast<size_t>(c.N * c.K), 21);
    for (auto &v : wf)
      if (!std::isfinite(v) || std::fabs(v) > 20) v = 1.0f;
    T wsrc, w;
    make_f32(wsrc, {c.N, c.K}, wf);
    QP wq;
    const qnt_granularity g = c.block == 0 ? QNT_GRANULARITY_PER_AXIS : QNT_GRANULARITY_PER_BLOCK;
    const int64_t axis = c.block == 0 ? 0 : 1;
    ASSERT_EQ(c.wd == QNT_DTYPE_NF4
                  ? qnt_calibrate_codebook(nullptr, wsrc.t, c.wd, g, axis, c.block, &wq.p)
                  : qnt_calibrate_minmax(nullptr, wsrc.t, c.wd, QNT_SCHEME_AFFINE, g, axis, c.block,
                                         &wq.p),
              QNT_OK);
    make_q(w, c.wd, {c.N, c.K}, wq.p);
    ASSERT_EQ(qnt_quantize(nullptr, wsrc.t, w.t), QNT_OK);
    std::vector<float> bias(static_cast<size_t>(c.N));
    for (size_t n = 0; n < bias.size(); ++n) bias[n] = 0.01f * static_cast<float>(n);
    T b, bdev, wdev;
    make_f32(b, {c.N}, bias);
    to_device(bdev, b.t);
    to_device(wdev, w.t);
    for (int64_t mode : {QNT_WEIGHT_ONLY_F32, QNT_WEIGHT_ONLY_INT8_ACT, QNT_WEIGHT_ONLY_INT8_BLOCK}) {
      qnt_op_desc *desc = nullptr;
      ASSERT_EQ(qnt_op_desc_create(&desc), QNT_OK);
      ASSERT_EQ(qnt_op_desc_set(desc, QNT_OP_WEIGHT_ONLY_MODE, mode), QNT_OK);
      qnt_prepared *op = nullptr;
      ASSERT_EQ(qnt_prepared_create_linear_weight_only(ctx, w.t, b.t, desc, &op), QNT_OK)
          << qnt_last_error_message();
      qnt_op_desc_destroy(desc);
      for (int64_t M : {1, 2, 3, 8, 9, 16}) {
        for (qnt_dtype xd : {QNT_DTYPE_F32, QNT_DTYPE_F16, QNT_DTYPE_BF16}) {
          const std::string what = std::string(qnt_dtype_name(c.wd)) + " K=" + std::to_string(c.K) +
                                   " mode " + std::to_string(mode) + " M=" + std::to_string(M) +
                                   " x " + qnt_dtype_name(xd);
          std::vector<float> x = inputs(static_cast<size_t>(M * c.K), static_cast<uint32_t>(M));
          for (auto &v : x)
            if (std::fabs(v) > 1e4f) v = 3.0f;  // keep one NaN and the infinities
          T xh, xdv, yh, ydv;
          float_tensor(xh, xd, {M, c.K}, x);
          to_device(xdv, xh.t);
          make_q(yh, xd, {M, c.N}, nullptr);
          to_device(ydv, yh.t);
          ASSERT_EQ(qnt_prepared_run(ctx, op, xh.t, yh.t), QNT_OK) << what;
          ASSERT_EQ(qnt_prepared_run(ctx, op, xdv.t, ydv.t), QNT_OK)
              << what << qnt_last_error_message();
          ASSERT_EQ(qnt_context_synchronize(ctx), QNT_OK) << what << qnt_last_error_message();
          expect_same(bytes_of(yh.t), bytes_of(ydv.t), xd, what);
          if (mode == QNT_WEIGHT_ONLY_F32) {  // the one-shot call on device tensors
            T y1;
            make_q(y1, xd, {M, c.N}, nullptr);
            T y1d;
            to_device(y1d, y1.t);
            ASSERT_EQ(qnt_linear_weight_only(nullptr, xdv.t, wdev.t, bdev.t, y1d.t), QNT_OK)
                << what << qnt_last_error_message();
            expect_same(bytes_of(yh.t), bytes_of(y1d.t), xd, "one-shot " + what);
          }
        }
      }
      qnt_prepared_destroy(op);
    }
  }
  qnt_context_destroy(ctx);
}
