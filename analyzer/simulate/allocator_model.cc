// SPDX-License-Identifier: Apache-2.0
// Simulate: the allocator models by name (see allocator_model.h).
#include "analyzer/simulate/allocator_model.h"

#include <fmt/core.h>
#include <unistd.h>

#include "analyzer/simulate/glibc_model.h"
#include "analyzer/simulate/gperftools_model.h"
#include "analyzer/simulate/jemalloc_model.h"
#include "analyzer/simulate/mimalloc_model.h"

namespace crossfree::analyzer::simulate {
namespace {

// "none": no allocator, no cost; what the cost replay needs for lifetimes
// and CPUs alone (report --lifetimes). Not in AllocatorNames().
class NullModel : public AllocatorModel {
 public:
  std::string Allocator() const override { return "none"; }
  std::vector<Setting> Settings() const override { return {}; }
  Validation validation() const override { return {false, false, "no allocator model"}; }
  int SizeClass(uint64_t) const override { return 0; }
  uint64_t ClassSize(int) const override { return 0; }
  void ThreadStart(int thread, bool) override {
    if (static_cast<size_t>(thread) >= owner_.size()) owner_.resize(thread + 1);
  }
  uint64_t Allocate(int thread, int, uint64_t) override { return static_cast<uint64_t>(thread); }
  void Free(int, int, uint64_t) override {}
  void ThreadExit(int) override {}
  bool IsRemote(int thread, uint64_t object) const override {
    return object != static_cast<uint64_t>(thread);
  }

 private:
  std::vector<int> owner_;
};

std::unique_ptr<AllocatorModel> MakeNullModel() { return std::make_unique<NullModel>(); }

}  // namespace

const char* CostKindName(CostKind kind) {
  switch (kind) {
    case CostKind::kRefill: return "refills";
    case CostKind::kFlush: return "flushes";
    case CostKind::kLock: return "locks";
    case CostKind::kRemoteFree: return "remote_frees";
    case CostKind::kAtomic: return "atomics";
  }
  return "?";
}

const std::vector<std::string>& AllocatorNames() {
  static const std::vector<std::string> names = {"gperftools", "jemalloc", "glibc", "mimalloc"};
  return names;
}

std::unique_ptr<AllocatorModel> MakeAllocatorModel(const std::string& name,
                                                   const ModelSettings& settings,
                                                   CostSink* sink, std::string* error) {
  unsigned cpus = settings.cpus;
  if (cpus == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpus = n > 0 ? static_cast<unsigned>(n) : 1;
  }
  if (name == "gperftools") {
    TcmallocConfig c;
    if (settings.max_total_thread_cache_bytes) {
      c.max_total_thread_cache_bytes = settings.max_total_thread_cache_bytes;
    }
    if (settings.transfer_num_objects) c.transfer_num_objects = settings.transfer_num_objects;
    return MakeGperftoolsModel(c, settings.cache_from_first_event, sink);
  }
  if (name == "jemalloc") {
    JemallocConfig c;
    if (!ParseMallocConf(settings.malloc_conf, &c, error)) return nullptr;
    return MakeJemallocModel(c, cpus, settings.cache_from_first_event, sink);
  }
  if (name == "glibc") {
    GlibcConfig c;
    if (!ParseGlibcTunables(settings.glibc_tunables, &c, error)) return nullptr;
    return MakeGlibcModel(c, cpus, settings.cache_from_first_event, sink);
  }
  if (name == "mimalloc") return MakeMimallocModel(sink);
  if (name == "none") return MakeNullModel();
  *error = fmt::format("unknown allocator '{}' (gperftools, jemalloc, glibc, mimalloc)", name);
  return nullptr;
}

void AddCacheSettings(std::vector<Setting>* settings, bool cache_from_first_event,
                      const char* start_rule, const std::string& ignored) {
  const char* start =
      cache_from_first_event ? "a thread's first traced event (--cache-from-first-event)"
                             : start_rule;
  settings->push_back({"tcache from", start});
  if (!ignored.empty()) settings->push_back({"ignored", ignored});
}

bool SplitSettings(const std::string& text, char pair_sep, char kv_sep, const char* name,
                   const char* form, std::vector<Setting>* out, std::string* error) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(pair_sep, pos);
    if (end == std::string::npos) end = text.size();
    std::string pair = text.substr(pos, end - pos);
    pos = end + 1;
    if (pair.empty()) continue;
    size_t sep = pair.find(kv_sep);
    if (sep == std::string::npos) {
      *error = fmt::format("{}: '{}' is not {}", name, pair, form);
      return false;
    }
    out->emplace_back(pair.substr(0, sep), pair.substr(sep + 1));
  }
  return true;
}

}  // namespace crossfree::analyzer::simulate
