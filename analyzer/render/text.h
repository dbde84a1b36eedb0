// SPDX-License-Identifier: Apache-2.0
// The text renderer: each command's model as the text it prints, fitted to
// a width (100 columns unless told; 0 = unlimited): file:line is never cut,
// function names are shortened instead. Stateless; any thread. A renderer reads a model and computes nothing the model does
// not hold.
#pragma once

#include <cstdint>
#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/model/central.h"
#include "analyzer/model/diff.h"
#include "analyzer/model/gate.h"
#include "analyzer/render/output.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::render {

// `crossfree report`.
std::string RenderReportText(const Analysis& analysis, const ReportOptions& options);

// The report's central free-list section (empty when nothing was recorded),
// and the diff's (DiffCentral): fetch and release calls per role, before and
// after, per 1000 allocations of each run too (empty when neither run has
// any).
std::string RenderCentralText(const CentralSummary& c, GroupBy by, size_t width);
std::string RenderCentralDiffText(const CentralDiff& diff);

// `crossfree diff`.
std::string RenderDiffText(const Analysis& before, const Analysis& after, const DiffResult& d,
                           size_t width = 100);

// `crossfree gate`: the verdict, the rule it applied, each offending
// allocation group with its pairs' stacks and keys, and accept_command (the
// exact command that accepts them into the baseline).
std::string RenderGateText(const Analysis& analysis, const GateResult& result,
                           const std::string& accept_command, size_t width = 100);

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::simulate {

// `crossfree simulate`.
std::string RenderSimulationText(const SimulationResult& result, const SimulateOptions& options);

}  // namespace crossfree::analyzer::simulate
