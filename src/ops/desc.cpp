#include "ops/desc.hpp"

#include "core/error.hpp"

namespace qnt::ops {
namespace {

const char *key_name(qnt_op_option key) noexcept {
  static const char *const names[OpDesc::kKeys] = {"?",
                                                   "QNT_OP_STRIDE_H",
                                                   "QNT_OP_STRIDE_W",
                                                   "QNT_OP_PAD_TOP",
                                                   "QNT_OP_PAD_LEFT",
                                                   "QNT_OP_PAD_BOTTOM",
                                                   "QNT_OP_PAD_RIGHT",
                                                   "QNT_OP_DILATION_H",
                                                   "QNT_OP_DILATION_W",
                                                   "QNT_OP_GROUPS",
                                                   "QNT_OP_FUSE_RELU",
                                                   "QNT_OP_ACT_QUANT",
                                                   "QNT_OP_REDUCE_RANGE",
                                                   "QNT_OP_LAYOUT",
                                                   "QNT_OP_WEIGHT_ONLY_MODE"};
  return key >= 1 && key < OpDesc::kKeys ? names[key] : "?";
}

// Geometry values are capped so that every size computed from them fits in int64.
constexpr int64_t kGeometryMax = int64_t{1} << 31;

}  // namespace

void OpDesc::check_key(qnt_op_option key) {
  if (key < 1 || key >= kKeys)
    fail(QNT_ERR_INVALID_ARGUMENT, "key = ", key, " is not a qnt_op_option");
}

void OpDesc::set(qnt_op_option key, int64_t v) {
  check_key(key);
  int64_t lo = 0, hi = kGeometryMax;
  switch (key) {
    case QNT_OP_STRIDE_H:
    case QNT_OP_STRIDE_W:
    case QNT_OP_DILATION_H:
    case QNT_OP_DILATION_W:
    case QNT_OP_GROUPS:
      lo = 1;
      break;
    case QNT_OP_FUSE_RELU:
    case QNT_OP_REDUCE_RANGE:
      hi = 1;
      break;
    case QNT_OP_LAYOUT:
      lo = QNT_LAYOUT_NCHW;
      hi = QNT_LAYOUT_NHWC;
      break;
    case QNT_OP_WEIGHT_ONLY_MODE:
      lo = QNT_WEIGHT_ONLY_F32;
      hi = QNT_WEIGHT_ONLY_INT8_BLOCK;
      break;
    case QNT_OP_ACT_QUANT:
      lo = QNT_ACT_PER_TENSOR;
      hi = QNT_ACT_PER_ROW;
      break;
    default:  // pads
      break;
  }
  if (v < lo || v > hi)
    fail(QNT_ERR_INVALID_ARGUMENT, key_name(key), " = ", v, " is outside [", lo, ", ", hi, "]");
  value[key] = v;
  set_mask |= bit(key);
}

void OpDesc::require_only(uint32_t allowed, const char *op) const {
  const uint32_t extra = set_mask & ~allowed;
  if (extra == 0) return;
  for (int k = 1; k < kKeys; ++k)
    if (extra & bit(k))
      fail(QNT_ERR_INVALID_ARGUMENT, op, " does not take the option ", key_name(k));
}

const OpDesc &default_desc() noexcept {
  static const OpDesc d;
  return d;
}

}  // namespace qnt::ops
