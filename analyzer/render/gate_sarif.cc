// SPDX-License-Identifier: Apache-2.0
// Analyzer: the gate's verdict as SARIF 2.1.0 (see gate_formats.h): one
// run of the tool "crossfree gate", three rules (a new per-call site, a
// grown one, one-off objects growing with the work), one result per group
// over its baseline, located at its allocation's source line, with each
// free's line as a related location. A relative path has uriBaseId
// %SRCROOT% (the --source-root). Warnings are tool notifications of the
// invocation. tests/analyzer/model/ci_formats_test.py validates the output
// against the published schema (tests/data/sarif/).
#include <fmt/core.h>

#include <cctype>
#include <cstdint>

#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"

namespace crossfree::analyzer::render {
namespace {

struct Rule {
  GateVerdict verdict;
  const char* id;
  const char* name;
  const char* text;
};
constexpr Rule kRules[] = {
    {GateVerdict::kNew, "crossfree/new-cross-thread-site", "NewCrossThreadSite",
     "Objects allocated here are freed on other threads per call, and the baseline has no such "
     "site"},
    {GateVerdict::kGrown, "crossfree/grown-cross-thread-site", "GrownCrossThreadSite",
     "More objects allocated here per call are freed on other threads than the baseline allows"},
    {GateVerdict::kBoundedGrowing, "crossfree/one-off-objects-growing", "OneOffObjectsGrowing",
     "One-off cross-thread objects allocated here grow with the work"},
};

// A URI reference for a path: unreserved characters and '/' kept, the rest
// percent-encoded; an absolute path as a file: URI.
std::string PathUri(const std::string& path) {
  std::string out = path.size() > 0 && path[0] == '/' ? "file://" : "";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string Location(const SymbolFrame* frame, const std::string& source_root,
                     const std::string& logical, const std::string& message, int id) {
  std::string out = id >= 0 ? fmt::format("{{\"id\": {}, ", id) : std::string("{");
  if (frame) {
    std::string path = RepoPath(*frame, source_root);
    bool relative = path[0] != '/';
    out += fmt::format(
        "\"physicalLocation\": {{\"artifactLocation\": {{\"uri\": {}{}}}, \"region\": "
        "{{\"startLine\": {}}}}}, ",
        JsonString(PathUri(path)), relative ? ", \"uriBaseId\": \"%SRCROOT%\"" : "", frame->line);
  }
  out += fmt::format("\"logicalLocations\": [{{\"fullyQualifiedName\": {}}}], ", JsonString(logical));
  out += fmt::format("\"message\": {{\"text\": {}}}}}", JsonString(message));
  return out;
}

}  // namespace

std::string RenderGateSarif(const Analysis& analysis, const GateResult& r,
                            const std::string& accept_command, const std::string& source_root) {
  std::string rules;
  for (const Rule& rule : kRules) {
    rules += fmt::format(
        "{}\n            {{\"id\": \"{}\", \"name\": \"{}\", \"shortDescription\": {{\"text\": {}}}, "
        "\"defaultConfiguration\": {{\"level\": \"error\"}}}}",
        rules.empty() ? "" : ",", rule.id, rule.name, JsonString(rule.text));
  }
  std::string results;
  for (const GateOffense& o : r.offenses) {
    const GateGroup& g = o.group;
    size_t index = 0;
    while (kRules[index].verdict != o.verdict) ++index;
    std::string related;
    int id = 1;
    for (const CrossPair* p : g.pairs) {
      related += fmt::format(
          "{}\n            {}", related.empty() ? "" : ",",
          Location(SourceFrame(p->free_site), source_root, p->free_site.key,
                   fmt::format("freed here by {} ({} objects allocated by {})", p->free_role,
                               Commas(analysis.Figures(*p).frees), p->alloc_role),
                   id++));
    }
    std::string message = OffenseSummary(r, o) + ". If intended: " + accept_command;
    results += fmt::format(
        "{}\n        {{\"ruleId\": \"{}\", \"ruleIndex\": {}, \"level\": \"error\", "
        "\"message\": {{\"text\": {}}},\n          \"locations\": [{}],\n"
        "          \"relatedLocations\": [{}\n          ],\n"
        "          \"partialFingerprints\": {{\"crossfreeAllocationSite/v1\": \"{}\"}}}}",
        results.empty() ? "" : ",", kRules[index].id, index, JsonString(message),
        Location(g.alloc_site ? SourceFrame(*g.alloc_site) : nullptr, source_root, g.key,
                 "allocated here", -1),
        related, GroupFingerprint(g.key));
  }
  std::string notes;
  for (const std::string& w : r.warnings) {
    notes += fmt::format("{}{{\"level\": \"warning\", \"message\": {{\"text\": {}}}}}",
                         notes.empty() ? "" : ", ", JsonString(w));
  }
  std::string out = "{\n";
  out += "  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n";
  out += "  \"version\": \"2.1.0\",\n";
  out += "  \"runs\": [\n    {\n";
  out += "      \"tool\": {\"driver\": {\"name\": \"crossfree gate\", \"rules\": [" +
         rules + "\n          ]}},\n";
  out += fmt::format(
      "      \"invocations\": [{{\"executionSuccessful\": true, "
      "\"toolExecutionNotifications\": [{}]}}],\n",
      notes);
  out += "      \"originalUriBaseIds\": {\"%SRCROOT%\": {\"uri\": " +
         JsonString(PathUri(source_root.empty() ? "." : source_root) +
                    (source_root.empty() || source_root.back() == '/' ? "" : "/")) +
         "}},\n";
  out += "      \"results\": [" + results + (results.empty() ? "]\n" : "\n      ]\n");
  out += "    }\n  ]\n}\n";
  return out;
}

}  // namespace crossfree::analyzer::render
