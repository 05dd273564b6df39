#include "ops/tune.hpp"

#include "core/error.hpp"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace qnt::ops {
namespace {

using Key = std::tuple<std::string, std::string, int64_t, int64_t, int64_t, int32_t>;

struct Table {
  std::mutex mutex;
  std::map<Key, TuneValue> entries;  // ordered: the export's fixed order
};

Table &table() {
  static Table t;
  return t;
}

Key key_of(const TuneKey &k) { return Key{k.family, k.kernel, k.m, k.n, k.k, k.threads}; }

bool name_ok(const std::string &s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

int64_t number(const std::string &tok, int64_t lo, int64_t hi, size_t line) {
  errno = 0;
  char *end = nullptr;
  const long long v = tok.empty() ? 0 : std::strtoll(tok.c_str(), &end, 10);
  if (tok.empty() || end == nullptr || *end != '\0' || errno != 0 || v < lo || v > hi)
    fail(QNT_ERR_CORRUPT_DATA, "tuning table line ", line, ": '", tok, "' is not an integer in [",
         lo, ", ", hi, "]");
  return v;
}

}  // namespace

bool tune_lookup(const TuneKey &key, TuneValue &out) {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto it = t.entries.find(key_of(key));
  if (it == t.entries.end()) return false;
  out = it->second;
  return true;
}

void tune_store(const TuneKey &key, const TuneValue &value) {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries[key_of(key)] = value;
}

std::string tune_export() {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::ostringstream o;
  o << "qnt-tuning 1\n";
  for (const auto &[k, v] : t.entries)
    o << std::get<0>(k) << ' ' << std::get<1>(k) << ' ' << std::get<2>(k) << ' ' << std::get<3>(k)
      << ' ' << std::get<4>(k) << ' ' << std::get<5>(k) << ' ' << v.p1 << ' ' << v.p2 << '\n';
  return o.str();
}

void tune_import(const char *text) {
  if (text == nullptr) fail(QNT_ERR_NULL_POINTER, "text is NULL");
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "qnt-tuning 1")
    fail(QNT_ERR_CORRUPT_DATA, "a tuning table starts with the line 'qnt-tuning 1'");
  std::map<Key, TuneValue> fresh;
  constexpr int64_t kMax = int64_t{1} << 40;
  for (size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    std::istringstream f(line);
    std::vector<std::string> tok;
    for (std::string s; f >> s;) tok.push_back(s);
    if (tok.size() != 8)
      fail(QNT_ERR_CORRUPT_DATA, "tuning table line ", n, ": 8 fields (family kernel M N K threads p1 p2), not ",
           tok.size());
    if (tok[0] != "gemm" && tok[0] != "wo")
      fail(QNT_ERR_CORRUPT_DATA, "tuning table line ", n, ": family '", tok[0], "' is neither gemm nor wo");
    if (!name_ok(tok[1]))
      fail(QNT_ERR_CORRUPT_DATA, "tuning table line ", n, ": '", tok[1], "' is not a kernel name");
    const Key k{tok[0], tok[1], number(tok[2], 0, kMax, n), number(tok[3], 0, kMax, n),
                number(tok[4], 0, kMax, n), static_cast<int32_t>(number(tok[5], 1, 1024, n))};
    fresh[k] = TuneValue{number(tok[6], tok[0] == "wo" ? 0 : 1, kMax, n), number(tok[7], 1, kMax, n)};
  }
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const auto &[k, v] : fresh) t.entries[k] = v;
}

void tune_clear() noexcept {
  Table &t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries.clear();
}

}  // namespace qnt::ops
