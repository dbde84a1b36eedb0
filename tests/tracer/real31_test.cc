// SPDX-License-Identifier: Apache-2.0
// Tracer tests from real programs (issue 31): each case a small program
// that reproduces what a real one did to the trace.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <string>

#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

size_t CountFrom(const Trace& t, const FnRange& fn) { return EventsFrom(t, fn).size(); }

// The close_fds target's trace is whole (its 1000 allocations before and
// 1000 after the closing) and nothing of it went into the program's file.
void CheckWholeTrace(const RunResult& run, const std::string& dir, const std::string& mine) {
  Trace t = LoadTrace(dir + "/trace");
  CHECK(t.complete);
  INFO(t.error);
  auto fns = ParseFunctions(run.out);
  CHECK(CountFrom(t, fns["tt_before"]) == 1000);
  CHECK(CountFrom(t, fns["tt_after"]) == 1000);
  struct stat st;
  if (stat(mine.c_str(), &st) == 0) CHECK(st.st_size == 0);
}

// Item 5: the program closes every descriptor; the events recorded before
// and after are all in the trace, and nothing is written into the files
// the program opens on the numbers it freed.
TEST_CASE("a program that closes every descriptor keeps its whole trace", "[tracer]") {
  for (const char* how : {"loop", "close_range", "raw_close_range", "closefrom", "reuse"}) {
    INFO("closing with " << how);
    std::string dir = MakeTempDir();
    std::string mine = dir + "/mine";
    RunResult run = RunTraced("tt_close_fds", dir, {how, mine});
    REQUIRE(run.exit_code == 0);
    CHECK(run.err.empty());
    if (std::string(how) == "reuse") REQUIRE(access(mine.c_str(), F_OK) == 0);
    CheckWholeTrace(run, dir, mine);
  }
}

// Item 5, the hooks: the program's close() of the tracer's descriptor
// succeeds and leaves it open (the program saw it in /proc/self/fd, where
// a close that failed would be an error to report), its dup2() onto that number
// succeeds and moves the tracer's descriptor out of the way first, and
// close_range leaves it open; the trace loses nothing and the program's
// file gets nothing of it.
TEST_CASE("the program's close, dup2 and close_range leave the tracer's descriptor alone",
          "[tracer]") {
  std::string dir = MakeTempDir();
  std::string mine = dir + "/mine";
  RunResult run = RunTraced("tt_close_fds", dir, {"direct", mine, dir + "/trace"});
  REQUIRE(run.exit_code == 0);
  CHECK(run.err.empty());
  CHECK(run.out.find("close 0 Success, trace still open\n") != std::string::npos);
  CHECK(run.out.find("dup2 ok, trace still open\n") != std::string::npos);
  CHECK(run.out.find("close_range 0, trace still open\n") != std::string::npos);
  REQUIRE(access(mine.c_str(), F_OK) == 0);
  CheckWholeTrace(run, dir, mine);
}

// Item 11: trace files are private (0600) and never opened through a
// symlink, not even on the truncate path (a %p-less path run by hand).
TEST_CASE("trace files are created 0600 and never through a symlink", "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult run = RunTraced("tt_close_fds", dir, {"loop"});
  REQUIRE(run.exit_code == 0);
  struct stat st;
  REQUIRE(stat((dir + "/trace").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  std::string other = MakeTempDir();
  std::string victim = other + "/victim";
  FILE* f = fopen(victim.c_str(), "w");
  REQUIRE(f != nullptr);
  fputs("keep me\n", f);
  fclose(f);
  REQUIRE(symlink(victim.c_str(), (other + "/trace").c_str()) == 0);
  run = RunTraced("tt_close_fds", other, {"loop"});
  CHECK(run.exit_code == 0);  // runs untraced, unchanged
  CHECK(run.err.find("cannot open trace file") != std::string::npos);
  REQUIRE(stat(victim.c_str(), &st) == 0);
  CHECK(st.st_size == 8);
}

}  // namespace
}  // namespace crossfree::tracer_test
