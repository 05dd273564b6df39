// Settings shared by the ops of one qnt_context.
#pragma once

#include <qnt/qnt.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace qnt {
namespace kern {
struct KernelSet;
}

struct Context {
  int32_t requested_threads = 0;     // 0: the default (OpenMP's, which honours OMP_NUM_THREADS)
  qnt_isa max_isa = QNT_ISA_NATIVE;  // the cap set by qnt_context_set_max_isa
  int32_t cuda_device = -1;          // -1: not bound to a device
  void *cuda_stream = nullptr;
  qnt_tuning tuning = QNT_TUNING_OFF;  // qnt_context_set_tuning

  // The number of threads ops use (>= 1). May detect the machine on first use, so it can throw.
  int32_t threads() const;
  // The kernel set: what the machine runs, capped by QNT_MAX_ISA and by max_isa (never
  // QNT_ISA_NATIVE). Throws QNT_ERR_INVALID_ARGUMENT when QNT_MAX_ISA is refused.
  qnt_isa isa() const;
  // The kernels chosen for isa(): picked when the context is created and again when its cap
  // changes (choose_kernels); a default context (no handle) picks them on first use.
  const kern::KernelSet &kernels() const;
  void choose_kernels();

  const kern::KernelSet *kernel_set = nullptr;

  // Scratch memory the ops reuse from call to call (ops::Scratch): held by one call at a time;
  // a call that finds it taken allocates its own.
  struct Workspace {
    std::mutex mutex;
    std::vector<uint8_t> buffer;
  };
  std::shared_ptr<Workspace> workspace = std::make_shared<Workspace>();
};

// The best kernel set this machine runs, and whether `isa` names a set of this architecture.
qnt_isa machine_isa();
// qnt_isa_name's names ("avx512_vnni"; "invalid" for a value that is not a qnt_isa).
const char *isa_name(qnt_isa isa) noexcept;
bool isa_of_this_arch(qnt_isa isa) noexcept;
// The cap the environment variable QNT_MAX_ISA sets on every context (read once per process;
// NATIVE when unset or empty). Throws QNT_ERR_INVALID_ARGUMENT, with the values it takes, for
// any other value: an unknown cap is refused, never ignored.
qnt_isa environment_isa_cap();

}  // namespace qnt
