#include "hw/machine.hpp"

#include <qnt/qnt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#if defined(__linux__)
#include <sched.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#define QNT_HW_X86 1
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define QNT_HW_ARM64 1
#endif

namespace qnt::hw {
namespace {

#if defined(QNT_HW_X86)
struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf) {
  Regs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}

uint64_t xgetbv0() {
  unsigned lo = 0, hi = 0;
  // The instruction itself, so that no -mxsave flag is needed for this translation unit.
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool amx_permitted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  // Linux keeps AMX tile data off until the process asks for it (ARCH_REQ_XCOMP_PERM).
  constexpr int kReqXcompPerm = 0x1023;
  constexpr unsigned long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
#endif

size_t parse_size(const std::string &s) {
  char *end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str()) return 0;
  switch (*end) {
    case 'K':
      return static_cast<size_t>(v) << 10;
    case 'M':
      return static_cast<size_t>(v) << 20;
    case 'G':
      return static_cast<size_t>(v) << 30;
    default:
      return static_cast<size_t>(v);
  }
}

bool read_line(const std::string &path, std::string &out) {
  FILE *f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char buf[256];
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  if (!ok) return false;
  out = buf;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return true;
}

void detect_caches(size_t bytes[4]) {
  for (int idx = 0; idx < 16; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::string level, type, size;
    if (!read_line(dir + "level", level)) break;
    if (!read_line(dir + "type", type) || !read_line(dir + "size", size)) continue;
    const int l = std::atoi(level.c_str());
    if (l < 1 || l > 3 || type == "Instruction") continue;
    if (bytes[l] == 0) bytes[l] = parse_size(size);
  }
#if defined(QNT_HW_X86)
  // Intel's deterministic cache parameters, where sysfs says nothing.
  if (bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 0 && cpuid(0, 0).a >= 4) {
    for (unsigned sub = 0; sub < 16; ++sub) {
      const Regs r = cpuid(4, sub);
      const unsigned type = r.a & 0x1F;
      if (type == 0) break;
      const unsigned level = (r.a >> 5) & 7;
      if (type == 2 || level < 1 || level > 3) continue;
      const size_t ways = ((r.b >> 22) & 0x3FF) + 1, parts = ((r.b >> 12) & 0x3FF) + 1;
      const size_t line = (r.b & 0xFFF) + 1, sets = static_cast<size_t>(r.c) + 1;
      if (bytes[level] == 0) bytes[level] = ways * parts * line * sets;
    }
  }
#endif
}

void detect_cpus(int32_t &logical, int32_t &physical) {
  logical = 1;
  physical = 0;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    logical = CPU_COUNT(&set);
    std::set<std::pair<std::string, std::string>> cores;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &set)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      std::string pkg, core;
      if (!read_line(dir + "physical_package_id", pkg) || !read_line(dir + "core_id", core)) {
        cores.clear();
        break;
      }
      cores.emplace(pkg, core);
    }
    physical = static_cast<int32_t>(cores.size());
  } else {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    logical = n > 0 ? static_cast<int32_t>(n) : 1;
  }
#endif
  if (logical < 1) logical = 1;
}

}  // namespace

uint64_t detect_cpu_features() {
  uint64_t f = 0;
#if defined(QNT_HW_X86)
  const unsigned max_leaf = cpuid(0, 0).a;
  const Regs l1 = cpuid(1, 0);
  if (l1.c & (1u << 19)) f |= QNT_CPU_SSE41;
  const bool osxsave = (l1.c & (1u << 27)) != 0;
  const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;                 // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;         // XTILECFG, XTILEDATA
  const bool avx = os_avx && (l1.c & (1u << 28)) != 0;
  if (avx && (l1.c & (1u << 12))) f |= QNT_CPU_FMA;
  if (max_leaf >= 7) {
    const Regs l7 = cpuid(7, 0);
    if (avx && (l7.b & (1u << 5))) f |= QNT_CPU_AVX2;
    if (os_avx512 && (l7.b & (1u << 16))) {
      f |= QNT_CPU_AVX512F;
      if (l7.b & (1u << 30)) f |= QNT_CPU_AVX512BW;
      if (l7.b & (1u << 31)) f |= QNT_CPU_AVX512VL;
      if (l7.c & (1u << 11)) f |= QNT_CPU_AVX512VNNI;
      if (l7.c & (1u << 14)) f |= QNT_CPU_AVX512VPOPCNTDQ;
    }
    if (avx && l7.a >= 1 && (cpuid(7, 1).a & (1u << 4))) f |= QNT_CPU_AVXVNNI;
    const bool amx_tile = (l7.d & (1u << 24)) != 0, amx_int8 = (l7.d & (1u << 25)) != 0;
    if (os_amx && amx_tile && amx_int8 && amx_permitted()) f |= QNT_CPU_AMXINT8;
  }
#elif defined(QNT_HW_ARM64)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  if (hwcap & (1ul << 1)) f |= QNT_CPU_NEON;      // HWCAP_ASIMD
  if (hwcap & (1ul << 20)) f |= QNT_CPU_DOTPROD;  // HWCAP_ASIMDDP
  if (hwcap2 & (1ul << 13)) f |= QNT_CPU_I8MM;    // HWCAP2_I8MM
#elif defined(__aarch64__)
  f |= QNT_CPU_NEON;  // Advanced SIMD is part of every AArch64 core
#endif
  return f;
}

const MachineInfo &machine() {
  static const MachineInfo info = [] {
    MachineInfo m;
    m.cpu_features = detect_cpu_features();
    detect_cpus(m.logical_cpus, m.physical_cores);
    detect_caches(m.cache_bytes);
    return m;
  }();
  return info;
}

const std::vector<CudaDevice> &cuda_devices() {
  static const std::vector<CudaDevice> devices = detect_cuda_devices();
  return devices;
}

}  // namespace qnt::hw
