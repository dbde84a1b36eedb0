// SPDX-License-Identifier: Apache-2.0
// Fork children under `crossfree record`'s hand-off (docs/design.md, "The
// chunk hand-off", **Forks.**): each child hands its own region to record,
// which writes FILE.<pid>. Known answers from tt_fork_handoff
// (targets/fork_handoff_target.cc): every child's events on every thread,
// idle ones included, with the child opening and writing no trace; a
// SIGKILLed child losing none of the events it recorded; and a fork child
// that execs, whose next image takes its region over (and keeps every
// event when it is SIGKILLed); a program sh starts by vfork; forged offers;
// more children at once than record adopts, the rest writing their own.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/shm_channel.h"
#include "tests/tracer/tracer_test_util.h"

namespace crossfree::tracer_test {
namespace {

// Events per function of child i of tt_fork_handoff.
std::map<std::string, size_t> ChildEvents(int i) {
  return {{"tt_fh_child", 200 * static_cast<size_t>(i + 1)},
          {"tt_handoff_futex", 2000},
          {"tt_handoff_read", 3000},
          {"tt_fh_parent", 0}};
}

// "child <i> <pid>" lines: pid by index.
std::map<int, int> ChildPids(const std::string& out) {
  std::map<int, int> pids;
  const std::regex line("child ([0-9]+) ([0-9]+)\n");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it) {
    pids[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  }
  return pids;
}

bool HasThreadName(const Trace& t, const std::string& name) {
  for (const auto& [tid, names] : t.thread_names) {
    for (const std::string& n : names) {
      if (n == name) return true;
    }
  }
  return false;
}

// Child i's trace: complete, a fork child of parent, exactly the known
// events on three distinct threads.
void CheckChild(const std::string& path, int i, int parent, const std::string& out) {
  INFO("child " << i << ": " << path);
  Trace t = LoadTrace(path);
  INFO("trace: " << t.error);
  REQUIRE(t.complete);
  CHECK((t.header.fields.flags & format::kHeaderFlagForkChild) != 0);
  CHECK(t.header.fields.ppid == static_cast<uint32_t>(parent));
  auto fns = ParseFunctions(out);
  std::set<uint32_t> tids;
  for (const auto& [fn, expected] : ChildEvents(i)) {
    INFO(fn);
    REQUIRE(fns.count(fn) == 1);
    const std::vector<format::Event> events = EventsFrom(t, fns[fn]);
    CHECK(events.size() == expected);
    for (const format::Event& e : events) tids.insert(e.tid);
  }
  CHECK(tids.size() == 3);
  CHECK(HasThreadName(t, "hf-futex"));
  CHECK(HasThreadName(t, "hf-read"));
}

// Child i's trace for each "child <i> <pid>" line of out, each a fork child
// of parent with its known events.
void CheckChildren(const std::string& trace, int parent, const std::string& out) {
  for (const auto& [i, pid] : ChildPids(out)) {
    CheckChild(trace + "." + std::to_string(pid), i, parent, out);
  }
}

// The hand-off's environment for these tests: small buffers, so that every
// thread fills several chunks, and no age flush, so that a killed process's
// last events exist only in its region.
std::vector<std::string> HandoffEnv() {
  return {std::string("CROSSFREE_TRACER_LIB=") + CROSSFREE_TRACER_LIB, "CROSSFREE_BUFFER_KB=16",
          "CROSSFREE_FLUSH_MS=0"};
}

// `crossfree record -o trace -- command...` in HandoffEnv.
RunResult Record(const std::string& trace, const std::vector<std::string>& command) {
  std::vector<std::string> argv = {CROSSFREE_CLI, "record", "-o", trace, "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return Run(argv, HandoffEnv(), "");
}

// What RecordShellTarget found: where the traces are, and the target's.
struct ShellRun {
  std::string trace;  // record's -o; the processes' traces are trace.<pid>[.<n>]
  Trace target;
};

// Runs shell -c "tt_fork_handoff 2; true" under record, which must exit 0,
// lose no event and name the processes handed over (also: "(also for
// ...)"). Checks the trace of the target's image (pid of its first child's
// parent, path suffix after it): complete, with the parent's 200 events,
// and both children's traces.
ShellRun RecordShellTarget(const std::string& shell, const std::string& also,
                           const std::string& suffix) {
  const std::string trace = MakeTempDir() + "/t";
  RunResult r = Record(trace, {shell, "-c", TargetPath("tt_fork_handoff") + " 2; true"});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  CHECK(r.err.find(also) != std::string::npos);
  const std::map<int, int> pids = ChildPids(r.out);
  REQUIRE(pids.size() == 2);
  Trace first = LoadCompleteTrace(trace + "." + std::to_string(pids.at(0)));
  Trace target = LoadCompleteTrace(trace + "." + std::to_string(first.header.fields.ppid) + suffix);
  CHECK(target.header.fields.pid == first.header.fields.ppid);
  auto fns = ParseFunctions(r.out);
  CHECK(EventsFrom(target, fns["tt_fh_parent"]).size() == 200);
  CheckChildren(trace, static_cast<int>(target.header.fields.pid), r.out);
  return {trace, std::move(target)};
}

TEST_CASE("handoff: fork children hand every chunk to record and open no trace (strace)",
          "[handoff][fork]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  const std::string log = dir + "/strace";
  constexpr int kChildren = 3;
  // -y: every descriptor argument is printed with what it refers to.
  RunResult r = Run({"strace", "-f", "-qq", "-y", "-o", log, "-e",
                     "trace=openat,open,creat,write,pwrite64,writev,memfd_create,sendmsg",
                     CROSSFREE_CLI, "record", "-o", trace, "--", TargetPath("tt_fork_handoff"),
                     std::to_string(kChildren)},
                    HandoffEnv(), "");
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const std::map<int, int> pids = ChildPids(r.out);
  REQUIRE(pids.size() == kChildren);
  CHECK(r.err.find("(also for 3 child processes)") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  // Clean exits: every chunk was sealed by the children themselves.
  CHECK(NumberBefore(r.err, "partly filled chunks") == 0);
  std::set<std::string> children;
  for (const auto& [i, pid] : pids) children.insert(std::to_string(pid));
  std::map<std::string, int> regions, offers;
  std::istringstream lines(ReadAll(log));
  for (std::string line; std::getline(lines, line);) {
    const std::string pid = line.substr(0, line.find(' '));
    if (children.count(pid) == 0) continue;
    INFO(line);
    CHECK(line.find(trace) == std::string::npos);
    if (line.find("memfd_create(\"crossfree-channel\"") != std::string::npos) ++regions[pid];
    if (line.find("sendmsg(") != std::string::npos) ++offers[pid];
    // The child's own output (stdout, its pipes); nothing else.
    std::smatch w;
    if (std::regex_search(line, w,
                          std::regex("^[0-9]+ (write|pwrite64|writev)\\(([0-9]+)<([^>]*)>"))) {
      CHECK((w[2].str() == "1" || w[3].str().rfind("pipe:", 0) == 0));
    }
  }
  // Not vacuous: strace saw each child make its region and offer it.
  for (const std::string& pid : children) {
    INFO("child pid " << pid);
    CHECK(regions[pid] == 1);
    CHECK(offers[pid] == 1);
  }
  std::smatch m;
  REQUIRE(std::regex_search(r.out, m, std::regex("reaped ([0-9]+) 0\n")));
  Trace parent = LoadTrace(trace);
  INFO("parent: " << parent.error);
  REQUIRE(parent.complete);
  auto fns = ParseFunctions(r.out);
  CHECK(EventsFrom(parent, fns["tt_fh_parent"]).size() == 200);
  CHECK(EventsFrom(parent, fns["tt_fh_child"]).empty());
  CheckChildren(trace, static_cast<int>(parent.header.fields.pid), r.out);
}

TEST_CASE("handoff: a SIGKILLed fork child with idle threads loses none of its recorded events",
          "[handoff][fork][sigkill]") {
  // CROSSFREE_FLUSH_MS=0: the tracer never writes a partly filled buffer on
  // its own, so the killed child's last events exist only in its region.
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = Record(trace, {TargetPath("tt_fork_handoff"), "2", "kill"});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  const std::map<int, int> pids = ChildPids(r.out);
  REQUIRE(pids.size() == 2);
  // The last child was killed; the first exited cleanly.
  CHECK(r.out.find("reaped " + std::to_string(pids.at(1)) + " 9\n") != std::string::npos);
  CHECK(r.out.find("reaped " + std::to_string(pids.at(0)) + " 0\n") != std::string::npos);
  CHECK(r.err.find("(also for 2 child processes)") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  // One open chunk per thread of the killed child, taken by record.
  CHECK(NumberBefore(r.err, "partly filled chunks") == 3);
  Trace parent = LoadTrace(trace);
  REQUIRE(parent.complete);
  CheckChildren(trace, static_cast<int>(parent.header.fields.pid), r.out);
}

TEST_CASE("handoff: a fork child's exec'd image takes the child's region over",
          "[handoff][fork]") {
  // bash forks for the target (the "; true" keeps it from exec'ing in
  // place); the child execs it, and that image takes the child's region
  // over: record writes t.<pid> (bash's fork image) and t.<pid>.1.
  // bash's fork child (then the target's image in it) and the target's two.
  const ShellRun run =
      RecordShellTarget("/bin/bash", "(also for 1 exec'd image, 3 child processes)", ".1");
  Trace fork_image =
      LoadCompleteTrace(run.trace + "." + std::to_string(run.target.header.fields.pid));
  INFO("bash's fork image");
  CHECK((fork_image.header.fields.flags & format::kHeaderFlagForkChild) != 0);
}

TEST_CASE("handoff: SIGKILL of an image exec'd in a fork child loses none of its events",
          "[handoff][fork][sigkill]") {
  // bash forks for the background job and the child execs tt_handoff,
  // which takes the child's region over; once its four threads are idle
  // ("done" on its stdout) bash SIGKILLs it. (The loop only waits for that
  // line; the answer does not depend on when it is seen.)
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  const std::string out = dir + "/out";
  const std::string script = TargetPath("tt_handoff") + " idle </dev/null >" + out +
                             " & p=$!; until grep -q '^done ' " + out +
                             "; do sleep 0.01; done; kill -9 $p; wait $p; echo killed $?";
  RunResult r = Record(trace, {"/bin/bash", "-c", script});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("killed 137") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  // The target's four threads' open chunks; bash's images sealed theirs.
  CHECK(NumberBefore(r.err, "partly filled chunks") == 4);
  const std::string target_out = ReadAll(out);
  std::smatch m;
  REQUIRE(std::regex_search(target_out, m, std::regex("done ([0-9]+)")));
  Trace t = LoadTrace(trace + "." + m[1].str() + ".1");
  INFO("trace: " << t.error);
  REQUIRE(t.complete);
  auto fns = ParseFunctions(target_out);
  const std::map<std::string, size_t> expected = {{"tt_handoff_main", 500},
                                                  {"tt_handoff_futex", 2000},
                                                  {"tt_handoff_read", 3000},
                                                  {"tt_handoff_bulk", 120000}};
  for (const auto& [fn, count] : expected) {
    INFO(fn);
    REQUIRE(fns.count(fn) == 1);
    CHECK(EventsFrom(t, fns[fn]).size() == count);
  }
}

TEST_CASE("handoff: a child made by a raw fork system call records into a trace of its own",
          "[handoff][fork]") {
  // No atfork handler runs in it: the tracer finds its state wiped
  // (MADV_WIPEONFORK) at the child's first hook call and makes it the
  // child's own there. Before, the child wrote into its parent's buffers
  // in the shared region: both processes' events under one pid, double
  // frees, damaged chunks, and record saying 0 lost.
  const std::string trace = MakeTempDir() + "/t";
  RunResult r = Record(trace, {TargetPath("tt_fork_handoff"), "raw"});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  CHECK(r.err.find("(also for 1 child process)") != std::string::npos);
  CHECK(r.err.find("2 processes, 2 trace files") != std::string::npos);
  const std::map<int, int> pids = ChildPids(r.out);
  REQUIRE(pids.size() == 1);
  CHECK(r.out.find("reaped " + std::to_string(pids.at(0)) + " 0\n") != std::string::npos);
  auto fns = ParseFunctions(r.out);
  Trace parent = LoadCompleteTrace(trace);
  CHECK(EventsFrom(parent, fns["tt_fh_parent"]).size() == 2200);
  CHECK(EventsFrom(parent, fns["tt_fh_child"]).empty());
  Trace child = LoadCompleteTrace(trace + "." + std::to_string(pids.at(0)));
  CHECK((child.header.fields.flags & format::kHeaderFlagForkChild) != 0);
  CHECK(child.header.fields.pid == static_cast<uint32_t>(pids.at(0)));
  CHECK(child.header.fields.ppid == parent.header.fields.pid);
  CHECK(EventsFrom(child, fns["tt_fh_child"]).size() == 4000);
  CHECK(EventsFrom(child, fns["tt_fh_parent"]).empty());
}

TEST_CASE("handoff: a program sh starts by vfork hands its region over at start-up",
          "[handoff][fork]") {
  // dash runs a command with vfork and exec: no fork handler runs, so the
  // target's image offers record a region of its own when it starts (it
  // has the socket, not the region); its fork children then do as above.
  // The target and its two children; sh itself is the command.
  const ShellRun run = RecordShellTarget("/bin/sh", "(also for 3 child processes)", "");
  CHECK((run.target.header.fields.flags & format::kHeaderFlagForkChild) == 0);
}

TEST_CASE("handoff: forged region offers are refused and named, real children still hand over",
          "[handoff][fork]") {
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = Record(trace, {TargetPath("tt_fork_handoff"), "forge"});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("crossfree record: 4 child process regions refused (a malformed region offer "
                   "on the hand-off socket: 1; a child process's hand-off region is unsealed or "
                   "of a bad size: 1; a child process's hand-off region has a bad control block: "
                   "1; the region offered for pid ") != std::string::npos);
  // No file named: record knows no process behind a forged offer.
  CHECK(r.err.find("came with another process's pidfd: 1); those processes write their own "
                   "traces, as without record\n") != std::string::npos);
  CHECK(r.err.find("(also for 1 child process)") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  const std::map<int, int> pids = ChildPids(r.out);
  REQUIRE(pids.size() == 1);
  Trace parent = LoadTrace(trace);
  REQUIRE(parent.complete);
  CheckChild(trace + "." + std::to_string(pids.at(0)), 0,
             static_cast<int>(parent.header.fields.pid), r.out);
}

TEST_CASE("handoff: fork children beyond record's limit write their own traces, named by record",
          "[handoff][fork][refuse]") {
  // tt_fork_handoff refuse: 70 children alive at once, each holding its
  // region (or its own file) until every one has said which; record adopts
  // 64 and refuses the rest, which write t.<pid> themselves. Child i makes
  // 20 * (i + 1) events in tt_fh_child, so every file's count names its
  // child.
  constexpr int kChildren = 70;
  constexpr int kAdopted = static_cast<int>(shm::kMaxChildRegions);
  // Above the limit by more than the 5 files record names; at most the
  // target's 128.
  static_assert(kChildren > kAdopted + 5 && kChildren <= 128);
  constexpr int kRefused = kChildren - kAdopted;
  const std::string dir = MakeTempDir();
  const std::string trace = dir + "/t";
  RunResult r = Record(trace, {TargetPath("tt_fork_handoff"), "refuse", std::to_string(kChildren)});
  INFO("stdout:\n" << r.out << "stderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);

  // What each child held once its offer was answered: its region (adopted)
  // or its own trace file open (refused), never both.
  struct Held {
    int pid = 0;
    bool region = false;
    bool own_file = false;
  };
  std::map<int, Held> held;  // by child index
  std::set<int> pids;
  const std::regex line("held ([0-9]+) ([0-9]+)([^\n]*)\n");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line);
       it != std::sregex_iterator(); ++it) {
    const int i = std::stoi((*it)[1]);
    const int pid = std::stoi((*it)[2]);
    const std::string what = (*it)[3];
    INFO("child " << i << " pid " << pid << ":" << what);
    REQUIRE(held.count(i) == 0);
    REQUIRE(i >= 0);
    REQUIRE(i < kChildren);
    Held h{pid, what.find(" region") != std::string::npos, false};
    // Files it holds in the trace directory: its own trace only, when refused.
    const std::regex file(" file (" + dir + "/[^ ]*)");
    for (auto f = std::sregex_iterator(what.begin(), what.end(), file);
         f != std::sregex_iterator(); ++f) {
      CHECK((*f)[1].str() == trace + "." + std::to_string(pid));
      h.own_file = true;
    }
    CHECK(h.region != h.own_file);
    held[i] = h;
    pids.insert(pid);
  }
  REQUIRE(held.size() == kChildren);
  REQUIRE(pids.size() == kChildren);
  std::set<std::string> refused_files;
  int adopted = 0;
  for (const auto& [i, h] : held) {
    if (h.region) ++adopted;
    if (h.own_file) refused_files.insert(trace + "." + std::to_string(h.pid));
    CHECK(r.out.find("reaped " + std::to_string(h.pid) + " 0\n") != std::string::npos);
  }
  CHECK(adopted == kAdopted);
  CHECK(refused_files.size() == kRefused);

  // record: the adopted children in the hand-off line, the refused ones in
  // a line of their own, with the reason and the files they wrote.
  const std::string n_adopted = std::to_string(kAdopted), n_refused = std::to_string(kRefused);
  CHECK(r.err.find("(also for " + n_adopted + " child processes)") != std::string::npos);
  CHECK(r.err.find("; 0 events lost of those the command recorded") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(
      r.err, m,
      std::regex("crossfree record: " + n_refused +
                 " child process regions refused \\(offered while " + n_adopted +
                 " were live, the most record adopts at once: " + n_refused +
                 "\\); those processes write their own traces, as without record: ([^\n]*) and " +
                 std::to_string(kRefused - 5) + " more\n")));
  std::set<std::string> named;
  {
    std::istringstream list(m[1].str());
    for (std::string f; std::getline(list, f, ',');) {
      if (!f.empty() && f[0] == ' ') f.erase(0, 1);
      INFO("named: " << f);
      CHECK(refused_files.count(f) == 1);
      named.insert(f);
    }
  }
  CHECK(named.size() == 5);

  // Exactly one file per process: the main trace and t.<pid> for each child.
  std::set<std::string> expected_files = {trace};
  for (int pid : pids) expected_files.insert(trace + "." + std::to_string(pid));
  std::set<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.insert(e.path().string());
  CHECK(files == expected_files);

  // Every child's events in its file, exactly; none in another's. The
  // hand-off line counts the main trace's and the adopted children's
  // events, the run's total every file's: nothing lost, nothing twice.
  Trace parent = LoadCompleteTrace(trace);
  auto fns = ParseFunctions(r.out);
  REQUIRE(fns.count("tt_fh_parent") == 1);
  REQUIRE(fns.count("tt_fh_child") == 1);
  CHECK(EventsFrom(parent, fns["tt_fh_parent"]).size() == 200);
  CHECK(EventsFrom(parent, fns["tt_fh_child"]).empty());
  uint64_t handed = parent.events.size(), all = parent.events.size();
  size_t child_events = 0;
  for (const auto& [i, h] : held) {
    const std::string path = trace + "." + std::to_string(h.pid);
    INFO("child " << i << (h.own_file ? " (refused)" : " (adopted)") << ": " << path);
    Trace t = LoadCompleteTrace(path);
    CHECK((t.header.fields.flags & format::kHeaderFlagForkChild) != 0);
    CHECK(t.header.fields.pid == static_cast<uint32_t>(h.pid));
    CHECK(t.header.fields.ppid == parent.header.fields.pid);
    const size_t mine = EventsFrom(t, fns["tt_fh_child"]).size();
    CHECK(mine == 20 * static_cast<size_t>(i + 1));
    CHECK(EventsFrom(t, fns["tt_fh_parent"]).empty());
    child_events += mine;
    all += t.events.size();
    if (h.region) handed += t.events.size();
  }
  CHECK(child_events == 20 * static_cast<size_t>(kChildren * (kChildren + 1) / 2));
  CHECK(NumberBefore(r.err, "events in [0-9]+ chunks \\(") == static_cast<long long>(handed));
  CHECK(NumberBefore(r.err, "events \\([0-9]+ allocations") == static_cast<long long>(all));
  const std::string processes = std::to_string(kChildren + 1);
  CHECK(r.err.find(" in " + processes + " processes, " + processes + " trace files;") !=
        std::string::npos);
}

}  // namespace
}  // namespace crossfree::tracer_test
