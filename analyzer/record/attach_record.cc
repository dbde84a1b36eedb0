// SPDX-License-Identifier: Apache-2.0
// `crossfree record -p PID` (see attach_record.h): the control socket,
// the injection, the window, the detach.
#include "analyzer/record/attach_record.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/core.h>

#include "analyzer/record/attach_inject.h"
#include "analyzer/record/exit_codes.h"
#include "analyzer/record/messages.h"
#include "analyzer/record/paths.h"
#include "analyzer/record/recorded_traces.h"
#include "protocol/attach_protocol.h"

namespace crossfree::analyzer::record {
namespace {

volatile sig_atomic_t g_stop = 0;
void OnStopSignal(int) { g_stop = 1; }

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string ExeOf(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(fmt::format("/proc/{}/exe", pid).c_str(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

// Reads the tracer's lines; returns false at end of file. Lines that are
// messages of the tracer ("crossfree-trace: ...") are printed as they come;
// a reply line ("ok ...", "error ...", "detached ...") is returned in *reply.
struct LineReader {
  int fd;
  std::string pending;
  bool eof = false;
  // Waits up to timeout_s (< 0: until a stop signal) for the next reply.
  bool Next(double timeout_s, std::string* reply, bool stop_on_signal) {
    const double deadline = timeout_s < 0 ? 0 : NowS() + timeout_s;
    for (;;) {
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (line.rfind("crossfree-trace: ", 0) == 0) {
          Say("crossfree record: the tracer says: {}\n", line.substr(17));
          continue;
        }
        *reply = line;
        return true;
      }
      if (eof) return false;
      if (stop_on_signal && g_stop) return false;
      int wait_ms = -1;
      if (timeout_s >= 0) {
        const double left = deadline - NowS();
        if (left <= 0) return false;
        wait_ms = static_cast<int>(left * 1000) + 1;
      }
      pollfd pfd{fd, POLLIN, 0};
      int r = poll(&pfd, 1, wait_ms);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      char buf[4096];
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof = true;
        continue;
      }
      pending.append(buf, static_cast<size_t>(n));
    }
  }
};

std::string EntryProblem(int code, pid_t pid) {
  const int kind = code & 0xff;
  const int error = code >> 8;
  switch (kind) {
    case attach::kAttachPreloaded:
      return fmt::format("process {} runs with libcrossfree-trace.so preloaded already: it is "
                         "being recorded from its start (see its CROSSFREE_OUTPUT trace)",
                         pid);
    case attach::kAttachBusy:
      // Not another live record: its socket, bound until it exits, would
      // have refused this one before the injection.
      return fmt::format("the tracer in process {} is still ending an earlier session (its "
                         "crossfree record was killed a moment ago, or the trace of one killed "
                         "while recording is still being written); try again in a moment",
                         pid);
    case attach::kAttachNoChannel:
      return fmt::format("the tracer in process {} cannot reach crossfree's control socket "
                         "({}): is the process in another network namespace (a container)? "
                         "run crossfree inside it",
                         pid, std::strerror(error));
    case attach::kAttachWrongPeer:
      return "another process answered on crossfree's control socket; refusing to go on";
    case attach::kAttachNoThread:
      return fmt::format("the tracer in process {} cannot start its control thread: {}", pid,
                         std::strerror(error));
    default:
      return fmt::format("unexpected answer {} from the tracer's entry point", code);
  }
}

// The thread group (process) of pid, which may name one of its threads.
pid_t ThreadGroupOf(pid_t pid) {
  FILE* f = std::fopen(fmt::format("/proc/{}/status", pid).c_str(), "r");
  if (f == nullptr) return pid;
  char line[256];
  pid_t tgid = pid;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "Tgid:", 5) == 0) tgid = static_cast<pid_t>(std::atol(line + 5));
  }
  std::fclose(f);
  return tgid > 0 ? tgid : pid;
}

// Each step below prints its one line on stderr when it fails; RunAttach
// then returns kExitUsage.

// The process to attach to (the thread group of o.pid, which may name one
// of its threads), and that this process may ptrace it; its executable
// into *exe.
bool CheckTarget(const AttachOptions& o, pid_t* pid_out, std::string* exe) {
  if (o.pid <= 0 || (kill(o.pid, 0) != 0 && errno == ESRCH)) {
    Say("crossfree record: -p {}: no such process\n", o.pid);
    return false;
  }
  const pid_t pid = ThreadGroupOf(o.pid);
  if (pid == getpid()) {
    Say("crossfree record: -p {}: that is crossfree itself\n", pid);
    return false;
  }
  *exe = ExeOf(pid);
  if (std::string why = PtracePermissionProblem(pid); !why.empty()) {
    Say("crossfree record: cannot attach to {}: {}\n", pid, why);
    return false;
  }
  *pid_out = pid;
  return true;
}

// The control socket, bound and listening, or -1. Its name is also the
// lock against a second record on the same process.
int BindControlSocket(pid_t pid) {
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) {
    Say("crossfree record: socket failed: {}\n", std::strerror(errno));
    return -1;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t name_len = attach::AttachSocketName(static_cast<uint32_t>(pid), addr.sun_path + 1,
                                                   sizeof(addr.sun_path) - 1);
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name_len);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
    const int error = errno;
    close(listener);
    if (error == EADDRINUSE) {
      Say("crossfree record: another crossfree record is attached to process {} "
          "already (its control socket @{} is taken); wait for it to detach\n",
          pid, std::string(addr.sun_path + 1, name_len));
    } else {
      Say("crossfree record: cannot bind the control socket: {}\n",
          std::strerror(error));
    }
    return -1;
  }
  listen(listener, 4);
  return listener;
}

// The trace's absolute path, with any file there removed: the tracer
// creates the file exclusively (it must never write into a file someone
// else put there).
bool PrepareOutput(const AttachOptions& o, pid_t pid, std::string* output) {
  *output = o.output.empty() ? fmt::format("{}/crossfree.{}.trace", CurrentDir(), pid)
                             : (o.output[0] == '/' ? o.output : CurrentDir() + "/" + o.output);
  if (unlink(output->c_str()) != 0 && errno != ENOENT) {
    Say("crossfree record: cannot replace {}: {}\n", *output, std::strerror(errno));
    return false;
  }
  return true;
}

// Ctrl-C and SIGTERM end the window (the target is never left hooked).
void CatchStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

// The tracer loaded into pid and its entry point started the session.
bool Inject(const AttachOptions& o, pid_t pid, int listener, InjectResult* inj) {
  *inj = InjectTracer(pid, o.library, getpid(), listener);
  if (!inj->ok) {
    Say("crossfree record: cannot attach to {}: {}\n", pid, inj->error);
    return false;
  }
  if (inj->entry_result != attach::kAttachStarted) {
    Say("crossfree record: cannot attach to {}: {}\n", pid,
        EntryProblem(inj->entry_result, pid));
    return false;
  }
  return true;
}

// The tracer's connection, made during the entry point's call and queued
// on the listener, or -1. The listener stays bound until we exit: its name
// is the lock that refuses a second record on this process meanwhile.
int AcceptTracer(pid_t pid, int listener) {
  pollfd lp{listener, POLLIN, 0};
  int conn = -1;
  if (poll(&lp, 1, 5000) == 1) conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) {
    Say("crossfree record: the tracer in {} did not connect\n", pid);
  }
  return conn;
}

// Sends the session's request and waits for the tracer's "ok"; says on
// stderr what was attached and where the trace goes. Closes conn when it
// fails.
bool StartSession(const AttachOptions& o, pid_t pid, const std::string& exe,
                  const std::string& output, const InjectResult& inj, int conn,
                  LineReader* reader) {
  attach::AttachRequest req;
  std::snprintf(req.output, sizeof(req.output), "%s", output.c_str());
  if (!o.unwind.empty()) {
    req.unwind = o.unwind == "fp" ? 0 : o.unwind == "libunwind" ? 1 : 2;
  }
  req.depth = o.depth;
  req.stacks = o.no_stacks ? 0 : 1;
  req.sample = o.sample > 0 ? o.sample : 1;
  req.set_control_nice = inj.raised_nice ? 1 : 0;
  req.control_nice = inj.old_nice;
  if (send(conn, &req, sizeof(req), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(req))) {
    Say("crossfree record: cannot talk to the tracer in {}: {}\n", pid,
        std::strerror(errno));
    close(conn);
    return false;
  }
  std::string reply;
  if (!reader->Next(30, &reply, false) || reply.rfind("ok ", 0) != 0) {
    Say("crossfree record: cannot attach to {}: {}\n", pid,
        reply.rfind("error ", 0) == 0 ? reply.substr(6)
                                      : std::string("the tracer did not answer"));
    close(conn);
    return false;
  }
  Say("crossfree record: attached to process {} ({}): thread {} stopped for {:.2f} ms "
      "in all, then {:.2f} ms loading the tracer on its own ({} stop{} over its {} "
      "thread{}{}); {}\n",
      pid, exe, inj.tid, inj.stopped_ms, inj.calls_ms, inj.attempts,
      inj.attempts == 1 ? "" : "s", inj.threads, inj.threads == 1 ? "" : "s",
      inj.already_loaded ? ", tracer already loaded" : "", reply.substr(3));
  if (o.duration_s >= 0) {
    Say("crossfree record: recording for {} s into {}\n", o.duration_s, output);
  } else {
    Say("crossfree record: recording into {} until Ctrl-C\n", output);
  }
  return true;
}

// How the recording window ended.
struct WindowEnd {
  bool target_gone = false;  // the tracer's connection closed first
  std::string ended;         // the tracer's "ended" line, when it ended the session
};

// The window: until the duration, a stop signal, or the target's end.
WindowEnd RecordWindow(const AttachOptions& o, LineReader* reader) {
  WindowEnd end;
  const double end_at = o.duration_s >= 0 ? NowS() + o.duration_s : 0;
  for (;;) {
    if (g_stop) break;
    double left = -1;
    if (o.duration_s >= 0) {
      left = end_at - NowS();
      if (left <= 0) break;
    }
    std::string line;
    if (reader->Next(left, &line, true)) {
      // The tracer ended the session itself (exit, exec, a write error):
      // the socket closes with the process image; wait for that.
      if (line.rfind("ended ", 0) == 0) end.ended = line.substr(6);
      continue;
    }
    if (reader->eof) {
      end.target_gone = true;
      break;
    }
  }
  return end;
}

// Says why the session ended without a detach: the tracer ended it, the
// process exited, or it exec'd (a new image without the tracer). Returns
// false when the trace lost its last buffers: the process was killed, or
// exec'd through a call the tracer does not see (the execl* family,
// fexecve, a direct system call), so the flush before an exec never ran.
// The file says which: the tracer's totals end it only after that flush.
bool ReportTargetGone(pid_t pid, const std::string& exe, const std::string& ended,
                      const std::string& output) {
  const std::string now_exe = ExeOf(pid);
  const bool gone = now_exe.empty() || kill(pid, 0) != 0;
  if (!ended.empty() && !gone && now_exe == exe) {
    Say("crossfree record: the recording in process {} ended: {}; trace {}\n",
        pid, ended, output);
    return true;
  }
  const bool flushed = EndsWithTotals(output);
  if (gone && flushed) {
    Say("crossfree record: process {} exited while attached; its tracer wrote the "
        "trace at exit: {}\n",
        pid, output);
  } else if (gone) {
    // Not a child of record: its exit status is not ours to read, but the
    // file says whether the tracer's exit flush ran.
    Say("crossfree record: process {} ended while attached without the tracer's exit "
        "flush (killed by a signal): the trace holds what its threads had "
        "written, their last buffers are lost: {}\n",
        pid, output);
  } else if (flushed) {
    Say("crossfree record: process {} exec'd ({}) while attached; the trace was "
        "written before the exec: {}\n",
        pid, now_exe, output);
  } else {
    Say("crossfree record: process {} exec'd ({}) while attached through a call the "
        "tracer does not see (the execl family, fexecve or a direct system call): the "
        "trace holds what its threads had written, their last buffers are lost: {}\n",
        pid, now_exe, output);
  }
  return flushed;
}

// RunAttach's exit code once the tracer has said how the session ended
// (its "detached" or "ended" text): 0, or kExitEventsLost after one more
// line when the tracer could not write all it recorded
// (attach::kIncompleteNote), so that a partial trace is never taken for a
// whole one.
int ExitCodeOf(const std::string& tracer_text, const std::string& output) {
  if (tracer_text.find(attach::kIncompleteNote) == std::string::npos) return 0;
  Say("crossfree record: the trace is incomplete: the tracer could not write all it "
      "recorded into {}\n",
      output);
  return kExitEventsLost;
}

// The end of a window the target outlived: asks the tracer to detach,
// waits for its "detached" reply, closes the connection and says how it
// ended. Returns RunAttach's exit code.
int FinishDetach(pid_t pid, const std::string& output, int conn, LineReader* reader) {
  const char detach = attach::kDetachByte;
  send(conn, &detach, 1, MSG_NOSIGNAL);
  std::string done;
  bool detached = false;
  while (reader->Next(60, &done, false)) {
    if (done.rfind("detached ", 0) == 0) {
      detached = true;
      break;
    }
  }
  // Then the tracer's close, which comes once its session is over: a
  // process that forks or is attached again as soon as record returns
  // finds no session still ending (bounded: the close follows the reply
  // at once).
  std::string late;
  const double close_by = NowS() + 10;
  // (Never a negative timeout: Next() takes that as no bound.)
  while (detached && reader->Next(std::max(0.0, close_by - NowS()), &late, false)) {
  }
  close(conn);
  if (!detached) {
    Say("crossfree record: process {} ended while detaching (exit or exec); the trace "
        "is what its tracer wrote: {}\n",
        pid, output);
    return 0;
  }
  Say("crossfree record: detached from process {}: {}; trace {}\n", pid,
      done.substr(9), output);
  return ExitCodeOf(done, output);
}

}  // namespace

// The steps, in order: the target checked, the control socket bound, the
// output prepared, the tracer injected and its session started, the
// window, then the detach (or what ended the session first).
int RunAttach(const AttachOptions& o) {
  pid_t pid = 0;
  std::string exe;
  if (!CheckTarget(o, &pid, &exe)) return kExitUsage;
  const int listener = BindControlSocket(pid);
  if (listener < 0) return kExitUsage;
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { close(fd); }
  } listener_guard{listener};
  std::string output;
  if (!PrepareOutput(o, pid, &output)) return kExitUsage;
  CatchStopSignals();

  InjectResult inj;
  if (!Inject(o, pid, listener, &inj)) return kExitUsage;
  const int conn = AcceptTracer(pid, listener);
  if (conn < 0) return kExitUsage;
  LineReader reader{conn, {}};
  if (!StartSession(o, pid, exe, output, inj, conn, &reader)) return kExitUsage;
  const WindowEnd window = RecordWindow(o, &reader);
  if (window.target_gone) {
    const bool whole = ReportTargetGone(pid, exe, window.ended, output);
    close(conn);
    const int code = ExitCodeOf(window.ended, output);
    if (whole || code != 0) return code;
    // As for any trace that lost recorded events: never taken for a whole one.
    Say("crossfree record: the trace is incomplete: exit {}\n", kExitEventsLost);
    return kExitEventsLost;
  }
  return FinishDetach(pid, output, conn, &reader);
}

}  // namespace crossfree::analyzer::record
