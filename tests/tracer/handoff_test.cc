// SPDX-License-Identifier: Apache-2.0
// `crossfree record`'s chunk hand-off (docs/design.md, "The chunk
// hand-off"): the command's threads fill shared-memory buffers and record
// writes the trace. Known answers from tt_handoff (targets/handoff_target.cc):
// a SIGKILL after every thread did its known work and went idle (a
// condition variable, a blocking read) loses none of those events; a clean
// exit, a fork child, record falling behind (events written + events
// reported dropped = events made), and the command never opening the trace.
// Fork children: fork_handoff_test.cc.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/tracer/tracer_test_util.h"

extern char** environ;

namespace crossfree::tracer_test {
namespace {

// Events tt_handoff makes in each function (handoff_target.cc).
const std::map<std::string, size_t> kIdleEvents = {{"tt_handoff_main", 500},
                                                   {"tt_handoff_futex", 2000},
                                                   {"tt_handoff_read", 3000},
                                                   {"tt_handoff_bulk", 120000}};
constexpr size_t kFloodEvents = 200000;

// `crossfree record ARGS` in the background: stdin from a pipe the test
// holds, stdout and stderr in files. The environment is ours without any
// LD_PRELOAD or CROSSFREE_* setting, plus env.
struct Background {
  pid_t pid = -1;
  int stdin_fd = -1;
  std::string out, err;
};

Background SpawnRecord(const std::string& dir, const std::vector<std::string>& args,
                       const std::vector<std::string>& env) {
  Background b;
  b.out = dir + "/stdout";
  b.err = dir + "/stderr";
  int in[2];
  REQUIRE(pipe2(in, O_CLOEXEC) == 0);
  std::vector<std::string> argv = {CROSSFREE_CLI, "record"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envs;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (kv.rfind("LD_PRELOAD=", 0) == 0 || kv.rfind("CROSSFREE_", 0) == 0) continue;
    envs.push_back(kv);
  }
  envs.push_back(std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB);
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> argp, envp;
  for (std::string& a : argv) argp.push_back(a.data());
  argp.push_back(nullptr);
  for (std::string& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_addopen(&actions, 1, b.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, b.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int rc = posix_spawn(&b.pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  REQUIRE(rc == 0);
  b.stdin_fd = in[1];
  return b;
}

// `crossfree record ARGS...` run to its end, as SpawnRecord starts it: the
// tracer library named, plus env.
RunResult RunRecord(const std::vector<std::string>& args, std::vector<std::string> env) {
  std::vector<std::string> argv = {CROSSFREE_CLI, "record"};
  argv.insert(argv.end(), args.begin(), args.end());
  env.insert(env.begin(), std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB);
  return Run(argv, env, "");
}

// Polls path for a line "WORD <pid>" and returns the pid; the deadline only
// guards against a hang.
int WaitForPid(const std::string& path, const std::string& word) {
  const std::regex line("(^|\n)" + word + " ([0-9]+)\n");
  for (int i = 0; i < 12000; ++i) {
    std::smatch m;
    const std::string text = ReadAll(path);
    if (std::regex_search(text, m, line)) return std::stoi(m[2]);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  FAIL("no '" << word << " <pid>' line in " << path << ": " << ReadAll(path));
  return -1;
}

bool WaitForText(const std::string& path, const std::string& text) {
  for (int i = 0; i < 12000; ++i) {
    if (ReadAll(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int Reap(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// SIGKILLs the command (target) under record (b), waits for record and
// returns its stderr; record must exit as the command did.
std::string KillCommand(const Background& b, int target) {
  REQUIRE(kill(target, SIGKILL) == 0);
  const int code = Reap(b.pid);
  close(b.stdin_fd);
  const std::string err = ReadAll(b.err);
  INFO("record's stderr:\n" << err);
  CHECK(code == 128 + SIGKILL);
  return err;
}

// What /proc/PID/fd links to, and whether each is close-on-exec.
std::vector<std::pair<std::string, bool>> OpenFiles(int pid) {
  std::vector<std::pair<std::string, bool>> out;
  const std::string proc = "/proc/" + std::to_string(pid);
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd")) {
    std::error_code ec;
    const std::string info = ReadAll(proc + "/fdinfo/" + e.path().filename().string());
    std::smatch m;
    const bool cloexec = std::regex_search(info, m, std::regex("flags:\\s*([0-7]+)")) &&
                         (std::stoul(m[1], nullptr, 8) & O_CLOEXEC) != 0;
    out.emplace_back(std::filesystem::read_symlink(e.path(), ec).string(), cloexec);
  }
  return out;
}

// Every known function's events: exactly the known count, all on one
// thread, and the threads distinct.
void CheckIdleEvents(const Trace& t, const std::string& out) {
  auto fns = ParseFunctions(out);
  std::set<uint32_t> tids;
  for (const auto& [fn, expected] : kIdleEvents) {
    INFO(fn);
    REQUIRE(fns.count(fn) == 1);
    const std::vector<format::Event> events = EventsFrom(t, fns[fn]);
    CHECK(events.size() == expected);
    std::set<uint32_t> on;
    for (const format::Event& e : events) on.insert(e.tid);
    CHECK(on.size() == 1);
    tids.insert(on.begin(), on.end());
  }
  CHECK(tids.size() == kIdleEvents.size());
}

// The number before `what` in record's stderr, or -1.
TEST_CASE("handoff: SIGKILL after every thread went idle loses none of the recorded events",
          "[handoff][sigkill]") {
  // CROSSFREE_FLUSH_MS=0: the tracer never writes a partly filled buffer on
  // its own, so the idle threads' last events exist only in their shared
  // buffers; with the default age bound most of them are also written.
  for (const char* flush : {"0", "1000"}) {
    DYNAMIC_SECTION("CROSSFREE_FLUSH_MS=" << flush) {
      const std::string dir = MakeTempDir();
      const std::string trace = dir + "/t";
      Background b = SpawnRecord(dir, {"-o", trace, "--", TargetPath("tt_handoff"), "idle"},
                                 {std::string("CROSSFREE_FLUSH_MS=") + flush,
                                  "CROSSFREE_BUFFER_KB=16"});
      const int target = WaitForPid(b.out, "done");
      // The command holds no descriptor of the trace; the region's is
      // close-on-exec (kept for its own next image, never for a child).
      for (const auto& [file, cloexec] : OpenFiles(target)) {
        INFO("open in the command: " << file);
        CHECK(file != trace);
        if (file.find("crossfree-channel") != std::string::npos) CHECK(cloexec);
      }
      const std::string err = KillCommand(b, target);
      INFO("record's stderr:\n" << err);
      CHECK(err.find("killed by SIGKILL") != std::string::npos);
      CHECK(err.find("; 0 events lost of those the command recorded") !=
            std::string::npos);
      if (std::string(flush) == "0") {
        // One open chunk per thread, main included, taken by record.
        CHECK(NumberBefore(err, "partly filled chunks") == 4);
      }
      Trace t = LoadTrace(trace);
      INFO("trace: " << t.error);
      CHECK(t.complete);
      CheckIdleEvents(t, ReadAll(b.out));
      for (const char* name : {"hf-futex", "hf-read", "hf-bulk"}) {
        bool found = false;
        for (const auto& [tid, names] : t.thread_names) {
          for (const std::string& n : names) found = found || n == name;
        }
        CHECK(found);
      }
    }
  }
}

TEST_CASE("handoff: an exec'd image takes the region over and keeps every event at SIGKILL",
          "[handoff][sigkill]") {
  // sh execs the target: the same process's second image, whose trace
  // record writes to t.1.
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  Background b = SpawnRecord(
      dir, {"-o", trace, "--", "/bin/sh", "-c", "exec " + TargetPath("tt_handoff") + " idle"},
      {"CROSSFREE_FLUSH_MS=0", "CROSSFREE_BUFFER_KB=16"});
  const int target = WaitForPid(b.out, "done");
  for (const auto& [file, cloexec] : OpenFiles(target)) {
    INFO("open in the command: " << file);
    CHECK(file.find(trace) == std::string::npos);
  }
  const std::string err = KillCommand(b, target);
  INFO("record's stderr:\n" << err);
  CHECK(err.find("(also for 1 exec'd image)") != std::string::npos);
  CHECK(err.find("; 0 events lost of those the command recorded") != std::string::npos);
  CHECK(NumberBefore(err, "partly filled chunks") == 4);
  Trace shell = LoadTrace(trace);
  INFO("sh's trace: " << shell.error);
  CHECK(shell.complete);
  CHECK(shell.header.fields.pid == static_cast<uint32_t>(target));
  Trace t = LoadTrace(trace + ".1");
  INFO("trace: " << t.error);
  CHECK(t.complete);
  CHECK(t.header.fields.pid == static_cast<uint32_t>(target));
  CheckIdleEvents(t, ReadAll(b.out));
}

TEST_CASE("handoff: exec'd images take the region over while the drain gets no core",
          "[handoff]") {
  // The drain stops for 2.5 s once it has written the first header (as
  // at nice 19 on a busy machine). sh execs sh, which execs env, which
  // execs true: each later image waits at most 1 s for its predecessor's
  // header to be taken before it writes a file of its own, so the rescue
  // thread must take the headers meanwhile. Before it did, record took
  // over 1 of the 3 exec'd images.
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = RunRecord({"-o", trace, "--", "/bin/sh", "-c",
                           "exec /bin/sh -c 'exec /usr/bin/env true'"},
                          {"CROSSFREE_RECORD_TEST_PAUSE_DRAIN_MS=2500"});
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("(also for 3 exec'd images)") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  for (const std::string suffix : {"", ".1", ".2", ".3"}) {
    Trace t = LoadTrace(trace + suffix);
    INFO("trace" << suffix << ": " << t.error);
    CHECK(t.complete);
  }
}

TEST_CASE("handoff: a clean exit hands every chunk over, record seals nothing itself",
          "[handoff]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = RunRecord({"-o", trace, "--", TargetPath("tt_handoff"), "idle", "exit"},
                          {"CROSSFREE_FLUSH_MS=0", "CROSSFREE_BUFFER_KB=16"});
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("(0 events in 0 partly filled chunks") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  Trace t = LoadTrace(trace);
  INFO("trace: " << t.error);
  CHECK(t.complete);
  CheckIdleEvents(t, r.out);
  // The totals chunk the tracer handed over last is the file's last chunk,
  // so record's summary equals the decoded count.
  const long long events = NumberBefore(r.err, "events \\(");
  CHECK(events == static_cast<long long>(t.events.size()));
  CHECK(NumberBefore(r.err, "events in [0-9]+ chunks \\(") ==
        static_cast<long long>(t.events.size()));
}

TEST_CASE("handoff: record's zstd level and nice come from its environment, bad ones are named",
          "[handoff]") {
  const std::string dir = MakeTempDir();
  struct Case {
    std::vector<std::string> env;
    std::string warnings;  // exactly these lines before the hand-off line
    bool plain;            // level 0: every chunk written as the tracer made it
  };
  const std::vector<Case> cases = {
      {{"CROSSFREE_RECORD_LEVEL=19", "CROSSFREE_RECORD_NICE=5"}, "", false},
      {{"CROSSFREE_RECORD_LEVEL=0"}, "", true},
      {{"CROSSFREE_RECORD_LEVEL=-3"}, "", false},  // zstd's fast levels
      {{"CROSSFREE_RECORD_LEVEL=20", "CROSSFREE_RECORD_NICE=x"},
       "crossfree record: ignoring CROSSFREE_RECORD_LEVEL='20' (-7..19); using 1\n"
       "crossfree record: ignoring CROSSFREE_RECORD_NICE='x' (0..19); using 19\n",
       false}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string trace = dir + "/t" + std::to_string(i);
    std::vector<std::string> env = cases[i].env;
    env.push_back("CROSSFREE_BUFFER_KB=16");
    RunResult r = RunRecord({"-o", trace, "--", TargetPath("tt_handoff"), "idle", "exit"}, env);
    INFO("case " << i << ", stderr:\n" << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.substr(0, r.err.find("crossfree record: hand-off")) == cases[i].warnings);
    Trace t = LoadTrace(trace);
    INFO("trace: " << t.error);
    CHECK(t.complete);
    CheckIdleEvents(t, r.out);
    RunResult dump = Run({CROSSFREE_CLI, "dump", "--summary", trace}, {}, "");
    INFO("dump:\n" << dump.out);
    REQUIRE(dump.exit_code == 0);
    // dump names compressed chunks only when there are some.
    CHECK((dump.out.find("  compressed chunks: ") == std::string::npos) == cases[i].plain);
  }
}

TEST_CASE("handoff: a fork child hands its chunks to record too, in a trace of its own",
          "[handoff][fork]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = RunRecord({"-o", trace, "--", TargetPath("tt_fork")}, {});
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  CHECK(r.err.find("(also for 1 child process)") != std::string::npos);
  auto fns = ParseFunctions(r.out);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("child ([0-9]+) status 0")));
  Trace parent = LoadTrace(trace);
  Trace child = LoadTrace(trace + "." + m[1].str());
  INFO("parent: " << parent.error << "; child: " << child.error);
  REQUIRE(parent.complete);
  REQUIRE(child.complete);
  CHECK(EventsFrom(parent, fns["tt_parent_alloc"]).size() == 16);
  CHECK(EventsFrom(parent, fns["tt_child_work"]).empty());
  CHECK(EventsFrom(child, fns["tt_child_work"]).size() == 14);
  CHECK(EventsFrom(child, fns["tt_parent_alloc"]).empty());
  CHECK((child.header.fields.flags & format::kHeaderFlagForkChild) != 0);
}

char ProcessState(pid_t pid) {
  const std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

TEST_CASE("handoff: when record falls behind, what it cannot take is dropped and counted",
          "[handoff]") {
  // Four slots of 16 KiB; record is stopped while the command floods them,
  // so after three chunks no slot comes free within the 50 ms wait.
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  Background b = SpawnRecord(dir, {"-o", trace, "--", TargetPath("tt_handoff"), "flood"},
                             {"CROSSFREE_BUFFER_KB=16", "CROSSFREE_CHANNEL_KB=64",
                              "CROSSFREE_CHANNEL_WAIT_MS=50", "CROSSFREE_FLUSH_MS=0"});
  WaitForPid(b.out, "ready");
  REQUIRE(kill(b.pid, SIGSTOP) == 0);
  for (int i = 0; i < 12000 && ProcessState(b.pid) != 'T'; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(ProcessState(b.pid) == 'T');
  REQUIRE(write(b.stdin_fd, "g", 1) == 1);
  REQUIRE(WaitForText(b.out, "flooded\n"));
  REQUIRE(kill(b.pid, SIGCONT) == 0);
  close(b.stdin_fd);  // the command returns from main
  const int code = Reap(b.pid);
  const std::string err = ReadAll(b.err);
  INFO("record's stderr:\n" << err);
  REQUIRE(code == 3);  // the command succeeded, events were lost (exit_codes.h)
  CHECK(err.find("crossfree record fell behind") != std::string::npos);
  CHECK(err.find("the trace is incomplete") != std::string::npos);
  const long long dropped = NumberBefore(err, "events in [0-9]+ chunks dropped by the tracer");
  Trace t = LoadTrace(trace);
  INFO("trace: " << t.error);
  REQUIRE(t.complete);
  auto fns = ParseFunctions(ReadAll(b.out));
  const long long written = static_cast<long long>(EventsFrom(t, fns["tt_handoff_flood"]).size());
  CHECK(dropped > 0);
  CHECK(written > 0);
  CHECK(written + dropped == static_cast<long long>(kFloodEvents));
}

TEST_CASE("handoff: a command that damages the region gets its real chunks written, and a count",
          "[handoff]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = RunRecord({"-o", trace, "--", TargetPath("tt_handoff"), "scribble"}, {});
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exit_code == 3);  // damaged chunks are lost events (exit_codes.h)
  REQUIRE(r.out.find("scribbled") != std::string::npos);
  CHECK(r.err.find("not written: 5 chunks damaged in shared memory (not written)") !=
        std::string::npos);
  Trace t = LoadTrace(trace);
  INFO("trace: " << t.error);
  CHECK(t.complete);
  auto fns = ParseFunctions(r.out);
  CHECK(EventsFrom(t, fns["tt_handoff_futex"]).size() == 100);
}

TEST_CASE("handoff: a command that forges the region's file headers runs on, and what record "
          "had is kept",
          "[handoff]") {
  // The header area's count, a length, the bytes: each forged after record
  // took every sealed chunk (handoff_target forge), so the 120,000 events
  // before it are in the file, and record names the damage.
  const std::pair<const char*, const char*> kinds[] = {
      {"count", "the traced process damaged the hand-off region's file headers"},
      {"size", "the traced process damaged the hand-off region's file headers"},
      {"bytes", "the trace header the tracer handed over is damaged"}};
  for (const auto& [kind, message] : kinds) {
    SECTION(kind) {
      const std::string dir = MakeTempDir();
      const std::string trace = dir + "/t";
      RunResult r = RunRecord({"-o", trace, "--", TargetPath("tt_handoff"), "forge", kind}, {});
      INFO("stderr:\n" << r.err);
      CHECK(r.exit_code == 3);  // events lost (exit_codes.h)
      CHECK(r.out.find("forged") != std::string::npos);
      CHECK(r.err.find(message) != std::string::npos);
      Trace t = LoadTrace(trace);
      INFO("trace: " << t.error);
      auto fns = ParseFunctions(r.out);
      CHECK(EventsFrom(t, fns["tt_handoff_bulk"]).size() == 120000);
    }
  }
}

TEST_CASE("handoff: the command never opens or writes the trace (strace)", "[handoff]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  const std::string log = dir + "/strace";
  // -y: every descriptor argument is printed with what it refers to.
  RunResult r = Run({"strace", "-f", "-qq", "-y", "-o", log, "-e",
                     "trace=openat,open,creat,write,pwrite64,writev",
                     CROSSFREE_CLI, "record", "-o", trace, "--", TargetPath("tt_handoff"), "idle",
                     "exit"},
                    {std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB,
                     "CROSSFREE_BUFFER_KB=16"},
                    "");
  INFO("stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("done ([0-9]+)")));
  const std::string target = m[1].str();
  std::istringstream lines(ReadAll(log));
  int record_opens = 0, target_writes = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::string pid = line.substr(0, line.find(' '));
    const bool opens_trace = line.find(trace) != std::string::npos;
    if (pid != target) {
      record_opens += opens_trace;
      continue;
    }
    INFO(line);
    CHECK_FALSE(opens_trace);
    // The command's own output (the fn lines and "done" on stdout, a pipe
    // to the test) and libunwind's address-validation pipe; nothing else.
    // ("<... write resumed>" lines repeat a call already counted.)
    std::smatch w;
    if (std::regex_search(line, w,
                          std::regex("^[0-9]+ (write|pwrite64|writev)\\(([0-9]+)<([^>]*)>")) &&
        w[2].str() != "1" && w[3].str().rfind("pipe:", 0) != 0) {
      ++target_writes;
    }
  }
  CHECK(record_opens >= 1);  // not vacuous: strace saw record open it
  CHECK(target_writes == 0);
  Trace t = LoadTrace(trace);
  CHECK(t.complete);
  CheckIdleEvents(t, r.out);
}

}  // namespace
}  // namespace crossfree::tracer_test
