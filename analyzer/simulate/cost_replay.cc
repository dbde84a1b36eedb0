// SPDX-License-Identifier: Apache-2.0
// Simulate: the cost replay of one trace (see cost_replay.h).
#include "analyzer/simulate/cost_replay.h"

#include <memory>

#include "analyzer/simulate/id_pool.h"
#include "analyzer/simulate/replay_driver.h"
#include "analyzer/simulate/sim_events.h"

namespace crossfree::analyzer::simulate {

using analyzer::ProcessTrace;

namespace {

// A live block: what its free needs to know.
struct Block {
  uint64_t object = 0;  // the model's handle
  uint64_t usable = 0;  // the class's size (realloc hysteresis)
  uint64_t size = 0;    // requested
  uint64_t ts = 0;
  uint32_t stream = 0;
  uint32_t stack = 0;
  uint32_t cpu = format::kUnknownCpu;
  uint32_t cost = 0;  // index into the pool of allocation-side costs, 0: none
  int cl = 0;
};

class Replayer : public CostSink {
 public:
  Replayer(ProcessTrace* trace, CostReplayResult* out)
      : trace_(trace), out_(out), driver_(trace), started_(trace->streams.size(), false) {
    out->streams.assign(started_.size(), StreamCost());
    out->entry_stack.assign(started_.size(), format::kNoStack);
    pool_.Acquire();  // id 0: no cost
  }

  bool Init(const AllocatorEntry& allocator, const ModelSettings& settings, std::string* error) {
    model_ = MakeAllocatorModel(allocator, settings, this, error);
    if (!model_) return false;
    out_->allocator = model_->Allocator();
    out_->settings = model_->Settings();
    out_->validation = model_->validation();
    return true;
  }

  bool Run(std::string* error) {
    bool ok = driver_.Run([this](uint32_t s, const SimEvent& e) { Process(s, e); },
                          [this](uint64_t address) { return live_.contains(address); }, error);
    out_->events = driver_.events();
    if (!ok) return false;
    for (auto& [address, b] : live_) {
      if (b.cost) out_->live_at_end.Add(pool_[b.cost]);
    }
    return true;
  }

  void OnCost(CostKind kind, int cl, uint64_t count, uint64_t objects) override {
    CostCounts* targets[2] = {&pending_, &out_->streams[current_].by_class[cl]};
    for (CostCounts* c : targets) {
      c->n[static_cast<int>(kind)] += count;
      if (kind == CostKind::kRefill) c->refilled_objects += objects;
      if (kind == CostKind::kFlush) c->flushed_objects += objects;
    }
  }

 private:
  // The costs the operation just replayed caused, taken.
  CostCounts TakePending() {
    CostCounts c = pending_;
    pending_ = CostCounts();
    out_->streams[current_].cost.Add(c);
    return c;
  }

  void Process(uint32_t s, const SimEvent& e) {
    if (out_->entry_stack[s] == format::kNoStack && e.kind != kSimExit) {
      out_->entry_stack[s] = e.stack;
    }
    current_ = s;
    if (!started_[s] && e.kind != kSimExit) {
      started_[s] = true;
      model_->ThreadStart(static_cast<int>(s), trace_->streams[s].tid == trace_->pid());
      // What a thread's start costs (none of the models charges any) is
      // its own.
      TakePending();
    }
    switch (e.kind) {
      case kSimAlloc:
        Allocate(s, e, e.size);
        break;
      case kSimFree:
        Free(s, e);
        break;
      case kSimRealloc:
        Realloc(s, e);
        break;
      case kSimExit:
        if (started_[s]) {
          model_->ThreadExit(static_cast<int>(s));
          out_->streams[s].thread_exit.Add(TakePending());
        }
        break;
    }
  }

  void Allocate(uint32_t s, const SimEvent& e, uint64_t request) {
    out_->streams[s].allocations += 1;
    if (e.address == 0) return;
    int cl = model_->SizeClass(request);
    Block b;
    auto fn = static_cast<format::AllocFn>(e.fn);
    model_->NextAllocation(e.kind == kSimRealloc ? AllocatorModel::AllocPath::kRealloc
                           : fn == format::AllocFn::kCalloc ? AllocatorModel::AllocPath::kCalloc
                                                            : AllocatorModel::AllocPath::kMalloc);
    b.object = model_->Allocate(static_cast<int>(s), cl, request);
    b.usable = model_->ClassSize(cl);
    b.size = e.size;
    b.ts = e.ts;
    b.stream = s;
    b.stack = e.stack;
    b.cpu = e.cpu;
    b.cl = cl;
    CostCounts c = TakePending();
    if (c.Total() != 0) {
      b.cost = pool_.Acquire();
      pool_[b.cost] = c;
    }
    auto [it, inserted] = live_.try_emplace(e.address, b);
    if (!inserted) {
      // A lost free: the old block's allocation costs stay with no pair.
      if (it->second.cost) {
        out_->live_at_end.Add(pool_[it->second.cost]);
        pool_.Release(it->second.cost);
      }
      it->second = b;
    }
  }

  void Free(uint32_t s, const SimEvent& e) {
    if (e.address == 0) return;
    auto it = live_.find(e.address);
    if (it == live_.end()) {
      ++out_->unknown_frees;
      return;
    }
    Block b = it->second;
    live_.erase(it);
    FreeBlock(s, b, e);
  }

  void FreeBlock(uint32_t s, const Block& b, const SimEvent& e) {
    out_->streams[s].frees += 1;
    model_->Free(static_cast<int>(s), b.cl, b.object);
    CostCounts c = TakePending();
    PairCost& p = out_->pairs[RawPairKey{b.stream, s, b.stack, e.stack}];
    p.objects += 1;
    p.bytes += b.size;
    p.cost.Add(c);
    if (b.cost) {
      p.cost.Add(pool_[b.cost]);
      pool_.Release(b.cost);
    }
    p.lifetime.Add(e.ts >= b.ts ? e.ts - b.ts : 0);
    if (b.cpu == format::kUnknownCpu || e.cpu == format::kUnknownCpu) {
      p.cpu.unknown += 1;
    } else if (b.cpu == e.cpu) {
      p.cpu.same += 1;
    } else {
      p.cpu.other += 1;
    }
  }

  // The model says what a moving realloc asks for (ReallocSize).
  void Realloc(uint32_t s, const SimEvent& e) {
    ReplayRealloc(
        live_, e, &out_->inplace_reallocs, &out_->unknown_frees,
        [&](const Block* old) {
          Allocate(s, e, old ? model_->ReallocSize(old->usable, e.size) : e.size);
        },
        [&](const Block& old) { FreeBlock(s, old, e); });
  }


  ProcessTrace* trace_;
  CostReplayResult* out_;
  ReplayDriver driver_;
  std::vector<bool> started_;  // [stream]: the model saw its ThreadStart
  std::unique_ptr<AllocatorModel> model_;
  std::unordered_map<uint64_t, Block> live_;
  IdPool<CostCounts> pool_;  // allocation-side costs waiting for their object's free
  CostCounts pending_;
  uint32_t current_ = 0;
};

}  // namespace

bool ReplayCosts(ProcessTrace& trace, const AllocatorEntry& allocator,
                 const ModelSettings& settings, CostReplayResult* out, std::string* error) {
  *out = CostReplayResult();
  auto replayer = std::make_unique<Replayer>(&trace, out);
  if (!replayer->Init(allocator, settings, error)) return false;
  return replayer->Run(error);
}

}  // namespace crossfree::analyzer::simulate
