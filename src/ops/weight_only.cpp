// The weight-only linear layer (qnt_linear_weight_only and its prepared form), in its two modes:
// f32 (each weight dequantized, the canonical float dot product) and int8 activations (qnt.h).
//
// Paths, chosen when the layer is prepared:
//  - packed: the weights repacked for the context's kernels (kernels/wo/wo.hpp): 4-bit codes
//    in the f32 mode (blocks of a multiple of 16, or one scale per row), and i4, u4, NF4, i8, u8
//    in the int8 mode (blocks of 32 or a multiple of 64, or one scale per row);
//  - dequantize + dot (f32 mode, every other dtype and granularity): each feature's row
//    dequantized by the kernel set's dequantize kernel, then the kernel set's float dot;
//  - reference: the scalar rules of kernels/ref, for the reference kernel cap, for an empty K,
//    and for the int8 mode's block sizes the kernels do not take.
// All three give the same bits; tests/cpp/test_weight_only.cpp checks it.
#include "core/error.hpp"
#include "kernels/common/scalar.hpp"
#include "kernels/ref/ops_ref.hpp"
#include "kernels/ref/quantize_ref.hpp"
#include "kernels/registry.hpp"
#include "kernels/wo/wo.hpp"
#include "ops/common.hpp"
#include "ops/device_ops.hpp"
#include "ops/gemm.hpp"
#include "ops/packed.hpp"
#include "ops/parallel.hpp"
#include "ops/prepared.hpp"
#include "ops/qops.hpp"
#include "ops/quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace qnt::ops {
namespace {

using kern::kWoMaxRows;
using kern::kWoPanel;
using kern::WoCode;

constexpr size_t P = kWoPanel;
constexpr size_t kAhead = 3;  // panels requested ahead of the one being read (run_packed)
constexpr size_t kPanelBlockBytes = size_t{128} << 10;  // run_packed's blocks of panels (batches)
// From this many rows on, the f32 mode dequantizes each panel once into a buffer and runs the
// register-blocked float dot kernel over all rows (below, the fused kernel decodes per 4 rows),
// for the kernel tables whose `dequant_batches` is set.
constexpr size_t kDequantRows = 8;
// The same for kernel tables with a fused batch kernel (WoKernels::f32_batch): on Zen 3 (AVX2,
// 0.11.1, 4096^2, one thread) it was 1.16-1.52x faster than the per-4-row kernel at 5-7 rows,
// and level (0.87-1.15x) at 2-4.
constexpr size_t kFusedBatchRows = 5;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// How the weights' parameters run along each row: constant over blocks of `block` elements of K
// (one block per row when single), parameter index param(n, j).
struct RowBlocks {
  bool ok = false;
  bool single = true;
  int64_t block = 0;  // the block size along K (not single)
  size_t blocks = 1;  // per row
};

RowBlocks row_blocks(const GroupLayout &L, int64_t K) {
  RowBlocks r;
  if (K <= 0) return r;
  if (L.granularity == QNT_GRANULARITY_PER_TENSOR ||
      (L.granularity == QNT_GRANULARITY_PER_AXIS && L.inner == K)) {
    r.ok = true;
  } else if (L.granularity == QNT_GRANULARITY_PER_BLOCK && L.inner == 1) {
    r.ok = true;
    if (L.block < K) {
      r.single = false;
      r.block = L.block;
      r.blocks = static_cast<size_t>(L.blocks);
    }
  }
  return r;
}

// The parameter of (feature n, block j) of weights with K columns: blocks along K, or one per
// row (per tensor, or per output feature), without the layout's divisions per call.
size_t param_of(const GroupLayout &L, const RowBlocks &rb, size_t K, size_t n, size_t j) {
  if (!rb.single) return n * rb.blocks + j;
  if (L.granularity == QNT_GRANULARITY_PER_TENSOR) return 0;
  return L.granularity == QNT_GRANULARITY_PER_AXIS ? n % static_cast<size_t>(L.dim)
                                                   : L.group_of(n * K);
}

// The packed weights of the f32 and int8 kernels (layout in kernels/wo/wo.hpp).
struct PackedWeights {
  kern::WoPanelArgs base;  // everything but the pointers
  size_t panels = 0;
  size_t code_bytes = 0;    // per panel
  size_t param_blocks = 0;  // per panel and feature
  size_t panel_stride = 0;  // bytes: codes, scales, zero points
  bool has_zps = false;
  std::unique_ptr<uint8_t[]> data;  // panels * panel_stride bytes, each panel written by one worker
  size_t bytes = 0;

  kern::WoPanelArgs panel(size_t p) const noexcept {
    kern::WoPanelArgs a = base;
    const uint8_t *at = data.get() + p * panel_stride;
    a.codes = at;
    a.scales = reinterpret_cast<const float *>(at + code_bytes);
    a.zps = has_zps ? at + code_bytes + 4 * param_blocks * P : nullptr;
    return a;
  }
};

// The int8 mode's unit structure for K and the weights' blocks: whether the kernels take it.
bool int8_units(const RowBlocks &rb, int64_t K, kern::WoPanelArgs &a) {
  const size_t chunks = (static_cast<size_t>(K) + 63) / 64;
  a.chunks = chunks;
  size_t units;
  if (rb.single) {
    a.unit_chunks = chunks;
    a.half_units = false;
    units = 1;
  } else if (rb.block == 32) {
    a.unit_chunks = 1;
    a.half_units = true;
    units = chunks;
  } else if (rb.block % 64 == 0) {
    a.unit_chunks = static_cast<size_t>(rb.block / 64);
    a.half_units = false;
    units = (chunks + a.unit_chunks - 1) / a.unit_chunks;
  } else {
    return false;
  }
  const size_t u0 = (units - 1) * a.unit_chunks * 64;
  const size_t lanes = (static_cast<size_t>(K) - u0 + 3) / 4;
  a.last_unit_lanes = lanes >= 16 ? 0xFFFFu : (1u << lanes) - 1u;
  return true;
}

// x f32, f16 or bf16; y f32 or x's dtype.
void check_wo_dtypes(const Tensor &x, const Tensor &y) {
  require_activation(x, "x");
  if (y.dtype() != QNT_DTYPE_F32 && y.dtype() != x.dtype())
    fail(QNT_ERR_DTYPE_MISMATCH, "y must be f32 or x's dtype (", x.info().name, "), not ",
         y.info().name);
}

// body(xs, out) over x and y as float32: 16-bit activations widened exactly into a buffer, and a
// 16-bit y computed into one and rounded back.
template <class F>
void in_float32(const Tensor &x, Tensor &y, F &&body) {
  std::vector<float> xbuf, ybuf;
  const float *xs = reinterpret_cast<const float *>(x.data());
  float *out = reinterpret_cast<float *>(y.data());
  if (x.dtype() != QNT_DTYPE_F32) {
    xbuf.resize(x.element_count());
    widen_floats(x.dtype(), x.data(), xbuf.data(), xbuf.size());
    xs = xbuf.data();
  }
  if (y.dtype() != QNT_DTYPE_F32) {
    ybuf.resize(y.element_count());
    out = ybuf.data();
  }
  body(xs, out);
  if (!ybuf.empty()) narrow_floats(y.dtype(), ybuf.data(), y.data(), ybuf.size());
}

class PreparedWeightOnly final : public Prepared {
 public:
  PreparedWeightOnly(const Context &ctx, const Tensor &w, const Tensor *bias, int64_t mode,
                     const kern::WoKernels *wo)
      : Prepared(QNT_PREPARED_LINEAR_WEIGHT_ONLY, ctx.isa()),
        mode_(mode),
        ks_(&ctx.kernels()),
        wo_(wo),
        N_(w.dims()[0]),
        K_(w.dims()[1]),
        bias_(bias) {
    const ref::QuantSpec spec = quantized_spec(w, "w");
    const RowBlocks rb = row_blocks(spec.layout, K_);
    const qnt_dtype dt = w.dtype();
    const bool four_bit = dt == QNT_DTYPE_I4 || dt == QNT_DTYPE_U4 || dt == QNT_DTYPE_NF4;
    if (mode_ != QNT_WEIGHT_ONLY_F32) {
      const char *name = mode_ == QNT_WEIGHT_ONLY_INT8_ACT ? "the int8-activation mode" : "the block-dot mode";
      if (!(four_bit || dt == QNT_DTYPE_I8 || dt == QNT_DTYPE_U8))
        fail(QNT_ERR_UNSUPPORTED, name, " takes i4, u4, NF4, i8 or u8 weights, not ", w.info().name);
      if (!rb.ok && K_ > 0)
        fail(QNT_ERR_UNSUPPORTED, name,
             " takes weight qparams per tensor, per output feature (axis 0) or per block along K "
             "(axis 1)");
      act_block_ = rb.single ? std::max<int64_t>(K_, 1) : rb.block;
      act_blocks_ = rb.blocks;
    }
    bool packed = false;
    if (wo != nullptr && K_ > 0 && rb.ok) {  // (wo_ is wo)
      const bool bytes = dt == QNT_DTYPE_I8 || dt == QNT_DTYPE_U8;
      if (mode_ == QNT_WEIGHT_ONLY_F32 && (four_bit || (bytes && wo->f32_bytes)) &&
          (rb.single || rb.block % 16 == 0)) {
        pack(ctx, w, spec, rb, false);
        path_ = Path::PackedF32;
        packed = true;
      } else if (mode_ == QNT_WEIGHT_ONLY_INT8_ACT && int8_units(rb, K_, pw_.base)) {
        pack(ctx, w, spec, rb, true);
        path_ = Path::PackedInt8;
        packed = true;
      } else if (mode_ == QNT_WEIGHT_ONLY_INT8_BLOCK && (rb.single || rb.block % (bytes ? 4 : 8) == 0)) {
        pack_blk(ctx, w, spec, rb);
        path_ = Path::PackedBlock;
        packed = true;
      }
    }
    if (!packed) {
      path_ = mode_ != QNT_WEIGHT_ONLY_F32 ? Path::ReferenceInt8
              : (wo != nullptr && K_ > 0)       ? Path::DequantizeDot
                                                : Path::Reference;
      w_ = std::make_unique<Tensor>(w.dtype(), w.shape(), w.rank(), w.qparams(),
                                    Tensor::Storage::Copy, const_cast<uint8_t *>(w.data()),
                                    w.byte_size());
      spec_ = quantized_spec(*w_, "w");
    }
  }

  // For a layer prepared with a context bound to a CUDA device: the weights' own layout there.
  void copy_to_device(const Tensor &w, int32_t device) {
    dev_ = upload_weight_only(device, w, quantized_spec(w, "w"),
                              bias_.present ? bias_.f32.data() : nullptr, mode_, act_block_,
                              act_blocks_);
  }

  size_t packed_size() const noexcept override {
    return pw_.bytes + pb_.bytes + (w_ ? w_->byte_size() + 8 * w_->qparams()->count() : 0) +
           bias_.bytes() + dev_.bytes;
  }

  void run(const Context &ctx, const Tensor &x, Tensor &y) const override {
    check_wo_dtypes(x, y);
    const int64_t R = linear_io(x, K_, N_, y);
    const Place where = op_place({{&x, "x"}, {&y, "y"}});
    if (y.element_count() == 0) return;
    if (!where.is_cpu()) {
      if (dev_.device != where.id)
        fail(QNT_ERR_INVALID_ARGUMENT, "x and y are on ", place_name(where),
             " but the layer was prepared for ",
             dev_.device < 0 ? std::string("the CPU only (prepare it with a context bound to the "
                                           "device: qnt_context_set_cuda_stream)")
                             : place_name(Place{QNT_DEVICE_CUDA, dev_.device}));
      return device_weight_only(ctx, where, dev_, mode_, R, K_, N_, x, y);
    }
    in_float32(x, y, [&](const float *xs, float *out) { compute(ctx, xs, static_cast<size_t>(R), out); });
  }

 private:
  void compute(const Context &ctx, const float *xs, size_t rows, float *out) const {
    switch (path_) {
      case Path::PackedF32:
        if (fused_batch(rows) ||
            (wo_->f32_batch == nullptr && wo_->dequant_batches && rows >= kDequantRows))
          return run_f32_batch(ctx, xs, rows, out);
        return tuned_packed(ctx, rows, [&](const TuneValue &tv) {
          if (rows == 1 && wo_->f32_one_range != nullptr) return run_f32_one(ctx, xs, out, tv);
          run_packed(ctx, rows, [&](const kern::WoPanelArgs &a, size_t m0, size_t n, float *o) {
            wo_->f32(a, xs + m0 * static_cast<size_t>(K_), static_cast<size_t>(K_), n, o);
          }, out, tv);
        });
      case Path::PackedInt8:
        return tuned_packed(ctx, rows, [&](const TuneValue &tv) { run_int8(ctx, xs, rows, out, tv); });
      case Path::PackedBlock:
        return run_blk(ctx, xs, rows, out);
      case Path::DequantizeDot:
        return run_dequantize_dot(ctx, xs, rows, out);
      case Path::ReferenceInt8:
        return run_reference_int8(ctx, xs, rows, out);
      default:
        return run_reference(ctx, xs, rows, out);
    }
  }

  enum class Path { Reference, ReferenceInt8, DequantizeDot, PackedF32, PackedInt8, PackedBlock };

  void put(float *out, size_t r, size_t n, float d) const noexcept {
    out[r * static_cast<size_t>(N_) + n] =
        rules::wo_output(d, bias_.present ? bias_.f32.data() : nullptr, static_cast<int64_t>(n));
  }

  // Packs w for the kernels: codes, then the scales and zero points of each panel.
  void pack(const Context &ctx, const Tensor &w, const ref::QuantSpec &spec, const RowBlocks &rb,
            bool int8) {
    kern::WoPanelArgs &a = pw_.base;
    const qnt_dtype dt = w.dtype();
    a.code = dt == QNT_DTYPE_NF4 ? WoCode::NF4
             : (dt == QNT_DTYPE_I8 || dt == QNT_DTYPE_U8) ? WoCode::Byte
                                                          : WoCode::Int4;
    a.K = K_;
    const auto K = static_cast<size_t>(K_), N = static_cast<size_t>(N_);
    const bool bytes = a.code == WoCode::Byte;
    const size_t kp = round_up(K, bytes ? 64 : 128);  // padded K
    a.block = rb.single ? static_cast<int64_t>(kp) : rb.block;
    if (!int8) a.chunks = (K + 63) / 64;
    pw_.panels = (N + P - 1) / P;
    pw_.code_bytes = kp / (bytes ? 1 : 2) * P;
    pw_.param_blocks = rb.blocks + (int8 && a.half_units ? rb.blocks % 2 : 0);
    // The zero point each (feature, block) needs in the kernels' terms (see wo.hpp).
    const int32_t offset = dt == QNT_DTYPE_I4 ? 8 : dt == QNT_DTYPE_I8 ? 128 : 0;
    const bool has_zp = a.code != WoCode::NF4;
    auto param = [&](size_t n, size_t j) { return param_of(spec.layout, rb, K, n, j); };
    auto zp_at = [&](size_t n, size_t j) { return spec.zero_points[param(n, j)] + offset; };
    auto scale_at = [&](size_t n, size_t j) {
      const float s = spec.scales[param(n, j)];
      return int8 && a.code == WoCode::NF4 ? s / 127.0f : s;
    };
    a.zp_const = has_zp ? zp_at(0, 0) : 0;
    pw_.has_zps = false;
    for (size_t n = 0; n < N && has_zp; ++n)
      for (size_t j = 0; j < rb.blocks; ++j)
        if (zp_at(n, j) != a.zp_const) pw_.has_zps = true;
    pw_.panel_stride = round_up(pw_.code_bytes + pw_.param_blocks * P * (4 + (pw_.has_zps ? 1 : 0)), 64);
    pw_.bytes = pw_.panels * pw_.panel_stride;
    // 64 zero bytes past the last panel: the AVX-512 batch-1 kernel (f32_one_asm) requests the
    // block after the last one's parameters before it knows it is the last.
    pw_.data.reset(new uint8_t[pw_.bytes + 64]);
    std::memset(pw_.data.get() + pw_.bytes, 0, 64);
    const uint8_t *src = w.data();
    const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / pw_.panel_stride);
    const size_t workers = parallel_workers(ctx.threads(), pw_.panels, grain);
    std::vector<std::vector<uint8_t>> codes_of(workers, std::vector<uint8_t>(kp));
    // Panels on the context's threads: each worker zeroes and fills its own (the first touch of
    // their pages too).
    parallel_for_workers(ctx.threads(), pw_.panels, grain, [&](size_t p0, size_t p1, size_t t) {
    // Plain pointers and sizes: stores through uint8_t may alias anything, and the loops then
    // reload what they read through references on every element instead of vectorizing.
    uint8_t *codes = codes_of[t].data();
    uint8_t *const base = pw_.data.get();
    const size_t stride = pw_.panel_stride, half = K / 2;
    std::memset(base + p0 * stride, 0, (p1 - p0) * stride);
    for (size_t n = p0 * P; n < std::min(N, p1 * P); ++n) {
      uint8_t *panel = base + (n / P) * stride;
      const size_t p = n % P;
      // The row's codes, one byte each: i4 offset by 8, u8 made s8.
      std::memset(codes, 0, kp);
      if (!bytes && K % 2 == 0) {
        const uint8_t *row = src + n * half;
        const uint8_t flip = dt == QNT_DTYPE_I4 ? 0x88 : 0x00;
        for (size_t i = 0; i < half; ++i) {
          const auto b = static_cast<uint8_t>(row[i] ^ flip);
          codes[2 * i] = b & 15;
          codes[2 * i + 1] = b >> 4;
        }
      } else if (bytes) {
        const uint8_t flip = dt == QNT_DTYPE_U8 ? 0x80 : 0x00;
        const uint8_t *row = src + n * K;
        for (size_t k = 0; k < K; ++k) codes[k] = static_cast<uint8_t>(row[k] ^ flip);
      } else {
        for (size_t k = 0; k < K; ++k) {
          const int32_t q = ref::load_element(src, n * K + k, 4, dt == QNT_DTYPE_I4);
          codes[k] = static_cast<uint8_t>(dt == QNT_DTYPE_I4 ? q + 8 : q);
        }
      }
      if (bytes) {
        for (size_t c = 0; c < kp / 64; ++c)
          std::memcpy(panel + (c * P + p) * 64, codes + 64 * c, 64);
      } else {
        const bool lanes = mode_ == QNT_WEIGHT_ONLY_F32 && wo_->lane_codes;  // (wo.hpp)
        for (size_t g = 0; g < kp / 128; ++g) {
          uint8_t *dst = panel + (g * P + p) * 64;
          const uint8_t *cg = codes + 128 * g;
          for (size_t i = 0; i < 64; ++i) {
            const size_t e = lanes ? 16 * (i % 4) + i / 4 : i;  // the low nibble's element
            dst[i] = static_cast<uint8_t>(cg[e] | (cg[64 + e] << 4));
          }
        }
      }
      auto *scales = reinterpret_cast<float *>(panel + pw_.code_bytes);
      uint8_t *zps = panel + pw_.code_bytes + 4 * pw_.param_blocks * P;
      for (size_t j = 0; j < rb.blocks; ++j) {
        scales[j * P + p] = scale_at(n, j);
        if (pw_.has_zps) zps[j * P + p] = static_cast<uint8_t>(zp_at(n, j));
      }
    }
    });
  }

  // Packs w for the block-dot mode's kernels (kernels/wo/wo.hpp: panels of 16 features, 8 or 4
  // elements a step).
  void pack_blk(const Context &ctx, const Tensor &w, const ref::QuantSpec &spec, const RowBlocks &rb) {
    constexpr size_t F = kern::kWoBlkPanel;
    kern::WoBlkArgs &a = pb_.args;
    const qnt_dtype dt = w.dtype();
    a.code = dt == QNT_DTYPE_NF4 ? WoCode::NF4
             : (dt == QNT_DTYPE_I8 || dt == QNT_DTYPE_U8) ? WoCode::Byte
                                                          : WoCode::Int4;
    const bool bytes = a.code == WoCode::Byte;
    const size_t per = bytes ? 4 : 8;
    const auto K = static_cast<size_t>(K_), N = static_cast<size_t>(N_);
    a.steps = (K + per - 1) / per;
    a.block_steps = rb.single ? a.steps : static_cast<size_t>(rb.block) / per;
    a.blocks = rb.blocks;
    a.code_bytes = 64 * a.steps;
    a.panel_stride = round_up(a.code_bytes + a.blocks * F * 5, 64);
    pb_.panels = (N + F - 1) / F;
    pb_.bytes = pb_.panels * a.panel_stride;
    pb_.data.reset(new uint8_t[pb_.bytes]);
    a.data = pb_.data.get();
    const int32_t offset = dt == QNT_DTYPE_I4 ? 8 : dt == QNT_DTYPE_I8 ? 128 : 0;
    auto param = [&](size_t n, size_t j) { return param_of(spec.layout, rb, K, n, j); };
    auto zc_at = [&](size_t g) { return a.code == WoCode::NF4 ? 128 : spec.zero_points[g] + offset; };
    a.zc_const = zc_at(param(0, 0));
    for (size_t n = 0; n < N; ++n)
      for (size_t j = 0; j < a.blocks; ++j)
        if (zc_at(param(n, j)) != a.zc_const) a.zc_const = -1;
    const uint8_t *src = w.data();
    const size_t grain = std::max<size_t>(1, (size_t{1} << 16) / a.panel_stride);
    const size_t workers = parallel_workers(ctx.threads(), pb_.panels, grain);
    std::vector<std::vector<uint8_t>> codes_of(workers, std::vector<uint8_t>(a.steps * per));
    parallel_for_workers(ctx.threads(), pb_.panels, grain, [&](size_t p0, size_t p1, size_t t) {
      uint8_t *codes = codes_of[t].data();
      uint8_t *const base = pb_.data.get();
      const size_t stride = a.panel_stride, steps = a.steps, blocks = a.blocks;
      std::memset(base + p0 * stride, 0, (p1 - p0) * stride);
      for (size_t n = p0 * F; n < std::min(N, p1 * F); ++n) {
        uint8_t *panel = base + (n / F) * stride;
        const size_t f = n % F;
        std::memset(codes, 0, steps * per);
        // The row's unsigned codes, one byte each (wo.hpp).
        if (bytes) {
          const uint8_t flip = dt == QNT_DTYPE_I8 ? 0x80 : 0x00;
          for (size_t k = 0; k < K; ++k) codes[k] = static_cast<uint8_t>(src[n * K + k] ^ flip);
        } else {
          for (size_t k = 0; k < K; ++k) {
            const int32_t q = ref::load_element(src, n * K + k, 4, dt == QNT_DTYPE_I4);
            codes[k] = static_cast<uint8_t>(q + (dt == QNT_DTYPE_I4 ? 8 : 0));
          }
        }
        for (size_t st = 0; st < steps; ++st) {
          uint8_t *dst = panel + 64 * st + 4 * f;
          const uint8_t *c = codes + per * st;
          for (size_t i = 0; i < 4; ++i)
            dst[i] = bytes ? c[i] : static_cast<uint8_t>(c[i] | (c[4 + i] << 4));
        }
        auto *scales = reinterpret_cast<float *>(panel + a.code_bytes);
        uint8_t *zcs = panel + a.code_bytes + 4 * F * blocks;
        for (size_t j = 0; j < blocks; ++j) {
          const size_t g = param(n, j);
          scales[j * F + f] = a.code == WoCode::NF4 ? spec.scales[g] / 127.0f : spec.scales[g];
          zcs[j * F + f] = static_cast<uint8_t>(zc_at(g));
        }
      }
    });
  }

  // The block-dot mode: the activations quantized once per call (qx rows zero up to the panels'
  // steps, sx and minus the block sums of qx), then the panels split over the context's threads,
  // each worker one contiguous range, a slice of panels per kernel call.
  void run_blk(const Context &ctx, const float *xs, size_t rows, float *out) const {
    constexpr size_t F = kern::kWoBlkPanel;
    const kern::WoBlkArgs &a = pb_.args;
    const auto K = static_cast<size_t>(K_), N = static_cast<size_t>(N_);
    const size_t kp = a.steps * (a.code == WoCode::Byte ? 4 : 8);
    const size_t qstride = round_up(kp, 64) + 64;  // (run_int8's padded rows)
    const size_t nb = act_blocks_, bstride = round_up(nb, 16);
    Scratch scratch(ctx, rows * (qstride + 8 * bstride) + 64);
    auto *base = reinterpret_cast<uint8_t *>(round_up(reinterpret_cast<uintptr_t>(scratch.data()), 64));
    auto *sx = reinterpret_cast<float *>(base);
    auto *nsum = reinterpret_cast<int32_t *>(base + rows * bstride * 4);
    auto *qx = reinterpret_cast<int8_t *>(base + rows * bstride * 8);
    const std::vector<int32_t> zeros(nb, 0);
    const auto B = static_cast<size_t>(act_block_);
    const uint32_t zc = a.zc_const >= 0 ? static_cast<uint32_t>(a.zc_const) : 1u;
    parallel_for(ctx.threads(), rows, std::max<size_t>(1, 16384 / K), [&](size_t r0, size_t r1) {
      for (size_t r = r0; r < r1; ++r) {
        int8_t *q = qx + r * qstride;
        quantize_act_row(xs + r * K, q, sx + r * bstride, zeros.data());
        std::memset(q + K, 0, kp - K);
        for (size_t j = 0; j < nb; ++j) {
          // In uint32: the sum and the product wrap, as the rule's block sums do (a block of K
          // elements may pass INT32_MAX).
          uint32_t sum = 0;
          for (size_t k = j * B; k < std::min(K, (j + 1) * B); ++k) sum += static_cast<uint32_t>(int32_t{q[k]});
          nsum[r * bstride + j] = static_cast<int32_t>((0u - sum) * zc);
        }
      }
    });
    kern::WoBlkActs acts;
    acts.qx = qx;
    acts.qx_stride = qstride;
    acts.sx = sx;
    acts.nsum = nsum;
    acts.blk_stride = bstride;
    const kern::WoBlkFn fn = wo_->blk != nullptr ? wo_->blk : &kern::wo_blk_generic;
    const auto threads = static_cast<size_t>(std::max(ctx.threads(), 1));
    const size_t chunk = (pb_.panels + threads - 1) / threads;
    constexpr size_t kSlice = 12;  // panels a kernel call (a multiple of the VNNI tiles: 3 and 4)
    parallel_for(ctx.threads(), pb_.panels, chunk, [&](size_t p0, size_t p1) {
      std::vector<float> o(rows * F * kSlice);
      for (size_t s0 = p0; s0 < p1; s0 += kSlice) {
        const size_t s1 = std::min(p1, s0 + kSlice), ld = F * (s1 - s0);
        fn(a, s0, s1, acts, rows, o.data(), ld);
        for (size_t r = 0; r < rows; ++r)
          for (size_t n = s0 * F; n < std::min(N, s1 * F); ++n) put(out, r, n, o[r * ld + n - s0 * F]);
      }
    });
  }

  // The heuristic's streaming parameters for `rows` rows: the prefetch distance (kAhead panels)
  // and the workers run_packed's split gives.
  TuneValue packed_default(const Context &ctx, size_t rows) const {
    const size_t grain = std::max<size_t>(1, (size_t{1} << 15) / (static_cast<size_t>(K_) * P * std::min<size_t>(rows, 16)));
    const auto threads = static_cast<size_t>(std::max(ctx.threads(), 1));
    const size_t chunk = std::max(grain, (pw_.panels + threads - 1) / threads);
    return TuneValue{static_cast<int64_t>(kAhead),
                     static_cast<int64_t>(std::max<size_t>(1, (pw_.panels + chunk - 1) / chunk))};
  }

  // run(streaming parameters) under the context's tuning (tune.hpp): the candidates are other
  // prefetch distances and half the workers.
  template <class Run>
  void tuned_packed(const Context &ctx, size_t rows, Run &&run) const {
    const TuneValue d = packed_default(ctx, rows);
    if (ctx.tuning == QNT_TUNING_OFF) return run(d);
    const TuneKey key{"wo", wo_->name, static_cast<int64_t>(rows), N_, K_, ctx.threads()};
    tuned(ctx, key, d, [&] {
      std::vector<TuneValue> cands{d};
      const int64_t tries[][2] = {{1, d.p2}, {2, d.p2}, {5, d.p2}, {8, d.p2}, {0, d.p2}, {d.p1, (d.p2 + 1) / 2}};
      for (const auto &t : tries) {
        const TuneValue v{t[0], t[1]};
        if (std::find(cands.begin(), cands.end(), v) == cands.end()) cands.push_back(v);
      }
      return cands;
    }, run);
  }

  // Panels per worker: tv.p2 workers (at most the context's threads), one contiguous range each.
  size_t panel_chunk(const Context &ctx, const TuneValue &tv) const noexcept {
    const auto workers = static_cast<size_t>(std::clamp<int64_t>(tv.p2, 1, std::max(ctx.threads(), 1)));
    return (pw_.panels + workers - 1) / workers;
  }

  // body(panel args, first row, rows, out[rows][P]) over panels on the context's threads, and
  // the results (plus the bias) into y. tv: the prefetch distance in panels (0: none) and the
  // workers (see packed_default).
  template <class Body>
  void run_packed(const Context &ctx, size_t rows, Body &&body, float *out, const TuneValue &tv) const {
    const size_t N = static_cast<size_t>(N_);
    // Each worker streams one contiguous range of panels (its own bytes, in memory order),
    // and the kernel requests into L2 (prefetcht1) the panel kAhead places ahead: spread over
    // its loop (the batch-1 kernels) or at once on entry (WoPanelArgs::prefetch). Measured on
    // Zen 4 with the weights rotated through DRAM (4096 x 4096 int4 block 128, W4A8, batch 1):
    // 0.30 of the read roofline on one thread with the next panel requested into L1 (136 lines
    // at once, just before the loads that need them) from ranges of two panels, 0.49 with the
    // panel kAhead ahead in one burst, 0.97 with the requests spread; prefetcht2 (L3) and no
    // software prefetch were slower than prefetcht1.
    const size_t chunk = panel_chunk(ctx, tv);
    const auto ahead = static_cast<size_t>(std::max<int64_t>(tv.p1, 0));
    // More than kWoMaxRows rows: the panels go by in blocks of about kPanelBlockBytes, and each
    // group of rows runs over a whole block before the next group, so that a group's
    // activations stay in L1 while the block's weights come from L2 (each panel's 4 features
    // against every row read all the rows' activations, 64 KiB at batch 16 and K = 4096, from
    // L2 for each panel). On an Emerald Rapids Xeon, this and run_int8's padded rows together
    // were level to 1.3x at batch 16 (against the same kernel without them, in separate runs
    // of a noisy VM); level on Zen 3 (AVX2).
    const size_t block = rows > kWoMaxRows ? std::max<size_t>(1, kPanelBlockBytes / pw_.panel_stride) : 1;
    parallel_for(ctx.threads(), pw_.panels, chunk, [&](size_t p0, size_t p1) {
      float o[kWoMaxRows * P];
      for (size_t b0 = p0; b0 < p1; b0 += block) {
        const size_t b1 = std::min(p1, b0 + block);
        for (size_t m0 = 0; m0 < rows; m0 += kWoMaxRows) {
          const size_t n = std::min<size_t>(kWoMaxRows, rows - m0);
          for (size_t pn = b0; pn < b1; ++pn) {
            kern::WoPanelArgs a = pw_.panel(pn);
            if (m0 == 0 && ahead > 0 && pn + ahead < p1) {  // on the panel's first call
              a.prefetch = pw_.data.get() + (pn + ahead) * pw_.panel_stride;
              a.prefetch_bytes = pw_.panel_stride;
            }
            body(a, m0, n, o);
            for (size_t r = 0; r < n; ++r)
              for (size_t p = 0; p < P && pn * P + p < N; ++p) put(out, m0 + r, pn * P + p, o[r * P + p]);
          }
        }
      }
    });
  }

  // f32 mode, batch 1, through the table's range kernel: each worker's contiguous range of
  // panels and prefetch distance as run_packed's, kRun panels a call.
  void run_f32_one(const Context &ctx, const float *xs, float *out, const TuneValue &tv) const {
    const size_t N = static_cast<size_t>(N_);
    const size_t chunk = panel_chunk(ctx, tv);
    const auto ahead = static_cast<size_t>(std::max<int64_t>(tv.p1, 0));
    parallel_for(ctx.threads(), pw_.panels, chunk, [&](size_t p0, size_t p1) {
      constexpr size_t kRun = 64;
      float o[kRun * P];
      for (size_t b0 = p0; b0 < p1; b0 += kRun) {
        const size_t n = std::min(kRun, p1 - b0);
        wo_->f32_one_range(pw_.panel(b0), pw_.panel_stride, n, ahead, p1 - b0, xs, o);
        for (size_t i = 0; i < n; ++i)
          for (size_t p = 0; p < P && (b0 + i) * P + p < N; ++p) put(out, 0, (b0 + i) * P + p, o[i * P + p]);
      }
    });
  }

  void run_int8(const Context &ctx, const float *xs, size_t rows, float *out, const TuneValue &tv) const {
    const kern::WoPanelArgs &a = pw_.base;
    // Rows of the activations, their scales and sums one cache line longer than their data, from
    // a 64-byte boundary: rows of 4 KiB (K = 4096) would all fall in the same L1 sets.
    const size_t qstride = a.chunks * 64 + 64;
    const size_t units = a.half_units ? a.chunks : (a.chunks + a.unit_chunks - 1) / a.unit_chunks;
    const size_t ustride = units * 16 + 16;
    const size_t nb = act_blocks_;
    const size_t bytes = rows * (qstride + 8 * ustride) + (nb * 8);
    Scratch scratch(ctx, bytes + 64);
    auto *base = reinterpret_cast<uint8_t *>(round_up(reinterpret_cast<uintptr_t>(scratch.data()), 64));
    auto *sxv = reinterpret_cast<float *>(base);
    auto *sums = reinterpret_cast<int32_t *>(base + rows * ustride * 4);
    auto *qx = reinterpret_cast<int8_t *>(base + rows * ustride * 8);
    const std::vector<int32_t> zeros(nb, 0);
    const size_t grain = std::max<size_t>(1, 16384 / static_cast<size_t>(K_));
    const size_t workers = parallel_workers(ctx.threads(), rows, grain);
    std::vector<float> sx(workers * nb);
    parallel_for_workers(ctx.threads(), rows, grain, [&](size_t r0, size_t r1, size_t t) {
      for (size_t r = r0; r < r1; ++r)
        prepare_row(xs + r * static_cast<size_t>(K_), qx + r * qstride, sxv + r * ustride,
                    sums + r * ustride, sx.data() + t * nb, zeros.data());
    });
    run_packed(ctx, rows, [&](const kern::WoPanelArgs &pa, size_t m0, size_t n, float *o) {
      kern::WoActs acts;
      acts.qx = qx + m0 * qstride;
      acts.qx_stride = qstride;
      acts.sxv = sxv + m0 * ustride;
      acts.sums = sums + m0 * ustride;
      acts.unit_stride = ustride;
      wo_->int8(pa, acts, n, o);
    }, out, tv);
  }

  // The int8 mode's activations of one row: qx (zero past K), and per unit and lane the
  // activation scale and the sum of qx.
  void prepare_row(const float *x, int8_t *qx, float *sxv, int32_t *sums, float *sx,
                   const int32_t *zeros) const {
    const kern::WoPanelArgs &a = pw_.base;
    const auto K = static_cast<size_t>(K_);
    const size_t nb = act_blocks_;
    quantize_act_row(x, qx, sx, zeros);
    std::memset(qx + K, 0, a.chunks * 64 - K);
    const size_t units = a.half_units ? a.chunks : (a.chunks + a.unit_chunks - 1) / a.unit_chunks;
    std::memset(sums, 0, units * 16 * sizeof(int32_t));
    for (size_t c = 0; c < a.chunks; ++c) {
      int32_t *su = sums + (c / a.unit_chunks) * 16;
      const int8_t *q = qx + 64 * c;
      for (size_t i = 0; i < 64; ++i) su[i / 4] += q[i];
    }
    for (size_t u = 0; u < units; ++u)
      for (size_t l = 0; l < 16; ++l) {
        const size_t j = a.half_units ? 2 * u + l / 8 : u;
        sxv[u * 16 + l] = j < nb ? sx[j] : 0.0f;
      }
  }

  // The int8 modes' activations of one row by the mode's rule (the kernel set's quantize kernel):
  // sx per block, and qx[0 .. K) (0 in a block whose sx is 0 or NaN).
  void quantize_act_row(const float *x, int8_t *qx, float *sx, const int32_t *zeros) const {
    const auto K = static_cast<size_t>(K_);
    const auto B = static_cast<size_t>(act_block_);
    const size_t nb = act_blocks_;
    for (size_t j = 0; j < nb; ++j) {
      const size_t k1 = std::min(K, (j + 1) * B);
      float m = 0.0f;
      bool finite = true;
      for (size_t k = j * B; k < k1; ++k) {
        const float v = std::fabs(x[k]);
        finite = finite && v <= std::numeric_limits<float>::max();
        m = std::max(m, v);
      }
      sx[j] = finite ? m / 127.0f : std::numeric_limits<float>::quiet_NaN();
    }
    kern::Format f;
    f.dtype = QNT_DTYPE_I8;
    f.code = ref::Code::Integer;
    f.bits = 8;
    f.is_signed = true;
    f.qmin = -127;
    f.qmax = 127;
    f.block = B;
    ks_->quantize[QNT_DTYPE_I8][nb == 1 ? kern::kShared : kern::kBlocked](
        x, reinterpret_cast<uint8_t *>(qx), 0, K, sx, zeros, f);
    for (size_t j = 0; j < nb; ++j)
      if (!(sx[j] > 0.0f))  // 0 or NaN: the block's qx are 0
        std::memset(qx + j * B, 0, std::min(K, (j + 1) * B) - j * B);
  }

  // Whether the table's fused batch kernel takes these weights and rows (WoBatchFn: 4-bit codes,
  // and bytes with a table whose f32_bytes is set, from kFusedBatchRows rows; or as the table's
  // f32_batch_takes says).
  bool fused_batch(size_t rows) const noexcept {
    if (wo_->f32_batch == nullptr) return false;
    if (wo_->f32_batch_takes != nullptr) return wo_->f32_batch_takes(pw_.base, rows);
    return (pw_.base.code != WoCode::Byte || wo_->f32_bytes) && rows >= kFusedBatchRows;
  }

  // f32 mode, a batch: per panel, its features dequantized once into the worker's buffer, then
  // every row against them.
  void run_f32_batch(const Context &ctx, const float *xs, size_t rows, float *out) const {
    const auto k = static_cast<size_t>(K_), n_count = static_cast<size_t>(N_);
    const size_t ldw = round_up(k, 16);
    const size_t workers = parallel_workers(ctx.threads(), pw_.panels, 1);
    // The kernel's scratch (WoBatchFn), 32-byte aligned.
    const bool fused = fused_batch(rows);
    const size_t wn = fused ? kern::wo_batch_scratch(K_) + 8 : P * ldw;
    std::vector<std::vector<float>> buf(workers, std::vector<float>(wn + rows * P));
    // One contiguous range of panels per worker, so that the kernel can request the panel
    // kAhead places on within it (with ranges of one panel, two threads requested nothing: 4096^2
    // int8 block 128, batch 16, weights from DRAM, 3.9 ms against 3.3 for 4 rows at a time).
    const size_t range = (pw_.panels + workers - 1) / workers;
    parallel_for_workers(ctx.threads(), pw_.panels, range, [&](size_t p0, size_t p1, size_t t) {
      float *wb = buf[t].data();
      float *d = wb + wn;
      for (size_t pn = p0; pn < p1; ++pn) {
        const size_t feats = std::min(P, n_count - pn * P);
        if (fused) {
          auto *aligned = reinterpret_cast<float *>(round_up(reinterpret_cast<uintptr_t>(wb), 32));
          kern::WoPanelArgs a = pw_.panel(pn);
          if (pn + kAhead < p1) {  // the panel kAhead ahead, requested into L2 by the kernel
            a.prefetch = pw_.data.get() + (pn + kAhead) * pw_.panel_stride;
            a.prefetch_bytes = pw_.panel_stride;
          }
          wo_->f32_batch(a, xs, k, rows, d, P, aligned);
        } else {
          wo_->dequant(pw_.panel(pn), wb, ldw);
          wo_->dot(xs, k, rows, wb, ldw, feats, K_, d, P);
        }
        for (size_t r = 0; r < rows; ++r)
          for (size_t p = 0; p < feats; ++p) put(out, r, pn * P + p, d[r * P + p]);
      }
    });
  }

  // f32 mode, the formats without a packed kernel: features dequantized P at a time by the kernel
  // set's dequantize kernel, then the register-blocked float dot kernel over every row.
  void run_dequantize_dot(const Context &ctx, const float *xs, size_t rows, float *out) const {
    const auto k = static_cast<size_t>(K_), n_count = static_cast<size_t>(N_);
    const kern::Format f = format_of(spec_, w_->dtype());
    const size_t groups = (n_count + P - 1) / P;
    const size_t grain = std::max<size_t>(1, 4096 / std::max<size_t>(k * P, 1));
    const size_t workers = parallel_workers(ctx.threads(), groups, grain);
    std::vector<std::vector<float>> buf(workers, std::vector<float>(P * k + rows * P));
    parallel_for_workers(ctx.threads(), groups, grain, [&](size_t g0, size_t g1, size_t t) {
      float *wb = buf[t].data();
      float *d = wb + P * k;
      for (size_t g = g0; g < g1; ++g) {
        const size_t n0 = g * P, feats = std::min(P, n_count - n0);
        dequantize_range(*ks_, spec_, f, w_->data(), wb, n0 * k, (n0 + feats) * k);
        wo_->dot(xs, k, rows, wb, k, feats, K_, d, P);
        for (size_t r = 0; r < rows; ++r)
          for (size_t p = 0; p < feats; ++p) put(out, r, n0 + p, d[r * P + p]);
      }
    });
  }

  void run_reference(const Context &ctx, const float *xs, size_t rows, float *out) const {
    const auto k = static_cast<size_t>(K_), n_count = static_cast<size_t>(N_);
    const size_t grain = std::max<size_t>(1, 4096 / std::max<size_t>(k, 1));
    std::vector<std::vector<float>> wrow(parallel_workers(ctx.threads(), n_count, grain),
                                         std::vector<float>(k));
    // One output feature per step: its weights dequantized once, then dotted with every row.
    parallel_for_workers(ctx.threads(), n_count, grain, [&](size_t n0, size_t n1, size_t t) {
      float *wr = wrow[t].data();
      for (size_t n = n0; n < n1; ++n) {
        ref::dequantize(spec_, w_->data(), wr, n * k, n * k + k);
        for (size_t r = 0; r < rows; ++r) put(out, r, n, ref::dot(xs + r * k, wr, K_));
      }
    });
  }

  // The int8 mode by the scalar rules of kernels/ref (ops_ref.hpp).
  void run_reference_int8(const Context &ctx, const float *xs, size_t rows, float *out) const {
    const auto k = static_cast<size_t>(K_), n_count = static_cast<size_t>(N_);
    const size_t nb = act_blocks_;
    const auto B = static_cast<size_t>(act_block_);
    std::vector<int8_t> qx(rows * k);
    std::vector<float> sx(rows * nb);
    for (size_t r = 0; r < rows; ++r)
      ref::act_quantize_blocks(xs + r * k, K_, act_block_, qx.data() + r * k, sx.data() + r * nb);
    const bool nf4 = w_->dtype() == QNT_DTYPE_NF4;
    const size_t grain = std::max<size_t>(1, 4096 / std::max<size_t>(k, 1));
    const size_t workers = parallel_workers(ctx.threads(), n_count, grain);
    std::vector<std::vector<int32_t>> vrow(workers, std::vector<int32_t>(k));
    std::vector<std::vector<float>> swrow(workers, std::vector<float>(nb));
    parallel_for_workers(ctx.threads(), n_count, grain, [&](size_t n0, size_t n1, size_t t) {
      int32_t *v = vrow[t].data();
      float *sw = swrow[t].data();
      for (size_t n = n0; n < n1; ++n) {
        for (size_t kk = 0; kk < k; ++kk) {
          const size_t i = n * k + kk;
          const size_t g = spec_.layout.group_of(i);
          const int32_t q = ref::load_element(w_->data(), i, spec_.bits, spec_.is_signed);
          v[kk] = nf4 ? ref::kNF4Int8[q & 15] : q - spec_.zero_points[g];
          if (kk % B == 0) sw[kk / B] = nf4 ? spec_.scales[g] / 127.0f : spec_.scales[g];
        }
        for (size_t r = 0; r < rows; ++r)
          put(out, r, n,
              mode_ == QNT_WEIGHT_ONLY_INT8_ACT
                  ? ref::dot_int8_act(qx.data() + r * k, sx.data() + r * nb, v, sw, K_, act_block_)
                  : ref::dot_int8_block(qx.data() + r * k, sx.data() + r * nb, v, sw, K_, act_block_));
      }
    });
  }

  int64_t mode_;
  const kern::KernelSet *ks_;
  const kern::WoKernels *wo_;  // null: the reference paths
  int64_t N_, K_;
  Path path_ = Path::Reference;
  int64_t act_block_ = 1;  // the int8 mode's activation block (B, or K)
  size_t act_blocks_ = 1;
  PackedWeights pw_;
  struct {
    kern::WoBlkArgs args;
    size_t panels = 0;
    std::unique_ptr<uint8_t[]> data;
    size_t bytes = 0;
  } pb_;  // the block-dot mode's packed weights
  std::unique_ptr<Tensor> w_;  // the user's layout, for the unpacked paths
  ref::QuantSpec spec_;
  Bias bias_;
  DeviceWo dev_;  // device < 0: not prepared for a device
};

// The per-token mode (QNT_WEIGHT_ONLY_INT8_TOKEN): ternary or binary weights, int8 activations
// per row by absmax, one exact int32 dot product per output (the rule is qnt.h's). The weights
// are packed as kernels/wo/wo.hpp says (2 bits a weight, codes v + 1); the reference ISA runs
// the scalar rule on the user's codes instead.
class PreparedTokenWo final : public Prepared {
 public:
  static constexpr int64_t kMaxK = 16909320;  // 127 * K <= INT32_MAX

  PreparedTokenWo(const Context &ctx, const Tensor &w, const Tensor *bias, const kern::WoKernels *wo)
      : Prepared(QNT_PREPARED_LINEAR_WEIGHT_ONLY, ctx.isa()), N_(w.dims()[0]), K_(w.dims()[1]), bias_(bias) {
    const qnt_dtype dt = w.dtype();
    if (dt != QNT_DTYPE_TERNARY && dt != QNT_DTYPE_BINARY)
      fail(QNT_ERR_UNSUPPORTED, "the per-token mode takes ternary or binary weights, not ", w.info().name);
    const ref::QuantSpec spec = quantized_spec(w, "w");
    const qnt_granularity g = spec.layout.granularity;
    const int64_t axis = w.qparams()->axis();
    // One scale a row: per tensor, per output feature, or blocks along K that share one scale in
    // each row (GGUF's TQ1_0 / TQ2_0 of a BitNet model, whose blocks repeat the tensor's scale).
    const char *const one_scale =
        "the per-token mode takes one weight scale a row: qparams per tensor, per output feature (axis 0), or "
        "per block along K with the same scale in every block of a row";
    if ((g == QNT_GRANULARITY_PER_AXIS && axis != 0) || (g == QNT_GRANULARITY_PER_BLOCK && axis != 1))
      fail(QNT_ERR_UNSUPPORTED, one_scale);
    if (K_ > kMaxK) fail(QNT_ERR_UNSUPPORTED, "the per-token mode takes K up to ", kMaxK, ", not ", K_);
    if (ctx.cuda_device >= 0) fail(QNT_ERR_UNSUPPORTED, "the per-token mode runs on the CPU only in this release");
    sw_.resize(static_cast<size_t>(N_));
    const auto per_row = static_cast<size_t>(g == QNT_GRANULARITY_PER_BLOCK ? spec.layout.blocks : 1);
    for (int64_t n = 0; n < N_; ++n) {
      const size_t first = g == QNT_GRANULARITY_PER_TENSOR ? 0 : static_cast<size_t>(n) * per_row;
      for (size_t j = 1; j < per_row; ++j)
        if (std::memcmp(&spec.scales[first + j], &spec.scales[first], 4) != 0)
          fail(QNT_ERR_UNSUPPORTED, one_scale, " (row ", n, " has several)");
      sw_[static_cast<size_t>(n)] = spec.scales[first];
    }
    groups_ = static_cast<size_t>((K_ + 127) / 128);
    row_bytes_ = 32 * groups_;
    token_ = wo == nullptr ? nullptr : (wo->token != nullptr ? wo->token : &kern::wo_token_generic);
    // The values, checked (ternary's code 0b10 is no value), into the packed codes v + 1.
    values_ = ternary_values(w, "w");
    if (token_ != nullptr) {
      codes_.assign(static_cast<size_t>(N_) * row_bytes_, 0x55);  // c = 1 (v = 0) everywhere
      for (int64_t n = 0; n < N_; ++n) {
        uint8_t *row = codes_.data() + static_cast<size_t>(n) * row_bytes_;
        for (int64_t k = 0; k < K_; ++k) {
          const auto c = static_cast<uint8_t>(values_[static_cast<size_t>(n * K_ + k)] + 1);
          const size_t g0 = static_cast<size_t>(k / 128), r = static_cast<size_t>(k % 128);
          uint8_t &b = row[32 * g0 + r % 32];
          const int sh = static_cast<int>(6 - 2 * (r / 32));
          b = static_cast<uint8_t>((b & ~(3 << sh)) | (c << sh));
        }
      }
      values_.clear();
      values_.shrink_to_fit();
    }
  }

  size_t packed_size() const noexcept override {
    return codes_.size() + values_.size() + 4 * sw_.size() + bias_.bytes();
  }

  void run(const Context &ctx, const Tensor &x, Tensor &y) const override {
    check_wo_dtypes(x, y);
    const int64_t R = linear_io(x, K_, N_, y);
    const Place where = op_place({{&x, "x"}, {&y, "y"}});
    if (y.element_count() == 0) return;
    if (!where.is_cpu()) fail(QNT_ERR_UNSUPPORTED, "the per-token mode runs on the CPU only in this release");
    in_float32(x, y, [&](const float *xs, float *out) { compute(ctx, xs, static_cast<size_t>(R), out); });
  }

 private:
  // Each row's activations: qx (zero past K, 128 * groups a row), its sum, sx = a / 127, and
  // whether the row holds a NaN or an infinity.
  struct Acts {
    std::vector<int8_t> qx;
    std::vector<int32_t> sum;
    std::vector<float> sx;
    std::vector<uint8_t> bad;
  };

  // The rows in parallel; loops the compiler vectorizes (no call, no branch per element).
  Acts quantize_rows(const Context &ctx, const float *xs, size_t rows) const {
    Acts a;
    const size_t stride = 128 * groups_;
    a.qx.assign(rows * stride, 0);
    a.sum.assign(rows, 0);
    a.sx.assign(rows, 0.0f);
    a.bad.assign(rows, 0);
    const auto K = static_cast<size_t>(K_);
    parallel_for(ctx.threads(), rows, std::max<size_t>(1, 65536 / std::max<size_t>(K, 1)), [&](size_t m0, size_t m1) {
      for (size_t m = m0; m < m1; ++m) {
        const float *xr = xs + m * K;
        float amax = 0.0f;
        int32_t bad = 0;  // a NaN or an infinity (|x| <= FLT_MAX is false for both)
        for (size_t k = 0; k < K; ++k) {
          const float v = std::fabs(xr[k]);
          bad |= static_cast<int32_t>(!(v <= std::numeric_limits<float>::max()));
          amax = v > amax ? v : amax;
        }
        a.bad[m] = bad != 0;
        a.sx[m] = amax / 127.0f;
        if (bad != 0 || amax == 0.0f) continue;
        int8_t *q = a.qx.data() + m * stride;
        int32_t sum = 0;
        for (size_t k = 0; k < K; ++k) {
          // t = (x * 127) / a, two float32 roundings; |t| <= 127 but for an x * 127 that
          // overflows to +-inf (|x| > FLT_MAX / 127), which saturates: clamped to +-128 first.
          float t = (xr[k] * 127.0f) / amax;
          t = t < -128.0f ? -128.0f : t > 128.0f ? 128.0f : t;
          // round_half_to_even without the rounding mode: truncate (exact), then step by the
          // exact remainder d: past a half, or a half from an odd integer.
          const auto i = static_cast<int32_t>(t);
          const float d = t - static_cast<float>(i);
          const int32_t odd = i & 1;
          int32_t r = i + static_cast<int32_t>(d > 0.5f) - static_cast<int32_t>(d < -0.5f) +
                      (static_cast<int32_t>(d == 0.5f) & odd) - (static_cast<int32_t>(d == -0.5f) & odd);
          r = r < -127 ? -127 : r > 127 ? 127 : r;
          q[k] = static_cast<int8_t>(r);
          sum += r;
        }
        a.sum[m] = sum;
      }
    });
    return a;
  }

  void compute(const Context &ctx, const float *xs, size_t rows, float *out) const {
    const Acts a = quantize_rows(ctx, xs, rows);
    const size_t stride = 128 * groups_;
    const auto N = static_cast<size_t>(N_);
    const float *bias = bias_.present ? bias_.f32.data() : nullptr;
    const size_t grain = 64;  // output features a task
    // A task: `grain` features, their weights read once for every block of up to kRows rows
    // (the kernel reuses each decoded group across the rows of a block).
    constexpr size_t kRows = 32;
    parallel_for_workers(ctx.threads(), N, grain, [&](size_t b0, size_t b1, size_t) {
      int32_t acc[kRows * grain];
      for (size_t n0 = b0; n0 < b1; n0 += grain) {  // (one worker gets the whole range)
        const size_t n1 = std::min(b1, n0 + grain);
        for (size_t m0 = 0; m0 < rows; m0 += kRows) {
          const size_t mr = std::min(rows - m0, kRows);
          if (token_ != nullptr) {
            token_(codes_.data() + n0 * row_bytes_, row_bytes_, groups_, n1 - n0, a.qx.data() + m0 * stride,
                   stride, mr, a.sum.data() + m0, acc, grain);
          } else {  // the reference: the rule itself, on the weights' values
            for (size_t i = 0; i < mr; ++i) {
              const int8_t *q = a.qx.data() + (m0 + i) * stride;
              for (size_t n = n0; n < n1; ++n) {
                const int8_t *v = values_.data() + n * static_cast<size_t>(K_);
                int32_t s = 0;
                for (int64_t k = 0; k < K_; ++k) s += static_cast<int32_t>(q[k]) * v[k];
                acc[i * grain + (n - n0)] = s;
              }
            }
          }
          for (size_t i = 0; i < mr; ++i) {
            const size_t m = m0 + i;
            float *o = out + m * N;
            if (a.bad[m]) {
              for (size_t n = n0; n < n1; ++n) o[n] = rules::canonical_nan(std::numeric_limits<float>::quiet_NaN());
              continue;
            }
            for (size_t n = n0; n < n1; ++n)
              o[n] = rules::wo_output(static_cast<float>(acc[i * grain + (n - n0)]) * (a.sx[m] * sw_[n]), bias,
                                      static_cast<int64_t>(n));
          }
        }
      }
    });
  }

  int64_t N_, K_;
  Bias bias_;
  std::vector<float> sw_;
  size_t groups_ = 0, row_bytes_ = 0;
  kern::WoTokenFn token_ = nullptr;  // null: the reference
  std::vector<uint8_t> codes_;       // packed (wo.hpp)
  std::vector<int8_t> values_;       // the reference's: -1, 0, +1 per weight
};

std::unique_ptr<Prepared> make_weight_only(const Context &ctx, const Tensor &w, const Tensor *bias,
                                           int64_t mode, const kern::WoKernels *wo) {
  if (mode == QNT_WEIGHT_ONLY_INT8_TOKEN) return std::make_unique<PreparedTokenWo>(ctx, w, bias, wo);
  return std::make_unique<PreparedWeightOnly>(ctx, w, bias, mode, wo);
}

void check_weight_only(const Tensor &w, const Tensor *bias) {
  if (w.dtype() == QNT_DTYPE_I32)
    fail(QNT_ERR_UNSUPPORTED, "w may not be i32 in the weight-only linear layer");
  (void)quantized_spec(w, "w");
  check_linear_weights(w, bias, false);
}

}  // namespace

std::unique_ptr<Prepared> prepare_linear_weight_only(const Context &ctx, const Tensor &w,
                                                     const Tensor *bias, const OpDesc &desc) {
  desc.require_only(OpDesc::bit(QNT_OP_WEIGHT_ONLY_MODE), "the weight-only linear layer");
  check_weight_only(w, bias);
  const int64_t mode = desc.get(QNT_OP_WEIGHT_ONLY_MODE);
  if (mode == QNT_WEIGHT_ONLY_INT8_TOKEN) return std::make_unique<PreparedTokenWo>(ctx, w, bias, ctx.kernels().wo);
  auto p = std::make_unique<PreparedWeightOnly>(ctx, w, bias, mode, ctx.kernels().wo);
  if (ctx.cuda_device >= 0) p->copy_to_device(w, ctx.cuda_device);
  return p;
}

void linear_weight_only(const Context &ctx, const Tensor &x, const Tensor &w, const Tensor *bias,
                        Tensor &y) {
  check_weight_only(w, bias);
  check_wo_dtypes(x, y);
  const int64_t R = linear_io(x, w.dims()[1], w.dims()[0], y);
  require_disjoint(y, w, "y", "w");
  if (bias != nullptr) require_disjoint(y, *bias, "y", "bias");
  const Place where = op_place({{&x, "x"}, {&w, "w"}, {bias, "bias"}, {&y, "y"}});
  if (y.element_count() == 0) return;
  if (!where.is_cpu()) {
    // The tensors' own device memory; only the parameters travel (a prepared layer keeps them).
    DeviceWo d;
    d.device = where.id;
    upload_wo_params(d, quantized_spec(w, "w"));
    d.w = w.data();
    d.bias = bias != nullptr ? reinterpret_cast<const float *>(bias->data()) : nullptr;
    return device_weight_only(ctx, where, d, QNT_WEIGHT_ONLY_F32, R, w.dims()[1], w.dims()[0], x,
                              y);
  }
  PreparedWeightOnly(ctx, w, bias, QNT_WEIGHT_ONLY_F32, ctx.kernels().wo).run(ctx, x, y);
}

std::unique_ptr<Prepared> prepare_linear_weight_only_with(const Context &ctx, const Tensor &w,
                                                          const Tensor *bias, int64_t mode,
                                                          const kern::WoKernels *wo) {
  check_weight_only(w, bias);
  return make_weight_only(ctx, w, bias, mode, wo);
}

}  // namespace qnt::ops
