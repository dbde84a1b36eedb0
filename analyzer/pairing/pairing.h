// SPDX-License-Identifier: Apache-2.0
// Analyzer: pairs every free with the allocation it ends.
//
// Per trace (process), events are ordered per address by timestamp, frees
// before allocations on equal timestamps (the tracer stamps a free before the
// real free and an allocation after the real allocation, so this order is the
// real one). A free ends the allocation live at its address; the pair is
// cross-thread when the two thread ids differ. Realloc halves are ordinary
// free and allocation events. Addresses of different traces never pair.
//
// How: each thread's chunks are in time order, so the pass is a k-way merge
// by timestamp over the threads, with a hash map of the addresses seen.
// Events are partitioned by address hash; each of `jobs` workers merges and
// pairs its own partition, and a chunk is decoded once, by whichever worker
// reaches it first, into one event list per partition. Memory is
// proportional to the addresses in use and the distinct (stack, thread)
// combinations, plus a bounded window of decoded chunks; not to the events.
//
// Recording windows (kTagWindow, docs/guide/analyzer.md "Windows"): a window
// record is handed to every worker, in time order with its events, so each
// knows at every event whether a window opened after the trace started
// (frees of addresses never seen are then "allocated before the window")
// and how many closed stretches came before it (what was live before one
// may have been freed unseen: "live at window end", not a leak or an
// allocation over a live one). Counts records (kTagCounts, sampled traces)
// are summed into the exact totals.
//
// Results are aggregated by stack id and thread; nothing is symbolized here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/pairing/flat_map.h"
#include "analyzer/pairing/size_class.h"
#include "analyzer/pairing/stream_index.h"
#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

// Thread index = index into ProcessTrace::streams.
struct PairKey {
  uint32_t alloc_stack = 0;
  uint32_t free_stack = 0;
  StreamIndex alloc_thread;  // the thread streams (stream_index.h), not tids
  StreamIndex free_thread;
  uint32_t size_class = 0;
  // Every field compared, then one branch: the pairing looks a pair up for
  // every paired free, and a field-by-field test branched on each field.
  bool operator==(const PairKey& o) const {
    return ((alloc_stack ^ o.alloc_stack) | (free_stack ^ o.free_stack) |
            (alloc_thread.value ^ o.alloc_thread.value) |
            (free_thread.value ^ o.free_thread.value) | (size_class ^ o.size_class)) == 0;
  }
};
// FlatMap indexes by the hash's low bits, which MixBits makes depend on
// every bit of the key. The deep workload's 143 pairs in 256 slots took
// 2.02 probes per lookup with the former hash (two products folded by one
// shift), 1.38 with this one (docs/results/trace-size.md, "Reading").
struct PairKeyHash {
  uint64_t operator()(const PairKey& k) const {
    const uint64_t stacks = (uint64_t{k.alloc_stack} << 32 | k.free_stack) * 0x9e3779b97f4a7c15ULL;
    return MixBits(stacks ^ (uint64_t{k.alloc_thread.value} << 40 ^
                             uint64_t{k.free_thread.value} << 8 ^ k.size_class));
  }
};

// A (stack, thread) pair: where lone events (live, unknown, double) happened.
struct StackThread {
  uint32_t stack = 0;
  StreamIndex thread;
  bool operator==(const StackThread&) const = default;
};
struct StackThreadHash {
  uint64_t operator()(const StackThread& k) const {
    return MixBits(uint64_t{k.stack} << 32 | k.thread.value);
  }
};

struct CountBytes {
  uint64_t count = 0;
  uint64_t bytes = 0;
};

// The share of a trace's duration at each end that is not its steady state
// (start-up before it, shutdown after it): the edge signal below. A trace
// shorter than kMinSteadyNs has no steady state to tell apart, and no edges.
inline constexpr double kEdgeShare = 0.05;
inline constexpr uint64_t kMinSteadyNs = 50'000'000;

// A pair's objects, counted, and of its cross-thread ones those that one of
// two signals marks as one-off (bounded: their number does not grow with the
// work; docs/design.md, "Lifecycles"):
//  - thread_bounded: freed after the allocating thread had exited, or
//    allocated before the freeing thread's first event (thread churn, objects
//    handed to a new thread; by more than one tick of the pass's clock, about
//    a microsecond, since a thread's first recorded event may come a little
//    after its start);
//  - edge_bounded (of the others): allocated and freed outside the steady
//    state, both ends in the first or last kEdgeShare of the trace (start-up,
//    shutdown, and objects that live from one to the other).
// The rest, count - thread_bounded - edge_bounded, are the steady-state
// objects, which per-call rates count.
struct PairCounts {
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t thread_bounded = 0;
  uint64_t edge_bounded = 0;
};

// When a pair's cross-thread frees happened: kTimelineBuckets buckets of
// 2^shift ns each from the trace's first chunk. The width doubles (and the
// buckets fold in pairs) as the trace goes on, so any duration fits.
inline constexpr int kTimelineBuckets = 64;
struct Timeline {
  uint64_t buckets[kTimelineBuckets] = {};
  // Halves the resolution: bucket i takes buckets 2i and 2i+1.
  void Fold() {
    for (int i = 0; i < kTimelineBuckets / 2; ++i) buckets[i] = buckets[2 * i] + buckets[2 * i + 1];
    for (int i = kTimelineBuckets / 2; i < kTimelineBuckets; ++i) buckets[i] = 0;
  }
};

// A (thread, size class) pair, and what that thread did in that class.
struct ThreadClass {
  StreamIndex thread;
  uint32_t size_class = 0;
  bool operator==(const ThreadClass&) const = default;
};
// One multiply, not MixBits: looked up for every allocation, and the bits
// FlatMap keeps (the low ones of the product's upper half) depend on every
// bit of the key. Nothing depends on these maps' iteration order (their
// counts are summed by role and class).
struct ThreadClassHash {
  uint64_t operator()(const ThreadClass& k) const {
    return (uint64_t{k.thread.value} << 8 | k.size_class) * 0x9e3779b97f4a7c15ULL >> 32;
  }
};
struct AllocsFrees {
  uint64_t allocs = 0;
  uint64_t frees = 0;
};

struct PairingCounts {
  uint64_t events = 0;
  uint64_t allocations = 0;
  // The trace's duration and its steady state's (PairCounts' edge signal),
  // in the pass's clock ticks (equal when the trace has no edges): the
  // share of the run that per-call objects, which exclude the edges, were
  // counted over (Analysis::SteadyShare). Summed over traces.
  uint64_t duration_ticks = 0;
  uint64_t steady_ticks = 0;
  uint64_t frees = 0;
  uint64_t paired = 0;          // frees that ended a known allocation
  uint64_t cross_thread = 0;    // of those, freed on another thread
  uint64_t live_at_exit = 0;    // allocations never freed
  uint64_t live_bytes = 0;
  uint64_t unknown_frees = 0;   // frees of addresses never seen allocated
  uint64_t double_frees = 0;    // frees of addresses already freed
  uint64_t alloc_over_live = 0; // allocations of an address still live (a lost free)
  uint64_t realloc_events = 0;  // events that were realloc halves
  uint64_t ignored_null = 0;    // events on address 0 (ignored)
  // Frees of objects allocated before the window, which the trace does not
  // have: before --from (an analysis window), or before a recording window
  // that opened after the trace started (kTagWindow; docs/guide/analyzer.md,
  // "Windows"). Not unknown frees, and not pairs.
  uint64_t before_window = 0;
  // Allocations still live at the end of a window: at --to, when the trace's
  // last recording window closed, or allocated in a recording window that
  // closed later (their free may have happened while recording was closed).
  // Not counted in live_at_exit: they are not leaks.
  uint64_t live_at_window_end = 0;
  uint64_t live_window_end_bytes = 0;
  // The counts records of a sampled trace (kTagCounts): every allocation and
  // free the threads made while recording, sampled or not.
  uint64_t counts_records = 0;
  uint64_t total_allocs = 0;
  uint64_t total_frees = 0;
  uint64_t samples_dropped = 0;  // chosen by the sampler, not followed (table full)
  // In a fork child's trace: frees of addresses the child never saw
  // allocated, which its parent allocated before the fork (the child's copy
  // of the heap). Not unknown frees; fork_frees.h attributes them to the
  // parent's allocations when the parent's trace is in the same analysis.
  uint64_t forked_frees = 0;

  void Add(const PairingCounts& o);
};

// A recording window's edge (kTagWindow), as the pairing pass saw it.
struct WindowEdge {
  uint64_t timestamp_ns = 0;
  bool open = false;
};

// A free in a fork child of an address it never saw allocated (forked_frees).
struct ForkedFree {
  uint64_t address = 0;
  uint32_t stack = 0;
  StreamIndex thread;
};

// The result for one trace.
struct PairingResult {
  PairingCounts counts;
  FlatMap<PairKey, PairCounts, PairKeyHash> pairs;  // every pair, same- and cross-thread
  FlatMap<StackThread, CountBytes, StackThreadHash> live;
  FlatMap<StackThread, CountBytes, StackThreadHash> live_window_end;
  FlatMap<StackThread, CountBytes, StackThreadHash> unknown_frees;
  FlatMap<StackThread, CountBytes, StackThreadHash> double_frees;
  // Allocations made and frees done by each thread per size class (a
  // paired free counts in the class of the allocation it ends; unknown and
  // double frees, whose size is unknown, are not counted here). Sparse: a
  // thread costs memory only for the classes it used, so a trace of many
  // threads (crafted or not) stays small.
  FlatMap<ThreadClass, AllocsFrees, ThreadClassHash> by_class;
  // [stream index]: a stack the thread recorded (its first), kNoStack if
  // none; what names an unnamed thread's role (roles.h).
  std::vector<uint32_t> entry_stack;
  // The cross-thread pairs' timelines, buckets of 2^timeline_shift ns from
  // timeline_origin_ns (the earliest chunk's base timestamp).
  FlatMap<PairKey, Timeline, PairKeyHash> timelines;
  int timeline_shift = 0;
  uint64_t timeline_origin_ns = 0;
  // Recording windows: the window records of the trace in time order, and
  // whether it started closed (header flag kHeaderFlagWindowed).
  std::vector<WindowEdge> windows;
  bool starts_closed = false;
  // The steady state the edge signal used (PairCounts), absolute ns.
  uint64_t steady_from_ns = 0;
  uint64_t steady_to_ns = 0;
  // A fork child's forked frees, at most kMaxForkedFrees of them (the
  // count is forked_frees).
  static constexpr size_t kMaxForkedFrees = size_t{1} << 22;
  std::vector<ForkedFree> forked;

  AllocsFrees ByClass(StreamIndex thread, int size_class) const {
    const AllocsFrees* v = by_class.Find(ThreadClass{thread, static_cast<uint32_t>(size_class)});
    return v ? *v : AllocsFrees{};
  }
};

struct PairingOptions {
  int jobs = 0;  // workers; 0 = hardware concurrency, at most 8
  // Decoded-but-unconsumed events above which a worker that is ahead waits
  // for the others (bounds memory when partitions progress unevenly).
  uint64_t max_buffered_events = 8u << 20;
  // The analysis window, in ns since the trace's start (its header's start
  // time): events before it only set the state of their addresses (so a
  // free inside of an object allocated before counts as such, not as an
  // unknown free), events after it are left out (objects still live then
  // are live at the window's end, live_at_window_end).
  uint64_t window_from_ns = 0;
  uint64_t window_to_ns = ~uint64_t{0};
  bool windowed() const { return window_from_ns != 0 || window_to_ns != ~uint64_t{0}; }
};

// Pairs the events of one trace and fills trace->stacks, thread_names and
// modules. Returns false with *error (file and offset) if a chunk does not
// decode.
bool PairTrace(ProcessTrace& trace, const PairingOptions& options, PairingResult* result,
               std::string* error);

}  // namespace crossfree::analyzer
