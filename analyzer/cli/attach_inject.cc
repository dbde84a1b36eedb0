// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p`: the ptrace injector (see attach_inject.h).
//
// How one thread is made to load the tracer:
//  1. pick a thread that is asleep in a system call that holds no lock of
//     libc's or the loader's and that the kernel restarts by itself after
//     a ptrace stop (read on a socket or pipe, poll, select, accept,
//     nanosleep, wait, a condition-variable futex; epoll_wait, which
//     returns EINTR after a stop, is restarted by hand), else a thread
//     whose program counter is outside libc, the loader, the C++ runtime
//     and any allocator;
//  2. PTRACE_SEIZE that one thread (no other is stopped) and
//     PTRACE_INTERRUPT it; check from its registers that it is where we
//     expected, else let it go and try another;
//  3. save its registers, make it call dlopen(library, RTLD_NOW |
//     RTLD_LOCAL) and then crossfree_attach(record's pid) with return
//     address 0, so that each call ends in a SIGSEGV at address 0 that we
//     catch and suppress; orig_rax -1 keeps the interrupted system call
//     from being restarted into our call;
//  4. put the registers back (the interrupted system call restarts as it
//     would after any stop) and PTRACE_DETACH, handing back a signal that
//     arrived meanwhile.
// Every wait is bounded; on any failure before the calls the thread is
// let go untouched.
#include "analyzer/cli/attach_inject.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/core.h>

namespace crossfree::analyzer::cli {
namespace {

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Mapping {
  uint64_t lo, hi, offset;
  bool exec;
  std::string path;
};

std::vector<Mapping> ReadMaps(pid_t pid) {
  std::vector<Mapping> out;
  std::ifstream in(fmt::format("/proc/{}/maps", pid));
  std::string line;
  while (std::getline(in, line)) {
    Mapping m{};
    char perms[8];
    unsigned long long lo, hi, off;
    int consumed = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s%n", &lo, &hi, perms, &off,
                    &consumed) < 4) {
      continue;
    }
    m.lo = lo;
    m.hi = hi;
    m.offset = off;
    m.exec = perms[2] == 'x';
    std::string rest = line.substr(static_cast<size_t>(consumed));
    size_t start = rest.find_first_not_of(' ');
    m.path = start == std::string::npos ? "" : rest.substr(start);
    out.push_back(m);
  }
  return out;
}

// A defined dynamic symbol's st_value in an ELF file, or nullopt.
std::optional<uint64_t> DynamicSymbol(const std::string& path, const char* name) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    close(fd);
    return std::nullopt;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return std::nullopt;
  const auto* base = static_cast<const uint8_t*>(map);
  std::optional<uint64_t> result;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  auto in_file = [&](uint64_t off, uint64_t len) { return off <= size && len <= size - off; };
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 &&
      in_file(eh->e_shoff, uint64_t{eh->e_shnum} * sizeof(Elf64_Shdr))) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !result; ++i) {
      if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr& strs = sh[sh[i].sh_link];
      if (!in_file(sh[i].sh_offset, sh[i].sh_size) || !in_file(strs.sh_offset, strs.sh_size)) {
        continue;
      }
      const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
      const size_t count = sh[i].sh_size / sizeof(Elf64_Sym);
      const char* str = reinterpret_cast<const char*>(base + strs.sh_offset);
      for (size_t k = 0; k < count; ++k) {
        if (syms[k].st_name >= strs.sh_size || syms[k].st_shndx == SHN_UNDEF ||
            syms[k].st_value == 0 || ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC) {
          continue;
        }
        const char* s = str + syms[k].st_name;
        if (std::strncmp(s, name, strs.sh_size - syms[k].st_name) == 0) {
          result = syms[k].st_value;
          break;
        }
      }
    }
  }
  munmap(map, size);
  return result;
}

// The load bias of the object mapped from path in the target, from its
// executable mapping and the file's program headers. (A mapping at file
// offset 0 is not enough: libdw, in the tracer, maps whole files to read
// them.)
std::optional<uint64_t> LoadBias(const std::vector<Mapping>& maps, const std::string& path,
                                 const std::string& file) {
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Elf64_Ehdr eh;
  std::vector<Elf64_Phdr> ph;
  bool ok = pread(fd, &eh, sizeof(eh), 0) == static_cast<ssize_t>(sizeof(eh)) &&
            std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(Elf64_Phdr);
  if (ok) {
    ph.resize(eh.e_phnum);
    const auto bytes = static_cast<ssize_t>(ph.size() * sizeof(Elf64_Phdr));
    ok = pread(fd, ph.data(), static_cast<size_t>(bytes), static_cast<off_t>(eh.e_phoff)) == bytes;
  }
  close(fd);
  if (!ok) return std::nullopt;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type != PT_LOAD || (p.p_flags & PF_X) == 0) continue;
    for (const Mapping& m : maps) {
      if (m.path == path && m.exec && m.offset == (p.p_offset & ~(page - 1))) {
        return m.lo - (p.p_vaddr & ~(page - 1));
      }
    }
  }
  return std::nullopt;
}

// Code a thread must not be stopped in before it calls dlopen: it may
// hold the allocator's or the loader's locks there.
bool UnsafeCode(const std::string& path) {
  const std::string base = Basename(path);
  for (const char* prefix : {"libc.so", "libc-", "ld-linux", "libstdc++", "libtcmalloc",
                             "libjemalloc", "libmimalloc", "libcrossfree-trace", "libgcc_s",
                             "libunwind", "libpthread", "libdl"}) {
    if (base.rfind(prefix, 0) == 0) return true;
  }
  return path == "[vdso]";
}

bool PcIsSafe(const std::vector<Mapping>& maps, uint64_t pc) {
  for (const Mapping& m : maps) {
    if (pc >= m.lo && pc < m.hi) return !UnsafeCode(m.path);
  }
  return false;  // no mapping: JIT or garbage, do not touch
}

// Ranks of a thread by where it sleeps; lower is safer.
enum Rank { kRestartable = 0, kEpoll = 1, kCondWait = 2, kOther = 3, kUnusable = 9 };

struct Candidate {
  pid_t tid;
  Rank rank;
  long nr;  // the system call it sleeps in, -1 when none
};

bool FdIsRegularFile(pid_t pid, long fd) {
  char buf[512];
  ssize_t n = readlink(fmt::format("/proc/{}/fd/{}", pid, fd).c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return true;  // unknown: treat as a file
  buf[n] = '\0';
  return buf[0] == '/' && std::strncmp(buf, "/dev/", 5) != 0;
}

Candidate Classify(pid_t pid, pid_t tid) {
  std::string text = ReadText(fmt::format("/proc/{}/task/{}/syscall", pid, tid));
  if (text.empty() || text.rfind("running", 0) == 0) return {tid, kOther, -1};
  std::istringstream in(text);
  long nr = -1;
  in >> nr;
  std::string a1, a2;
  in >> a1 >> a2;
  const long arg1 = std::strtol(a1.c_str(), nullptr, 16);
  const long arg2 = std::strtol(a2.c_str(), nullptr, 16);
  switch (nr) {
    case SYS_read:
    case SYS_readv:
      // A regular file may be the loader reading an object inside dlopen.
      return {tid, FdIsRegularFile(pid, arg1) ? kUnusable : kRestartable, nr};
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_wait4:
    case SYS_waitid:
    case SYS_pause:
    case SYS_rt_sigsuspend:
      return {tid, kRestartable, nr};
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
      return {tid, kEpoll, nr};
    case SYS_futex:
      // FUTEX_WAIT_BITSET is what condition variables and semaphores
      // sleep in; glibc's internal locks (malloc's, the loader's) use
      // FUTEX_WAIT, and a thread waiting for one must not call dlopen.
      return {tid, (arg2 & 0x7f) == 9 ? kCondWait : kUnusable, nr};
    default:
      return {tid, kUnusable, nr};
  }
}

constexpr long kErestartSys = 512, kErestartNoIntr = 513, kErestartNoHand = 514,
               kErestartRestartBlock = 516;

bool IsRestartCode(long long rax) {
  return rax == -kErestartSys || rax == -kErestartNoIntr || rax == -kErestartNoHand ||
         rax == -kErestartRestartBlock;
}

bool IsEpoll(long long nr) {
  return nr == SYS_epoll_wait || nr == SYS_epoll_pwait
#ifdef SYS_epoll_pwait2
         || nr == SYS_epoll_pwait2
#endif
      ;
}

// Waits for a state change of tid, at most timeout_ms, on SIGCHLD
// (blocked by the caller) rather than by polling.
bool WaitFor(pid_t tid, int* status, double timeout_ms) {
  const double deadline = NowMs() + timeout_ms;
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  for (;;) {
    pid_t r = waitpid(tid, status, __WALL | WNOHANG);
    if (r == tid) return true;
    if (r < 0 && errno != EINTR) return false;
    const double left = deadline - NowMs();
    if (left <= 0) return false;
    timespec ts{static_cast<time_t>(left / 1000),
                static_cast<long>(std::fmod(left, 1000.0) * 1e6)};
    sigtimedwait(&chld, nullptr, &ts);
  }
}

bool PokeBytes(pid_t tid, uint64_t addr, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    const size_t k = std::min<size_t>(8, n - i);
    if (k < 8) {
      errno = 0;
      long old = ptrace(PTRACE_PEEKDATA, tid, addr + i, nullptr);
      if (errno != 0) return false;
      word = static_cast<uint64_t>(old);
    }
    std::memcpy(&word, p + i, k);
    if (ptrace(PTRACE_POKEDATA, tid, addr + i, reinterpret_cast<void*>(word)) != 0) return false;
  }
  return true;
}

std::optional<uint64_t> PeekWord(pid_t tid, uint64_t addr) {
  errno = 0;
  long v = ptrace(PTRACE_PEEKDATA, tid, addr, nullptr);
  if (errno != 0) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::string PeekString(pid_t tid, uint64_t addr, size_t max) {
  std::string s;
  for (size_t i = 0; i < max; i += 8) {
    auto w = PeekWord(tid, addr + i);
    if (!w) break;
    for (int k = 0; k < 8; ++k) {
      char c = static_cast<char>((*w >> (8 * k)) & 0xff);
      if (c == '\0') return s;
      s += c;
    }
  }
  return s;
}

struct Stopped {
  pid_t tid;
  user_regs_struct saved;
  int pending_signal = 0;
  bool gone = false;
};

// Calls fn(a0, a1) on the stopped thread; data (if any) is copied below
// its stack's red zone first and its address passed as a0 when
// data_as_a0. Returns rax, or nullopt with *error set.
std::optional<uint64_t> RemoteCall(Stopped* t, uint64_t fn, uint64_t a0, uint64_t a1,
                                   const std::string* data, double timeout_ms,
                                   std::string* error) {
  user_regs_struct r = t->saved;
  uint64_t sp = t->saved.rsp - 256;  // the red zone (128) and a margin
  if (data != nullptr) {
    sp -= (data->size() + 1 + 15) & ~uint64_t{15};
    if (!PokeBytes(t->tid, sp, data->c_str(), data->size() + 1)) {
      *error = fmt::format("cannot write into the stack of thread {}: {}", t->tid,
                           std::strerror(errno));
      return std::nullopt;
    }
    a0 = sp;
  }
  sp &= ~uint64_t{15};
  sp -= 8;  // the return address: 0, so that returning faults where we look
  const uint64_t zero = 0;
  if (!PokeBytes(t->tid, sp, &zero, 8)) {
    *error = fmt::format("cannot write into the stack of thread {}: {}", t->tid,
                         std::strerror(errno));
    return std::nullopt;
  }
  r.rsp = sp;
  r.rip = fn;
  r.rdi = a0;
  r.rsi = a1;
  r.rax = 0;
  r.orig_rax = static_cast<unsigned long long>(-1);  // no system call restart into our call
  if (ptrace(PTRACE_SETREGS, t->tid, nullptr, &r) != 0 ||
      ptrace(PTRACE_CONT, t->tid, nullptr, nullptr) != 0) {
    *error = fmt::format("ptrace on thread {} failed: {}", t->tid, std::strerror(errno));
    return std::nullopt;
  }
  const double deadline = NowMs() + timeout_ms;
  for (;;) {
    int status = 0;
    if (!WaitFor(t->tid, &status, deadline - NowMs())) {
      *error = fmt::format(
          "thread {} did not return from its call within {:.0f} s (a lock held elsewhere?); "
          "it is left running where it is",
          t->tid, timeout_ms / 1000);
      return std::nullopt;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) {
      t->gone = true;
      *error = fmt::format("thread {} exited during the call (the process exited?)", t->tid);
      return std::nullopt;
    }
    if (!WIFSTOPPED(status)) continue;
    const int sig = WSTOPSIG(status);
    if ((status >> 16) == PTRACE_EVENT_STOP) {
      // A group stop (SIGSTOP sent to the process): run the call on.
      ptrace(PTRACE_CONT, t->tid, nullptr, nullptr);
      continue;
    }
    if (sig == SIGSEGV) {
      user_regs_struct now;
      if (ptrace(PTRACE_GETREGS, t->tid, nullptr, &now) != 0) {
        *error = fmt::format("cannot read thread {}'s registers: {}", t->tid, std::strerror(errno));
        return std::nullopt;
      }
      if (now.rip == 0) return now.rax;
      *error = fmt::format("the call faulted in thread {} at {:#x}", t->tid, now.rip);
      return std::nullopt;
    }
    // Any other signal: kept for the end, delivered after the registers
    // are back (one is enough: a standard signal pending twice is one).
    if (t->pending_signal == 0) t->pending_signal = sig;
    ptrace(PTRACE_CONT, t->tid, nullptr, nullptr);
  }
}

// Registers back and the thread let go. An epoll wait that the stop made
// return EINTR is started again (epoll_wait is the one common wait the
// kernel does not restart after a stop).
void Release(Stopped* t, bool restore) {
  if (t->gone) return;
  if (restore) {
    user_regs_struct r = t->saved;
    if (static_cast<long long>(r.orig_rax) >= 0 && static_cast<long long>(r.rax) == -EINTR &&
        IsEpoll(static_cast<long long>(r.orig_rax))) {
      r.rax = r.orig_rax;
      r.rip -= 2;  // the syscall instruction
    }
    ptrace(PTRACE_SETREGS, t->tid, nullptr, &r);
  }
  ptrace(PTRACE_DETACH, t->tid, nullptr, reinterpret_cast<void*>(static_cast<long>(t->pending_signal)));
}

bool HasCapSysPtrace() {
  std::istringstream in(ReadText("/proc/self/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      unsigned long long caps = std::strtoull(line.c_str() + 7, nullptr, 16);
      return (caps >> 19) & 1;  // CAP_SYS_PTRACE
    }
  }
  return false;
}

bool InContainer() {
  if (access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0) return true;
  const std::string cg = ReadText("/proc/1/cgroup");
  return cg.find("docker") != std::string::npos || cg.find("kubepods") != std::string::npos ||
         cg.find("containerd") != std::string::npos || cg.find("lxc") != std::string::npos;
}

std::string SeizeRefused(pid_t pid, int error) {
  std::string why = PtracePermissionProblem(pid);
  if (!why.empty()) return why;
  if (error == EPERM && !HasCapSysPtrace() && InContainer()) {
    return "this container has no CAP_SYS_PTRACE: run it with --cap-add=SYS_PTRACE (docker, "
           "podman) or add SYS_PTRACE to securityContext.capabilities (Kubernetes)";
  }
  if (error == EPERM) {
    return "ptrace was refused (EPERM) although the user and kernel.yama.ptrace_scope allow "
           "it: a seccomp filter or a security module (AppArmor, SELinux) forbids ptrace here; "
           "run as root with CAP_SYS_PTRACE outside that profile";
  }
  return fmt::format("ptrace(PTRACE_SEIZE) failed: {}", std::strerror(error));
}

}  // namespace

std::string PtracePermissionProblem(pid_t pid) {
  std::istringstream in(ReadText(fmt::format("/proc/{}/status", pid)));
  std::string line;
  long tracer = 0;
  long uid = -1;
  while (std::getline(in, line)) {
    if (line.rfind("TracerPid:", 0) == 0) tracer = std::strtol(line.c_str() + 10, nullptr, 10);
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream u(line.substr(4));
      long real = -1, effective = -1;
      u >> real >> effective;
      uid = effective;
      if (real != effective) uid = -2;
    }
  }
  if (tracer != 0 && tracer != getpid()) {
    std::string comm = ReadText(fmt::format("/proc/{}/comm", tracer));
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    return fmt::format("process {} is already traced by process {} ({}): a debugger or strace "
                       "holds it; detach that first",
                       pid, tracer, comm);
  }
  const bool cap = HasCapSysPtrace();
  if (uid != -1 && uid != static_cast<long>(geteuid()) && !cap) {
    return fmt::format("process {} runs as {} and crossfree as user {}: run crossfree as the "
                       "same user as the process, or as root",
                       pid, uid == -2 ? std::string("another user (setuid)")
                                      : fmt::format("user {}", uid),
                       geteuid());
  }
  std::string scope = ReadText("/proc/sys/kernel/yama/ptrace_scope");
  if (!scope.empty()) {
    const int s = std::atoi(scope.c_str());
    if (s == 3) {
      return "ptrace is disabled on this machine (kernel.yama.ptrace_scope=3, until reboot): "
             "attaching is impossible; run the program under `crossfree record -- CMD`";
    }
    if (s == 2 && !cap) {
      return "kernel.yama.ptrace_scope=2 lets only processes with CAP_SYS_PTRACE attach: run "
             "crossfree as root (sudo)";
    }
    if (s == 1 && !cap) {
      return fmt::format("kernel.yama.ptrace_scope=1 lets a process attach only to its own "
                         "descendants: run `sudo crossfree record -p {}`, or allow it with "
                         "`sudo sysctl kernel.yama.ptrace_scope=0`",
                         pid);
    }
  }
  return "";
}

InjectResult InjectTracer(pid_t pid, const std::string& library, pid_t record_pid) {
  InjectResult result;
  const std::vector<Mapping> maps = ReadMaps(pid);
  if (maps.empty()) {
    result.error = fmt::format("cannot read /proc/{}/maps: {}", pid, std::strerror(errno));
    return result;
  }
  std::string libc;
  for (const Mapping& m : maps) {
    const std::string base = Basename(m.path);
    if (base == "libc.so.6" || (base.rfind("libc-", 0) == 0 && base.find(".so") != std::string::npos)) {
      libc = m.path;
      break;
    }
    if (Basename(m.path) == Basename(library)) result.already_loaded = true;
  }
  for (const Mapping& m : maps) {
    if (Basename(m.path) == Basename(library)) result.already_loaded = true;
  }
  if (libc.empty()) {
    result.error = fmt::format(
        "process {} has no libc.so.6 mapped: it is statically linked, so there is no dynamic "
        "loader to load the tracer into it; run it under `crossfree record -- CMD` instead",
        pid);
    return result;
  }
  // The target's view of the file: through its root (a container's).
  std::string libc_file = fmt::format("/proc/{}/root{}", pid, libc);
  if (access(libc_file.c_str(), R_OK) != 0) libc_file = libc;
  const auto bias = LoadBias(maps, libc, libc_file);
  const auto dlopen_off = DynamicSymbol(libc_file, "dlopen");
  const auto dlerror_off = DynamicSymbol(libc_file, "dlerror");
  if (!bias || !dlopen_off) {
    result.error = fmt::format(
        "{} of process {} exports no dlopen (glibc older than 2.34 keeps it in libdl, which "
        "this process has not loaded); attaching needs glibc 2.34 or later",
        libc, pid);
    return result;
  }
  const auto entry_off = DynamicSymbol(library, "crossfree_attach");
  if (!entry_off) {
    result.error = fmt::format("{} has no crossfree_attach entry point (an older tracer?)", library);
    return result;
  }
  // Candidates, safest first (read again for each round of tries).
  auto list_candidates = [&] {
    std::vector<Candidate> out;
    uint32_t threads = 0;
    if (DIR* d = opendir(fmt::format("/proc/{}/task", pid).c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        const pid_t tid = static_cast<pid_t>(std::atol(e->d_name));
        ++threads;
        Candidate c = Classify(pid, tid);
        if (c.rank != kUnusable) out.push_back(c);
      }
      closedir(d);
    }
    result.threads = threads;
    std::stable_sort(out.begin(), out.end(),
                     [](const Candidate& a, const Candidate& b) { return a.rank < b.rank; });
    return out;
  };
  // SIGCHLD tells us of each ptrace stop (WaitFor); blocked meanwhile.
  sigset_t chld, old_mask;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old_mask);
  struct Restore {
    sigset_t mask;
    ~Restore() { sigprocmask(SIG_SETMASK, &mask, nullptr); }
  } restore_mask{old_mask};

  // Each ptrace stop needs both this process and the target thread to be
  // scheduled; on a machine whose cores are busy with the target's own
  // threads that wait dominates the stop. For the injection only, this
  // process runs at the highest priority it may take (root: nice -20).
  errno = 0;
  const int own_nice = getpriority(PRIO_PROCESS, 0);
  const bool own_boost = errno == 0 && setpriority(PRIO_PROCESS, 0, -20) == 0;
  struct RestoreNice {
    bool boosted;
    int nice;
    ~RestoreNice() {
      if (boosted) setpriority(PRIO_PROCESS, 0, nice);
    }
  } restore_nice{own_boost, own_nice};

  // A thread that did not fit (it was inside libc or the allocator) is let
  // go at once; after a round with none that fits, the threads run 2 ms
  // and are looked at again, up to kMaxAttempts stops in all.
  constexpr size_t kMaxAttempts = 40;
  constexpr int kRounds = 20;
  std::optional<Stopped> chosen;
  double stop_started = 0;
  std::vector<Candidate> candidates;
  for (int round = 0; round < kRounds && !chosen && result.attempts < kMaxAttempts; ++round) {
    if (round > 0) {
      timespec pause{0, 2'000'000};
      nanosleep(&pause, nullptr);
    }
    candidates = list_candidates();
    for (size_t i = 0; i < candidates.size() && result.attempts < kMaxAttempts && !chosen; ++i) {
      const Candidate& c = candidates[i];
      if (ptrace(PTRACE_SEIZE, c.tid, nullptr, nullptr) != 0) {
        const int error = errno;
        if (error == ESRCH) continue;  // the thread exited meanwhile
        result.error = SeizeRefused(pid, error);
        return result;
      }
      stop_started = NowMs();
      ++result.attempts;
      Stopped t{c.tid, {}};
      int status = 0;
      if (ptrace(PTRACE_INTERRUPT, c.tid, nullptr, nullptr) != 0 ||
          !WaitFor(c.tid, &status, 1000) || !WIFSTOPPED(status)) {
        ptrace(PTRACE_DETACH, c.tid, nullptr, nullptr);
        result.stopped_ms += NowMs() - stop_started;
        continue;
      }
      if ((status >> 16) != PTRACE_EVENT_STOP) {
        // A signal arrived first: keep it for the end.
        t.pending_signal = WSTOPSIG(status);
      }
      if (ptrace(PTRACE_GETREGS, c.tid, nullptr, &t.saved) != 0) {
        ptrace(PTRACE_DETACH, c.tid, nullptr,
               reinterpret_cast<void*>(static_cast<long>(t.pending_signal)));
        result.stopped_ms += NowMs() - stop_started;
        continue;
      }
      const auto orig = static_cast<long long>(t.saved.orig_rax);
      const auto rax = static_cast<long long>(t.saved.rax);
      bool fits = false;
      if (c.nr >= 0 && orig == c.nr) {
        // Still in the same wait, interrupted by our stop.
        fits = IsRestartCode(rax) || (IsEpoll(orig) && rax == -EINTR);
      }
      if (!fits && PcIsSafe(maps, t.saved.rip) && orig < 0) fits = true;
      if (!fits) {
        Release(&t, /*restore=*/false);
        result.stopped_ms += NowMs() - stop_started;
        continue;
      }
      chosen = t;
    }
  }
  if (!chosen) {
    result.error = fmt::format(
        "found no thread of process {} ({} threads, {} tried) that is safe to stop for loading "
        "the tracer: every one was allocating or inside libc, the loader or the allocator; "
        "try again",
        pid, result.threads, result.attempts);
    return result;
  }
  Stopped& t = *chosen;
  result.tid = t.tid;
  std::string error;
  // The thread runs the calls while 2 cores may be shared by tens of busy
  // threads: for their few milliseconds it gets the highest priority we
  // may give (root: nice -20), and its own back after.
  errno = 0;
  const int old_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(t.tid));
  const bool boosted = errno == 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(t.tid), -20) == 0;
  const double calls_started = NowMs();
  const uint64_t dlopen_fn = *bias + *dlopen_off;
  constexpr uint64_t kRtldNowLocal = 0x2;  // RTLD_NOW, RTLD_LOCAL
  auto handle = RemoteCall(&t, dlopen_fn, 0, kRtldNowLocal, &library, 30000, &error);
  if (handle && *handle == 0) {
    std::string why = "unknown reason";
    if (dlerror_off) {
      auto msg = RemoteCall(&t, *bias + *dlerror_off, 0, 0, nullptr, 5000, &error);
      if (msg && *msg != 0) why = PeekString(t.tid, *msg, 1024);
    }
    error = fmt::format("dlopen of the tracer failed in process {}: {}", pid, why);
    handle.reset();
  }
  std::optional<uint64_t> entry_rc;
  if (handle) {
    // The handle is the object's link_map, whose first field is its bias.
    auto lib_bias = PeekWord(t.tid, *handle);
    if (!lib_bias) {
      error = "cannot read the tracer's load address in the target";
    } else {
      entry_rc = RemoteCall(&t, *lib_bias + *entry_off, static_cast<uint64_t>(record_pid), 0,
                            nullptr, 5000, &error);
    }
  }
  result.calls_ms = NowMs() - calls_started;
  if (boosted) setpriority(PRIO_PROCESS, static_cast<id_t>(t.tid), old_nice);
  Release(&t, /*restore=*/true);
  result.stopped_ms += NowMs() - stop_started;
  if (!entry_rc) {
    result.error = error;
    return result;
  }
  result.entry_result = static_cast<int>(*entry_rc & 0xffffffff);
  result.ok = true;
  return result;
}

}  // namespace crossfree::analyzer::cli
