// SPDX-License-Identifier: Apache-2.0
// Simulate: replays traces through the gperftools 2.10 thread-cache model
// (tcmalloc_model.h) and predicts the central free-list transfers per
// thread (or role) and per call site.
//
// Replay: per trace (process), the events of all threads are merged in
// timestamp order, frees before allocations on equal timestamps (the
// ordering rule, docs/design.md) and ties across threads by address state
// ("Ties", replay_driver.h), each thread's chunks decoded one at a time.
// A thread's first allocation creates its cache; a thread-exit record
// destroys it. A fetch is charged to the allocation whose cache miss caused
// it; a release to the free that overflowed the list or the cache (thread
// exit releases have no site). Sites are symbolized like the analyzer's
// report (SiteBuilder), only for the sites shown.
//
// Used from one thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/lifetime.h"
#include "analyzer/model/pair_costs.h"
#include "analyzer/model/roles.h"
#include "analyzer/model/sites.h"
#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/allocators.h"
#include "analyzer/simulate/cost_replay.h"
#include "analyzer/simulate/tcmalloc_model.h"
#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer::simulate {

struct SimulateOptions {
  analyzer::GroupBy by = analyzer::GroupBy::kRole;
  analyzer::SiteOptions sites;
  size_t top = 10;  // sites kept per kind (0 = all)
  // The allocator model (allocators.h). One whose row simulates transfers
  // (gperftools), without `pairs`, is the transfer simulation above
  // (SimulationResult without `cost`); any other, or `pairs`, is the cost
  // replay (SimulationResult::cost).
  const AllocatorEntry* allocator = &DefaultAllocator();
  bool pairs = false;
  // The model's settings, held here only (gperftools' for both views), with
  // cache_from_first_event: give every thread a
  // cache at its first traced event, not at its first allocation. That
  // models runs where something untraced allocates on every thread, so
  // threads that only free still have a cache: a run recorded under attach
  // (`record -p`), where the tracer's own allocations go to the program's
  // allocator, or by an older crossfree that sent them there too. A run
  // recorded from its start takes the default: the tracer's own allocations
  // never reach the program's allocator (tracer/own_allocation.h).
  ModelSettings model;
  // Where the settings came from, as printed: the trace does not record the
  // run's environment, so "flags" (or "defaults").
  std::string settings_source = "defaults";
};

// What happened in one group (or one size class of it, or in total).
struct TransferCounts {
  uint64_t allocations = 0;       // every traced allocation (realloc moves count)
  uint64_t frees = 0;             // every traced free of a known block
  uint64_t large_allocations = 0; // > kMaxSize: page heap, no thread cache
  uint64_t fetch_calls = 0;       // ThreadCache::FetchFromCentralCache
  uint64_t fetched_objects = 0;
  uint64_t short_fetches = 0;     // fetches the central list could not fill
  uint64_t release_calls = 0;     // ThreadCache::ReleaseToCentralCache
  uint64_t released_objects = 0;
  std::array<uint64_t, kReleaseCauseCount> release_calls_by_cause{};
  // Frees on a thread that has no cache (it never allocated): tcmalloc puts
  // the object straight into the central list (InsertRange), no release call.
  uint64_t direct_central_frees = 0;

  void Add(const TransferCounts& o);
  bool operator==(const TransferCounts&) const = default;
};

struct GroupResult {
  std::string name;     // role, or "name (tid)"
  size_t threads = 0;   // threads (of all traces) in the group
  TransferCounts counts;
  std::map<int, TransferCounts> by_class;  // gperftools class -> counts (transfers only)
};

struct SiteTransfers {
  std::string group;
  analyzer::Site site;        // "(thread exit)" for releases at thread exit
  uint64_t calls = 0;
  uint64_t objects = 0;
};

struct SimTraceInfo {
  std::string path;
  uint32_t pid = 0;
  size_t threads = 0;
  uint64_t events = 0;
  bool truncated = false;
};

// The cost replay's figures (cost_replay.h), computed here for every
// renderer.
struct CostPairResult {
  std::string key;  // analyzer::PairKeyText, as report's pairs
  std::string alloc_group;
  std::string free_group;
  analyzer::Site alloc_site;
  analyzer::Site free_site;
  bool cross_thread = false;
  uint64_t objects = 0;
  uint64_t bytes = 0;
  CostCounts cost;
  analyzer::LifetimeSummary lifetime;
  analyzer::CpuFigures cpu;
};
struct CostGroupResult {
  std::string name;
  size_t threads = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  CostCounts cost;
  CostCounts thread_exit;
};
struct CostClassResult {
  int cl = 0;
  uint64_t bytes = 0;  // the class's size in the model
  CostCounts cost;
};
struct CostSimulation {
  std::string allocator;            // "jemalloc-5.3.0"
  std::vector<Setting> settings;
  std::string settings_source;      // SimulateOptions::settings_source
  Validation validation;
  CostCounts totals;
  CostCounts cross_thread;          // of totals, charged to cross-thread pairs
  CostCounts thread_exit;           // of totals, at thread exits (no pair)
  CostCounts live_at_end;           // of totals, refills of objects never freed
  uint64_t pair_count = 0;          // symbolic pairs (before --top)
  std::vector<CostGroupResult> groups;   // by cost total desc, then name
  // The groups' threads, allocations and frees together (the total row).
  size_t threads = 0;
  uint64_t allocations = 0;
  uint64_t frees = 0;
  std::vector<CostClassResult> classes;  // by class
  // Every pair that has a cost or crosses threads, by cost total desc,
  // then objects desc, then key; at most options.top (all when 0).
  std::vector<CostPairResult> pairs;
  // Every cross-thread pair by key (not cut by --top), for report's column.
  std::map<std::string, CostPairResult> cross_pairs;
  bool cpus_known = false;          // some pair has a free with a known CPU
};

struct SimulationResult {
  std::vector<SimTraceInfo> traces;
  TransferCounts totals;
  uint64_t unknown_frees = 0;     // frees of addresses never seen allocated (skipped)
  uint64_t inplace_reallocs = 0;  // reallocs that kept their block (no cache work)
  std::vector<GroupResult> groups;            // by fetch+release calls desc, then name
  size_t threads = 0;                         // the groups' threads together
  // The size of each gperftools class some group's by_class holds (0 for
  // a class past the size map: large allocations).
  std::map<int, uint64_t> class_bytes;
  std::vector<SiteTransfers> fetch_sites;     // by calls desc, at most options.top
  std::vector<SiteTransfers> release_sites;
  std::vector<std::string> warnings;
  std::optional<CostSimulation> cost;  // the cost replay (SimulateOptions::allocator)
};

// Simulates opened traces (each one an independent process). resolver may
// be null (analyzer::MakeDefaultResolver). False with *error on a decoding
// error or a bad --skip pattern.
bool Simulate(analyzer::TraceSet& set, const SimulateOptions& options,
              analyzer::SymbolResolver* resolver, SimulationResult* out, std::string* error);

// Opens the files, then Simulate(). Errors name the file.
bool SimulateFiles(const std::vector<std::string>& paths, const SimulateOptions& options,
                   SimulationResult* out, std::string* error);

}  // namespace crossfree::analyzer::simulate
