// SPDX-License-Identifier: Apache-2.0
// CRC-32C: SSE4.2 crc32 instruction with a cpuid check, slicing-by-8 table
// fallback. The table is built at compile time so there is no init order to
// worry about inside the preload tracer.
#include "format/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace crossfree::format {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected 0x1EDC6F41

struct Tables {
  uint32_t t[8][256];
};

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? kPolynomial : 0);
    tables.t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) {
      uint32_t prev = tables.t[s - 1][i];
      tables.t[s][i] = (prev >> 8) ^ tables.t[0][prev & 0xff];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

uint32_t PortableRaw(const uint8_t* p, size_t len, uint32_t c) {
  const auto& t = kTables.t;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);  // little endian host: low byte first
    uint32_t lo = static_cast<uint32_t>(v) ^ c;
    uint32_t hi = static_cast<uint32_t>(v >> 32);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
        t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
        t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len-- > 0) c = (c >> 8) ^ t[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareRaw(const uint8_t* p, size_t len,
                                                        uint32_t c) {
  uint64_t c64 = c;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
    p += 8;
    len -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (len-- > 0) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}

// cpuid directly (not __builtin_cpu_supports): it needs no libgcc
// constructor to have run, which matters during early preload start-up.
// 0 = unknown, 1 = no, 2 = yes. Racing initializers store the same value.
int DetectHardware() {
  static int state = 0;
  int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
  if (s == 0) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    bool has = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
    s = has ? 2 : 1;
    __atomic_store_n(&state, s, __ATOMIC_RELAXED);
  }
  return s;
}
#endif

}  // namespace

uint32_t Crc32cPortable(const void* data, size_t len, uint32_t crc) {
  return ~PortableRaw(static_cast<const uint8_t*>(data), len, ~crc);
}

bool Crc32cUsesHardware() {
#if defined(__x86_64__)
  return DetectHardware() == 2;
#else
  return false;
#endif
}

uint32_t Crc32c(const void* data, size_t len, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  if (DetectHardware() == 2) return ~HardwareRaw(p, len, ~crc);
#endif
  return ~PortableRaw(p, len, ~crc);
}

}  // namespace crossfree::format
