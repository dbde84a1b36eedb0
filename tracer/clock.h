// SPDX-License-Identifier: Apache-2.0
// Tracer: the trace clock. Any thread may read it at any time (no lock, no
// allocation); InitFastClock runs once at start-up, before any timestamp.
#pragma once

#include <cstdint>

namespace crossfree::tracer {

// The trace clock: CLOCK_MONOTONIC nanoseconds. After InitFastClock()
// found an invariant TSC that the kernel itself uses as its clocksource (or,
// under kvm-clock, that the hypervisor declares stable across vCPUs), it
// is read as lfence+rdtsc and converted with a fixed scale calibrated
// against CLOCK_MONOTONIC at start-up (anchored there, so it tracks
// CLOCK_MONOTONIC to within the calibration error, ~1e-5, and is monotonic
// across cores because the kernel verified, or the hypervisor promised,
// that the TSCs are synchronised).
// Otherwise every read is clock_gettime(CLOCK_MONOTONIC) through the vDSO.
// The lfence keeps the read after every earlier load, so an allocation
// stamped after the real call is later than the free that made its block
// available on another thread.
struct FastClock {
  uint64_t base_tsc = 0;
  uint64_t base_ns = 0;
  uint64_t mult = 0;  // ns per tick << kFastClockShift
  int enabled = 0;
};
inline constexpr int kFastClockShift = 32;
extern FastClock g_fast_clock;

// Calibrates the TSC clock (about 3 ms of spinning) when the CPU and the
// kernel allow it. Call once at start-up, before any timestamp is taken.
// Returns whether the TSC clock is in use.
bool InitFastClock();
uint64_t MonotonicNs();
uint64_t RealtimeNs();

inline uint64_t NowNs() {
#if defined(__x86_64__)
  if (__builtin_expect(g_fast_clock.enabled != 0, 1)) {
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    uint64_t tsc = (static_cast<uint64_t>(hi) << 32) | lo;
    int64_t delta = static_cast<int64_t>(tsc - g_fast_clock.base_tsc);
    if (delta < 0) delta = 0;
    return g_fast_clock.base_ns +
           static_cast<uint64_t>((static_cast<unsigned __int128>(delta) * g_fast_clock.mult) >>
                                 kFastClockShift);
  }
#endif
  return MonotonicNs();
}

}  // namespace crossfree::tracer
