// SPDX-License-Identifier: Apache-2.0
// The JSON renderer: each command's model as a JSON document for scripts
// (schemas in docs/guide/analyzer.md and docs/guide/simulate.md; the
// schema_version constants in analyzer/render/output.h bump on any incompatible
// change). Stateless; any thread.
#pragma once

#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/model/central.h"
#include "analyzer/model/diff.h"
#include "analyzer/model/gate.h"
#include "analyzer/render/output.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::render {

// `crossfree report --format json`.
std::string RenderReportJson(const Analysis& analysis, const ReportOptions& options);

// The value of the report's and the diff's "central" key.
std::string RenderCentralJson(const CentralSummary& c);
std::string RenderCentralDiffJson(const CentralDiff& diff);

// `crossfree diff --format json`.
std::string RenderDiffJson(const Analysis& before, const Analysis& after, const DiffResult& d);

// `crossfree gate --format json`: the verdict, the offending, allowed,
// suppressed and gone pairs, and the command that accepts the offenders.
std::string RenderGateJson(const Analysis& analysis, const GateResult& result,
                           const std::string& accept_command);

}  // namespace crossfree::analyzer::render

namespace crossfree::analyzer::simulate {

// `crossfree simulate --format json`: predicted counts per group, for
// scripts that compare them with measured ones.
std::string RenderSimulationJson(const SimulationResult& result, const SimulateOptions& options);

}  // namespace crossfree::analyzer::simulate
