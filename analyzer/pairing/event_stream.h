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

// The events of the top cursor's stream that still come before the
// runner-up (MergeHeap::TopRunBound): a key k is admitted while k is below
// the runner-up's key, or equal to it and the top's stream wins the
// tie-break. The tie-break is folded into rank_limit when the bound is
// made, so the check per event is one timestamp compare (nearly always
// decisive) and, on equal timestamps, one rank compare; it reads nothing
// but the bound, which the caller keeps in registers for the run.
struct RunBound {
  uint64_t timestamp_ns = ~uint64_t{0};
  unsigned rank_limit = 256;  // above every Rank: with the timestamp above, admits all

  bool Admits(OrderKey k) const {
    return k.timestamp_ns < timestamp_ns ||
           (k.timestamp_ns == timestamp_ns && static_cast<unsigned>(k.rank) < rank_limit);
  }
};

// A binary min-heap of merge cursors, one per thread stream, ordered by the
// cursor's current OrderKey and then by stream index (a fixed tie-break, so
// every pass sees the same order). Cursor needs `OrderKey key() const` and a
// `uint32_t stream` member. The caller advances the top cursor and calls
// Fix(), or Pop() when it is exhausted.
//
// A thread's events often come in runs (a burst of allocations before
// another thread's frees): while the advanced top cursor is still
// Before(runner_up()) (TopRunBound() admits its key), it is still the top,
// and the caller may go on advancing it without a Fix() per event.
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
  Cursor& top() { return heap_[0]; }
  // The cursor that is next after the top, null when the top is alone. Valid
  // until the next Fix() or Pop().
  const Cursor* runner_up() const {
    size_t n = heap_.size();
    if (n < 2) return nullptr;
    if (n == 2 || Before(heap_[1], heap_[2])) return &heap_[1];
    return &heap_[2];
  }
  // What the top cursor may go on consuming without a Fix(): the keys that
  // are Before(runner_up()) in the top's stream; all keys when the top is
  // alone. Valid until the next Fix() or Pop().
  RunBound TopRunBound() {
    const Cursor* next = runner_up();
    if (next == nullptr) return RunBound{};
    bounded_by_ = static_cast<size_t>(next - heap_.data());
    OrderKey k = next->key();
    bool top_wins_ties = heap_[0].stream < next->stream;
    return RunBound{k.timestamp_ns, static_cast<unsigned>(k.rank) + (top_wins_ties ? 1u : 0u)};
  }
  void Fix() { SiftDown(0); }
  // Fix() after the top was advanced past what TopRunBound() admitted: the
  // runner-up it was bounded by is then the least, and moves up without the
  // two comparisons Fix() makes to find that out; the old top sinks from
  // the runner-up's place.
  void FixPastBound() {
    std::swap(heap_[0], heap_[bounded_by_]);
    SiftDown(bounded_by_);
  }
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
  size_t bounded_by_ = 0;  // the runner-up's place at the last TopRunBound()
};

}  // namespace crossfree::analyzer
