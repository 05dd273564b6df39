// Settings shared by the ops of one qnt_context.
#pragma once

#include <cstdint>

namespace qnt {

struct Context {
  int32_t requested_threads = 0;  // 0: the default (every CPU this process may use)
  int32_t threads() const noexcept;
};

}  // namespace qnt
