// SPDX-License-Identifier: Apache-2.0
// Tracer: start-up, the trace file, process exit and fork.
//
// Start-up runs once, from whichever comes first: the library constructor
// or the first hook call after libc has set up environ (earlier calls, made
// by the dynamic loader itself, forward untraced). Exit: a destructor of
// the lowest priority flushes every thread's buffer, including threads that
// are still running; _exit and fatal signals skip it, so the events still
// in buffers then are lost (every chunk already written stays readable).
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protocol/shm_channel.h"
#include "format/trace_writer.h"
#include "tracer/attach.h"
#include "tracer/channel.h"
#include "tracer/clock.h"
#include "tracer/cpu.h"
#include "tracer/malloc_hook.h"
#include "tracer/own_allocation.h"
#include "tracer/real_alloc.h"
#include "tracer/modules.h"
#include "tracer/owned_fds.h"
#include "tracer/recorder_internal.h"
#include "tracer/sampler.h"
#include "tracer/stacks.h"
#include "tracer/unwind_cfi.h"
#include "tracer/sys.h"
#include "tracer/window.h"

extern char** environ;

namespace crossfree::tracer {
namespace {

using internal::g;

// Whether the kernel wipes g_fork_wiped in child processes (InitForkWipe).
// Without it (a kernel before 4.14) a child made by a raw fork or clone
// system call keeps its parent's tracer state, as it did before.
bool g_fork_wipe_works = false;

// Once per process, before it can fork: g_fork_wiped's page is zeroed in
// every child (recorder.h says why).
void InitForkWipe() {
  g_fork_wipe_works = madvise(&g_fork_wiped, sizeof g_fork_wiped, MADV_WIPEONFORK) == 0;
  __atomic_store_n(&g_fork_wiped.this_process, 1, __ATOMIC_RELAXED);
}

format::Unwinder UnwinderFor(UnwindMode mode) {
  switch (mode) {
    case UnwindMode::kFramePointer: return format::Unwinder::kFramePointer;
    case UnwindMode::kLibunwind: return format::Unwinder::kLibunwind;
    case UnwindMode::kHybrid: return format::Unwinder::kHybrid;
  }
  return format::Unwinder::kNone;
}

bool HasPidPattern(const char* tmpl) {
  for (const char* p = tmpl; *p != '\0'; ++p) {
    if (p[0] == '%' && p[1] == 'p') return true;
    if (p[0] == '%' && p[1] == '%') ++p;
  }
  return false;
}

// Opens this process's trace file and writes its header. The file is
// created exclusively: if the name is taken (an earlier image of this same
// pid wrote it before exec, or a fork child's file that the exec'd image
// must not truncate), this image writes "<path>.<n>" instead. Only a
// %p-less path run by hand, with no CROSSFREE_MAIN_PID yet, is truncated,
// so re-running a command overwrites its trace.
// A fork child's parent: the pid of the image that forked it (getppid()
// may already name a subreaper or init when the parent exits at once).
uint32_t g_fork_parent = 0;

bool PublishHeader(int fd, bool fork_child);

bool OpenTrace(bool fork_child) {
  const bool owns_plain =
      !fork_child && (g.settings.main_pid == 0 || g.settings.main_pid == g.pid);
  if (!ExpandOutputPath(g.settings, g.pid, owns_plain, g.output_path, sizeof(g.output_path))) {
    MessageLine().Add("CROSSFREE_OUTPUT is too long; running untraced").Print();
    return false;
  }
  // Under `crossfree record` the main image's file is record's to write
  // (at this same path): the header goes to the channel.
  if (channel::Attached()) return PublishHeader(-1, fork_child);
  // Owner-only, and never through a symlink someone placed at the path
  // (the truncate path would otherwise empty the file it points to).
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;
  const bool truncate = g.settings.main_pid == 0 && !fork_child &&
                        !HasPidPattern(g.settings.output_template);
  int fd = open(g.output_path, flags | (truncate ? O_TRUNC : O_EXCL), 0600);
  if (fd < 0 && !truncate && errno == EEXIST) {
    size_t base = StrLen(g.output_path);
    for (uint32_t n = 1; n < 1000 && fd < 0; ++n) {
      char* p = g.output_path + base;
      if (base + 24 >= sizeof(g.output_path)) break;
      *p++ = '.';
      p += FormatDecimal(n, p);
      *p = '\0';
      fd = open(g.output_path, flags | O_EXCL, 0600);
      if (fd < 0 && errno != EEXIST) break;
    }
  }
  if (fd < 0) {
    MessageLine()
        .Add("cannot open trace file '")
        .Add(g.output_path)
        .Add("': ")
        .Add(ErrnoName(errno))
        .Add("; running untraced")
        .Print();
    return false;
  }
  return PublishHeader(fd, fork_child);
}

// Encodes the file header and writes it to fd, or hands it to record's
// channel when fd is -1. Closes fd on failure.
bool PublishHeader(int fd, bool fork_child) {
  format::HeaderFields fields;
  fields.pid = g.pid;
  fields.ppid = fork_child && g_fork_parent != 0 ? g_fork_parent
                                                 : static_cast<uint32_t>(getppid());
  fields.clock = format::Clock::kMonotonic;
  fields.unwinder = g.stacks ? UnwinderFor(g.settings.unwind) : format::Unwinder::kNone;
  fields.max_depth = g.stacks ? static_cast<uint16_t>(g.settings.depth) : 0;
  fields.flags = (fork_child ? format::kHeaderFlagForkChild : 0) |
                 (g.malloc_hook ? format::kHeaderFlagMallocHook : 0) |
                 (TraceStartsWindowed(fork_child) ? format::kHeaderFlagWindowed : 0) |
                 format::kHeaderFlagEndsWithTotals;
  fields.sample_period = g_sample_period;
  fields.start_monotonic_ns = fork_child || g.start_ns == 0 ? NowNs() : g.start_ns;
  fields.start_realtime_ns = RealtimeNs();
  uint8_t header[8192];
  const char* exe = MainExePath();
  size_t n = format::EncodeFileHeader(fields, exe, StrLen(exe), header, sizeof(header));
  if (fd < 0) {
    if (n != 0 && channel::PublishFileHeader(header, n)) return true;
    MessageLine().Add("cannot hand the trace header to crossfree record; running untraced").Print();
    return false;
  }
  if (n == 0 || !WriteAll(fd, header, n)) {
    MessageLine()
        .Add("cannot write trace file '")
        .Add(g.output_path)
        .Add("': ")
        .Add(ErrnoName(errno))
        .Add("; running untraced")
        .Print();
    close(fd);
    return false;
  }
  // Out of the way of programs that expect the lowest free descriptors.
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 500);
  if (high >= 0) {
    close(fd);
    fd = high;
  }
  struct stat st;
  if (fstat(fd, &st) == 0) {
    g.file_dev = st.st_dev;
    g.file_ino = st.st_ino;
  }
  g.fd = fd;
  OwnFd(&g.fd, &g.trace_writers);  // out of the program's close() and dup2() (owned_fds.h)
  return true;
}

// Before fork, in the parent: its buffered events are written, so a
// process that forks its workers and then idles loses nothing to SIGKILL.
void AtForkPrepare() {
  if (g.phase.load(std::memory_order_acquire) != internal::kActive) return;
  GuardScope guard;
  int saved_errno = errno;
  internal::FlushCurrentThreadChunk();
  errno = saved_errno;
}

// Makes the tracer the child's own. Called by glibc's fork in the child,
// and by the child's first hook call that finds g_fork_wiped zeroed
// (ShouldRecordSlow): after a raw fork or clone, which runs no atfork
// handler, or when one of the program's own handlers, which run before
// this one, allocates. Whichever comes first does it; the child is
// single-threaded then.
void AtForkChild() {
  if (g_fork_wipe_works && __atomic_load_n(&g_fork_wiped.this_process, __ATOMIC_RELAXED) != 0) {
    return;  // done already in this process
  }
  __atomic_store_n(&g_fork_wiped.this_process, 1, __ATOMIC_RELAXED);
  const bool active = g.phase.load(std::memory_order_acquire) == internal::kActive;
  if (LoadedForAttach()) {
    GuardScope guard;
    int saved_errno = errno;
    if (active) {
      // An attached session records its process only: the child runs on
      // untraced (its GOT entries still reach the hooks, which forward),
      // and the inherited descriptor, shared with the parent, is left
      // alone.
      __atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
      g.phase.store(internal::kStopped, std::memory_order_release);
      // The child's copy of the trace file: the child has no use for it
      // (the parent's stays open).
      if (internal::TraceFd() >= 0) close(g.fd);
      g.fd = -1;
      g.write_failed.store(true, std::memory_order_relaxed);
    }
    // Whatever the phase: a fork while the parent's control thread was
    // still ending a session (recording already stopped) left the child a
    // session marked busy that no thread of its own would ever end, and
    // every later attach to the child was refused.
    AttachAtForkChild();
    errno = saved_errno;
    return;
  }
  if (!active) return;
  GuardScope guard;
  int saved_errno = errno;
  internal::ResetStatesInForkChild();
  // membarrier registration belongs to the address space: register the
  // child's own (the child is single-threaded here).
  internal::InitAsymmetricFence();
  // The inherited descriptor shares the parent's file offset and contents:
  // close it without writing anything, unless the program closed it and
  // the number is now one of its own files.
  if (internal::TraceFd() >= 0) {
    DisownFd(g.fd);
    close(g.fd);
  }
  g.fd = -1;
  g_fork_parent = g.pid;
  g.pid = static_cast<uint32_t>(getpid());
  // Under record: a region of the child's own, its header published there
  // before record is asked to adopt it (so record writes the header at
  // once); refused, the child writes its own file as without record.
  const bool handing = channel::BeginForkChild(g.pid);
  ForgetModules();
  ReseedSamplerInForkChild();
  WindowAtForkChild();
  bool opened = OpenTrace(/*fork_child=*/true);
  if (handing && (!opened || !channel::CompleteOffer(g.pid))) {
    channel::Detach();
    opened = OpenTrace(/*fork_child=*/true);
  }
  if (!opened) {
    __atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
    g.phase.store(internal::kStopped, std::memory_order_release);
  } else {
    // The inherited window, open: say so before the child's first event.
    format::WindowCause cause;
    if (ForkChildOpenRecord(&cause)) internal::AppendWindowRecordInForkChild(cause, NowNs());
    g.modules_pending.store(true, std::memory_order_release);
    // g_recording was wiped: the inherited window's state again.
    __atomic_store_n(&g_recording, WindowOpen() ? 1 : 0, __ATOMIC_RELEASE);
  }
  errno = saved_errno;
}

void PrintSummary(const internal::ExitStats& stats) {
  MessageLine()
      .Add("pid ")
      .AddNumber(g.pid)
      .Add(": ")
      .AddNumber(stats.events)
      .Add(" events in ")
      .AddNumber(stats.chunks)
      .Add(" chunks from ")
      .AddNumber(stats.states)
      .Add(" thread buffers, ")
      .AddNumber(InternedStackCount())
      .Add(" stacks (")
      .AddNumber(DroppedStackCount())
      .Add(" dropped), ")
      .AddNumber(stats.threads_skipped)
      .Add(" busy threads skipped, ")
      .AddNumber(g.foreign_events.load(std::memory_order_relaxed))
      .Add(" events of clone(2) tasks sharing a thread's TLS not recorded, clock ")
      .Add(g_fast_clock.enabled != 0 ? "tsc" : "clock_gettime")
      .Add(" -> ")
      .Add(g.output_path)
      .Print();
}

}  // namespace

void InitRecorder() {
  int expected = internal::kUninit;
  if (!g.phase.compare_exchange_strong(expected, internal::kStarting,
                                       std::memory_order_acq_rel)) {
    return;
  }
  GuardScope guard;
  int saved_errno = errno;
  InitForkWipe();
  LoadSettings(&g.settings);
  if (g.settings.tsc) InitFastClock();
  InitCpuId();
  InitSampler(g.settings.sample_period);
  g.start_ns = NowNs();  // the header's start time, and the delay's origin
  InitWindow(g.settings, g.start_ns);
  internal::InitAsymmetricFence();
  g.pid = static_cast<uint32_t>(getpid());
  InitMainExePath();
  if (g.settings.stacks) {
    SetStackCheck(g.settings.stack_check);
    SetWalkMemo(g.settings.stack_memo);
    g.stacks = InitStacks(g.settings.unwind, g.settings.depth);
    if (!g.stacks) MessageLine().Add("stack capture unavailable; recording without stacks").Print();
  }
  g.key_ok = pthread_key_create(&g.key, internal::OnThreadExit) == 0;
  pthread_atfork(AtForkPrepare, nullptr, AtForkChild);
  g.malloc_hook = g.settings.malloc_hook && ProbeMallocHook();
  // `crossfree record`'s hand-off: the image record started claims its
  // region; a later image of a process that had one (after exec) takes it
  // over; a process started without a fork handler (vfork, posix_spawn)
  // offers record a region of its own, its header published there first.
  // Refused, it writes its own file. (The command's own pid never offers
  // one: its trace is FILE, record's region or its own file.)
  channel::g_wait_ns = g.settings.channel_wait_ns;
  const char* socket_env = getenv(shm::kSocketEnv);
  const bool main_process = g.settings.main_pid == g.pid;
  bool offering = false;
  if (g.settings.channel_fd >= 0 &&
      channel::Attach(g.settings.channel_fd, g.settings.buffer_bytes, g.pid,
                      /*first=*/main_process)) {
    channel::AttachSocket(socket_env);
  } else if (!main_process && socket_env != nullptr && channel::AttachSocket(socket_env)) {
    offering = channel::BeginOwnRegion(g.pid, g.settings.buffer_bytes, g.settings.channel_fd);
  }
  bool opened = OpenTrace(/*fork_child=*/false);
  if (offering && (!opened || !channel::CompleteOffer(g.pid))) {
    channel::Detach();
    opened = OpenTrace(/*fork_child=*/false);
  }
  if (!opened) {
    g.phase.store(internal::kStopped, std::memory_order_release);
    __atomic_store_n(&g_started, 1, __ATOMIC_RELEASE);
    errno = saved_errno;
    return;
  }
  g.modules_pending.store(true, std::memory_order_release);
  g.phase.store(internal::kActive, std::memory_order_release);
  __atomic_store_n(&g_recording, WindowOpen() ? 1 : 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g_started, 1, __ATOMIC_RELEASE);
  if (g.malloc_hook) RegisterMallocHooks();
  errno = saved_errno;
}

bool ShouldRecordSlow() {
  if (__atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) != 0) return false;
  // A child process whose tracer state is still its parent's (AtForkChild).
  if (g_fork_wipe_works && __atomic_load_n(&g_fork_wiped.this_process, __ATOMIC_RELAXED) == 0 &&
      __atomic_load_n(&g_started, __ATOMIC_ACQUIRE) != 0) {
    AtForkChild();
  }
  int phase = g.phase.load(std::memory_order_acquire);
  if (phase == internal::kUninit && !LoadedForAttach()) {
    // Before libc's own constructor has run, environ is unset and our
    // settings would read as defaults: let such early calls pass untraced.
    if (environ == nullptr) return false;
    InitRecorder();
    phase = g.phase.load(std::memory_order_acquire);
  }
  if (phase != internal::kActive) {
    IgnoreWindowNudge();  // stopped: no window to open, and no slow path on every call
    return false;
  }
  // Active but not recording: a closed window, or a toggle request.
  if (__atomic_load_n(&g_recording, __ATOMIC_RELAXED) != 1) PollClosedWindow();
  return __atomic_load_n(&g_recording, __ATOMIC_RELAXED) == 1;
}

void ShutdownRecorder() {
  if (g.phase.load(std::memory_order_acquire) != internal::kActive) return;
  // A vfork child (_exit after a failed exec) shares the parent's memory:
  // closing the states would stop the parent's tracing. It has its own pid
  // but no atfork handler ran, so g.pid is still the parent's.
  if (static_cast<uint32_t>(getpid()) != g.pid) return;
  GuardScope guard;
  int saved_errno = errno;
  // Objects dlopen'ed since the last flush still need their module record.
  if (ModulesMayHaveChanged()) g.modules_pending.store(true, std::memory_order_release);
  internal::FlushCurrentThreadModules();
  int expected = internal::kActive;
  if (!g.phase.compare_exchange_strong(expected, internal::kStopped,
                                       std::memory_order_acq_rel)) {
    errno = saved_errno;
    return;
  }
  __atomic_store_n(&g_recording, 0, __ATOMIC_RELAXED);
  internal::ExitStats stats = internal::CloseAndFlushAll(/*wait_budget_ns=*/200'000'000);
  // A skipped thread writes its chunk later, after these counts: then the
  // file has no totals and `crossfree record` decodes it instead.
  if (stats.threads_skipped == 0) internal::WriteTotals(stats);
  channel::MarkCleanExit();
  if (g.settings.verbose) PrintSummary(stats);
  errno = saved_errno;
}

bool PrepareExec() {
  if (g.phase.load(std::memory_order_acquire) != internal::kActive) return false;
  if (static_cast<uint32_t>(getpid()) != g.pid) return false;  // vfork child
  ShutdownRecorder();
  const bool flushed = g.phase.load(std::memory_order_acquire) == internal::kStopped &&
                       !g.write_failed.load(std::memory_order_relaxed);
  // Under record, the next image takes the hand-off over.
  if (flushed) channel::BeforeExec();
  return flushed;
}

void FailedExec() {
  GuardScope guard;
  channel::AfterFailedExec();
  internal::ReopenStates();
  int expected = internal::kStopped;
  if (g.phase.compare_exchange_strong(expected, internal::kActive, std::memory_order_acq_rel)) {
    __atomic_store_n(&g_recording, WindowOpen() ? 1 : 0, __ATOMIC_RELEASE);
  }
}

namespace {

// The constructor makes sure start-up happens even in a process that never
// allocates, and records the module map outside any hook.
// Our place in the load order: true when the tracer was loaded before
// libc (preloaded, or linked ahead of it), so its definitions come first
// in the global scope.
int FindOrder(dl_phdr_info* info, size_t, void* data) {
  auto* before_libc = static_cast<int*>(data);
  const uintptr_t self = reinterpret_cast<uintptr_t>(&FindOrder);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    if (p.p_type == PT_LOAD && self >= info->dlpi_addr + p.p_vaddr &&
        self < info->dlpi_addr + p.p_vaddr + p.p_memsz) {
      *before_libc = 1;
      return 1;
    }
  }
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const char* base = name;
  for (const char* c = name; *c != '\0'; ++c) {
    if (*c == '/') base = c + 1;
  }
  if (StrEq(base, "libc.so.6")) {
    *before_libc = 0;
    return 1;
  }
  return 0;
}

__attribute__((constructor(101))) void TracerConstructor() {
  // Loaded by dlopen after libc (`crossfree record -p`): nothing is
  // interposed by symbol order, and recording starts only when an attach
  // session asks for it (attach.cc).
  int before_libc = 1;
  dl_iterate_phdr(FindOrder, &before_libc);
  if (before_libc == 0) {
    SetLoadedForAttach();
    return;
  }
  InitRecorder();
  if (g.phase.load(std::memory_order_acquire) != internal::kActive) return;
  GuardScope guard;
  int saved_errno = errno;
  // A %p-less output path run by hand (no `crossfree record`): this process
  // owns it, and its exec'd children must not truncate it, so pass our pid
  // on. Done here, not in a hook, because setenv takes libc's env lock.
  if (g.settings.main_pid == 0 && !HasPidPattern(g.settings.output_template)) {
    char digits[24];
    digits[FormatDecimal(g.pid, digits)] = '\0';
    setenv("CROSSFREE_MAIN_PID", digits, 0);
    g.settings.main_pid = g.pid;
  }
  internal::FlushCurrentThreadModules();
  errno = saved_errno;
}

}  // namespace

// Attach mode (attach.h).
namespace {
bool g_loaded_for_attach = false;
bool g_attach_initialised = false;
}  // namespace

bool LoadedForAttach() { return g_loaded_for_attach; }
void SetLoadedForAttach() {
  g_loaded_for_attach = true;
  internal::g_resolve_global = true;
  DisableOwnAllocationScopes();
}

bool StartAttachedRecording(const Settings& settings, const char** why) {
  int expected = g_attach_initialised ? internal::kStopped : internal::kUninit;
  if (!g.phase.compare_exchange_strong(expected, internal::kStarting,
                                       std::memory_order_acq_rel)) {
    *why = "the tracer in this process is not idle (preloaded, or a session is ending)";
    return false;
  }
  GuardScope guard;
  ErrnoSaver saved;
  g.settings = settings;
  g.settings.main_pid = static_cast<uint32_t>(getpid());  // a plain path, ours
  g.settings.malloc_hook = false;
  // A session in a fork child of a process attached before (a prefork
  // server's new worker) finds the parent's pid here, and the parent's
  // membarrier registration, which belongs to the parent's address space:
  // its trace would be named and headed as the parent's, and its exit
  // taken for a vfork child's, which writes nothing (ShutdownRecorder).
  const auto pid = static_cast<uint32_t>(getpid());
  if (!g_attach_initialised || g.pid != pid) {
    internal::InitAsymmetricFence();
    g.pid = pid;
  }
  if (!g_attach_initialised) {
    InitForkWipe();
    if (g.settings.tsc) InitFastClock();
    InitMainExePath();
    g.key_ok = pthread_key_create(&g.key, internal::OnThreadExit) == 0;
    pthread_atfork(AtForkPrepare, nullptr, AtForkChild);
    g_attach_initialised = true;
  } else {
    internal::ResetStatesForNewTrace();
    ResetInternedStacks();
  }
  InitSampler(g.settings.sample_period);
  ClearLiveSet();
  g.stacks = false;
  if (g.settings.stacks) {
    SetStackCheck(g.settings.stack_check);
    SetWalkMemo(g.settings.stack_memo);
    g.stacks = InitStacks(g.settings.unwind, g.settings.depth);
    if (!g.stacks) MessageLine().Add("stack capture unavailable; recording without stacks").Print();
  }
  g.malloc_hook = false;
  g.write_failed.store(false, std::memory_order_relaxed);
  g.foreign_events.store(0, std::memory_order_relaxed);
  g.next_idle_scan_ns.store(0, std::memory_order_relaxed);
  ForgetModules();
  BeginAttachedWindow();
  g.start_ns = NowNs();
  if (!OpenTrace(/*fork_child=*/false)) {
    EndAttachedWindow();
    g.phase.store(internal::kStopped, std::memory_order_release);
    *why = "cannot create the trace file (see the message above)";
    return false;
  }
  internal::ReopenStates();
  g.modules_pending.store(true, std::memory_order_release);
  g.phase.store(internal::kActive, std::memory_order_release);
  // The open record first, then recording: every event is later than it.
  internal::WriteOwnWindowRecord(format::WindowState::kOpen, format::WindowCause::kAttach,
                                 g.start_ns);
  internal::FlushCurrentThreadModules();
  __atomic_store_n(&g_started, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&g_recording, 1, __ATOMIC_RELEASE);
  return true;
}

bool AttachedRecordingActive() {
  return g.phase.load(std::memory_order_acquire) == internal::kActive &&
         !g.write_failed.load(std::memory_order_relaxed);
}

bool StopAttachedRecording(AttachedTotals* totals) {
  // Ended already (an exec, or a write that failed and stopped the
  // recording): whether the trace is whole is all there is to say.
  totals->write_failed = g.write_failed.load(std::memory_order_relaxed);
  if (g.phase.load(std::memory_order_acquire) != internal::kActive) return false;
  GuardScope guard;
  ErrnoSaver saved;
  const uint64_t now = NowNs();
  __atomic_store_n(&g_recording, 0, __ATOMIC_RELEASE);
  EndAttachedWindow();
  // Modules first: the close record is then the last thing this thread
  // writes (the analyzer looks for it in each thread's last chunk).
  if (ModulesMayHaveChanged()) g.modules_pending.store(true, std::memory_order_release);
  internal::FlushCurrentThreadModules();
  internal::WriteOwnWindowRecord(format::WindowState::kClosed, format::WindowCause::kAttach, now);
  int expected = internal::kActive;
  if (!g.phase.compare_exchange_strong(expected, internal::kStopped,
                                       std::memory_order_acq_rel)) {
    return false;
  }
  internal::ExitStats stats = internal::CloseAndFlushAll(/*wait_budget_ns=*/200'000'000);
  if (stats.threads_skipped == 0) internal::WriteTotals(stats);
  totals->events = stats.events;
  // As report counts them: the control thread, which wrote the attached
  // window's records and nothing else, is no thread of the program's.
  totals->threads = stats.threads_with_events;
  totals->threads_skipped = stats.threads_skipped;
  totals->write_failed = g.write_failed.load(std::memory_order_relaxed);
  // A thread still inside a record (skipped) finds the trace over and
  // drops its chunk silently instead of reporting a write error.
  g.write_failed.store(true, std::memory_order_relaxed);
  const int fd = __atomic_exchange_n(&g.fd, -1, __ATOMIC_ACQ_REL);
  if (fd >= 0) close(fd);
  return true;
}

namespace {

// Priority 101 runs after this library's other destructors; the dynamic
// loader runs it after the executable's destructors and atexit handlers.
__attribute__((destructor(101))) void TracerDestructor() { ShutdownRecorder(); }

}  // namespace
}  // namespace crossfree::tracer
