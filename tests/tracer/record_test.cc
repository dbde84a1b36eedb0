// SPDX-License-Identifier: Apache-2.0
// `crossfree record` as a supervisor: signals reach the command, killing
// signals are named, one summary per run, no mixing with an earlier run's
// files, a status CI notices when no trace was written, 127/126 for
// commands that cannot start, --preload and LD_PRELOAD mistakes; and the
// tracer's "defines its own malloc" warning only when events are lost.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/environment_skip.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

RunResult Record(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {CROSSFREE_CLI, "record"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> e = env;
  e.push_back(std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB);
  return Run(argv, e, "");
}

std::vector<std::string> Ls(const std::string& dir) {
  RunResult r = Run({"ls", "-1", dir}, {}, "");
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Starts `record` in the background with stdout/stderr in files.
pid_t Spawn(const std::vector<std::string>& args, const std::string& out,
            const std::string& err) {
  std::vector<std::string> argv = {CROSSFREE_CLI, "record"};
  argv.insert(argv.end(), args.begin(), args.end());
  return SpawnInBackground(argv, out, err);
}

bool WaitFor(const std::string& path, const std::string& text, int ms) {
  for (int i = 0; i < ms / 10; ++i) {
    if (ReadAll(path).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_CASE("record: SIGTERM, SIGINT, SIGHUP and SIGQUIT sent to record reach the command",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    INFO("signal " << sig);
    const std::string out = dir + "/out", err = dir + "/err", pidfile = dir + "/pid";
    const std::string script = "trap 'echo got signal; exit 7' HUP INT QUIT TERM; echo $$ > " +
                               pidfile + "; echo ready; while :; do sleep 0.05; done";
    pid_t record = Spawn({"-o", dir + "/t", "--", "sh", "-c", script}, out, err);
    REQUIRE(record > 0);
    REQUIRE(WaitFor(out, "ready", 20000));
    const std::string child = ReadAll(pidfile);
    REQUIRE(kill(record, sig) == 0);
    int status = 0;
    REQUIRE(waitpid(record, &status, 0) == record);
    INFO("stderr: " << ReadAll(err));
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
    CHECK(ReadAll(out).find("got signal") != std::string::npos);
    // No orphan: the command is gone once record returned.
    CHECK(kill(std::stoi(child), 0) != 0);
  }
}

// A SIGTERM to record (a `timeout`, a service manager) ends the run soon
// after the command, though the command left a process running: the wait
// of --wait-children (a minute) is for a normal end. The 20 s bound catches
// that wait; it times nothing. (Not in the ThreadSanitizer run: there the
// runtime holds an asynchronous signal until the thread leaves waitpid.)
TEST_CASE("record: after a SIGTERM, a process the command left running is not waited for",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  const std::string out = dir + "/out", err = dir + "/err", left = dir + "/left";
  const std::string script = "sleep 60 & echo $! > " + left + "; echo ready; exec sleep 60";
  pid_t record = Spawn({"-o", dir + "/t", "--", "sh", "-c", script}, out, err);
  REQUIRE(record > 0);
  REQUIRE(WaitFor(out, "ready", 20000));
  REQUIRE(kill(record, SIGTERM) == 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 2000 && done == 0; ++i) {
    done = waitpid(record, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (done == 0) {
    kill(record, SIGKILL);
    waitpid(record, &status, 0);
  }
  const std::string said = ReadAll(err);
  INFO("stderr: " << said);
  CHECK(done == record);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  CHECK(said.find("(record was stopped by a signal) for the processes the command left "
                  "running; still running: ") != std::string::npos);
  const std::string pid = ReadAll(left);
  if (!pid.empty()) kill(std::stoi(pid), SIGKILL);
}

// A command that signals its own process group (kill(0, SIGTERM), as
// lighttpd's master and `trap 'kill 0' EXIT` scripts do) reaches record
// too, which is in that group: that is no request to stop. record in a
// session of its own (setsid), so the group is record's and the command's
// only. Before, record passed the signal back to the command as from a
// user, and a second one ended record at once, cutting every trace.
TEST_CASE("record: a signal the command sends to its own process group is no stop request",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  std::vector<std::string> argv = {"setsid", "-w", CROSSFREE_CLI, "record", "-o", dir + "/t",
                                   "--", "sh", "-c",
                                   "trap '' TERM; kill -TERM 0; kill -TERM 0; echo survived"};
  RunResult r = Run(argv, {std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB}, "");
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "survived\n");
  CHECK(r.err.find("signal passed to the command") == std::string::npos);
  CHECK(r.err.find("second signal") == std::string::npos);
  Trace t = LoadCompleteTrace(dir + "/t");
  CHECK(!t.events.empty());
}

// Processes in a pid namespace of their own (unshare --pid, bwrap, a
// container runtime) see neither record's pid (the socket's peer reads as
// pid 0) nor their pid as record sees it (getpid is 1, 2, ...). Before,
// record refused their regions ("another process's pidfd") and their
// children wrote their own traces, losing a killed one's last buffers;
// now each is handed over and its trace named by its pid as record sees
// it, unique across namespaces. CROSSFREE_TEST_NO_PIDNS=1 where no pid
// namespace can be made (CONTRIBUTING.md).
TEST_CASE("record: processes in a pid namespace of their own hand their traces to record",
          "[safety][record]") {
  testing::SkipIfMachineLacks("CROSSFREE_TEST_NO_PIDNS",
                              "record's hand-off from a pid namespace is not checked");
  {
    RunResult probe = Run({"unshare", "--fork", "--pid", "/bin/true"}, {}, "");
    INFO("unshare --pid failed (exit " << probe.exit_code << "): " << probe.err
         << "set CROSSFREE_TEST_NO_PIDNS=1 where no pid namespace can be made");
    REQUIRE(probe.exit_code == 0);
  }
  const std::string dir = MakeTempDir();
  // unshare's fork child is pid 1 in the namespace and execs sh, whose
  // child, pid 2, execs another sh.
  RunResult r = Record({"-o", dir + "/t", "--", "unshare", "--fork", "--pid", "/bin/sh", "-c",
                        "/bin/sh -c 'exit 0'; echo inside"});
  INFO("stderr: " << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == "inside\n");
  CHECK(r.err.find("refused") == std::string::npos);
  CHECK(r.err.find("2 child processes") != std::string::npos);
  CHECK(r.err.find("0 events lost") != std::string::npos);
  // Two namespaces in one run: 7 processes (sh, two fork children that
  // exec unshare, and in each namespace pid 1 and pid 2), which the
  // pids in the headers (1 and 2 twice) would count as 5.
  const std::string twice = "unshare --fork --pid /bin/sh -c \"/bin/sh -c 'exit 0'\"";
  RunResult r2 = Record({"-o", dir + "/u", "--", "/bin/sh", "-c", twice + "; " + twice});
  INFO("stderr: " << r2.err);
  CHECK(r2.exit_code == 0);
  CHECK(r2.err.find(" in 7 processes,") != std::string::npos);
  // Named by the pids record sees, never the namespace's 1 and 2.
  for (const std::string& name : Ls(dir)) {
    INFO(name);
    // "t", "t.<pid>" or "t.<pid>.<image>".
    const size_t dot = name.find('.', 2);
    const std::string pid =
        name.size() > 2 ? name.substr(2, dot == std::string::npos ? dot : dot - 2) : "";
    CHECK(pid != "1");
    CHECK(pid != "2");
    LoadCompleteTrace(dir + "/" + name);
  }
}

TEST_CASE("record: a command killed by a signal is named", "[safety][record]") {
  const std::string dir = MakeTempDir();
  RunResult r = Record({"-o", dir + "/t", "--", "sh", "-c", "kill -SEGV $$"});
  CHECK(r.exit_code == 128 + SIGSEGV);
  CHECK(r.err.find("killed by SIGSEGV") != std::string::npos);
}

TEST_CASE("record: one summary for the run, exec'd images included, biggest first",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  const std::string script = "for i in 1 2 3 4 5 6 7 8; do /bin/true; done; exec sh -c 'exec /bin/true'";
  SECTION("with -o") {
    RunResult r = Record({"-o", dir + "/t", "--", "sh", "-c", script});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(Count(r.err, "crossfree record: total ") == 1);
    // The five biggest, one line for the rest, the total, and the line of
    // the hand-off (the command's first image's trace, written by record).
    CHECK(Count(r.err, "crossfree record:") <= 8);
    CHECK(r.err.find("11 trace files") != std::string::npos);  // sh, 8 children, 2 images
    CHECK(r.err.find("smaller traces") != std::string::npos);
  }
  SECTION("without -o") {
    RunResult r = Run({"sh", "-c", "cd " + dir + " && exec " + CROSSFREE_CLI + " record -- sh -c \"" + script + "\""},
                      {std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB}, "");
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(Count(r.err, "crossfree record: total ") == 1);
    CHECK(r.err.find("11 trace files") != std::string::npos);
    CHECK(r.err.find("exec'd image") != std::string::npos);
  }
  // Biggest first: the event counts of the listed files never increase.
  RunResult r = Record({"-o", dir + "/u", "--", "sh", "-c", script});
  std::istringstream in(r.err);
  uint64_t last = UINT64_MAX;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("crossfree record:   ", 0) != 0 || line.find(" events on ") == std::string::npos) {
      continue;
    }
    uint64_t n = std::stoull(line.substr(20));
    CHECK(n <= last);
    last = n;
  }
}

// A daemon started the way Chromium starts its crash handler (tt_daemonize:
// a raw clone twice, the middle process exits, the grandchild execs once it
// was reparented to record): no trace of the run names the grandchild, and
// its own names record as its parent. Before, the hand-off counted it
// ("also for 1 child process") but the summary left its file out.
TEST_CASE("record: the trace of a process whose parent exited before it exec'd is summarised",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  RunResult r = Record({"-o", dir + "/t", "--", TargetPath("tt_daemonize"), "/bin/sh", "-c",
                        "echo daemon"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "daemon\n");
  CHECK(r.err.find("also for 1 child process") != std::string::npos);
  std::vector<std::string> files = Ls(dir);
  REQUIRE(files.size() == 2);  // t and t.<the grandchild's pid>
  const std::string daemon = files[0] == "t" ? files[1] : files[0];
  const std::string pid = daemon.substr(2);
  CHECK(r.err.find(dir + "/" + daemon + " (pid " + pid + ", child whose parent exited)") !=
        std::string::npos);
  CHECK(r.err.find(" in 2 processes, 2 trace files;") != std::string::npos);
  // The total is the listed files' sum.
  uint64_t listed = 0;
  std::istringstream in(r.err);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("crossfree record:   ", 0) == 0) listed += std::stoull(line.substr(20));
  }
  CHECK(r.err.find("total " + std::to_string(listed) + " events") != std::string::npos);
  CHECK(listed > 0);
}

TEST_CASE("record: the FILE.* traces of an earlier run are removed and listed",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  RunResult first = Record({"-o", dir + "/t", "--", "sh", "-c", "/bin/true; /bin/true"});
  REQUIRE(first.exit_code == 0);
  std::vector<std::string> before = Ls(dir);
  REQUIRE(before.size() == 3);  // t and one file per child
  std::ofstream(dir + "/t.notes") << "not a trace";
  RunResult second = Record({"-o", dir + "/t", "--", "/bin/true"});
  INFO(second.err);
  CHECK(second.exit_code == 0);
  CHECK(second.err.find("removed 2 trace files of an earlier run") != std::string::npos);
  for (const std::string& f : before) {
    if (f != "t") CHECK(second.err.find(f) != std::string::npos);
  }
  std::vector<std::string> after = Ls(dir);
  CHECK(after == std::vector<std::string>{"t", "t.notes"});
  CHECK(second.err.find("1 trace file") != std::string::npos);
}

TEST_CASE("record: an unwritable -o is reported and exits 2 after the command",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/file") << "x";
  RunResult ok = Record({"-o", dir + "/file/t", "--", "sh", "-c", "echo ran"});
  INFO(ok.err);
  CHECK(ok.out == "ran\n");
  CHECK(ok.exit_code == 2);
  CHECK(ok.err.find("no trace written to " + dir + "/file/t") != std::string::npos);
  CHECK(ok.err.find("cannot write to " + dir + "/file") != std::string::npos);
  RunResult failed = Record({"-o", dir + "/file/t", "--", "sh", "-c", "exit 3"});
  CHECK(failed.exit_code == 3);
}

TEST_CASE("record: commands that cannot start get 127 or 126 and one message",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  RunResult missing = Record({"-o", dir + "/t", "--", dir + "/no-such-command"});
  CHECK(missing.exit_code == 127);
  CHECK(CountLines(missing.err) == 1);
  CHECK(missing.err.find("cannot run") != std::string::npos);
  CHECK(missing.err.find("tracer's message") == std::string::npos);
  std::ofstream(dir + "/plain") << "echo hi\n";
  RunResult noexec = Record({"-o", dir + "/t", "--", dir + "/plain"});
  CHECK(noexec.exit_code == 126);
  CHECK(CountLines(noexec.err) == 1);
  RunResult path_missing = Record({"-o", dir + "/t", "--", "no-such-command-crossfree"});
  CHECK(path_missing.exit_code == 127);
  CHECK(CountLines(path_missing.err) == 1);
}

TEST_CASE("record: --preload puts libraries after the tracer, LD_PRELOAD mistakes are named",
          "[safety][record]") {
  const std::string dir = MakeTempDir();
  // Found at configure time, which fails without it (tests/tracer/CMakeLists.txt).
  const std::string tcmalloc = CROSSFREE_TCMALLOC_SO;
  REQUIRE(Exists(tcmalloc));
  RunResult order = Record({"-o", dir + "/a", "--preload", tcmalloc, "--", "sh", "-c",
                            "echo $LD_PRELOAD"});
  CHECK(order.out == std::string(CROSSFREE_TRACER_LIB) + ":" + tcmalloc + "\n");
  RunResult churn = Record({"-o", dir + "/b", "--preload", tcmalloc, "--", TargetPath("tt_churn")});
  CHECK(churn.exit_code == 0);
  Trace t = LoadTrace(dir + "/b");
  REQUIRE(t.complete);
  CHECK(t.events.size() >= 3000);
  // `env LD_PRELOAD=X CMD` drops the tracer from CMD.
  RunResult env = Record({"-o", dir + "/c", "--", "env", "LD_PRELOAD=" + tcmalloc, "/bin/true"});
  CHECK(env.err.find("drops libcrossfree-trace.so") != std::string::npos);
  CHECK(env.err.find("--preload") != std::string::npos);
  // The tracer after an allocator in LD_PRELOAD records nothing: say why.
  RunResult late = Run({TargetPath("tt_churn")}, {"CROSSFREE_OUTPUT=" + dir + "/d"},
                       tcmalloc + ":" + CROSSFREE_TRACER_LIB);
  CHECK(late.exit_code == 0);
  CHECK(late.err.find("malloc is taken by " + tcmalloc) != std::string::npos);
}

TEST_CASE("tracer: no 'defines its own malloc' warning for a non-PIE program taking malloc's address",
          "[safety]") {
  const std::string dir = MakeTempDir();
  RunResult r = RunTraced("tt_nopie", dir);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("defines its own malloc") == std::string::npos);
  Trace t = LoadTrace(dir + "/trace");
  REQUIRE(t.complete);
  CHECK(t.events.size() >= 200);
}

}  // namespace
}  // namespace crossfree::tracer_test
