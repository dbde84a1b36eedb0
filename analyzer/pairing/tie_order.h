// SPDX-License-Identifier: Apache-2.0
// Analysis: the order of a tie (docs/design.md, "Ties"), the one rule every
// pass that merges the threads of a trace applies when the next events of
// two or more threads share a timestamp: the pairing pass (pairing.cc) and
// simulate's replay (analyzer/simulate/replay_driver.h).
//
// A pass takes every tied thread's events of that timestamp out of its
// merge into a TieBuffer, one run per thread in the thread's own order
// (across chunk boundaries), then calls Order(). Order() keeps each
// thread's order and processes, each time, the first thread's next event
// that fits its address's state (TieFits), or, when none fits, the first
// one: first by rank (event_stream.h), then by stream index, as the merge
// itself breaks ties.
//
// What "fits" means for a pass's event and what "live" means for its
// address are the pass's (it knows its own address table); the rule for
// one address is TieFits. A TieBuffer belongs to one pass on one thread,
// is cleared for every tie and keeps its capacity: after the first ties no
// tie allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analyzer/pairing/event_stream.h"

namespace crossfree::analyzer {

// Whether an event of `rank` fits the state of its address at this point
// of a tie, `live` saying whether the address's last event was an
// allocation: an allocation of an address that is not live, a free of one
// that is. A window's open always fits (it comes before the events of its
// timestamp); a thread's exit and a window's close never do (they come
// after the events that fit).
inline bool TieFits(Rank rank, bool live) {
  switch (rank) {
    case Rank::kWindowOpen:
      return true;
    case Rank::kFree:
      return live;
    case Rank::kAlloc:
      return !live;
    case Rank::kThreadExit:
    case Rank::kWindowClose:
      return false;
  }
  return false;
}

// One tie's events, one run per thread. Event is the pass's own record.
template <typename Event>
class TieBuffer {
 public:
  void Clear() {
    events_.clear();
    runs_.clear();
  }
  // The events Add()ed after BeginRun(stream) are that thread's, in its
  // order; a thread has one run per tie.
  void BeginRun(uint32_t stream) { runs_.push_back(Run{stream, events_.size(), 0}); }
  void Add(const Event& e) { events_.push_back(e); }
  void EndRun() { runs_.back().end = events_.size(); }

  // Hands every event of the tie to process(event, stream) in the tie's
  // order. rank_of(event) is the event's Rank; fits(event) whether it fits
  // its address's state now, asked again after each event processed
  // (process changes the state). process must not touch this buffer.
  template <typename RankOf, typename Fits, typename Process>
  void Order(RankOf&& rank_of, Fits&& fits, Process&& process) {
    for (;;) {
      Run* best = nullptr;
      bool best_fits = false;
      for (Run& run : runs_) {
        if (run.next == run.end) continue;
        const Event& e = events_[run.next];
        const bool f = fits(e);
        if (best == nullptr || (f && !best_fits) ||
            (f == best_fits && Before(rank_of(e), run, rank_of(events_[best->next]), *best))) {
          best = &run;
          best_fits = f;
        }
      }
      if (best == nullptr) return;
      process(events_[best->next++], best->stream);
    }
  }

 private:
  // One thread's tied events: events_[next, end).
  struct Run {
    uint32_t stream;
    size_t next;
    size_t end;
  };

  // The merge's order among tied events: rank, then stream.
  static bool Before(Rank a, const Run& ra, Rank b, const Run& rb) {
    return a != b ? a < b : ra.stream < rb.stream;
  }

  std::vector<Event> events_;
  std::vector<Run> runs_;
};

}  // namespace crossfree::analyzer
