// libFuzzer target: the whole C API driven by fuzzed calls. The input is a little program: each
// step picks a call (create qparams, tensors, descriptors, prepared operators, calibrators; run
// quantize, the ops, calibration, DLPack round trips...) and its arguments (dtypes, shapes,
// axes, scales, zero points, options, which handles) from the bytes. Every call must return a
// documented status, never QNT_ERR_INTERNAL, and never crash, hang or leak (ASan, UBSan,
// LeakSanitizer and libFuzzer's -timeout and -rss_limit_mb watch).
//
// Shapes come from a table with 0, small sizes, -1 and huge dimensions (2^40, 2^62, INT64_MAX):
// the library must refuse the impossible ones and do nothing for empty ones without allocating.
// A non-empty tensor is created only while it holds at most 512 elements, and calls whose
// result legitimately grows with a dimension (per-axis calibration of a 2^40-long axis, a
// prepared operator's per-channel tables) get no huge operand: asking for terabytes is an
// honest QNT_ERR_OUT_OF_MEMORY, but libFuzzer reports the attempt as a finding.
#include "fuzz_common.hpp"

#include "io/dlpack.hpp"

#include <vector>

namespace {

constexpr int kTensors = 8, kQParams = 4;
constexpr int64_t kSmallDim = 4096;

const int64_t kDims[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, 33, 1, 2, -1, int64_t{1} << 40,
                         int64_t{1} << 62, INT64_MAX, int64_t{1} << 24, 2147483647};
const int64_t kAxes[] = {0, 1, -1, 2, -2, 3, 9, -9};
const int64_t kValues[] = {
    0, 1, 2, 3, -1, 7, 16, 33, int64_t{1} << 31, (int64_t{1} << 31) + 1, INT64_MAX, INT64_MIN};
const float kScales[] = {
    0.5f, 0.1f,   1e-3f, 1e-30f, 3e30f, 0.0f, -1.0f, __builtin_nanf(""), __builtin_inff(),
    1.0f, 2.5e-4f};
const int32_t kZeroPoints[] = {0, 1, -1, 7, 8, 128, 255, -128, -129, 70000, 32768};
const float kFloats[] = {0.0f,
                         -0.0f,
                         1.0f,
                         -1.5f,
                         2.5f,
                         0.5f,
                         1e30f,
                         -1e30f,
                         1e-40f,
                         __builtin_nanf(""),
                         __builtin_inff(),
                         -__builtin_inff(),
                         127.5f,
                         -128.5f};

struct State {
  qnt_context *ctx = nullptr;
  qnt_tensor *t[kTensors] = {};
  bool huge[kTensors] = {};
  bool empty_small_n[kTensors] = {};  // empty, with a last dimension of at most kSmallDim
  qnt_qparams *q[kQParams] = {};
  qnt_op_desc *desc = nullptr;
  qnt_prepared *prep = nullptr;
  qnt_calibrator *cal = nullptr;

  ~State() {
    for (auto *x : t) qnt_tensor_destroy(x);
    for (auto *x : q) qnt_qparams_destroy(x);
    qnt_op_desc_destroy(desc);
    qnt_prepared_destroy(prep);
    qnt_calibrator_destroy(cal);
    qnt_context_destroy(ctx);
  }
  void put(int slot, qnt_tensor *x, bool is_huge) {
    qnt_tensor_destroy(t[slot]);
    t[slot] = x;
    huge[slot] = is_huge;
    empty_small_n[slot] = false;
  }
  void put(int slot, qnt_qparams *x) {
    qnt_qparams_destroy(q[slot]);
    q[slot] = x;
  }
};

int slot(fuzz::Bytes &in, int n) { return in.u8() % n; }

qnt_qparams *make_qparams(fuzz::Bytes &in, State &s) {
  const qnt_dtype dt = static_cast<qnt_dtype>(in.u8() % 17);
  qnt_qparams *out = nullptr;
  float scales[16];
  int32_t zps[16];
  for (int i = 0; i < 16; ++i) {
    scales[i] = in.pick(kScales);
    zps[i] = in.pick(kZeroPoints);
  }
  const size_t count = in.u8() % 17;
  switch (in.u8() % 4) {
    case 0:
      FUZZ_CALL(qnt_qparams_create_per_tensor(dt, scales[0], zps[0], &out));
      break;
    case 1:
      FUZZ_CALL(qnt_qparams_create_per_axis(dt, in.pick(kAxes), count, scales,
                                            in.u8() & 1 ? zps : nullptr, &out));
      break;
    case 2:
      FUZZ_CALL(qnt_qparams_create_per_block(dt, in.pick(kAxes), in.pick(kValues) % 40, count,
                                             scales, in.u8() & 1 ? zps : nullptr, &out));
      break;
    default: {  // calibrated from a small tensor
      const int i = slot(in, kTensors);
      if (s.t[i] == nullptr || s.huge[i]) break;
      if (in.u8() & 1)
        FUZZ_CALL(qnt_calibrate_minmax(s.ctx, s.t[i], dt, static_cast<qnt_scheme>(in.u8() % 4),
                                       static_cast<qnt_granularity>(in.u8() % 5), in.pick(kAxes),
                                       in.pick(kValues) % 40, &out));
      else
        FUZZ_CALL(qnt_calibrate_codebook(s.ctx, s.t[i], dt,
                                         static_cast<qnt_granularity>(in.u8() % 5), in.pick(kAxes),
                                         in.pick(kValues) % 40, &out));
      break;
    }
  }
  if (out != nullptr && in.u8() % 4 == 0) {  // the same with power-of-two scales
    const int i = slot(in, kTensors);
    qnt_qparams *p2 = nullptr;
    FUZZ_CALL(qnt_qparams_pow2_scales(s.ctx, out, s.huge[i] ? nullptr : s.t[i], &p2));
    if (p2 != nullptr) {
      qnt_qparams_destroy(out);
      out = p2;
    }
  }
  return out;
}

void make_tensor(fuzz::Bytes &in, State &s) {
  const qnt_dtype dt = static_cast<qnt_dtype>(in.u8() % 17);
  const size_t rank = in.u8() % 6;
  int64_t shape[8];
  bool empty = false, huge = false;
  unsigned __int128 nonzero = 1;
  for (size_t i = 0; i < rank; ++i) {
    shape[i] = in.pick(kDims);
    empty = empty || shape[i] == 0;
    huge = huge || shape[i] > kSmallDim || shape[i] < 0;
    if (shape[i] > 0) nonzero *= static_cast<unsigned __int128>(shape[i]);
  }
  // Non-empty tensors stay small; huge shapes are refused by qnt unless a dimension is 0.
  const bool refused = nonzero > static_cast<unsigned __int128>(QNT_MAX_ELEMENTS);
  if (!empty && !refused && nonzero > 512) return;
  if (!empty && !refused) huge = false;
  const qnt_qparams *qp = (in.u8() & 1) ? s.q[slot(in, kQParams)] : nullptr;
  qnt_tensor *t = nullptr;
  if (in.u8() & 1) {
    std::vector<uint8_t> data(empty || refused ? 0 : static_cast<size_t>(nonzero) * 4);
    if (!data.empty() && (in.u8() & 1)) {
      for (size_t i = 0; i + 4 <= data.size(); i += 4) {
        const float f = in.pick(kFloats);
        std::memcpy(&data[i], &f, 4);
      }
    } else {
      in.fill(data.data(), data.size());
    }
    FUZZ_CALL(qnt_tensor_create_from_data(dt, shape, rank, qp, data.data(), data.size(), &t));
  } else {
    FUZZ_CALL(qnt_tensor_create(dt, shape, rank, qp, &t));
  }
  if (t != nullptr) {
    const int i = slot(in, kTensors);
    s.put(i, t, huge);
    s.empty_small_n[i] = empty && rank > 0 && shape[rank - 1] >= 0 && shape[rank - 1] <= kSmallDim;
  }
}

void run_op(fuzz::Bytes &in, State &s) {
  const int a = slot(in, kTensors), b = slot(in, kTensors), c = slot(in, kTensors),
            y = slot(in, kTensors);
  qnt_tensor *ta = s.t[a], *tb = s.t[b], *tc = (in.u8() & 3) ? nullptr : s.t[c], *ty = s.t[y];
  qnt_context *ctx = (in.u8() & 1) ? s.ctx : nullptr;
  const qnt_op_desc *d = (in.u8() & 1) ? s.desc : nullptr;
  switch (in.u8() % 16) {
    case 0:
      FUZZ_CALL(qnt_quantize(ctx, ta, ty));
      break;
    case 1:
      FUZZ_CALL(qnt_dequantize(ctx, ta, ty));
      break;
    case 2:
      FUZZ_CALL(qnt_requantize(ctx, ta, ty));
      break;
    case 3:
      FUZZ_CALL(qnt_qmatmul(ctx, ta, tb, tc, ty));
      break;
    case 4:
      FUZZ_CALL(qnt_linear_dynamic(ctx, ta, tb, tc, d, ty));
      break;
    case 5:
      FUZZ_CALL(qnt_linear_weight_only(ctx, ta, tb, tc, ty));
      break;
    case 6:
      FUZZ_CALL(qnt_qconv2d(ctx, ta, tb, tc, d, ty));
      break;
    case 7:
      FUZZ_CALL(qnt_qadd(ctx, ta, tb, d, ty));
      break;
    case 8:
      FUZZ_CALL(qnt_qrelu(ctx, ta, ty));
      break;
    case 9:
      FUZZ_CALL(qnt_qrelu_clamp(ctx, ta, in.pick(kFloats), ty));
      break;
    case 10: {
      int64_t shape[4];
      FUZZ_CALL(qnt_conv2d_output_shape(ta, tb, d, shape, in.u8() % 6));
      break;
    }
    case 11: {
      qnt_tensor *out = nullptr;
      FUZZ_CALL(qnt_dynamic_quantize_linear(ctx, ta, &out));
      if (out != nullptr) s.put(y, out, s.huge[a]);
      break;
    }
    case 12: {
      if (s.huge[a]) break;
      qnt_error_report r{};
      FUZZ_CALL(
          qnt_error_report_compute(ctx, ta, s.q[slot(in, kQParams)], &r, in.u8() % (sizeof r + 9)));
      break;
    }
    case 13:
      if (s.huge[a] || s.huge[b] || s.huge[y]) break;
      FUZZ_CALL(qnt_binary_matmul(ctx, ta, tb, ty));
      break;
    case 14: {
      // bitnet.cpp's layouts: a tensor out, then bytes of the input back in (any size).
      static const int64_t tiles[] = {-1, 0, 1, 16, 24, 32, 64, 96, 128, 192, 256};
      const qnt_ternary_tiling tiling{in.pick(tiles), in.pick(tiles), in.pick(tiles)};
      const auto layout = static_cast<qnt_ternary_layout>(in.u8() % 5);
      const qnt_ternary_tiling *tp = (in.u8() & 7) ? &tiling : nullptr;
      if (!s.huge[a]) {
        std::vector<uint8_t> out(static_cast<size_t>(in.u8()) * 64);
        FUZZ_CALL(qnt_ternary_export(layout, ta, tp, out.data(), out.size()));
      }
      const int64_t rows = in.u8() % 130, cols = (in.u8() % 130) * 4;
      size_t n = 0;
      if (qnt_ternary_layout_size(layout, rows, cols, tp, &n) != QNT_OK || n > (size_t{1} << 20))
        n = in.u8();
      if (in.u8() & 1) n += in.u8() % 3;  // sometimes the wrong size
      std::vector<uint8_t> data(n + 1);
      for (auto &v : data) v = (in.u8() & 1) ? 0 : in.u8();
      qnt_tensor *out = nullptr;
      FUZZ_CALL(qnt_ternary_import(layout, data.data(), n, rows, cols, tp, in.pick(kFloats), &out));
      if (out != nullptr) s.put(y, out, false);
      break;
    }
    default: {
      std::vector<uint8_t> buf(in.u8() * 8);
      FUZZ_CALL(qnt_tensor_copy_to(ta, buf.data(), buf.size()));
      FUZZ_CALL(qnt_tensor_copy_from(ty, buf.data(), buf.size()));
      break;
    }
  }
}

void prepared(fuzz::Bytes &in, State &s) {
  const int w = slot(in, kTensors), bias = slot(in, kTensors);
  qnt_tensor *tw = s.t[w], *tbias = (in.u8() & 1) ? s.t[bias] : nullptr;
  if (in.u8() & 1) {  // create
    if (tbias != nullptr && s.huge[bias]) return;
    qnt_prepared *p = nullptr;
    qnt_context *ctx = (in.u8() & 1) ? s.ctx : nullptr;
    const qnt_op_desc *d = (in.u8() & 1) ? s.desc : nullptr;
    const int op = in.u8() % 6;
    // A matmul's b of any batch count costs nothing when it is empty and its N is small (its
    // per-column tables are N long); the other operators' per-channel tables grow with w.
    if (s.huge[w] && !(op == 0 && s.empty_small_n[w])) return;
    switch (op) {
      case 0:
        FUZZ_CALL(qnt_prepared_create_matmul(ctx, tw, tbias, d, &p));
        break;
      case 1:
        FUZZ_CALL(qnt_prepared_create_linear_dynamic(ctx, tw, tbias, d, &p));
        break;
      case 2:
        FUZZ_CALL(qnt_prepared_create_linear_static(ctx, tw, tbias, s.q[slot(in, kQParams)],
                                                    s.q[slot(in, kQParams)], d, &p));
        break;
      case 3:
        FUZZ_CALL(qnt_prepared_create_linear_weight_only(ctx, tw, tbias, d, &p));
        break;
      case 4:
        FUZZ_CALL(qnt_prepared_create_binary_matmul(ctx, tw, d, &p));
        break;
      default:
        FUZZ_CALL(qnt_prepared_create_conv2d(ctx, tw, tbias, d, &p));
        break;
    }
    if (p != nullptr) {
      qnt_prepared_destroy(s.prep);
      s.prep = p;
      size_t bytes = 0;
      qnt_prepared_kind kind = 0;
      qnt_isa isa = 0;
      FUZZ_CALL(qnt_prepared_packed_size(p, &bytes));
      FUZZ_CALL(qnt_prepared_kind_of(p, &kind));
      FUZZ_CALL(qnt_prepared_isa(p, &isa));
    }
  } else {
    FUZZ_CALL(qnt_prepared_run((in.u8() & 1) ? s.ctx : nullptr, s.prep, s.t[slot(in, kTensors)],
                               s.t[slot(in, kTensors)]));
  }
}

void calibrator(fuzz::Bytes &in, State &s) {
  const int x = slot(in, kTensors);
  switch (in.u8() % 7) {
    case 5: {  // mixed precision over the state's tensors
      qnt_recommender *r = nullptr;
      FUZZ_CALL(qnt_recommender_create(&r));
      static const char *const formats[] = {"i8",       "i4.b32",  "nf4.b64", "q4_0", "q8_0", "log4.b16",
                                            "ternary",  "u4.b3",   "x",       "i4.b", "Q4_K", "binary.b7"};
      const int nf = 1 + in.u8() % 4;
      for (int i = 0; i < nf; ++i) FUZZ_CALL(qnt_recommender_add_format(r, in.pick(formats)));
      const int nt = in.u8() % 3;
      for (int i = 0; i < nt; ++i) {
        const int t = slot(in, kTensors);
        if (s.t[t] != nullptr && !s.huge[t])
          FUZZ_CALL(qnt_recommender_add_tensor(s.ctx, r, i == 0 ? "a" : "b", s.t[t], nullptr, 0));
      }
      static const double budgets[] = {0.0, 1.0, 100.0, 1e6, -5.0, 20.0, 1e300};
      FUZZ_CALL(qnt_recommender_run(r, static_cast<qnt_budget>(in.u8() % 4), in.pick(budgets)));
      const char *report = nullptr;
      size_t n = 0;
      FUZZ_CALL(qnt_recommender_report(r, &report));
      FUZZ_CALL(qnt_recommender_tensor_count(r, &n));
      FUZZ_CALL(qnt_recommender_choice(r, in.u8() % 3, nullptr, nullptr, nullptr, nullptr));
      qnt_recommender_destroy(r);
      break;
    }
    case 6: {  // a tuning table from the input's bytes, and a tuning mode for the ops that follow
      char text[128];
      in.fill(text, sizeof text - 1);
      text[sizeof text - 1] = '\0';
      const std::string table = (in.u8() & 1) ? std::string("qnt-tuning 1\n") + text : std::string(text);
      FUZZ_CALL(qnt_tuning_import(table.c_str()));
      FUZZ_CALL(qnt_context_set_tuning(s.ctx, static_cast<qnt_tuning>(in.u8() % 4)));
      size_t n = 0;
      FUZZ_CALL(qnt_tuning_export(nullptr, 0, &n));
      break;
    }
    case 0: {
      qnt_calibrator *c = nullptr;
      FUZZ_CALL(qnt_calibrator_create(
          static_cast<qnt_calib_method>(in.u8() % 8), static_cast<qnt_dtype>(in.u8() % 17),
          static_cast<qnt_scheme>(in.u8() % 4), static_cast<qnt_granularity>(in.u8() % 5),
          in.pick(kAxes), &c));
      if (c != nullptr) {
        // 128 bins: the histogram searches cost O(bins^2) today, and 2048 bins would spend most
        // of the fuzzer's time there (the code paths are the same for every bin count).
        FUZZ_CALL(qnt_calibrator_set_option(c, QNT_CALIB_OPT_BINS, 128));
        static const double options[] = {0.01, 1.0, 0.0, 99.9, 50.0, 128, 256, 3000, -1};
        FUZZ_CALL(qnt_calibrator_set_option(c, static_cast<qnt_calib_option>(in.u8() % 5),
                                            in.pick(options)));
        qnt_calibrator_destroy(s.cal);
        s.cal = c;
      }
      break;
    }
    case 1:
      if (!s.huge[x]) FUZZ_CALL(qnt_calibrator_observe(s.ctx, s.cal, s.t[x]));
      break;
    case 2: {
      qnt_qparams *qp = nullptr;
      FUZZ_CALL(qnt_calibrator_compute(s.ctx, s.cal, &qp));
      if (qp != nullptr) s.put(slot(in, kQParams), qp);
      break;
    }
    case 3: {  // serialize, deserialize, merge back
      size_t n = 0;
      if (qnt_calibrator_serialize(s.cal, nullptr, 0, &n) != QNT_OK) break;
      std::vector<uint8_t> b(n);
      FUZZ_CALL(qnt_calibrator_serialize(s.cal, b.data(), b.size(), &n));
      if (!b.empty() && (in.u8() & 1))
        b[in.u32() % b.size()] ^= static_cast<uint8_t>(1 + in.u8() % 255);
      qnt_calibrator *d = nullptr;
      FUZZ_CALL(qnt_calibrator_deserialize(b.data(), b.size(), &d));
      FUZZ_CALL(qnt_calibrator_merge(s.cal, d));
      qnt_calibrator_destroy(d);
      break;
    }
    default: {
      uint64_t f, nan, inf;
      qnt_calib_method m;
      FUZZ_CALL(qnt_calibrator_counts(s.cal, &f, &nan, &inf));
      FUZZ_CALL(qnt_calibrator_chosen_method(s.cal, &m));
      if (in.u8() & 1) FUZZ_CALL(qnt_calibrator_reset(s.cal));
      break;
    }
  }
}

void dlpack_round_trip(fuzz::Bytes &in, State &s) {
  const int i = slot(in, kTensors);
  const int32_t v = static_cast<int32_t>(in.u8() % 3);  // 2 is invalid
  void *m = nullptr;
  FUZZ_CALL(qnt_tensor_to_dlpack(s.t[i], v, &m));
  if (m == nullptr) return;
  qnt_tensor *back = nullptr;
  FUZZ_CALL(qnt_tensor_from_dlpack(m, v, (in.u8() & 1) ? s.q[slot(in, kQParams)] : nullptr, &back));
  if (back != nullptr) {
    s.put(slot(in, kTensors), back, s.huge[i]);
  } else if (v == 1) {
    auto *vm = static_cast<qnt::dlpack::DLManagedTensorVersioned *>(m);
    vm->deleter(vm);
  } else {
    auto *lm = static_cast<qnt::dlpack::DLManagedTensor *>(m);
    lm->deleter(lm);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::Bytes in(data, size);
  State s;
  if (qnt_context_create(&s.ctx) != QNT_OK) return 0;
  FUZZ_CALL(qnt_context_set_num_threads(s.ctx, 1 + in.u8() % 3));
  FUZZ_CALL(qnt_context_set_max_isa(s.ctx, static_cast<qnt_isa>(in.u8() % 6)));
  FUZZ_CALL(qnt_op_desc_create(&s.desc));
  for (int step = 0; step < 48 && !in.empty(); ++step) {
    switch (in.u8() % 8) {
      case 0: {
        qnt_qparams *qp = make_qparams(in, s);
        if (qp != nullptr) s.put(slot(in, kQParams), qp);
        break;
      }
      case 1:
      case 2:
        make_tensor(in, s);
        break;
      case 3:
        FUZZ_CALL(
            qnt_op_desc_set(s.desc, static_cast<qnt_op_option>(in.u8() % 16), in.pick(kValues)));
        break;
      case 4:
        prepared(in, s);
        break;
      case 5:
        calibrator(in, s);
        break;
      case 6:
        dlpack_round_trip(in, s);
        break;
      default:
        run_op(in, s);
        break;
    }
  }
  qnt_tuning_clear();  // each input starts from an empty table
  return 0;
}
