// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p PID` on a target the test started itself
// (targets/attach_target.cc): attach, record, detach and leave it running
// as it was. Every wait is on an answer (a line of the target's or of
// record's), bounded; nothing waits for time to pass.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/support/environment_skip.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

constexpr double kAnswerSeconds = 60;  // a hang, not a slow machine, trips it

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// A child with pipes on stdin, stdout and stderr.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    int in[2], out[2], err[2];
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(pipe2(err, O_CLOEXEC) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(err[1], 2);
      unsetenv("LD_PRELOAD");
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
  }
  ~Child() {
    if (in_ >= 0) close(in_);
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      int status;
      waitpid(pid_, &status, 0);
    }
    close(out_);
    close(err_);
  }
  pid_t pid() const { return pid_; }
  void Send(const std::string& line) {
    std::string l = line + "\n";
    REQUIRE(write(in_, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
  }
  // The next line of stdout ("" at end of file or after the bound).
  std::string Line() { return ReadLine(out_, &out_buf_); }
  // stderr up to and including the first line containing text.
  std::string ErrUntil(const std::string& text) {
    std::string seen;
    for (;;) {
      std::string line = ReadLine(err_, &err_buf_);
      if (line.empty() && err_eof_) return seen;
      seen += line + "\n";
      if (line.find(text) != std::string::npos) return seen;
    }
  }
  std::string RestOfErr() {
    std::string seen;
    for (;;) {
      std::string line = ReadLine(err_, &err_buf_);
      if (line.empty() && err_eof_) return seen;
      seen += line + "\n";
    }
  }
  // Exit status (128 + signal when killed), -1 after the bound.
  int Wait() {
    const double end = NowS() + kAnswerSeconds;
    int status = 0;
    while (NowS() < end) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      // Wait on the child's stderr closing, not on time.
      pollfd p{err_, POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        ssize_t n = read(err_, buf, sizeof(buf));
        if (n > 0) err_buf_.append(buf, static_cast<size_t>(n));
      }
    }
    return -1;
  }
  void Signal(int sig) { kill(pid_, sig); }

 private:
  std::string ReadLine(int fd, std::string* buf) {
    const double end = NowS() + kAnswerSeconds;
    bool* eof = fd == err_ ? &err_eof_ : &out_eof_;
    for (;;) {
      size_t nl = buf->find('\n');
      if (nl != std::string::npos) {
        std::string line = buf->substr(0, nl);
        buf->erase(0, nl + 1);
        return line;
      }
      if (*eof) return "";
      const double left = end - NowS();
      if (left <= 0) return "";
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
      char tmp[4096];
      ssize_t n = read(fd, tmp, sizeof(tmp));
      if (n <= 0) {
        *eof = true;
        continue;
      }
      buf->append(tmp, static_cast<size_t>(n));
    }
  }
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
  bool out_eof_ = false, err_eof_ = false, reaped_ = false;
};

// The target, started and past its "ready" line.
struct Target {
  Child child{{TargetPath("tt_attach")}};
  pid_t pid = 0;
  Target() {
    std::string ready = child.Line();
    REQUIRE(ready.rfind("ready ", 0) == 0);
    pid = static_cast<pid_t>(std::stol(ready.substr(6)));
  }
  std::string Ask(const std::string& cmd) {
    child.Send(cmd);
    return child.Line();
  }
  // Tells it to exit; its exit status.
  int Exit() {
    child.Send("exit");
    return child.Wait();
  }
};

// `crossfree record -p` running until SIGINT, past its "recording" line;
// the constructor REQUIREs that it attached (the failure shows what it
// said).
struct Recorder {
  Child child;
  std::string err;
  Recorder(pid_t pid, const std::string& trace, const std::vector<std::string>& extra = {})
      : child(Argv(pid, trace, extra)) {
    err = child.ErrUntil("crossfree record: recording");
    INFO("crossfree record -p " << pid << ":\n" << err);
    REQUIRE(attached());
  }
  static std::vector<std::string> Argv(pid_t pid, const std::string& trace,
                                       const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {CROSSFREE_CLI, "record", "-p", std::to_string(pid), "-o",
                                     trace};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  bool attached() const { return err.find("attached to process") != std::string::npos; }
  // SIGINT: detach; returns the exit status.
  int Detach() {
    child.Signal(SIGINT);
    int rc = child.Wait();
    err += child.RestOfErr();
    return rc;
  }
  // Detach, requiring exit 0 and record's line saying it detached.
  void DetachCleanly() {
    REQUIRE(Detach() == 0);
    INFO(err);
    REQUIRE(err.find("detached from process") != std::string::npos);
  }
};

// The fixture of the tests that attach to tt_attach: a fresh directory for
// the traces, and the target started.
struct TargetFixture {
  const std::string dir = MakeTempDir();
  Target target;
};

std::map<uint64_t, format::Event> AllocsOfSize(const Trace& t, uint64_t size) {
  std::map<uint64_t, format::Event> out;
  for (const format::Event& e : t.events) {
    if (e.op == format::EventOp::kAlloc && e.size == size) out[e.address] = e;
  }
  return out;
}

// How many allocations of `size` bytes the trace at path has; the trace
// must be whole.
size_t CountAllocsOfSize(const std::string& path, uint64_t size) {
  return AllocsOfSize(LoadCompleteTrace(path), size).size();
}

std::string ThreadName(const Trace& t, uint32_t tid) {
  auto it = t.thread_names.find(tid);
  return it == t.thread_names.end() || it->second.empty() ? "" : it->second.back();
}

// The thread of t last named `name`, 0 when none is.
uint32_t ThreadIdNamed(const Trace& t, const std::string& name) {
  for (const auto& [tid, names] : t.thread_names) {
    if (!names.empty() && names.back() == name) return tid;
  }
  return 0;
}

std::vector<std::string> Fds(pid_t pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char buf[512];
      ssize_t n = readlink((dir + "/" + e->d_name).c_str(), buf, sizeof(buf) - 1);
      buf[n > 0 ? n : 0] = '\0';
      out.push_back(std::string(e->d_name) + " " + buf);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool HasThreadNamed(pid_t pid, const std::string& name) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  bool found = false;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(dir + "/" + e->d_name + "/comm");
      std::string comm;
      std::getline(in, comm);
      found = found || comm == name;
    }
    closedir(d);
  }
  return found;
}

// The nice value (field 19 of stat) of pid's first thread named name, ""
// when there is none.
std::string NiceOfThreadNamed(pid_t pid, const std::string& name) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::string nice;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.' || !nice.empty()) continue;
      std::ifstream comm_in(dir + "/" + e->d_name + "/comm");
      std::string comm;
      std::getline(comm_in, comm);
      if (comm != name) continue;
      std::ifstream in(dir + "/" + e->d_name + "/stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::istringstream fields(stat.substr(stat.rfind(')') + 2));
      std::string field;
      for (int i = 3; i <= 19 && fields >> field; ++i) {
      }
      nice = field;
    }
    closedir(d);
  }
  return nice;
}

// Waits, bounded, until the tracer's control thread in the target has
// ended: record exits once the tracer has closed its socket, and the
// thread that closed it then returns (a few instructions later). Between
// checks a round trip to the target, not a sleep.
bool AwaitControlThreadEnd(Target& target) {
  for (int i = 0; i < 5000; ++i) {
    if (!HasThreadNamed(target.pid, "crossfree-ctl")) return true;
    target.Ask("where");
  }
  return false;
}

// The thread ids of pid's threads.
std::set<std::string> Tasks(pid_t pid) {
  std::set<std::string> out;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.insert(e->d_name);
    }
    closedir(d);
  }
  return out;
}

std::string Maps(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("known answer: pairs and objects from before the window and live at its end with "
          "threads asleep in system calls and threads allocating") {
  const std::string dir = MakeTempDir();
  const std::string trace_path = dir + "/attach.trace";
  Target target;
  REQUIRE(target.Ask("where") == "where libc.so.6 -");
  // Every thread of the program runs at this priority.
  const std::string program_nice = NiceOfThreadNamed(target.pid, "tt_attach");
  REQUIRE(!program_nice.empty());
  std::vector<uint64_t> old;
  std::string record_err;
  {
    Recorder rec(target.pid, trace_path);
    INFO(rec.err);
    CHECK(rec.err.find("stopped for") != std::string::npos);
    // The tracer's control thread runs at the priority of the thread that
    // started it, not at the one record raised that thread to (as root,
    // nice -20) for the loading.
    CHECK(NiceOfThreadNamed(target.pid, "crossfree-ctl") == program_nice);
    CHECK(target.Ask("where") == "where libcrossfree-trace.so -");
    REQUIRE(target.Ask("cross") == "cross");
    std::string freed = target.Ask("freeold");
    REQUIRE(freed.rfind("freeold", 0) == 0);
    std::istringstream in(freed.substr(7));
    std::string a;
    while (in >> a) old.push_back(std::stoull(a, nullptr, 16));
    REQUIRE(old.size() == 100);
    REQUIRE(target.Ask("keep") == "keep");
    rec.DetachCleanly();
    record_err = rec.err;
  }
  // Left as it was: the GOT entry is libc's again, and the program works.
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Ask("cross") == "cross");
  CHECK(target.Exit() == 0);

  Trace t = LoadCompleteTrace(trace_path);
  CHECK((t.header.fields.flags & format::kHeaderFlagWindowed) != 0);
  // 1000 objects of 4242 bytes made on "producer", each freed on "consumer".
  auto cross = AllocsOfSize(t, 4242);
  REQUIRE(cross.size() == 1000);
  std::set<uint32_t> alloc_tids, free_tids;
  for (const auto& [addr, e] : cross) alloc_tids.insert(e.tid);
  int cross_frees = 0, old_frees = 0;
  std::set<uint64_t> old_set(old.begin(), old.end());
  for (const format::Event& e : t.events) {
    if (e.op != format::EventOp::kFree) continue;
    if (cross.count(e.address) != 0 && e.timestamp_ns >= cross[e.address].timestamp_ns) {
      ++cross_frees;
      free_tids.insert(e.tid);
    }
    if (old_set.count(e.address) != 0) ++old_frees;
  }
  CHECK(cross_frees == 1000);
  REQUIRE(alloc_tids.size() == 1);
  REQUIRE(free_tids.size() == 1);
  CHECK(ThreadName(t, *alloc_tids.begin()) == "producer");
  CHECK(ThreadName(t, *free_tids.begin()) == "consumer");
  // The objects main allocated before the attach: 100 frees, no allocation.
  CHECK(old_frees == 100);
  // (Their first event in the trace is that free: no allocation before.)
  std::set<uint64_t> seen;
  for (const format::Event& e : t.events) {
    if (old_set.count(e.address) != 0 && seen.insert(e.address).second) {
      CHECK(e.op == format::EventOp::kFree);
    }
  }
  // 50 objects of 4244 bytes still allocated at detach.
  auto kept = AllocsOfSize(t, 4244);
  CHECK(kept.size() == 50);
  for (const format::Event& e : t.events) {
    if (e.op == format::EventOp::kFree && kept.count(e.address) != 0) {
      CHECK(e.timestamp_ns < kept[e.address].timestamp_ns);  // an earlier object there
    }
  }
  // The report names the pair and both categories.
  RunResult report = Run({CROSSFREE_CLI, "report", trace_path}, {}, "");
  INFO(report.out << report.err);
  REQUIRE(report.exit_code == 0);
  const std::string text = report.out + report.err;
  CHECK(text.find("producer -> consumer") != std::string::npos);
  CHECK(text.find("1,000 frees") != std::string::npos);
  // Attaching and detaching are no start-up or shutdown: every one of the
  // pair's objects counts in the steady state (analyzer lifecycle edges).
  CHECK(text.find("(1,000 of 1,000 objects in the steady state)") != std::string::npos);
  CHECK(text.find("before the window") != std::string::npos);
  CHECK(text.find("live at window end") != std::string::npos);
  // Its thread count is of the program's threads that allocated or freed:
  // not the tracer's control thread, whose records (the window's, the
  // totals) have a stream of their own in the trace.
  std::set<uint32_t> event_tids;
  for (const format::Event& e : t.events) event_tids.insert(e.tid);
  const uint32_t ctl = ThreadIdNamed(t, "crossfree-ctl");
  REQUIRE(ctl != 0);
  CHECK(event_tids.count(ctl) == 0);
  CHECK(text.find("1 trace, " + std::to_string(event_tids.size()) + " threads,") !=
        std::string::npos);
  // And record's detach line counts the same threads.
  INFO(record_err);
  CHECK(record_err.find(" events from " + std::to_string(event_tids.size()) +
                        " threads written") != std::string::npos);
}

TEST_CASE_METHOD(TargetFixture,
                 "detach while a thread is inside operator new, blocked in its new-handler") {
  {
    Recorder rec(target.pid, dir + "/stuck.trace");
    // The handler runs inside the hooked operator new: the tracer's frame
    // is on that thread's stack when the GOT entries go back.
    REQUIRE(target.Ask("stuck") == "stuck");
    REQUIRE(rec.Detach() == 0);
  }
  target.child.Send("unstick");
  CHECK(target.child.Line() == "unstuck");
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Ask("cross") == "cross");
  CHECK(target.Exit() == 0);
  LoadCompleteTrace(dir + "/stuck.trace");  // whole
}

TEST_CASE_METHOD(TargetFixture,
                 "a module dlopen'ed while attached is hooked and restored at detach") {
  const std::string plugin = std::string(CROSSFREE_TT_DIR) + "/tt_attach_plugin.so";
  {
    Recorder rec(target.pid, dir + "/plugin.trace");
    REQUIRE(target.Ask("plugin " + plugin) == "plugin");
    CHECK(target.Ask("where") == "where libcrossfree-trace.so libcrossfree-trace.so");
    REQUIRE(rec.Detach() == 0);
  }
  CHECK(target.Ask("where") == "where libc.so.6 libc.so.6");
  CHECK(target.Exit() == 0);
  CHECK(CountAllocsOfSize(dir + "/plugin.trace", 4245) == 300);
}

TEST_CASE_METHOD(TargetFixture,
                 "a second attach is refused and record killed with SIGKILL unhooks and exit while "
                 "attached writes the trace") {
  {
    Recorder first(target.pid, dir + "/first.trace");
    RunResult second = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid),
                            "--duration", "0.1", "-o", dir + "/second.trace"},
                           {}, "");
    INFO(second.err);
    CHECK(second.exit_code == 2);
    CHECK(second.err.find("another crossfree record is attached to process") !=
          std::string::npos);
    CHECK(target.Ask("where") == "where libcrossfree-trace.so -");
    REQUIRE(target.Ask("cross") == "cross");
    first.child.Signal(SIGKILL);
    CHECK(first.child.Wait() == 128 + SIGKILL);
  }
  // The tracer notices the lost recorder (end of file on its socket) and
  // unhooks itself: ask until the entry is libc's again (bounded).
  std::string where;
  for (int i = 0; i < 5000 && where != "where libc.so.6 -"; ++i) where = target.Ask("where");
  CHECK(where == "where libc.so.6 -");
  // The trace is written after the unhooking, by the tracer's control
  // thread, which then ends: wait for it to be gone (bounded).
  bool ctl_gone = false;
  for (int i = 0; i < 5000 && !ctl_gone; ++i) {
    ctl_gone = !HasThreadNamed(target.pid, "crossfree-ctl");
    if (!ctl_gone) target.Ask("where");  // a round trip, not a sleep
  }
  CHECK(ctl_gone);
  Trace killed = LoadTrace(dir + "/first.trace");
  INFO(killed.error);
  CHECK(killed.complete);
  CHECK(AllocsOfSize(killed, 4242).size() == 1000);
  // Attaching again works; then the target exits while attached.
  {
    Recorder again(target.pid, dir + "/again.trace");
    REQUIRE(target.Ask("cross") == "cross");
    CHECK(target.Exit() == 0);
    CHECK(again.child.Wait() == 0);
    const std::string rest = again.child.RestOfErr();
    CHECK(rest.find("exited while attached") != std::string::npos);
  }
  CHECK(CountAllocsOfSize(dir + "/again.trace", 4242) == 1000);
}

// An environment variable set for the processes started in its scope,
// which inherit it; unset after.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

// Whether pid holds a socket at a descriptor the tracer's own are moved
// to (500 and above: its control socket; the program's are below).
bool HasTracerSocket(pid_t pid) {
  for (const std::string& fd : Fds(pid)) {
    if (std::stoi(fd) >= 500 && fd.find(" socket:") != std::string::npos) return true;
  }
  return false;
}

// A fork child of a process attached before inherits the tracer's state;
// a session in it must name, head and end its trace as its own (the
// parent's pid, kept there, made it write FILE.<parent pid> with the
// parent's pid in the header, and take its exit for a vfork child's,
// writing nothing at exit).
// The tracer holds its session open 300 ms after its last reply
// (CROSSFREE_TEST_SESSION_END_DELAY_MS): record must return only after the
// tracer closed the session, so that the worker the target forks at once
// finds no session still ending. Before, record returned on the reply, the
// child inherited a session marked busy, and the attach to it was refused
// (seen once in CI without the delay).
TEST_CASE("a fork child of a process attached before is recorded as itself, to the end") {
  const std::string dir = MakeTempDir();
  ScopedEnv delay("CROSSFREE_TEST_SESSION_END_DELAY_MS", "300");
  Target target;
  {
    Recorder first(target.pid, dir + "/parent.trace");
    REQUIRE(target.Ask("cross") == "cross");
    first.DetachCleanly();
  }
  CHECK(!HasTracerSocket(target.pid));  // closed before record returned
  const std::string ready = target.Ask("handover");
  REQUIRE(ready.rfind("ready ", 0) == 0);
  const auto child = static_cast<pid_t>(std::stol(ready.substr(6)));
  REQUIRE(child != target.pid);
  {
    Recorder rec(child, dir + "/child.trace");
    REQUIRE(target.Ask("mainalloc") == "mainalloc");
    target.child.Send("exit");  // the child exits while attached
    CHECK(rec.child.Wait() == 0);
    const std::string rest = rec.child.RestOfErr();
    INFO(rest);
    CHECK(rest.find("exited while attached; its tracer wrote the trace at exit") !=
          std::string::npos);
  }
  CHECK(target.child.Wait() == 0);  // the parent leaves with the child's status
  Trace t = LoadCompleteTrace(dir + "/child.trace");
  CHECK(t.header.fields.pid == static_cast<uint32_t>(child));
  CHECK(t.header.fields.ppid == static_cast<uint32_t>(target.pid));
  size_t allocs = 0;  // one address, reused: counted by event
  for (const format::Event& e : t.events) allocs += e.op == format::EventOp::kAlloc && e.size == 4242;
  CHECK(allocs == 1000);
  CHECK(!std::filesystem::exists(dir + "/child.trace." + std::to_string(target.pid)));
}

// A process killed while attached ends without the tracer's exit flush:
// record must not say the tracer wrote the trace at exit, and exits 3 (a
// trace that lost recorded events is never taken for a whole one).
TEST_CASE_METHOD(TargetFixture, "a process killed while attached is said to have lost its last "
                                "buffers") {
  Recorder rec(target.pid, dir + "/killed.trace");
  REQUIRE(target.Ask("cross") == "cross");
  target.child.Signal(SIGKILL);
  CHECK(target.child.Wait() == 128 + SIGKILL);
  CHECK(rec.child.Wait() == 3);
  const std::string rest = rec.child.RestOfErr();
  INFO(rest);
  CHECK(rest.find("ended while attached without the tracer's exit flush") != std::string::npos);
  CHECK(rest.find("wrote the trace at exit") == std::string::npos);
  CHECK(rest.find("the trace is incomplete") != std::string::npos);
}

TEST_CASE_METHOD(TargetFixture,
                 "a fork while attached leaves the child untraced and the trace whole and a "
                 "sampled session after an unsampled one counts every thread") {
  {
    Recorder rec(target.pid, dir + "/fork.trace");
    REQUIRE(target.Ask("cross") == "cross");
    CHECK(target.Ask("fork") == "forked 7 8");
    REQUIRE(target.Ask("cross") == "cross");
    REQUIRE(rec.Detach() == 0);
  }
  Trace t = LoadCompleteTrace(dir + "/fork.trace");
  // Only the parent's two rounds: the children's 200 objects of the same
  // size are in no trace.
  CHECK(std::count_if(t.events.begin(), t.events.end(), [](const format::Event& e) {
          return e.op == format::EventOp::kAlloc && e.size == 4242;
        }) == 2000);
  CHECK(t.header.fields.pid == static_cast<uint32_t>(target.pid));
  {
    Recorder rec(target.pid, dir + "/sampled.trace", {"--sample", "7"});
    REQUIRE(target.Ask("cross") == "cross");
    REQUIRE(rec.Detach() == 0);
  }
  Trace s = LoadCompleteTrace(dir + "/sampled.trace");
  CHECK(s.header.fields.sample_period == 7);
  // Every thread counted its calls (counts records), the threads whose
  // states were made in the unsampled session too: the producer made
  // exactly the 1000 allocations, the consumer exactly the 1000 frees.
  std::map<std::string, format::ThreadCounts> by_name;
  for (const auto& [tid, c] : s.counts) {
    format::ThreadCounts& sum = by_name[ThreadName(s, tid)];
    sum.allocs += c.allocs;
    sum.frees += c.frees;
  }
  CHECK(by_name["producer"].allocs == 1000);
  CHECK(by_name["producer"].frees == 0);
  CHECK(by_name["consumer"].allocs == 0);
  CHECK(by_name["consumer"].frees == 1000);
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Exit() == 0);
}

// An exec while attached: one the tracer sees (execv, hooked) flushes
// first and the trace is whole; one it does not see (a direct system call,
// as glibc's execl family) runs no flush, and record must not say the trace
// was written before it. record tells them apart by the file's end.
TEST_CASE_METHOD(TargetFixture,
                 "an exec while attached: a seen one writes the trace first, an unseen one "
                 "loses the last buffers, and record says which") {
  struct Case {
    const char* command;
    int status;
    const char* said;
    const char* not_said;
  } c{};
  SECTION("execv, which the tracer hooks") {
    c = {"exec", 0, "exec'd (/usr/bin/cat) while attached; the trace was written before",
         "does not see"};
  }
  SECTION("a direct execve system call, which it does not see") {
    c = {"rawexec", 3, "through a call the tracer does not see", "written before the exec"};
  }
  Recorder rec(target.pid, dir + "/exec.trace");
  REQUIRE(target.Ask("cross") == "cross");
  target.child.Send(c.command);
  // record sees the control socket close at the exec (close-on-exec).
  CHECK(rec.child.Wait() == c.status);
  const std::string rest = rec.child.RestOfErr();
  INFO(rest);
  CHECK(rest.find(c.said) != std::string::npos);
  CHECK(rest.find(c.not_said) == std::string::npos);
  // The new image is cat: it echoes, as untraced.
  CHECK(target.Ask("echo") == "echo");
  if (c.status == 0) {
    Trace t = LoadCompleteTrace(dir + "/exec.trace");
    CHECK(AllocsOfSize(t, 4242).size() == 1000);
  }
}

// Issue 40: each session used to leave libunwind's address-validation pipe
// (two descriptors at 500 and above) in the target.
TEST_CASE_METHOD(TargetFixture,
                 "two attaches leave the target the descriptors and threads it had") {
  const std::vector<std::string> fds_before = Fds(target.pid);
  const std::set<std::string> tasks_before = Tasks(target.pid);
  for (int session = 1; session <= 2; ++session) {
    {
      Recorder rec(target.pid, dir + "/twice.trace");
      // Unwound events on the program's threads (the default unwinder
      // starts libunwind, which opens its pipe).
      REQUIRE(target.Ask("cross") == "cross");
      rec.DetachCleanly();
    }
    REQUIRE(AwaitControlThreadEnd(target));
    INFO("after session " << session);
    CHECK(Fds(target.pid) == fds_before);
    CHECK(Tasks(target.pid) == tasks_before);
    CHECK(CountAllocsOfSize(dir + "/twice.trace", 4242) == 1000);
  }
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Exit() == 0);
}

TEST_CASE_METHOD(TargetFixture,
                 "20 attach/detach cycles leave no descriptor or mapping behind") {
  const std::vector<std::string> fds_before = Fds(target.pid);
  std::string maps_after_first;
  std::vector<std::string> fds_after_first;
  // The tracer library and what it maps stay after the first session (it
  // is never unloaded: a thread may still be inside a hook). That includes
  // one state for each thread that records an event (one anonymous
  // mapping: the state and its 128 KB buffer, 232 KB), mapped at the
  // thread's first event and kept for it across sessions, so maps grow in
  // a later session only for a thread that records there for the first
  // time. The program's threads that allocate while the cycles run are the
  // two "busy" ones, and a 50 ms session can end before one of them has
  // run at all on 2 loaded cores: the first session lasts until each has
  // made a malloc call while recording.
  // After each session the control thread ends just after record exits: it
  // is waited for, since a session started while it still exits gets a
  // control thread of its own (a stack glibc maps and then caches, and a
  // state of its own).
  {
    Recorder first(target.pid, dir + "/cycle.trace");
    REQUIRE(target.Ask("busy") == "busy 2");
    first.DetachCleanly();
    REQUIRE(AwaitControlThreadEnd(target));
    maps_after_first = Maps(target.pid);
    fds_after_first = Fds(target.pid);
  }
  for (int cycle = 2; cycle <= 20; ++cycle) {
    RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid), "--duration",
                       "0.05", "-o", dir + "/cycle.trace"},
                      {}, "");
    INFO("cycle " << cycle << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    REQUIRE(r.err.find("detached from process") != std::string::npos);
    REQUIRE(AwaitControlThreadEnd(target));
  }
  // Every descriptor is as it was before the first session: the tracer
  // keeps none (libunwind's address-validation pipe is closed at detach).
  CHECK(Fds(target.pid) == fds_after_first);
  CHECK(Fds(target.pid) == fds_before);
  CHECK(Maps(target.pid) == maps_after_first);
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Ask("cross") == "cross");
  CHECK(target.Exit() == 0);
  LoadCompleteTrace(dir + "/cycle.trace");  // whole
}

TEST_CASE("record killed with SIGKILL after each step of the injection leaves the target "
          "running as it was, registers and interrupted read included") {
  // CROSSFREE_INJECT_KILL_AFTER=K: record kills itself right after step K
  // of the injection (attach_inject.cc: 1 seized, 2 stopped, 3 registers
  // read, 4 data built, 5 code written, 6 data written, 7 registers set and
  // priority raised, 8 detached, 9 report connection accepted, 10 report
  // read). The thread
  // injected is "vector", asleep in a hand-made read system call with known
  // values in r12-r15 and ymm8: after every kill its read must still return
  // the byte sent to it with those values intact.
  //
  // What each kill leaves running (docs/design.md, "Why every instant is
  // safe"): after steps 1-6 the thread resumes as after any stop; after
  // step 7 it runs the trampoline, whose connect finds record's socket
  // gone (the kernel closes a dying process's descriptors before it lets
  // its tracees go), and goes back. From step 8 on the trampoline runs
  // while record dies. When the tracer's entry point connected before
  // record's socket closed (possibly at steps 8 and 9; always at step 10,
  // whose report the trampoline sends after the entry point started the
  // control thread), the tracer's control thread runs on after record's
  // death: it moves its socket to descriptor 500 or above (growing the
  // descriptor table waits for an RCU grace period), finds end of file
  // where record's request should be, and ends, hooking nothing. Until it
  // has ended, its socket may still be below 500 and the tracer refuses an
  // attach as busy; no one but this test waits for that end.
  const std::string dir = MakeTempDir();
  Target target;
  const std::string tid_line = target.Ask("vectortid");
  REQUIRE(tid_line.rfind("vectortid ", 0) == 0);
  const std::string vector_tid = tid_line.substr(10);
  const std::vector<std::string> fds_before = Fds(target.pid);
  // The program's own threads: any other is a control thread of the tracer.
  const std::set<std::string> tasks_before = Tasks(target.pid);
  // The thread's nice value: record raises it for the loading (as root)
  // and the injected code puts it back; no kill may leave it raised.
  auto nice_of_vector = [&] {
    std::ifstream in("/proc/" + std::to_string(target.pid) + "/task/" + vector_tid + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {
    }
    return field;  // field 19: nice
  };
  const std::string nice_before = nice_of_vector();
  REQUIRE(!nice_before.empty());
  for (int step = 1; step <= 10; ++step) {
    RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid), "--duration",
                       "5", "-o", dir + "/killed" + std::to_string(step) + ".trace"},
                      {"CROSSFREE_INJECT_KILL_AFTER=" + std::to_string(step),
                       "CROSSFREE_INJECT_TID=" + vector_tid},
                      "");
    INFO("step " << step << ": " << r.err);
    REQUIRE(r.exit_code == 128 + SIGKILL);
    // The answer also says the trampoline, if the thread ran it, has
    // returned: a control thread it started exists by now.
    CHECK(target.Ask("vector") == "vector ok");
    // Wait (bounded, on /proc between round trips to the target) until
    // such a control thread has ended: it closes its socket and frees the
    // session before it exits. Every answer meanwhile names libc: record
    // died before sending its request (step 10 is before that send), so
    // no step hooks anything.
    bool only_programs_threads = false;
    bool always_libc = true;
    for (const double until = NowS() + 10; !only_programs_threads && NowS() < until;) {
      only_programs_threads = Tasks(target.pid) == tasks_before;
      if (!only_programs_threads) {
        always_libc = target.Ask("where") == "where libc.so.6 -" && always_libc;
      }
    }
    CHECK(only_programs_threads);
    CHECK(always_libc);
    // Then nothing of the injection is open in the program, below 500 or
    // above.
    CHECK(Fds(target.pid) == fds_before);
    CHECK(nice_of_vector() == nice_before);
    CHECK(target.Ask("sleepers") == "sleepers 2");
    CHECK(target.Ask("cross") == "cross");
    CHECK(target.Ask("where") == "where libc.so.6 -");
  }
  // Nothing of the injections is left open in the program (the tracer's
  // own descriptor, had a session run, would be at 500 or above).
  for (const std::string& fd : Fds(target.pid)) {
    if (std::find(fds_before.begin(), fds_before.end(), fd) == fds_before.end()) {
      INFO(fd);
      CHECK(std::stoi(fd) >= 500);
    }
  }
  // A later attach, through the same thread, works and counts exactly.
  {
    RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid), "--duration",
                       "0.05", "-o", dir + "/after.trace"},
                      {"CROSSFREE_INJECT_TID=" + vector_tid}, "");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.find("thread " + vector_tid + " stopped for") != std::string::npos);
    CHECK(target.Ask("vector") == "vector ok");
    CHECK(nice_of_vector() == nice_before);
  }
  {
    Recorder rec(target.pid, dir + "/after2.trace");
    REQUIRE(target.Ask("cross") == "cross");
    REQUIRE(rec.Detach() == 0);
  }
  CHECK(target.Ask("vector") == "vector ok");
  CHECK(target.Ask("sleepers") == "sleepers 2");
  CHECK(target.Exit() == 0);
  Trace t = LoadCompleteTrace(dir + "/after2.trace");
  CHECK(AllocsOfSize(t, 4242).size() == 1000);
}

TEST_CASE("a real Debian program that takes malloc's address: python3") {
  // /usr/bin/python3 is not PIE and takes malloc's address, so dlsym finds
  // its PLT entry for malloc: the tracer must forward to libc's, not to
  // that entry (which goes through a GOT entry it rewrote).
  const std::string dir = MakeTempDir();
  Child py({"/usr/bin/python3", "-c",
            "import sys\n"
            "print('ready', flush=True)\n"
            "for line in sys.stdin:\n"
            "    if line.strip() == 'work':\n"
            "        kept = [bytearray(50000) for _ in range(1000)]\n"
            "        del kept\n"
            "        print('worked', flush=True)\n"});
  REQUIRE(py.Line() == "ready");
  {
    Recorder rec(py.pid(), dir + "/python.trace");
    py.Send("work");
    REQUIRE(py.Line() == "worked");
    REQUIRE(rec.Detach() == 0);
    // One thread, as report counts it: the tracer's control thread, which
    // wrote the window's records and the totals, is none of the program's.
    INFO(rec.err);
    CHECK(rec.err.find(" events from 1 thread written") != std::string::npos);
  }
  py.Send("work");
  CHECK(py.Line() == "worked");
  Trace t = LoadCompleteTrace(dir + "/python.trace");
  // bytearray(50000) asks the allocator for 50001 bytes.
  CHECK(std::count_if(t.events.begin(), t.events.end(), [](const format::Event& e) {
          return e.op == format::EventOp::kAlloc && e.size == 50001;
        }) == 1000);
}

TEST_CASE("clear errors for no such process and a statically linked process") {
  RunResult none = Run({CROSSFREE_CLI, "record", "-p", "2147483647", "--duration", "0.1"}, {}, "");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no such process") != std::string::npos);
  Child stat({TargetPath("tt_attach_static")});
  REQUIRE(stat.Line().rfind("ready ", 0) == 0);
  RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(stat.pid()), "--duration",
                     "0.1", "-o", MakeTempDir() + "/static.trace"},
                    {}, "");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("statically linked") != std::string::npos);
}

// setpriv (util-linux, essential in Debian) runs a command as another user
// or without a capability; switching needs root.
constexpr char kSetpriv[] = "/usr/bin/setpriv";

TEST_CASE("clear errors for another user's process and for root without CAP_SYS_PTRACE") {
  // Running the target as user nobody and record as another user needs
  // root: CI runs as root; CROSSFREE_TEST_NO_ROOT=1 says this machine's
  // tests cannot (CONTRIBUTING.md).
  testing::SkipIfMachineLacks("CROSSFREE_TEST_NO_ROOT",
                              "the other-user and no-CAP_SYS_PTRACE checks are not run");
  INFO("uid " << geteuid() << ": this test needs root (set CROSSFREE_TEST_NO_ROOT=1 where "
       "the tests cannot run as root)");
  REQUIRE(geteuid() == 0);
  INFO(kSetpriv << " (util-linux, essential in Debian) is missing");
  REQUIRE(access(kSetpriv, X_OK) == 0);
  const std::string dir = MakeTempDir();
  REQUIRE(chmod(dir.c_str(), 0777) == 0);  // the tracer writes as nobody
  Child target({kSetpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                TargetPath("tt_attach")});
  const std::string ready = target.Line();
  REQUIRE(ready.rfind("ready ", 0) == 0);
  const std::string pid = ready.substr(6);
  // Another ordinary user: the kernel's user check.
  RunResult other = Run({kSetpriv, "--reuid=65533", "--regid=65533", "--clear-groups",
                         CROSSFREE_CLI, "record", "-p", pid, "--duration", "0.1", "-o",
                         dir + "/other.trace"},
                        {}, "");
  INFO(other.err);
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("process " + pid + " runs as user 65534 and crossfree as user 65533") !=
        std::string::npos);
  CHECK(other.err.find("run crossfree as the same user as the process, or as root") !=
        std::string::npos);
  // Root without CAP_SYS_PTRACE (as in a container started without it).
  RunResult nocap = Run({kSetpriv, "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace",
                         CROSSFREE_CLI, "record", "-p", pid, "--duration", "0.1", "-o",
                         dir + "/nocap.trace"},
                        {}, "");
  INFO(nocap.err);
  CHECK(nocap.exit_code == 2);
  CHECK(nocap.err.find("runs as user 65534 and crossfree as root") != std::string::npos);
  CHECK(nocap.err.find("without CAP_SYS_PTRACE") != std::string::npos);
  // A tracer the process cannot open (a directory only root may enter):
  // record can, the process's dlopen cannot, and says why.
  const std::string private_dir = MakeTempDir();  // 0700, root's
  const std::string hidden_lib = private_dir + "/libcrossfree-trace.so";
  {
    std::ifstream from(CROSSFREE_TRACER_LIB, std::ios::binary);
    std::ofstream to(hidden_lib, std::ios::binary);
    to << from.rdbuf();
  }
  RunResult hidden = Run({CROSSFREE_CLI, "record", "-p", pid, "--duration", "0.1", "-o",
                          dir + "/hidden.trace"},
                         {"CROSSFREE_TRACER_LIB=" + hidden_lib}, "");
  INFO(hidden.err);
  CHECK(hidden.exit_code == 2);
  CHECK(hidden.err.find("dlopen of the tracer failed in process " + pid + ": " + hidden_lib +
                        ": cannot open shared object file: Permission denied") !=
        std::string::npos);
  // None touched the target; with the capability, attaching works.
  target.Send("where");
  CHECK(target.Line() == "where libc.so.6 -");
  {
    Recorder rec(static_cast<pid_t>(std::stol(pid)), dir + "/root.trace");
    target.Send("cross");
    REQUIRE(target.Line() == "cross");
    REQUIRE(rec.Detach() == 0);
  }
  target.Send("exit");
  CHECK(target.Wait() == 0);
  Trace t = LoadCompleteTrace(dir + "/root.trace");
  CHECK(AllocsOfSize(t, 4242).size() == 1000);
}

TEST_CASE("a process in another network namespace is refused before any thread is stopped") {
  // The tracer reaches record through an abstract unix socket, which
  // exists per network namespace. A new one needs CAP_SYS_ADMIN (root, or
  // a container allowed to unshare); CROSSFREE_TEST_NO_NETNS=1 says this
  // machine has no way to make one (CONTRIBUTING.md).
  testing::SkipIfMachineLacks("CROSSFREE_TEST_NO_NETNS",
                              "the other-network-namespace refusal is not checked");
  {
    RunResult probe = Run({"/usr/bin/unshare", "-n", "/bin/true"}, {}, "");
    INFO("unshare -n failed (exit " << probe.exit_code << "): " << probe.err
         << "set CROSSFREE_TEST_NO_NETNS=1 where no network namespace can be made");
    REQUIRE(probe.exit_code == 0);
  }
  Child target({"/usr/bin/unshare", "-n", TargetPath("tt_attach")});
  const std::string ready = target.Line();
  REQUIRE(ready.rfind("ready ", 0) == 0);
  const std::string pid = ready.substr(6);
  RunResult r = Run({CROSSFREE_CLI, "record", "-p", pid, "--duration", "0.1", "-o",
                     MakeTempDir() + "/netns.trace"},
                    {}, "");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("process " + pid + " is in another network namespace") != std::string::npos);
  CHECK(r.err.find("run crossfree inside the process's container") != std::string::npos);
  target.Send("cross");
  CHECK(target.Line() == "cross");
  target.Send("where");
  CHECK(target.Line() == "where libc.so.6 -");
  target.Send("exit");
  CHECK(target.Wait() == 0);
}

TEST_CASE("a stopped process is refused, left stopped, and attaches once continued") {
  Target target;
  REQUIRE(kill(target.pid, SIGSTOP) == 0);
  int status = 0;
  REQUIRE(waitpid(target.pid, &status, WUNTRACED) == target.pid);
  REQUIRE(WIFSTOPPED(status));
  const std::string dir = MakeTempDir();
  RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid), "--duration",
                     "0.1", "-o", dir + "/stopped.trace"},
                    {}, "");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("is stopped (SIGSTOP or Ctrl-Z): continue it first") != std::string::npos);
  std::ifstream stat("/proc/" + std::to_string(target.pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  CHECK(text.substr(text.rfind(')') + 2, 1) == "T");
  REQUIRE(kill(target.pid, SIGCONT) == 0);
  CHECK(target.Ask("vector") == "vector ok");
  {
    Recorder rec(target.pid, dir + "/continued.trace");
    REQUIRE(target.Ask("cross") == "cross");
    REQUIRE(rec.Detach() == 0);
  }
  CHECK(target.Exit() == 0);
  Trace t = LoadCompleteTrace(dir + "/continued.trace");
  CHECK(AllocsOfSize(t, 4242).size() == 1000);
}

TEST_CASE("a thread with too little stack left is not made to load the tracer") {
  Target target;
  const std::string line = target.Ask("smalltid");
  REQUIRE(line.rfind("smalltid ", 0) == 0);
  RunResult r = Run({CROSSFREE_CLI, "record", "-p", std::to_string(target.pid), "--duration",
                     "0.1", "-o", MakeTempDir() + "/small.trace"},
                    {"CROSSFREE_INJECT_TID=" + line.substr(9)}, "");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("had too little stack left") != std::string::npos);
  // It was stopped and let go untouched: its read goes on.
  CHECK(target.Ask("small") == "small 1");
  CHECK(target.Ask("where") == "where libc.so.6 -");
  CHECK(target.Exit() == 0);
}

}  // namespace
}  // namespace crossfree::tracer_test
