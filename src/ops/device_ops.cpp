#include "ops/device_ops.hpp"

#include "core/error.hpp"
#include "ops/common.hpp"

#include <cstring>

namespace qnt::ops {
namespace {

// Host arrays gathered into one blob, uploaded with one copy into stream-ordered scratch.
class Uploads {
 public:
  size_t add(const void *p, size_t bytes) {
    const size_t at = (blob_.size() + 255) / 256 * 256;
    blob_.resize(at + bytes);
    if (bytes > 0) std::memcpy(blob_.data() + at, p, bytes);
    return at;
  }
  // Queues the copy; the scratch lives until the end of the op.
  const uint8_t *send(const Launch &l, DeviceScratch &s) const {
    if (blob_.empty()) return nullptr;
    cuda_check(*l.m, l.m->copy(l.device, l.stream, s.get(), blob_.data(), blob_.size(), 0),
               "copy of the parameters to the device");
    return static_cast<const uint8_t *>(s.get());
  }
  size_t size() const noexcept { return blob_.size(); }

 private:
  std::vector<uint8_t> blob_;
};

qnt_cuda_layout layout_of(const GroupLayout &L) {
  qnt_cuda_layout c{};
  c.granularity = L.granularity;
  c.outer = L.outer;
  c.dim = L.dim;
  c.inner = L.inner;
  c.block = L.block;
  c.blocks = L.blocks;
  return c;
}

qnt_cuda_qside qside_of(const ref::QuantSpec &s) {
  qnt_cuda_qside q{};
  q.code = s.code == ref::Code::NF4      ? 1
           : s.code == ref::Code::Binary ? 2
           : s.code == ref::Code::Log2   ? 3
                                         : 0;
  q.bits = s.bits;
  q.is_signed = s.is_signed ? 1 : 0;
  q.qmin = s.qmin;
  q.qmax = s.qmax;
  q.layout = layout_of(s.layout);
  q.scales = s.scales;
  q.zero_points = s.zero_points;
  return q;
}

}  // namespace

Place op_place(std::initializer_list<std::pair<const Tensor *, const char *>> tensors) {
  const Tensor *first = nullptr;
  const char *first_name = nullptr;
  for (const auto &[t, name] : tensors) {
    if (t == nullptr) continue;
    if (first == nullptr) {
      first = t;
      first_name = name;
    } else if (t->place() != first->place()) {
      fail(QNT_ERR_INVALID_ARGUMENT, first_name, " is on ", place_name(first->place()), " but ",
           name, " is on ", place_name(t->place()),
           ": an op's tensors must be on one device (move them with qnt_tensor_copy)");
    }
  }
  return first != nullptr ? first->place() : Place{};
}

void device_convert(const Context &ctx, const Place &where, int op, const Tensor &in, Tensor &out,
                    const ref::QuantSpec *from, const ref::QuantSpec *to) {
  const Launch l = launch_for(ctx, where);
  qnt_cuda_convert_args a{};
  a.op = op;
  a.float_dtype = op == QNT_CUDA_QUANTIZE ? in.dtype() : op == QNT_CUDA_DEQUANTIZE ? out.dtype()
                                                                                  : QNT_DTYPE_F32;
  a.in = in.data();
  a.out = out.data();
  a.count = in.element_count();
  Uploads up;
  size_t off[4] = {0, 0, 0, 0};
  const ref::QuantSpec *sides[2] = {from, to};
  for (int i = 0; i < 2; ++i) {
    if (sides[i] == nullptr) continue;
    off[2 * i] = up.add(sides[i]->scales, 4 * sides[i]->layout.groups);
    off[2 * i + 1] = up.add(sides[i]->zero_points, 4 * sides[i]->layout.groups);
  }
  DeviceScratch scratch(l, up.size());
  const uint8_t *base = up.send(l, scratch);
  if (from != nullptr) {
    a.from = qside_of(*from);
    a.from.scales = reinterpret_cast<const float *>(base + off[0]);
    a.from.zero_points = reinterpret_cast<const int32_t *>(base + off[1]);
  }
  if (to != nullptr) {
    a.to = qside_of(*to);
    a.to.scales = reinterpret_cast<const float *>(base + off[2]);
    a.to.zero_points = reinterpret_cast<const int32_t *>(base + off[3]);
  }
  cuda_check(*l.m, l.m->convert(l.device, l.stream, &a), "the conversion kernel");
  l.finish("the conversion kernel");
}

DeviceGemmB DeviceGemmB::upload(int32_t device, const uint8_t *host, size_t b_bytes, int64_t K,
                                int64_t N, int64_t ks, int64_t ns, bool is_signed,
                                const std::vector<int32_t> &zb, const Bias &bias) {
  DeviceGemmB d;
  d.device = device;
  d.keep_b = device_upload(device, host, b_bytes);
  d.keep_zb = device_upload(device, zb.data(), 4 * zb.size());
  d.b = static_cast<const uint8_t *>(d.keep_b.get());
  d.zb = static_cast<const int32_t *>(d.keep_zb.get());
  d.K = K;
  d.N = N;
  d.ks = ks;
  d.ns = ns;
  d.is_signed = is_signed;
  d.bytes = b_bytes + 4 * zb.size();
  if (bias.present) {
    const void *src = bias.dtype == QNT_DTYPE_I32 ? static_cast<const void *>(bias.i32.data())
                                                  : static_cast<const void *>(bias.f32.data());
    d.keep_bias = device_upload(device, src, 4 * static_cast<size_t>(N));
    d.bias = d.keep_bias.get();
    d.bytes += 4 * static_cast<size_t>(N);
  }
  return d;
}

void device_gemm(const Context &ctx, const Place &where, const uint8_t *a, bool a_signed,
                 int32_t za, int64_t rows, const DeviceGemmB &b, const Epilogue &epi, Tensor &y) {
  const Launch l = launch_for(ctx, where);
  qnt_cuda_gemm_args g{};
  g.M = rows;
  g.N = b.N;
  g.K = b.K;
  g.a = a;
  g.lda = b.K;
  g.a_signed = a_signed ? 1 : 0;
  g.za = za;
  g.b = b.b;
  g.b_ks = b.ks;
  g.b_ns = b.ns;
  g.b_signed = b.is_signed ? 1 : 0;
  g.mode = static_cast<int32_t>(epi.mode);  // the same numbering as QNT_CUDA_EPI_*
  g.zb = b.zb;
  g.bias_i32 = epi.bias_i32 != nullptr ? static_cast<const int32_t *>(b.bias) : nullptr;
  g.bias_f32 = epi.bias_f32 != nullptr ? static_cast<const float *>(b.bias) : nullptr;
  g.sy = epi.sy;
  g.zy = epi.zy;
  g.qmin = epi.qmin;
  g.qmax = epi.qmax;
  g.relu = epi.relu ? 1 : 0;
  g.y = y.data();
  g.ldy = b.N;
  Uploads up;
  const size_t off = up.add(epi.multiplier.data(), 4 * epi.multiplier.size());
  DeviceScratch scratch(l, up.size());
  const uint8_t *base = up.send(l, scratch);
  g.multiplier = epi.multiplier.empty() ? nullptr : reinterpret_cast<const float *>(base + off);
  cuda_check(*l.m, l.m->gemm(l.device, l.stream, &g), "the GEMM kernel");
  l.finish("the GEMM kernel");
}

static_assert(static_cast<int>(Epilogue::Mode::Int32) == QNT_CUDA_EPI_INT32 &&
                  static_cast<int>(Epilogue::Mode::Requantize) == QNT_CUDA_EPI_REQUANTIZE &&
                  static_cast<int>(Epilogue::Mode::Float) == QNT_CUDA_EPI_FLOAT &&
                  static_cast<int>(Epilogue::Mode::FloatQuantize) == QNT_CUDA_EPI_FLOAT_QUANTIZE,
              "epilogue numbering");

void device_weight_only(const Context &ctx, const Place &where, const DeviceWo &w, int64_t mode,
                        int64_t rows, int64_t K, int64_t N, const Tensor &x, Tensor &y) {
  const Launch l = launch_for(ctx, where);
  qnt_cuda_wo_args a{};
  a.M = rows;
  a.N = N;
  a.K = K;
  a.x = x.data();
  a.x_dtype = x.dtype();
  a.y_dtype = y.dtype();
  a.y = y.data();
  a.w = w.w;
  a.wq = qside_of(w.spec);
  a.bias = w.bias;
  a.mode = static_cast<int32_t>(mode);
  a.act_block = w.act_block;
  a.wscale = w.wscale;
  a.wblocks = w.wblocks;
  cuda_check(*l.m, l.m->weight_only(l.device, l.stream, &a), "the weight-only kernel");
  l.finish("the weight-only kernel");
}

void upload_wo_params(DeviceWo &d, const ref::QuantSpec &spec) {
  const size_t groups = spec.layout.groups;
  std::vector<uint8_t> params(8 * groups);
  std::memcpy(params.data(), spec.scales, 4 * groups);
  std::memcpy(params.data() + 4 * groups, spec.zero_points, 4 * groups);
  d.keep_params = device_upload(d.device, params.data(), params.size());
  d.spec = spec;
  d.spec.scales = static_cast<const float *>(d.keep_params.get());
  d.spec.zero_points = reinterpret_cast<const int32_t *>(
      static_cast<const uint8_t *>(d.keep_params.get()) + 4 * groups);
  d.bytes += params.size();
}

DeviceWo upload_weight_only(int32_t device, const Tensor &w, const ref::QuantSpec &spec,
                            const float *bias, int64_t mode, int64_t act_block,
                            size_t act_blocks) {
  DeviceWo d;
  d.device = device;
  const int64_t N = w.dims()[0], K = w.dims()[1];
  d.keep_w = device_upload(device, w.data(), w.byte_size());
  d.w = static_cast<const uint8_t *>(d.keep_w.get());
  upload_wo_params(d, spec);
  d.bytes += w.byte_size();
  if (bias != nullptr) {
    d.keep_bias = device_upload(device, bias, 4 * static_cast<size_t>(N));
    d.bias = static_cast<const float *>(d.keep_bias.get());
    d.bytes += 4 * static_cast<size_t>(N);
  }
  if (mode != QNT_WEIGHT_ONLY_F32 && K > 0) {
    // sw[n][j]: the scale of (row n, block j), divided by 127 for NF4 (the header's rule).
    d.act_block = act_block;
    d.wblocks = static_cast<int64_t>(act_blocks);
    std::vector<float> sw(static_cast<size_t>(N) * act_blocks);
    for (int64_t n = 0; n < N; ++n)
      for (size_t j = 0; j < act_blocks; ++j) {
        const size_t k = static_cast<size_t>(std::min<int64_t>(K - 1, static_cast<int64_t>(j) * act_block));
        const float s = spec.scales[spec.layout.group_of(static_cast<size_t>(n * K) + k)];
        sw[static_cast<size_t>(n) * act_blocks + j] = spec.code == ref::Code::NF4 ? s / 127.0f : s;
      }
    d.keep_wscale = device_upload(device, sw.data(), 4 * sw.size());
    d.wscale = static_cast<const float *>(d.keep_wscale.get());
    d.bytes += 4 * sw.size();
  }
  return d;
}

}  // namespace qnt::ops
