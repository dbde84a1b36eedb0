// SPDX-License-Identifier: Apache-2.0
// Simulate: what every allocator model shares (see allocator_model.h); the
// models by name are in allocators.cc.
#include "analyzer/simulate/allocator_model.h"

#include <fmt/core.h>

namespace crossfree::analyzer::simulate {

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
