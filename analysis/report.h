// SPDX-License-Identifier: Apache-2.0
// Analyzer: renders an Analysis as the `crossfree report` text (fits 100
// columns) or JSON (schema in docs/guide/analyzer.md; kReportSchemaVersion bumps on
// any incompatible change). Stateless.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/analysis.h"

namespace crossfree::analyzer {

inline constexpr int kReportSchemaVersion = 1;

struct ReportOptions {
  size_t top = 10;             // cross-thread pairs shown; 0 = all
  size_t asymmetry_rows = 12;  // asymmetry rows shown (text); 0 = all
  GroupBy by = GroupBy::kRole;
  int site_depth = 3;
};

std::string RenderReportText(const Analysis& analysis, const ReportOptions& options);
std::string RenderReportJson(const Analysis& analysis, const ReportOptions& options);

// "drains" for net > 0, "overflows" for net < 0.
const char* AsymmetryEffect(int64_t net);

}  // namespace crossfree::analyzer
