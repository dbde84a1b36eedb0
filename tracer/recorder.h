// SPDX-License-Identifier: Apache-2.0
// Tracer: the bookkeeping core behind the hooks. Owns the per-thread chunk
// buffers, the registry of thread states, the trace file, start-up, thread
// exit, process exit and fork.
//
// Threading: every Record* function may be called by any thread at any
// time; each thread writes only its own buffer (no lock, no global counter
// per event). The exit flusher and the fork child handler are the only code
// that touches another thread's buffer, through the busy/closed hand-off
// described in recorder.cc. Nothing here allocates through the hooked
// malloc, takes a lock a hooked thread could hold, or uses stdio.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "format/trace_format.h"
#include "tracer/counter_scope.h"

// The recursion guard. Non-zero while this thread runs tracer code (or a
// real allocation function on behalf of a hook): hooks then only forward.
// initial-exec TLS: no __tls_get_addr call, and no allocation on first use.
// C linkage because guarded_call.c (the exception-safe operator new
// forwarder) maintains it too; the export map keeps it out of the dynamic
// symbol table.
extern "C" __thread int crossfree_tracer_guard __attribute__((tls_model("initial-exec")));

namespace crossfree::tracer {


// The words a child process must not inherit, on a page of their own
// that the kernel zeroes in every child (MADV_WIPEONFORK, set by
// InitForkWipe at start-up). A child made by a raw fork or clone system
// call (Chromium's zygote, a hand-written daemonize) runs no atfork
// handler: with its parent's recording flag and thread states it would
// write its events into the parent's buffers, under `record` the parent's
// shared region, and damage both processes' traces. Zeroed, recording
// reads as off and this_process as 0, so the child's first hook call
// takes the slow path, which makes the tracer the child's own
// (ShouldRecordSlow) before anything is written.
struct alignas(4096) ForkWiped {
  // 1 while the tracer records (set after start-up, cleared at exit, on
  // an output error and while a recording window is closed; 2 while open
  // with a window change requested by the toggle signal, so that the next
  // hook takes the slow path). Read racily on the fast path; the slow path
  // re-checks.
  int recording;
  // 1 once start-up ran in this process, or once a fork child made the
  // tracer its own; 0 in a child until then.
  int this_process;
};
extern ForkWiped g_fork_wiped;
inline constexpr int& g_recording = g_fork_wiped.recording;

// 1 once start-up has run, whatever its outcome. From then on a hook that
// finds recording off (0: a closed window, or the tracer stopped) takes the
// slow path only on every 64th call of its thread; the slow path is where
// a closed window polls for the end of its delay and where a toggle
// request that its signal handler could not carry out is, so both are
// noticed within 64 calls of any thread, and the other calls cost about
// what plain interposition costs.
extern int g_started;
inline constexpr uint32_t kOffPollCalls = 64;
extern __thread uint32_t t_off_calls __attribute__((tls_model("initial-exec")));

// Under `record`, a closed window's hook calls also take the slow path
// when record has moved its window nudge (shm::Control::window_nudges)
// since the tracer last took it: record sees the delay end on its own
// clock, so a program whose threads allocate rarely (fewer than 64 calls
// each in the window) still opens it on its next allocation or free.
// g_window_nudge points at the region's word, or at a zero of the
// tracer's own when no region is attached (window.h: WatchWindowNudge).
extern const std::atomic<uint32_t>* g_window_nudge;
extern std::atomic<uint32_t> g_window_nudge_taken;
inline bool WindowNudged() {
  return g_window_nudge->load(std::memory_order_relaxed) !=
         g_window_nudge_taken.load(std::memory_order_relaxed);
}

// Whether a hook on this thread should record. False while the guard is
// held, before start-up finishes (and start-up cannot run now), after the
// exit flush, and when tracing failed. Starts the tracer lazily.
bool ShouldRecordSlow();
inline bool ShouldRecord() {
  if (__atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) != 0) return false;
  const int recording = __atomic_load_n(&g_recording, __ATOMIC_RELAXED);
  if (recording == 1) return true;
  if (recording == 0 && __atomic_load_n(&g_started, __ATOMIC_RELAXED) != 0 &&
      __atomic_load_n(&g_fork_wiped.this_process, __ATOMIC_RELAXED) != 0 &&
      ++t_off_calls % kOffPollCalls != 0 && !WindowNudged()) {
    return false;
  }
  return ShouldRecordSlow();
}

// Holds the guard for a scope.
class GuardScope : CounterScope {
 public:
  GuardScope() : CounterScope(crossfree_tracer_guard) {}
};

// Where a hook was called from: the hook's own return and frame address
// (frames[0] of the stack is the caller). in_allocator, when set, marks
// allocator frames: the stack then starts after the outermost such frame
// among the first few (a MallocHook callback runs deep inside tcmalloc).
struct CallSite {
  void* return_address;
  void* frame_address;
  bool (*in_allocator)(uint64_t pc) = nullptr;
};

// Record one event into the calling thread's chunk. Call with the guard
// held. RecordAlloc stamps the time and reads the CPU (cpu.h) itself, after
// the real call returned; frees take the time and CPU the caller read
// BEFORE the real call; reallocs take the free half's time from the caller
// and read the rest after the call (docs/trace-format.md 6.8, 7).
void RecordAlloc(format::AllocFn fn, const void* address, uint64_t size, const CallSite& site);
void RecordFree(format::FreeFn fn, uint64_t ts_ns, uint32_t cpu, const void* address,
                uint64_t size, const CallSite& site);
void RecordRealloc(format::AllocFn fn, uint64_t ts_free_ns, const void* old_address,
                   const void* new_address, uint64_t size, const CallSite& site);

// A tcmalloc central free-list transfer (central_cache.cc). Unlike the
// event hooks it may be called with the guard held (tcmalloc calls it from
// inside the real malloc/free our hooks forward to): it records unless
// recording is off (not started, stopped, CROSSFREE_CENTRAL=0) or this
// thread is inside the tracer's own record path (then the tracer's
// bookkeeping, not the target, caused the transfer). Takes the guard itself.
void RecordCentral(format::CentralOp op, uint32_t size_class, uint64_t count,
                   const CallSite& site);

// Thread names. RecordThreadName names the calling thread;
// NoteThreadName names thread `pthread` (any thread, including the caller):
// the name is recorded by that thread at its next event.
void RecordThreadName(const char* name);
void NoteThreadName(unsigned long pthread, const char* name);

// Sampled traces: a thread's first counted allocation or free seeds its
// sampler and gives it a buffer, so that its counts are written (at its
// exit, at the latest) even if none of its allocations is sampled.
void StartSampledThread();

// Before a call that may wait long (interpose_blocking.cc): writes the
// calling thread's buffered events if it has any and has written none for
// the age bound (settings.flush_ns; never when that is 0). Any thread, any
// time; does nothing inside the tracer (guard held).
void FlushBeforeBlocking();
// Before a wait for a signal alone (pause, sigsuspend, sigwaitinfo): the
// same, but whenever the thread has buffered events, however recent its
// last write. Any thread, any time.
void FlushBeforeSignalWait();

// Start-up (idempotent): settings, stacks, output file, MallocHook probe.
// Called by the library constructor and lazily by the first hook.
void InitRecorder();

// Flushes every thread's buffer and stops recording. Runs from the library
// destructor (lowest priority, so after the target's own destructors).
void ShutdownRecorder();

// exec: the new image starts its own tracer, and exec runs no destructors,
// so buffered events are written first. Skipped in a vfork child (it shares
// the parent's memory and states). If exec fails, FailedExec resumes
// recording (events of other threads in between are not recorded).
bool PrepareExec();
void FailedExec();

}  // namespace crossfree::tracer
