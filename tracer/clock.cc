// SPDX-License-Identifier: Apache-2.0
// Tracer: the trace clock (see clock.h).
#include "tracer/clock.h"

#include <sys/mman.h>
#include <time.h>

#include "tracer/sys.h"

namespace crossfree::tracer {

FastClock g_fast_clock;

uint64_t MonotonicNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

#if defined(__x86_64__)
namespace {

uint64_t ReadTsc() {
  uint32_t lo, hi;
  __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Invariant TSC: CPUID 0x80000007, EDX bit 8 (constant rate in every
// P-/C-state).
bool HasInvariantTsc() {
  uint32_t a, b, c, d;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
  if (a < 0x80000007u) return false;
  __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
  return (d & (1u << 8)) != 0;
}

// A (monotonic ns, tsc) pair whose clock reads bracket the TSC read
// tightly: the best of a few tries, so preemption cannot skew it.
bool SamplePair(uint64_t* ns, uint64_t* tsc) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 16; ++i) {
    uint64_t before = MonotonicNs();
    uint64_t t = ReadTsc();
    uint64_t after = MonotonicNs();
    if (after - before < best) {
      best = after - before;
      *ns = before + (after - before) / 2;
      *tsc = t;
    }
  }
  return best < 20000;
}

// A KVM guest's kernel may keep kvm-clock as its clocksource even when the
// TSC would do (cloud images often ask for it; this project's VM marks the
// TSC unstable on its command line). kvm-clock is itself the TSC, scaled
// with parameters the hypervisor writes per vCPU; while the hypervisor sets
// PVCLOCK_TSC_STABLE_BIT in them it promises that every vCPU's TSC counts
// the same time, and only then does the kernel's vDSO serve
// CLOCK_MONOTONIC from a raw rdtsc on whichever vCPU it runs, with vCPU 0's
// parameters. That promise is the one the TSC clock needs, so it is read
// where the vDSO reads it: the pvclock page at the start of the
// [vvar_vclock] mapping (kernels that map the virtual-clock pages apart;
// older ones keep clock_gettime here). The page is read only when mincore
// says it is mapped in this process already (the calibration's
// clock_gettime calls fault it in when the vDSO uses it): the kernel
// answers a fault on a clock page the vDSO does not use with SIGBUS.
bool KvmClockTscStable() {
  const uintptr_t page = FindMappingStart("[vvar_vclock]");
  if (page == 0 || (page & 4095) != 0) return false;
  unsigned char resident = 0;
  if (mincore(reinterpret_cast<void*>(page), 4096, &resident) != 0 || (resident & 1) == 0) {
    return false;
  }
  // struct pvclock_vcpu_time_info: u32 version, u32 pad, u64 tsc_timestamp,
  // u64 system_time, u32 tsc_to_system_mul, s8 tsc_shift, u8 flags.
  const volatile auto* p = reinterpret_cast<const volatile uint8_t*>(page);
  const uint32_t version = *reinterpret_cast<const volatile uint32_t*>(p);
  const uint32_t mul = *reinterpret_cast<const volatile uint32_t*>(p + 24);
  const uint8_t flags = p[29];
  constexpr uint8_t kPvclockTscStable = 1;
  return version != 0 && mul != 0 && (flags & kPvclockTscStable) != 0;
}

}  // namespace

bool InitFastClock() {
  g_fast_clock.enabled = 0;
  if (!HasInvariantTsc()) return false;
  // The kernel keeps "tsc" as its clocksource only while it trusts the TSCs
  // to be synchronised across CPUs (it switches away when a check fails);
  // under "kvm-clock" the hypervisor's stable-TSC promise stands in for
  // that check (KvmClockTscStable, after the first clock reads below).
  char source[32];
  long n = ReadSmallFile("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                         source, sizeof(source));
  const bool tsc_source = n > 0 && StrEq(source, "tsc");
  const bool kvm_source = n > 0 && StrEq(source, "kvm-clock");
  if (!tsc_source && !kvm_source) return false;
  uint64_t ns0, tsc0, ns1, tsc1;
  if (!SamplePair(&ns0, &tsc0)) return false;
  if (kvm_source && !KvmClockTscStable()) return false;
  while (MonotonicNs() - ns0 < 3'000'000) {
  }
  if (!SamplePair(&ns1, &tsc1) || tsc1 <= tsc0 || ns1 <= ns0) return false;
  unsigned __int128 mult =
      (static_cast<unsigned __int128>(ns1 - ns0) << kFastClockShift) / (tsc1 - tsc0);
  if (mult == 0 || mult > (uint64_t{1} << (kFastClockShift + 4))) return false;
  g_fast_clock.base_tsc = tsc1;
  g_fast_clock.base_ns = ns1;
  g_fast_clock.mult = static_cast<uint64_t>(mult);
  g_fast_clock.enabled = 1;
  return true;
}
#else
bool InitFastClock() { return false; }
#endif

uint64_t RealtimeNs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace crossfree::tracer
