// SPDX-License-Identifier: Apache-2.0
// Runs the built `crossfree dump` (path from CMake: CROSSFREE_BIN) on traces
// written with the writer and checks its output and exit codes.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "format/wire.h"
#include "tests/format/test_util.h"
#include "tests/format/workload.h"
#include "tests/support/cli.h"
#include "tests/support/process.h"

namespace crossfree::format {
namespace {

struct Run {
  int status;  // the exit code, -1 if it did not exit
  std::string out;
  std::string err;
};

// The test's files, in a directory removed at exit.
std::string Temp(const std::string& tag) {
  static crossfree::testing::TempDir dir("dump-test");
  return dir.File(tag);
}

void WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  crossfree::testing::WriteFileBytes(path, bytes);
}

// `crossfree dump ARGS...`, bounded in time and address space.
Run Dump(const std::vector<std::string>& args) {
  std::vector<std::string> dump_args = {"dump"};
  dump_args.insert(dump_args.end(), args.begin(), args.end());
  crossfree::testing::ProcessResult r = crossfree::testing::RunCli(CROSSFREE_BIN, dump_args);
  INFO("crossfree dump -> " << r.Describe());
  REQUIRE(r.started);
  return Run{r.exited() ? r.exit_code : -1, r.out, r.err};
}

std::string BytesPerEvent(size_t bytes, uint64_t events) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", static_cast<double>(bytes) / static_cast<double>(events));
  return buf;
}

std::string SummaryOf(const std::string& out) {
  size_t at = out.find("summary\n");
  return at == std::string::npos ? "" : out.substr(at);
}

const char kSmallSummary[] =
    "summary\n"
    "  chunks: 4\n"
    "  events: 9\n"
    "  allocs: 5\n"
    "  frees: 4\n"
    "  realloc events: 2\n"
    "  threads: 3\n"
    "  thread names: 1\n"
    "  thread exits: 1\n"
    "  stacks: 2\n"
    "  stacks referenced but not defined: 0\n"
    "  modules: 1\n";

TEST_CASE("dump prints and validates a good trace", "[dump]") {
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> bytes = testing::SmallTrace(&offsets);
  std::string path = Temp("small.trace");
  WriteFile(path, bytes);

  Run s = Dump({path, "--summary"});
  CHECK(s.status == 0);
  CHECK(s.err == "");
  std::string per_event = BytesPerEvent(bytes.size(), testing::kSmallTraceEvents);
  CHECK(SummaryOf(s.out) == std::string(kSmallSummary) + "  bytes/event: " + per_event + "\n");
  CHECK(s.out.find("trace " + path + "\n") == 0);
  CHECK(s.out.find("  pid 4242 ppid 1 exe \"/usr/bin/test\"\n") != std::string::npos);
  CHECK(s.out.find("chunk @") == std::string::npos);

  Run full = Dump({path});
  CHECK(full.status == 0);
  CHECK(full.err == "");
  CHECK(SummaryOf(full.out) == SummaryOf(s.out));
  for (const char* line : {
           "  clock monotonic unwinder hybrid max-depth 64 flags malloc-hook\n",
           "chunk @69 tid 100 seq 0 base-ts 1000 events 4 payload 65 bytes\n",
           "  thread-name tid 100 ts 1001 \"producer-0\"\n",
           "  stack 1 depth 4: 0x401000 0x401100 0x7f0000001234 0x400f00\n",
           "  alloc new            tid 100 ts 1100 addr 0x7f1000000010 size 48 stack 1\n",
           "  free  realloc        tid 100 ts 1500 addr 0x7f1000000040 size 0 stack 1 (realloc)\n",
           "  alloc realloc        tid 100 ts 1600 addr 0x7f1000100000 size 4096 stack 1 (realloc)\n",
           "  module tid 200 ts 2000 bias 0x0 path \"/usr/bin/app\" build-id deadbeef segments 1 "
           "0x400000+0x2000\n",
           "  free  delete         tid 200 ts 2100 addr 0x7f1000000010 size 48 stack 2\n",
           "  thread-exit tid 100 ts 3300\n",
           "  alloc posix_memalign tid 300 ts 4100 addr 0x7f2000000000 size 256 stack 0\n",
       }) {
    INFO(line);
    CHECK(full.out.find(line) != std::string::npos);
  }
  CHECK(offsets[0] == 69);
  std::remove(path.c_str());
}

TEST_CASE("dump exits 2 on truncation, corruption and non-traces", "[dump]") {
  std::vector<uint64_t> offsets;
  const std::vector<uint8_t> good = testing::SmallTrace(&offsets);
  std::string path = Temp("bad.trace");

  SECTION("truncated: complete chunks, summary, warning") {
    size_t cut = offsets[2] + 33;
    WriteFile(path, std::vector<uint8_t>(good.begin(), good.begin() + cut));
    Run r = Dump({path, "--summary"});
    CHECK(r.status == 2);
    CHECK(r.out.find("  chunks: 2\n  events: 6\n  allocs: 3\n  frees: 3\n") != std::string::npos);
    CHECK(r.err == "crossfree dump: warning: " + path + ": truncated chunk at offset " +
                       std::to_string(offsets[2]) +
                       " (file ends after 33 of its bytes); the 2 complete chunks before it are "
                       "shown\n");
  }
  SECTION("damaged chunk") {
    std::vector<uint8_t> bytes = good;
    bytes[offsets[1] + 40] ^= 0x10;
    WriteFile(path, bytes);
    Run r = Dump({path});
    CHECK(r.status == 2);
    CHECK(r.out.find("  chunks: 1\n") != std::string::npos);
    CHECK(r.err == "crossfree dump: " + path + ": corrupt chunk at offset " +
                       std::to_string(offsets[1]) + " (checksum mismatch)\n");
  }
  SECTION("malformed record with a valid checksum") {
    std::vector<uint8_t> bytes = good;
    bytes[offsets[3] + kChunkHeaderBytes] = 0x66;  // not a tag
    testing::ResealChunk(bytes.data() + offsets[3],
                         static_cast<uint32_t>(bytes.size() - offsets[3] - kChunkHeaderBytes));
    WriteFile(path, bytes);
    Run r = Dump({path, "--summary"});
    CHECK(r.status == 2);
    CHECK(r.err == "crossfree dump: " + path + ": corrupt record at offset " +
                       std::to_string(offsets[3] + kChunkHeaderBytes) +
                       " (unknown record tag 0x66)\n");
  }
  SECTION("unsupported version") {
    std::vector<uint8_t> bytes = good;
    wire::Store32(bytes.data() + wire::kHdrVersion, 6);
    WriteFile(path, bytes);
    Run r = Dump({path});
    CHECK(r.status == 2);
    CHECK(r.out == "");
    CHECK(r.err == "crossfree dump: " + path +
                       ": trace format version 6 is not supported (this crossfree reads versions "
                       "1 to 5)\n");
  }
  SECTION("not a trace, empty, missing") {
    std::string text = "just some text\n";
    WriteFile(path, std::vector<uint8_t>(text.begin(), text.end()));
    Run r = Dump({path});
    CHECK(r.status == 2);
    CHECK(r.err == "crossfree dump: " + path + ": not a crossfree trace (bad magic)\n");
    WriteFile(path, {});
    r = Dump({path});
    CHECK(r.status == 2);
    CHECK(r.err == "crossfree dump: " + path + ": empty file (not a crossfree trace)\n");
    std::remove(path.c_str());
    r = Dump({path});
    CHECK(r.status == 2);
    CHECK(r.err == "crossfree dump: " + path + ": No such file or directory\n");
  }
  SECTION("no file argument") {
    Run r = Dump({});
    CHECK(r.status == 2);
    CHECK(r.err.find("file is required") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("dump summary counts a workload trace exactly", "[dump]") {
  testing::WorkloadOptions options;
  options.events = 20000;
  testing::WorkloadStats stats;
  std::vector<uint8_t> bytes = testing::ProducerConsumerWorkload(options).Run(&stats);
  std::string path = Temp("workload.trace");
  WriteFile(path, bytes);
  Run r = Dump({path, "--summary"});
  CHECK(r.status == 0);
  CHECK(r.err == "");
  std::string expect = "summary\n  chunks: " + std::to_string(stats.chunks) +
                       "\n  events: 20000\n  allocs: " + std::to_string(stats.allocs) +
                       "\n  frees: " + std::to_string(stats.frees) +
                       "\n  realloc events: 0\n  threads: 8\n  thread names: 0\n"
                       "  thread exits: 0\n  stacks: " + std::to_string(stats.stacks) +
                       "\n  stacks referenced but not defined: 0\n  modules: 0\n  bytes/event: " +
                       BytesPerEvent(bytes.size(), 20000) + "\n";
  CHECK(SummaryOf(r.out) == expect);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace crossfree::format
