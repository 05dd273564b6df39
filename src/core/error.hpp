// Errors inside the library: one exception type carrying a qnt_status. The C boundary
// (src/capi) turns it into a status and a thread-local message; nothing else catches it.
#pragma once

#include <qnt/qnt.h>

#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace qnt {

class Error : public std::exception {
 public:
  Error(qnt_status status, std::string message) : status_(status), message_(std::move(message)) {}
  qnt_status status() const noexcept { return status_; }
  const char *what() const noexcept override { return message_.c_str(); }

 private:
  qnt_status status_;
  std::string message_;
};

// fail(QNT_ERR_SHAPE_MISMATCH, "x has ", n, " elements") builds the message from its parts.
template <class... Parts>
[[noreturn]] void fail(qnt_status status, Parts &&...parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  throw Error(status, os.str());
}

}  // namespace qnt
