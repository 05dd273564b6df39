// Shared by the libFuzzer targets: a reader of the fuzzer's bytes, and the check every call's
// status must pass (a documented status, never QNT_ERR_INTERNAL).
#pragma once

#include <qnt/qnt.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fuzz {

class Bytes {
 public:
  Bytes(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return n_ == 0; }
  size_t left() const { return n_; }
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
  template <class T, size_t N>
  T pick(const T (&table)[N]) {
    return table[u8() % N];
  }
  // Copies up to n bytes (zeros past the end of the input).
  void fill(void *dst, size_t n) {
    auto *d = static_cast<uint8_t *>(dst);
    const size_t k = n < n_ ? n : n_;
    if (k) std::memcpy(d, p_, k);
    if (n > k) std::memset(d + k, 0, n - k);
    p_ += k;
    n_ -= k;
  }

 private:
  const uint8_t *p_;
  size_t n_;
};

// Every status a call may return; QNT_ERR_INTERNAL would be a bug in qnt.
inline void expect_documented(qnt_status s, const char *what) {
  if (s < QNT_OK || s > QNT_ERR_CORRUPT_DATA || s == QNT_ERR_INTERNAL) {
    std::fprintf(stderr, "%s returned %d: %s\n", what, static_cast<int>(s),
                 qnt_last_error_message());
    std::abort();
  }
}

#define FUZZ_CALL(call) ::fuzz::expect_documented((call), #call)

}  // namespace fuzz
