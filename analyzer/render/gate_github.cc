// SPDX-License-Identifier: Apache-2.0
// Analyzer: the gate's verdict as GitHub Actions workflow commands (see
// gate_formats.h): for each group over its baseline an ::error annotation
// on the allocation's source line and a ::notice on each free's, then one
// summary line; warnings as ::warning. Lines without a known source file
// are annotations without a file (shown on the job).
#include <fmt/core.h>

#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {
namespace {

// A workflow command's message: '%', CR and LF escaped.
std::string Data(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

// A property value: also ':' and ','.
std::string Property(std::string_view s) {
  std::string out;
  for (char c : Data(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out += c;
  }
  return out;
}

std::string Command(const char* level, const SymbolFrame* frame, const std::string& source_root,
                    const std::string& title, const std::string& message) {
  std::string props;
  if (frame) {
    std::string path = RepoPath(*frame, source_root);
    if (!path.empty()) props = fmt::format("file={},line={},", Property(path), frame->line);
  }
  props += "title=" + Property(title);
  return fmt::format("::{} {}::{}\n", level, props, Data(message));
}

}  // namespace

std::string RenderGateGithub(const Analysis& analysis, const GateResult& r,
                             const std::string& accept_command, const std::string& source_root) {
  std::string out;
  for (const std::string& w : r.warnings) out += "::warning title=crossfree gate::" + Data(w) + "\n";
  for (const GateOffense& o : r.offenses) {
    const GateGroup& g = o.group;
    std::string message = OffenseSummary(r, o);
    for (const CrossPair* p : g.pairs) {
      message += fmt::format("\n{} -> {}: {} objects, freed at {}", p->alloc_role, p->free_role,
                             Commas(analysis.Figures(*p).frees), p->free_site.key);
    }
    message += "\nIf intended: " + accept_command;
    out += Command("error", g.alloc_site ? SourceFrame(*g.alloc_site) : nullptr, source_root,
                   fmt::format("crossfree gate: {} cross-thread allocation", GateVerdictName(o.verdict)),
                   message);
    for (const CrossPair* p : g.pairs) {
      const SymbolFrame* free = SourceFrame(p->free_site);
      if (!free) continue;
      out += Command("notice", free, source_root, "crossfree gate: freed on another thread",
                     fmt::format("{} -> {}: frees objects allocated at {}", p->alloc_role,
                                 p->free_role, g.key));
    }
  }
  if (r.passed()) {
    out += fmt::format(
        "::notice title=crossfree gate::PASSED: {} allocation groups within the baseline; sure to "
        "catch a new site at {} or more per-call objects {}\n",
        r.groups, PromiseText(r.promise_new), GateUnitName(r));
  } else {
    out += fmt::format("crossfree gate: FAILED: {} allocation group{} over the baseline\n",
                       r.offenses.size(), r.offenses.size() == 1 ? "" : "s");
  }
  return out;
}

}  // namespace crossfree::analyzer::render
