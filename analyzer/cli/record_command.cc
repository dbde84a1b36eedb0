// SPDX-License-Identifier: Apache-2.0
// `crossfree record [-o FILE] [--unwind MODE] [--depth N] [--no-stacks]
// [--sample N] [--delay S] [--duration S] [--toggle-signal SIG]
// [--preload LIB]... -- CMD ARGS...`: runs CMD with libcrossfree-trace.so
// preloaded (first, then every --preload library, then an inherited
// LD_PRELOAD) and supervises it like a shell would:
//  - SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to `record` are passed on to
//    CMD (a terminal's signal already reaches CMD through its process group
//    and is not sent twice); `record` waits for CMD and returns its status,
//    128 + N when a signal killed it, naming the signal;
//  - a command that cannot be started gets 127 (not found) or 126, with one
//    message;
//  - before the run, trace files FILE.* left by an earlier run with the same
//    -o are removed (and listed), so one run's files never mix with
//    another's;
//  - after the run, one summary for all the run's traces (forks and exec'd
//    images included): the biggest first, then a total line;
//  - processes the command leaves running (a background job, a daemon's
//    child) are waited for too: `record` is their subreaper (prctl
//    PR_SET_CHILD_SUBREAPER), so they become its children when their parent
//    exits; after --wait-children seconds (default 60) it names those still
//    running and summarises what is on disk then;
//  - when no trace could be written (an unwritable -o, a command that did
//    not load the tracer), it says why and exits 2 if CMD itself succeeded.
// `crossfree record -p PID` attaches to a running process instead
// (attach_record.cc).
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <iterator>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "analyzer/record/attach_record.h"
#include "analyzer/cli/commands.h"
#include "analyzer/record/recorded_traces.h"
#include "analyzer/record/record_handoff.h"
#include "format/trace_reader.h"
#include "protocol/toggle_signal.h"

namespace crossfree::analyzer::cli {
namespace {

using record::AttachOptions;
using record::CountTrace;
using record::ListCandidates;
using record::ListTraceImages;
using record::RecordHandOff;
using record::StaleTraces;
using record::TraceCounts;

struct RecordArgs {
  std::string output;
  std::string unwind;
  int depth = 0;
  bool no_stacks = false;
  uint32_t sample = 0;      // 0: not given
  double delay_s = -1;      // < 0: not given
  double duration_s = -1;
  std::string toggle_signal;
  std::vector<std::string> preloads;
  std::vector<std::string> command;
  double wait_children_s = 60;
  int pid = 0;  // -p: attach to this running process instead
};

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string CurrentDir() {
  char buf[4096];
  if (getcwd(buf, sizeof(buf)) == nullptr) return ".";
  return buf;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  return CurrentDir() + "/" + path;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The tracer library: $CROSSFREE_TRACER_LIB, else next to this binary
// (build tree: bin/../lib; installed: <prefix>/bin/../lib[64|/<triplet>]).
// `searched` lists the places looked at.
std::optional<std::string> FindTracerLibrary(std::string* searched) {
  if (const char* env = getenv("CROSSFREE_TRACER_LIB"); env != nullptr && *env != '\0') {
    *searched = env;
    if (IsFile(env)) return Absolute(env);
    return std::nullopt;
  }
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return std::nullopt;
  exe[n] = '\0';
  std::string bin = Dirname(exe);
  const char* kCandidates[] = {"/../lib/", "/", "/../lib64/", "/../lib/x86_64-linux-gnu/",
                               "/../lib/crossfree/"};
  for (const char* dir : kCandidates) {
    std::string path = bin + dir + "libcrossfree-trace.so";
    if (!searched->empty()) *searched += ", ";
    *searched += path;
    if (IsFile(path)) {
      char real[4096];
      if (realpath(path.c_str(), real) != nullptr) return std::string(real);
      return path;
    }
  }
  return std::nullopt;
}

// FindTracerLibrary, saying on stderr where it looked when it finds none.
std::optional<std::string> TracerLibraryOrError() {
  std::string searched;
  std::optional<std::string> library = FindTracerLibrary(&searched);
  if (!library) {
    fmt::print(stderr, "crossfree record: cannot find libcrossfree-trace.so (looked at {})\n",
               searched);
  }
  return library;
}

// The command's pid while it runs, for the forwarding handler.
volatile sig_atomic_t g_child_pid = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

void ForwardSignal(int sig, siginfo_t* info, void*) {
  // A signal the kernel generated for the terminal (^C, ^\, hang-up) went
  // to the whole foreground process group, CMD included: do not send it
  // twice. One sent to `record` alone (kill, a service manager) is passed on.
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  pid_t child = g_child_pid;
  if (child > 0) kill(child, sig);
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

uint64_t MonotonicNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// This process's children, from /proc: pid and command name.
std::vector<std::pair<int, std::string>> RunningChildren() {
  std::vector<std::pair<int, std::string>> out;
  const int self = getpid();
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const char* name = e->d_name;
    if (name[0] < '1' || name[0] > '9') continue;
    FILE* f = std::fopen(fmt::format("/proc/{}/stat", name).c_str(), "r");
    if (f == nullptr) continue;
    char buf[512];
    size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    // pid (comm) state ppid ...: comm may hold spaces and parentheses.
    const char* open = std::strchr(buf, '(');
    const char* close = std::strrchr(buf, ')');
    if (open == nullptr || close == nullptr || close < open) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(close + 1, " %c %d", &state, &ppid) != 2 || ppid != self) continue;
    if (state == 'Z') continue;  // exited; reaped below
    out.emplace_back(std::atoi(name), std::string(open + 1, close));
  }
  closedir(d);
  return out;
}

// After the command exited: reaps the processes it left running (they were
// reparented to us, the subreaper) until none is left or `budget_s` passed;
// then names those still running. Returns how many were waited for.
int WaitForDescendants(double budget_s) {
  const uint64_t deadline = MonotonicNowNs() + static_cast<uint64_t>(budget_s * 1e9);
  int reaped = 0;
  for (;;) {
    int status = 0;
    pid_t done = waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      ++reaped;
      continue;
    }
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) break;  // ECHILD: none left
    if (MonotonicNowNs() >= deadline) {
      std::string list;
      for (const auto& [pid, name] : RunningChildren()) {
        list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", pid, name);
      }
      fmt::print(stderr,
                 "crossfree record: after {:g} s (--wait-children), still running: {}; their "
                 "traces are counted as they are now\n",
                 budget_s, list.empty() ? "unknown" : list);
      break;
    }
    usleep(20'000);
  }
  return reaped;
}

int WaitForChild(pid_t pid, const std::string& name) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    fmt::print(stderr, "crossfree record: {} was killed by {}{}\n", name,
               SignalName(WTERMSIG(status)), WCOREDUMP(status) ? " (core dumped)" : "");
    return 128 + WTERMSIG(status);
  }
  return 127;
}

// True if path names a dynamically linked ELF executable (one that LD_PRELOAD
// can reach): it has a PT_INTERP program header. Unknown counts as true.
bool LoadsPreloads(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return true;
  Elf64_Ehdr eh;
  bool dynamic = true;
  if (std::fread(&eh, sizeof(eh), 1, f) == 1 && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
      eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof(Elf64_Phdr)) {
    dynamic = false;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
      Elf64_Phdr ph;
      if (std::fseek(f, static_cast<long>(eh.e_phoff + i * sizeof(ph)), SEEK_SET) != 0 ||
          std::fread(&ph, sizeof(ph), 1, f) != 1) {
        dynamic = true;
        break;
      }
      if (ph.p_type == PT_INTERP) {
        dynamic = true;
        break;
      }
    }
  }
  std::fclose(f);
  return dynamic;
}

// The command's executable as execvp would find it, or "" if not found.
std::string ResolveCommand(const std::string& cmd) {
  if (cmd.find('/') != std::string::npos) return cmd;
  const char* path = getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + cmd;
    if (access(candidate.c_str(), X_OK) == 0 && IsFile(candidate)) return candidate;
    start = end + 1;
  }
  return "";
}

// A signal given as a number, "USR2" or "SIGUSR2" (libc's abbreviations,
// sigabbrev_np), or "RTMIN+N"; 0 if unknown.
int ParseSignal(const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), ::isdigit)) {
    return text.size() < 4 ? std::stoi(text) : 0;
  }
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  if (name.rfind("RTMIN+", 0) == 0 && name.size() > 6 &&
      std::all_of(name.begin() + 6, name.end(), ::isdigit) && name.size() < 9) {
    int sig = SIGRTMIN + std::stoi(name.substr(6));
    return sig <= SIGRTMAX ? sig : 0;
  }
  return 0;
}

int RunRecord(const RecordArgs& args) {
  int toggle_signal = 0;
  if (!args.toggle_signal.empty()) {
    toggle_signal = ParseSignal(args.toggle_signal);
    if (!UsableToggleSignal(toggle_signal)) {
      fmt::print(stderr,
                 "crossfree record: --toggle-signal {}: not a signal the tracer can use (give a "
                 "name like USR2 or a number; not KILL, STOP, SEGV, BUS, FPE or ILL)\n",
                 args.toggle_signal);
      return kExitUsage;
    }
  }
  std::optional<std::string> library = TracerLibraryOrError();
  if (!library) return kExitUsage;
  // The main trace: FILE (its forks/execs write FILE.<pid>, later images
  // FILE.<n>), or crossfree.<pid>.trace in the current directory.
  const bool named = !args.output.empty();
  const std::string output_template =
      named ? Absolute(args.output) : CurrentDir() + "/crossfree.%p.trace";
  if (named) {
    // The tracer creates FILE exclusively (a second image of the same pid
    // after exec must not truncate it), so an old FILE goes first, and so
    // do the FILE.* traces of an earlier run: they would read as this one's.
    // (An unwritable place is reported after the run, like the tracer does.)
    if (unlink(output_template.c_str()) != 0 && errno != ENOENT &&
        access(output_template.c_str(), F_OK) == 0 && access(Dirname(output_template).c_str(), W_OK) == 0) {
      fmt::print(stderr, "crossfree record: cannot replace {}: {}\n", output_template,
                 std::strerror(errno));
      return kExitUsage;
    }
    std::vector<std::string> stale =
        StaleTraces(Dirname(output_template), Basename(output_template));
    std::vector<std::string> removed;
    for (const std::string& path : stale) {
      if (unlink(path.c_str()) == 0) {
        removed.push_back(Basename(path));
      } else {
        fmt::print(stderr,
                   "crossfree record: cannot remove {} of an earlier run ({}); refusing to mix "
                   "it with this run's traces\n",
                   path, std::strerror(errno));
        return kExitUsage;
      }
    }
    if (!removed.empty()) {
      std::string list;
      for (size_t i = 0; i < removed.size() && i < 5; ++i) list += (i ? ", " : "") + removed[i];
      if (removed.size() > 5) list += fmt::format(" and {} more", removed.size() - 5);
      fmt::print(stderr, "crossfree record: removed {} trace file{} of an earlier run in {}: {}\n",
                 removed.size(), removed.size() == 1 ? "" : "s", Dirname(output_template), list);
    }
  }
  // The tracer first: a library before it that defines malloc would take
  // every call, and the tracer would record nothing.
  std::string preload = *library;
  for (const std::string& lib : args.preloads) {
    if (lib.find(':') != std::string::npos || lib.find(' ') != std::string::npos) {
      fmt::print(stderr, "crossfree record: --preload {}: one library per --preload\n", lib);
      return kExitUsage;
    }
    preload += ":" + lib;
  }
  if (const char* old = getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += ":";
    preload += old;
  }
  // A command that replaces LD_PRELOAD for a program it starts (`env
  // LD_PRELOAD=X CMD`) drops the tracer there: the tracer says so at that
  // exec (interpose_process.cc).
  time_t started = time(nullptr);

  // Signals: forwarded while the command runs (see ForwardSignal). Blocked
  // across fork so that none is lost before the child's pid is known.
  struct sigaction forward = {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  struct sigaction old_actions[std::size(kForwarded)];
  sigset_t block, old_mask;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old_mask);
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], &forward, &old_actions[i]);
  }
  auto restore_signals = [&] {
    for (size_t i = 0; i < std::size(kForwarded); ++i) {
      sigaction(kForwarded[i], &old_actions[i], nullptr);
    }
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };

  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child reports a failed exec through a close-on-exec pipe.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    fmt::print(stderr, "crossfree record: pipe failed: {}\n", std::strerror(errno));
    restore_signals();
    return kExitUsage;
  }
  // The command's chunks come back through shared memory and record writes
  // the trace (record_handoff.h); null: the command writes its own.
  std::unique_ptr<RecordHandOff> handoff = RecordHandOff::Prepare();
  std::fflush(stdout);
  std::fflush(stderr);
  // Processes the command leaves behind are reparented to us, not to init,
  // so that we can wait for them (and their traces) too.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t pid = fork();
  if (pid < 0) {
    fmt::print(stderr, "crossfree record: fork failed: {}\n", std::strerror(errno));
    restore_signals();
    return kExitUsage;
  }
  if (pid == 0) {
    restore_signals();
    close(exec_pipe[0]);
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("CROSSFREE_OUTPUT", output_template.c_str(), 1);
    setenv("CROSSFREE_MAIN_PID", std::to_string(getpid()).c_str(), 1);
    if (!args.unwind.empty()) setenv("CROSSFREE_UNWIND", args.unwind.c_str(), 1);
    if (args.depth > 0) setenv("CROSSFREE_DEPTH", std::to_string(args.depth).c_str(), 1);
    if (args.no_stacks) setenv("CROSSFREE_ENABLE_STACKS", "0", 1);
    if (args.sample > 0) setenv("CROSSFREE_SAMPLE", std::to_string(args.sample).c_str(), 1);
    auto ms = [](double s) { return std::to_string(static_cast<uint64_t>(s * 1000 + 0.5)); };
    if (args.delay_s >= 0) setenv("CROSSFREE_DELAY_MS", ms(args.delay_s).c_str(), 1);
    if (args.duration_s >= 0) setenv("CROSSFREE_DURATION_MS", ms(args.duration_s).c_str(), 1);
    if (toggle_signal != 0) {
      setenv("CROSSFREE_TOGGLE_SIGNAL", std::to_string(toggle_signal).c_str(), 1);
    }
    // The delay counts from here for the command and every image it
    // execs, not from each image's own start.
    setenv("CROSSFREE_START_NS", std::to_string(MonotonicNowNs()).c_str(), 1);
    if (handoff) handoff->InChild();
    execvp(argv[0], argv.data());
    int err = errno;
    ssize_t ignored = write(exec_pipe[1], &err, sizeof(err));
    (void)ignored;
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child_pid = pid;
  if (handoff) {
    // A fork child's trace under the name its tracer would have given it.
    const std::string dir = CurrentDir();
    handoff->InParent(
        named ? output_template : dir + fmt::format("/crossfree.{}.trace", pid),
        [named, output_template, dir](uint32_t child) {
          return named ? fmt::format("{}.{}", output_template, child)
                       : fmt::format("{}/crossfree.{}.trace", dir, child);
        });
  }
  close(exec_pipe[1]);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // pending signals are forwarded now
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    int ignored_status;
    while (waitpid(pid, &ignored_status, 0) < 0 && errno == EINTR) {
    }
    g_child_pid = 0;
    if (handoff) {
      handoff->Finish();
      handoff->FinishChildren();
    }
    restore_signals();
    fmt::print(stderr, "crossfree record: cannot run {}: {}\n", args.command[0],
               std::strerror(exec_errno));
    return exec_errno == ENOENT ? 127 : 126;
  }
  int status = WaitForChild(pid, args.command[0]);
  g_child_pid = 0;
  // Only the command's process (its first image, then those it exec'd)
  // fills the region: once it is reaped nothing writes it, and the rest is
  // taken. Its fork children fill regions of their own, finished as each
  // ends; what is left is taken once they were waited for.
  if (handoff) handoff->Finish();
  if (int waited = WaitForDescendants(args.wait_children_s); waited > 0) {
    fmt::print(stderr, "crossfree record: waited for {} process{} the command left running\n",
               waited, waited == 1 ? "" : "es");
  }
  if (handoff) handoff->FinishChildren();
  restore_signals();
  if (handoff) handoff->Report();

  // Find the run's traces: the main file, then every candidate whose header
  // names a process of this run as its parent, or the same pid (a later
  // image after exec: "<file>.<n>").
  std::string main_path =
      named ? output_template : CurrentDir() + fmt::format("/crossfree.{}.trace", pid);
  std::vector<std::string> candidates =
      named ? ListCandidates(Dirname(output_template), Basename(output_template) + ".", "",
                             started - 1)
            : ListCandidates(CurrentDir(), "crossfree.", ".trace", started - 1);
  if (!named) {
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
  std::set<uint32_t> run_pids = {static_cast<uint32_t>(pid)};
  std::map<std::string, uint32_t> child_files;  // path -> pid
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

  std::optional<TraceCounts> main_counts = CountTrace(main_path, false);
  if (!main_counts) {
    // Why there is no trace, in one line, and a status CI notices.
    std::string why;
    const std::string exe = ResolveCommand(args.command[0]);
    const std::string dir = Dirname(main_path);
    if (access(dir.c_str(), W_OK | X_OK) != 0) {
      why = fmt::format("cannot write to {}: {}", dir, std::strerror(errno));
    } else if (IsFile(main_path) || (access(main_path.c_str(), F_OK) == 0)) {
      why = "the file is not a readable trace (see the tracer's message above)";
    } else if (!exe.empty() && !LoadsPreloads(exe)) {
      why = fmt::format("{} is statically linked, so LD_PRELOAD cannot load the tracer", exe);
    } else {
      why = "the command did not load the tracer (was LD_PRELOAD replaced or cleared?)";
    }
    fmt::print(stderr, "crossfree record: no trace written to {}: {}\n", main_path, why);
    if (child_files.empty()) return status != 0 ? status : kExitUsage;
  }

  // One summary for the run: biggest traces first, then the total.
  struct FileSummary {
    std::string path;
    std::string kind;
    TraceCounts counts;
  };
  std::vector<FileSummary> files;
  if (main_counts) files.push_back({main_path, "command", *main_counts});
  for (const auto& [path, child_pid] : child_files) {
    if (auto counts = CountTrace(path, false)) {
      const char* kind = counts->fork_child                         ? "fork child"
                         : child_pid == static_cast<uint32_t>(pid) ? "exec'd image"
                                                                    : "child";
      files.push_back({path, kind, *counts});
    }
  }
  std::stable_sort(files.begin(), files.end(), [](const FileSummary& a, const FileSummary& b) {
    return a.counts.events > b.counts.events;
  });
  uint64_t events = 0, allocs = 0, frees = 0, threads = 0;
  std::set<uint32_t> pids;
  int incomplete = 0;
  for (const FileSummary& f : files) {
    events += f.counts.events;
    allocs += f.counts.allocs;
    frees += f.counts.frees;
    threads += f.counts.thread_count;
    pids.insert(f.counts.pid);
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
    fmt::print(stderr, "{}\n", line);
  }
  if (files.size() > kShown) {
    uint64_t rest = 0;
    for (size_t i = kShown; i < files.size(); ++i) rest += files[i].counts.events;
    fmt::print(stderr, "crossfree record:   ... and {} smaller trace{} with {} events\n",
               files.size() - kShown, files.size() - kShown == 1 ? "" : "s", rest);
  }
  fmt::print(stderr,
             "crossfree record: total {} events ({} allocations, {} frees) on {} thread{} in {} "
             "process{}, {} trace file{}{}{}\n",
             events, allocs, frees, threads, threads == 1 ? "" : "s", pids.size(),
             pids.size() == 1 ? "" : "es", files.size(), files.size() == 1 ? "" : "s",
             incomplete ? fmt::format(" ({} incomplete)", incomplete) : std::string(),
             main_counts ? fmt::format("; main trace {}", main_path) : std::string());
  uint32_t period = 0;
  for (const FileSummary& f : files) period = std::max(period, f.counts.sample_period);
  if (period > 1) {
    fmt::print(stderr,
               "crossfree record: sampled 1/{}: these are the sampled objects' events; "
               "report, diff and gate estimate the whole from them\n",
               period);
  }
  if (!main_counts && status == 0) return kExitUsage;
  return status;
}

int RunAttachRecord(const RecordArgs& args) {
  std::optional<std::string> library = TracerLibraryOrError();
  if (!library) return kExitUsage;
  AttachOptions o;
  o.pid = static_cast<pid_t>(args.pid);
  o.output = args.output;
  o.unwind = args.unwind;
  o.depth = args.depth;
  o.no_stacks = args.no_stacks;
  o.sample = args.sample;
  o.duration_s = args.duration_s;
  o.library = *library;
  return RunAttach(o);
}

}  // namespace

void RegisterRecordCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a command with the allocation tracer preloaded and record a trace");
  sub->add_option("-o,--output", args->output,
                  "Trace file of the command (forked/exec'd children write FILE.<pid>); "
                  "default ./crossfree.<pid>.trace");
  sub->add_option("--unwind", args->unwind, "Stack unwinder (default hybrid)")
      ->check(CLI::IsMember({"fp", "libunwind", "hybrid"}));
  sub->add_option("--depth", args->depth, "Frames per stack (default 32)")
      ->check(CLI::Range(1, 256));
  sub->add_flag("--no-stacks", args->no_stacks, "Record without call stacks");
  sub->add_option("--sample", args->sample,
                  "Trace each allocation with probability 1/N, and its free wherever it "
                  "happens; every allocation and free is still counted. report, diff and gate "
                  "then show estimates with 95% intervals (docs/guide/analyzer.md)")
      ->check(CLI::Range(1u, 1u << 30));
  sub->add_option("--delay", args->delay_s,
                  "Start recording SECONDS after the command starts (the program runs on "
                  "untraced before)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--duration", args->duration_s,
                  "Stop recording SECONDS after it started: every buffer is written and the "
                  "program runs on untraced")
      ->check(CLI::Range(0.001, 86400.0));
  sub->add_option("--toggle-signal", args->toggle_signal,
                  "Signal (e.g. USR2) that switches recording on and off while the command "
                  "runs; recording starts off unless --delay opens it. Off by default: the "
                  "command may use the signal itself");
  sub->add_option("--preload", args->preloads,
                  "Also preload LIB after the tracer (e.g. an allocator: libtcmalloc.so.4); "
                  "repeatable, kept in order")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->expected(1);
  sub->add_option("--wait-children", args->wait_children_s,
                  "After the command exits, wait up to SECONDS for the processes it left "
                  "running (background jobs, daemons), then name those still running "
                  "(default 60)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("-p,--pid", args->pid,
                  "Attach to the running process PID instead: record until --duration or "
                  "Ctrl-C, then detach and leave it running as it was (docs/guide/tracer.md)")
      ->check(CLI::Range(1, INT_MAX));
  sub->add_option("command", args->command, "The command to run, after --");
  sub->footer(
      "Examples: crossfree record -o server.trace -- ./server --port 8080\n"
      "          crossfree record -p 4242 --duration 2 -o server.trace");
  sub->callback([args, exit_code] {
    if (args->pid != 0) {
      if (!args->command.empty() || args->delay_s >= 0 || !args->toggle_signal.empty() ||
          !args->preloads.empty()) {
        fmt::print(stderr,
                   "crossfree record: -p attaches to a running process: give no command, "
                   "--delay, --toggle-signal or --preload with it\n");
        *exit_code = kExitUsage;
        return;
      }
      *exit_code = RunAttachRecord(*args);
      return;
    }
    if (args->command.empty()) {
      fmt::print(stderr, "crossfree record: give a command after --, or -p PID\n");
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = RunRecord(*args);
  });
}

}  // namespace crossfree::analyzer::cli
