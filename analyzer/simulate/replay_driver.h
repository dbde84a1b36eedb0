// SPDX-License-Identifier: Apache-2.0
// Simulate: the one ordered pass over one process's trace that both replays
// share (replay.h, the gperftools transfers; cost_replay.h, the cost
// models). It decodes each thread's chunks into SimEvents (sim_events.h) as
// they are needed and merges the threads in the event stream's order
// (analyzer/pairing/event_stream.h: timestamp, then free before allocation,
// thread exit last), handing every event to the caller's callback with its
// thread's stream index. What a replay does with an event is its own.
// Ties across threads (the next events of two or more threads share a
// timestamp) are ordered by address state, as the pairing pass orders them
// (docs/design.md, "Ties"; analyzer/pairing/tie_order.h): the replay says
// which addresses hold a block.
//
// Owns the decoding buffers; the trace must outlive it. One thread per
// driver; drivers of different traces are independent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/pairing/event_stream.h"
#include "analyzer/pairing/tie_order.h"
#include "analyzer/pairing/trace_set.h"
#include "analyzer/simulate/sim_events.h"

namespace crossfree::analyzer::simulate {

class ReplayDriver {
 public:
  explicit ReplayDriver(analyzer::ProcessTrace* trace)
      : trace_(trace), streams_(trace->streams.size()) {}

  // Calls on_event(stream, event) for every event of the trace in order,
  // then publishes the trace's metadata (FinishMetadata). is_live(address)
  // says whether the replay holds a block at address (its last event there
  // was an allocation): ties are ordered by it. False with *error naming
  // the file and offset on a malformed chunk; the events before it were
  // handed over.
  template <typename OnEvent, typename IsLive>
  bool Run(OnEvent&& on_event, IsLive&& is_live, std::string* error) {
    analyzer::MergeHeap<Cursor> heap;
    for (uint32_t s = 0; s < streams_.size(); ++s) {
      if (!Refill(s, error)) return false;
      if (!Exhausted(s)) heap.Push(Cursor{this, s});
    }
    heap.Build();
    while (!heap.empty()) {
      uint32_t s = heap.top().stream;
      const Cursor* next = heap.runner_up();
      if (next != nullptr && Head(next->stream).ts == Head(s).ts) {
        if (!TakeTie(heap, error)) return false;
        ties_.Order([](const SimEvent& e) { return KeyOf(e).rank; },
                    [&is_live](const SimEvent& e) { return FitsTie(e, is_live); },
                    [&on_event](const SimEvent& e, uint32_t stream) { on_event(stream, e); });
        continue;
      }
      on_event(s, Head(s));
      ++streams_[s].pos;
      if (!Refill(s, error)) return false;
      if (Exhausted(s)) {
        heap.Pop();
      } else {
        heap.Fix();
      }
    }
    analyzer::FinishMetadata(*trace_);
    return true;
  }

  // Records decoded so far (all of them after Run).
  uint64_t events() const { return events_; }

 private:
  // A thread's decoding: its next chunk, and the events of the current one.
  struct StreamState {
    size_t next_chunk = 0;
    std::vector<SimEvent> events;
    size_t pos = 0;
  };
  // A merge cursor: the head event of one stream.
  struct Cursor {
    const ReplayDriver* driver;
    uint32_t stream;
    analyzer::OrderKey key() const { return KeyOf(driver->Head(stream)); }
  };

  bool Exhausted(size_t s) const { return streams_[s].pos >= streams_[s].events.size(); }
  const SimEvent& Head(size_t s) const { return streams_[s].events[streams_[s].pos]; }
  // Decodes the stream's next chunks until it has an event or none is left.
  bool Refill(size_t s, std::string* error) {
    return !Exhausted(s) || DecodeNext(s, error);
  }
  bool DecodeNext(size_t s, std::string* error);
  // Moves the events of every thread whose next event has the top's
  // timestamp into ties_ (across chunk boundaries), and puts the threads
  // that have more back into the heap.
  bool TakeTie(analyzer::MergeHeap<Cursor>& heap, std::string* error);

  analyzer::ProcessTrace* trace_;
  std::vector<StreamState> streams_;
  uint64_t events_ = 0;
  analyzer::TieBuffer<SimEvent> ties_;  // the tie being ordered (Run)
  std::vector<uint32_t> parked_;        // TakeTie's streams to put back
};

// A realloc record (kSimRealloc) as both replays take it. In place, it is
// nothing, or an allocation when the block was never seen allocated. Moved,
// the new block is allocated before the old one is freed (every modelled
// allocator does so): allocate(old), where old is the replay's block the
// record moved from (null when never seen allocated: then an unknown
// free), then free_old(*old). live maps addresses to the replay's blocks.
template <typename LiveMap, typename Allocate, typename FreeOld>
void ReplayRealloc(LiveMap& live, const SimEvent& e, uint64_t* inplace_reallocs,
                   uint64_t* unknown_frees, Allocate&& allocate, FreeOld&& free_old) {
  if (e.address == e.old_address) {
    ++*inplace_reallocs;
    if (live.find(e.address) == live.end()) allocate(nullptr);
    return;
  }
  auto node = live.extract(e.old_address);
  if (node.empty()) {
    allocate(nullptr);
    ++*unknown_frees;
    return;
  }
  allocate(&node.mapped());
  free_old(node.mapped());
}

}  // namespace crossfree::analyzer::simulate
