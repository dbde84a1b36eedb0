// SPDX-License-Identifier: Apache-2.0
// The HTML renderer: one self-contained page (no network: its CSS and
// JavaScript are written here and inlined) for a report or a diff. The
// model goes into the page as JSON; the page draws the summary, a role x
// role heat map of cross-thread frees, the pairs with both stacks and size
// classes (sortable, filterable, fast for 10,000 pairs: rows are drawn a
// page at a time), the per-role, per-size-class asymmetry as a bar chart,
// a timeline of each top pair's frees, and tcmalloc central transfers per
// role when recorded. A diff page shows gone, new, grown and shrunk pairs
// side by side. Stateless; any thread.
#pragma once

#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/model/diff.h"
#include "analyzer/model/lifetime.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::render {

std::string RenderReportHtml(const Analysis& analysis);
std::string RenderDiffHtml(const Analysis& before, const Analysis& after, const DiffResult& d);

// A pair's lifetime distribution (objects per power of two of ns), as an
// inline SVG bar chart with its axis labels; "" when it has no frees.
std::string LifetimeSvg(const LifetimeSummary& lifetime);

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::simulate {

// simulate --format html: the cost simulation (SimulationResult::cost) as a
// self-contained page: model, settings and validation, costs per group and
// size class, and the top pairs with their lifetime distributions.
std::string RenderSimulationHtml(const SimulationResult& result, const SimulateOptions& options);

}  // namespace crossfree::analyzer::render
