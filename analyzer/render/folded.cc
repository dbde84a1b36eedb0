// SPDX-License-Identifier: Apache-2.0
// The folded-stacks renderer (see folded.h).
#include "analyzer/render/folded.h"

#include <fmt/core.h>

#include "analyzer/model/sites.h"

namespace crossfree::analyzer::render {
namespace {

// A frame as one field: ';' separates frames and a line break ends the
// record, so neither may appear inside one.
std::string Field(std::string s) {
  for (char& c : s) {
    if (c == ';') c = ':';
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

// Outermost frame first, as folded stacks are written.
void AppendSite(std::string& out, const std::string& role, const Site& site) {
  out += Field(role);
  if (site.frames.empty()) {
    out += ';' + Field(site.key);
    return;
  }
  for (size_t i = site.frames.size(); i-- > 0;) out += ';' + Field(FrameName(site.frames[i], false));
}

}  // namespace

std::string RenderReportFolded(const Analysis& a) {
  std::string out;
  // Folded stacks have no header: a sampled run's lines all start with one
  // root frame that says so, which every flame graph shows at its base.
  // Under it, the pair's lifecycle, so per-call and one-off objects stand
  // apart at the base of the graph.
  std::string root = a.sampled() ? fmt::format("[estimated, sampled 1/{}];", a.sample_period) : "";
  // So does a trace whose end lost frees (the process was killed without
  // record, or outlived it).
  for (const TraceInfo& t : a.traces) {
    if (t.EventsMissingAtEnd()) {
      root = (t.LastBuffersLost() ? "[no clean end: frees lost];"
                                  : "[running at record's end: later frees missing];") +
             root;
      break;
    }
  }
  for (const CrossPair& p : a.pairs) {
    out += root;
    out += fmt::format("[{}];", LifecycleName(p.lifecycle()));
    AppendSite(out, p.alloc_role, p.alloc_site);
    out += ";-> ";
    std::string free_side;
    AppendSite(free_side, p.free_role, p.free_site);
    out += free_side;
    out += fmt::format(" {}\n", a.Figures(p).frees);  // the estimate, when sampled
  }
  return out;
}

}  // namespace crossfree::analyzer::render
