// SPDX-License-Identifier: Apache-2.0
// MergeHeap (event_stream.h) driven the way the pairing pass drives it: runs
// of the top stream up to TopRunBound(), then FixPastBound() when a run
// stopped at the bound, Fix() after a refill, Pop() at a stream's end. The
// merged order must be the sort by (timestamp, rank, stream), ties and all.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "analyzer/pairing/event_stream.h"

namespace crossfree::analyzer {
namespace {

struct Cursor {
  uint32_t stream;
  const std::vector<OrderKey>* keys;
  size_t pos;
  OrderKey key() const { return (*keys)[pos]; }
};

TEST_CASE("the merge heap's runs and fixes give the sorted order, ties included") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    const int streams = 1 + static_cast<int>(rng() % 9);
    // Few distinct timestamps and ranks, so that equal keys are common.
    const uint64_t spread = 1 + rng() % 40;
    std::vector<std::vector<OrderKey>> keys(streams);
    std::vector<std::tuple<uint64_t, Rank, uint32_t>> expected;
    for (int s = 0; s < streams; ++s) {
      size_t n = rng() % 60;
      for (size_t i = 0; i < n; ++i) {
        keys[s].push_back({rng() % spread, static_cast<Rank>(rng() % 5)});
      }
      std::sort(keys[s].begin(), keys[s].end());
      for (const OrderKey& k : keys[s]) expected.emplace_back(k.timestamp_ns, k.rank, s);
    }
    std::sort(expected.begin(), expected.end());

    MergeHeap<Cursor> heap;
    for (int s = 0; s < streams; ++s) {
      if (!keys[s].empty()) heap.Push(Cursor{static_cast<uint32_t>(s), &keys[s], 0});
    }
    heap.Build();
    std::vector<std::tuple<uint64_t, Rank, uint32_t>> merged;
    while (!heap.empty()) {
      Cursor& top = heap.top();
      const RunBound bound = heap.TopRunBound();
      const size_t end = top.keys->size();
      do {
        merged.emplace_back(top.key().timestamp_ns, top.key().rank, top.stream);
      } while (++top.pos != end && bound.Admits(top.key()));
      if (top.pos != end) {
        heap.FixPastBound();
      } else {
        heap.Pop();
      }
    }
    INFO("round " << round << ", " << streams << " streams");
    REQUIRE(merged == expected);
  }
}

}  // namespace
}  // namespace crossfree::analyzer
