// SPDX-License-Identifier: Apache-2.0
// Simulate: which allocation and free sites caused the most central
// free-list transfers, over all traces of a run: the busiest raw (thread,
// stack) sites are symbolized and merged by (group, site key). The only
// step of simulate that symbolizes, and it does so for the few sites shown.
#pragma once

#include <cstddef>
#include <vector>

#include "analyzer/model/sites.h"
#include "analyzer/pairing/trace_set.h"
#include "analyzer/simulate/replay.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::simulate {

struct RawSite {
  size_t trace;
  SiteKey key;
  CallsObjects value;
};

// The options.top busiest sites (all when 0), by calls descending.
std::vector<SiteTransfers> TopSites(std::vector<RawSite> raw, const analyzer::TraceSet& set,
                                    const SimulateOptions& options,
                                    analyzer::SiteBuilder& builder);

}  // namespace crossfree::analyzer::simulate
