// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: the ptrace injector (see attach_inject.h).
//
// How one thread is made to load the tracer:
//  1. pick a thread that is asleep in a system call that holds no lock of
//     libc's or the loader's and that can simply be run again (read on a
//     socket or pipe, poll, select, accept, nanosleep, wait, a
//     condition-variable futex, epoll_wait), else a thread whose program
//     counter is outside libc, the loader, the C++ runtime, any allocator
//     and any rseq critical section;
//  2. PTRACE_SEIZE that one thread (no other is stopped) and
//     PTRACE_INTERRUPT it; check from its registers that it is where we
//     expected, else let it go untouched and try another;
//  3. while it is stopped, write the trampoline (inject_trampoline.h) into
//     the unused tail of an executable page, and below the thread's stack
//     pointer the trampoline's data and an rt_sigreturn frame holding the
//     thread's registers, vector state and the interrupted system call set
//     to run again;
//  4. point the thread at the trampoline and PTRACE_DETACH at once. The
//     thread loads the tracer and comes back to its own code by itself;
//     record only reads its report on the control socket.
// So record dying (SIGKILL) at any instant harms nothing: before step 4's
// register change the thread resumes where it was, as after any stop;
// after it, the thread runs the trampoline, which does not need record
// (with record gone its connect fails and it goes straight back).
// Every wait is bounded.
#include "analyzer/record/attach_inject.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "analyzer/record/inject_trampoline.h"
#include "analyzer/record/ptrace_memory.h"
#include "analyzer/record/ptrace_refusal.h"
#include "analyzer/record/return_frame.h"
#include "analyzer/record/trampoline_report.h"
#include "analyzer/record/target_process.h"
#include "analyzer/record/paths.h"
#include "protocol/attach_protocol.h"

namespace crossfree::analyzer::record {
namespace {

// For tests of the claim that the target survives record's death at any
// step of the injection: CROSSFREE_INJECT_KILL_AFTER=K makes record
// SIGKILL itself right after step K (1-10, numbered in InjectTracer).
void KillPoint(int step) {
  static const int kill_after = [] {
    const char* v = getenv("CROSSFREE_INJECT_KILL_AFTER");
    return v != nullptr ? std::atoi(v) : 0;
  }();
  if (kill_after == step) raise(SIGKILL);
}

// For the same tests: CROSSFREE_INJECT_TID=T makes record consider only
// thread T (the test's thread with known register values).
pid_t OnlyThread() {
  const char* v = getenv("CROSSFREE_INJECT_TID");
  return v != nullptr ? static_cast<pid_t>(std::atol(v)) : 0;
}

// Where the trampoline goes: the unused tail of the last page of an
// object's executable segment (the loader maps whole pages; nothing is
// ever run past the segment's end). Found from the object's program
// headers and checked in memory: all zero (first use) or the trampoline
// already (an earlier attach). No new mapping, so none is left behind.
struct CodePlace {
  uint64_t address = 0;
  bool present = false;  // the bytes are there already
};

std::optional<CodePlace> FindCodePlace(pid_t pid, const std::vector<Mapping>& maps,
                                       const std::string& code, int* read_errno) {
  *read_errno = 0;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<std::string> seen;
  // libc first: every target that can be attached to has it.
  std::vector<const Mapping*> order;
  for (const Mapping& m : maps) {
    if (m.exec && Basename(m.path).rfind("libc.so", 0) == 0) order.push_back(&m);
  }
  for (const Mapping& m : maps) {
    if (m.exec && !m.path.empty() && m.path[0] == '/') order.push_back(&m);
  }
  for (const Mapping* m : order) {
    if (std::find(seen.begin(), seen.end(), m->path) != seen.end()) continue;
    seen.push_back(m->path);
    std::string file = fmt::format("/proc/{}/root{}", pid, m->path);
    if (access(file.c_str(), R_OK) != 0) file = m->path;
    int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Elf64_Ehdr eh;
    std::vector<Elf64_Phdr> ph;
    bool ok = pread(fd, &eh, sizeof(eh), 0) == static_cast<ssize_t>(sizeof(eh)) &&
              std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
              eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum < 256;
    if (ok) {
      ph.resize(eh.e_phnum);
      const auto bytes = static_cast<ssize_t>(ph.size() * sizeof(Elf64_Phdr));
      ok = pread(fd, ph.data(), static_cast<size_t>(bytes), static_cast<off_t>(eh.e_phoff)) ==
           bytes;
    }
    close(fd);
    if (!ok) continue;
    const auto bias = LoadBias(maps, m->path, file);
    if (!bias) continue;
    for (const Elf64_Phdr& p : ph) {
      if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0) continue;
      const uint64_t seg_end = *bias + p.p_vaddr + p.p_memsz;
      const uint64_t page_end = (seg_end + page - 1) & ~(page - 1);
      const uint64_t start = ((seg_end + 15) & ~uint64_t{15}) + 16;
      if (start + code.size() > page_end) continue;
      bool mapped = false;
      for (const Mapping& x : maps) {
        mapped = mapped || (x.exec && x.lo < seg_end && x.hi >= page_end);
      }
      if (!mapped) continue;
      std::string now(code.size(), '\0');
      if (!ReadTarget(pid, start, now.data(), now.size())) {
        *read_errno = errno;
        continue;
      }
      if (now == code) return CodePlace{start, true};
      if (now.find_first_not_of('\0') == std::string::npos) return CodePlace{start, false};
    }
  }
  return std::nullopt;
}

// A value no other injection uses (the report's tag).
uint64_t InjectionNonce() {
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof(nonce), 0) != static_cast<ssize_t>(sizeof(nonce))) {
    nonce = static_cast<uint64_t>(MonotonicMs() * 1e6) ^ (static_cast<uint64_t>(getpid()) << 40);
  }
  return nonce;
}

struct Stopped {
  pid_t tid;
  user_regs_struct saved;
  int pending_signal = 0;
};

// Lets a thread go untouched (registers as the stop found them: an
// interrupted system call restarts as after any stop), handing back a
// signal that arrived meanwhile.
void Release(const Stopped& t) {
  ptrace(PTRACE_DETACH, t.tid, nullptr, reinterpret_cast<void*>(static_cast<long>(t.pending_signal)));
}

// True when the thread was stopped inside a restartable sequence's
// critical section (rseq): returning there after other code ran on
// possibly another CPU would let it commit without the abort the kernel
// owes it.
bool InRseqCriticalSection(pid_t tid, uint64_t pc) {
  struct {
    uint64_t rseq_abi_pointer;
    uint32_t rseq_abi_size, signature, flags, pad;
  } config{};
  constexpr int kGetRseqConfiguration = 0x420f;
  if (ptrace(static_cast<__ptrace_request>(kGetRseqConfiguration), tid, sizeof(config),
             &config) <= 0 ||
      config.rseq_abi_pointer == 0) {
    return false;
  }
  const auto cs = PeekWord(tid, config.rseq_abi_pointer + 8);
  if (!cs || *cs == 0) return false;
  const auto start = PeekWord(tid, *cs + 8);
  const auto length = PeekWord(tid, *cs + 16);
  return !start || !length || (pc >= *start && pc - *start < *length);
}

bool ShadowStackOn(pid_t pid) {
  std::istringstream in(ReadText(fmt::format("/proc/{}/status", pid)));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("x86_Thread_features:", 0) == 0) {
      return line.find("shstk") != std::string::npos;
    }
  }
  return false;
}

std::string SeizeRefused(pid_t pid, int error) {
  return ExplainPtraceRefusal(GatherPtraceFacts(pid, error));
}

}  // namespace

std::string PtracePermissionProblem(pid_t pid) {
  return ExplainPtraceRefusal(GatherPtraceFacts(pid, 0));
}

namespace {

// Each step below returns false (or nothing) after putting its one-line
// reason in result->error; InjectTracer returns the result as it stands.

// Step 0a: the target's libc, which must be mapped: the trampoline calls
// its dlopen. Also notes whether the tracer is loaded already.
bool FindLibc(pid_t pid, const std::vector<Mapping>& maps, const std::string& library,
              InjectResult* result, std::string* libc) {
  for (const Mapping& m : maps) {
    const std::string base = Basename(m.path);
    if (libc->empty() && (base == "libc.so.6" || (base.rfind("libc-", 0) == 0 &&
                                                  base.find(".so") != std::string::npos))) {
      *libc = m.path;
    }
    if (base == Basename(library)) result->already_loaded = true;
  }
  if (libc->empty()) {
    result->error = fmt::format(
        "process {} has no libc.so.6 mapped: it is statically linked, so there is no dynamic "
        "loader to load the tracer into it; run it under `crossfree record -- CMD` instead",
        pid);
    return false;
  }
  return true;
}

// Step 0b: states of the whole process in which no thread could load the
// tracer, or the tracer could not reach record, told before any stop.
bool ProcessCanBeInjected(pid_t pid, InjectResult* result) {
  {
    // The injected code and the tracer reach record through an abstract
    // unix socket, which exists per network namespace.
    char own[64] = {}, its[64] = {};
    if (readlink("/proc/self/ns/net", own, sizeof(own) - 1) > 0 &&
        readlink(fmt::format("/proc/{}/ns/net", pid).c_str(), its, sizeof(its) - 1) > 0 &&
        std::strcmp(own, its) != 0) {
      result->error = fmt::format(
          "process {} is in another network namespace ({}, crossfree in {}), where the tracer "
          "cannot reach crossfree's control socket: run crossfree inside the process's "
          "container (e.g. `docker exec` or `nsenter -t {} -n`)",
          pid, its, own, pid);
      return false;
    }
  }
  {
    // A stopped process (SIGSTOP, Ctrl-Z) has no thread that could run
    // the loading; its threads' stops are group stops, which are not ours.
    const std::string stat = ReadText(fmt::format("/proc/{}/stat", pid));
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'T') {
      result->error = fmt::format(
          "process {} is stopped (SIGSTOP or Ctrl-Z): continue it first (`kill -CONT {}`)", pid,
          pid);
      return false;
    }
  }
  if (ShadowStackOn(pid)) {
    result->error = fmt::format(
        "process {} runs with the CPU's shadow stack (CET) on, which forbids the return path "
        "the injection uses; run it under `crossfree record -- CMD` instead",
        pid);
    return false;
  }
  return true;
}

// Where the trampoline's calls go in the target: libc's dlopen, dlsym and
// dlerror, relocated.
struct LoaderCalls {
  uint64_t dlopen_fn = 0;
  uint64_t dlsym_fn = 0;
  uint64_t dlerror_fn = 0;
};

// Step 0c: libc's loader calls in the target, and the tracer's entry point
// (checked in the file: an older tracer has none).
std::optional<LoaderCalls> FindLoaderCalls(pid_t pid, const std::vector<Mapping>& maps,
                                           const std::string& libc, const std::string& library,
                                           InjectResult* result) {
  // The target's view of the file: through its root (a container's).
  std::string libc_file = fmt::format("/proc/{}/root{}", pid, libc);
  if (access(libc_file.c_str(), R_OK) != 0) libc_file = libc;
  const auto bias = LoadBias(maps, libc, libc_file);
  const auto dlopen_off = DynamicSymbol(libc_file, "dlopen");
  const auto dlsym_off = DynamicSymbol(libc_file, "dlsym");
  const auto dlerror_off = DynamicSymbol(libc_file, "dlerror");
  if (!bias || !dlopen_off || !dlsym_off || !dlerror_off) {
    result->error = fmt::format(
        "{} of process {} exports no dlopen (glibc older than 2.34 keeps it in libdl, which "
        "this process has not loaded); attaching needs glibc 2.34 or later",
        libc, pid);
    return std::nullopt;
  }
  if (!DynamicSymbol(library, attach::kEntrySymbol)) {
    result->error =
        fmt::format("{} has no crossfree_attach entry point (an older tracer?)", library);
    return std::nullopt;
  }
  return LoaderCalls{*bias + *dlopen_off, *bias + *dlsym_off, *bias + *dlerror_off};
}

// Step 0d: the place for the trampoline's code (FindCodePlace), with why
// there is none.
std::optional<CodePlace> PlaceCode(pid_t pid, const std::vector<Mapping>& maps,
                                   const std::string& code, InjectResult* result) {
  int read_errno = 0;
  const auto place = FindCodePlace(pid, maps, code, &read_errno);
  if (!place && (read_errno == EPERM || read_errno == EACCES)) {
    // Reading its memory needs the same permission as ptrace.
    result->error = SeizeRefused(pid, EPERM);
    return std::nullopt;
  }
  if (!place) {
    result->error = fmt::format(
        "found no unused tail of an executable page in process {} to put the {}-byte loader "
        "code in (is /proc/{}/mem readable?)",
        pid, code.size(), pid);
    return std::nullopt;
  }
  return place;
}

// The target's threads that may be stopped, safest first (read again for
// each round of tries); counts all its threads into *threads.
std::vector<Candidate> ListCandidates(pid_t pid, pid_t only_thread, uint32_t* threads) {
  std::vector<Candidate> out;
  uint32_t count = 0;
  if (DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const pid_t tid = static_cast<pid_t>(std::atol(e->d_name));
      ++count;
      if (only_thread != 0 && tid != only_thread) continue;
      Candidate c = Classify(pid, tid);
      if (c.rank != kUnusable) out.push_back(c);
    }
    closedir(d);
  }
  *threads = count;
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
  return out;
}

// For the whole injection, this process's state as the stops need it,
// put back on return whatever the way out: SIGCHLD blocked (it tells of
// each ptrace stop, WaitFor), and its priority raised. Each ptrace stop
// needs both this process and the target thread to be scheduled; on a
// machine whose cores are busy with the target's own threads that wait
// dominates the stop, so this process runs at the highest priority it
// may take (root: nice -20). Put back in reverse: priority, then mask.
class InjectorState {
 public:
  InjectorState() {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old_mask_);
    errno = 0;
    own_nice_ = getpriority(PRIO_PROCESS, 0);
    boosted_ = errno == 0 && setpriority(PRIO_PROCESS, 0, -20) == 0;
  }
  ~InjectorState() {
    if (boosted_) setpriority(PRIO_PROCESS, 0, own_nice_);
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  InjectorState(const InjectorState&) = delete;
  InjectorState& operator=(const InjectorState&) = delete;

 private:
  sigset_t old_mask_;
  int own_nice_ = 0;
  bool boosted_ = false;
};

// The thread chosen by step 1-3, stopped, and what the stop found.
struct Chosen {
  Stopped thread;
  bool in_syscall = false;    // stopped in a wait it will run again
  double stop_started = 0;    // MonotonicMs() when its stop began
};

// What became of one candidate's stop.
enum class TryOutcome { kGone, kLetGo, kRefused, kFits };

// Steps 1-3 for one candidate: seize, interrupt and look at it. Anything
// but a fit lets it go untouched (kLetGo; kGone: it had exited), and a
// refused seize is put in result->error (kRefused).
TryOutcome TryStop(pid_t pid, const std::vector<Mapping>& maps, const Candidate& c,
                   InjectResult* result, Chosen* out) {
  if (ptrace(PTRACE_SEIZE, c.tid, nullptr, nullptr) != 0) {
    const int error = errno;
    if (error == ESRCH) return TryOutcome::kGone;  // the thread exited meanwhile
    result->error = SeizeRefused(pid, error);
    return TryOutcome::kRefused;
  }
  KillPoint(1);
  out->stop_started = MonotonicMs();
  ++result->attempts;
  Stopped t{c.tid, {}};
  int status = 0;
  if (ptrace(PTRACE_INTERRUPT, c.tid, nullptr, nullptr) != 0 ||
      !WaitFor(c.tid, &status, 1000) || !WIFSTOPPED(status)) {
    ptrace(PTRACE_DETACH, c.tid, nullptr, nullptr);
    result->stopped_ms += MonotonicMs() - out->stop_started;
    return TryOutcome::kLetGo;
  }
  KillPoint(2);
  if ((status >> 16) != PTRACE_EVENT_STOP || WSTOPSIG(status) != SIGTRAP) {
    // A signal arrived first (or a group stop): its delivery is the
    // thread's business; let it go with it and take another.
    if ((status >> 16) != PTRACE_EVENT_STOP) t.pending_signal = WSTOPSIG(status);
    Release(t);
    result->stopped_ms += MonotonicMs() - out->stop_started;
    return TryOutcome::kLetGo;
  }
  if (ptrace(PTRACE_GETREGS, c.tid, nullptr, &t.saved) != 0) {
    Release(t);
    result->stopped_ms += MonotonicMs() - out->stop_started;
    return TryOutcome::kLetGo;
  }
  KillPoint(3);
  const auto orig = static_cast<long long>(t.saved.orig_rax);
  const auto rax = static_cast<long long>(t.saved.rax);
  bool fits = false;
  out->in_syscall = false;
  if (c.nr >= 0 && orig == c.nr &&
      (IsRestartCode(rax) || (IsEpoll(orig) && rax == -EINTR))) {
    // Still in the same wait, interrupted by our stop; it is run
    // again from its syscall instruction (0f 05) on the way back.
    const auto insn = PeekWord(c.tid, t.saved.rip - 2);
    fits = insn && (*insn & 0xffff) == 0x050f;
    out->in_syscall = fits;
  }
  if (!fits && orig < 0 && PcIsSafe(maps, t.saved.rip) &&
      !InRseqCriticalSection(c.tid, t.saved.rip)) {
    fits = true;
  }
  if (fits && !EnoughStack(maps, t.saved.rsp)) fits = false;
  if (!fits) {
    Release(t);
    result->stopped_ms += MonotonicMs() - out->stop_started;
    return TryOutcome::kLetGo;
  }
  out->thread = t;
  return TryOutcome::kFits;
}

// Steps 1-3: a thread stopped where it may run the trampoline. A thread
// that did not fit (it was inside libc or the allocator, or a signal
// reached it first) is let go untouched at once; after a round with none
// that fits, the threads run 1-3 ms (varied, so that a loop with a period
// of its own is not met at the same point each time) and are looked at
// again, up to kMaxAttempts stops in all. A busy event loop is mostly in
// system calls that are not waits, or in libc: attaching to lighttpd
// under ab took from 2 to 79 stops (1 thread), and 20 rounds were refused
// in 1 attach of 10; 200 rounds take about half a second at most.
std::optional<Chosen> StopSafeThread(pid_t pid, const std::vector<Mapping>& maps,
                                     InjectResult* result) {
  constexpr size_t kMaxAttempts = 400;
  constexpr int kRounds = 200;
  const pid_t only_thread = OnlyThread();
  Chosen chosen;
  bool found = false;
  for (int round = 0; round < kRounds && !found && result->attempts < kMaxAttempts; ++round) {
    if (round > 0) {
      timespec pause{0, (1 + round % 3) * 1'000'000L};
      nanosleep(&pause, nullptr);
    }
    const std::vector<Candidate> candidates = ListCandidates(pid, only_thread, &result->threads);
    for (size_t i = 0; i < candidates.size() && result->attempts < kMaxAttempts && !found; ++i) {
      switch (TryStop(pid, maps, candidates[i], result, &chosen)) {
        case TryOutcome::kRefused:
          return std::nullopt;
        case TryOutcome::kFits:
          found = true;
          break;
        case TryOutcome::kGone:
        case TryOutcome::kLetGo:
          break;
      }
    }
  }
  if (!found) {
    result->error = fmt::format(
        "found no thread of process {} ({} threads, {} tried) that is safe to stop for loading "
        "the tracer: every one was allocating, inside libc, the loader or the allocator, in a "
        "system call that is not a wait, or had too little stack left (256 KB); try again",
        pid, result->threads, result->attempts);
    return std::nullopt;
  }
  return chosen;
}

// What step 4 writes below the thread's stack pointer, and where.
struct LoaderData {
  uint64_t strings_addr = 0;   // the lowest byte written: image[0]
  uint64_t block_addr = 0;     // the TrampolineBlock (rbx for the trampoline)
  uint64_t work_rsp = 0;       // the trampoline's own stack
  std::vector<uint8_t> image;  // strings, block, frame, vector state
  TrampolineBlock block;
  // The thread's priority before the loading, when it could be read.
  bool nice_known = false;
  int old_nice = 0;
};

// Step 4's data, built while the thread is stopped: everything it needs
// to come back by itself.
LoaderData BuildLoaderData(pid_t pid, const Chosen& chosen, const std::vector<uint8_t>& fpstate,
                           const std::string& library, pid_t record_pid,
                           const LoaderCalls& calls) {
  const Stopped& t = chosen.thread;
  // The registers to return with: a wait interrupted by our stop is run
  // again from its syscall instruction, as the kernel does after a stop
  // for the restart codes. (A wait the kernel would continue with
  // restart_syscall, a sleep with a timeout, starts again with its full
  // timeout: rt_sigreturn forgets the time left.)
  user_regs_struct back = t.saved;
  if (chosen.in_syscall) {
    back.rax = back.orig_rax;
    back.rip -= 2;
  }
  // The thread's stack, below its red zone and a margin, top down: the
  // vector state (64-byte aligned, as rt_sigreturn requires), the frame,
  // the block, the strings; the trampoline's own stack below them all.
  LoaderData d;
  const uint64_t top = (t.saved.rsp - 128 - 256) & ~uint64_t{63};
  const uint64_t fp_addr = (top - fpstate.size()) & ~uint64_t{63};
  const uint64_t frame_addr = (fp_addr - sizeof(RtSigframe)) & ~uint64_t{15};
  d.block_addr = (frame_addr - sizeof(TrampolineBlock)) & ~uint64_t{15};
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t name_len = attach::AttachSocketName(static_cast<uint32_t>(pid), addr.sun_path + 1,
                                                   sizeof(addr.sun_path) - 1);
  const size_t addr_len = offsetof(sockaddr_un, sun_path) + 1 + name_len;
  const std::string entry_name = attach::kEntrySymbol;
  const size_t strings_size = sizeof(addr) + entry_name.size() + 1 + library.size() + 1;
  d.strings_addr = (d.block_addr - strings_size) & ~uint64_t{15};
  d.work_rsp = (d.strings_addr - 64) & ~uint64_t{15};
  d.image.assign(top - d.strings_addr, 0);
  auto put = [&](uint64_t at, const void* data, size_t n) {
    std::memcpy(d.image.data() + (at - d.strings_addr), data, n);
  };
  const uint64_t sockaddr_at = d.strings_addr;
  const uint64_t entry_at = sockaddr_at + sizeof(addr);
  const uint64_t path_at = entry_at + entry_name.size() + 1;
  put(sockaddr_at, &addr, sizeof(addr));
  put(entry_at, entry_name.c_str(), entry_name.size() + 1);
  put(path_at, library.c_str(), library.size() + 1);
  const RtSigframe frame = ReturnFrame(back, fp_addr);
  put(frame_addr, &frame, sizeof(frame));
  put(fp_addr, fpstate.data(), fpstate.size());
  // The thread runs the loading at the highest priority we may give it
  // (root: nice -20; 2 cores may be shared by tens of busy threads). The
  // trampoline always puts its own value back, and the raise comes only
  // once the thread is pointed at the trampoline: record dying in between
  // leaves no thread raised.
  errno = 0;
  d.old_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(t.tid));
  d.nice_known = errno == 0;
  TrampolineBlock& block = d.block;
  block.dlopen_fn = calls.dlopen_fn;
  block.dlsym_fn = calls.dlsym_fn;
  block.dlerror_fn = calls.dlerror_fn;
  block.record_pid = static_cast<uint64_t>(record_pid);
  block.dlopen_flags = 0x2;  // RTLD_NOW | RTLD_LOCAL
  block.path = path_at;
  block.entry_name = entry_at;
  block.sockaddr = sockaddr_at;
  block.sockaddr_len = addr_len;
  block.restore_nice = d.nice_known ? 1 : 0;
  block.old_nice = static_cast<uint64_t>(static_cast<int64_t>(d.old_nice));
  block.frame = frame_addr + offsetof(RtSigframe, uc);
  block.report_nonce = InjectionNonce();
  put(d.block_addr, &block, sizeof(block));
  return d;
}

// Step 4 (written) and the start of the thread's run: the code (unless an
// earlier attach left it there), the data, then the registers that point
// the thread at the trampoline, and PTRACE_DETACH. A failed write lets the
// thread go untouched.
bool StartTrampoline(pid_t pid, const Chosen& chosen, const CodePlace& place,
                     const std::string& code, const LoaderData& d, InjectResult* result) {
  const Stopped& t = chosen.thread;
  auto give_up = [&](const std::string& what) {
    Release(t);
    result->stopped_ms += MonotonicMs() - chosen.stop_started;
    result->error = fmt::format("cannot write {} into process {}: {}", what, pid,
                                std::strerror(errno));
    return false;
  };
  if (!place.present && !WriteTarget(pid, t.tid, place.address, code.data(), code.size())) {
    return give_up("the loader code");
  }
  KillPoint(5);
  if (!WriteTarget(pid, t.tid, d.strings_addr, d.image.data(), d.image.size())) {
    return give_up("the loader's data");
  }
  KillPoint(6);
  // From this call on the thread belongs to the trampoline, which brings
  // it back by itself; nothing below needs this process alive.
  user_regs_struct go = t.saved;
  go.rip = place.address;
  go.rsp = d.work_rsp;
  go.rbx = d.block_addr;
  go.orig_rax = static_cast<unsigned long long>(-1);  // no restart into the trampoline
  if (ptrace(PTRACE_SETREGS, t.tid, nullptr, &go) != 0) {
    return give_up("the thread's registers");
  }
  if (d.nice_known && setpriority(PRIO_PROCESS, static_cast<id_t>(t.tid), -20) == 0) {
    result->raised_nice = true;
    result->old_nice = d.old_nice;
  }
  KillPoint(7);
  ptrace(PTRACE_DETACH, t.tid, nullptr, nullptr);
  result->stopped_ms += MonotonicMs() - chosen.stop_started;
  KillPoint(8);
  return true;
}

// The injection's end from the report (or its absence): result->ok and the
// entry point's return value, or why not.
void ConcludeFromReport(pid_t pid, pid_t tid, ReportWait& wait, InjectResult* result) {
  if (!wait.have_report) {
    if (wait.exited) {
      result->error = fmt::format("process {} exited while loading the tracer", pid);
    } else if (!wait.accepted) {
      result->error = fmt::format(
          "thread {} of process {} did not start loading the tracer within 30 s (the process "
          "is stopped, or a seccomp filter refuses it a socket?); it returns to its own code "
          "by itself",
          tid, pid);
    } else {
      result->error = fmt::format(
          "thread {} of process {} did not report on loading the tracer within 30 s (a lock "
          "held elsewhere?)",
          tid, pid);
    }
    return;
  }
  TrampolineBlock& report = wait.report;
  report.message[sizeof(report.message) - 1] = '\0';
  switch (report.stage) {
    case kStageDlopenFailed:
      result->error = fmt::format("dlopen of the tracer failed in process {}: {}", pid,
                                  report.message[0] != '\0' ? report.message : "unknown reason");
      return;
    case kStageNoEntry:
      result->error = fmt::format("the tracer loaded into process {} has no {} entry point", pid,
                                  attach::kEntrySymbol);
      return;
    case kStageDone:
      break;
    default:
      result->error = fmt::format("the loader code in process {} stopped at step {}", pid,
                                  report.stage);
      return;
  }
  result->entry_result = static_cast<int>(report.entry_rc & 0xffffffff);
  result->ok = true;
}

// Closes the target's pidfd when the injection returns.
struct PidfdCloser {
  int fd;
  ~PidfdCloser() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

// The steps, in order (KillPoint numbers in brackets): checks of the
// process and its libc; a thread stopped and found safe [1-3]; the
// trampoline's data built [4], written [5, 6], the thread started on it
// [7] and let go [8]; its report accepted [9] and read [10].
InjectResult InjectTracer(pid_t pid, const std::string& library, pid_t record_pid, int listener) {
  InjectResult result;
  const std::vector<Mapping> maps = ReadMaps(pid);
  if (maps.empty()) {
    result.error = fmt::format("cannot read /proc/{}/maps: {}", pid, std::strerror(errno));
    return result;
  }
  std::string libc;
  if (!FindLibc(pid, maps, library, &result, &libc)) return result;
  if (!ProcessCanBeInjected(pid, &result)) return result;
  const std::optional<LoaderCalls> calls = FindLoaderCalls(pid, maps, libc, library, &result);
  if (!calls) return result;
  const std::string code = TrampolineCode();
  const std::optional<CodePlace> place = PlaceCode(pid, maps, code, &result);
  if (!place) return result;

  const InjectorState injector_state;
  const std::optional<Chosen> chosen = StopSafeThread(pid, maps, &result);
  if (!chosen) return result;
  result.tid = chosen->thread.tid;
  // Everything the thread needs to come back by itself is built while it
  // is stopped, starting with its vector state (return_frame.h).
  std::vector<uint8_t> fpstate;
  if (!ReadReturnVectorState(chosen->thread.tid, &fpstate)) {
    Release(chosen->thread);
    result.error = fmt::format("cannot read the vector registers of thread {}: {}",
                               chosen->thread.tid, std::strerror(errno));
    return result;
  }
  const LoaderData data = BuildLoaderData(pid, *chosen, fpstate, library, record_pid, *calls);
  KillPoint(4);
  if (!StartTrampoline(pid, *chosen, *place, code, data, &result)) return result;

  const double calls_started = MonotonicMs();
  const double deadline = calls_started + 30000;
  const PidfdCloser pidfd{static_cast<int>(syscall(SYS_pidfd_open, pid, 0))};
  ReportWait wait = AwaitTrampolineReport(pid, listener, pidfd.fd, deadline,
                                         data.block.report_nonce, [] { KillPoint(9); });
  result.calls_ms = MonotonicMs() - calls_started;
  KillPoint(10);
  ConcludeFromReport(pid, chosen->thread.tid, wait, &result);
  return result;
}

}  // namespace crossfree::analyzer::record
