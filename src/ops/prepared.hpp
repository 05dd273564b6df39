// Prepared operators (qnt_prepared): constant weights validated, copied and laid out once, with
// what the kernels precompute from them; immutable, so one may run on many threads at once.
// The one-shot ops are wrappers: check, return at once when the output is empty, prepare, run.
#pragma once

#include "core/context.hpp"
#include "core/tensor.hpp"
#include "kernels/wo/wo.hpp"
#include "ops/desc.hpp"

#include <qnt/qnt.h>

#include <cstddef>
#include <memory>

namespace qnt::ops {

class Prepared {
 public:
  Prepared(qnt_prepared_kind kind, qnt_isa isa) : kind_(kind), isa_(isa) {}
  virtual ~Prepared() = default;
  Prepared(const Prepared &) = delete;
  Prepared &operator=(const Prepared &) = delete;

  qnt_prepared_kind kind() const noexcept { return kind_; }
  qnt_isa isa() const noexcept { return isa_; }
  virtual size_t packed_size() const noexcept = 0;
  // Checks x and y against what was prepared, then computes y; y is untouched on failure.
  virtual void run(const Context &ctx, const Tensor &x, Tensor &y) const = 0;

 private:
  qnt_prepared_kind kind_;
  qnt_isa isa_;
};

// The weight-only layer with the given kernels instead of the context's (null: the reference
// paths), for the tests of kernels this machine cannot run (tests/cpp/test_wo_emulated.cpp).
std::unique_ptr<Prepared> prepare_linear_weight_only_with(const Context &ctx, const Tensor &w,
                                                          const Tensor *bias, int64_t mode,
                                                          const kern::WoKernels *wo);

std::unique_ptr<Prepared> prepare_matmul(const Context &ctx, const Tensor &b, const Tensor *bias,
                                         const OpDesc &desc);
std::unique_ptr<Prepared> prepare_linear_dynamic(const Context &ctx, const Tensor &w,
                                                 const Tensor *bias, const OpDesc &desc);
// x_qp: per-tensor i8/u8 (required); y_qp: per-tensor i8/u8, or nullptr for an f32 output.
std::unique_ptr<Prepared> prepare_linear_static(const Context &ctx, const Tensor &w,
                                                const Tensor *bias, const QParams &x_qp,
                                                const std::shared_ptr<const QParams> &y_qp,
                                                const OpDesc &desc);
std::unique_ptr<Prepared> prepare_linear_weight_only(const Context &ctx, const Tensor &w,
                                                     const Tensor *bias, const OpDesc &desc);
// qnt_prepared_create_binary_matmul: b binary [N, K].
std::unique_ptr<Prepared> prepare_binary_matmul(const Context &ctx, const Tensor &b, const OpDesc &desc);
std::unique_ptr<Prepared> prepare_conv2d(const Context &ctx, const Tensor &w, const Tensor *bias,
                                         const OpDesc &desc);

}  // namespace qnt::ops
