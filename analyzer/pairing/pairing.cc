// SPDX-License-Identifier: Apache-2.0
// Analyzer: the pairing pass (see pairing.h for the algorithm).
#include "analyzer/pairing/pairing.h"

#include "analyzer/pairing/add_counts.h"
#include "analyzer/pairing/address_map.h"
#include "analyzer/pairing/event_stream.h"
#include "analyzer/pairing/lifecycle_clock.h"
#include "analyzer/pairing/tie_order.h"
#include "analyzer/pairing/vector_pool.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace crossfree::analyzer {

void PairingCounts::Add(const PairingCounts& o) {
  using C = PairingCounts;
  AddCounts(*this, o, &C::events, &C::allocations, &C::duration_ticks, &C::steady_ticks, &C::frees,
            &C::paired, &C::cross_thread, &C::live_at_exit, &C::live_bytes, &C::unknown_frees,
            &C::double_frees, &C::alloc_over_live, &C::realloc_events, &C::ignored_null,
            &C::before_window, &C::live_at_window_end, &C::live_window_end_bytes,
            &C::counts_records, &C::total_allocs, &C::total_frees, &C::samples_dropped,
            &C::forked_frees);
}

namespace {

using internal::AddressMap;
using internal::AddressState;
using internal::kFreed;
using internal::kLive;
using internal::kLiveBeforeWindow;
using internal::kMaxEpoch;

// A decoded event, or the edge of a recording window (kTagWindow), which
// every worker gets, in time order with its events. Its rank (event_stream.h)
// says which of the four it is, and is stored as such so that the merge's
// comparisons, one or two per event, read it without a translation.
struct Ev {
  // Left uninitialized by default: SlotDecoder::OnEvents grows a part by a
  // span's length and then writes each element, so zeroing them first was
  // work thrown away (a vector value-initializes what resize() adds unless
  // the type has a default constructor of its own).
  Ev() {}
  Ev(uint64_t ts, uint64_t addr, uint64_t sz, uint32_t stack_id, Rank r, uint8_t realloc_half)
      : timestamp_ns(ts), address(addr), size(sz), stack(stack_id), rank(r),
        from_realloc(realloc_half) {}

  uint64_t timestamp_ns;
  uint64_t address;
  uint64_t size;
  uint32_t stack;
  Rank rank;  // kFree, kAlloc, kWindowOpen, kWindowClose or kThreadExit
  uint8_t from_realloc;

  OrderKey key() const { return {timestamp_ns, rank}; }
};

inline bool IsAlloc(const Ev& e) { return e.rank == Rank::kAlloc; }
inline bool IsWindowEdge(const Ev& e) {
  return e.rank == Rank::kWindowOpen || e.rank == Rank::kWindowClose;
}
// Not an allocation or a free: a window edge or a thread's exit, which every
// worker gets.
inline bool IsMarker(const Ev& e) { return e.rank != Rank::kAlloc && e.rank != Rank::kFree; }

// A chunk's decoding state: claimed by exactly one worker (kUndecoded ->
// kDecoding by compare-exchange), published with kDecoded.
constexpr int kUndecoded = 0;
constexpr int kDecoding = 1;
constexpr int kDecoded = 2;

struct Slot {
  std::atomic<int> state{kUndecoded};
  std::vector<std::vector<Ev>> parts;  // one per worker, from Shared::buffers
  uint64_t null_events = 0;
  uint64_t counts_records = 0;  // kTagCounts, summed
  format::ThreadCounts counts;
};

struct Shared {
  ProcessTrace* trace = nullptr;
  uint64_t window_from = 0;            // absolute timestamps
  uint64_t window_to = ~uint64_t{0};
  uint64_t origin_ns = 0;  // timelines start here
  LifecycleClock clock;  // the lifecycle signals' time (lifecycle_clock.h)
  bool starts_closed = false;  // kHeaderFlagWindowed: recording began closed
  bool fork_child = false;     // kHeaderFlagForkChild: the heap began as the parent's
  int jobs = 1;
  uint64_t max_buffered = 0;
  std::vector<std::vector<std::unique_ptr<Slot>>> slots;  // [stream][chunk]
  std::atomic<int64_t> buffered{0};
  std::unique_ptr<std::atomic<uint64_t>[]> released;  // chunks consumed, per worker
  std::unique_ptr<std::atomic<bool>[]> done;
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::string error;
  // The parts' buffers, reused from chunk to chunk: a worker gives a part
  // back when it has consumed it, the decoder of a later chunk takes it
  // (vector_pool.h). A buffer grows only while it holds a chunk's events,
  // so there are never more large buffers than large chunks were buffered
  // at the same time; one above kPooledEvents is freed, not kept (a chunk
  // of the tracer's default 128 KiB holds about 30 000 events).
  static constexpr size_t kPooledEvents = size_t{1} << 17;
  VectorPool<Ev> buffers{kPooledEvents};
};

// One multiply; a different constant from the workers' AddressMap, so a
// partition still spreads over the whole of its worker's table.
inline uint32_t PartitionOf(uint64_t address, int jobs) {
  uint64_t h = (address * 0xc2b2ae3d27d4eb4fULL) >> 32;
  return static_cast<uint32_t>((h * static_cast<uint64_t>(jobs)) >> 32);
}

inline Ev ToEv(const format::Event& e) {
  return Ev{e.timestamp_ns, e.address, e.size, e.stack_id,
            e.op == format::EventOp::kAlloc ? Rank::kAlloc : Rank::kFree,
            static_cast<uint8_t>(e.from_realloc ? 1 : 0)};
}

class SlotDecoder : public ChunkVisitor {
 public:
  SlotDecoder(Slot* slot, int jobs) : slot_(slot), jobs_(jobs) {}

  // Each part grows by the span's length at once (room for every event of
  // the span, the most it can get) and is written through a plain pointer,
  // then cut to what it got: a push_back per event checked the capacity
  // and, as the stores may alias the vector, reloaded its bounds each time.
  void OnEvents(std::span<const format::Event> events) override {
    auto& parts = slot_->parts;
    out_.resize(parts.size());
    for (size_t j = 0; j < parts.size(); ++j) {
      size_t used = parts[j].size();
      parts[j].resize(used + events.size());
      out_[j] = parts[j].data() + used;
    }
    uint64_t nulls = 0;
    if (jobs_ == 1) {
      Ev* out = out_[0];
      for (const format::Event& e : events) {
        if (e.address == 0) {
          ++nulls;
          continue;
        }
        *out++ = ToEv(e);
      }
      out_[0] = out;
    } else {
      for (const format::Event& e : events) {
        if (e.address == 0) {
          ++nulls;
          continue;
        }
        *out_[PartitionOf(e.address, jobs_)]++ = ToEv(e);
      }
    }
    for (size_t j = 0; j < parts.size(); ++j) parts[j].resize(out_[j] - parts[j].data());
    slot_->null_events += nulls;
  }
  void OnCentral(const format::CentralEvent&) override { NoteCentral(); }
  // So does a thread's exit: every worker may hold objects it allocated.
  void OnThreadExit(uint32_t, uint64_t ts_ns) override {
    Ev ev{ts_ns, 0, 0, 0, Rank::kThreadExit, 0};
    for (auto& part : slot_->parts) part.push_back(ev);
  }
  // A window edge concerns every address: each worker gets it.
  void OnWindow(uint32_t, uint64_t ts_ns, format::WindowState state, format::WindowCause) override {
    Ev ev{ts_ns, 0, 0, 0,
          state == format::WindowState::kOpen ? Rank::kWindowOpen : Rank::kWindowClose, 0};
    for (auto& part : slot_->parts) part.push_back(ev);
  }
  void OnCounts(uint32_t, const format::ThreadCounts& c) override {
    ++slot_->counts_records;
    slot_->counts.allocs += c.allocs;
    slot_->counts.frees += c.frees;
    slot_->counts.samples_dropped += c.samples_dropped;
  }

 private:
  Slot* slot_;
  int jobs_;
  std::vector<Ev*> out_;  // OnEvents(): where each part's next event goes
};

void Fail(Shared& shared, std::string message) {
  std::lock_guard<std::mutex> lock(shared.error_mutex);
  if (!shared.failed.load()) shared.error = std::move(message);
  shared.failed.store(true);
}

// A worker that is ahead of the slowest one waits while too many decoded
// events are buffered; the slowest never waits, so this cannot deadlock.
void Throttle(Shared& shared, int worker) {
  while (shared.buffered.load(std::memory_order_relaxed) >
             static_cast<int64_t>(shared.max_buffered) &&
         !shared.failed.load(std::memory_order_relaxed)) {
    uint64_t mine = shared.released[worker].load();
    bool ahead = false;
    for (int w = 0; w < shared.jobs; ++w) {
      if (w != worker && !shared.done[w].load() && shared.released[w].load() < mine) {
        ahead = true;
      }
    }
    if (!ahead) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Decodes a chunk the caller has claimed (state kDecoding) and publishes it.
bool DecodeClaimed(Shared& shared, size_t stream, size_t index) {
  Slot& slot = *shared.slots[stream][index];
  const format::Chunk& chunk = shared.trace->streams[stream].chunks[index];
  // No reserve from chunk.event_count: the count is what the file claims,
  // and memory is never sized from a claim (a crafted count of 2^31 would
  // reserve 64 GiB). The vectors grow with the events actually decoded.
  slot.parts.resize(shared.jobs);
  for (auto& part : slot.parts) part = shared.buffers.Take();
  SlotDecoder decoder(&slot, shared.jobs);
  std::string error;
  bool ok = DecodeTraceChunk(*shared.trace, chunk, decoder, &error);
  if (!ok) Fail(shared, std::move(error));
  int64_t total = 0;
  for (auto& p : slot.parts) total += static_cast<int64_t>(p.size());
  shared.buffered.fetch_add(total, std::memory_order_relaxed);
  slot.state.store(kDecoded, std::memory_order_release);
  slot.state.notify_all();
  return ok;
}

bool TryClaim(Slot& slot) {
  int expected = kUndecoded;
  return slot.state.load(std::memory_order_relaxed) == kUndecoded &&
         slot.state.compare_exchange_strong(expected, kDecoding, std::memory_order_acq_rel);
}

// Makes sure chunk (stream, index) is decoded. Workers walk the chunks in
// nearly the same order, so when another worker is already decoding this
// one, this worker decodes a chunk further ahead instead of waiting idle:
// that is what spreads the decoding over the workers.
bool EnsureDecoded(Shared& shared, size_t stream, size_t index, int worker) {
  Slot& slot = *shared.slots[stream][index];
  if (slot.state.load(std::memory_order_acquire) == kDecoded) return true;
  Throttle(shared, worker);
  if (TryClaim(slot)) return DecodeClaimed(shared, stream, index);
  auto& slots = shared.slots[stream];
  for (size_t ahead = index + 1; ahead < slots.size() && ahead <= index + 2; ++ahead) {
    if (slot.state.load(std::memory_order_acquire) == kDecoded) break;
    if (TryClaim(*slots[ahead]) && !DecodeClaimed(shared, stream, ahead)) return false;
  }
  for (int s = slot.state.load(std::memory_order_acquire); s != kDecoded;
       s = slot.state.load(std::memory_order_acquire)) {
    slot.state.wait(s, std::memory_order_acquire);
  }
  return !shared.failed.load();
}

// What a worker keeps per pair: its counts and, for a cross-thread pair, its
// timeline's row in Worker::timelines_. One map lookup per paired free finds
// both (a second map keyed by the pair, for the timelines, cost a second
// lookup per cross-thread free).
struct PairTally {
  static constexpr uint32_t kNoTimeline = ~uint32_t{0};
  uint64_t count = 0;
  uint64_t bytes = 0;
  uint64_t thread_bounded = 0;  // PairCounts
  uint64_t edge_bounded = 0;
  uint32_t timeline = kNoTimeline;
};

struct Cursor {
  uint32_t stream;
  size_t chunk;
  const Ev* cur;
  const Ev* end;

  OrderKey key() const { return cur->key(); }
};

class Worker {
 public:
  Worker(Shared* shared, int index)
      : shared_(shared),
        index_(index),
        window_from_(shared->window_from),
        window_to_(shared->window_to),
        windowed_(window_from_ != 0 || window_to_ != ~uint64_t{0}),
        reopened_(shared->starts_closed),
        exited_(shared->trace->streams.size(), 0),
        entry_stack_(shared->trace->streams.size(), format::kNoStack) {}

  // Never throws: an exception leaving a worker thread would terminate the
  // process while its siblings are still joinable.
  void Run() {
    try {
      RunMerge();
    } catch (const std::exception& e) {
      Fail(*shared_, fmt::format("{}: pairing failed: {}", shared_->trace->path, e.what()));
    }
    shared_->done[index_].store(true);
  }

  void MergeInto(PairingResult* result) {
    // What is still live at the end: leaks, unless a window ended after the
    // allocation (--to, or a recording window that closed: its free may
    // have happened while nothing was recorded).
    const bool ended_at_window = last_edge_is_close_ || shared_->window_to != ~uint64_t{0};
    live_.ForEach([this, ended_at_window](const AddressState& s) {
      if (s.state != kLive) return;
      CountAllocation(s);  // still live: no free ended it
      bool window_end = ended_at_window || s.epoch < Epoch();
      ++(window_end ? counts_.live_at_window_end : counts_.live_at_exit);
      (window_end ? counts_.live_window_end_bytes : counts_.live_bytes) += s.size;
      CountBytes& cb = (window_end ? window_end_sites_ : live_sites_)[StackThread{s.stack, s.thread}];
      ++cb.count;
      cb.bytes += s.size;
    });
    // Every event inside the window is an allocation or a free: counted
    // as those, not a third time.
    counts_.events = counts_.allocations + counts_.frees;
    result->counts.Add(counts_);
    if (index_ == 0) result->windows = edges_;
    pairs_.ForEach([result](const PairKey& k, const PairTally& v) {
      PairCounts& t = result->pairs[k];
      t.count += v.count;
      t.bytes += v.bytes;
      t.thread_bounded += v.thread_bounded;
      t.edge_bounded += v.edge_bounded;
    });
    auto merge = [](auto& from, auto& to) {
      from.ForEach([&to](const StackThread& k, const CountBytes& v) {
        CountBytes& t = to[k];
        t.count += v.count;
        t.bytes += v.bytes;
      });
    };
    merge(live_sites_, result->live);
    merge(window_end_sites_, result->live_window_end);
    merge(unknown_, result->unknown_frees);
    merge(double_, result->double_frees);
    for (const ForkedFree& f : forked_) {
      if (result->forked.size() >= PairingResult::kMaxForkedFrees) break;
      result->forked.push_back(f);
    }
    if (result->entry_stack.empty()) result->entry_stack.assign(entry_stack_.size(), format::kNoStack);
    for (size_t t = 0; t < entry_stack_.size(); ++t) {
      if (result->entry_stack[t] == format::kNoStack) result->entry_stack[t] = entry_stack_[t];
    }
    // Timelines at the coarsest width any worker reached.
    while (result->timeline_shift < timeline_shift_) {
      ++result->timeline_shift;
      result->timelines.ForEach([](const PairKey&, Timeline& t) { t.Fold(); });
    }
    for (; timeline_shift_ < result->timeline_shift; ++timeline_shift_) {
      for (Timeline& t : timelines_) t.Fold();
    }
    pairs_.ForEach([this, result](const PairKey& k, const PairTally& v) {
      if (v.timeline == PairTally::kNoTimeline) return;
      const Timeline& t = timelines_[v.timeline];
      Timeline& into = result->timelines[k];
      for (int i = 0; i < kTimelineBuckets; ++i) into.buckets[i] += t.buckets[i];
    });
    // A paired free counts in the class of the allocation it ends, on the
    // freeing thread: those are the pairs' counts, summed here rather than
    // counted per free with a map lookup each. The allocations they end
    // are counted from them too (see CountAllocation).
    pairs_.ForEach([this](const PairKey& k, const PairTally& v) {
      by_class_[ThreadClass{k.free_thread, k.size_class}].frees += v.count;
      by_class_[ThreadClass{k.alloc_thread, k.size_class}].allocs += v.count;
    });
    by_class_.ForEach([result](const ThreadClass& k, const AllocsFrees& v) {
      AllocsFrees& t = result->by_class[k];
      t.allocs += v.allocs;
      t.frees += v.frees;
    });
  }

 private:
  // Loads the next non-empty part of the cursor's stream, releasing the
  // chunks it passes. Returns false at the end of the stream (or on error).
  bool Load(Cursor& c) {
    auto& slots = shared_->slots[c.stream];
    while (c.chunk < slots.size()) {
      if (!EnsureDecoded(*shared_, c.stream, c.chunk, index_)) return false;
      Slot& slot = *slots[c.chunk];
      auto& part = slot.parts[index_];
      if (index_ == 0) {
        counts_.ignored_null += slot.null_events;
        counts_.counts_records += slot.counts_records;
        counts_.total_allocs += slot.counts.allocs;
        counts_.total_frees += slot.counts.frees;
        counts_.samples_dropped += slot.counts.samples_dropped;
      }
      if (!part.empty()) {
        c.cur = part.data();
        c.end = part.data() + part.size();
        NoteEntryStack(c.stream, part);
        return true;
      }
      Release(c);
    }
    return false;
  }

  // A thread's entry stack is the stack of its first event inside the
  // window that has one. The thread's events come in its own order, part
  // after part, so it is found when a part is loaded (at its first event,
  // nearly always) instead of being checked for every event the merge
  // processes.
  void NoteEntryStack(uint32_t stream, const std::vector<Ev>& part) {
    uint32_t& entry = entry_stack_[stream];
    if (entry != format::kNoStack) return;
    for (const Ev& e : part) {
      if (IsMarker(e) || OutsideWindow(e)) continue;
      if (e.stack != format::kNoStack) {
        entry = e.stack;
        return;
      }
    }
  }

  void Release(Cursor& c) {
    Slot& slot = *shared_->slots[c.stream][c.chunk];
    auto& part = slot.parts[index_];
    shared_->buffered.fetch_sub(static_cast<int64_t>(part.size()), std::memory_order_relaxed);
    shared_->buffers.Give(std::move(part));  // leaves part empty
    shared_->released[index_].fetch_add(1, std::memory_order_relaxed);
    ++c.chunk;
  }

  void RunMerge() {
    MergeHeap<Cursor> heap;
    for (uint32_t s = 0; s < shared_->slots.size(); ++s) {
      Cursor c{s, 0, nullptr, nullptr};
      if (Load(c)) heap.Push(c);
      if (shared_->failed.load()) return;
    }
    heap.Build();
    while (!heap.empty()) {
      Cursor& top = heap.top();
      if (heap.size() >= 2) {
        const size_t next = heap.runner_up_index();
        if (heap.at(next).cur->timestamp_ns == top.cur->timestamp_ns) {
          // Two or more threads' next events share a timestamp: a tie,
          // ordered by address state (docs/design.md, "Ties").
          if (!TieGroup(heap)) return;
          continue;
        }
        if (!MergePair(heap, next)) continue;
      } else {
        // Alone: its events are the next up to its part's end. The run
        // works on copies of the cursor: Process() writes through pointers
        // the compiler cannot tell from the heap's, so reading them from
        // the heap would reload them for every event.
        const StreamIndex thread(top.stream);
        const Ev* cur = top.cur;
        const Ev* const end = top.end;
        do {
          // The same thread's next events are likely next in time too:
          // fetch their address slots while this one is processed.
          if (end - cur > 16) live_.Prefetch(cur[16].address);
          Process(*cur, thread);
        } while (++cur != end);
        top.cur = cur;
      }
      // The top's part is used up.
      Cursor& used = heap.top();
      Release(used);
      if (!Load(used)) {
        if (shared_->failed.load()) return;
        heap.Pop();
        continue;
      }
      heap.Fix();
    }
  }

  // The top and the runner-up at i (no tie between them) merged with each
  // other, without the heap, while both stay below the other cursors
  // (MergeHeap::ThirdTimestamp): each turn is a run of one of them up to
  // the other's next timestamp. Two threads that alternate while the others
  // wait make runs of one or two events (9.9 M runs for 20 M events in a
  // recording of the deep workload on two busy cores), and a heap step per
  // run cost more than the events. It stops at a part's end, at a timestamp
  // the two share (a tie, which RunMerge's next turn finds), or where the
  // next event is not below the third's timestamp; then the heap is put in
  // order again. True when the top's part is used up (the one at the top
  // then: the caller refills or pops it).
  bool MergePair(MergeHeap<Cursor>& heap, size_t i) {
    const uint64_t third = heap.ThirdTimestamp(i);
    Cursor& first = heap.top();
    Cursor& second = heap.at(i);
    // Copies, for the reason RunMerge's run has them.
    const Ev* cur[2] = {first.cur, second.cur};
    const Ev* const end[2] = {first.end, second.end};
    const StreamIndex thread[2] = {StreamIndex(first.stream), StreamIndex(second.stream)};
    for (int x = 0;; x = 1 - x) {
      const uint64_t other = cur[1 - x]->timestamp_ns;
      const uint64_t bound = std::min(other, third);
      const Ev* c = cur[x];
      const Ev* const e = end[x];
      do {
        if (e - c > 16) live_.Prefetch(c[16].address);
        Process(*c, thread[x]);
      } while (++c != e && c->timestamp_ns < bound);
      cur[x] = c;
      // Past the other one (not equal to it), which is below the third:
      // the other's events are next.
      if (c == e || c->timestamp_ns == other || other >= third) break;
    }
    first.cur = cur[0];
    second.cur = cur[1];
    if (cur[1] == end[1]) {
      heap.SwapTop(i);  // the used-up one to the top, the other to i
      heap.FixAt(i);
      return true;
    }
    heap.FixAt(i);
    if (cur[0] == end[0]) return true;
    heap.Fix();
    return false;
  }

  // A tie (docs/design.md, "Ties"; tie_order.h): every thread whose next
  // event has the top's timestamp t gives up its events of t (across chunk
  // boundaries) into ties_, which orders them by address state. The
  // threads go back into the heap at their next event. False when a chunk
  // failed to decode.
  bool TieGroup(MergeHeap<Cursor>& heap) {
    const uint64_t t = heap.top().cur->timestamp_ns;
    ties_.Clear();
    parked_.clear();
    while (!heap.empty() && heap.top().cur->timestamp_ns == t) {
      Cursor c = heap.top();
      heap.Pop();
      ties_.BeginRun(c.stream);
      bool more = true;
      for (;;) {
        while (c.cur != c.end && c.cur->timestamp_ns == t) ties_.Add(*c.cur++);
        if (c.cur != c.end) break;
        Release(c);
        if (!Load(c)) {
          if (shared_->failed.load()) return false;
          more = false;
          break;
        }
      }
      ties_.EndRun();
      if (more) parked_.push_back(c);
    }
    for (const Cursor& c : parked_) heap.Insert(c);
    ties_.Order([](const Ev& e) { return e.rank; }, [this](const Ev& e) { return Fits(e); },
                [this](const Ev& e, uint32_t stream) { Process(e, StreamIndex(stream)); });
    return true;
  }

  // Whether e fits its address's state at this point of a tie (TieFits):
  // an address live before the window is live.
  bool Fits(const Ev& e) const {
    if (IsMarker(e)) return TieFits(e.rank, false);
    const AddressState* s = live_.Find(e.address);
    return TieFits(e.rank, s != nullptr && (s->state == kLive || s->state == kLiveBeforeWindow));
  }

  // The current recording epoch (window closes seen so far), saturated; read
  // for every event, so kept rather than recomputed.
  uint16_t Epoch() const { return epoch_; }

  // A recording window's edge. Events are not filtered by it: the trace
  // holds only what was recorded, and the few events a thread stamped just
  // outside a window (it was inside a hook when the window changed) are
  // analysed like the others.
  void ProcessEdge(const Ev& e) {
    bool open = e.rank == Rank::kWindowOpen;
    if (index_ == 0) edges_.push_back({e.timestamp_ns, open});
    if (open) {
      reopened_ = true;  // a window that opened after the trace started
    } else {
      ++closes_;
      epoch_ = static_cast<uint16_t>(std::min(closes_, kMaxEpoch));
    }
    last_edge_is_close_ = !open;
  }

  void Process(const Ev& e, StreamIndex thread) {
    if (IsMarker(e)) {
      if (e.rank == Rank::kThreadExit) {
        exited_[thread.value] = 1;
      } else {
        ProcessEdge(e);
      }
      return;
    }
    if (OutsideWindow(e)) {
      ProcessOutsideWindow(e);
      return;
    }
    counts_.realloc_events += e.from_realloc;
    AddressState& s = live_.FindOrInsert(e.address);
    if (IsAlloc(e)) {
      ++counts_.allocations;
      if (s.state == kLive) {
        CountAllocation(s);  // the one it replaces, which no free ends
        if (AcrossGap(s)) {
          // Freed while recording was closed: live at its window's end.
          ++counts_.live_at_window_end;
          counts_.live_window_end_bytes += s.size;
          CountBytes& cb = window_end_sites_[StackThread{s.stack, s.thread}];
          ++cb.count;
          cb.bytes += s.size;
        } else {
          ++counts_.alloc_over_live;
        }
      }
      s.state = kLive;
      s.size = e.size;
      s.stack = e.stack;
      s.thread = thread;
      s.epoch = Epoch();
      s.size_class = static_cast<uint8_t>(SizeClassIndex(e.size));
      s.alloc_tick = Tick(e.timestamp_ns);
      // A stream is a tid: an allocation after its exit record is a new
      // thread that got the same tid (thread churn reuses them).
      if (exited_[thread.value]) [[unlikely]] exited_[thread.value] = 0;
      return;
    }
    ++counts_.frees;
    if (s.state == kLiveBeforeWindow) {
      s.state = kFreed;
      s.epoch = Epoch();
      ++counts_.before_window;
      return;
    }
    if (s.state == kLive) {
      // Across a closed stretch this may be another object at the same
      // address (the first freed, the address reused, while nothing was
      // recorded): the trace cannot tell, and it pairs.
      s.state = kFreed;
      s.epoch = Epoch();
      ++counts_.paired;
      // by_class_'s frees: from pairs_, in MergeInto
      PairTally& tally = pairs_[PairKey{s.stack, e.stack, s.thread, thread, s.size_class}];
      ++tally.count;
      tally.bytes += s.size;
      if (s.thread != thread) {
        ++counts_.cross_thread;
        NoteTimeline(tally, e.timestamp_ns);
        NoteLifecycle(tally, s, thread, e.timestamp_ns);
      }
      return;
    }
    // An address freed again without a new allocation is a double free,
    // unless recording was closed in between (it was allocated again
    // then). One never allocated in the trace is of unknown origin, or, in
    // a window that opened after the trace started, allocated before it.
    bool is_double = s.state == kFreed && !AcrossGap(s);
    s.state = kFreed;  // a second free of it is then a double free
    s.epoch = Epoch();
    if (!is_double && reopened_) {
      ++counts_.before_window;
      return;
    }
    if (!is_double && shared_->fork_child) {
      // The child's copy of a block its parent allocated before the fork.
      ++counts_.forked_frees;
      if (forked_.size() < PairingResult::kMaxForkedFrees) {
        forked_.push_back({e.address, e.stack, thread});
      }
      return;
    }
    CountBytes& cb = (is_double ? double_ : unknown_)[StackThread{e.stack, thread}];
    ++cb.count;
    cb.bytes += e.size;
    ++(is_double ? counts_.double_frees : counts_.unknown_frees);
  }

  // by_class_'s allocations are not counted as they happen, with a map
  // lookup each, but when the allocation's fate is known: an allocation
  // inside the window stays kLive until a free pairs with it (counted from
  // pairs_ in MergeInto), another allocation replaces it (counted here), or
  // the trace ends (counted from live_ in MergeInto). Nothing else ends
  // the state: events after an allocation are not before the window.
  void CountAllocation(const AddressState& live) {
    ++by_class_[ThreadClass{live.thread, live.size_class}].allocs;
  }

  // Whether the last event of a seen address (state not 0) came before a
  // closed stretch of recording, which may have freed or reused it unseen.
  // Asked only on the two paths that need it, not for every event.
  bool AcrossGap(const AddressState& s) const { return s.epoch < Epoch(); }

  // Without --from or --to (windowed_ false) no event is outside: one test
  // per event instead of two compares.
  bool OutsideWindow(const Ev& e) const {
    return windowed_ && (e.timestamp_ns < window_from_ || e.timestamp_ns > window_to_);
  }

  // Before the window an event only sets its address's state; after it,
  // nothing happens (the trace "ends" at the window's end).
  void ProcessOutsideWindow(const Ev& e) {
    if (e.timestamp_ns > window_to_) return;
    AddressState& s = live_.FindOrInsert(e.address);
    s.state = IsAlloc(e) ? kLiveBeforeWindow : kFreed;
    s.epoch = Epoch();
  }

  uint32_t Tick(uint64_t ts) const {
    return shared_->clock.Tick(ts);
  }
  bool Steady(uint32_t tick) const {
    return shared_->clock.Steady(tick);
  }

  // The lifecycle signals of a cross-thread object (PairCounts), at its free.
  void NoteLifecycle(PairTally& tally, const AddressState& s, StreamIndex freeing, uint64_t ts) {
    if (exited_[s.thread.value] || uint64_t{s.alloc_tick} + 1 < shared_->clock.first_tick[freeing.value]) {
      ++tally.thread_bounded;
    } else if (!Steady(s.alloc_tick) && !Steady(Tick(ts))) {
      ++tally.edge_bounded;
    }
  }

  void NoteTimeline(PairTally& tally, uint64_t ts) {
    uint64_t since = ts > shared_->origin_ns ? ts - shared_->origin_ns : 0;
    while ((since >> timeline_shift_) >= kTimelineBuckets) {
      ++timeline_shift_;
      for (Timeline& t : timelines_) t.Fold();
    }
    if (tally.timeline == PairTally::kNoTimeline) {
      tally.timeline = static_cast<uint32_t>(timelines_.size());
      timelines_.emplace_back();
    }
    ++timelines_[tally.timeline].buckets[since >> timeline_shift_];
  }

  Shared* shared_;
  int index_;
  // The analysis window (Shared's), read for every event: kept here, next
  // to the worker's other hot fields.
  const uint64_t window_from_;
  const uint64_t window_to_;
  const bool windowed_;  // an analysis window is set (PairingOptions::windowed())
  PairingCounts counts_;
  std::vector<Timeline> timelines_;  // of the cross-thread pairs, PairTally::timeline
  int timeline_shift_ = 20;  // 1 ms buckets to begin with
  AddressMap live_;
  FlatMap<PairKey, PairTally, PairKeyHash> pairs_;
  FlatMap<StackThread, CountBytes, StackThreadHash> live_sites_;
  FlatMap<StackThread, CountBytes, StackThreadHash> window_end_sites_;
  FlatMap<StackThread, CountBytes, StackThreadHash> unknown_;
  FlatMap<StackThread, CountBytes, StackThreadHash> double_;
  FlatMap<ThreadClass, AllocsFrees, ThreadClassHash> by_class_;
  // Recording windows, from the window records merged into the stream.
  bool reopened_ = false;  // a window opened after the trace started
  uint32_t closes_ = 0;
  uint16_t epoch_ = 0;  // closes_, saturated at kMaxEpoch
  bool last_edge_is_close_ = false;
  std::vector<WindowEdge> edges_;  // worker 0 only
  std::vector<uint8_t> exited_;  // [stream index]: its exit record came
  std::vector<uint32_t> entry_stack_;  // [stream index]
  std::vector<ForkedFree> forked_;
  // TieGroup's: the tied events, and the cursors to put back into the heap.
  TieBuffer<Ev> ties_;
  std::vector<Cursor> parked_;
};

}  // namespace

bool PairTrace(ProcessTrace& trace, const PairingOptions& options, PairingResult* result,
               std::string* error) {
  int jobs = options.jobs;
  if (jobs <= 0) jobs = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  Shared shared;
  shared.trace = &trace;
  shared.jobs = jobs;
  shared.max_buffered = options.max_buffered_events;
  shared.released = std::make_unique<std::atomic<uint64_t>[]>(jobs);
  shared.done = std::make_unique<std::atomic<bool>[]>(jobs);
  for (int w = 0; w < jobs; ++w) {
    shared.released[w].store(0);
    shared.done[w].store(false);
  }
  shared.starts_closed = (trace.header.fields.flags & format::kHeaderFlagWindowed) != 0;
  shared.fork_child = (trace.header.fields.flags & format::kHeaderFlagForkChild) != 0;
  result->starts_closed = shared.starts_closed;
  shared.origin_ns = ~uint64_t{0};
  for (const ThreadStream& stream : trace.streams) {
    for (const format::Chunk& c : stream.chunks) {
      shared.origin_ns = std::min(shared.origin_ns, c.base_timestamp_ns);
    }
  }
  if (shared.origin_ns == ~uint64_t{0}) shared.origin_ns = 0;
  result->timeline_origin_ns = shared.origin_ns;
  shared.clock = MakeLifecycleClock(trace, shared.origin_ns);
  result->steady_from_ns = shared.clock.TimeOf(shared.clock.steady_from_tick);
  result->steady_to_ns = shared.clock.TimeOf(shared.clock.steady_to_tick);
  result->counts.duration_ticks = shared.clock.end_tick;
  result->counts.steady_ticks =
      std::min(shared.clock.steady_to_tick, shared.clock.end_tick) -
      std::min(shared.clock.steady_from_tick, shared.clock.end_tick);
  if (options.windowed()) {
    uint64_t start = trace.header.fields.start_monotonic_ns ? trace.header.fields.start_monotonic_ns
                                                            : shared.origin_ns;
    shared.window_from = start + options.window_from_ns;
    shared.window_to = options.window_to_ns == ~uint64_t{0} ? ~uint64_t{0}
                                                            : start + options.window_to_ns;
  }
  result->timeline_shift = 20;
  shared.slots.resize(trace.streams.size());
  for (size_t s = 0; s < trace.streams.size(); ++s) {
    for (size_t i = 0; i < trace.streams[s].chunks.size(); ++i) {
      shared.slots[s].push_back(std::make_unique<Slot>());
    }
  }

  std::vector<std::unique_ptr<Worker>> workers;
  for (int w = 0; w < jobs; ++w) workers.push_back(std::make_unique<Worker>(&shared, w));
  std::vector<std::thread> threads_run;
  for (int w = 1; w < jobs; ++w) threads_run.emplace_back([&workers, w] { workers[w]->Run(); });
  workers[0]->Run();
  for (auto& t : threads_run) t.join();
  if (shared.failed.load()) {
    *error = shared.error;
    return false;
  }
  for (auto& w : workers) w->MergeInto(result);
  FinishMetadata(trace);
  return true;
}

}  // namespace crossfree::analyzer
