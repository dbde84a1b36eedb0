// SPDX-License-Identifier: Apache-2.0
// Simulate tests: the `crossfree simulate` command end to end (options,
// output, exit codes) on a synthetic trace file.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/cli.h"
#include "tests/support/process.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer::simulate {
namespace {

struct Run {
  int status = -1;  // the exit code, -1 if it did not exit
  std::string out;  // stdout, then stderr
};

// `crossfree ARGS...`, bounded in time and address space.
Run Crossfree(const std::vector<std::string>& args) {
  crossfree::testing::ProcessResult p = crossfree::testing::RunCli(CROSSFREE_BIN, args);
  INFO("crossfree -> " << p.Describe());
  REQUIRE(p.started);
  return Run{p.exited() ? p.exit_code : -1, p.out + p.err};
}

std::string WriteTrace() {
  static crossfree::testing::TempDir dir("simulate-cli");  // removed at exit
  // The budget scenario of simulate_test.cc: 100 allocations of 32 KiB,
  // then 100 frees, on the main thread.
  analyzer::testing::SyntheticTrace b(100);
  for (uint64_t i = 0; i < 100; ++i) b.Alloc(100, 10 + i, 0x10000000 + 32768 * i, 32768);
  for (uint64_t i = 0; i < 100; ++i) b.Free(100, 1000 + i, 0x10000000 + 32768 * i);
  std::string path = dir.File("simulate-cli.trace");
  b.WriteTo(path);
  return path;
}

TEST_CASE("CLI: crossfree simulate prints the model's counts and honours the budget option",
          "[simulate]") {
  std::string trace = WriteTrace();
  Run text = Crossfree({"simulate", trace});
  CHECK(text.status == 0);
  CHECK(text.out.find("100 fetches (100 objects; 99 short), 14 releases (70 objects)") !=
        std::string::npos);
  Run json = Crossfree(
      {"simulate", "--format", "json", "--max-total-thread-cache-bytes", "524288", trace});
  CHECK(json.status == 0);
  CHECK(json.out.find("\"max_total_thread_cache_bytes\": 524288") != std::string::npos);
  CHECK(json.out.find("\"release_calls\": 21, \"released_objects\": 89") != std::string::npos);
  Run bad = Crossfree({"simulate", "/nonexistent/x.trace"});
  CHECK(bad.status == 2);
  CHECK(bad.out.find("/nonexistent/x.trace") != std::string::npos);
  Run bad_option = Crossfree({"simulate", "--transfer-num-objects", "0", trace});
  CHECK(bad_option.status == 2);
  std::remove(trace.c_str());
}

TEST_CASE("CLI: crossfree simulate refuses a sampled trace with one line naming it", "[simulate]") {
  format::HeaderFields fields;
  fields.pid = 100;
  fields.sample_period = 64;
  analyzer::testing::SyntheticTrace b(fields);
  for (uint64_t i = 0; i < 10; ++i) b.Alloc(100, 10 + i, 0x10000000 + 64 * i, 48);
  for (uint64_t i = 0; i < 10; ++i) b.Free(100, 100 + i, 0x10000000 + 64 * i);
  b.Counts(100, {640, 640, 0});
  crossfree::testing::TempDir dir("simulate-cli");
  std::string path = dir.File("sampled.trace");
  b.WriteTo(path);
  Run r = Crossfree({"simulate", path});
  CHECK(r.status == 2);
  CHECK(r.out == "crossfree simulate: " + path +
                     ": sampled trace (1 allocation in 64 traced): the allocator models "
                     "(simulate, report --allocator) need every event; record the run without "
                     "sampling\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace crossfree::analyzer::simulate
