// SPDX-License-Identifier: Apache-2.0
// Tracer: state shared by recorder.cc (record path) and lifecycle.cc
// (start-up, exit, fork). Private to those two files.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "format/trace_writer.h"
#include "tracer/recorder.h"
#include "tracer/sampler.h"
#include "tracer/settings.h"
#include "tracer/stacks.h"

namespace crossfree::tracer::internal {

// ThreadState::closed. kBorrowed: another thread is writing this state's
// open chunk for it (the age bound, FlushIdleStates); the owner waits.
enum Closed : uint32_t {
  kOpen = 0,
  kClosedForExit = 1,
  kBorrowed = 2,
};

enum Phase : int {
  kUninit = 0,
  kStarting = 1,
  kActive = 2,
  kStopped = 3,  // after the exit flush, or tracing failed: hooks forward
};

// One per thread that recorded something; never freed, reused after its
// thread exits. The header and the chunk buffer share one mmap.
struct ThreadState {
  ThreadState(uint8_t* buf, size_t capacity, bool sampled)
      : writer(buf, capacity, /*reserve_counts=*/sampled), buffer(buf), private_buffer(buf) {}

  std::atomic<uint32_t> in_use{0};       // owned by a live thread
  std::atomic<uint32_t> busy{0};         // owner is inside Enter..Leave
  std::atomic<uint32_t> closed{0};       // kOpen, kClosedForExit or kBorrowed
  // While kBorrowed: the borrow (Globals::next_borrow) that holds it, set by
  // the flusher whose CAS won, so that a flusher writes and hands back only
  // the states it borrowed itself, never those another flusher holds.
  std::atomic<uint64_t> borrow{0};
  std::atomic<uint32_t> flush_token{0};  // who writes the final chunk
  std::atomic<uint32_t> name_pending{0};
  char pending_name[16] = {};
  char last_name[16] = {};  // the name last recorded for this thread ("" = none)
  // When the open chunk began (its first record's time), 0 when none is
  // open. Written by whoever holds the buffer; read racily by the idle
  // flusher (FlushIdleStates) only to pick candidates.
  std::atomic<uint64_t> open_since_ns{0};
  // When this state's last chunk was written (trace clock), by whoever
  // wrote it; FlushBeforeBlocking rate-limits its writes with it.
  std::atomic<uint64_t> last_write_ns{0};
  ThreadState* next = nullptr;  // registry link, fixed once published
  unsigned long pthread_id = 0;
  uint32_t tid = 0;
  // The next chunk's sequence number. Here, not in TLS, because whoever
  // writes the state's chunk (owner, exit flush, window change) may have
  // to begin one; Acquire and OnThreadExit carry it over from/to the
  // thread's own TLS copy.
  uint32_t next_sequence = 0;
  bool chunk_open = false;
  bool needs_name = false;
  uint64_t events_written = 0;
  uint64_t allocs_written = 0;  // of events_written
  uint64_t chunks_written = 0;
  // Threads that used this state and wrote a chunk, and whether the
  // current one has (reset when a thread takes the state).
  uint32_t threads_written = 0;
  bool wrote_chunk = false;
  // Of those, the threads that wrote an event, not only window, module or
  // name records (the control thread under `record -p`): the threads the
  // analyzer counts (ProcessTrace::ThreadsWithEvents); `record -p` reports
  // them. Kept the same way as the two above.
  uint32_t threads_with_events = 0;
  bool wrote_events = false;
  // Sampled traces: the owner's TLS counts (sampler.h; null when no live
  // thread owns the state) and what the last counts record covered.
  const SampleCounts* counts = nullptr;
  uint64_t counts_written[3] = {};  // allocs, frees, dropped
  format::ChunkWriter writer;
  uint8_t* buffer;  // the open chunk's: private_buffer, or a slot of the hand-off
  // Under `crossfree record` (channel.h): the slot the open chunk lives in
  // (-1: none, the chunk is in private_buffer), and the word every record's
  // end is published to (the slot's committed word, else commit_sink), so
  // that record can take the whole records of a chunk its owner never
  // finished. Changed only by whoever holds the state, at BeginChunk and
  // FlushChunk.
  std::atomic<int> slot{-1};  // read racily (relaxed) by FlushOthersForSlots
  std::atomic<uint64_t>* commit = &commit_sink;
  std::atomic<uint64_t> commit_sink{0};
  uint8_t* private_buffer;  // this state's own mmap; without record, always `buffer`
  // Stack capture memo and interned-stack table (stacks.h); starts as the
  // mmap's zero bytes, stays valid for whichever thread takes the state.
  CaptureCache capture;
};

struct Globals {
  std::atomic<int> phase{kUninit};
  // Numbers each BorrowAndFlush call, for ThreadState::borrow.
  std::atomic<uint64_t> next_borrow{0};
  Settings settings;
  int fd = -1;
  // Identity of the trace file: a program that closes every descriptor may
  // reuse fd for a file of its own; each write checks it is still ours.
  uint64_t file_dev = 0;
  uint64_t file_ino = 0;
  // Set while one thread reopens the trace file after the program closed
  // its descriptor (TraceFd); others wait for the few system calls.
  std::atomic<bool> reopening{false};
  std::atomic<uint32_t> reopens{0};
  // The tracer's writes in flight on fd: a program's dup2 onto fd moves
  // it only after they finished (owned_fds.h).
  std::atomic<uint32_t> trace_writers{0};
  bool stacks = false;
  bool malloc_hook = false;
  uint32_t pid = 0;
  uint64_t start_ns = 0;  // when this image's tracer started (trace clock)
  pthread_key_t key = 0;
  bool key_ok = false;
  char output_path[4096] = {};
  std::atomic<bool> modules_pending{false};
  std::atomic<bool> write_failed{false};
  // Events not recorded because the calling task shared another thread's
  // TLS (clone(2) without CLONE_SETTLS); see ForeignTask in recorder.cc.
  std::atomic<uint64_t> foreign_events{0};
  std::atomic<ThreadState*> registry{nullptr};
  // Age bound (settings.flush_ns, 0 = none): the next time any thread's
  // event looks for other threads' chunks older than the bound.
  std::atomic<uint64_t> next_idle_scan_ns{0};
  // Set at start-up when membarrier(PRIVATE_EXPEDITED) is registered: the
  // owners' busy store is then a plain store (no locked instruction per
  // event) and the exit flusher pays for the ordering (recorder.cc).
  bool asym_fence = false;
};
extern Globals g;

struct ExitStats {
  uint64_t events = 0;
  uint64_t allocs = 0;
  uint32_t threads = 0;  // threads that wrote a chunk
  uint32_t threads_with_events = 0;  // of those, the ones that wrote an event
  uint64_t chunks = 0;
  uint32_t states = 0;
  uint32_t threads_skipped = 0;
};

// Writes s's open chunk (if any) with one append. Caller owns s (busy, or
// holds its flush token).
void FlushChunk(ThreadState* s);
// Writing stopped for good: says so once on stderr and stops recording.
void ReportWriteFailure(int error);
// Under record (chunk_output.cc): hands s's finished chunk (n bytes) over:
// seals its slot, or copies it from the private buffer into a slot. False
// when it could not (counted as dropped, or record is gone).
bool HandOverChunk(ThreadState* s, size_t n, uint32_t events);
// Under record: an empty chunk's slot goes back unused.
void ReleaseSlot(ThreadState* s);
// The calling thread's state, or null when it has none (never had one, or
// released it at its exit). For the flushers (flusher.cc), which skip it.
ThreadState* CallingThreadState();
// The trace file's descriptor, proven to still be the trace file (fstat:
// same device and inode). The program's close, close_range and dup2 leave
// it alone (owned_fds.h), but a raw close syscall closes it, and the
// program may reuse the
// number for a file of its own: then the file is opened again by its path
// (O_APPEND, O_NOFOLLOW) and used only if it is the same inode, so nothing
// is ever written into the program's file. -1 when the trace cannot be
// written any more. Call it between WriteBegin(g.trace_writers) and
// WriteEnd, around the write that uses the descriptor.
int TraceFd();
// pthread key destructor: thread-exit record and final flush.
void OnThreadExit(void* arg);
// Gives the calling thread a state and writes what is pending (its name,
// the module map).
void FlushCurrentThreadModules();
// Writes the calling thread's open chunk now (before fork: a process that
// forks its workers and then idles, like a server's master, keeps nothing
// buffered).
void FlushCurrentThreadChunk();
// Appends the totals chunk (format::EncodeTotalsChunk) for stats to the
// trace, under the calling thread's tid. Exit, after CloseAndFlushAll, and
// only when no state was skipped (so the counts are the file's).
void WriteTotals(const ExitStats& stats);
// Fork child: drops every buffer (the parent flushes them to its file).
void ResetStatesInForkChild();
// Hand-off (channel.h): seals the open chunks of other threads that are
// not inside a record, through the borrow hand-off, so that `record` can
// free their slots. Called by a thread that found no free slot.
void FlushOthersForSlots();
// Exit: closes every state and writes every open chunk, waiting up to
// wait_budget_ns in total for threads in the middle of a record.
ExitStats CloseAndFlushAll(uint64_t wait_budget_ns);
// Writes the open chunk of every other thread whose oldest buffered record
// is older than the age bound, through the borrow hand-off (flusher.cc).
// Called after an event when g.next_idle_scan_ns has passed.
void FlushIdleStates(uint64_t now);
// Window changes (window.cc). Appends a window record to the calling
// thread's chunk and writes that chunk; false if the thread cannot record
// (no state, closed by the exit flush). Guard held.
bool WriteOwnWindowRecord(format::WindowState state, format::WindowCause cause, uint64_t ts);
// Writes every other thread's open chunk (and, in sampled traces, its
// counts) through the borrow hand-off, waiting up to wait_budget_ns in
// all for owners in the middle of a record. Returns the states skipped.
uint32_t FlushAllStates(uint64_t wait_budget_ns);
// True when a signal handler on this thread may change the window itself:
// the thread is outside the tracer (guard 0), has a state and nothing is
// pending for it that could take a lock (module scan).
bool ReadyForWindowChangeInHandler();
// Fork child, single-threaded: appends an open record for the inherited
// window to the calling thread's chunk, before any event.
void AppendWindowRecordInForkChild(format::WindowCause cause, uint64_t ts);
// Attach mode, between two sessions (every state closed, recording off):
// each state starts a new trace (sequence 0, no counts, its thread's name
// due again, no remembered stacks). ReopenStates then lets them record.
void ResetStatesForNewTrace();

// After a failed exec: lets every state record again.
void ReopenStates();
// Registers the process for membarrier(PRIVATE_EXPEDITED) and sets
// g.asym_fence on success. Start-up and fork child (single-threaded).
void InitAsymmetricFence();

}  // namespace crossfree::tracer::internal
