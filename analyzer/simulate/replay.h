// SPDX-License-Identifier: Apache-2.0
// Simulate: replays one process's trace through the thread-cache model, in
// the event stream's order (analyzer/pairing/event_stream.h), and counts per thread
// what the model's caches did, and at which allocation or free site each
// central free-list transfer happened. Nothing is symbolized here.
//
// One thread per replay; replays of different traces are independent.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyzer/pairing/trace_set.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::simulate {

// The stack id of transfers that a thread's exit caused (its cache emptied).
inline constexpr uint32_t kExitStack = std::numeric_limits<uint32_t>::max();

// Where transfers happened: a thread (stream index) and a stack id.
struct SiteKey {
  uint32_t stream;
  uint32_t stack;
  bool operator==(const SiteKey&) const = default;
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const {
    return std::hash<uint64_t>()(uint64_t{k.stream} << 32 | k.stack);
  }
};
struct CallsObjects {
  uint64_t calls = 0;
  uint64_t objects = 0;
};
using SiteMap = std::unordered_map<SiteKey, CallsObjects, SiteKeyHash>;

// What one thread's cache did, in all and per size class.
struct ThreadTransfers {
  TransferCounts counts;
  std::map<int, TransferCounts> by_class;
};

struct ReplayResult {
  std::vector<ThreadTransfers> threads;  // by stream index
  SiteMap fetch_sites;
  SiteMap release_sites;
  uint64_t events = 0;
  uint64_t unknown_frees = 0;
  uint64_t inplace_reallocs = 0;
  std::vector<uint32_t> entry_stack;  // [stream]: the thread's first stack (roles.h)
};

// Replays every event of trace (publishing its metadata if no pass has).
// False with *error naming the file and offset on a malformed chunk.
bool ReplayTrace(analyzer::ProcessTrace& trace, const SimulateOptions& options,
                 ReplayResult* out, std::string* error);

}  // namespace crossfree::analyzer::simulate
