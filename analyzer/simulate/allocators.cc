// SPDX-License-Identifier: Apache-2.0
// Simulate: the allocator table (see allocators.h).
#include "analyzer/simulate/allocators.h"

#include <unistd.h>

#include <algorithm>

#include "analyzer/simulate/glibc_model.h"
#include "analyzer/simulate/gperftools_model.h"
#include "analyzer/simulate/jemalloc_model.h"
#include "analyzer/simulate/mimalloc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

// "none": no allocator, no cost; what the cost replay needs for lifetimes
// and CPUs alone (report --lifetimes).
class NullModel : public AllocatorModel {
 public:
  std::string Allocator() const override { return "none"; }
  std::vector<Setting> Settings() const override { return {}; }
  Validation validation() const override { return {false, false, "no allocator model"}; }
  int SizeClass(uint64_t) const override { return 0; }
  uint64_t ClassSize(int) const override { return 0; }
  void ThreadStart(int, bool) override {}
  uint64_t Allocate(int thread, int, uint64_t) override { return static_cast<uint64_t>(thread); }
  void Free(int, int, uint64_t) override {}
  void ThreadExit(int) override {}
  bool IsRemote(int thread, uint64_t object) const override {
    return object != static_cast<uint64_t>(thread);
  }
};

std::unique_ptr<AllocatorModel> MakeGperftools(const ModelSettings& s, unsigned, CostSink* sink,
                                               std::string*) {
  return MakeGperftoolsModel(s.gperftools, s.cache_from_first_event, sink);
}

std::unique_ptr<AllocatorModel> MakeJemalloc(const ModelSettings& s, unsigned cpus,
                                             CostSink* sink, std::string* error) {
  JemallocConfig c;
  if (!ParseMallocConf(s.malloc_conf, &c, error)) return nullptr;
  return MakeJemallocModel(c, cpus, s.cache_from_first_event, sink);
}

std::unique_ptr<AllocatorModel> MakeGlibc(const ModelSettings& s, unsigned cpus, CostSink* sink,
                                          std::string* error) {
  GlibcConfig c;
  if (!ParseGlibcTunables(s.glibc_tunables, &c, error)) return nullptr;
  return MakeGlibcModel(c, cpus, s.cache_from_first_event, sink);
}

std::unique_ptr<AllocatorModel> MakeMimalloc(const ModelSettings&, unsigned, CostSink* sink,
                                             std::string*) {
  return MakeMimallocModel(sink);
}

std::unique_ptr<AllocatorModel> MakeNone(const ModelSettings&, unsigned, CostSink*,
                                         std::string*) {
  return std::make_unique<NullModel>();
}

}  // namespace

const char* ModelFlagName(ModelFlag flag) {
  switch (flag) {
    case ModelFlag::kCacheFromFirstEvent: return "--cache-from-first-event";
    case ModelFlag::kPairs: return "--pairs";
    case ModelFlag::kTransferNumObjects: return "--transfer-num-objects";
    case ModelFlag::kMaxTotalThreadCacheBytes: return "--max-total-thread-cache-bytes";
    case ModelFlag::kMallocConf: return "--malloc-conf";
    case ModelFlag::kGlibcTunables: return "--glibc-tunables";
    case ModelFlag::kCpus: return "--cpus";
  }
  return "?";
}

bool AllocatorEntry::Takes(ModelFlag flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const std::vector<AllocatorEntry>& Allocators() {
  using F = ModelFlag;
  // --cpus is taken by every model, as the commands always did; only
  // jemalloc's (narenas) and glibc's (arena_max) use it.
  static const std::vector<AllocatorEntry> table = {
      {"gperftools", MakeGperftools,
       {F::kCacheFromFirstEvent, F::kPairs, F::kTransferNumObjects, F::kMaxTotalThreadCacheBytes,
        F::kCpus},
       true},
      {"jemalloc", MakeJemalloc, {F::kCacheFromFirstEvent, F::kMallocConf, F::kCpus}, false},
      {"glibc", MakeGlibc, {F::kCacheFromFirstEvent, F::kGlibcTunables, F::kCpus}, false},
      {"mimalloc", MakeMimalloc, {F::kCpus}, false},
  };
  return table;
}

const AllocatorEntry& DefaultAllocator() { return Allocators().front(); }

std::vector<std::string> AllocatorNames() {
  std::vector<std::string> names;
  for (const AllocatorEntry& a : Allocators()) names.push_back(a.name);
  return names;
}

const AllocatorEntry* FindAllocator(std::string_view name) {
  for (const AllocatorEntry& a : Allocators()) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

const AllocatorEntry& NoAllocator() {
  static const AllocatorEntry none = {"none", MakeNone, {}, false};
  return none;
}

std::unique_ptr<AllocatorModel> MakeAllocatorModel(const AllocatorEntry& allocator,
                                                   const ModelSettings& settings,
                                                   CostSink* sink, std::string* error) {
  unsigned cpus = settings.cpus;
  if (cpus == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = n > 0 ? static_cast<unsigned>(n) : 1;
  }
  return allocator.make(settings, cpus, sink, error);
}

std::optional<ModelFlag> RefusedFlag(const AllocatorEntry* allocator,
                                     const std::vector<ModelFlag>& given) {
  for (ModelFlag f : given) {
    if (!allocator || !allocator->Takes(f)) return f;
  }
  return std::nullopt;
}

const AllocatorEntry* OnlyAllocatorTaking(ModelFlag flag) {
  const AllocatorEntry* only = nullptr;
  for (const AllocatorEntry& a : Allocators()) {
    if (!a.Takes(flag)) continue;
    if (only) return nullptr;
    only = &a;
  }
  return only;
}

}  // namespace crossfree::analyzer::simulate
