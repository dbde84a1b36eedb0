// SPDX-License-Identifier: Apache-2.0
// Tracer, attach mode: the entry point `crossfree record -p` makes one
// thread of the target call (after dlopen'ing this library), and the
// control thread that runs the session (see attach.h, attach_protocol.h
// and docs/design.md, "Attaching to a running process").
//
// The entry point runs while its thread is stopped by the injector, so it
// does the least it can: connect the control socket and start the control
// thread. Everything else (resolving the real functions, opening the
// trace, rewriting GOT entries, and undoing it all) runs on the control
// thread, with every signal blocked and the recursion guard held for its
// whole life: the target's own code never runs on it, and nothing it does
// is recorded.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "tracer/attach.h"
#include "protocol/attach_protocol.h"
#include "tracer/clock.h"
#include "tracer/got_patch.h"
#include "tracer/owned_fds.h"
#include "tracer/real_alloc.h"
#include "tracer/recorder.h"
#include "tracer/sys.h"
#include "tracer/unwind_cfi.h"

namespace crossfree::tracer {
namespace {

using attach::AttachRequest;

// 1 from the entry point's start until the control thread has put
// everything back: a second entry call meanwhile is refused.
std::atomic<int> g_session{0};

// How often the control thread looks for modules loaded since (dlopen).
constexpr int kModulePollMs = 20;

// Line-oriented replies on the control socket; never SIGPIPE.
void Reply(int fd, const char* kind, const char* text) {
  char buf[1200];
  size_t n = 0;
  for (const char* p = kind; *p != '\0' && n < sizeof(buf) - 2; ++p) buf[n++] = *p;
  buf[n++] = ' ';
  for (const char* p = text; *p != '\0' && n < sizeof(buf) - 1; ++p) buf[n++] = *p;
  buf[n++] = '\n';
  SendAll(fd, buf, n);
}

// Appends text or a number to a fixed buffer.
struct Text {
  char buf[1024];
  size_t n = 0;
  Text& Add(const char* s) {
    while (*s != '\0' && n + 1 < sizeof(buf)) buf[n++] = *s++;
    buf[n] = '\0';
    return *this;
  }
  Text& Num(uint64_t v) {
    char d[24];
    d[FormatDecimal(v, d)] = '\0';
    return Add(d);
  }
};

bool ReadRequest(int fd, AttachRequest* req) {
  auto* p = reinterpret_cast<char*>(req);
  size_t got = 0;
  const uint64_t deadline = NowNs() + 10'000'000'000ull;
  while (got < sizeof(*req)) {
    const uint64_t now = NowNs();
    if (now >= deadline) return false;
    pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, static_cast<int>((deadline - now) / 1'000'000 + 1));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = recv(fd, p + got, sizeof(*req) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return req->magic == attach::kRequestMagic && req->version == attach::kRequestVersion;
}

bool ToSettings(const AttachRequest& req, Settings* s, const char** why) {
  *s = Settings{};
  size_t n = 0;
  while (n < sizeof(req.output) && req.output[n] != '\0') ++n;
  if (n == 0 || n >= sizeof(s->output_template) || req.output[0] != '/') {
    *why = "the trace path must be absolute";
    return false;
  }
  for (size_t i = 0; i < n; ++i) s->output_template[i] = req.output[i];
  s->output_template[n] = '\0';
  if (req.unwind >= 0) {
    if (req.unwind > static_cast<int>(UnwindMode::kHybrid)) {
      *why = "unknown unwinder";
      return false;
    }
    s->unwind = static_cast<UnwindMode>(req.unwind);
  }
  if (req.depth != 0) {
    if (req.depth < 1 || req.depth > 256) {
      *why = "depth out of range";
      return false;
    }
    s->depth = req.depth;
  }
  s->stacks = req.stacks != 0;
  if (req.sample < 1 || req.sample > kMaxSamplePeriod) {
    *why = "sample period out of range";
    return false;
  }
  s->sample_period = req.sample;
  s->flush_ns = uint64_t{req.flush_ms} * 1'000'000;
  return true;
}

// Waits for the detach byte, the recorder's end of file, or the end of
// the recording (exit flush, exec, write error); patches modules loaded
// meanwhile. Returns what ended it.
enum class End { kDetach, kRecorderGone, kRecordingEnded };

End Serve(int fd) {
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int r = poll(&pfd, 1, kModulePollMs);
    if (r < 0 && errno != EINTR) return End::kRecorderGone;
    if (r > 0) {
      char byte = 0;
      ssize_t n = recv(fd, &byte, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return End::kRecorderGone;
      if (byte == attach::kDetachByte) return End::kDetach;
      continue;  // anything else: ignored
    }
    if (!AttachedRecordingActive()) return End::kRecordingEnded;
    if (ModuleSetChanged()) PatchNewModules();
  }
}

struct ControlArgs {
  int fd = -1;
};
ControlArgs g_args;

void* ControlThread(void*);

// ControlThread's steps, in its order. Each runs on the control thread,
// under the recursion guard.

// The control socket, moved out of the way of the program's own low
// descriptors. Here, not in the entry point: growing a multi-threaded
// process's descriptor table past its size waits for an RCU grace period,
// which took 60-240 ms on 2 cores busy with 59 threads, and the entry
// point runs on a thread of the program.
int TakeControlSocket() {
  if (int high = fcntl(g_args.fd, F_DUPFD_CLOEXEC, 500); high >= 0) {
    close(g_args.fd);
    g_args.fd = high;
  }
  // Out of the program's close() (owned_fds.h): a program that closes every
  // descriptor would otherwise end the session as if record had gone. This
  // thread runs under the guard, so its own close() calls go through.
  OwnFd(&g_args.fd, nullptr);
  return g_args.fd;
}

// This library's handle, or nullptr. Already loaded: only a reference,
// never closed (the hooks must stay mapped for threads that are still
// inside one).
void* OwnLibraryHandle() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&ControlThread), &info) != 0 && info.dli_fname != nullptr) {
    return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  return nullptr;
}

// Reads record's request into *settings; nullptr when the session can
// start, else why not (the "error" reply's text).
const char* ReadSession(int fd, Settings* settings) {
  AttachRequest req;
  const char* why = nullptr;
  void* self = OwnLibraryHandle();
  const bool have_request = ReadRequest(fd, &req);
  // Down from the priority the loading thread was raised to (which this
  // thread inherited), before any of the session's work.
  if (have_request && req.set_control_nice != 0) {
    setpriority(PRIO_PROCESS, static_cast<id_t>(CurrentTid()), req.control_nice);
  }
  if (!have_request) {
    why = "no valid request from crossfree record";
  } else if (!ToSettings(req, settings, &why)) {
  } else if (self == nullptr) {
    why = "the tracer cannot find its own library handle";
  } else if (!RealResolved()) {
    why = "cannot resolve the real allocation functions";
  } else if (!PrepareGotPatching(self)) {
    why = "this process has no dynamic malloc and free to hook";
  } else if (AllocatorInExecutable()) {
    why = "the allocator is linked statically into the executable: its own calls to malloc do "
          "not go through a GOT entry that could be rewritten; run it under `crossfree record "
          "-- CMD` instead (LD_PRELOAD; static tcmalloc is recorded through MallocHook there)";
  }
  return why;
}

// The session's end on this side: a new entry call allowed, then the
// socket closed. In that order because record waits for the close before
// it returns: by then a new attach is accepted, here and in a fork child.
// (A fork child closes its copy of the socket (AttachAtForkChild) while
// g_args.fd names it; one forked between the two stores and the close
// keeps a copy, and record's wait for the close then ends at its 10 s
// bound or the child's exit. Naming the number any longer would have the
// child close a descriptor the program may have reused.)
void EndSession(int fd) {
  g_args.fd = -1;
  g_session.store(0, std::memory_order_release);
  close(fd);
}

// Hooks the program and starts recording, then replies "ok" with what was
// hooked. False after replying "error" with everything put back.
bool StartSession(int fd, const Settings& settings) {
  // From here the tracer's messages go to record, not to the target's stderr.
  __atomic_store_n(&g_message_fd, fd, __ATOMIC_RELAXED);
  // Hooks first, recording second: until recording starts the hooks only
  // forward, and what the tracer's own start-up creates through them (the
  // unwinder's pipe) is moved out of the program's way as when preloaded.
  const GotPatchStats stats = PatchNewModules();
  const char* why = nullptr;
  if (!StartAttachedRecording(settings, &why)) {
    RestoreAllGotEntries();
    // Recording never started, so no hook unwound: the unwinder's start-up
    // (on this thread) may have opened libunwind's pipe, which a refused
    // session must not leave behind either (seen with a trace file the
    // target could not create: 2 descriptors more after the refusal).
    ReleaseCfiFiles();
    ReleaseUnwinderPipe();
    __atomic_store_n(&g_message_fd, 2, __ATOMIC_RELAXED);
    Reply(fd, "error", why);
    EndSession(fd);
    return false;
  }
  Text t;
  t.Add("recording: ").Num(stats.patched).Add(" GOT entries in ").Num(stats.modules)
      .Add(" modules now reach the tracer");
  if (stats.foreign != 0) t.Add(", ").Num(stats.foreign).Add(" bound elsewhere left alone");
  if (stats.failed != 0) t.Add(", ").Num(stats.failed).Add(" could not be written");
  if (stats.dropped != 0) t.Add(", ").Num(stats.dropped).Add(" beyond the table left alone");
  Reply(fd, "ok", t.buf);
  return true;
}

// Unhooks the program, stops recording and replies how the session ended
// ("ended" or "detached"; nothing to a recorder that is gone).
void StopSession(int fd, End end) {
  // Recording off first, then unhook: calls already inside a hook finish
  // there (the library stays mapped) and their events are written by the
  // flush; later ones are forwarded. Stopping first keeps the hooks in
  // place while threads may still unwind, so that a pipe libunwind reopens
  // meanwhile goes through the pipe2 hook and is noted for
  // ReleaseUnwinderPipe; unhooked, it landed on low descriptor numbers
  // nobody noted, and the program kept two more after the detach (1 in
  // about 20 attaches to gRPC's sync server).
  AttachedTotals totals;
  const bool stopped = StopAttachedRecording(&totals);
  const uint32_t restored = RestoreAllGotEntries();
  // No thread unwinds any more (none was left inside a record): the object
  // files the unwinder opened are closed, and libunwind's address-validation
  // pipe (opened at the first session's first unwind, two descriptors the
  // program never had) too, as they were before the attach.
  if (stopped && totals.threads_skipped == 0) {
    ReleaseCfiFiles();
    ReleaseUnwinderPipe();
  }
  __atomic_store_n(&g_message_fd, 2, __ATOMIC_RELAXED);
  Text t;
  t.Num(restored).Add(" GOT entries restored; ");
  if (stopped) {
    t.Num(totals.events).Add(" events from ").Num(totals.threads);
    t.Add(totals.threads == 1 ? " thread written" : " threads written");
    if (totals.threads_skipped != 0) {
      t.Add(" (").Num(totals.threads_skipped).Add(" threads busy at the end: no totals)");
    }
  } else {
    t.Add("the recording had already ended (the process exec'd or its trace failed)");
  }
  // Last, so that record finds it whatever came before (attach_protocol.h).
  if (totals.write_failed) t.Add("; ").Add(attach::kIncompleteNote);
  // A recorder that went away (SIGKILL) reads nothing; the target's
  // stderr is not ours to write to, the trace file says what happened.
  if (end == End::kRecordingEnded) {
    // An exit or an exec is under way: the socket then closes with the
    // process image (exit, close-on-exec), which is how record tells them
    // apart. A failed exec brings the program back: then it closes here,
    // after at most 10 s.
    Reply(fd, "ended", t.buf);
    // After a failed write the program goes on: nothing would close the
    // socket for it, so it closes now.
    pollfd pfd{fd, POLLIN, 0};
    while (!totals.write_failed && poll(&pfd, 1, 10'000) < 0 && errno == EINTR) {
    }
  } else if (end != End::kRecorderGone) {
    Reply(fd, "detached", t.buf);
  }
}

// For tests: CROSSFREE_TEST_SESSION_END_DELAY_MS=N in the target's
// environment holds the control thread N ms (at most 2000) between its
// last reply and the session's end: the gap in which a fork child once
// inherited a session marked busy, and in which record must not have
// returned yet (tests/tracer/attach_test.cc). Read on the control thread
// at the session's end, never on a hook.
void PauseBeforeSessionEndForTesting() {
  const char* v = getenv("CROSSFREE_TEST_SESSION_END_DELAY_MS");
  if (v == nullptr) return;
  long ms = strtol(v, nullptr, 10);
  if (ms <= 0) return;
  if (ms > 2000) ms = 2000;
  timespec pause = {ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&pause, nullptr);
}

void* ControlThread(void*) {
  __atomic_store_n(&crossfree_tracer_guard, 1, __ATOMIC_RELAXED);
  const int fd = TakeControlSocket();
  prctl(PR_SET_NAME, "crossfree-ctl", 0, 0, 0);
  Settings settings;
  if (const char* why = ReadSession(fd, &settings); why != nullptr) {
    Reply(fd, "error", why);
    EndSession(fd);
    return nullptr;
  }
  if (!StartSession(fd, settings)) return nullptr;
  StopSession(fd, Serve(fd));
  PauseBeforeSessionEndForTesting();
  EndSession(fd);
  return nullptr;
}

int Result(int code, int error) { return code | (error << 8); }

}  // namespace

void AttachAtForkChild() {
  __atomic_store_n(&g_message_fd, 2, __ATOMIC_RELAXED);
  // The control thread does not exist in the child; its session does not
  // either (a later attach to the child starts its own). The socket is the
  // child's copy: the parent's stays open.
  if (g_session.load(std::memory_order_acquire) != 0 && g_args.fd >= 0) close(g_args.fd);
  g_args.fd = -1;
  g_session.store(0, std::memory_order_release);
}

}  // namespace crossfree::tracer

// The injector's call (attach_protocol.h): connect to record's socket for
// this pid, check it is record_pid's, start the control thread.
extern "C" __attribute__((visibility("default"))) int crossfree_attach(int record_pid) {
  using namespace crossfree::tracer;
  using namespace crossfree;
  if (!LoadedForAttach()) return attach::kAttachPreloaded;
  int expected = 0;
  if (!g_session.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    return attach::kAttachBusy;
  }
  const int saved_errno = errno;
  auto fail = [&](int code, int error) {
    g_session.store(0, std::memory_order_release);
    errno = saved_errno;
    return Result(code, error);
  };
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(attach::kAttachNoChannel, errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = attach::AttachSocketName(static_cast<uint32_t>(getpid()), addr.sun_path + 1,
                                            sizeof(addr.sun_path) - 1);
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    const int error = errno;
    close(fd);
    return fail(attach::kAttachNoChannel, error);
  }
  ucred peer{};
  socklen_t peer_len = sizeof(peer);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 || peer.pid != record_pid) {
    close(fd);
    return fail(attach::kAttachWrongPeer, 0);
  }
  g_args.fd = fd;
  // The control thread takes no signal of the target's.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, ControlThread, nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    close(fd);
    return fail(attach::kAttachNoThread, rc);
  }
  errno = saved_errno;
  return attach::kAttachStarted;
}
