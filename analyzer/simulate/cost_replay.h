// SPDX-License-Identifier: Apache-2.0
// Simulate: replays one process's trace through an allocator cost model
// (allocator_model.h), in the event stream's order like replay.h, and
// charges every event that costs to the thread, size class and pair of the
// operation that caused it. Also measures each pair's object lifetimes
// (allocation to free) and whether its frees ran on the allocation's CPU.
// Nothing is symbolized here.
//
// Charging: a refill (and its locks) is caused by an allocation, so it is
// kept with the object and charged to the object's pair when it is freed
// (to live_at_end when it never is); a flush, lock or remote free caused by
// a free is charged to that free's pair; what a thread's exit causes is
// charged to the thread only (thread_exit). So per stream, the totals equal
// the sum over pairs plus live_at_end plus thread_exit.
//
// One thread per replay; replays of different traces are independent.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/model/lifetime.h"
#include "analyzer/pairing/trace_set.h"
#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/allocators.h"

namespace crossfree::analyzer::simulate {

struct RawPairKey {
  uint32_t alloc_stream = 0;
  uint32_t free_stream = 0;
  uint32_t alloc_stack = 0;
  uint32_t free_stack = 0;
  bool operator==(const RawPairKey&) const = default;
};
struct RawPairKeyHash {
  size_t operator()(const RawPairKey& k) const {
    uint64_t a = (uint64_t{k.alloc_stack} << 32 | k.free_stack) * 0x9e3779b97f4a7c15ULL;
    uint64_t b = (uint64_t{k.alloc_stream} << 32 | k.free_stream) * 0xc2b2ae3d27d4eb4fULL;
    return static_cast<size_t>(a ^ (b + (a >> 29)));
  }
};

// Frees of a pair by where they ran compared with the allocation.
struct CpuCounts {
  uint64_t same = 0;
  uint64_t other = 0;
  uint64_t unknown = 0;  // either event has no CPU (kUnknownCpu)
  void Add(const CpuCounts& o) {
    same += o.same;
    other += o.other;
    unknown += o.unknown;
  }
};

struct PairCost {
  uint64_t objects = 0;
  uint64_t bytes = 0;  // requested
  CostCounts cost;
  analyzer::Lifetime lifetime;
  CpuCounts cpu;
  void Add(const PairCost& o) {
    objects += o.objects;
    bytes += o.bytes;
    cost.Add(o.cost);
    lifetime.Merge(o.lifetime);
    cpu.Add(o.cpu);
  }
};

struct StreamCost {
  uint64_t allocations = 0;
  uint64_t frees = 0;
  CostCounts cost;                    // everything this thread caused
  CostCounts thread_exit;             // of which at its exit
  std::map<int, CostCounts> by_class;
};

struct CostReplayResult {
  std::vector<StreamCost> streams;  // by stream index
  std::unordered_map<RawPairKey, PairCost, RawPairKeyHash> pairs;
  CostCounts live_at_end;  // refills of objects never freed
  uint64_t events = 0;
  uint64_t unknown_frees = 0;
  uint64_t inplace_reallocs = 0;
  std::vector<uint32_t> entry_stack;  // [stream]: the thread's first stack (roles.h)
  // The model's name, settings and validation, as it printed them.
  std::string allocator;
  std::vector<Setting> settings;
  Validation validation;
};

// Replays every event of trace through a fresh model of `allocator`
// (MakeAllocatorModel, allocators.h), publishing the trace's metadata if no pass has.
// False with *error on a bad setting or a malformed chunk.
bool ReplayCosts(analyzer::ProcessTrace& trace, const AllocatorEntry& allocator,
                 const ModelSettings& settings, CostReplayResult* out, std::string* error);

}  // namespace crossfree::analyzer::simulate
