// The defects and additions of the ABI review (qnt.h, ABI 1), each through the public ABI:
// bounded empty shapes and empty ops, crafted calibrator buffers, merge overflow, the context's
// options (threads, kernel cap, devices), tensor additions, and DLPack in both forms.
#include "calib/calibrator.hpp"
#include "core/context.hpp"
#include "helpers.hpp"
#include "io/dlpack.hpp"

#include <qnt/qnt.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define QNT_TEST_HAVE_DLPACK_H 1
#endif
#endif

namespace {

using qnt_test::bytes_of;
using qnt_test::make_f32;
using qnt_test::make_q;
using qnt_test::make_raw;
using qnt_test::per_tensor;
using qnt_test::QP;
using qnt_test::T;

constexpr int64_t k2_40 = int64_t{1} << 40;

// --- empty tensors with huge dimensions ---------------------------------------------------------

TEST(EmptyShapes, HugeDimensionsAreBoundedEvenWhenEmpty) {
  qnt_tensor *t = nullptr;
  const int64_t a[2] = {0, int64_t{1} << 62}, b[3] = {k2_40, k2_40, 0};
  EXPECT_EQ(qnt_tensor_create(QNT_DTYPE_F32, a, 2, nullptr, &t), QNT_ERR_OVERFLOW);
  EXPECT_EQ(qnt_tensor_create(QNT_DTYPE_I8, b, 3, nullptr, &t), QNT_ERR_OVERFLOW);
  EXPECT_EQ(t, nullptr);
  const int64_t ok[2] = {0, QNT_MAX_ELEMENTS};
  ASSERT_EQ(qnt_tensor_create(QNT_DTYPE_F32, ok, 2, nullptr, &t), QNT_OK);
  qnt_tensor_destroy(t);
}

// Empty outputs: success, nothing computed or allocated, whatever the other dimensions are.
TEST(EmptyShapes, EmptyOpsSucceedAtOnce) {
  QP q8, qy;
  per_tensor(q8, QNT_DTYPE_I8, 0.1f, 0);
  per_tensor(qy, QNT_DTYPE_U8, 0.1f, 3);
  {  // qmatmul: [0, 2^40] x [2^40, 0]
    T a, b, y;
    make_q(a, QNT_DTYPE_U8, {0, k2_40}, nullptr);
    make_q(b, QNT_DTYPE_I8, {k2_40, 0}, q8.p);
    make_q(y, QNT_DTYPE_I32, {0, 0}, nullptr);
    EXPECT_EQ(qnt_qmatmul(nullptr, a.t, b.t, nullptr, y.t), QNT_OK) << qnt_last_error_message();
    T b2, y2;  // [0, 2^40] x [2^40, 2^40 x 0 columns]: the scratch used to be sized from N, K
    make_q(b2, QNT_DTYPE_I8, {0, k2_40}, q8.p);
    make_q(y2, QNT_DTYPE_U8, {0, k2_40}, qy.p);
    T a2;
    make_q(a2, QNT_DTYPE_U8, {0, 0}, qy.p);
    EXPECT_EQ(qnt_qmatmul(nullptr, a2.t, b2.t, nullptr, y2.t), QNT_OK) << qnt_last_error_message();
  }
  {  // linear layers: 0 rows, N = 2^40 (weight-only used to loop over N)
    T x, w8, w4, y;
    make_q(x, QNT_DTYPE_F32, {0, 0}, nullptr);
    make_q(w8, QNT_DTYPE_I8, {k2_40, 0}, q8.p);
    QP q4;
    per_tensor(q4, QNT_DTYPE_I4, 0.1f, 0);
    make_q(w4, QNT_DTYPE_I4, {k2_40, 0}, q4.p);
    make_q(y, QNT_DTYPE_F32, {0, k2_40}, nullptr);
    EXPECT_EQ(qnt_linear_dynamic(nullptr, x.t, w8.t, nullptr, nullptr, y.t), QNT_OK)
        << qnt_last_error_message();
    EXPECT_EQ(qnt_linear_weight_only(nullptr, x.t, w4.t, nullptr, y.t), QNT_OK)
        << qnt_last_error_message();
  }
  {  // conv: no image, a huge output plane (the im2col buffer used to be sized from it)
    T x, w, y;
    make_q(x, QNT_DTYPE_U8, {0, 1, int64_t{1} << 30, int64_t{1} << 30}, nullptr);
    make_q(w, QNT_DTYPE_I8, {1, 1, 1, 1}, q8.p);
    make_q(y, QNT_DTYPE_I32, {0, 1, int64_t{1} << 30, int64_t{1} << 30}, nullptr);
    EXPECT_EQ(qnt_qconv2d(nullptr, x.t, w.t, nullptr, nullptr, y.t), QNT_OK)
        << qnt_last_error_message();
  }
  {  // conv: a dilation that would overflow int64 with a tall kernel is refused, not wrapped
    T x, w, y;
    make_q(x, QNT_DTYPE_U8, {1, 1, 4, 4}, nullptr);
    make_q(w, QNT_DTYPE_I8, {1, 1, k2_40, 0}, q8.p);
    qnt_op_desc *d = nullptr;
    ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
    ASSERT_EQ(qnt_op_desc_set(d, QNT_OP_DILATION_H, int64_t{1} << 31), QNT_OK);
    int64_t s[4];
    EXPECT_EQ(qnt_conv2d_output_shape(x.t, w.t, d, s, 4), QNT_ERR_SHAPE_MISMATCH);
    // A kernel 2^33 tall: dilation * (KH - 1) passes 2^63. The shape query never reads the
    // weights, so a wrapped tensor over one byte stands in for 8 GiB of them.
    uint8_t byte = 0;
    qnt_tensor *w2 = nullptr;
    const int64_t tall[4] = {1, 1, int64_t{1} << 33, 1};
    ASSERT_EQ(qnt_tensor_wrap(QNT_DTYPE_I8, tall, 4, nullptr, &byte, size_t{1} << 33, &w2), QNT_OK);
    EXPECT_EQ(qnt_conv2d_output_shape(x.t, w2, d, s, 4), QNT_ERR_SHAPE_MISMATCH);
    qnt_tensor_destroy(w2);
    qnt_op_desc_destroy(d);
  }
  {  // per-axis calibration of an empty tensor: one parameter per channel, not an error
    T x;
    make_q(x, QNT_DTYPE_F32, {0, 4}, nullptr);
    qnt_qparams *qp = nullptr;
    ASSERT_EQ(qnt_calibrate_minmax(nullptr, x.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                   QNT_GRANULARITY_PER_AXIS, 1, 0, &qp),
              QNT_OK)
        << qnt_last_error_message();
    size_t n = 0;
    EXPECT_EQ(qnt_qparams_scale_count(qp, &n), QNT_OK);
    EXPECT_EQ(n, 4u);
    qnt_qparams_destroy(qp);
    ASSERT_EQ(
        qnt_calibrate_codebook(nullptr, x.t, QNT_DTYPE_NF4, QNT_GRANULARITY_PER_AXIS, 1, 0, &qp),
        QNT_OK)
        << qnt_last_error_message();
    qnt_qparams_destroy(qp);
  }
  {  // a per-axis calibrator observing an empty batch with huge dimensions
    qnt_calibrator *c = nullptr;
    ASSERT_EQ(qnt_calibrator_create(QNT_CALIB_MINMAX, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                    QNT_GRANULARITY_PER_AXIS, 1, &c),
              QNT_OK);
    T x;
    make_q(x, QNT_DTYPE_F32, {k2_40, 3, 0}, nullptr);
    EXPECT_EQ(qnt_calibrator_observe(nullptr, c, x.t), QNT_OK) << qnt_last_error_message();
    qnt_calibrator_destroy(c);
  }
}

// --- crafted calibrator buffers -------------------------------------------------------------

// The serialized form (format 1): a 61-byte header, then per channel finite, nan, inf (u64),
// min, max (f32), averaged (u8), avg_min, avg_max (f32), then the histogram; a checksum last.
constexpr size_t kChannel = 61, kFinite = kChannel, kMin = kChannel + 24, kMax = kChannel + 28,
                 kAveraged = kChannel + 32, kAvgMin = kChannel + 33;

std::vector<uint8_t> serialized_after(qnt_calib_method m, const std::vector<float> &v) {
  qnt_calibrator *c = nullptr;
  EXPECT_EQ(
      qnt_calibrator_create(m, QNT_DTYPE_I8, QNT_SCHEME_AFFINE, QNT_GRANULARITY_PER_TENSOR, 0, &c),
      QNT_OK);
  T x;
  make_f32(x, {static_cast<int64_t>(v.size())}, v);
  EXPECT_EQ(qnt_calibrator_observe(nullptr, c, x.t), QNT_OK);
  size_t n = 0;
  EXPECT_EQ(qnt_calibrator_serialize(c, nullptr, 0, &n), QNT_OK);
  std::vector<uint8_t> b(n);
  EXPECT_EQ(qnt_calibrator_serialize(c, b.data(), n, &n), QNT_OK);
  qnt_calibrator_destroy(c);
  return b;
}

// Patches bytes at `at` and re-signs the buffer: the checksum is valid, the state is crafted.
template <class V>
std::vector<uint8_t> crafted(std::vector<uint8_t> b, size_t at, V value) {
  std::memcpy(b.data() + at, &value, sizeof value);
  const uint64_t sum = qnt::calib::checksum(b.data(), b.size() - 8);
  std::memcpy(b.data() + b.size() - 8, &sum, 8);
  return b;
}

qnt_status deserialize_status(const std::vector<uint8_t> &b) {
  qnt_calibrator *c = nullptr;
  const qnt_status s = qnt_calibrator_deserialize(b.data(), b.size(), &c);
  qnt_calibrator_destroy(c);
  return s;
}

TEST(CraftedCalibrator, EveryInvariantIsChecked) {
  const std::vector<float> v{1.0f, 2.0f, 3.0f, -0.5f};
  const auto mse = serialized_after(QNT_CALIB_MSE, v);
  ASSERT_EQ(deserialize_status(mse), QNT_OK);
  ASSERT_EQ(deserialize_status(crafted(mse, kFinite, uint64_t{4})), QNT_OK);  // re-signing works
  // A histogram whose range does not cover the stored extremes (the MSE search never ended).
  EXPECT_EQ(deserialize_status(crafted(mse, kMax, 1000.0f)), QNT_ERR_CORRUPT_DATA);
  // Extremes inside the range, but bins of values outside them are occupied.
  EXPECT_EQ(deserialize_status(crafted(mse, kMax, 2.5f)), QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(deserialize_status(crafted(mse, kMin, 0.0f)), QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(deserialize_status(crafted(mse, kMin, 2.0f)), QNT_ERR_CORRUPT_DATA);
  // A moving average with non-finite averages, or none where values were seen.
  const auto avg = serialized_after(QNT_CALIB_MOVING_AVERAGE, v);
  ASSERT_EQ(deserialize_status(avg), QNT_OK);
  EXPECT_EQ(deserialize_status(crafted(avg, kAvgMin, std::nanf(""))), QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(deserialize_status(crafted(avg, kAvgMin, INFINITY)), QNT_ERR_CORRUPT_DATA);
  EXPECT_EQ(deserialize_status(crafted(avg, kAveraged, uint8_t{0})), QNT_ERR_CORRUPT_DATA);
  // A per-tensor calibrator keeps axis 0 (found by fuzz_calibrator: a buffer with another axis
  // deserialized, then serialized to different bytes).
  EXPECT_EQ(deserialize_status(crafted(mse, 24, int64_t{1})), QNT_ERR_CORRUPT_DATA);
  // Other methods keep no averages.
  const auto mm = serialized_after(QNT_CALIB_MINMAX, v);
  EXPECT_EQ(deserialize_status(crafted(mm, kAveraged, uint8_t{1})), QNT_ERR_CORRUPT_DATA);
}

TEST(CraftedCalibrator, MergeDoesNotWrapCounts) {
  // A channel that saw 2^63 values (valid: min-max keeps no histogram), merged with a copy of
  // itself: 2^64 does not fit; it used to wrap to 0 and read as empty.
  const auto b = crafted(serialized_after(QNT_CALIB_MINMAX, {1.0f}), kFinite, uint64_t{1} << 63);
  qnt_calibrator *a = nullptr, *c = nullptr;
  ASSERT_EQ(qnt_calibrator_deserialize(b.data(), b.size(), &a), QNT_OK) << qnt_last_error_message();
  ASSERT_EQ(qnt_calibrator_deserialize(b.data(), b.size(), &c), QNT_OK);
  EXPECT_EQ(qnt_calibrator_merge(a, c), QNT_ERR_OVERFLOW);
  uint64_t finite = 0, nan = 0, inf = 0;
  EXPECT_EQ(qnt_calibrator_counts(a, &finite, &nan, &inf), QNT_OK);
  EXPECT_EQ(finite, uint64_t{1} << 63);  // unchanged by the failed merge
  qnt_calibrator_destroy(a);
  qnt_calibrator_destroy(c);
}

// --- the context ----------------------------------------------------------------------------

// Context::threads() may detect the machine (and allocate) on first use: it must be allowed to
// throw, or a failed allocation inside it would call std::terminate.
static_assert(!noexcept(std::declval<const qnt::Context &>().threads()),
              "Context::threads() must not be noexcept");

TEST(Context, MaxIsaOption) {
  qnt_context *c = nullptr;
  ASSERT_EQ(qnt_context_create(&c), QNT_OK);
  qnt_isa native = 0, isa = 0;
  ASSERT_EQ(qnt_context_isa(c, &native), QNT_OK);
  EXPECT_NE(native, QNT_ISA_NATIVE);
  ASSERT_EQ(qnt_context_set_max_isa(c, QNT_ISA_REFERENCE), QNT_OK);
  ASSERT_EQ(qnt_context_isa(c, &isa), QNT_OK);
  EXPECT_EQ(isa, QNT_ISA_REFERENCE);
  ASSERT_EQ(qnt_context_set_max_isa(c, QNT_ISA_NATIVE), QNT_OK);
  ASSERT_EQ(qnt_context_isa(c, &isa), QNT_OK);
  EXPECT_EQ(isa, native);
  EXPECT_EQ(qnt_context_set_max_isa(c, 99), QNT_ERR_INVALID_ARGUMENT);
#if defined(__x86_64__)
  EXPECT_EQ(qnt_context_set_max_isa(c, QNT_ISA_NEON), QNT_ERR_INVALID_ARGUMENT);
  // A cap above the machine is allowed: the machine's best is used.
  ASSERT_EQ(qnt_context_set_max_isa(c, QNT_ISA_AVX512_VNNI), QNT_OK);
  ASSERT_EQ(qnt_context_isa(c, &isa), QNT_OK);
  EXPECT_EQ(isa, native);
#endif
  EXPECT_STREQ(qnt_isa_name(QNT_ISA_AVX512_VNNI), "avx512_vnni");
  EXPECT_STREQ(qnt_isa_name(-5), "invalid");
  EXPECT_EQ(qnt_context_set_max_isa(nullptr, QNT_ISA_REFERENCE), QNT_ERR_NULL_POINTER);
  EXPECT_EQ(qnt_context_synchronize(c), QNT_OK);
  EXPECT_EQ(qnt_context_synchronize(nullptr), QNT_ERR_NULL_POINTER);
  int32_t devices = 0;
  ASSERT_EQ(qnt_context_cuda_device_count(c, &devices), QNT_OK);
  EXPECT_EQ(qnt_context_set_cuda_stream(c, devices, nullptr), QNT_ERR_NO_DEVICE);
  qnt_context_destroy(c);
}

// The calibrators' kernels under every cap give the same statistics, byte for byte.
TEST(Context, CalibratorsGiveTheSameStateUnderEveryCap) {
  std::vector<float> v(10007);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<float>(i)) * 3.0f;
  v[5] = NAN;
  v[6] = -INFINITY;
  v[7] = std::numeric_limits<float>::denorm_min();
  T x;
  make_f32(x, {static_cast<int64_t>(v.size())}, v);
  std::vector<uint8_t> first;
  for (qnt_isa cap : {QNT_ISA_REFERENCE, QNT_ISA_AVX2, QNT_ISA_AVX512, QNT_ISA_NATIVE}) {
    qnt_context *ctx = nullptr;
    ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
    if (qnt_context_set_max_isa(ctx, cap) != QNT_OK) {  // another architecture's value
      qnt_context_destroy(ctx);
      continue;
    }
    qnt_calibrator *c = nullptr;
    ASSERT_EQ(qnt_calibrator_create(QNT_CALIB_ADAPTIVE, QNT_DTYPE_I8, QNT_SCHEME_AFFINE,
                                    QNT_GRANULARITY_PER_TENSOR, 0, &c),
              QNT_OK);
    ASSERT_EQ(qnt_calibrator_observe(ctx, c, x.t), QNT_OK);
    size_t n = 0;
    ASSERT_EQ(qnt_calibrator_serialize(c, nullptr, 0, &n), QNT_OK);
    std::vector<uint8_t> b(n);
    ASSERT_EQ(qnt_calibrator_serialize(c, b.data(), n, &n), QNT_OK);
    if (first.empty())
      first = b;
    else
      EXPECT_EQ(b, first) << qnt_isa_name(cap);
    qnt_calibrator_destroy(c);
    qnt_context_destroy(ctx);
  }
}

// Run as its own process with OMP_NUM_THREADS=3 (see tests/CMakeLists.txt).
TEST(Threads, DefaultFollowsOmpNumThreads) {
  const char *env = std::getenv("OMP_NUM_THREADS");
  if (env == nullptr) GTEST_SKIP() << "run with OMP_NUM_THREADS set";
  qnt_context *c = nullptr;
  ASSERT_EQ(qnt_context_create(&c), QNT_OK);
  int32_t n = 0;
  ASSERT_EQ(qnt_context_num_threads(c, &n), QNT_OK);
#if defined(QNT_WITH_OPENMP)
  EXPECT_EQ(n, std::atoi(env));
  ASSERT_EQ(qnt_context_set_num_threads(c, 2), QNT_OK);  // an explicit count still wins
  ASSERT_EQ(qnt_context_num_threads(c, &n), QNT_OK);
  EXPECT_EQ(n, 2);
#else
  EXPECT_EQ(n, 1);
#endif
  qnt_context_destroy(c);
}

// --- tensors ----------------------------------------------------------------------------------

TEST(Tensor, CopyFromDeviceAndReadOnly) {
  QP q;
  per_tensor(q, QNT_DTYPE_I4, 0.5f, 0);
  T t;
  make_q(t, QNT_DTYPE_I4, {3}, q.p);  // 3 nibbles: 2 bytes, 4 unused bits
  const uint8_t src[2] = {0x21, 0xF3};
  ASSERT_EQ(qnt_tensor_copy_from(t.t, src, sizeof src), QNT_OK);
  EXPECT_EQ(bytes_of(t.t), (std::vector<uint8_t>{0x21, 0x03}));  // unused bits cleared
  EXPECT_EQ(qnt_tensor_copy_from(t.t, src, 1), QNT_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(qnt_tensor_copy_from(t.t, nullptr, 2), QNT_ERR_NULL_POINTER);
  void *data = nullptr;
  ASSERT_EQ(qnt_tensor_data(t.t, &data), QNT_OK);
  EXPECT_EQ(qnt_tensor_copy_from(t.t, data, 2), QNT_ERR_INVALID_ARGUMENT);  // overlaps
  qnt_device_type type = 0;
  int32_t id = -1, ro = -1;
  ASSERT_EQ(qnt_tensor_device(t.t, &type, &id), QNT_OK);
  EXPECT_EQ(type, QNT_DEVICE_CPU);
  EXPECT_EQ(id, 0);
  ASSERT_EQ(qnt_tensor_is_read_only(t.t, &ro), QNT_OK);
  EXPECT_EQ(ro, 0);
}

// --- DLPack -----------------------------------------------------------------------------------

using qnt::dlpack::DLManagedTensor;
using qnt::dlpack::DLManagedTensorVersioned;

#if defined(QNT_TEST_HAVE_DLPACK_H)
// The layouts qnt declares are those of Debian's dlpack.h (the legacy form, DLPack 0.6).
static_assert(sizeof(::DLManagedTensor) == sizeof(DLManagedTensor), "DLManagedTensor size");
static_assert(offsetof(::DLManagedTensor, manager_ctx) == offsetof(DLManagedTensor, manager_ctx),
              "manager_ctx");
static_assert(offsetof(::DLManagedTensor, deleter) == offsetof(DLManagedTensor, deleter),
              "deleter");
static_assert(offsetof(::DLTensor, byte_offset) == offsetof(qnt::dlpack::DLTensor, byte_offset),
              "byte_offset");
static_assert(offsetof(::DLTensor, strides) == offsetof(qnt::dlpack::DLTensor, strides), "strides");
static_assert(offsetof(::DLTensor, dtype) == offsetof(qnt::dlpack::DLTensor, dtype), "dtype");
static_assert(int{kDLCPU} == int{qnt::dlpack::kDLCPU} &&
                  int{kDLCUDA} == int{qnt::dlpack::kDLCUDA} &&
                  int{kDLCUDAHost} == int{qnt::dlpack::kDLCUDAHost},
              "devices");
static_assert(int{kDLInt} == int{qnt::dlpack::kDLInt} &&
                  int{kDLUInt} == int{qnt::dlpack::kDLUInt} &&
                  int{kDLFloat} == int{qnt::dlpack::kDLFloat},
              "type codes");
#endif

// A producer's tensor: memory, shape and a deleter that counts its calls.
struct Producer {
  std::vector<float> data{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  int deleted = 0;
  DLManagedTensor legacy{};
  DLManagedTensorVersioned versioned{};

  Producer() {
    qnt::dlpack::DLTensor t{};
    t.data = data.data();
    t.device = {qnt::dlpack::kDLCPU, 0};
    t.ndim = 2;
    t.dtype = {qnt::dlpack::kDLFloat, 32, 1};
    t.shape = shape;
    t.strides = strides;
    legacy.dl_tensor = t;
    legacy.manager_ctx = this;
    legacy.deleter = [](DLManagedTensor *m) { ++static_cast<Producer *>(m->manager_ctx)->deleted; };
    versioned.version = {1, 0};
    versioned.dl_tensor = t;
    versioned.manager_ctx = this;
    versioned.deleter = [](DLManagedTensorVersioned *m) {
      ++static_cast<Producer *>(m->manager_ctx)->deleted;
    };
  }
};

TEST(DLPack, ImportWithoutCopyAndDeleteOnce) {
  for (int versioned : {0, 1}) {
    Producer p;
    void *m = versioned ? static_cast<void *>(&p.versioned) : static_cast<void *>(&p.legacy);
    qnt_tensor *t = nullptr;
    ASSERT_EQ(qnt_tensor_from_dlpack(m, versioned, nullptr, &t), QNT_OK)
        << qnt_last_error_message();
    void *data = nullptr;
    ASSERT_EQ(qnt_tensor_data(t, &data), QNT_OK);
    EXPECT_EQ(data, p.data.data());  // no copy
    // An export of the imported tensor keeps the producer's memory alive after t is gone.
    void *out = nullptr;
    ASSERT_EQ(qnt_tensor_to_dlpack(t, 1, &out), QNT_OK);
    qnt_tensor_destroy(t);
    EXPECT_EQ(p.deleted, 0);
    auto *e = static_cast<DLManagedTensorVersioned *>(out);
    EXPECT_EQ(e->dl_tensor.data, p.data.data());
    e->deleter(e);
    EXPECT_EQ(p.deleted, 1);
  }
}

TEST(DLPack, RefusalsLeaveOwnershipWithTheCaller) {
  Producer p;
  qnt_tensor *t = nullptr;
  p.legacy.dl_tensor.strides[1] = 2;  // not compact
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, nullptr, &t), QNT_ERR_INVALID_ARGUMENT);
  p.legacy.dl_tensor.strides[1] = 1;
  p.legacy.dl_tensor.device.device_type = 4;  // kDLOpenCL
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, nullptr, &t), QNT_ERR_UNSUPPORTED);
  p.legacy.dl_tensor.device.device_type = qnt::dlpack::kDLCPU;
  p.legacy.dl_tensor.dtype = {qnt::dlpack::kDLFloat, 64, 1};
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, nullptr, &t), QNT_ERR_UNSUPPORTED);
  p.legacy.dl_tensor.dtype = {qnt::dlpack::kDLFloat, 32, 4};
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, nullptr, &t), QNT_ERR_UNSUPPORTED);
  p.legacy.dl_tensor.dtype = {qnt::dlpack::kDLFloat, 32, 1};
  p.legacy.dl_tensor.byte_offset = 2;  // misaligned for f32
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, nullptr, &t), QNT_ERR_INVALID_ARGUMENT);
  p.legacy.dl_tensor.byte_offset = 0;
  p.versioned.version.major = 2;
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.versioned, 1, nullptr, &t), QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 7, nullptr, &t), QNT_ERR_INVALID_ARGUMENT);
  QP q;
  per_tensor(q, QNT_DTYPE_I8, 0.1f, 0);
  EXPECT_EQ(qnt_tensor_from_dlpack(&p.legacy, 0, q.p, &t), QNT_ERR_INVALID_ARGUMENT);  // f32
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(p.deleted, 0);  // every refusal left the tensor to its producer
}

TEST(DLPack, ReadOnlyAndQuantizedImports) {
  // A read-only versioned tensor is refused as an output; readable as an input.
  Producer p;
  p.versioned.flags = qnt::dlpack::kFlagReadOnly;
  qnt_tensor *t = nullptr;
  ASSERT_EQ(qnt_tensor_from_dlpack(&p.versioned, 1, nullptr, &t), QNT_OK);
  int32_t ro = 0;
  ASSERT_EQ(qnt_tensor_is_read_only(t, &ro), QNT_OK);
  EXPECT_EQ(ro, 1);
  QP q;
  per_tensor(q, QNT_DTYPE_I8, 0.5f, 0);
  T y;
  make_q(y, QNT_DTYPE_I8, {2, 3}, q.p);
  EXPECT_EQ(qnt_quantize(nullptr, t, y.t), QNT_OK);
  EXPECT_EQ(bytes_of(y.t), (std::vector<uint8_t>{3, 0xFC, 6, 0, 14, 0xFE}));  // 6.5 -> 6 (even)
  EXPECT_EQ(qnt_dequantize(nullptr, y.t, t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(qnt_tensor_copy_from(t, p.data.data(), 24), QNT_ERR_INVALID_ARGUMENT);
  void *out = nullptr;
  ASSERT_EQ(qnt_tensor_to_dlpack(t, 1, &out), QNT_OK);
  auto *e = static_cast<DLManagedTensorVersioned *>(out);
  EXPECT_EQ(e->flags & qnt::dlpack::kFlagReadOnly, qnt::dlpack::kFlagReadOnly);
  e->deleter(e);
  qnt_tensor_destroy(t);
  EXPECT_EQ(p.deleted, 1);

  // Packed int4 in, with qparams attached on import; out again as {kDLInt, 4}.
  uint8_t packed[2] = {0x7F, 0x08};  // -1, 7, -8 (element 0 in the low nibble)
  int64_t shape[1] = {3};
  DLManagedTensor m{};
  m.dl_tensor.data = packed;
  m.dl_tensor.device = {qnt::dlpack::kDLCPU, 0};
  m.dl_tensor.ndim = 1;
  m.dl_tensor.dtype = {qnt::dlpack::kDLInt, 4, 1};
  m.dl_tensor.shape = shape;
  int deleted = 0;
  m.manager_ctx = &deleted;
  m.deleter = [](DLManagedTensor *self) { ++*static_cast<int *>(self->manager_ctx); };
  QP q4;
  per_tensor(q4, QNT_DTYPE_I4, 0.25f, 0);
  ASSERT_EQ(qnt_tensor_from_dlpack(&m, 0, q4.p, &t), QNT_OK) << qnt_last_error_message();
  T f;
  make_q(f, QNT_DTYPE_F32, {3}, nullptr);
  ASSERT_EQ(qnt_dequantize(nullptr, t, f.t), QNT_OK);
  EXPECT_EQ(qnt_test::floats_of(f.t), (std::vector<float>{-0.25f, 1.75f, -2.0f}));
  ASSERT_EQ(qnt_tensor_to_dlpack(t, 0, &out), QNT_OK);
  auto *l = static_cast<DLManagedTensor *>(out);
  EXPECT_EQ(l->dl_tensor.dtype.code, qnt::dlpack::kDLInt);
  EXPECT_EQ(l->dl_tensor.dtype.bits, 4);
  EXPECT_EQ(l->dl_tensor.strides, nullptr);
  l->deleter(l);
  qnt_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
}

TEST(DLPack, ExportOwnTensorsAndRefuseCodebooks) {
  QP nf4;
  per_tensor(nf4, QNT_DTYPE_NF4, 1.0f, 0);
  T codes;
  make_q(codes, QNT_DTYPE_NF4, {4}, nf4.p);
  void *out = nullptr;
  EXPECT_EQ(qnt_tensor_to_dlpack(codes.t, 0, &out), QNT_ERR_UNSUPPORTED);
  EXPECT_EQ(out, nullptr);
  T x;
  make_f32(x, {2, 2}, {1, 2, 3, 4});
  ASSERT_EQ(qnt_tensor_to_dlpack(x.t, 1, &out), QNT_OK);
  qnt_tensor_destroy(x.t);  // the export keeps qnt's storage alive
  x.t = nullptr;
  auto *e = static_cast<DLManagedTensorVersioned *>(out);
  EXPECT_EQ(e->version.major, 1u);
  EXPECT_EQ(e->dl_tensor.ndim, 2);
  EXPECT_EQ(e->dl_tensor.strides[0], 2);
  EXPECT_EQ(e->dl_tensor.strides[1], 1);
  EXPECT_EQ(static_cast<const float *>(e->dl_tensor.data)[3], 4.0f);
  // ... and it imports back into qnt, sharing the memory.
  qnt_tensor *back = nullptr;
  ASSERT_EQ(qnt_tensor_from_dlpack(e, 1, nullptr, &back), QNT_OK);
  EXPECT_EQ(qnt_test::floats_of(back), (std::vector<float>{1, 2, 3, 4}));
  qnt_tensor_destroy(back);  // calls e's deleter, which frees the storage
}

}  // namespace

namespace {

// Run as its own process with QNT_CUDA_MODULE pointing at a stand-in module that marks its
// loading (see tests/CMakeLists.txt): CPU work never looks for the CUDA module; the first
// question about a device does.
TEST(LazyCuda, CpuWorkNeverLooksForTheCudaModule) {
  if (std::getenv("QNT_TEST_LAZY_CUDA") == nullptr) GTEST_SKIP() << "run by the lazy_cuda test";
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  T x, q;
  make_f32(x, {4}, {1, 2, 3, 4});
  qnt_qparams *qp = nullptr;
  ASSERT_EQ(qnt_calibrate_minmax(ctx, x.t, QNT_DTYPE_I8, QNT_SCHEME_SYMMETRIC,
                                 QNT_GRANULARITY_PER_TENSOR, 0, 0, &qp),
            QNT_OK);
  make_q(q, QNT_DTYPE_I8, {4}, qp);
  qnt_qparams_destroy(qp);
  ASSERT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_OK);
  ASSERT_EQ(qnt_quantize(ctx, x.t, q.t), QNT_OK);
  uint64_t features = 0;
  ASSERT_EQ(qnt_context_cpu_features(ctx, &features), QNT_OK);
  EXPECT_EQ(std::getenv("QNT_TEST_CUDA_MODULE_LOADED"), nullptr);
  int32_t n = -1;
  ASSERT_EQ(qnt_context_cuda_device_count(ctx, &n), QNT_OK);
  EXPECT_EQ(n, 0);
  EXPECT_NE(std::getenv("QNT_TEST_CUDA_MODULE_LOADED"), nullptr);  // the probe happens here
  qnt_context_destroy(ctx);
}

}  // namespace

#include <sys/resource.h>

namespace {

// Run as its own process (see tests/CMakeLists.txt; not under ASan, which reserves terabytes of
// address space): with the address space capped so that one worker's scratch fits and two do
// not, a threaded convolution fails before it writes anything. It used to let the first worker
// write its image while the second one's allocation failed.
TEST(ConvAllocation, FailureLeavesTheOutputUntouched) {
  if (std::getenv("QNT_TEST_ALLOC_LIMIT") == nullptr) GTEST_SKIP() << "run by conv_alloc_failure";
  // x [2, 1, 1, 1] padded by 2048 on every side: a 4097 x 4097 output plane per image, so each
  // worker needs a 16.8 MB im2col buffer and a 67 MB accumulator.
  QP qw;
  per_tensor(qw, QNT_DTYPE_I8, 0.5f, 0);
  const uint8_t xv[2] = {3, 5};
  const int8_t wv[1] = {2};
  T x, w, y;
  make_raw(x, QNT_DTYPE_U8, {2, 1, 1, 1}, nullptr, xv, 2);
  make_raw(w, QNT_DTYPE_I8, {1, 1, 1, 1}, qw.p, wv, 1);
  qnt_op_desc *d = nullptr;
  ASSERT_EQ(qnt_op_desc_create(&d), QNT_OK);
  for (qnt_op_option k : {QNT_OP_PAD_TOP, QNT_OP_PAD_LEFT, QNT_OP_PAD_BOTTOM, QNT_OP_PAD_RIGHT})
    ASSERT_EQ(qnt_op_desc_set(d, k, 2048), QNT_OK);
  make_q(y, QNT_DTYPE_I32, {2, 1, 4097, 4097}, nullptr);
  void *yd = nullptr;
  ASSERT_EQ(qnt_tensor_data(y.t, &yd), QNT_OK);
  const size_t ybytes = size_t{2} * 4097 * 4097 * 4;
  std::memset(yd, 0x7F, ybytes);
  qnt_context *ctx = nullptr;
  ASSERT_EQ(qnt_context_create(&ctx), QNT_OK);
  ASSERT_EQ(qnt_context_set_num_threads(ctx, 2), QNT_OK);
  // The reference kernel's scratch (each worker's im2col matrix and accumulators of one image)
  // is what runs out; the fast kernels' implicit GEMM needs only an L2-sized block, and runs.
  ASSERT_EQ(qnt_context_set_max_isa(ctx, QNT_ISA_REFERENCE), QNT_OK);
  // Warm the thread pool up first, so that its stacks are not counted against the cap.
  {
    T a, b;
    make_f32(a, {1 << 16}, std::vector<float>(1 << 16, 1.0f));
    make_q(b, QNT_DTYPE_I8, {1 << 16}, qw.p);
    ASSERT_EQ(qnt_quantize(ctx, a.t, b.t), QNT_OK);
  }
  long pages = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fscanf(f, "%ld", &pages), 1);
  std::fclose(f);
  const rlim_t now = static_cast<rlim_t>(pages) * 4096;
  const rlimit cap{now + (120u << 20), RLIM_INFINITY};
  ASSERT_EQ(setrlimit(RLIMIT_AS, &cap), 0);
  const qnt_status s = qnt_qconv2d(ctx, x.t, w.t, nullptr, d, y.t);
  const rlimit none{RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_AS, &none);
  EXPECT_EQ(s, QNT_ERR_OUT_OF_MEMORY) << qnt_last_error_message();
  const auto *bytes = static_cast<const uint8_t *>(yd);
  size_t written = 0;
  for (size_t i = 0; i < ybytes; ++i) written += bytes[i] != 0x7F;
  EXPECT_EQ(written, 0u) << "bytes of y written by a failed call";
  qnt_context_destroy(ctx);
  qnt_op_desc_destroy(d);
}

}  // namespace
