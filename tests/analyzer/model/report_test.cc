// SPDX-License-Identifier: Apache-2.0
// Known answers and golden outputs of report, diff and gate on the fixed
// synthetic runs of scenarios.h, symbolized by the fake resolver.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/model/baseline.h"
#include "analyzer/model/diff.h"
#include "analyzer/model/gate.h"
#include "analyzer/render/gate_formats.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/html.h"
#include "analyzer/render/text.h"
#include "analyzer/render/json.h"
#include "analyzer/render/report_page_assets.h"
#include "analyzer/pairing/size_class.h"
#include "tests/analyzer/model/golden.h"
#include "tests/analyzer/model/scenarios.h"

namespace crossfree::analyzer {

// The models are checked as the renderers print them.
using namespace crossfree::analyzer::render;
namespace {

using testing::CheckGolden;

// An HTML page as its golden file holds it: its data (the JSON model) and the
// markup html.cc writes, with the style and script, the same on every page
// and kept in analyzer/render/report_page.{css,js}, each replaced by a
// comment naming its file (checked here to be embedded whole).
std::string PageData(std::string page) {
  auto replace = [&](const std::string& open, std::string_view text, const std::string& close,
                     const std::string& file) {
    std::string whole = open + std::string(text) + close;
    size_t at = page.find(whole);
    REQUIRE(at != std::string::npos);
    page.replace(at, whole.size(), open + "/* " + file + " */" + close);
  };
  replace("<style>", report_page::kStyle, "</style>", "analyzer/render/report_page.css");
  replace("<script>", report_page::kScript, "</script>", "analyzer/render/report_page.js");
  return page;
}

// Site keys: functions without their parameter lists (KeyFunctionName).
const std::string kCallAlloc =
    "rpc::OutboundCall::Create <- rpc::Proxy::AsyncRequest <- rpc::Worker::Run";
const std::string kCallFree =
    "rpc::OutboundCall::~OutboundCall <- rpc::Reactor::CompleteCall <- rpc::Reactor::Run";
const std::string kSliceAlloc = "rpc::Slices::Push <- rpc::Transfer::Send <- rpc::Worker::Run";
const std::string kSliceFree = "rpc::Reactor::CompleteCall <- rpc::Reactor::Run";

struct Fixture {
  testing::SyntheticTrace trace;
  TraceSet set;
  testing::FakeResolver resolver;
  Analysis analysis;

  Fixture(testing::SyntheticTrace t, AnalysisOptions options = {},
          const std::string& name = "before.trc")
      : trace(std::move(t)) {
    std::string error;
    REQUIRE(set.AddBytes(trace.Finish(), name, &error));
    options.pairing.jobs = 2;
    REQUIRE(Analyze(set, options, &resolver, &analysis, &error));
  }
};

const CrossPair* FindPair(const Analysis& a, const std::string& alloc_role,
                          const std::string& free_role, const std::string& alloc_site) {
  for (const CrossPair& p : a.pairs) {
    if (p.alloc_role == alloc_role && p.free_role == free_role && p.alloc_site.key == alloc_site) {
      return &p;
    }
  }
  return nullptr;
}

TEST_CASE("report: known answers on the before run") {
  Fixture f(testing::BuildBeforeRun());
  const Analysis& a = f.analysis;
  // main: 400 churn + 1 live + 1 unknown free + 1 alloc freed twice;
  // 2 workers x 200 calls x (call + 2 slices + response).
  CHECK(a.counts.allocations == 400 + 1 + 1 + 2 * 200 * 4);
  CHECK(a.counts.frees == 400 + 1 + 2 + 2 * 200 * 4);
  CHECK(a.counts.cross_thread == 2 * 200 * 4);
  CHECK(a.counts.live_at_exit == 1);
  CHECK(a.counts.live_bytes == 4096);
  CHECK(a.counts.unknown_frees == 1);
  CHECK(a.counts.double_frees == 1);
  CHECK(a.threads == 5);
  REQUIRE(a.pairs.size() == 3);
  // Sites skip operator new/malloc and std:: frames; inlined frames count.
  const CrossPair* slices = FindPair(a, "worker-N", "reactor-N", kSliceAlloc);
  REQUIRE(slices != nullptr);
  CHECK(slices->count.sampled == 800);
  CHECK(slices->bytes.sampled == 800 * 32);
  CHECK(slices->free_site.key == kSliceFree);
  CHECK(slices->size_classes.at(SizeClassIndex(32)) == 800);
  const CrossPair* calls = FindPair(a, "worker-N", "reactor-N", kCallAlloc);
  REQUIRE(calls != nullptr);
  CHECK(calls->count.sampled == 400);
  CHECK(calls->free_site.key == kCallFree);
  CHECK(calls->key == "worker-N -> reactor-N | alloc: " + kCallAlloc + " | free: " + kCallFree);
  CHECK(a.pairs[0].key == slices->key);  // ordered by count
  // Asymmetry: workers drain the 32-byte class, reactors overflow it.
  auto row = [&](const std::string& role, uint64_t size) -> const AsymmetryRow* {
    for (const AsymmetryRow& r : a.asymmetry) {
      if (r.role == role && r.size_class == SizeClassIndex(size)) return &r;
    }
    return nullptr;
  };
  REQUIRE(row("worker-N", 32) != nullptr);
  CHECK(row("worker-N", 32)->allocs.sampled == 800);
  CHECK(row("worker-N", 32)->frees.sampled == 0);
  CHECK(row("worker-N", 32)->net == 800);
  CHECK(row("worker-N", 32)->top_site == kSliceAlloc);
  REQUIRE(row("reactor-N", 32) != nullptr);
  CHECK(row("reactor-N", 32)->net == -800);
  CHECK(row("reactor-N", 32)->top_site == kSliceFree);
  REQUIRE(row("reactor-N", 56) != nullptr);  // responses: 56 bytes -> 64-byte class
  CHECK(row("reactor-N", 56)->net == 400);
  REQUIRE(row("main", 4096) != nullptr);     // the live allocation
  CHECK(row("main", 4096)->net == 1);
  CHECK(row("main", 200) == nullptr);        // balanced churn is not listed
  REQUIRE(a.live.size() == 1);
  CHECK(a.live[0].site.key == "Buffer::Grow <- main");
  CHECK(a.live[0].role == "main");
}

TEST_CASE("report: --by thread keeps threads apart") {
  AnalysisOptions options;
  options.by = GroupBy::kThread;
  Fixture f(testing::BuildBeforeRun(), options);
  const CrossPair* p0 = FindPair(f.analysis, "worker-0 (4001)", "reactor-0 (4003)", kSliceAlloc);
  const CrossPair* p1 = FindPair(f.analysis, "worker-1 (4002)", "reactor-1 (4004)", kSliceAlloc);
  REQUIRE(p0 != nullptr);
  REQUIRE(p1 != nullptr);
  CHECK(p0->count.sampled == 400);
  CHECK(p1->count.sampled == 400);
  CHECK(f.analysis.pairs.size() == 6);
}

TEST_CASE("report: --site-depth, --skip and --no-default-skips") {
  // With these site options, the worker -> reactor pairs of the run include
  // one allocated at each of these site keys.
  auto check_sites = [](const AnalysisOptions& options, const std::vector<std::string>& keys) {
    Fixture f(testing::BuildBeforeRun(), options);
    for (const std::string& key : keys) {
      INFO("site key " << key);
      CHECK(FindPair(f.analysis, "worker-N", "reactor-N", key) != nullptr);
    }
  };
  AnalysisOptions skip;
  skip.sites.depth = 1;
  skip.sites.skips = {"^rpc::Slices::"};
  check_sites(skip, {"rpc::Transfer::Send", "rpc::OutboundCall::Create"});

  AnalysisOptions raw;
  raw.sites.depth = 2;
  raw.sites.default_skips = false;
  check_sites(raw, {"malloc <- std::__new_allocator<rpc::Slice>::allocate"});

  AnalysisOptions lines;
  lines.sites.depth = 1;
  lines.sites.key_lines = true;
  check_sites(lines, {"rpc::OutboundCall::Create (outbound_call.cc:41)"});
}

TEST_CASE("report: golden text and JSON") {
  Fixture f(testing::BuildBeforeRun());
  ReportOptions options;
  CheckGolden("report-before.txt", RenderReportText(f.analysis, options));
  CheckGolden("report-before.json", RenderReportJson(f.analysis, options));
  ReportOptions top1;
  top1.top = 1;
  CheckGolden("report-before-top1.json", RenderReportJson(f.analysis, top1));
  AnalysisOptions by_thread;
  by_thread.by = GroupBy::kThread;
  Fixture g(testing::BuildBeforeRun(), by_thread);
  ReportOptions thread_options;
  thread_options.by = GroupBy::kThread;
  CheckGolden("report-before-by-thread.txt", RenderReportText(g.analysis, thread_options));
}

TEST_CASE("report and diff: golden folded stacks and HTML pages") {
  Fixture f(testing::BuildBeforeRun());
  CheckGolden("report-before.folded", RenderReportFolded(f.analysis));
  CheckGolden("report-before.html", PageData(RenderReportHtml(f.analysis)));
  Fixture after(testing::BuildAfterRun(), {}, "after.trc");
  DiffResult d = ComputeDiff(f.analysis, after.analysis, 0.1);
  CheckGolden("diff.html", PageData(RenderDiffHtml(f.analysis, after.analysis, d)));
}

TEST_CASE("diff: gone, new, grown, shrunk, normalized per 1000 allocations") {
  Fixture before(testing::BuildBeforeRun());
  Fixture after(testing::BuildAfterRun(), {}, "after.trc");
  DiffResult d = ComputeDiff(before.analysis, after.analysis, 0.1);
  auto status_of = [&](const std::string& alloc_site) {
    for (const DiffRow& r : d.rows) {
      if (r.pair().alloc_site.key == alloc_site) return std::string(DiffStatusName(r.status));
    }
    return std::string("absent");
  };
  CHECK(status_of(kCallAlloc) == "gone");
  CHECK(status_of("Log::Flush <- rpc::Worker::Run") == "new");
  CHECK(status_of(kSliceAlloc) == "grown");
  CHECK(status_of("rpc::Response::Create <- rpc::Reactor::Run") == "shrunk");
  for (const DiffRow& r : d.rows) {
    if (r.pair().alloc_site.key != kSliceAlloc) continue;
    CHECK(r.before->count.sampled == 800);
    CHECK(r.after->count.sampled == 4800);
    CHECK(r.before_rate == Approx(800 * 1000.0 / before.analysis.counts.allocations));
    CHECK(r.after_rate == Approx(4800 * 1000.0 / after.analysis.counts.allocations));
  }
  CheckGolden("diff.txt", RenderDiffText(before.analysis, after.analysis, d));
  CheckGolden("diff.json", RenderDiffJson(before.analysis, after.analysis, d));
}

TEST_CASE("gate: passes on its own baseline, fails on a new pair and on growth") {
  Fixture before(testing::BuildBeforeRun());
  Fixture after(testing::BuildAfterRun(), {}, "after.trc");
  std::string text = FormatBaseline(UnsuppressedPairs(before.analysis, {}), before.analysis,
                                    "crossfree gate --write-baseline --baseline B before.trc");
  CheckGolden("baseline.txt", text);
  Baseline baseline;
  std::string error;
  REQUIRE(ParseBaseline(text, "baseline.txt", &baseline, &error));
  CHECK(baseline.allowed.size() == 3);
  CHECK(baseline.runs == 1);
  CHECK(baseline.site_runs.size() == 3);

  // The same run twice (--write-baseline --run A --run A): the same rates,
  // each site's counts once per run.
  {
    std::vector<const CrossPair*> pairs = UnsuppressedPairs(before.analysis, {});
    Baseline twice;
    REQUIRE(ParseBaseline(FormatBaseline({{&before.analysis, pairs}, {&before.analysis, pairs}}, "x"),
                          "twice.txt", &twice, &error));
    CHECK(twice.runs == 2);
    CHECK(twice.units == 2 * baseline.units);
    REQUIRE(twice.allowed.size() == baseline.allowed.size());
    for (const auto& [key, rates] : baseline.allowed) {
      CHECK(twice.allowed.at(key).per_call == Approx(rates.per_call));
      CHECK(twice.allowed.at(key).bounded == Approx(rates.bounded));
    }
    REQUIRE(twice.site_runs.size() == baseline.site_runs.size());
    for (const auto& [site, runs] : baseline.site_runs) {
      REQUIRE(runs.size() == 1);
      REQUIRE(twice.site_runs.at(site).size() == 2);
      for (const SiteRunCount& c : twice.site_runs.at(site)) {
        CHECK(c.objects == runs[0].objects);
        CHECK(c.crossed == runs[0].crossed);
      }
      CHECK(twice.sites.at(site) == Approx(baseline.sites.at(site)));
    }
  }

  auto gate = [&](const Analysis& a, const std::vector<Suppression>& s, double max_growth) {
    GateResult g;
    REQUIRE(EvaluateGate(a, baseline, s, {.max_growth = max_growth}, &g, &error));
    return g;
  };
  GateResult same = gate(before.analysis, {}, 1.5);
  CHECK(same.passed());
  CHECK(same.allowed == 3);  // three allocation groups

  GateResult r = gate(after.analysis, {}, 1.5);
  CHECK_FALSE(r.passed());
  REQUIRE(r.offenses.size() == 2);  // the new log group, and slices grew 1.7x
  size_t new_count = std::count_if(r.offenses.begin(), r.offenses.end(), [](const GateOffense& o) {
    return o.verdict == GateVerdict::kNew;
  });
  CHECK(new_count == 1);
  CHECK(r.gone.size() == 1);  // the call pair is fixed
  CheckGolden("gate-fail.txt",
              RenderGateText(after.analysis, r,
                             "crossfree gate --write-baseline --baseline B after.trc"));
  // The CI formats of the same verdict (ci_formats_test.py validates them:
  // SARIF against the published schema, JUnit's structure).
  const std::string accept = "crossfree gate --write-baseline --baseline B after.trc";
  CheckGolden("gate-fail.junit.xml", RenderGateJunit(after.analysis, r, accept));
  CheckGolden("gate-fail.github.txt", RenderGateGithub(after.analysis, r, accept, "/src"));
  CheckGolden("gate-fail.sarif", RenderGateSarif(after.analysis, r, accept, "/src"));

  // A looser growth limit lets the grown group through.
  GateResult loose = gate(after.analysis, {}, 10.0);
  REQUIRE(loose.offenses.size() == 1);
  CHECK(loose.offenses[0].verdict == GateVerdict::kNew);

  // Suppressing the new pair (with a reason) passes the loose gate.
  std::vector<Suppression> suppressions;
  REQUIRE(ParseSuppressions("# log buffers are handed to the reactor on purpose\n"
                            "pattern: alloc: Log::Flush <-\n"
                            "reason: handed over by design, see KUDU-0000\n",
                            "supp", &suppressions, &error));
  GateResult suppressed = gate(after.analysis, suppressions, 10.0);
  CHECK(suppressed.passed());
  CHECK(suppressed.suppressed.size() == 1);
  CheckGolden("gate-pass.txt", RenderGateText(after.analysis, suppressed, "unused"));
}

// A file's text and the one error it must be refused with.
struct Malformed {
  const char* text;
  const char* error;
};

TEST_CASE("gate: malformed baseline and suppression files are errors naming the line") {
  const Malformed baselines[] = {
      {"allow 1 x\n", "b.txt:1: not a crossfree baseline (expected 'crossfree-baseline 4' first)"},
      {"crossfree-baseline 1\nallow fast x\n",
       "b.txt:2: bad rate 'fast' (objects per 1000 allocations)"},
      {"# only a comment\n", "b.txt: empty baseline (no 'crossfree-baseline 4' line)"},
      {"crossfree-baseline 2\nallow 1 0 x\n", "b.txt:2: 'allow' before the 'unit' line"},
      {"crossfree-baseline 2\nunit calls\n",
       "b.txt:2: expected one 'unit operation' or 'unit 1000-allocations' before the 'allow' lines"},
      {"crossfree-baseline 2\nunit operation\nallow 1 x\n", "b.txt:3: bad bounded rate 'x'"},
      {"crossfree-baseline 2\nunit operation\nallow 1 2\n", "b.txt:3: 'allow' without a pair key"},
      {"crossfree-baseline 2\n", "b.txt: no 'unit' line"},
      {"crossfree-baseline 3\nunit operation\nunits 100\n",
       "b.txt:3: expected 'units <units> <steady units>' (steady <= all)"},
      {"crossfree-baseline 3\nunit operation\nunits 100 120\n",
       "b.txt:3: expected 'units <units> <steady units>' (steady <= all)"},
      {"crossfree-baseline 3\nunit operation\nsite 1.5 x\n",
       "b.txt:3: expected 'site <objects per unit> <crossing share> <alloc site>'"},
      {"crossfree-baseline 3\nunit operation\nsite 1.5 1.2 x\n",
       "b.txt:3: expected 'site <objects per unit> <crossing share> <alloc site>'"},
      {"crossfree-baseline 2\nunit operation\nunits 100 90\n",
       "b.txt:3: expected 'allow <per-call rate> <bounded rate> <pair key>'"},
      {"crossfree-baseline 4\nunit operation\nruns 0\n",
       "b.txt:3: expected 'runs <number of runs, at least 1>'"},
      {"crossfree-baseline 4\nunit operation\nruns 2 x\n",
       "b.txt:3: expected 'runs <number of runs, at least 1>'"},
      {"crossfree-baseline 4\nunit operation\nsite-runs 2 10:3 x\n",
       "b.txt:3: expected 'site-runs <runs> <objects>:<crossed>... <alloc site>' (crossed <= "
       "objects)"},
      {"crossfree-baseline 4\nunit operation\nsite-runs 1 10:11 x\n",
       "b.txt:3: expected 'site-runs <runs> <objects>:<crossed>... <alloc site>' (crossed <= "
       "objects)"},
      {"crossfree-baseline 4\nunit operation\nsite-runs 1 10:3\n",
       "b.txt:3: expected 'site-runs <runs> <objects>:<crossed>... <alloc site>' (crossed <= "
       "objects)"},
      {"crossfree-baseline 3\nunit operation\nruns 2\n",
       "b.txt:3: expected 'allow <per-call rate> <bounded rate> <pair key>'"},
  };
  Baseline b;
  std::string error;
  for (const Malformed& m : baselines) {
    INFO("baseline: " << m.text);
    b = {};
    CHECK_FALSE(ParseBaseline(m.text, "b.txt", &b, &error));
    CHECK(error == m.error);
  }

  // Version 1 is still read: its rate is per-call, per 1000 allocations.
  b = {};
  REQUIRE(ParseBaseline("crossfree-baseline 1\nallow 2.5 a -> b | alloc: x | free: y\n", "b.txt", &b,
                        &error));
  CHECK_FALSE(b.per_operation);
  CHECK(b.allowed.at("a -> b | alloc: x | free: y").per_call == 2.5);
  CHECK(b.allowed.at("a -> b | alloc: x | free: y").bounded == 0);
  b = {};
  REQUIRE(ParseBaseline("crossfree-baseline 2\nunit operation\nallow 1.5 0.25 a -> b | alloc: x | free: y\n",
                        "b.txt", &b, &error));
  CHECK(b.per_operation);
  CHECK(b.allowed.at("a -> b | alloc: x | free: y").bounded == 0.25);
  CHECK(b.units == 0);  // version 2: rates taken as exact
  b = {};
  REQUIRE(ParseBaseline("crossfree-baseline 3\nunit operation\nunits 300 270.5\n"
                        "allow 0.1 0 a -> b | alloc: x | free: y\nsite 0.4 0.25 x\n",
                        "b.txt", &b, &error));
  CHECK(b.units == 300);
  CHECK(b.steady_units == 270.5);
  CHECK(b.sites.at("x") == 0.4);
  CHECK(b.site_shares.at("x") == 0.25);
  CHECK(b.runs == 1);
  CHECK(b.site_runs.empty());  // version 3: counts from rate x units
  b = {};
  REQUIRE(ParseBaseline("crossfree-baseline 4\nunit operation\nunits 600 540\nruns 2\n"
                        "allow 0.1 0 a -> b | alloc: x <- y | free: z\nsite 0.4 0.25 x <- y\n"
                        "site-runs 2 130:30 110:30 x <- y\n",
                        "b.txt", &b, &error));
  CHECK(b.runs == 2);
  REQUIRE(b.site_runs.at("x <- y").size() == 2);
  CHECK(b.site_runs.at("x <- y")[0].objects == 130);
  CHECK(b.site_runs.at("x <- y")[0].crossed == 30);
  CHECK(b.site_runs.at("x <- y")[1].objects == 110);

  const Malformed suppression_files[] = {
      {"pattern: foo\npattern: bar\nreason: x\n", "s.txt:1: suppression 'foo' has no 'reason:' line"},
      {"\n# c\npattern: foo\n", "s.txt:3: suppression 'foo' has no 'reason:' line"},
      {"reason: r\n", "s.txt:1: 'reason:' without a 'pattern:' before it"},
  };
  std::vector<Suppression> s;
  for (const Malformed& m : suppression_files) {
    INFO("suppressions: " << m.text);
    s.clear();
    CHECK_FALSE(ParseSuppressions(m.text, "s.txt", &s, &error));
    CHECK(error == m.error);
  }
  // The regex library's own words follow the pattern.
  s.clear();
  CHECK_FALSE(ParseSuppressions("pattern: (\nreason: r\n", "s.txt", &s, &error));
  CHECK(error.rfind("s.txt:1: bad pattern '(':", 0) == 0);
}

TEST_CASE("roles fold digit runs, unnamed threads are main or thread") {
  CHECK(FoldDigits("reactor-0") == "reactor-N");
  CHECK(FoldDigits("reactor-13") == "reactor-N");
  CHECK(FoldDigits("io2x33") == "ioNxN");
  CHECK(FoldDigits("") == "");
  CHECK(ThreadRole("", 10, 10) == "main");
  CHECK(ThreadRole("", 11, 10) == "thread");
  CHECK(ThreadRole("worker-7", 11, 10) == "worker-N");
  // The name Linux gives threads that never named themselves.
  CHECK(IsInheritedName("crossfree-workl", "/build/bin/crossfree-workload"));
  CHECK(IsInheritedName("rpc-demo", "/usr/bin/rpc-demo"));
  CHECK_FALSE(IsInheritedName("reactor-0", "/usr/bin/rpc-demo"));
  CHECK_FALSE(IsInheritedName("", "/usr/bin/rpc-demo"));
}

TEST_CASE("a name that is inherited through a versioned symlink is no name") {
  // /usr/bin/python3 -> python3.11: threads are called "python3".
  CHECK(IsInheritedName("python3", "/usr/bin/python3.11"));
  CHECK(IsInheritedName("gcc", "/usr/bin/gcc-12"));
  CHECK(IsInheritedName("launcher", "/opt/x/real-binary", "launcher"));
  CHECK_FALSE(IsInheritedName("py", "/usr/bin/python3.11"));
  CHECK_FALSE(IsInheritedName("worker", "/opt/x/real-binary", "launcher"));
}

TEST_CASE("names lose the return type the demangler puts before template instances") {
  CHECK(CallableName("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
                     "__gnu_cxx::__normal_iterator<int*, std::vector<int> >, int const&)") ==
        "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>("
        "__gnu_cxx::__normal_iterator<int*, std::vector<int> >, int const&)");
  CHECK(CallableName("long std::__invoke_impl<long, F>(std::__invoke_other, F&&)") ==
        "std::__invoke_impl<long, F>(std::__invoke_other, F&&)");
  CHECK(CallableName("char const* Name<int>()") == "Name<int>()");
  CHECK(CallableName("operator new(unsigned long)") == "operator new(unsigned long)");
  CHECK(CallableName("ns::operator delete[](void*)") == "ns::operator delete[](void*)");
  CHECK(CallableName("(anonymous namespace)::Producer(int)") == "(anonymous namespace)::Producer(int)");
  CHECK(CallableName("gpr_malloc") == "gpr_malloc");
  CHECK(BareFunctionName("(anonymous namespace)::Producer(int)") == "Producer");
  CHECK(BareFunctionName("void Pool<int>::Run<Task>(Task&&)") == "Run");
  CHECK(BareFunctionName("consumer") == "consumer");
  // node: a nested unnamed namespace is a scope too (issue 31).
  CHECK(BareFunctionName("node::(anonymous namespace)::PlatformWorkerThread(void*)") ==
        "PlatformWorkerThread");
}

namespace {
class TableResolver : public SymbolResolver {
 public:
  explicit TableResolver(std::map<uint64_t, std::string> names) {
    for (auto& [a, n] : names) {
      SymbolFrame f;
      f.address = a;
      f.function = n;
      table_[a] = {f};
    }
  }
  const std::vector<SymbolFrame>& Resolve(size_t, uint64_t address) override {
    return table_.at(address);
  }

 private:
  std::map<uint64_t, std::vector<SymbolFrame>> table_;
};
}  // namespace

TEST_CASE("default skips see through return types and library allocation wrappers") {
  TableResolver resolver({
      {1, "gpr_malloc"},
      {2, "void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(int const&)"},
      {3, "long std::__invoke_impl<long, F>(std::__invoke_other, F&&)"},
      {4, "void std::__new_allocator<Call>::construct<Call>(Call*)"},
      {5, "xstrdup"},
      {6, "sqlite3Malloc"},
      {7, "PyObject_Malloc"},
      {8, "zmalloc"},
      {9, "Server::Handle(Request const&)"},
      {10, "main"},
  });
  ProcessTrace trace;
  trace.stacks[1] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  SiteOptions options;
  options.depth = 2;
  std::string error;
  auto sites = SiteBuilder::Create(options, &resolver, &error);
  REQUIRE(sites);
  CHECK(sites->Get(0, trace, 1).key == "Server::Handle <- main");
}

TEST_CASE("text never cuts file:line, the function name gives way") {
  Site site;
  SymbolFrame f;
  f.function = "very::long::name::space::Function<with, many, template, arguments>(int, long)";
  f.file = "/src/a_rather_long_source_file_name_for_the_test.cc";
  f.line = 12345;
  site.frames = {f};
  std::string narrow = SiteText(site, "allocated at  ", 4, 70);
  CHECK(narrow.find("a_rather_long_source_file_name_for_the_test.cc:12345") != std::string::npos);
  CHECK(narrow.find("...") != std::string::npos);  // the name was shortened
  std::string whole = SiteText(site, "allocated at  ", 4, 0);
  CHECK(whole.find(f.function) != std::string::npos);
  CHECK(whole.find("...") == std::string::npos);
}

TEST_CASE("size classes follow the documented table") {
  // {request size, bytes of its class}
  const std::pair<uint64_t, uint64_t> classes[] = {
      {0, 8},       {1, 8},       {8, 8},       {9, 16},       {17, 32},
      {33, 48},     {129, 160},   {257, 320},   {513, 640},    {1025, 1280},
      {4096, 4096}, {4097, 5120}, {256 << 10, 256 << 10},
  };
  for (const auto& [size, bytes] : classes) {
    INFO("request of " << size << " bytes");
    CHECK(SizeClassBytes(SizeClassIndex(size)) == bytes);
  }
  CHECK(SizeClassIndex((256 << 10) + 1) == kLargeSizeClass);
}

}  // namespace
}  // namespace crossfree::analyzer
