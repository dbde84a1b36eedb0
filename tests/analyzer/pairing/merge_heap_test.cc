// SPDX-License-Identifier: Apache-2.0
// MergeHeap (event_stream.h) driven the ways a merge drives it: one event of
// the top at a time, or the top and the runner-up merged with each other
// below the third cursor (the pairing pass's MergePair); Fix() after an
// advance, Pop() at a stream's end. The merged order must be the sort by
// (timestamp, rank, stream), ties and all.
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

using Merged = std::vector<std::tuple<uint64_t, Rank, uint32_t>>;

// One round's streams: 1-9 of them, each up to 59 sorted keys with
// timestamps below a spread of 1 to max_spread and any rank (few distinct
// keys, so that equal ones are common), in a heap ready to merge; expected,
// their merged order, sorted by (timestamp, rank, stream).
struct Round {
  std::vector<std::vector<OrderKey>> keys;
  Merged expected;
  MergeHeap<Cursor> heap;
};

void MakeRound(std::mt19937_64& rng, uint64_t max_spread, Round* r) {
  const int streams = 1 + static_cast<int>(rng() % 9);
  const uint64_t spread = 1 + rng() % max_spread;
  r->keys.assign(streams, {});
  for (int s = 0; s < streams; ++s) {
    size_t n = rng() % 60;
    for (size_t i = 0; i < n; ++i) {
      r->keys[s].push_back({rng() % spread, static_cast<Rank>(rng() % 5)});
    }
    std::sort(r->keys[s].begin(), r->keys[s].end());
    for (const OrderKey& k : r->keys[s]) r->expected.emplace_back(k.timestamp_ns, k.rank, s);
  }
  std::sort(r->expected.begin(), r->expected.end());
  for (int s = 0; s < streams; ++s) {
    if (!r->keys[s].empty()) r->heap.Push(Cursor{static_cast<uint32_t>(s), &r->keys[s], 0});
  }
  r->heap.Build();
}

TEST_CASE("the merge heap's steps give the sorted order, ties included") {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    Round r;
    MakeRound(rng, 40, &r);
    MergeHeap<Cursor>& heap = r.heap;
    Merged merged;
    while (!heap.empty()) {
      Cursor& top = heap.top();
      merged.emplace_back(top.key().timestamp_ns, top.key().rank, top.stream);
      if (++top.pos != top.keys->size()) {
        heap.Fix();
      } else {
        heap.Pop();
      }
    }
    INFO("round " << round << ", " << r.keys.size() << " streams");
    REQUIRE(merged == r.expected);
  }
}

// Pairing's MergePair: the top and the runner-up merged with each other
// while both stay below ThirdTimestamp(), then FixAt() and Fix(), the
// used-up one brought to the top with SwapTop(); a tie between the top and
// the runner-up is taken one event at a time in the heap's order (the
// pairing pass hands it to TieGroup instead).
TEST_CASE("the merge heap's pair merge, below the third cursor, gives the sorted order") {
  std::mt19937_64 rng(7);
  uint64_t pair_turns = 0;  // turns that switched between the two: the path ran
  for (int round = 0; round < 300; ++round) {
    Round r;
    MakeRound(rng, 200, &r);
    MergeHeap<Cursor>& heap = r.heap;
    Merged merged;
    auto emit = [&merged](const Cursor& c) {
      merged.emplace_back(c.key().timestamp_ns, c.key().rank, c.stream);
    };
    auto used_up = [](const Cursor& c) { return c.pos == c.keys->size(); };
    while (!heap.empty()) {
      Cursor& top = heap.top();
      const size_t i = heap.size() < 2 ? 0 : heap.runner_up_index();
      if (i == 0) {
        while (!used_up(top)) emit(top), ++top.pos;
      } else if (heap.at(i).key().timestamp_ns == top.key().timestamp_ns) {
        emit(top);
        ++top.pos;
        if (!used_up(top)) {
          heap.Fix();
          continue;
        }
      } else {
        const uint64_t third = heap.ThirdTimestamp(i);
        Cursor* c[2] = {&heap.top(), &heap.at(i)};
        for (int x = 0;; x = 1 - x) {
          const uint64_t other = c[1 - x]->key().timestamp_ns;
          const uint64_t bound = std::min(other, third);
          do {
            emit(*c[x]);
          } while (++c[x]->pos != c[x]->keys->size() && c[x]->key().timestamp_ns < bound);
          if (used_up(*c[x]) || c[x]->key().timestamp_ns == other || other >= third) break;
          ++pair_turns;
        }
        if (used_up(heap.at(i))) {
          heap.SwapTop(i);
          heap.FixAt(i);
        } else {
          heap.FixAt(i);
          if (!used_up(heap.top())) {
            heap.Fix();
            continue;
          }
        }
      }
      heap.Pop();
    }
    INFO("round " << round << ", " << r.keys.size() << " streams");
    REQUIRE(merged == r.expected);
  }
  CHECK(pair_turns > 1000);
}

}  // namespace
}  // namespace crossfree::analyzer
