// SPDX-License-Identifier: Apache-2.0
// RunRecord in named steps: check the options, clear the output's old
// files, start the command with the tracer's environment, wait for it and
// what it left running, finish the hand-off, then find the run's traces and
// summarise them.
#include "analyzer/record/run_command.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <fmt/core.h>

#include "analyzer/record/command_process.h"
#include "analyzer/record/exit_codes.h"
#include "analyzer/record/messages.h"
#include "analyzer/record/paths.h"
#include "analyzer/record/record_handoff.h"
#include "analyzer/record/recorded_traces.h"
#include "analyzer/record/tracer_library.h"
#include "analyzer/record/write_watchdog.h"
#include "format/trace_format.h"
#include "protocol/toggle_signal.h"

namespace crossfree::analyzer::record {
namespace {

// How long record waits for the processes a command left running once a
// SIGINT or SIGTERM asked the run to end.
constexpr double kWaitAfterStopS = 1.0;

// Where the traces go: FILE (its forks/execs write FILE.<pid>, later
// images FILE.<n>), or crossfree.<pid>.trace in the current directory.
struct OutputPlan {
  bool named = false;
  std::string path_template;  // FILE, or <cwd>/crossfree.%p.trace
  std::string MainPath(pid_t pid) const {
    return named ? path_template : CurrentDir() + fmt::format("/crossfree.{}.trace", pid);
  }
};

// The tracer creates FILE exclusively (a second image of the same pid
// after exec must not truncate it), so an old FILE goes first, and so do
// the FILE.* traces of an earlier run: they would read as this one's. (An
// unwritable place is reported after the run, like the tracer does.)
bool ClearOldTraces(const OutputPlan& plan) {
  const std::string& path = plan.path_template;
  if (unlink(path.c_str()) != 0 && errno != ENOENT && access(path.c_str(), F_OK) == 0 &&
      access(Dirname(path).c_str(), W_OK) == 0) {
    Say("crossfree record: cannot replace {}: {}\n", path, std::strerror(errno));
    return false;
  }
  std::vector<std::string> removed;
  for (const std::string& old : StaleTraces(Dirname(path), Basename(path))) {
    if (unlink(old.c_str()) != 0) {
      Say("crossfree record: cannot remove {} of an earlier run ({}); refusing to mix "
          "it with this run's traces\n",
          old, std::strerror(errno));
      return false;
    }
    removed.push_back(Basename(old));
  }
  if (!removed.empty()) {
    std::string list;
    for (size_t i = 0; i < removed.size() && i < 5; ++i) list += (i ? ", " : "") + removed[i];
    if (removed.size() > 5) list += fmt::format(" and {} more", removed.size() - 5);
    Say("crossfree record: removed {} trace file{} of an earlier run in {}: {}\n",
        removed.size(), removed.size() == 1 ? "" : "s", Dirname(path), list);
  }
  return true;
}

// The tracer first: a library before it that defines malloc would take
// every call, and the tracer would record nothing. A command that replaces
// LD_PRELOAD for a program it starts (`env LD_PRELOAD=X CMD`) drops the
// tracer there: the tracer says so at that exec (interpose_process.cc).
std::optional<std::string> PreloadList(const std::string& library,
                                       const std::vector<std::string>& preloads) {
  std::string preload = library;
  for (const std::string& lib : preloads) {
    if (lib.find(':') != std::string::npos || lib.find(' ') != std::string::npos) {
      Say("crossfree record: --preload {}: one library per --preload\n", lib);
      return std::nullopt;
    }
    preload += ":" + lib;
  }
  if (const char* old = getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += ":";
    preload += old;
  }
  return preload;
}

// --delay and --duration as the tracer takes them (CROSSFREE_DELAY_MS).
uint64_t Milliseconds(double s) { return static_cast<uint64_t>(s * 1000 + 0.5); }

// In the child between fork and exec: the tracer's settings.
void SetTracerEnvironment(const RecordOptions& o, const std::string& preload,
                          const std::string& output_template, int toggle_signal,
                          uint64_t start_ns) {
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("CROSSFREE_OUTPUT", output_template.c_str(), 1);
  setenv("CROSSFREE_MAIN_PID", std::to_string(getpid()).c_str(), 1);
  if (!o.unwind.empty()) setenv("CROSSFREE_UNWIND", o.unwind.c_str(), 1);
  if (o.depth > 0) setenv("CROSSFREE_DEPTH", std::to_string(o.depth).c_str(), 1);
  if (o.no_stacks) setenv("CROSSFREE_ENABLE_STACKS", "0", 1);
  if (o.sample > 0) setenv("CROSSFREE_SAMPLE", std::to_string(o.sample).c_str(), 1);
  if (o.delay_s >= 0) {
    setenv("CROSSFREE_DELAY_MS", std::to_string(Milliseconds(o.delay_s)).c_str(), 1);
  }
  if (o.duration_s >= 0) {
    setenv("CROSSFREE_DURATION_MS", std::to_string(Milliseconds(o.duration_s)).c_str(), 1);
  }
  if (toggle_signal != 0) {
    setenv("CROSSFREE_TOGGLE_SIGNAL", std::to_string(toggle_signal).c_str(), 1);
  }
  // The delay counts from the command's start for it and every image it
  // execs, not from each image's own start.
  setenv("CROSSFREE_START_NS", std::to_string(start_ns).c_str(), 1);
}

// The running command, or why it is not running.
struct Started {
  pid_t pid = -1;
  int exit_code = 0;  // when pid < 0: record's status
};

// Forks and execs the command; the child reports a failed exec through a
// close-on-exec pipe. Signals stay blocked across fork (SignalForwarding)
// so that none is lost before the child's pid is known.
Started StartCommand(const RecordOptions& o, const std::string& preload, const OutputPlan& plan,
                     int toggle_signal, RecordHandOff* handoff, SignalForwarding& signals) {
  const uint64_t start_ns = MonotonicNowNs();
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    Say("crossfree record: pipe failed: {}\n", std::strerror(errno));
    return {-1, kExitUsage};
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    Say("crossfree record: fork failed: {}\n", std::strerror(errno));
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return {-1, kExitUsage};
  }
  if (pid == 0) {
    signals.RestoreInChild();
    RestorePipeSignal();
    close(exec_pipe[0]);
    SetTracerEnvironment(o, preload, plan.path_template, toggle_signal, start_ns);
    if (handoff) handoff->InChild();
    execvp(argv[0], argv.data());
    int err = errno;
    ssize_t ignored = write(exec_pipe[1], &err, sizeof(err));
    (void)ignored;
    _exit(err == ENOENT ? 127 : 126);
  }
  if (handoff) {
    // A fork child's trace under the name its tracer would have given it.
    const std::string dir = CurrentDir();
    const bool named = plan.named;
    const std::string output_template = plan.path_template;
    handoff->InParent(plan.MainPath(pid), [named, output_template, dir](uint32_t child) {
      return named ? fmt::format("{}.{}", output_template, child)
                   : fmt::format("{}/crossfree.{}.trace", dir, child);
    });
    // The tracers check the delay's end on their own clock only now and
    // then (window_alarm.h): record tells them when it comes.
    if (o.delay_s > 0) handoff->OpenWindowAt(start_ns + Milliseconds(o.delay_s) * 1'000'000);
  }
  close(exec_pipe[1]);
  signals.SetChild(pid);  // pending signals are forwarded now
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got != static_cast<ssize_t>(sizeof(exec_errno))) return {pid, 0};
  int ignored_status;
  while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
  }
  signals.ClearChild();
  if (handoff) {
    handoff->Finish();
    handoff->FinishChildren();
  }
  Say("crossfree record: cannot run {}: {}\n", o.command[0],
      std::strerror(exec_errno));
  return {-1, exec_errno == ENOENT ? 127 : 126};
}

// The run's traces besides the main one: every candidate whose header names
// a process of this run as its parent, or the same pid (a later image after
// exec: "<file>.<n>"). record itself counts as one: it is the subreaper of
// what the command leaves (RunRecord), so a process whose parent exited
// before it exec'd (a double fork, a daemon) heads its new image's trace
// with record's pid, and it may have written no trace before (started by a
// raw clone, no fork handler ran). Path -> pid.
std::map<std::string, uint32_t> FindChildTraces(const OutputPlan& plan, pid_t pid,
                                                time_t started) {
  const std::string main_path = plan.MainPath(pid);
  std::vector<std::string> candidates =
      plan.named ? ListCandidates(Dirname(plan.path_template), Basename(plan.path_template) + ".",
                                  "", started - 1)
                 : ListCandidates(CurrentDir(), "crossfree.", ".trace", started - 1);
  if (!plan.named) {
    // Later images of a process (after exec) write crossfree.<pid>.trace.<n>.
    for (const std::string& c : ListTraceImages(CurrentDir(), started - 1)) {
      const std::string name = Basename(c);
      size_t at = name.find(".trace.");
      if (at != std::string::npos &&
          name.find_first_not_of("0123456789", at + 7) == std::string::npos &&
          name.substr(10, at - 10).find_first_not_of("0123456789") == std::string::npos) {
        candidates.push_back(c);
      }
    }
  }
  std::set<uint32_t> run_pids = {static_cast<uint32_t>(pid), static_cast<uint32_t>(getpid())};
  std::map<std::string, uint32_t> child_files;
  std::map<std::string, uint32_t> headers;
  std::map<std::string, uint32_t> parents;
  for (const std::string& c : candidates) {
    if (c == main_path) continue;
    if (auto counts = CountTrace(c, /*header_only=*/true)) {
      headers[c] = counts->pid;
      parents[c] = counts->ppid;
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [path, child_pid] : headers) {
      if (child_files.count(path) == 0 &&
          (run_pids.count(parents[path]) != 0 || run_pids.count(child_pid) != 0)) {
        child_files[path] = child_pid;
        run_pids.insert(child_pid);
        grew = true;
      }
    }
  }
  return child_files;
}

// Why the main trace is missing, in one line.
std::string WhyNoTrace(const std::string& main_path, const std::string& command) {
  const std::string exe = ResolveCommand(command);
  const std::string dir = Dirname(main_path);
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("cannot write to {}: {}", dir, std::strerror(errno));
  }
  if (IsFile(main_path) || (access(main_path.c_str(), F_OK) == 0)) {
    return "the file is not a readable trace (see the tracer's message above)";
  }
  if (!exe.empty() && !LoadsPreloads(exe)) {
    return fmt::format("{} is statically linked, so LD_PRELOAD cannot load the tracer", exe);
  }
  return "the command did not load the tracer (was LD_PRELOAD replaced or cleared?)";
}

struct FileSummary {
  std::string path;
  std::string kind;
  TraceCounts counts;
};

// A windowed run's empty traces, and what may have kept them empty: a
// window the tracer never opened is no error, but an empty trace without a
// word looks like one (docs/guide/tracer.md, "Windows"). With
// --toggle-signal, a trace whose window records name the signal shows that
// the signal reached the tracer: that process only made no allocation or
// free while its window was open, and its handler was not replaced.
void PrintEmptyWindowNote(const std::vector<FileSummary>& files, const RecordOptions& o) {
  size_t empty = 0, toggled = 0;
  for (const FileSummary& f : files) {
    if (!f.counts.complete || f.counts.events != 0) continue;
    ++empty;
    if (!o.toggle_signal.empty() &&
        CountWindowRecords(f.path, format::WindowCause::kSignal) != 0) {
      ++toggled;
    }
  }
  if (toggled != 0) {
    const bool one = toggled == 1;
    Say("crossfree record: {} trace{} recorded nothing though --toggle-signal {} reached "
        "{}: the process{} made no allocation or free while {} open\n",
        toggled, one ? "" : "s", o.toggle_signal, one ? "its tracer" : "their tracers",
        one ? "" : "es", one ? "its window was" : "their windows were");
  }
  if (empty == toggled) return;
  const std::string which = fmt::format("{} {}trace{} recorded nothing", empty - toggled,
                                        toggled != 0 ? "other " : "",
                                        empty - toggled == 1 ? "" : "s");
  if (!o.toggle_signal.empty()) {
    Say("crossfree record: {}: with --toggle-signal, recording starts closed until the "
        "signal reaches the tracer's handler; a program that installs its own handler "
        "for {} replaces it (choose a signal the program does not use)\n",
        which, o.toggle_signal);
  } else if (o.delay_s > 0) {
    Say("crossfree record: {}: a process that ends before --delay, or makes no "
        "allocation or free between the delay's end and the window's, records nothing "
        "(one that writes its own trace, without record's hand-off, looks at the clock "
        "on only one allocation or free in 64 of each thread while its window is "
        "closed)\n",
        which);
  }
}

// Which process a trace file is of, by its name: FILE and FILE.<n> (the
// command's later images, whose headers give its pid) are the command's,
// FILE.<pid> and FILE.<pid>.<n> a child's, crossfree.<pid>.trace[.<n>]
// that pid's. Unlike the pid in a header (what the process sees itself
// as), unique across pid namespaces: record names a child's files by the
// pid it sees.
std::string ProcessOfFile(const OutputPlan& plan, pid_t command, const FileSummary& f) {
  const std::string name = Basename(f.path);
  if (!plan.named) return name.substr(0, name.find(".trace"));
  const std::string base = Basename(plan.path_template);
  if (name.size() <= base.size() + 1) return "";
  const std::string rest = name.substr(base.size() + 1);  // "<a>" or "<a>.<b>"
  const size_t dot = rest.find('.');
  if (dot == std::string::npos && f.counts.pid == static_cast<uint32_t>(command)) return "";
  return rest.substr(0, dot);
}

// One summary for the run: the biggest traces first, then the total over
// `processes` processes.
void PrintSummary(std::vector<FileSummary> files, const std::string* main_path,
                  size_t processes) {
  std::stable_sort(files.begin(), files.end(), [](const FileSummary& a, const FileSummary& b) {
    return a.counts.events > b.counts.events;
  });
  uint64_t events = 0, allocs = 0, frees = 0, threads = 0;
  int incomplete = 0;
  for (const FileSummary& f : files) {
    events += f.counts.events;
    allocs += f.counts.allocs;
    frees += f.counts.frees;
    threads += f.counts.thread_count;
    incomplete += f.counts.complete ? 0 : 1;
  }
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < files.size() && i < kShown; ++i) {
    const FileSummary& f = files[i];
    std::string line = fmt::format("crossfree record:   {} events on {} thread{}: {} (pid {}, {})",
                                   f.counts.events, f.counts.thread_count,
                                   f.counts.thread_count == 1 ? "" : "s", f.path, f.counts.pid,
                                   f.kind);
    if (!f.counts.complete) line += fmt::format("; incomplete: {}", f.counts.problem);
    Say("{}\n", line);
  }
  if (files.size() > kShown) {
    uint64_t rest = 0;
    for (size_t i = kShown; i < files.size(); ++i) rest += files[i].counts.events;
    Say("crossfree record:   ... and {} smaller trace{} with {} events\n",
        files.size() - kShown, files.size() - kShown == 1 ? "" : "s", rest);
  }
  Say("crossfree record: total {} events ({} allocations, {} frees) on {} thread{} in {} "
      "process{}, {} trace file{}{}{}\n",
      events, allocs, frees, threads, threads == 1 ? "" : "s", processes,
      processes == 1 ? "" : "es", files.size(), files.size() == 1 ? "" : "s",
      incomplete ? fmt::format(" ({} incomplete)", incomplete) : std::string(),
      main_path ? fmt::format("; main trace {}", *main_path) : std::string());
  uint32_t period = 0;
  for (const FileSummary& f : files) period = std::max(period, f.counts.sample_period);
  if (period > 1) {
    Say("crossfree record: sampled 1/{}: these are the sampled objects' events; "
        "report, diff and gate estimate the whole from them\n",
        period);
  }
}

// After the run: finds and summarises its traces. Returns record's status.
int SummarizeRun(const RecordOptions& o, const OutputPlan& plan, pid_t pid, time_t started,
                 int status) {
  const std::string main_path = plan.MainPath(pid);
  std::map<std::string, uint32_t> child_files = FindChildTraces(plan, pid, started);
  std::optional<TraceCounts> main_counts = CountTrace(main_path, false);
  if (!main_counts) {
    // Why there is no trace, in one line, and a status CI notices.
    Say("crossfree record: no trace written to {}: {}\n", main_path,
        WhyNoTrace(main_path, o.command[0]));
    if (child_files.empty()) return status != 0 ? status : kExitUsage;
  }
  std::vector<FileSummary> files;
  if (main_counts) files.push_back({main_path, "command", *main_counts});
  for (const auto& [path, child_pid] : child_files) {
    if (auto counts = CountTrace(path, false)) {
      // A fork child's header names the image that forked it, never
      // record; any other whose parent is record was reparented to it.
      const char* kind = counts->fork_child                         ? "fork child"
                         : child_pid == static_cast<uint32_t>(pid) ? "exec'd image"
                         : counts->ppid == static_cast<uint32_t>(getpid())
                             ? "child whose parent exited"
                             : "child";
      files.push_back({path, kind, *counts});
    }
  }
  std::set<std::string> processes;
  for (const FileSummary& f : files) processes.insert(ProcessOfFile(plan, pid, f));
  PrintSummary(files, main_counts ? &main_path : nullptr, processes.size());
  PrintEmptyWindowNote(files, o);
  if (!main_counts && status == 0) return kExitUsage;
  return status;
}

}  // namespace

int RunRecord(const RecordOptions& o) {
  int toggle_signal = 0;
  if (!o.toggle_signal.empty()) {
    toggle_signal = ParseSignal(o.toggle_signal);
    if (!UsableToggleSignal(toggle_signal)) {
      Say("crossfree record: --toggle-signal {}: not a signal the tracer can use (give a "
          "name like USR2 or a number; not KILL, STOP, SEGV, BUS, FPE or ILL)\n",
          o.toggle_signal);
      return kExitUsage;
    }
  }
  std::optional<std::string> library = TracerLibraryOrError();
  if (!library) return kExitUsage;
  OutputPlan plan;
  plan.named = !o.output.empty();
  plan.path_template = plan.named ? Absolute(o.output) : CurrentDir() + "/crossfree.%p.trace";
  if (plan.named && !ClearOldTraces(plan)) return kExitUsage;
  std::optional<std::string> preload = PreloadList(*library, o.preloads);
  if (!preload) return kExitUsage;
  const time_t started = time(nullptr);

  SignalForwarding signals;
  signals.Install();
  // The command's chunks come back through shared memory and record writes
  // the trace (record_handoff.h); null: the command writes its own.
  std::unique_ptr<RecordHandOff> handoff = RecordHandOff::Prepare(o.time_resolution_ns);
  // Processes the command leaves behind are reparented to us, not to init,
  // so that we can wait for them (and their traces) too.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const Started command =
      StartCommand(o, *preload, plan, toggle_signal, handoff.get(), signals);
  if (command.pid < 0) return command.exit_code;
  const int status = WaitForChild(command.pid, o.command[0]);
  signals.ClearChild();
  // Only the command's process (its first image, then those it exec'd)
  // fills the region: once it is reaped nothing writes it, and the rest is
  // taken. Its fork children fill regions of their own, finished as each
  // ends; what is left is taken once they were waited for.
  if (handoff) {
    // Bounded even when a write never returns (write_watchdog.h).
    WriteWatchdog watchdog("finishing the command's trace");
    handoff->Finish();
  }
  // Asked to stop (a `timeout`, a service manager), record ends soon after
  // the command: processes it left running (a make's recipes, which a
  // SIGTERM to make alone does not reach) are not waited for as after a
  // normal end, which could take --wait-children's whole minute.
  const bool stopping = StopSignalReceived();
  const double wait_s =
      stopping ? std::min(o.wait_children_s, kWaitAfterStopS) : o.wait_children_s;
  WaitForDescendants(wait_s, stopping ? "record was stopped by a signal" : "--wait-children");
  if (handoff) {
    WriteWatchdog watchdog("finishing the traces of the command's child processes");
    handoff->FinishChildren();
  }
  signals.Restore();
  const bool lost = handoff && handoff->Report();
  const int result = SummarizeRun(o, plan, command.pid, started, status);
  if (lost && result == 0) {
    Say("crossfree record: the trace is incomplete: events the command recorded were "
        "lost (see 'not written' above); exit {}\n",
        kExitEventsLost);
    return kExitEventsLost;
  }
  return result;
}

}  // namespace crossfree::analyzer::record
