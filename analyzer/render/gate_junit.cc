// SPDX-License-Identifier: Apache-2.0
// Analyzer: the gate's verdict as JUnit XML (see gate_formats.h). One test
// suite, one test case per allocation group of the run (named by the
// group's key), a <failure> for each group over its baseline whose text
// names the group's pairs with their allocation and free sites, the
// warnings in <system-err>.
#include <fmt/core.h>

#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {
namespace {

// Text and attribute values: the five XML specials escaped, and characters
// XML 1.0 cannot hold (C0 controls but tab and line breaks) as '?'.
std::string Xml(std::string_view s) { return MarkupEscape(s, Markup::kXml); }

std::string SiteLinesPlain(const Site& site, const char* label) {
  std::string out;
  for (size_t i = 0; i < site.frames.size(); ++i) {
    std::string loc = FrameLocation(site.frames[i]);
    out += fmt::format("  {:<14}{}{}\n", i == 0 ? label : "", FrameName(site.frames[i], false),
                       loc.empty() ? "" : "  " + loc);
  }
  if (site.frames.empty()) out += fmt::format("  {:<14}{}\n", label, site.key);
  return out;
}

}  // namespace

std::string RenderGateJunit(const Analysis& analysis, const GateResult& r,
                            const std::string& accept_command) {
  const size_t tests = r.offenses.size() + r.passed_groups.size();
  std::string cases;
  for (const GateOffense& o : r.offenses) {
    std::string body = OffenseSummary(r, o) + "\n" + SiteLinesPlain(*o.group.alloc_site, "allocated at");
    for (const CrossPair* p : o.group.pairs) {
      body += fmt::format("{} -> {}: {} objects, {}\n", p->alloc_role, p->free_role,
                          Commas(analysis.Figures(*p).frees), LifecycleName(p->lifecycle()));
      body += SiteLinesPlain(p->free_site, "freed at");
      body += "  key: " + p->key + "\n";
    }
    body += "If intended, accept it into the baseline with:\n  " + accept_command + "\n";
    cases += fmt::format(
        "    <testcase classname=\"crossfree.gate\" name=\"{}\">\n"
        "      <failure type=\"{}\" message=\"{}\">{}</failure>\n"
        "    </testcase>\n",
        Xml(o.group.key), GateVerdictName(o.verdict), Xml(OffenseSummary(r, o)), Xml(body));
  }
  for (const GateGroup& g : r.passed_groups) {
    cases += fmt::format("    <testcase classname=\"crossfree.gate\" name=\"{}\"/>\n", Xml(g.key));
  }
  std::string err;
  for (const std::string& w : r.warnings) err += "warning: " + w + "\n";
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"crossfree gate\" tests=\"{0}\" failures=\"{1}\" errors=\"0\">\n"
      "  <testsuite name=\"crossfree gate\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
      "skipped=\"0\">\n",
      tests, r.offenses.size());
  out += "    <properties>\n";
  out += fmt::format("      <property name=\"unit\" value=\"{}\"/>\n", GateUnitName(r));
  out += fmt::format("      <property name=\"units\" value=\"{:.6g}\"/>\n", r.units);
  out += fmt::format("      <property name=\"promise_new_site\" value=\"{}\"/>\n",
                     Xml(PromiseText(r.promise_new)));
  out += "    </properties>\n";
  out += cases;
  if (!err.empty()) out += "    <system-err>" + Xml(err) + "</system-err>\n";
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace crossfree::analyzer::render
