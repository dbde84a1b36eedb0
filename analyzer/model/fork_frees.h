// SPDX-License-Identifier: Apache-2.0
// Analyzer: frees in a fork child of blocks its parent allocated (issue 31).
//
// A fork child starts with a copy of its parent's heap: its frees of
// addresses it never saw allocated are of blocks the parent allocated
// before the fork (PairingCounts::forked_frees), not "unknown" frees. When
// the parent's trace is in the same analysis, each is attributed to the
// parent's allocation live at that address at the fork (the child trace's
// start): the parent's events are read once more, keeping only the
// addresses the children freed, and the latest event at or before the fork
// decides (an allocation: attributed; a free or nothing: not).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/roles.h"
#include "analyzer/model/sites.h"
#include "analyzer/pairing/pairing.h"
#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

struct ForkPair {
  std::string alloc_role;  // the parent's thread
  std::string free_role;   // the child's thread
  Site alloc_site;
  Site free_site;
  uint32_t parent_pid = 0;
  uint32_t child_pid = 0;
  uint64_t count = 0;
  uint64_t bytes = 0;
};

struct ForkFrees {
  uint64_t forked = 0;      // forked frees in all (PairingCounts::forked_frees)
  uint64_t attributed = 0;  // of those, to a parent's allocation in the analysis
  std::vector<ForkPair> pairs;  // every one, by count desc (renderers show --top)
};

// results[t] is set.traces()[t]'s pairing. Roles must be assigned already
// (AssignEntryRoles). Returns false with *error if a parent chunk does not
// decode.
bool AttributeForkFrees(TraceSet& set, const std::vector<PairingResult>& results,
                        SiteBuilder& sites, GroupBy by, ForkFrees* out,
                        std::string* error);

}  // namespace crossfree::analyzer
