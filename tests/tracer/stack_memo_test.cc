// SPDX-License-Identifier: Apache-2.0
// The tracer's per-event shortcuts change no result:
//  - the hybrid walk memo (a thread replays the unchanged outer frames of its
//    previous walk) runs under CROSSFREE_STACK_CHECK=1 on the known-answer
//    workloads and targets: every capture is walked in full as well and the
//    process aborts on any difference, so a passing run proves every stack
//    exact; and the memo on or off gives the same stacks on a deterministic
//    target;
//  - the totals chunk the tracer writes at exit holds the file's counts, and
//    `crossfree record` prints them without decoding the trace.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "format/trace_reader.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

std::string WorkloadPath() { return CROSSFREE_WORKLOAD; }

// "expected: allocs=A frees=F ..." from the workload's stdout.
uint64_t ExpectedEvents(const std::string& out) {
  unsigned long long a = 0, f = 0;
  auto at = out.find("expected:");
  REQUIRE(at != std::string::npos);
  REQUIRE(std::sscanf(out.c_str() + at, "expected: allocs=%llu frees=%llu", &a, &f) == 2);
  return a + f;
}

std::string OnlyTrace(const std::string& dir) {
  return dir + "/trace";
}

// The totals chunk at the end of path, if any.
bool TailTotals(const std::string& path, format::TraceTotals* totals) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  uint8_t tail[format::kTotalsChunkBytes];
  bool ok = fstat(fd, &st) == 0 && st.st_size >= static_cast<off_t>(sizeof(tail)) &&
            pread(fd, tail, sizeof(tail), st.st_size - static_cast<off_t>(sizeof(tail))) ==
                static_cast<ssize_t>(sizeof(tail)) &&
            format::ParseTotalsChunk(tail, totals);
  close(fd);
  return ok;
}

struct WorkloadCase {
  const char* name;
  std::vector<std::string> args;
};

const std::vector<WorkloadCase>& Cases() {
  static const std::vector<WorkloadCase> cases = {
      {"deep mixed", {"--mode", "mixed", "--churn", "0", "--fns", "all", "--nest", "10",
                      "--objects", "20000"}},
      {"deep producer-consumer with churn",
       {"--mode", "producer-consumer", "--churn", "2", "--fns", "all", "--nest", "6",
        "--objects", "10000"}},
      // Deeper than CROSSFREE_DEPTH (32) and than the memo (48 steps).
      {"very deep churn", {"--mode", "churn", "--producers", "3", "--nest", "60",
                           "--objects", "5000"}},
      {"shallow mixed", {"--mode", "mixed", "--objects", "10001", "--consumers", "3"}},
  };
  return cases;
}

}  // namespace

TEST_CASE("stack memo: check mode finds no difference on the known-answer workloads",
          "[stacks][memo]") {
  for (const WorkloadCase& c : Cases()) {
    for (const char* depth : {"32", "8"}) {
      INFO(c.name << ", CROSSFREE_DEPTH=" << depth);
      const std::string dir = MakeTempDir();
      std::vector<std::string> argv = {WorkloadPath()};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      RunResult run = Run(argv,
                          {"CROSSFREE_OUTPUT=" + OnlyTrace(dir), "CROSSFREE_UNWIND=hybrid",
                           "CROSSFREE_STACK_CHECK=1", std::string("CROSSFREE_DEPTH=") + depth},
                          CROSSFREE_TRACER_LIB);
      INFO(run.err);
      REQUIRE(run.exit_code == 0);
      Trace t = LoadTrace(OnlyTrace(dir));
      REQUIRE(t.complete);
      // The workload's own events, plus the C runtime's few.
      const uint64_t expected = ExpectedEvents(run.out);
      CHECK(t.events.size() >= expected);
      CHECK(t.events.size() <= expected + 64);
      size_t without_stack = 0;
      for (const format::Event& e : t.events) {
        if (e.stack_id == format::kNoStack || t.stacks.count(e.stack_id) == 0) ++without_stack;
      }
      CHECK(without_stack == 0);
    }
  }
}

TEST_CASE("stack memo: check mode finds no difference on the tracer's targets",
          "[stacks][memo]") {
  for (const char* target : {"tt_churn", "tt_prodcons", "tt_threads", "tt_all_functions",
                             "tt_realloc", "tt_adversarial"}) {
    INFO(target);
    const std::string dir = MakeTempDir();
    RunResult run = RunTraced(target, dir, {}, {"CROSSFREE_STACK_CHECK=1"});
    INFO(run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.err.find("CROSSFREE_STACK_CHECK") == std::string::npos);
  }
}

// A frame as module path + offset from its load bias: the same in two runs
// whatever the address randomisation.
std::string Place(const Trace& t, uint64_t pc) {
  for (const format::Module& m : t.modules) {
    for (const format::ModuleSegment& seg : m.segments) {
      if (pc >= seg.start && pc < seg.start + seg.size) {
        return m.path + "+" + std::to_string(pc - m.load_bias);
      }
    }
  }
  return "?" + std::to_string(pc);
}

TEST_CASE("stack memo: threads with PTHREAD_STACK_MIN stacks start and record",
          "[stacks][memo]") {
  // The memo lives in the thread state, not in static TLS (which glibc
  // carves out of each thread's stack).
  for (const char* unwind : {"hybrid", "fp"}) {
    INFO(unwind);
    const std::string dir = MakeTempDir();
    RunResult run = RunTraced("tt_small_stack", dir, {},
                              {std::string("CROSSFREE_UNWIND=") + unwind, "CROSSFREE_STACK_CHECK=1"});
    INFO(run.out << run.err);
    CHECK(run.exit_code == 0);
    CHECK(run.out == "ok 8\n");
    Trace t = LoadTrace(dir + "/trace");
    CHECK(t.complete);
    CHECK(t.events.size() >= 8 * 400);
  }
}

TEST_CASE("stack memo: the memo on and off give the same stacks", "[stacks][memo]") {
  // The same deterministic single-producer run twice: the stacks (frames
  // as module offsets, per id: one thread hands out the ids in first-seen
  // order) must be identical.
  std::vector<std::vector<std::string>> stacks[2];
  size_t events[2] = {0, 0};
  for (int memo = 0; memo < 2; ++memo) {
    const std::string dir = MakeTempDir();
    RunResult run = Run({WorkloadPath(), "--mode", "churn", "--producers", "1", "--nest", "12",
                         "--fns", "all", "--objects", "3000"},
                        {"CROSSFREE_OUTPUT=" + OnlyTrace(dir), "CROSSFREE_UNWIND=hybrid",
                         std::string("CROSSFREE_STACK_MEMO=") + (memo ? "1" : "0")},
                        CROSSFREE_TRACER_LIB);
    REQUIRE(run.exit_code == 0);
    Trace t = LoadTrace(OnlyTrace(dir));
    REQUIRE(t.complete);
    for (const auto& [id, frames] : t.stacks) {
      std::vector<std::string> places;
      for (uint64_t pc : frames) places.push_back(Place(t, pc));
      stacks[memo].push_back(places);
    }
    events[memo] = t.events.size();
  }
  CHECK(events[0] == events[1]);
  CHECK(stacks[0].size() == stacks[1].size());
  CHECK(stacks[0] == stacks[1]);
}

TEST_CASE("totals: the trace ends with the tracer's counts, equal to a full decode",
          "[record][totals]") {
  const std::string dir = MakeTempDir();
  RunResult run = Run({WorkloadPath(), "--mode", "mixed", "--objects", "20000", "--churn", "1",
                       "--fns", "all"},
                      {"CROSSFREE_OUTPUT=" + OnlyTrace(dir)}, CROSSFREE_TRACER_LIB);
  REQUIRE(run.exit_code == 0);
  format::TraceTotals totals;
  REQUIRE(TailTotals(OnlyTrace(dir), &totals));
  Trace t = LoadTrace(OnlyTrace(dir));
  REQUIRE(t.complete);
  uint64_t allocs = 0, frees = 0;
  std::set<uint32_t> tids;
  for (const format::Event& e : t.events) {
    (e.op == format::EventOp::kAlloc ? allocs : frees) += 1;
    tids.insert(e.tid);
  }
  CHECK(totals.events == t.events.size());
  CHECK(totals.allocs == allocs);
  CHECK(totals.frees == frees);
  CHECK(totals.threads >= tids.size());
  CHECK(totals.threads <= tids.size() + 1);
  CHECK(totals.events >= ExpectedEvents(run.out));
}

TEST_CASE("totals: a damaged or missing totals chunk is not trusted", "[record][totals]") {
  const std::string dir = MakeTempDir();
  RunResult run = Run({WorkloadPath(), "--objects", "2000"}, {"CROSSFREE_OUTPUT=" + OnlyTrace(dir)},
                      CROSSFREE_TRACER_LIB);
  REQUIRE(run.exit_code == 0);
  const std::string path = OnlyTrace(dir);
  format::TraceTotals totals;
  REQUIRE(TailTotals(path, &totals));
  // Flip one byte of each field in turn: never accepted.
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  struct stat st;
  REQUIRE(fstat(fd, &st) == 0);
  const off_t base = st.st_size - static_cast<off_t>(format::kTotalsChunkBytes);
  for (size_t i = 0; i < format::kTotalsChunkBytes; ++i) {
    uint8_t b = 0;
    REQUIRE(pread(fd, &b, 1, base + static_cast<off_t>(i)) == 1);
    uint8_t flipped = b ^ 0x10;
    REQUIRE(pwrite(fd, &flipped, 1, base + static_cast<off_t>(i)) == 1);
    format::TraceTotals damaged;
    INFO("byte " << i);
    CHECK_FALSE(TailTotals(path, &damaged));
    REQUIRE(pwrite(fd, &b, 1, base + static_cast<off_t>(i)) == 1);
  }
  close(fd);
  // Cut off: the last bytes are no totals chunk; record decodes instead.
  REQUIRE(truncate(path.c_str(), st.st_size - 1) == 0);
  CHECK_FALSE(TailTotals(path, &totals));
}

TEST_CASE("totals: record prints the tracer's counts", "[record][totals]") {
  const std::string dir = MakeTempDir();
  RunResult run = Run({CROSSFREE_CLI, "record", "-o", dir + "/run.trace", "--", WorkloadPath(),
                       "--mode", "mixed", "--objects", "10000", "--fns", "all", "--nest", "4"},
                      {}, "");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  format::TraceTotals totals;
  REQUIRE(TailTotals(dir + "/run.trace", &totals));
  char expect[200];
  std::snprintf(expect, sizeof(expect), "total %llu events (%llu allocations, %llu frees)",
                static_cast<unsigned long long>(totals.events),
                static_cast<unsigned long long>(totals.allocs),
                static_cast<unsigned long long>(totals.frees));
  CHECK(run.err.find(expect) != std::string::npos);
  Trace t = LoadTrace(dir + "/run.trace");
  REQUIRE(t.complete);
  CHECK(t.events.size() == totals.events);
}

}  // namespace crossfree::tracer_test
