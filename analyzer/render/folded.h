// SPDX-License-Identifier: Apache-2.0
// The folded-stacks renderer: a report's cross-thread pairs as collapsed
// stacks for flamegraph.pl, inferno and speedscope. One line per pair:
//   alloc_outer;...;alloc_inner;-> free_outer;...;free_inner COUNT
// (the allocating role and site first, then "-> " and the freeing side), so
// a flame graph's bottom is the allocation site and a tower on it shows where
// its objects were freed. Stateless; any thread.
#pragma once

#include <string>

#include "analyzer/model/analysis.h"

namespace crossfree::analyzer::render {

std::string RenderReportFolded(const Analysis& analysis);

}  // namespace crossfree::analyzer::render
