// The kernel choice, for machines this one is not: building a kernel set is a pure function of
// (the CPU's features, the cap), so every machine checks the sets of every other. The expected
// choices are written here from kernels/README.md ("Which table serves which family"), not
// computed by the registry's own rule: removing an entry from a table, or adding a table that
// leaves entries empty, fails on every machine, AVX2-only ones included.
#include "core/context.hpp"
#include "hw/machine.hpp"
#include "kernels/registry.hpp"
#include "helpers.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using qnt::kern::KernelSet;

struct Machine {
  const char *name;
  uint64_t features;
  qnt_isa best;  // the set it runs uncapped
};

// What each family's kernels come from: the tables that implement it, lowest first. A table
// not listed for a family has no kernel of its own there, and the next lower listed one serves.
struct Family {
  const char *name;
  std::vector<std::string> tables;  // "ref" serves every family (for the GEMM and the
                                    // weight-only layer: the scalar reference kernels)
};

#if defined(__x86_64__)
constexpr uint64_t kAvx2 = QNT_CPU_SSE41 | QNT_CPU_AVX2 | QNT_CPU_FMA;
constexpr uint64_t kAvx512 = kAvx2 | QNT_CPU_AVX512F | QNT_CPU_AVX512BW | QNT_CPU_AVX512VL;
const Machine kMachines[] = {
    {"x86-64 without AVX2 (SSE4.1 only)", QNT_CPU_SSE41, QNT_ISA_REFERENCE},
    {"AVX2 without FMA", QNT_CPU_SSE41 | QNT_CPU_AVX2, QNT_ISA_REFERENCE},
    {"AVX2 + FMA (Haswell, Zen 2, Zen 3)", kAvx2, QNT_ISA_AVX2},
    {"AVX-VNNI without AVX-512 (Alder Lake)", kAvx2 | QNT_CPU_AVXVNNI, QNT_ISA_AVX2},
    {"AVX-512F without BW/VL (Knights Landing)", kAvx2 | QNT_CPU_AVX512F, QNT_ISA_AVX2},
    {"AVX-512 without VNNI (Skylake-SP)", kAvx512, QNT_ISA_AVX512},
    {"AVX-512 VNNI (Cascade Lake)", kAvx512 | QNT_CPU_AVX512VNNI, QNT_ISA_AVX512_VNNI},
    {"AVX-512 VNNI + VPOPCNTDQ (Ice Lake, Zen 4)",
     kAvx512 | QNT_CPU_AVX512VNNI | QNT_CPU_AVX512VPOPCNTDQ, QNT_ISA_AVX512_VNNI},
    {"VPOPCNTDQ without BW/VL", kAvx2 | QNT_CPU_AVX512F | QNT_CPU_AVX512VPOPCNTDQ, QNT_ISA_AVX2},
    {"AVX-512 VNNI + AVX-VNNI (Zen 5)",
     kAvx512 | QNT_CPU_AVX512VNNI | QNT_CPU_AVXVNNI | QNT_CPU_AVX512VPOPCNTDQ, QNT_ISA_AVX512_VNNI},
    {"AMX-INT8 (Sapphire Rapids)",
     kAvx512 | QNT_CPU_AVX512VNNI | QNT_CPU_AVXVNNI | QNT_CPU_AMXINT8, QNT_ISA_AVX512_VNNI},
};
const qnt_isa kCaps[] = {QNT_ISA_NATIVE, QNT_ISA_REFERENCE, QNT_ISA_AVX2, QNT_ISA_AVX512,
                         QNT_ISA_AVX512_VNNI};
const Family kElementwise{"quantize, dequantize, calibrate", {"ref", "avx2", "avx512"}};
const Family kGemm{"gemm", {"ref", "avx2", "avx512", "avx512_vnni"}};
const Family kWeightOnly{"linear.weight_only", {"ref", "avx2", "avx512", "avx512_vnni"}};
qnt_isa isa_of_table(const std::string &t) {
  return t == "avx2" ? QNT_ISA_AVX2 : t == "avx512" ? QNT_ISA_AVX512
       : t == "avx512_vnni" ? QNT_ISA_AVX512_VNNI : QNT_ISA_REFERENCE;
}
#elif defined(__aarch64__)
const Machine kMachines[] = {
    {"aarch64 without Advanced SIMD", 0, QNT_ISA_REFERENCE},
    {"aarch64 (Cortex-A72)", QNT_CPU_NEON, QNT_ISA_NEON},
    {"aarch64 with dotprod (Neoverse N1)", QNT_CPU_NEON | QNT_CPU_DOTPROD, QNT_ISA_NEON_DOTPROD},
    {"aarch64 with dotprod and i8mm (Neoverse V1)",
     QNT_CPU_NEON | QNT_CPU_DOTPROD | QNT_CPU_I8MM, QNT_ISA_NEON_DOTPROD},
};
const qnt_isa kCaps[] = {QNT_ISA_NATIVE, QNT_ISA_REFERENCE, QNT_ISA_NEON, QNT_ISA_NEON_DOTPROD};
const Family kElementwise{"quantize, dequantize, calibrate", {"ref", "neon"}};
const Family kGemm{"gemm", {"ref", "neon"}};
const Family kWeightOnly{"linear.weight_only", {"ref", "neon"}};
qnt_isa isa_of_table(const std::string &t) {
  return t == "neon" ? QNT_ISA_NEON : QNT_ISA_REFERENCE;
}
#else
const Machine kMachines[] = {{"other", 0, QNT_ISA_REFERENCE}};
const qnt_isa kCaps[] = {QNT_ISA_NATIVE, QNT_ISA_REFERENCE};
const Family kElementwise{"quantize, dequantize, calibrate", {"ref"}};
const Family kGemm{"gemm", {"ref"}};
const Family kWeightOnly{"linear.weight_only", {"ref"}};
qnt_isa isa_of_table(const std::string &) { return QNT_ISA_REFERENCE; }
#endif

// The table that serves `family` under the effective cap `isa`: the highest one listed.
std::string expected(const Family &family, qnt_isa isa) {
  std::string got = "ref";
  for (const std::string &t : family.tables)
    if (isa_of_table(t) <= isa) got = t;
  return got;
}

// The tables this build has: ref, and the x86 or aarch64 ones where their kernels compile.
std::set<std::string> compiled() {
  std::set<std::string> out;
  for (size_t i = 0; i < qnt::kern::compiled_table_count(); ++i)
    out.insert(qnt::kern::compiled_table(i).name);
  return out;
}

// A family's expectation, limited to the tables compiled in.
Family in_build(const Family &f) {
  const std::set<std::string> have = compiled();
  Family out{f.name, {}};
  for (const std::string &t : f.tables)
    if (have.count(t) != 0) out.tables.push_back(t);
  return out;
}

const int kQuantizedDTypes[] = {QNT_DTYPE_I32, QNT_DTYPE_I8, QNT_DTYPE_U8, QNT_DTYPE_I16,
                                QNT_DTYPE_U16, QNT_DTYPE_I4, QNT_DTYPE_U4, QNT_DTYPE_NF4,
                                QNT_DTYPE_BINARY, QNT_DTYPE_TERNARY, QNT_DTYPE_LOG4, QNT_DTYPE_LOG8};

// The binary GEMM's popcount kernel a set should have: VPOPCNTDQ's in the AVX-512 sets of a
// machine with it (x86-64), else the GEMM table's own (every x86 GEMM table has one), else the
// portable one; "ref" with the reference GEMM.
std::string expected_xnor(const std::string &gemm, qnt_isa isa, uint64_t features) {
  if (gemm == "ref") return "ref";
#if defined(__x86_64__)
  const uint64_t popcnt = QNT_CPU_AVX512F | QNT_CPU_AVX512VPOPCNTDQ;
  if (isa >= QNT_ISA_AVX512 && (features & popcnt) == popcnt) return "avx512_vpopcntdq";
  return gemm;
#else
  (void)isa;
  (void)features;
  return "generic";
#endif
}

void check_set(const KernelSet &s, qnt_isa isa, const std::string &where, uint64_t features) {
  const Family elementwise = in_build(kElementwise), gemm = in_build(kGemm),
               wo = in_build(kWeightOnly);
  EXPECT_EQ(s.isa, isa) << where;
  const std::string e = expected(elementwise, isa);
  for (int d : kQuantizedDTypes)
    for (int r = 0; r < qnt::kern::kRunKinds; ++r) {
      const std::string key = where + " dtype " + std::to_string(d) + " run " + std::to_string(r);
      EXPECT_NE(s.quantize[d][r], nullptr) << key;
      EXPECT_NE(s.dequantize[d][r], nullptr) << key;
      EXPECT_EQ(s.quantize_name[d][r], e) << "quantize " << key;
      EXPECT_EQ(s.dequantize_name[d][r], e) << "dequantize " << key;
    }
  EXPECT_NE(s.scan, nullptr) << where;
  EXPECT_NE(s.bin_indices, nullptr) << where;
  EXPECT_EQ(s.scan_name, e) << where;
  EXPECT_EQ(s.bin_indices_name, e) << where;
  // The GEMM and the weight-only layer: a null kernel means the scalar reference, which only
  // the reference table may leave.
  const std::string g = expected(gemm, isa), w = expected(wo, isa);
  EXPECT_EQ(s.gemm_name, g) << where;
  EXPECT_EQ(s.gemm == nullptr, g == "ref") << where;
  EXPECT_EQ(s.wo_name, w) << where;
  EXPECT_EQ(s.wo == nullptr, w == "ref") << where;
  EXPECT_NE(s.description.find("gemm.u8s8s32=" + g + "\n"), std::string::npos) << where;
  EXPECT_NE(s.description.find("linear.weight_only=" + w + "\n"), std::string::npos) << where;
  const std::string x = expected_xnor(g, isa, features);
  EXPECT_NE(s.description.find("gemm.binary=" + x + "\n"), std::string::npos) << where;
  if (g != "ref") {
    EXPECT_NE(s.xnor, nullptr) << where;
    EXPECT_EQ(s.xnor_name, x) << where;
  }
}

}  // namespace

TEST(Registry, EveryTableIsDocumented) {
  const std::set<std::string> known(kGemm.tables.begin(), kGemm.tables.end());
  for (const std::string &t : compiled())
    EXPECT_EQ(known.count(t), 1u) << "table " << t
                                  << " is not in the expectations of test_registry.cpp";
  EXPECT_STREQ(qnt::kern::compiled_table(0).name, "ref");
}

TEST(Registry, SetsOfEveryMachineAndCap) {
  for (const Machine &m : kMachines) {
    EXPECT_EQ(qnt::kern::best_isa(m.features), m.best) << m.name;
    for (qnt_isa cap : kCaps) {
      const qnt_isa isa = cap == QNT_ISA_NATIVE || cap > m.best ? m.best : cap;
      check_set(qnt::kern::build_kernel_set(m.features, cap), isa,
                std::string(m.name) + ", cap " + qnt_isa_name(cap), m.features);
    }
  }
}

TEST(Registry, ThisMachinesSetsAreTheFunctionsResults) {
  const uint64_t f = qnt::hw::machine().cpu_features;
  EXPECT_EQ(qnt::kern::best_isa(f), qnt::machine_isa());
  for (qnt_isa cap : kCaps)
    EXPECT_EQ(qnt::kern::kernels_for(cap).description,
              qnt::kern::build_kernel_set(f, cap).description)
        << qnt_isa_name(cap);
}

// QNT_MAX_ISA caps every context, also one asked for more and the default (NULL) context. The
// variable is read once per process: tests/CMakeLists.txt runs these in processes of their own.
TEST(EnvironmentCap, CapsEveryContext) {
  const char *v = std::getenv("QNT_TEST_ENV_CAP");
  if (v == nullptr) GTEST_SKIP() << "run by the env_isa_cap test";
  const qnt_isa cap = std::atoi(v);
  const qnt_isa want = cap < qnt::machine_isa() ? cap : qnt::machine_isa();
  qnt_context *c = nullptr;
  ASSERT_EQ(qnt_context_create(&c), QNT_OK) << qnt_last_error_message();
  qnt_isa got = 0;
  ASSERT_EQ(qnt_context_isa(c, &got), QNT_OK);
  EXPECT_EQ(got, want);
  for (qnt_isa ask : kCaps) {
    ASSERT_EQ(qnt_context_set_max_isa(c, ask), QNT_OK);
    ASSERT_EQ(qnt_context_isa(c, &got), QNT_OK);
    EXPECT_LE(got, want) << qnt_isa_name(ask);
    EXPECT_EQ(got, ask == QNT_ISA_NATIVE || ask > want ? want : ask) << qnt_isa_name(ask);
  }
  const char *list = nullptr;
  ASSERT_EQ(qnt_context_set_max_isa(c, QNT_ISA_NATIVE), QNT_OK);
  ASSERT_EQ(qnt_context_kernels(c, &list), QNT_OK);
  EXPECT_EQ(std::string(list), qnt::kern::kernels_for(want).description);
  qnt_context_destroy(c);
}

TEST(EnvironmentCap, AnUnknownValueIsRefused) {
  const char *v = std::getenv("QNT_TEST_ENV_CAP_BAD");
  if (v == nullptr) GTEST_SKIP() << "run by the env_isa_cap_refused test";
  for (int i = 0; i < 2; ++i) {  // the first creation and every later one
    qnt_context *c = nullptr;
    EXPECT_EQ(qnt_context_create(&c), QNT_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(c, nullptr);
    EXPECT_NE(std::strstr(qnt_last_error_message(), "QNT_MAX_ISA="), nullptr)
        << qnt_last_error_message();
    EXPECT_NE(std::strstr(qnt_last_error_message(), "reference"), nullptr)
        << qnt_last_error_message();
  }
  // The default context (NULL) refuses too, rather than running uncapped.
  qnt_test::T x, q;
  qnt_test::make_f32(x, {4}, {1, 2, 3, 4});
  qnt_test::QP qp;
  ASSERT_EQ(qnt_qparams_create_per_tensor(QNT_DTYPE_I8, 0.5f, 0, &qp.p), QNT_OK);
  qnt_test::make_q(q, QNT_DTYPE_I8, {4}, qp.p);
  EXPECT_EQ(qnt_quantize(nullptr, x.t, q.t), QNT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(qnt_last_error_message(), "QNT_MAX_ISA="), nullptr);
}
