// Machine detection: features agree with the compiler's own view and with each other.
#include "hw/machine.hpp"

#include <gtest/gtest.h>
#include <qnt/qnt.h>

namespace {

TEST(Hardware, FeatureImplications) {
  const uint64_t f = qnt::hw::detect_cpu_features();
  EXPECT_EQ(f, qnt::hw::machine().cpu_features);
  if (f & QNT_CPU_AVX512BW) {
    EXPECT_TRUE(f & QNT_CPU_AVX512F);
  }
  if (f & QNT_CPU_AVX512VNNI) {
    EXPECT_TRUE(f & QNT_CPU_AVX512F);
  }
#if defined(__x86_64__)
  // Features the compiler already assumes for this translation unit must be detected.
#if defined(__SSE4_1__)
  EXPECT_TRUE(f & QNT_CPU_SSE41);
#endif
  EXPECT_EQ(f & (QNT_CPU_NEON | QNT_CPU_DOTPROD | QNT_CPU_I8MM), 0u);
  EXPECT_EQ(static_cast<bool>(f & QNT_CPU_AVX2), static_cast<bool>(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(static_cast<bool>(f & QNT_CPU_AVX512VNNI),
            static_cast<bool>(__builtin_cpu_supports("avx512vnni")));
#endif
#if defined(__aarch64__)
  EXPECT_TRUE(f & QNT_CPU_NEON);
#endif
}

TEST(Hardware, CountsAndCaches) {
  const qnt::hw::MachineInfo &m = qnt::hw::machine();
  EXPECT_GE(m.logical_cpus, 1);
  EXPECT_GE(m.physical_cores, 0);
  EXPECT_LE(m.physical_cores, m.logical_cpus);
  // Where L1 and L2 are both known, L2 is the larger.
  if (m.cache_bytes[1] != 0 && m.cache_bytes[2] != 0) {
    EXPECT_LT(m.cache_bytes[1], m.cache_bytes[2]);
  }
}

TEST(Hardware, CudaDevicesHaveACapability) {
  // Without a GPU (as in CI) the list is empty; with one, each device has a real capability.
  for (const qnt::hw::CudaDevice &d : qnt::hw::cuda_devices()) EXPECT_GE(d.major, 3);
}

}  // namespace
