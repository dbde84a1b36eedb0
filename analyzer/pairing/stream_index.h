// SPDX-License-Identifier: Apache-2.0
// Analysis: StreamIndex, the position of a thread stream in
// ProcessTrace::streams (trace_set.h). A trace's events are grouped into one
// stream per thread; a tid the kernel reuses for a later thread gets a
// stream of its own. Pair keys, lone-event keys and per-class counts name a
// thread by its stream, never by its tid (the tid is
// ProcessTrace::streams[index].tid), and this type keeps the two apart: a
// tid passed where a stream is meant does not compile.
#pragma once

#include <compare>
#include <cstdint>

namespace crossfree::analyzer {

struct StreamIndex {
  uint32_t value = 0;

  constexpr StreamIndex() = default;
  constexpr explicit StreamIndex(uint32_t v) : value(v) {}
  constexpr auto operator<=>(const StreamIndex&) const = default;
};

}  // namespace crossfree::analyzer
