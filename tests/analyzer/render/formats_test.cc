// SPDX-License-Identifier: Apache-2.0
// The machine formats of a report read back: the pprof profile parsed with
// the protobuf library (counts, bytes, labels and locations must say what
// the analysis says), and the folded stacks. Known answers from the
// analysis scenarios (tests/analyzer/model/scenarios.h).
#include <catch2/catch.hpp>
#include <fmt/core.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <map>
#include <sstream>
#include <string>

#include "analyzer/model/analysis.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/gate_formats.h"
#include "analyzer/render/output.h"
#include "analyzer/render/pprof.h"
#include "pprof/profile.pb.h"
#include "tests/analyzer/model/scenarios.h"

namespace crossfree::analyzer::render {
namespace {

namespace pprof = ::perftools::profiles;

Analysis Before(testing::FakeResolver& resolver, TraceSet& set, testing::SyntheticTrace& t) {
  std::string error;
  REQUIRE(set.AddBytes(t.Finish(), "before.trc", &error));
  AnalysisOptions options;
  Analysis a;
  REQUIRE(Analyze(set, options, &resolver, &a, &error));
  REQUIRE(a.counts.cross_thread == 1600);
  return a;
}

TEST_CASE("the pprof profile holds every cross-thread pair with its roles and stack") {
  testing::FakeResolver resolver;
  TraceSet set;
  testing::SyntheticTrace t = testing::BuildBeforeRun();
  Analysis a = Before(resolver, set, t);

  std::string gz = RenderReportPprof(a);
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);  // gzip magic
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  google::protobuf::io::ArrayInputStream raw(gz.data(), static_cast<int>(gz.size()));
  google::protobuf::io::GzipInputStream in(&raw);
  pprof::Profile p;
  REQUIRE(p.ParseFromZeroCopyStream(&in));

  REQUIRE(p.string_table_size() > 0);
  CHECK(p.string_table(0).empty());
  auto str = [&p](int64_t i) { return p.string_table(static_cast<int>(i)); };
  REQUIRE(p.sample_type_size() == 2);
  CHECK(str(p.sample_type(0).type()) == "cross_thread_frees");
  CHECK(str(p.sample_type(0).unit()) == "count");
  CHECK(str(p.sample_type(1).unit()) == "bytes");

  std::map<uint64_t, const pprof::Location*> locations;
  for (const auto& l : p.location()) locations[l.id()] = &l;
  std::map<uint64_t, std::string> functions;
  for (const auto& f : p.function()) functions[f.id()] = str(f.name());

  REQUIRE(static_cast<size_t>(p.sample_size()) == a.pairs.size());
  int64_t frees = 0, bytes = 0;
  for (int i = 0; i < p.sample_size(); ++i) {
    const pprof::Sample& s = p.sample(i);
    const CrossPair& pair = a.pairs[static_cast<size_t>(i)];
    REQUIRE(s.value_size() == 2);
    CHECK(s.value(0) == static_cast<int64_t>(pair.count.sampled));
    CHECK(s.value(1) == static_cast<int64_t>(pair.bytes.sampled));
    frees += s.value(0);
    bytes += s.value(1);
    std::map<std::string, std::string> labels;
    for (const auto& l : s.label()) labels[str(l.key())] = str(l.str());
    CHECK(labels["alloc_role"] == pair.alloc_role);
    CHECK(labels["free_role"] == pair.free_role);
    CHECK(labels["free_site"] == pair.free_site.key);
    // The locations, innermost first, are the allocation site's frames.
    REQUIRE(static_cast<size_t>(s.location_id_size()) == pair.alloc_site.frames.size());
    for (int k = 0; k < s.location_id_size(); ++k) {
      REQUIRE(locations.count(s.location_id(k)) == 1);
      const pprof::Location& loc = *locations[s.location_id(k)];
      REQUIRE(loc.line_size() == 1);
      CHECK(functions[loc.line(0).function_id()] ==
            FrameName(pair.alloc_site.frames[static_cast<size_t>(k)], false));
      CHECK(loc.line(0).line() == pair.alloc_site.frames[static_cast<size_t>(k)].line);
    }
  }
  CHECK(frees == 1600);
  uint64_t want_bytes = 0;
  for (const CrossPair& pair : a.pairs) want_bytes += pair.bytes.sampled;
  CHECK(bytes == static_cast<int64_t>(want_bytes));
}

TEST_CASE("folded stacks: allocating side outermost first, then the freeing side") {
  testing::FakeResolver resolver;
  TraceSet set;
  testing::SyntheticTrace t = testing::BuildBeforeRun();
  Analysis a = Before(resolver, set, t);
  std::istringstream lines(RenderReportFolded(a));
  std::string line;
  size_t n = 0;
  uint64_t total = 0;
  while (std::getline(lines, line)) {
    const CrossPair& pair = a.pairs[n++];
    size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    total += std::stoull(line.substr(space + 1));
    std::string stacks = line.substr(0, space);
    size_t arrow = stacks.find(";-> ");
    REQUIRE(arrow != std::string::npos);
    std::string alloc = stacks.substr(0, arrow), freeing = stacks.substr(arrow + 4);
    // The pair's lifecycle is the root frame.
    std::string root = fmt::format("[{}];", LifecycleName(pair.lifecycle()));
    REQUIRE(alloc.rfind(root, 0) == 0);
    alloc = alloc.substr(root.size());
    CHECK(alloc.rfind(pair.alloc_role + ";", 0) == 0);
    CHECK(freeing.rfind(pair.free_role + ";", 0) == 0);
    // Innermost frame last.
    std::string inner = FrameName(pair.alloc_site.frames.front(), false);
    CHECK(alloc.size() >= inner.size());
    CHECK(alloc.compare(alloc.size() - inner.size(), inner.size(), inner) == 0);
  }
  CHECK(n == a.pairs.size());
  CHECK(total == 1600);
}

// The HTML page and the JUnit file share one escaping function: HTML
// escapes four specials, XML also the apostrophe and the controls XML 1.0
// cannot hold.
TEST_CASE("markup escaping: HTML's four specials, XML's five and its controls") {
  const std::string_view s = "a&b<c>d\"e'f\tg\x01h\ni";
  CHECK(MarkupEscape(s, Markup::kHtml) == "a&amp;b&lt;c&gt;d&quot;e'f\tg\x01h\ni");
  CHECK(MarkupEscape(s, Markup::kXml) == "a&amp;b&lt;c&gt;d&quot;e&apos;f\tg?h\ni");
}

// A timing-dependent site that failed on its share against a one-run
// baseline: the message names the remedy (a baseline of several runs),
// which a baseline of three does not need.
TEST_CASE("gate: a share failure against a one-run baseline says how to write one of 3 runs") {
  GateResult r;
  GateOffense o;
  o.group.key = "Site::Alloc";
  o.group.in_baseline = true;
  o.group.baseline_staying_share = 0.85;
  o.verdict = GateVerdict::kGrown;
  o.by_share = true;
  o.staying_share = 0;
  o.staying_limit = 0.10625;
  o.group.baseline_runs = 1;
  const std::string one = OffenseSummary(r, o);
  CHECK(one.find("0.0% of the site's objects stay on their thread, below 10.6%") !=
        std::string::npos);
  CHECK(one.find("write the baseline from 3 runs (--write-baseline --run A.trc") !=
        std::string::npos);
  o.group.baseline_runs = 3;
  const std::string three = OffenseSummary(r, o);
  CHECK(three.find("the least the spread of the baseline's 3 runs allows") != std::string::npos);
  CHECK(three.find("write the baseline from 3 runs") == std::string::npos);
}

}  // namespace
}  // namespace crossfree::analyzer::render
