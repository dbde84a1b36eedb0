// SPDX-License-Identifier: Apache-2.0
// The report's central free-list section on a synthetic trace written with
// the real writer: exact counts per role and per thread, the sites that
// triggered the transfers, and the text/JSON output.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/render/text.h"
#include "analyzer/render/json.h"
#include "format/trace_writer.h"

namespace crossfree::analyzer {

// For the failure messages of the checks that compare whole CentralCounts.
std::ostream& operator<<(std::ostream& os, const CentralCounts& c) {
  return os << "{fetch " << c.fetch << ", release " << c.release << ", insert_range "
            << c.insert_range << ", remove_range " << c.remove_range << ", fetched_objects "
            << c.fetched_objects << ", released_objects " << c.released_objects << "}";
}

// The models are checked as the renderers print them.
using namespace crossfree::analyzer::render;
namespace {

using format::CentralOp;

// One chunk per thread, in tid order.
class Builder {
 public:
  using Step = std::function<void(format::ChunkWriter&)>;
  void Add(uint32_t tid, Step step) { steps_[tid].push_back(std::move(step)); }
  std::vector<uint8_t> Finish() {
    std::vector<uint8_t> file(256);
    format::HeaderFields h;
    h.pid = 100;
    const char exe[] = "/bin/central-synthetic";
    file.resize(format::EncodeFileHeader(h, exe, sizeof(exe) - 1, file.data(), file.size()));
    for (auto& [tid, steps] : steps_) {
      std::vector<uint8_t> buf(format::ChunkWriter::kMinChunkCapacity);
      format::ChunkWriter w(buf.data(), buf.size());
      w.Begin(tid, 0, 1000);
      for (auto& s : steps) s(w);
      size_t n = w.Finish();
      file.insert(file.end(), buf.begin(), buf.begin() + n);
    }
    return file;
  }

 private:
  std::map<uint32_t, std::vector<Step>> steps_;
};

void Name(Builder& b, uint32_t tid, const char* name) {
  b.Add(tid, [=](format::ChunkWriter& w) { REQUIRE(w.AppendThreadName(1001, name, strlen(name))); });
}
void Central(Builder& b, uint32_t tid, int times, CentralOp op, uint32_t cl, uint64_t count,
             uint32_t stack) {
  for (int i = 0; i < times; ++i) {
    b.Add(tid, [=](format::ChunkWriter& w) { REQUIRE(w.AppendCentral(op, 2000 + i, cl, count, stack)); });
  }
}

std::vector<uint8_t> MakeTrace() {
  Builder b;
  Name(b, 101, "worker-1");
  Name(b, 102, "worker-2");
  Name(b, 103, "reactor-0");
  static const uint64_t s1[] = {0x1000, 0x2000};
  static const uint64_t s2[] = {0x3000};
  b.Add(101, [](format::ChunkWriter& w) { REQUIRE(w.AppendStack(1, s1, 2)); });
  b.Add(103, [](format::ChunkWriter& w) { REQUIRE(w.AppendStack(2, s2, 1)); });
  Central(b, 101, 5, CentralOp::kRemoveRange, 3, 10, 1);
  Central(b, 101, 5, CentralOp::kFetch, 3, 10, 1);
  Central(b, 102, 2, CentralOp::kRemoveRange, 3, 4, 1);
  Central(b, 102, 2, CentralOp::kFetch, 3, 4, 1);
  Central(b, 103, 4, CentralOp::kInsertRange, 3, 24, 2);
  Central(b, 103, 3, CentralOp::kRelease, 3, 32, 2);
  Central(b, 100, 1, CentralOp::kRelease, 5, 7, format::kNoStack);
  // One ordinary event, so the trace is not empty of allocations.
  b.Add(100, [](format::ChunkWriter& w) { REQUIRE(w.AppendAlloc(format::AllocFn::kMalloc, 3000, 0x5000, 16, 0)); });
  return b.Finish();
}

Analysis Run(const std::vector<uint8_t>& bytes, GroupBy by) {
  TraceSet set;
  std::string error;
  REQUIRE(set.AddBytes(bytes, "synthetic.trace", &error));
  AnalysisOptions options;
  options.by = by;
  Analysis a;
  REQUIRE(Analyze(set, options, nullptr, &a, &error));
  return a;
}

TEST_CASE("central section: exact counts per role, sites that triggered them") {
  std::vector<uint8_t> bytes = MakeTrace();
  Analysis a = Run(bytes, GroupBy::kRole);
  const CentralSummary& c = a.central;
  REQUIRE(c.present());
  CHECK(c.total == CentralCounts{.fetch = 7, .release = 4, .insert_range = 4, .remove_range = 7,
                                  .fetched_objects = 58, .released_objects = 103});
  REQUIRE(c.roles.size() == 3);
  CHECK(c.roles[0].role == "worker-N");
  CHECK(c.roles[0].counts.fetch == 7);
  CHECK(c.roles[0].counts.release == 0);
  CHECK(c.roles[0].counts.remove_range == 7);
  CHECK(c.roles[1].role == "reactor-N");
  CHECK(c.roles[1].counts.release == 3);
  CHECK(c.roles[1].counts.insert_range == 4);
  CHECK(c.roles[1].counts.released_objects == 96);
  CHECK(c.roles[2].role == "main");
  CHECK(c.roles[2].counts.release == 1);
  CHECK(c.roles[2].counts.released_objects == 7);
  REQUIRE(c.sites.size() == 3);
  CHECK(c.sites_total == 3);
  CHECK(c.sites[0].op == CentralOp::kFetch);
  CHECK(c.sites[0].role == "worker-N");
  CHECK(c.sites[0].calls == 7);
  CHECK(c.sites[0].objects == 58);
  CHECK(c.sites[0].site.key == "0x1000 <- 0x2000");
  CHECK(c.sites[1].op == CentralOp::kRelease);
  CHECK(c.sites[1].role == "reactor-N");
  CHECK(c.sites[1].calls == 3);
  CHECK(c.sites[1].site.key == "0x3000");
  CHECK(c.sites[2].role == "main");
  CHECK(c.sites[2].calls == 1);
  CHECK(c.sites[2].site.key == "(no stack)");

  ReportOptions ro;
  std::string text = RenderReportText(a, ro);
  CHECK(text.find("Central free-list transfers (tcmalloc): 7 fetches, 4 releases per role") !=
        std::string::npos);
  CHECK(text.find("  worker-N                       7           0            7            0"
                  "          58           0\n") != std::string::npos);
  CHECK(text.find("            7  fetch   worker-N       0x1000 <- 0x2000\n") != std::string::npos);
  std::string json = RenderReportJson(a, ro);
  CHECK(json.find("\"central\": {\"fetch\": 7, \"release\": 4, \"remove_range\": 7, "
                  "\"insert_range\": 4, \"fetched_objects\": 58, \"released_objects\": 103,") !=
        std::string::npos);
  CHECK(json.find("{\"role\": \"reactor-N\", \"fetch\": 0, \"release\": 3,") != std::string::npos);
}

TEST_CASE("central section by thread splits the roles into threads") {
  Analysis a = Run(MakeTrace(), GroupBy::kThread);
  std::map<std::string, CentralCounts> rows;
  for (const CentralRoleRow& r : a.central.roles) rows[r.role] = r.counts;
  REQUIRE(rows.size() == 4);
  CHECK(rows["worker-1 (101)"].fetch == 5);
  CHECK(rows["worker-1 (101)"].fetched_objects == 50);
  CHECK(rows["worker-2 (102)"].fetch == 2);
  CHECK(rows["reactor-0 (103)"].release == 3);
  CHECK(rows["main (100)"].release == 1);
}

TEST_CASE("no central records: no section, no JSON key") {
  Builder b;
  b.Add(100, [](format::ChunkWriter& w) { REQUIRE(w.AppendAlloc(format::AllocFn::kMalloc, 3000, 0x5000, 16, 0)); });
  Analysis a = Run(b.Finish(), GroupBy::kRole);
  CHECK_FALSE(a.central.present());
  CHECK(RenderReportText(a, ReportOptions()).find("Central") == std::string::npos);
  CHECK(RenderReportJson(a, ReportOptions()).find("\"central\"") == std::string::npos);
}

}  // namespace
}  // namespace crossfree::analyzer
