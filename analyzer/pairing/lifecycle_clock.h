// SPDX-License-Identifier: Apache-2.0
// Analyzer: the time the pairing pass's lifecycle signals read (PairCounts,
// pairing.h): coarse ticks, each thread's first tick, and the trace's
// steady state. Made once per trace before the pass, from the chunk index
// and each thread's last chunk; read-only afterwards, by every worker.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

struct LifecycleClock {
  uint64_t origin_ns = 0;  // tick 0: the trace's earliest chunk
  // Ticks of 2^tick_shift ns, 32 bits wide: tick_shift is chosen so the
  // trace fits (10, about 1 us, for anything under an hour).
  int tick_shift = 10;
  // The steady state, [from, to] in ticks. A trace recorded by `crossfree
  // record -p` (window records of cause kAttach) has no start-up edge
  // where it attached and no shutdown edge where it detached.
  uint32_t steady_from_tick = 0;
  uint32_t steady_to_tick = ~uint32_t{0};
  // The trace's last tick (its duration).
  uint32_t end_tick = 0;
  // [stream index]: its first chunk's base; 0 for every stream of an
  // attached trace (its threads were running before the window opened).
  std::vector<uint32_t> first_tick;

  uint32_t Tick(uint64_t ts) const {
    uint64_t t = (ts > origin_ns ? ts - origin_ns : 0) >> tick_shift;
    return static_cast<uint32_t>(std::min<uint64_t>(t, ~uint32_t{0}));
  }
  bool Steady(uint32_t tick) const { return tick >= steady_from_tick && tick <= steady_to_tick; }
  uint64_t TimeOf(uint32_t tick) const { return origin_ns + (uint64_t{tick} << tick_shift); }
};

// The trace's duration (up to the latest timestamp of every thread's last
// chunk, which it decodes) less kEdgeShare at each end; none for a trace
// shorter than kMinSteadyNs. A last chunk that does not decode counts by
// its base timestamp (the pass itself reports the error).
LifecycleClock MakeLifecycleClock(const ProcessTrace& trace, uint64_t origin_ns);

}  // namespace crossfree::analyzer
