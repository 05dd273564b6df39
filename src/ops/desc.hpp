// The options of an operator (qnt_op_desc): enum keys with int64 values, and which were set.
#pragma once

#include <qnt/qnt.h>

#include <cstdint>

namespace qnt::ops {

struct OpDesc {
  static constexpr int kKeys = 15;  // keys 1..14; slot 0 unused
  int64_t value[kKeys] = {0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, QNT_ACT_PER_TENSOR, 0, QNT_LAYOUT_NCHW,
                            QNT_WEIGHT_ONLY_F32};
  uint32_t set_mask = 0;  // bit k: key k was set

  int64_t get(qnt_op_option key) const noexcept { return value[key]; }
  // Validates and stores; throws QNT_ERR_INVALID_ARGUMENT.
  void set(qnt_op_option key, int64_t v);
  // Throws QNT_ERR_INVALID_ARGUMENT unless key is a known option.
  static void check_key(qnt_op_option key);
  // Throws QNT_ERR_INVALID_ARGUMENT when a key outside `allowed` (a mask of 1 << key) was set:
  // an op never silently ignores an option it does not take.
  void require_only(uint32_t allowed, const char *op) const;

  static constexpr uint32_t bit(qnt_op_option key) { return uint32_t{1} << key; }
  // Geometry (keys 1..9), QNT_OP_FUSE_RELU and QNT_OP_LAYOUT.
  static constexpr uint32_t kConvKeys =
      ((uint32_t{1} << 10) - 2) | (uint32_t{1} << QNT_OP_FUSE_RELU) | (uint32_t{1} << QNT_OP_LAYOUT);
};

// The defaults, for a NULL descriptor.
const OpDesc &default_desc() noexcept;

}  // namespace qnt::ops
