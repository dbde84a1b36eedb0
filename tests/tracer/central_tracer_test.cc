// SPDX-License-Identifier: Apache-2.0
// The tracer's tcmalloc interposers, end to end: central_target runs under
// LD_PRELOAD=tracer:tccount:libtcmalloc.so.4. Our hooks forward (RTLD_NEXT)
// to the counting preload's, which forward to tcmalloc's, so the oracle
// counts exactly the calls the trace should hold. Per thread, the recorded
// fetch/release calls and objects must equal the oracle's.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "tests/tracer/tracer_test_util.h"

namespace {

namespace fs = std::filesystem;
using crossfree::format::CentralEvent;
using crossfree::format::CentralOp;

struct Counts {
  uint64_t fetch = 0, fetched = 0, release = 0, released = 0, insert = 0, remove = 0;
  std::string name;
};

// Runs the target with extra environment entries (LD_PRELOAD among them);
// returns its exit status (tracer_test::Run: 128 + signal, -1 if it did not
// start or timed out).
int Run(const std::vector<std::string>& extra_env) {
  crossfree::tracer_test::RunResult r =
      crossfree::tracer_test::Run({CROSSFREE_CENTRAL_TARGET}, extra_env, "");
  UNSCOPED_INFO("central_target: exit " << r.exit_code << ", stderr:\n" << r.err);
  return r.exit_code;
}

struct TraceCounts : crossfree::format::RecordVisitor {
  std::map<uint32_t, Counts> by_tid;
  uint64_t allocs = 0;
  void OnEvent(const crossfree::format::Event& e) override {
    allocs += e.op == crossfree::format::EventOp::kAlloc;
  }
  std::map<uint32_t, Counts> by_tracer;  // calls the tracer's bookkeeping caused
  void OnCentral(const CentralEvent& c) override {
    Counts& n = c.by_tracer ? by_tracer[c.tid] : by_tid[c.tid];
    switch (c.op) {
      case CentralOp::kFetch:
        ++n.fetch;
        n.fetched += c.count;
        break;
      case CentralOp::kRelease:
        ++n.release;
        n.released += c.count;
        break;
      case CentralOp::kInsertRange:
        ++n.insert;
        break;
      case CentralOp::kRemoveRange:
        ++n.remove;
        break;
    }
  }
  void OnThreadName(uint32_t tid, uint64_t, std::string_view name) override {
    by_tid[tid].name = std::string(name);
  }
};

TraceCounts ReadTrace(const fs::path& dir) {
  TraceCounts v;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".trace") continue;
    ++files;
    std::string error;
    auto reader = crossfree::format::TraceReader::Open(e.path(), &error);
    REQUIRE(reader);
    crossfree::format::Chunk chunk;
    crossfree::format::ReadResult r;
    while ((r = reader->NextChunk(&chunk)) == crossfree::format::ReadResult::kChunk) {
      REQUIRE(crossfree::format::DecodeChunk(chunk, v, &error));
    }
    REQUIRE(r == crossfree::format::ReadResult::kEnd);
  }
  REQUIRE(files == 1);
  return v;
}

std::map<uint32_t, Counts> ReadOracle(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::map<uint32_t, Counts> out;
  std::regex row(
      "\\{\"tid\": (\\d+), \"name\": \"([^\"]*)\", \"fetch_calls\": (\\d+), "
      "\"fetched_objects\": (\\d+), \"release_calls\": (\\d+), \"released_objects\": (\\d+)");
  for (std::sregex_iterator it(text.begin(), text.end(), row), end; it != end; ++it) {
    Counts& c = out[std::stoul((*it)[1])];
    c.name = (*it)[2];
    c.fetch = std::stoull((*it)[3]);
    c.fetched = std::stoull((*it)[4]);
    c.release = std::stoull((*it)[5]);
    c.released = std::stoull((*it)[6]);
  }
  REQUIRE(!out.empty());
  return out;
}

std::string Preload(bool tracer, bool tccount) {
  std::string p;
  if (tracer) p += std::string(CROSSFREE_TRACER_LIB) + ":";
  if (tccount) p += std::string(CROSSFREE_TCCOUNT_LIB) + ":";
  return "LD_PRELOAD=" + p + CROSSFREE_TCMALLOC_SO;
}

}  // namespace

TEST_CASE("recorded central calls equal the counting preload's, per thread") {
  fs::path dir = crossfree::tracer_test::MakeTempDir();
  REQUIRE(Run({Preload(true, true), "CROSSFREE_OUTPUT=" + (dir / "t.%p.trace").string(),
               "CROSSFREE_TCCOUNT_OUTPUT=" + (dir / "oracle.json").string()}) == 0);
  TraceCounts trace = ReadTrace(dir);
  std::map<uint32_t, Counts> oracle = ReadOracle(dir / "oracle.json");
  uint64_t producer_fetches = 0, consumer_releases = 0;
  for (const auto& [tid, o] : oracle) {
    INFO("tid " << tid << " (" << o.name << ")");
    const Counts& t = trace.by_tid[tid];
    const Counts& own = trace.by_tracer[tid];
    if (o.name == "producer" || o.name == "consumer") {
      // Threads that start and end while the tracer records: every call,
      // the target's plus those the tracer's own bookkeeping caused.
      CHECK(t.fetch + own.fetch == o.fetch);
      CHECK(t.fetched + own.fetched == o.fetched);
      CHECK(t.release + own.release == o.release);
      CHECK(t.released + own.released == o.released);
      CHECK(own.fetch + own.release <= 32);  // a few per thread (stack capture set-up)
    } else {
      // The main thread also makes calls before recording starts (tcmalloc's
      // and the tracer's own start-up) and after the exit flush: a subset.
      CHECK(t.fetch <= o.fetch);
      CHECK(t.release <= o.release);
    }
    // RemoveRange is called once per fetch; InsertRange once per release batch.
    CHECK(t.remove == t.fetch);
    CHECK(t.insert >= t.release);
    if (o.name == "producer") producer_fetches = o.fetch;
    if (o.name == "consumer") consumer_releases = o.release;
  }
  // Every thread of the trace that has central records is known to the oracle.
  for (const auto& [tid, t] : trace.by_tid) {
    if (t.fetch + t.release + t.insert + t.remove > 0) CHECK(oracle.count(tid) == 1);
  }
  // 20000 x 64 B: the producer refills its cache many times, the consumer
  // overflows many times (at most 32 per batch at the start, then larger).
  CHECK(producer_fetches >= 20000 / 512);
  CHECK(consumer_releases >= 20000 / 512);
}

TEST_CASE("CROSSFREE_CENTRAL=0 records no central call, events still recorded") {
  fs::path dir = crossfree::tracer_test::MakeTempDir();
  REQUIRE(Run({Preload(true, true), "CROSSFREE_CENTRAL=0",
               "CROSSFREE_OUTPUT=" + (dir / "t.%p.trace").string(),
               "CROSSFREE_TCCOUNT_OUTPUT=" + (dir / "oracle.json").string()}) == 0);
  TraceCounts trace = ReadTrace(dir);
  std::map<uint32_t, Counts> oracle = ReadOracle(dir / "oracle.json");
  uint64_t oracle_calls = 0;
  for (const auto& [tid, o] : oracle) oracle_calls += o.fetch + o.release;
  CHECK(oracle_calls > 0);  // the calls happened and were forwarded
  for (const auto& [tid, t] : trace.by_tid) {
    CHECK(t.fetch + t.release + t.insert + t.remove == 0);
  }
  CHECK(trace.allocs >= 20000);
}

TEST_CASE("without tcmalloc: no central records, no crash") {
  fs::path dir = crossfree::tracer_test::MakeTempDir();
  REQUIRE(Run({std::string("LD_PRELOAD=") + CROSSFREE_TRACER_LIB,
               "CROSSFREE_OUTPUT=" + (dir / "t.%p.trace").string()}) == 0);
  TraceCounts trace = ReadTrace(dir);
  for (const auto& [tid, t] : trace.by_tid) {
    CHECK(t.fetch + t.release + t.insert + t.remove == 0);
  }
  CHECK(trace.allocs >= 20000);
}

TEST_CASE("tracer and tcmalloc without the counting preload: hooks forward straight to tcmalloc") {
  fs::path dir = crossfree::tracer_test::MakeTempDir();
  REQUIRE(Run({Preload(true, false), "CROSSFREE_OUTPUT=" + (dir / "t.%p.trace").string()}) == 0);
  TraceCounts trace = ReadTrace(dir);
  uint64_t producer = 0, consumer = 0;
  for (const auto& [tid, t] : trace.by_tid) {
    if (t.name == "producer") producer = t.fetch;
    if (t.name == "consumer") consumer = t.release;
  }
  CHECK(producer >= 20000 / 512);
  CHECK(consumer >= 20000 / 512);
}
