// SPDX-License-Identifier: Apache-2.0
// Simulate: the table of the allocator models `--allocator` names (report
// and simulate). One row per allocator: its name, the factory that builds
// its model from ModelSettings, the settings flags it takes, and whether
// simulate's default view of it is the transfer simulation (simulate.h).
// Every other file asks this table: the CLI validates --allocator against
// Allocators() and refuses a flag the chosen row does not take
// (RefusedFlag); the simulation builds models through MakeAllocatorModel.
// No other file compares allocator names.
//
// The table is constant: any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/simulate/allocator_model.h"

namespace crossfree::analyzer::simulate {

// The settings flags of report and simulate that only some models take,
// each a field of ModelSettings (or SimulateOptions::pairs).
enum class ModelFlag : uint8_t {
  kCacheFromFirstEvent,       // ModelSettings::cache_from_first_event
  kPairs,                     // SimulateOptions::pairs: the cost view instead of transfers
  kTransferNumObjects,        // ModelSettings::transfer_num_objects
  kMaxTotalThreadCacheBytes,  // ModelSettings::max_total_thread_cache_bytes
  kMallocConf,                // ModelSettings::malloc_conf
  kGlibcTunables,             // ModelSettings::glibc_tunables
  kCpus,                      // ModelSettings::cpus
};
// The flag as the command line spells it: "--malloc-conf".
const char* ModelFlagName(ModelFlag flag);

struct AllocatorEntry {
  using Factory = std::unique_ptr<AllocatorModel> (*)(const ModelSettings& settings,
                                                       unsigned cpus, CostSink* sink,
                                                       std::string* error);
  const char* name;  // what --allocator takes: "jemalloc"
  Factory make;      // cpus: ModelSettings::cpus, or this machine's when 0
  std::vector<ModelFlag> flags;  // the flags it takes
  // simulate's default view: the gperftools transfer simulation (replay.h);
  // false: the cost replay (cost_replay.h).
  bool simulates_transfers = false;

  bool Takes(ModelFlag flag) const;
};

// The allocators --allocator names, in the order its help lists them; the
// first is the default.
const std::vector<AllocatorEntry>& Allocators();
const AllocatorEntry& DefaultAllocator();
// Their names ("gperftools", "jemalloc", ...), for the CLI's check.
std::vector<std::string> AllocatorNames();
// The row of that name, or null.
const AllocatorEntry* FindAllocator(std::string_view name);
// "none": the model that costs nothing, for the lifetimes and CPUs of
// report --lifetimes alone. Not in Allocators().
const AllocatorEntry& NoAllocator();

// Builds the allocator's model. Null with *error naming the bad setting.
std::unique_ptr<AllocatorModel> MakeAllocatorModel(const AllocatorEntry& allocator,
                                                   const ModelSettings& settings,
                                                   CostSink* sink, std::string* error);

// The first flag of `given` (in the caller's order) that `allocator` does
// not take, none when it takes them all; allocator null: none was chosen,
// so every flag is refused.
std::optional<ModelFlag> RefusedFlag(const AllocatorEntry* allocator,
                                     const std::vector<ModelFlag>& given);
// The one allocator that takes `flag` ("jemalloc" for --malloc-conf), or
// null when several do.
const AllocatorEntry* OnlyAllocatorTaking(ModelFlag flag);

}  // namespace crossfree::analyzer::simulate
