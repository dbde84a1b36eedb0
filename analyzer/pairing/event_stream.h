// SPDX-License-Identifier: Apache-2.0
// Analysis: the event stream of one trace. The one layer between the
// format's chunk decoder and every pass that needs a trace's events in time
// order (pairing, central transfers, simulate). It owns three rules that
// must not differ between those passes:
//
//  - the ordering rule (docs/design.md, "The ordering rule"): events sort by
//    timestamp; on equal timestamps a free comes before an allocation (the
//    tracer stamps a free before the real free and an allocation after the
//    real allocation), and a thread's exit after both. The passes refine
//    the order of ties across threads by address state (design.md, "Ties";
//    tie_order.h), which the key alone cannot express;
//  - the metadata a chunk carries (stacks, thread names, modules) is
//    published into the ProcessTrace once, by whichever pass decodes the
//    chunk first;
//  - a thread's name is the one it set last, by timestamp.
//
// Thread safety: DecodeTraceChunk may run on several threads at once for
// distinct chunks of one trace (it publishes under the trace's
// metadata_mutex); FinishMetadata runs once, after every decode.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyzer/pairing/trace_set.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer {

// Rank among events with the same timestamp. A recording window (kTagWindow)
// opens before and closes after the events that share its timestamp, so
// they are inside it.
enum class Rank : uint8_t { kWindowOpen, kFree, kAlloc, kThreadExit, kWindowClose };

// The sort key of an event. Compared field by field, so no timestamp, however
// large, can wrap into another's place (a packed `ts * 2 + is_alloc` did for
// timestamps of 2^63 and above).
struct OrderKey {
  uint64_t timestamp_ns = 0;
  Rank rank = Rank::kAlloc;
  auto operator<=>(const OrderKey&) const = default;
};

inline OrderKey OrderOf(const format::Event& e) {
  return {e.timestamp_ns, e.op == format::EventOp::kFree ? Rank::kFree : Rank::kAlloc};
}

// A record visitor for one pass. The pass overrides OnEvent, OnThreadExit
// and OnCentral; stacks, names and modules are kept by this base class and
// published by DecodeTraceChunk.
class ChunkVisitor : public format::RecordVisitor {
 public:
  void OnStack(uint32_t stack_id, std::span<const uint64_t> frames) final;
  void OnThreadName(uint32_t tid, uint64_t ts_ns, std::string_view name) final;
  void OnModule(uint32_t tid, const format::Module& module) final;

  // Whether the chunk held tcmalloc central free-list records. A pass that
  // overrides OnCentral calls NoteCentral() from it.
  bool saw_central() const { return saw_central_; }

 protected:
  void NoteCentral() { saw_central_ = true; }

 private:
  friend bool DecodeTraceChunk(ProcessTrace&, const format::Chunk&, ChunkVisitor&,
                               std::string*);
  struct Name {
    uint32_t tid;
    uint64_t ts;
    std::string name;
  };
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> stacks_;
  std::vector<Name> names_;
  std::vector<format::Module> modules_;
  bool saw_central_ = false;
};

// A visitor that only notes whether central records are present.
class CentralFlagVisitor : public ChunkVisitor {
 public:
  void OnCentral(const format::CentralEvent&) override { NoteCentral(); }
};

// Decodes one chunk of `trace` into `visitor`, then publishes the chunk's
// metadata into the trace unless an earlier pass already did. On a
// malformed record returns false with *error naming the file and offset.
bool DecodeTraceChunk(ProcessTrace& trace, const format::Chunk& chunk, ChunkVisitor& visitor,
                      std::string* error);

// Resolves thread names (latest wins) into trace.thread_names and orders the
// module map by load time. Call once, after the first full pass.
void FinishMetadata(ProcessTrace& trace);

// A binary min-heap of merge cursors, one per thread stream, ordered by the
// cursor's current OrderKey and then by stream index (a fixed tie-break, so
// every pass sees the same order). Cursor needs `OrderKey key() const` and a
// `uint32_t stream` member. The caller advances the top cursor and calls
// Fix(), or Pop() when it is exhausted; or advances the top and the
// runner-up together (the pairing pass's MergePair) and calls FixAt() and
// Fix().
template <typename Cursor>
class MergeHeap {
 public:
  void Push(const Cursor& c) { heap_.push_back(c); }
  // Push() after Build(): the cursor takes its place in the heap order.
  void Insert(const Cursor& c) {
    heap_.push_back(c);
    for (size_t i = heap_.size() - 1; i > 0;) {
      size_t parent = (i - 1) / 2;
      if (!Before(heap_[i], heap_[parent])) break;
      std::swap(heap_[i], heap_[parent]);
      i = parent;
    }
  }
  // After the Push()es: establishes the heap order.
  void Build() {
    for (size_t i = heap_.size(); i-- > 0;) SiftDown(i);
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  Cursor& top() { return heap_[0]; }
  // The cursor that is next after the top, null when the top is alone. Valid
  // until the next Fix() or Pop().
  const Cursor* runner_up() const {
    return heap_.size() < 2 ? nullptr : &heap_[runner_up_index()];
  }
  void Fix() { SiftDown(0); }

  // Two threads that alternate while the others wait (two busy cores) make
  // runs of one or two events, each a heap step. The top and the runner-up
  // can instead be merged with each other, without the heap, while both
  // stay below every other cursor: below ThirdTimestamp().
  // The runner-up's place (1 or 2); the heap has two cursors or more.
  size_t runner_up_index() const {
    return heap_.size() == 2 || Before(heap_[1], heap_[2]) ? 1 : 2;
  }
  Cursor& at(size_t i) { return heap_[i]; }
  // The least timestamp of the cursors other than the top and the
  // runner-up at i (the runner-up's sibling and children: every other
  // cursor is above one of them); ~0 when there are none.
  uint64_t ThirdTimestamp(size_t i) const {
    uint64_t least = ~uint64_t{0};
    for (size_t j : {3 - i, 2 * i + 1, 2 * i + 2}) {
      if (j < heap_.size()) least = std::min(least, heap_[j].key().timestamp_ns);
    }
    return least;
  }
  // After the caller advanced the top and the cursor at i: the order again,
  // the top's place last (Fix() when it still has events).
  void FixAt(size_t i) { SiftDown(i); }
  // The cursor at i becomes the top and the top takes its place (then
  // FixAt(i)): an exhausted runner-up is refilled or popped as the top.
  void SwapTop(size_t i) { std::swap(heap_[0], heap_[i]); }
  void Pop() {
    heap_[0] = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) SiftDown(0);
  }

  // The merge order: a strict total order, since no two cursors share a stream.
  static bool Before(const Cursor& a, const Cursor& b) {
    OrderKey ka = a.key(), kb = b.key();
    if (ka != kb) return ka < kb;
    return a.stream < b.stream;
  }

 private:
  void SiftDown(size_t i) {
    size_t n = heap_.size();
    for (;;) {
      size_t l = 2 * i + 1, r = l + 1, m = i;
      if (l < n && Before(heap_[l], heap_[m])) m = l;
      if (r < n && Before(heap_[r], heap_[m])) m = r;
      if (m == i) return;
      std::swap(heap_[i], heap_[m]);
      i = m;
    }
  }
  std::vector<Cursor> heap_;
};

}  // namespace crossfree::analyzer
