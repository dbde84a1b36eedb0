// SPDX-License-Identifier: Apache-2.0
// Simulate: a cost model of jemalloc 5.3.0's thread caches and arena bins
// (Debian's libjemalloc2), see jemalloc_model.cc and docs/guide/simulate.md.
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "analyzer/simulate/allocator_model.h"

namespace crossfree::analyzer::simulate {

// The settings of the model, named as MALLOC_CONF names them; defaults are
// jemalloc 5.3.0's.
struct JemallocConfig {
  unsigned narenas = 0;  // 0: 4 x cpus
  bool tcache = true;
  uint64_t tcache_max = 32768;
  unsigned tcache_nslots_small_min = 20;
  unsigned tcache_nslots_small_max = 200;
  unsigned tcache_nslots_large = 20;
  int lg_tcache_nslots_mul = 1;
  uint64_t tcache_gc_incr_bytes = 65536;
  uint64_t tcache_gc_delay_bytes = 0;
  unsigned lg_tcache_flush_small_div = 1;
  unsigned lg_tcache_flush_large_div = 1;
  std::string ignored;  // MALLOC_CONF keys that do not change the model
};

// Parses MALLOC_CONF syntax ("key:value,key:value") over *config. False
// with *error naming the bad pair.
bool ParseMallocConf(const std::string& conf, JemallocConfig* config, std::string* error);

// jemalloc's size class index of a request (0-35 small bins, then large
// classes four per doubling); its usable size.
int JemallocSizeIndex(uint64_t size);
uint64_t JemallocIndexSize(int index);
inline constexpr int kJemallocSmallBins = 36;

// cache_from_first_event: a thread gets its tcache and arena at its first
// operation of any kind, as in a run where something untraced allocates on
// every thread (recorded under attach, where the tracer's own allocations
// reach the program's allocator); otherwise at its first
// allocation, as jemalloc does (a thread that only frees keeps a minimal
// state with no tcache: each free goes to the owning arena's bin under
// its lock).
std::unique_ptr<AllocatorModel> MakeJemallocModel(const JemallocConfig& config, unsigned cpus,
                                                  bool cache_from_first_event, CostSink* sink);

}  // namespace crossfree::analyzer::simulate
