// SPDX-License-Identifier: Apache-2.0
// Recording windows and sampling, in the tracer: known-answer targets run
// under the preloaded tracer, and the trace read back.
//  - the toggle signal's window edges (an object allocated before and freed
//    inside, the reverse, a thread that starts inside, threads blocked in
//    syscalls across the toggles, the close writing every buffer);
//  - --delay/--duration and fork;
//  - sampling: exact counts records, every sampled free's object sampled,
//    realloc followed, a sample count consistent with 1/N.
#include <catch2/catch.hpp>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "format/trace_reader.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

using format::Event;
using format::EventOp;

struct WindowRecord {
  uint64_t ts;
  format::WindowState state;
  format::WindowCause cause;
};

struct Loaded {
  format::FileHeader header;
  std::vector<Event> events;
  std::vector<WindowRecord> windows;
  format::ThreadCounts counts;  // summed
  uint64_t count_records = 0;
  bool complete = false;
  std::string error;
};

class Collect : public format::RecordVisitor {
 public:
  explicit Collect(Loaded* out) : out_(out) {}
  void OnEvent(const Event& e) override { out_->events.push_back(e); }
  void OnWindow(uint32_t, uint64_t ts, format::WindowState s, format::WindowCause c) override {
    out_->windows.push_back({ts, s, c});
  }
  void OnCounts(uint32_t, const format::ThreadCounts& c) override {
    out_->counts.allocs += c.allocs;
    out_->counts.frees += c.frees;
    out_->counts.samples_dropped += c.samples_dropped;
    ++out_->count_records;
  }

 private:
  Loaded* out_;
};

Loaded Load(const std::string& path) {
  Loaded t;
  auto reader = format::TraceReader::Open(path, &t.error);
  if (reader == nullptr) return t;
  t.header = reader->header();
  Collect visitor(&t);
  if (!DecodeAll(*reader, visitor, &t.error)) return t;
  std::stable_sort(t.windows.begin(), t.windows.end(),
                   [](const WindowRecord& a, const WindowRecord& b) { return a.ts < b.ts; });
  std::stable_sort(t.events.begin(), t.events.end(), [](const Event& a, const Event& b) {
    return a.timestamp_ns * 2 + (a.op == EventOp::kAlloc) <
           b.timestamp_ns * 2 + (b.op == EventOp::kAlloc);
  });
  t.complete = true;
  return t;
}

// Pairs the time-ordered events by address.
struct Pairing {
  std::map<uint64_t, int> allocs_by_size;
  std::map<uint64_t, int> freed_by_size;  // allocation size of what was freed
  std::map<uint64_t, std::set<uint32_t>> alloc_tids_by_size;
  int unmatched_frees = 0;
  std::map<uint64_t, int> live_by_size;
};

Pairing Pair(const Loaded& t) {
  Pairing p;
  std::map<uint64_t, uint64_t> live;  // address -> size
  for (const Event& e : t.events) {
    if (e.op == EventOp::kAlloc) {
      live[e.address] = e.size;
      ++p.allocs_by_size[e.size];
      p.alloc_tids_by_size[e.size].insert(e.tid);
    } else {
      auto it = live.find(e.address);
      if (it == live.end()) {
        ++p.unmatched_frees;
      } else {
        ++p.freed_by_size[it->second];
        live.erase(it);
      }
    }
  }
  for (const auto& [addr, size] : live) ++p.live_by_size[size];
  return p;
}

const std::string kToggle = "CROSSFREE_TOGGLE_SIGNAL=" + std::to_string(SIGUSR2);

// REQUIREs that run ended as untraced (exit 0; its output, expected_out)
// and loads its whole trace, dir/trace.
Loaded LoadAfterRun(const RunResult& run, const std::string& dir,
                    const std::string& expected_out) {
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out == expected_out);
  Loaded t = Load(dir + "/trace");
  INFO(t.error);
  REQUIRE(t.complete);
  return t;
}

// Runs tt_window with args and env, and LoadAfterRun.
Loaded RunWindowTarget(const std::string& dir, const std::vector<std::string>& args,
                       const std::vector<std::string>& env, const std::string& expected_out) {
  return LoadAfterRun(RunTraced("tt_window", dir, args, env), dir, expected_out);
}

const std::string kWindowTargetDone = "window target done\n";

TEST_CASE("toggle signal: exact window edges, and the close writes every buffer", "[tracer]") {
  std::string dir = MakeTempDir();
  Loaded t = RunWindowTarget(dir, {}, {kToggle, "CROSSFREE_FLUSH_MS=0"}, kWindowTargetDone);
  CHECK((t.header.fields.flags & format::kHeaderFlagWindowed) != 0);
  REQUIRE(t.windows.size() == 2);
  CHECK(t.windows[0].state == format::WindowState::kOpen);
  CHECK(t.windows[0].cause == format::WindowCause::kSignal);
  CHECK(t.windows[1].state == format::WindowState::kClosed);
  CHECK(t.windows[1].cause == format::WindowCause::kSignal);
  for (const Event& e : t.events) {
    CHECK(e.timestamp_ns >= t.windows[0].ts);
    CHECK(e.timestamp_ns <= t.windows[1].ts);
  }
  Pairing p = Pair(t);
  CHECK(p.allocs_by_size[1111] == 0);   // before the window
  // ... and freed inside it: the 100, and the waiter thread's std::thread
  // state, made before the window and deleted by libstdc++ when the
  // thread's function returns, inside it.
  CHECK(p.unmatched_frees == 101);
  CHECK(p.allocs_by_size[2222] == 200);
  CHECK(p.freed_by_size[2222] == 200);
  CHECK(p.allocs_by_size[3333] == 50);  // live when the window closed
  CHECK(p.live_by_size[3333] == 50);
  CHECK(p.allocs_by_size[4444] == 30);  // a thread started inside
  CHECK(p.freed_by_size[4444] == 30);
  CHECK(p.alloc_tids_by_size[4444].size() == 1);
  CHECK(p.alloc_tids_by_size[4444] != p.alloc_tids_by_size[2222]);
  // The reader was blocked in read() when the window closed: its events
  // are in the file only because the close wrote its buffer (the process
  // left with _exit, and the age-bound flush was off).
  CHECK(p.allocs_by_size[5555] == 20);
  CHECK(p.freed_by_size[5555] == 20);
  CHECK(p.allocs_by_size[6666] == 10);
  CHECK(p.allocs_by_size[7777] == 0);   // after the window
}

TEST_CASE("toggle signal delivered to threads blocked in read() and a condition wait",
          "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult untraced = Run({TargetPath("tt_window"), "blocked"}, {}, "");
  REQUIRE(untraced.exit_code == 0);
  // Untraced, SIGUSR2 would kill it: only run it traced with the handler.
  Loaded t = RunWindowTarget(dir, {"blocked"}, {kToggle}, untraced.out);
  // Ten toggles: open, close, ... Two sent before the first was handled
  // merge into one (a standard signal is not queued), so the count may be
  // lower, but the records alternate, starting with an open.
  REQUIRE(!t.windows.empty());
  CHECK(t.windows.size() <= 10);
  for (size_t i = 0; i < t.windows.size(); ++i) {
    CHECK(t.windows[i].state ==
          (i % 2 == 0 ? format::WindowState::kOpen : format::WindowState::kClosed));
  }
}

TEST_CASE("a fork child inherits the open window and writes its own trace", "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult run = RunTraced("tt_window", dir, {"fork"}, {kToggle});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::string child_path;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("trace.", 0) == 0) child_path = entry.path().string();
  }
  REQUIRE(!child_path.empty());
  Loaded child = Load(child_path);
  INFO(child.error);
  REQUIRE(child.complete);
  CHECK((child.header.fields.flags & format::kHeaderFlagForkChild) != 0);
  CHECK((child.header.fields.flags & format::kHeaderFlagWindowed) != 0);
  REQUIRE(!child.windows.empty());
  CHECK(child.windows[0].state == format::WindowState::kOpen);
  Pairing p = Pair(child);
  CHECK(p.allocs_by_size[8888] == 10);
  CHECK(p.freed_by_size[8888] == 10);
  CHECK(p.allocs_by_size[2222] == 0);  // the parent's, after the fork
  Loaded parent = Load(dir + "/trace");
  REQUIRE(parent.complete);
  CHECK(Pair(parent).allocs_by_size[8888] == 0);
  CHECK(Pair(parent).allocs_by_size[2222] == 200);
}

TEST_CASE("delay and duration: one window, opened and closed by the clock", "[tracer]") {
  std::string dir = MakeTempDir();
  // Long enough to outlast the window on a loaded machine; only the
  // structure is checked, never a time.
  RunResult run = Run({CROSSFREE_WORKLOAD, "--objects", "1000000"},
                      {"CROSSFREE_OUTPUT=" + dir + "/trace", "CROSSFREE_DELAY_MS=20",
                       "CROSSFREE_DURATION_MS=50"},
                      CROSSFREE_TRACER_LIB);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  Loaded t = Load(dir + "/trace");
  REQUIRE(t.complete);
  CHECK((t.header.fields.flags & format::kHeaderFlagWindowed) != 0);
  REQUIRE(t.windows.size() == 2);
  CHECK(t.windows[0].cause == format::WindowCause::kDelay);
  CHECK(t.windows[1].cause == format::WindowCause::kDuration);
  CHECK(t.windows[0].ts >= t.header.fields.start_monotonic_ns + 20'000'000);
  // The command's window ends 20 + 50 ms after the start, however late
  // the opening was noticed.
  CHECK(t.windows[1].ts >= t.header.fields.start_monotonic_ns + 70'000'000);
  REQUIRE(!t.events.empty());
  CHECK(t.events.front().timestamp_ns >= t.windows[0].ts);
  // A thread already inside a hook when the window closed may finish
  // that one record after the close record: at most one per thread.
  size_t after = 0;
  for (const Event& e : t.events) after += e.timestamp_ns > t.windows[1].ts;
  CHECK(after <= 8);
}

// A delay that a process notices late (a closed window is polled on one
// hook call in 64 of a thread: this one sleeps through the delay without
// allocating) keeps the command's window: it closes at the delay's end
// plus the duration, not a duration after the late opening, and a window
// that passed entirely before the process looked records nothing. The
// bounds checked are the clock's deadlines, never how long anything took.
TEST_CASE("delay noticed late: the window keeps the command's times", "[tracer]") {
  constexpr uint64_t kDelayNs = 100'000'000;
  constexpr uint64_t kDurationNs = 100'000'000;
  const std::vector<std::string> env = {"CROSSFREE_DELAY_MS=100", "CROSSFREE_DURATION_MS=100",
                                        "CROSSFREE_FLUSH_MS=0"};
  SECTION("noticed inside the window: it closes at the window's end") {
    std::string dir = MakeTempDir();
    Loaded t = RunWindowTarget(dir, {"late", "150", "450"}, env, kWindowTargetDone);
    const uint64_t end = t.header.fields.start_monotonic_ns + kDelayNs + kDurationNs;
    // A sleep that overran the whole window leaves none (next section).
    if (!t.windows.empty()) {
      REQUIRE(t.windows.size() == 2);
      CHECK(t.windows[0].cause == format::WindowCause::kDelay);
      CHECK(t.windows[0].ts >= t.header.fields.start_monotonic_ns + kDelayNs);
      CHECK(t.windows[1].cause == format::WindowCause::kDuration);
      CHECK(t.windows[1].ts >= end);
    }
    // The one event that crossed the deadline may be recorded.
    size_t after = 0;
    for (const Event& e : t.events) after += e.timestamp_ns > end;
    CHECK(after <= 1);
  }
  SECTION("an end noticed late: the window closes at its deadline, nothing after it is recorded") {
    // Busy through the delay's end and into the window, asleep when its
    // deadline passes: the next call, 300 ms later, notices it. The close
    // is stamped at the deadline whenever it was noticed, and that late
    // call is outside the window (before, it was recorded, and the window
    // closed at it: a 100 ms window shown as 350 ms).
    std::string dir = MakeTempDir();
    Loaded t = RunWindowTarget(dir, {"idle_end", "150", "300"}, env, kWindowTargetDone);
    const uint64_t end = t.header.fields.start_monotonic_ns + kDelayNs + kDurationNs;
    // No window at all only when the process got no CPU before the
    // window's end (a loaded machine): then it recorded nothing.
    if (!t.events.empty()) REQUIRE(t.windows.size() == 2);
    if (!t.windows.empty()) {
      REQUIRE(t.windows.size() == 2);
      CHECK(t.windows[1].cause == format::WindowCause::kDuration);
      CHECK(t.windows[1].ts == end);
    }
    size_t after = 0;
    for (const Event& e : t.events) after += e.timestamp_ns >= end;
    CHECK(after == 0);
    CHECK(Pair(t).allocs_by_size[7777] == 0);
  }
  SECTION("noticed after the window: nothing is recorded") {
    std::string dir = MakeTempDir();
    Loaded t = RunWindowTarget(dir, {"late", "400", "450"}, env, kWindowTargetDone);
    CHECK((t.header.fields.flags & format::kHeaderFlagWindowed) != 0);
    CHECK(t.windows.empty());
    CHECK(t.events.empty());
  }
}

// Under `record`, the delay's end reaches threads that allocate rarely:
// each of tt_window's 3 threads makes 30 allocations and 30 frees in 3 s,
// fewer than the 64 calls of a thread on which a closed window reads the
// clock, so only record's nudge at the delay's end (window_alarm.h) opens
// the window; without the hand-off (CROSSFREE_CHANNEL_KB=0) the same run
// records nothing. Only the clock's deadlines are checked, never how long
// anything took: the alarm may fire late on a loaded machine, and each
// thread still allocates for 2.7 s after the delay.
TEST_CASE("record --delay opens the window of threads that allocate rarely", "[tracer]") {
  constexpr uint64_t kDelayNs = 300'000'000;
  auto record = [](const std::string& dir, const std::vector<std::string>& env) {
    std::vector<std::string> e = {"CROSSFREE_TRACER_LIB=" + std::string(CROSSFREE_TRACER_LIB)};
    e.insert(e.end(), env.begin(), env.end());
    RunResult run = Run({CROSSFREE_CLI, "record", "--delay", "0.3", "-o", dir + "/trace", "--",
                         TargetPath("tt_window"), "rare", "3", "100", "3000"},
                        e, "");
    Loaded t = LoadAfterRun(run, dir, kWindowTargetDone);
    CHECK((t.header.fields.flags & format::kHeaderFlagWindowed) != 0);
    return t;
  };
  SECTION("through the hand-off: opened, and every thread recorded") {
    Loaded t = record(MakeTempDir(), {});
    REQUIRE(t.windows.size() == 1);
    CHECK(t.windows[0].state == format::WindowState::kOpen);
    CHECK(t.windows[0].cause == format::WindowCause::kDelay);
    for (const Event& e : t.events) CHECK(e.timestamp_ns >= t.windows[0].ts);
    // record's clock gave the origin; the tracer's took the open's time.
    CHECK(t.windows[0].ts + 1'000'000 >= t.header.fields.start_monotonic_ns + kDelayNs);
    Pairing p = Pair(t);
    CHECK(p.alloc_tids_by_size[4321].size() == 3);
    CHECK(p.allocs_by_size[4321] >= 3);
    CHECK(p.allocs_by_size[4321] <= 90);
  }
  SECTION("without the hand-off: never opened (the 64-call poll alone)") {
    Loaded t = record(MakeTempDir(), {"CROSSFREE_CHANNEL_KB=0"});
    CHECK(t.windows.empty());
    CHECK(t.events.empty());
  }
}

// An empty trace of a run with --toggle-signal: record's note says why from
// the trace's window records. tt_window "idle" raises the signal twice with
// no allocation or free between: the window opened and closed (two records
// of cause signal), and the note must not blame a handler of the program's,
// as it did from the options alone. "idle ignored" sets the signal to
// SIG_IGN first: no window record, and that explanation is the right one.
TEST_CASE("record --toggle-signal: an empty trace is blamed on the program's handler only "
          "when the signal never reached the tracer",
          "[tracer]") {
  auto record = [](const std::string& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {CROSSFREE_CLI, "record", "--toggle-signal", "USR2", "-o",
                                     dir + "/trace", "--", TargetPath("tt_window")};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult run = Run(argv, {"CROSSFREE_TRACER_LIB=" + std::string(CROSSFREE_TRACER_LIB)}, "");
    Loaded t = LoadAfterRun(run, dir, "");
    CHECK(t.events.empty());
    return std::make_pair(run, t);
  };
  const std::string blamed = "installs its own handler for USR2 replaces it";
  SECTION("the signal reached the tracer: the window was empty") {
    auto [run, t] = record(MakeTempDir(), {"idle"});
    INFO(run.err);
    REQUIRE(t.windows.size() == 2);
    CHECK(t.windows[0].cause == format::WindowCause::kSignal);
    CHECK(t.windows[1].cause == format::WindowCause::kSignal);
    CHECK(run.err.find("1 trace recorded nothing though --toggle-signal USR2 reached its "
                       "tracer: the process made no allocation or free while its window was "
                       "open") != std::string::npos);
    CHECK(run.err.find(blamed) == std::string::npos);
  }
  SECTION("the program replaced the tracer's handler") {
    auto [run, t] = record(MakeTempDir(), {"idle", "ignored"});
    INFO(run.err);
    CHECK(t.windows.empty());
    CHECK(run.err.find("1 trace recorded nothing: with --toggle-signal") != std::string::npos);
    CHECK(run.err.find(blamed) != std::string::npos);
    CHECK(run.err.find("reached its tracer") == std::string::npos);
  }
}

// Exact counts of a full run of the same deterministic workload.
format::ThreadCounts FullCounts(const std::string& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {CROSSFREE_WORKLOAD};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult run = Run(argv, {"CROSSFREE_OUTPUT=" + dir + "/full", "CROSSFREE_ENABLE_STACKS=0"},
                      CROSSFREE_TRACER_LIB);
  REQUIRE(run.exit_code == 0);
  Loaded full = Load(dir + "/full");
  REQUIRE(full.complete);
  format::ThreadCounts c;
  for (const Event& e : full.events) (e.op == EventOp::kAlloc ? c.allocs : c.frees) += 1;
  return c;
}

TEST_CASE("sampling: exact counts, every traced free's object sampled, about 1/N sampled",
          "[tracer]") {
  std::string dir = MakeTempDir();
  const std::vector<std::string> args = {"--objects", "100000", "--nest", "4"};
  format::ThreadCounts truth = FullCounts(dir, args);
  for (int period : {2, 10, 1000}) {
    INFO("N = " << period);
    std::vector<std::string> argv = {CROSSFREE_WORKLOAD};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult run = Run(
        argv, {"CROSSFREE_OUTPUT=" + dir + "/s", "CROSSFREE_SAMPLE=" + std::to_string(period)},
        CROSSFREE_TRACER_LIB);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    Loaded t = Load(dir + "/s");
    INFO(t.error);
    REQUIRE(t.complete);
    CHECK(t.header.fields.sample_period == static_cast<uint32_t>(period));
    CHECK(t.counts.allocs == truth.allocs);
    CHECK(t.counts.frees == truth.frees);
    CHECK(t.counts.samples_dropped == 0);
    Pairing p = Pair(t);
    CHECK(p.unmatched_frees == 0);  // a free is traced only if its object was
    uint64_t sampled = 0;
    for (const Event& e : t.events) sampled += e.op == EventOp::kAlloc;
    // Binomial(n, 1/N): within 6 standard deviations (fails once in 10^9).
    double n = static_cast<double>(truth.allocs), q = 1.0 / period;
    double sd = std::sqrt(n * q * (1 - q));
    CHECK(std::fabs(static_cast<double>(sampled) - n * q) <= 6 * sd + 1);
  }
}

TEST_CASE("sampling follows realloc: no traced free without its traced allocation",
          "[tracer]") {
  std::string dir = MakeTempDir();
  RunResult run = RunTraced("tt_realloc", dir, {}, {"CROSSFREE_SAMPLE=2"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  Loaded t = Load(dir + "/trace");
  REQUIRE(t.complete);
  CHECK(t.counts.allocs > 0);
  CHECK(Pair(t).unmatched_frees == 0);
}

}  // namespace
}  // namespace crossfree::tracer_test
