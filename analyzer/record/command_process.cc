// SPDX-License-Identifier: Apache-2.0
#include "analyzer/record/command_process.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "analyzer/record/messages.h"
#include "analyzer/record/paths.h"

namespace crossfree::analyzer::record {
namespace {

// The command's pid while it runs, for the forwarding handler.
volatile sig_atomic_t g_child_pid = 0;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// SIGINT and SIGTERM received so far, and when the first came
// (CLOCK_MONOTONIC ns).
volatile sig_atomic_t g_stop_signals = 0;
uint64_t g_first_stop_ns = 0;

// A repeat closer than this to the first stop signal is the same request:
// `timeout` sends its signal to record and then to record's process group,
// so record gets two within microseconds; a user's second ^C comes later.
constexpr uint64_t kSecondSignalAfterNs = 500'000'000;

// The state and parent fields of a /proc/<pid>/stat line ("pid (comm)
// state ppid ..."): false when it is not one. The name may hold any
// character, spaces and parentheses too: the last ')' ends it.
// Async-signal-safe (no allocation, no locale).
bool StateAndParent(const char* line, char* state, pid_t* ppid) {
  const char* p = std::strrchr(line, ')');
  if (p == nullptr || p[1] != ' ' || p[2] == '\0' || p[3] != ' ' || p[4] < '0' || p[4] > '9') {
    return false;
  }
  *state = p[2];
  *ppid = 0;
  for (p += 4; *p >= '0' && *p <= '9'; ++p) *ppid = *ppid * 10 + (*p - '0');
  return true;
}

// The parent of pid from /proc/<pid>/stat, or -1. Async-signal-safe:
// open, read and close, no allocation.
pid_t ParentOf(pid_t pid) {
  char path[32] = "/proc/";
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(pid); v != 0 || n == 0; v /= 10) {
    digits[n++] = static_cast<char>('0' + v % 10);
  }
  size_t at = 6;
  while (n > 0) path[at++] = digits[--n];
  std::memcpy(path + at, "/stat", 6);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[256];
  const ssize_t got = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (got <= 0) return -1;
  buf[got] = '\0';
  char state;
  pid_t ppid;
  return StateAndParent(buf, &state, &ppid) ? ppid : -1;
}

// Whether pid is the command or a process it started: its chain of
// parents reaches record (a child subreaper, so orphans of the command are
// reparented here, not to init). At most 256 steps.
bool FromTheCommand(pid_t pid) {
  const pid_t self = getpid();
  for (int step = 0; step < 256 && pid > 1; ++step) {
    pid = ParentOf(pid);
    if (pid == self) return true;
  }
  return false;
}

void ForwardSignal(int sig, siginfo_t* info, void*) {
  // A signal the command sent to its own process group (kill(0, SIG):
  // lighttpd's master stopping its workers, a script's `trap 'kill 0'
  // EXIT`) reaches record too, which is in that group: the command's
  // processes already got it, and it is no request from the user to stop.
  // The command itself is known by its pid: it may have exited and been
  // reaped by the time this handler runs (a shell's `kill 0; exit`, seen
  // under load), and then /proc has no parent chain to read.
  if (info != nullptr && (info->si_code == SI_USER || info->si_code == SI_QUEUE) &&
      info->si_pid > 0 && (info->si_pid == g_child_pid || FromTheCommand(info->si_pid))) {
    return;
  }
  // A signal the kernel generated for the terminal (^C, ^\, hang-up) went
  // to the whole foreground process group, CMD included: do not send it
  // twice. One sent to `record` alone (kill, a service manager) is passed on.
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  pid_t child = g_child_pid;
  if (!from_terminal && child > 0) kill(child, sig);
  // The first SIGINT or SIGTERM lets the command end and record finish the
  // trace as on a normal end; a second one, kSecondSignalAfterNs or more
  // later, ends record at once, as a shell's second ^C would. What is on
  // disk then is whole chunks and at most one cut short, which readers
  // skip with a warning.
  if (sig == SIGINT || sig == SIGTERM) {
    if (g_stop_signals > 0 && MonotonicNowNs() - g_first_stop_ns < kSecondSignalAfterNs) return;
    if (g_stop_signals > 0) {
      static const char kMessage[] =
          "crossfree record: second signal: ending now; the trace keeps the chunks already "
          "written\n";
      ssize_t ignored = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
      (void)ignored;
      _exit(128 + sig);
    }
    g_first_stop_ns = MonotonicNowNs();  // clock_gettime: async-signal-safe
    g_stop_signals = g_stop_signals + 1;
    // Said once, so that a user (or a test) knows the signal was taken:
    // two signals sent before the first was delivered arrive as one.
    static const char kFirst[] =
        "crossfree record: signal passed to the command; record finishes the trace when it "
        "ends (a second signal ends record now)\n";
    ssize_t ignored = write(STDERR_FILENO, kFirst, sizeof(kFirst) - 1);
    (void)ignored;
  }
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
    char state = 0;
    pid_t ppid = 0;
    const char* open = std::strchr(buf, '(');
    const char* close = std::strrchr(buf, ')');
    if (open == nullptr || close == nullptr || close < open ||
        !StateAndParent(buf, &state, &ppid) || ppid != self) {
      continue;
    }
    if (state == 'Z') continue;  // exited; reaped below
    out.emplace_back(std::atoi(name), std::string(open + 1, close));
  }
  closedir(d);
  return out;
}

}  // namespace

void SignalForwarding::Install() {
  struct sigaction forward = {};
  forward.sa_sigaction = ForwardSignal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  sigset_t block;
  sigemptyset(&block);
  for (int sig : kForwarded) sigaddset(&block, sig);
  sigprocmask(SIG_BLOCK, &block, &old_mask_);
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], &forward, &old_actions_[i]);
  }
  installed_ = true;
}

void SignalForwarding::RestoreInChild() { Restore(); }

void SignalForwarding::SetChild(pid_t pid) {
  g_child_pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SignalForwarding::ClearChild() { g_child_pid = 0; }

void SignalForwarding::Restore() {
  if (!installed_) return;
  installed_ = false;
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], &old_actions_[i], nullptr);
  }
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

int InheritedDescriptor(int fd) {
  const int high = fcntl(fd, F_DUPFD, kInheritedFdMin);  // close-on-exec clear
  if (high >= 0) return high;
  fcntl(fd, F_SETFD, 0);
  return fd;
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

bool StopSignalReceived() { return g_stop_signals > 0; }

void WaitForDescendants(double budget_s, const std::string& bound) {
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
      // One line: a separate "waited for N processes" after it read as if
      // the wait had ended with none left.
      std::string list;
      for (const auto& [pid, name] : RunningChildren()) {
        list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", pid, name);
      }
      Say("crossfree record: waited {:g} s ({}) for the processes the command left running; "
          "{}still running: {}; their traces hold their events up to now and say so, and "
          "none after\n",
          budget_s, bound, reaped > 0 ? fmt::format("{} ended, ", reaped) : std::string(),
          list.empty() ? "unknown" : list);
      return;
    }
    usleep(20'000);  // polls waitpid: a descendant is not our child until reparented
  }
  if (reaped > 0) {
    Say("crossfree record: waited for {} process{} the command left running\n", reaped,
        reaped == 1 ? "" : "es");
  }
}

int WaitForChild(pid_t pid, const std::string& name) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    Say("crossfree record: {} was killed by {}{}\n", name,
        SignalName(WTERMSIG(status)), WCOREDUMP(status) ? " (core dumped)" : "");
    return 128 + WTERMSIG(status);
  }
  return 127;
}

// It has a PT_INTERP program header.
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

// libc's abbreviations (sigabbrev_np).
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

}  // namespace crossfree::analyzer::record
