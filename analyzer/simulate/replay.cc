// SPDX-License-Identifier: Apache-2.0
// Simulate: the replay of one trace (see replay.h).
#include "analyzer/simulate/replay.h"

#include <algorithm>
#include <memory>

#include "analyzer/simulate/replay_driver.h"
#include "analyzer/simulate/sim_events.h"
#include "analyzer/simulate/tcmalloc_model.h"

namespace crossfree::analyzer::simulate {

using analyzer::ProcessTrace;

namespace {

// A thread's replay: its model heap, and where what it did is counted (the
// result's entry for it).
struct StreamState {
  int heap = -1;
  ThreadTransfers* out = nullptr;
};

struct Block {
  uint64_t bytes = 0;   // class size, or whole pages for a large block
  int cl = 0;           // 0: large
  uint32_t object = 0;  // the model's object (its span)
};


// Replays one process.
class Replayer : public TransferSink {
 public:
  Replayer(ProcessTrace* trace, const SimulateOptions& options, ReplayResult* out)
      : out_(out),
        driver_(trace),
        model_(options.model.gperftools, this),
        streams_(trace->streams.size()),
        cache_from_first_event_(options.model.cache_from_first_event) {
    out->threads.assign(streams_.size(), ThreadTransfers());
    out->entry_stack.assign(streams_.size(), format::kNoStack);
    for (size_t s = 0; s < streams_.size(); ++s) streams_[s].out = &out->threads[s];
  }

  bool Run(std::string* error) {
    bool ok = driver_.Run([this](uint32_t s, const SimEvent& e) { Process(s, e); },
                          [this](uint64_t address) { return live_.contains(address); }, error);
    out_->events = driver_.events();
    return ok;
  }

  void OnFetch(int, int cl, int objects, int wanted) override {
    StreamState& st = streams_[current_];
    for (TransferCounts* c : {&st.out->counts, &st.out->by_class[cl]}) {
      c->fetch_calls += 1;
      c->fetched_objects += objects;
      if (objects < wanted) c->short_fetches += 1;
    }
    CallsObjects& site = out_->fetch_sites[{static_cast<uint32_t>(current_), current_stack_}];
    site.calls += 1;
    site.objects += objects;
  }
  void OnRelease(int, int cl, int objects, ReleaseCause cause) override {
    StreamState& st = streams_[current_];
    for (TransferCounts* c : {&st.out->counts, &st.out->by_class[cl]}) {
      c->release_calls += 1;
      c->released_objects += objects;
      c->release_calls_by_cause[static_cast<int>(cause)] += 1;
    }
    uint32_t stack = cause == ReleaseCause::kThreadExit ? kExitStack : current_stack_;
    CallsObjects& site = out_->release_sites[{static_cast<uint32_t>(current_), stack}];
    site.calls += 1;
    site.objects += objects;
  }


 private:
  void Process(size_t s, const SimEvent& e) {
    if (out_->entry_stack[s] == format::kNoStack && e.kind != kSimExit) {
      out_->entry_stack[s] = e.stack;
    }
    current_ = s;
    current_stack_ = e.stack;
    if (cache_from_first_event_ && streams_[s].heap < 0 && e.kind != kSimExit) {
      streams_[s].heap = model_.CreateHeap();
    }
    switch (e.kind) {
      case kSimAlloc:
        Allocate(s, e.address, RequestSize(e), e.stack);
        break;
      case kSimFree:
        Free(s, e.address);
        break;
      case kSimRealloc:
        Realloc(s, e);
        break;
      case kSimExit:
        if (streams_[s].heap >= 0) model_.DeleteHeap(streams_[s].heap);
        streams_[s].heap = -1;
        break;
    }
  }

  // tcmalloc.cc: valloc and pvalloc are memalign at the system page size
  // (4 KiB, within kPageSize), i.e. malloc of the size rounded up to it;
  // pvalloc(0) asks for one page. Other aligned calls do not record their
  // alignment: their size is taken as is (docs/guide/simulate.md).
  static uint64_t RequestSize(const SimEvent& e) {
    auto fn = static_cast<format::AllocFn>(e.fn);
    constexpr uint64_t kSystemPage = 4096;
    if (fn == format::AllocFn::kValloc || fn == format::AllocFn::kPvalloc) {
      uint64_t size = e.size == 0 && fn == format::AllocFn::kPvalloc ? kSystemPage : e.size;
      return (size + kSystemPage - 1) / kSystemPage * kSystemPage;
    }
    return e.size;
  }

  void Allocate(size_t s, uint64_t address, uint64_t size, uint32_t) {
    StreamState& st = streams_[s];
    st.out->counts.allocations += 1;
    if (address == 0) return;
    int cl = model_.size_map().SizeClass(size);
    if (cl == 0) {
      st.out->counts.large_allocations += 1;
      uint64_t pages = (size + kPageSize - 1) >> kPageShift;
      live_[address] = Block{std::max<uint64_t>(pages, 1) << kPageShift, 0, 0};
      return;
    }
    if (st.heap < 0) st.heap = model_.CreateHeap();
    st.out->by_class[cl].allocations += 1;
    uint32_t object = model_.Allocate(st.heap, cl);
    live_[address] = Block{model_.size_map().ClassSize(cl), cl, object};
  }

  void Free(size_t s, uint64_t address) {
    if (address == 0) return;
    auto it = live_.find(address);
    if (it == live_.end()) {
      ++out_->unknown_frees;
      return;
    }
    Block block = it->second;
    live_.erase(it);
    FreeBlock(s, block);
  }

  void FreeBlock(size_t s, const Block& block) {
    StreamState& st = streams_[s];
    st.out->counts.frees += 1;
    if (block.cl == 0) return;  // page heap
    st.out->by_class[block.cl].frees += 1;
    if (st.heap < 0) {
      st.out->counts.direct_central_frees += 1;
      st.out->by_class[block.cl].direct_central_frees += 1;
      model_.DeallocateToCentral(block.cl, block.object);
      return;
    }
    model_.Deallocate(st.heap, block.cl, block.object);
  }

  // tcmalloc.cc do_realloc_with_callback: a block that grows moves to a
  // new block of at least 1.25x the old size; one that shrinks below half
  // moves; otherwise it stays. The trace says whether it moved.
  void Realloc(size_t s, const SimEvent& e) {
    ReplayRealloc(
        live_, e, &out_->inplace_reallocs, &out_->unknown_frees,
        [&](const Block* old) {
          uint64_t size = e.size;
          uint64_t lower_bound_to_grow = old ? old->bytes + old->bytes / 4 : 0;
          if (old && size > old->bytes && size < lower_bound_to_grow) size = lower_bound_to_grow;
          Allocate(s, e.address, size, e.stack);
        },
        [&](const Block& old) { FreeBlock(s, old); });
  }

  ReplayResult* out_;  // what is counted, filled as the replay goes
  ReplayDriver driver_;
  TcmallocModel model_;
  std::vector<StreamState> streams_;
  std::unordered_map<uint64_t, Block> live_;
  size_t current_ = 0;
  uint32_t current_stack_ = 0;
  bool cache_from_first_event_ = false;
};

}  // namespace

bool ReplayTrace(ProcessTrace& trace, const SimulateOptions& options, ReplayResult* out,
                 std::string* error) {
  *out = ReplayResult();
  return std::make_unique<Replayer>(&trace, options, out)->Run(error);
}

}  // namespace crossfree::analyzer::simulate
