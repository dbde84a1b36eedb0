// SPDX-License-Identifier: Apache-2.0
// Simulate: a cost model of glibc 2.36's malloc (tcache, fastbins, arena
// locks), see glibc_model.cc and docs/guide/simulate.md.
//
// Not thread-safe: one model per simulated process, driven by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "analyzer/simulate/allocator_model.h"

namespace crossfree::analyzer::simulate {

// GLIBC_TUNABLES glibc.malloc.*; defaults are glibc 2.36's on x86-64.
struct GlibcConfig {
  uint64_t tcache_count = 7;
  uint64_t tcache_max = 1032;  // bytes of a request
  uint64_t mxfast = 128;       // 64 * sizeof(size_t) / 4
  uint64_t arena_max = 0;      // 0: 8 x cpus
  std::string ignored;         // tunables that do not change the model
};

// Parses GLIBC_TUNABLES syntax ("name=value:name=value") over *config;
// values out of glibc's range are ignored, as glibc does. False with
// *error naming the bad pair.
bool ParseGlibcTunables(const std::string& tunables, GlibcConfig* config, std::string* error);

// cache_from_first_event: a thread gets its arena and tcache at its first
// operation of any kind, as in a run where something untraced allocates on
// every thread (recorded under attach, where the tracer's own allocations
// reach the program's allocator); otherwise at its first
// malloc or free of a chunk that is not mmapped, as glibc does.
std::unique_ptr<AllocatorModel> MakeGlibcModel(const GlibcConfig& config, unsigned cpus,
                                               bool cache_from_first_event, CostSink* sink);

}  // namespace crossfree::analyzer::simulate
