// SPDX-License-Identifier: Apache-2.0
// Analysis: AddCounts, the body of a counts struct's Add (PairingCounts,
// CentralCounts, TransferCounts), which sums one pass's counters into
// another's (over workers, traces or groups). Header-only, no state: any
// thread, on structs the caller owns.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace crossfree::analyzer {

namespace add_counts_internal {

template <typename Member>
struct CounterOf;
template <typename Counts, typename Counter>
struct CounterOf<Counter Counts::*> {
  using type = Counter;
};

inline void AddCounter(uint64_t& into, uint64_t from) { into += from; }

template <size_t N>
void AddCounter(std::array<uint64_t, N>& into, const std::array<uint64_t, N>& from) {
  for (size_t i = 0; i < N; ++i) into[i] += from[i];
}

}  // namespace add_counts_internal

// Adds each counter that `counters` names (pointers to members: a uint64_t,
// or an array of them, added element by element) of `from` to the same
// counter of `into`. They must be all of Counts' data: a counter added to
// the struct but not to its Add does not compile, instead of going
// unsummed.
template <typename Counts, typename... Counters>
void AddCounts(Counts& into, const Counts& from, Counters... counters) {
  static_assert(
      sizeof(Counts) == (sizeof(typename add_counts_internal::CounterOf<Counters>::type) + ...),
      "AddCounts: the list misses a counter of the struct");
  (add_counts_internal::AddCounter(into.*counters, from.*counters), ...);
}

}  // namespace crossfree::analyzer
