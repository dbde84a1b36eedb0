// SPDX-License-Identifier: Apache-2.0
// Analyzer: tcmalloc central free-list transfers recorded by the tracer
// (kTagCentral records, docs/guide/central.md): counts per role (or thread),
// split fetch/release with the Insert/RemoveRange calls as sub-counts, and
// the call sites (symbolized like allocation sites, allocator and tracer
// frames skipped) whose allocations and frees triggered them.
// Used from one thread, after the pairing pass has filled the traces'
// metadata (stacks, thread names, modules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/model/roles.h"
#include "analyzer/model/sites.h"
#include "analyzer/pairing/trace_set.h"
#include "format/trace_format.h"

namespace crossfree::analyzer {

struct CentralCounts {
  uint64_t fetch = 0;             // ThreadCache::FetchFromCentralCache calls
  uint64_t release = 0;           // ThreadCache::ReleaseToCentralCache calls
  uint64_t insert_range = 0;      // CentralFreeList::InsertRange calls
  uint64_t remove_range = 0;      // CentralFreeList::RemoveRange calls
  uint64_t fetched_objects = 0;   // objects moved by fetches
  uint64_t released_objects = 0;  // objects moved by releases
  uint64_t transfers() const { return fetch + release; }
  void Add(const CentralCounts& o);
  bool operator==(const CentralCounts&) const = default;
};

struct CentralRoleRow {
  std::string role;  // role, or thread label with --by thread
  CentralCounts counts;
};

// A call site that triggered fetches or releases.
struct CentralSite {
  format::CentralOp op = format::CentralOp::kFetch;  // kFetch or kRelease
  std::string role;
  Site site;
  uint64_t calls = 0;
  uint64_t objects = 0;
};

struct CentralSummary {
  CentralCounts total;
  std::vector<CentralRoleRow> roles;  // by transfers desc, then role
  std::vector<CentralSite> sites;     // by calls desc, then op, role, key; at most `top`
  size_t sites_total = 0;
  // Calls the tracer's own bookkeeping caused (by_tracer records): not the
  // target's, so in no row or site above.
  CentralCounts by_tracer;
  bool present() const {
    return total.transfers() + total.insert_range + total.remove_range > 0;
  }
};

// The central transfers of two runs side by side (diff): per role of
// either run (a role one run lacks has zero counts there), by role name,
// and the totals, with fetches and releases per 1000 allocations of each
// run (0 for a run of no allocations).
struct CentralDiffRow {
  std::string role;  // "total" for CentralDiff::total
  CentralCounts before;
  CentralCounts after;
  double before_fetch_rate = 0;
  double after_fetch_rate = 0;
  double before_release_rate = 0;
  double after_release_rate = 0;
};

struct CentralDiff {
  bool present = false;  // either run has central records
  std::vector<CentralDiffRow> roles;
  CentralDiffRow total;
};

// allocations: each run's exact allocations (Analysis::Allocations).
CentralDiff DiffCentral(const CentralSummary& before, uint64_t before_allocations,
                        const CentralSummary& after, uint64_t after_allocations);

// Decodes every chunk of the set for its central records. top = sites kept
// (0 = all). Returns false with *error on a malformed chunk.
bool CollectCentral(TraceSet& set, GroupBy by, size_t top, SiteBuilder& sites,
                    CentralSummary* out, std::string* error);

}  // namespace crossfree::analyzer
