// SPDX-License-Identifier: Apache-2.0
// Analyzer: the gate's verdict (analyzer/model/gate.h) in the formats CI
// systems read, and the parts every gate format shares: what the gate is
// sure to catch (its promise) and the summary line of an offense.
//   junit   JUnit XML: one test case per allocation group, a failure for
//           each group over its baseline (Jenkins, GitLab's test reports).
//   github  GitHub Actions workflow commands: an ::error at each failing
//           group's allocation line, a ::notice at its free lines.
//   sarif   SARIF 2.1.0 (GitHub code scanning and other SARIF readers).
// Source paths: a frame's file with source_root + "/" stripped when it
// starts with it, so that annotations name files of the repository.
// Stateless; any thread.
#pragma once

#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/model/gate.h"

namespace crossfree::analyzer::render {

// "per operation" or "per 1000 allocations".
const char* GateUnitName(const GateResult& r);
// "0.055", "none" (+inf), "not computed (sampled)" (NaN): a promise.
std::string PromiseText(double promise);
// The text output's lines on the steady state and on what the gate is sure
// to catch in this run (GateResult::promise_new, each group's promise).
std::string GatePromiseText(const GateResult& r);
// The JSON output's "steady_units", "promise" and "warnings" members, each
// line ending ",\n", indented by two.
std::string GatePromiseJson(const GateResult& r);
// Where a timing-dependent site's least staying share comes from: the
// spread of the baseline's runs, or its one run's lower bound / the slack.
std::string StayingBoundText(const GateResult& r, const GateGroup& g);
// One line: verdict, group, rate, limit and baseline of an offense.
std::string OffenseSummary(const GateResult& r, const GateOffense& o);
// A frame's file as the repository names it (see above); "" when unknown.
std::string RepoPath(const SymbolFrame& frame, const std::string& source_root);
// The first frame of a site that has a source line, or null.
const SymbolFrame* SourceFrame(const Site& site);

std::string RenderGateJunit(const Analysis& analysis, const GateResult& r,
                            const std::string& accept_command);
std::string RenderGateGithub(const Analysis& analysis, const GateResult& r,
                             const std::string& accept_command, const std::string& source_root);
std::string RenderGateSarif(const Analysis& analysis, const GateResult& r,
                            const std::string& accept_command, const std::string& source_root);

}  // namespace crossfree::analyzer::render
