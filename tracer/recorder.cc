// SPDX-License-Identifier: Apache-2.0
// Tracer: per-thread chunk buffers, the thread-state registry and the
// record path (see recorder.h). Start-up, exit and fork live in
// lifecycle.cc; writing other threads' buffers (the exit flush, the borrow
// hand-off) in flusher.cc.
//
// Hand-off between a buffer's owner and the exit flusher (Dekker style):
// the owner stores busy=1 and then loads closed; the flusher stores
// closed=1 and then loads busy. At least one of them sees the other: either
// the owner sees closed and leaves the buffer alone, or the flusher sees
// busy and waits for the owner's current record to finish. Whichever of the
// two then wins flush_token writes the final chunk, so a chunk is written
// exactly once and the record in progress is never cut.
//
// The store-then-load order on each side needs a full fence. Without
// membarrier both sides use seq_cst (a locked xchg per event for the
// owner). With it (g.asym_fence) the fence is asymmetric: the owner's store
// is a plain store kept in program order by a compiler-only signal fence,
// and the flusher, after storing closed=1 on every state, calls
// membarrier(PRIVATE_EXPEDITED), which runs a full memory barrier on every
// CPU currently running a thread of this process (a thread not running has
// passed through a context switch, itself a full barrier). After it, any
// owner whose busy store is not yet visible to the flusher has not yet
// executed its load of closed, so that load sees closed=1.
//
// The same hand-off bounds how old a buffered event gets (settings.flush_ns,
// so that SIGKILL loses about that much): a thread writes its own chunk at
// its first record after the chunk's first one is that old, and, at most
// twice per bound, some thread's event also looks at the others. It borrows
// each old chunk of another thread (closed 0 -> kBorrowed by CAS, so it
// never clobbers the exit flusher's kClosedForExit), one heavy fence for
// all, and writes those whose owner is not busy; an owner that finds its
// state borrowed waits for the few microseconds of that write and goes on.
#include "tracer/clock.h"
#include "tracer/recorder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

#include "protocol/shm_channel.h"
#include "tracer/channel.h"
#include "tracer/cpu.h"
#include "tracer/modules.h"
#include "tracer/owned_fds.h"
#include "tracer/sampler.h"
#include "tracer/stacks.h"
#include "tracer/sys.h"
#include "tracer/unwind_fp.h"
#include "tracer/window.h"

extern "C" {
__thread int crossfree_tracer_guard __attribute__((tls_model("initial-exec"))) = 0;
}

namespace crossfree::tracer {

// Zero-initialized, so in .bss: the loader maps it anonymous, which
// MADV_WIPEONFORK needs (alignas gives it a page of its own).
ForkWiped g_fork_wiped;
static_assert(sizeof(ForkWiped) == 4096);
int g_started = 0;
__thread uint32_t t_off_calls __attribute__((tls_model("initial-exec"))) = 0;

namespace internal {

Globals g;

namespace {

ThreadState* const kExitedState = reinterpret_cast<ThreadState*>(uintptr_t{1});
__thread ThreadState* t_state __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint32_t t_next_sequence __attribute__((tls_model("initial-exec"))) = 0;
__thread bool t_named __attribute__((tls_model("initial-exec"))) = false;
__thread bool t_exit_written __attribute__((tls_model("initial-exec"))) = false;
// This thread already counts among the threads that wrote a chunk: a state
// it takes again after its exit (a later pthread-key destructor that
// allocates or frees) must not count it twice in the totals.
__thread bool t_counted __attribute__((tls_model("initial-exec"))) = false;
// The same for the threads that wrote an event (ThreadState::wrote_events).
__thread bool t_counted_events __attribute__((tls_model("initial-exec"))) = false;

ThreadState* NewState() {
  size_t header = (sizeof(ThreadState) + 63) & ~size_t{63};
  size_t bytes = header + g.settings.buffer_bytes;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    static std::atomic<bool> reported{false};
    if (!reported.exchange(true)) {
      MessageLine().Add("cannot map a thread buffer; that thread runs untraced").Print();
    }
    return nullptr;
  }
  auto* buffer = static_cast<uint8_t*>(mem) + header;
  auto* s = new (mem) ThreadState(buffer, g.settings.buffer_bytes, Sampling());
  s->in_use.store(1, std::memory_order_relaxed);
  ThreadState* head = g.registry.load(std::memory_order_relaxed);
  do {
    s->next = head;
  } while (!g.registry.compare_exchange_weak(head, s, std::memory_order_release,
                                             std::memory_order_relaxed));
  return s;
}

// Gives the calling thread a state: a released one from the registry if
// any, else a new one. Only while recording is active.
ThreadState* Acquire() {
  if (g.phase.load(std::memory_order_acquire) != kActive) return nullptr;
  ThreadState* s = nullptr;
  for (ThreadState* it = g.registry.load(std::memory_order_acquire); it != nullptr;
       it = it->next) {
    uint32_t expected = 0;
    if (it->in_use.load(std::memory_order_relaxed) == 0 &&
        it->in_use.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      s = it;
      break;
    }
  }
  if (s == nullptr && (s = NewState()) == nullptr) return nullptr;
  s->tid = CurrentTid();
  s->pthread_id = static_cast<unsigned long>(pthread_self());
  s->chunk_open = false;
  s->wrote_chunk = t_counted;
  s->wrote_events = t_counted_events;
  s->name_pending.store(0, std::memory_order_relaxed);
  s->needs_name = !t_named;
  s->last_name[0] = '\0';
  s->open_since_ns.store(0, std::memory_order_relaxed);
  s->next_sequence = t_next_sequence;
  if (Sampling()) {
    // Counts already made by this thread (before an exit, with another
    // state) were written with that state.
    s->counts = &t_sample;
    s->counts_written[0] = __atomic_load_n(&t_sample.allocs, __ATOMIC_RELAXED);
    s->counts_written[1] = __atomic_load_n(&t_sample.frees, __ATOMIC_RELAXED);
    s->counts_written[2] = __atomic_load_n(&t_sample.dropped, __ATOMIC_RELAXED);
  }
  t_named = true;
  t_state = s;
  if (g.key_ok) pthread_setspecific(g.key, s);
  return s;
}

// Set while this thread seals other threads' chunks to free slots
// (ClaimSlot): the chunks it seals there take no slot rescue of their own.
__thread bool t_rescuing __attribute__((tls_model("initial-exec"))) = false;

// Under record: a free slot, first without waiting; if none is free, the
// other threads' open chunks are sealed (so record can free their slots)
// and the thread waits up to CROSSFREE_CHANNEL_WAIT_MS. -1: none.
int ClaimSlot(bool may_rescue) {
  int slot = channel::Claim(/*wait=*/false);
  if (slot >= 0) return slot;
  if (may_rescue && !t_rescuing) {
    t_rescuing = true;
    FlushOthersForSlots();
    t_rescuing = false;
  }
  return channel::Claim(/*wait=*/true);
}

// Points s's writer at the buffer its next chunk goes to: a slot of the
// hand-off under record (the private buffer when none could be had: that
// chunk is copied into a slot when it is sealed, or counted as dropped),
// else the private buffer.
void BindBuffer(ThreadState* s, bool may_rescue) {
  int slot = s->slot.load(std::memory_order_relaxed);
  if (channel::Attached() && slot < 0) {
    slot = ClaimSlot(may_rescue);
    s->slot.store(slot, std::memory_order_relaxed);
  }
  uint8_t* buf = s->private_buffer;
  s->commit = &s->commit_sink;
  if (slot >= 0) {
    buf = channel::SlotBuffer(slot);
    s->commit = channel::CommitWord(slot);
  }
  if (buf != s->buffer) {
    s->buffer = buf;
    new (&s->writer) format::ChunkWriter(buf, g.settings.buffer_bytes, Sampling());
  }
}

void BeginChunk(ThreadState* s, uint64_t ts, bool may_rescue = false) {
  BindBuffer(s, may_rescue);
  s->writer.Begin(s->tid, s->next_sequence++, ts);
  s->chunk_open = true;
  s->open_since_ns.store(ts != 0 ? ts : 1, std::memory_order_relaxed);
}

// The end of a whole record, for record to read if the owner never
// finishes the chunk (SIGKILL): one release store per record, into the
// state itself when there is no slot.
inline void Publish(ThreadState* s) {
  s->commit->store(shm::PackCommitted(static_cast<uint32_t>(s->writer.size()),
                                              s->writer.event_count()),
                   std::memory_order_release);
}

template <typename AppendFn>
void AppendRecord(ThreadState* s, uint64_t ts, AppendFn&& append) {
  if (!s->chunk_open) BeginChunk(s, ts, /*may_rescue=*/true);
  if (append(s->writer)) {
    Publish(s);
    // Age bound: the chunk's first record is flush_ns old, write it now.
    const uint64_t since = s->open_since_ns.load(std::memory_order_relaxed);
    if (__builtin_expect(g.settings.flush_ns != 0 && ts > since &&
                             ts - since >= g.settings.flush_ns, 0)) {
      FlushChunk(s);
    }
    return;
  }
  FlushChunk(s);
  BeginChunk(s, ts, /*may_rescue=*/true);
  append(s->writer);  // an empty chunk holds any single record
  Publish(s);
}

// Appends a thread-name record unless it is the name last recorded for
// this thread: a name is recorded once per change.
void AppendName(ThreadState* s, uint64_t ts, const char* name, size_t len) {
  if (len >= sizeof(s->last_name)) len = sizeof(s->last_name) - 1;
  size_t i = 0;
  while (i < len && s->last_name[i] == name[i]) ++i;
  if (i == len && s->last_name[len] == '\0') return;
  for (i = 0; i < len; ++i) s->last_name[i] = name[i];
  s->last_name[len] = '\0';
  AppendRecord(s, ts, [&](format::ChunkWriter& w) { return w.AppendThreadName(ts, name, len); });
}

void EmitModule(const format::ModuleView& module, void* context) {
  auto* s = static_cast<ThreadState*>(context);
  AppendRecord(s, module.timestamp_ns,
               [&](format::ChunkWriter& w) { return w.AppendModule(module); });
}

void AppendOwnName(ThreadState* s) {
  char name[64];
  long n = ReadSmallFile("/proc/thread-self/comm", name, sizeof(name));
  if (n <= 0) return;
  AppendName(s, NowNs(), name, static_cast<size_t>(n));
}

// Sets busy on the calling thread's state s and returns true if the owner
// may use its buffer: false once the exit flush closed it; while another
// thread has it borrowed (writing its old chunk), waits for that to end.
inline __attribute__((always_inline)) bool Claim(ThreadState* s) {
  for (;;) {
    if (__builtin_expect(g.asym_fence, 1)) {
      s->busy.store(1, std::memory_order_relaxed);
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      s->busy.store(1, std::memory_order_seq_cst);
    }
    const uint32_t closed = s->closed.load(std::memory_order_seq_cst);
    if (__builtin_expect(closed == kOpen, 1)) return true;
    s->busy.store(0, std::memory_order_release);
    if (closed != kBorrowed) return false;
    while (s->closed.load(std::memory_order_acquire) == kBorrowed) sched_yield();
  }
}

// Marks the calling thread's state busy and returns it, or null if this
// thread must not record (no state available, or closed by the exit flush).
// Also writes what is pending for this thread: its name, renames by other
// threads, and modules loaded since the last scan.
__attribute__((noinline)) ThreadState* EnterSlow() {
  ThreadState* s = t_state;
  if (s == nullptr || s == kExitedState) {
    s = Acquire();
    if (s == nullptr) return nullptr;
  }
  if (!Claim(s)) return nullptr;
  if (s->needs_name) {
    s->needs_name = false;
    // A state taken before sampling was on (attach mode: an unsampled
    // session, then a sampled one) gets its owner's counts now; only the
    // owner knows where they are (TLS).
    if (Sampling() && s->counts == nullptr) {
      s->counts = &t_sample;
      s->counts_written[0] = __atomic_load_n(&t_sample.allocs, __ATOMIC_RELAXED);
      s->counts_written[1] = __atomic_load_n(&t_sample.frees, __ATOMIC_RELAXED);
      s->counts_written[2] = __atomic_load_n(&t_sample.dropped, __ATOMIC_RELAXED);
    }
    AppendOwnName(s);
  }
  if (s->name_pending.load(std::memory_order_relaxed) != 0 &&
      s->name_pending.exchange(0, std::memory_order_acquire) != 0) {
    char name[sizeof(s->pending_name)];
    for (size_t i = 0; i < sizeof(name); ++i) name[i] = s->pending_name[i];
    name[sizeof(name) - 1] = '\0';
    AppendName(s, NowNs(), name, StrLen(name));
  }
  if (g.modules_pending.load(std::memory_order_relaxed) &&
      g.modules_pending.exchange(false, std::memory_order_acq_rel)) {
    ReportNewModules(EmitModule, s);
  }
  return s;
}

// The per-event path, inlined into the Record* functions: the thread has a
// state and nothing is pending (no name to write, no rename, no module
// scan). The pending flags are hints read before busy is set; one raised
// meanwhile is handled at the thread's next event. Everything else goes
// through EnterSlow, which is the same hand-off plus the pending work.
inline __attribute__((always_inline)) ThreadState* Enter() {
  ThreadState* s = t_state;
  if (__builtin_expect(s == nullptr || s == kExitedState || s->needs_name ||
                           s->name_pending.load(std::memory_order_relaxed) != 0 ||
                           g.modules_pending.load(std::memory_order_relaxed),
                       0)) {
    return EnterSlow();
  }
  return Claim(s) ? s : nullptr;
}

inline __attribute__((always_inline)) void Leave(ThreadState* s) {
  if (s->closed.load(std::memory_order_seq_cst) == kClosedForExit &&
      s->flush_token.exchange(1, std::memory_order_acq_rel) == 0) {
    FlushChunk(s);
  }
  s->busy.store(0, std::memory_order_release);
}

// Age bound for other threads' chunks: one load and compare per event.
inline void MaybeFlushIdle(uint64_t now) {
  if (__builtin_expect(g.settings.flush_ns != 0 &&
                           now >= g.next_idle_scan_ns.load(std::memory_order_relaxed),
                       0)) {
    FlushIdleStates(now);
  }
}

// True if the calling task must not use this thread's state: it runs on a
// stack that is not the thread's own and its kernel tid is not the state's.
// That is a thread created with clone(2) without CLONE_SETTLS: it shares
// this thread's TLS (t_state included) without being this thread, so its
// events would go, under the wrong tid, into a buffer another thread owns.
// Coroutines and handlers on an alternate signal stack are the same thread
// and record normally; telling them apart costs one gettid, only when the
// hook runs off the thread's stack.
inline bool ForeignTask(const CallSite& site) {
  ThreadState* s = t_state;
  if (s == nullptr || s == kExitedState) return false;
  if (__builtin_expect(OnThreadStack(reinterpret_cast<uintptr_t>(site.frame_address)), 1)) {
    return false;
  }
  if (CurrentTid() == s->tid) return false;
  g.foreign_events.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Enter for an event a hook saw at site (RecordAlloc, RecordFree,
// RecordRealloc, RecordCentral): null when the calling task is foreign
// (ForeignTask: counted, not recorded) or the thread cannot record now.
inline __attribute__((always_inline)) ThreadState* EnterAt(const CallSite& site) {
  return ForeignTask(site) ? nullptr : Enter();
}

uint32_t CaptureAndIntern(ThreadState* s, const CallSite& site, uint64_t ts) {
  if (!g.stacks || site.return_address == nullptr) return format::kNoStack;
  // Allocator frames above the caller: how deep we look for them.
  constexpr int kSkipSlack = 24;
  uint64_t frames[format::kMaxStackDepth + kSkipSlack];
  const bool skipping = site.in_allocator != nullptr;
  int want = g.settings.depth + (skipping ? kSkipSlack : 0);
  int depth = CaptureStack(site.return_address, site.frame_address, frames, want, &s->capture);
  const auto* skip = reinterpret_cast<const void*>(site.in_allocator);
  uint32_t remembered = format::kNoStack;
  const bool have_remembered = RememberedStackId(s->capture, want, skip, &remembered);
  // Check mode interns anyway and compares (below).
  if (have_remembered && !StackCheckEnabled()) return remembered;
  int first = 0;
  if (skipping) {
    for (int i = 0; i < depth && i < kSkipSlack; ++i) {
      if (site.in_allocator(frames[i])) first = i + 1;
    }
    if (first >= depth) first = 0;  // nothing outside the allocator: keep all
  }
  int n = depth - first;
  if (n > g.settings.depth) n = g.settings.depth;
  bool is_new = false;
  const uint32_t id = n > 0 ? InternStack(frames + first, n, &is_new, &s->capture)
                            : format::kNoStack;
  if (have_remembered && id != remembered) {
    MessageLine()
        .Add("CROSSFREE_STACK_CHECK: a replayed capture's remembered stack id ")
        .AddNumber(remembered)
        .Add(" differs from its interned id ")
        .AddNumber(id)
        .Print();
    abort();
  }
  RememberStackId(s->capture, want, skip, id);
  if (is_new && id != format::kNoStack) {
    AppendRecord(s, ts, [&](format::ChunkWriter& w) {
      return w.AppendStack(id, frames + first, static_cast<uint32_t>(n));
    });
  }
  return id;
}

}  // namespace

ThreadState* CallingThreadState() {
  ThreadState* s = t_state;
  return s == kExitedState ? nullptr : s;
}

namespace {

// Sampled traces: appends the counts the owner made since the state's
// last counts record, beginning a chunk for them if none is open. Always
// fits: sampled chunks keep a reserve for it (ChunkWriter).
void AppendCounts(ThreadState* s) {
  const SampleCounts* c = s->counts;
  if (c == nullptr) return;
  const uint64_t now[3] = {__atomic_load_n(&c->allocs, __ATOMIC_RELAXED),
                           __atomic_load_n(&c->frees, __ATOMIC_RELAXED),
                           __atomic_load_n(&c->dropped, __ATOMIC_RELAXED)};
  if (now[0] == s->counts_written[0] && now[1] == s->counts_written[1] &&
      now[2] == s->counts_written[2]) {
    return;
  }
  if (!s->chunk_open) BeginChunk(s, NowNs());
  format::ThreadCounts delta;
  delta.allocs = now[0] - s->counts_written[0];
  delta.frees = now[1] - s->counts_written[1];
  delta.samples_dropped = now[2] - s->counts_written[2];
  if (!s->writer.AppendCounts(delta)) return;  // cannot happen: reserved
  for (int i = 0; i < 3; ++i) s->counts_written[i] = now[i];
}

}  // namespace

void FlushChunk(ThreadState* s) {
  if (Sampling()) AppendCounts(s);
  if (!s->chunk_open) return;
  s->chunk_open = false;
  s->open_since_ns.store(0, std::memory_order_relaxed);
  if (s->writer.empty()) {
    ReleaseSlot(s);
    return;
  }
  uint32_t events = s->writer.event_count();
  uint32_t allocs = s->writer.alloc_count();
  size_t n = s->writer.Finish();
  if (g.write_failed.load(std::memory_order_relaxed)) return;
  if (channel::Attached()) {
    if (!HandOverChunk(s, n, events)) return;
  } else {
    WriteBegin(g.trace_writers);
    const int fd = TraceFd();
    const bool written = fd >= 0 && WriteAll(fd, s->buffer, n);
    const int error = fd < 0 ? EBADF : errno;  // EBADF: closed by the program, the file gone
    WriteEnd(g.trace_writers);
    if (!written) {
      ReportWriteFailure(error);
      return;
    }
  }
  s->last_write_ns.store(NowNs(), std::memory_order_relaxed);
  s->events_written += events;
  s->allocs_written += allocs;
  s->chunks_written += 1;
  if (!s->wrote_chunk) {
    s->wrote_chunk = true;
    s->threads_written += 1;
  }
  if (events != 0 && !s->wrote_events) {
    s->wrote_events = true;
    s->threads_with_events += 1;
  }
  if (g.phase.load(std::memory_order_relaxed) == kActive && ModulesMayHaveChanged()) {
    g.modules_pending.store(true, std::memory_order_relaxed);
  }
}

void OnThreadExit(void* arg) {
  auto* s = static_cast<ThreadState*>(arg);
  if (s == nullptr || s != t_state) return;
  GuardScope guard;
  int saved_errno = errno;
  if (Claim(s)) {
    if (!t_exit_written) {
      t_exit_written = true;
      uint64_t ts = NowNs();
      AppendRecord(s, ts, [&](format::ChunkWriter& w) { return w.AppendThreadExit(ts); });
    }
    FlushChunk(s);
    Leave(s);
  } else {
    // Closed by the exit flush: Leave writes the chunk if the flusher left it.
    s->busy.store(1, std::memory_order_seq_cst);
    Leave(s);
  }
  // The TLS the counts point to goes away with the thread; whoever writes
  // this state next must not read it.
  t_next_sequence = s->next_sequence;
  t_counted = t_counted || s->wrote_chunk;
  t_counted_events = t_counted_events || s->wrote_events;
  s->counts = nullptr;
  // Events after this point (later TLS destructors) take a state again and
  // set the key again, so glibc runs this destructor once more for them.
  t_state = kExitedState;
  s->in_use.store(0, std::memory_order_release);
  errno = saved_errno;
}

void FlushCurrentThreadModules() {
  if (ThreadState* s = Enter()) Leave(s);
}

void FlushCurrentThreadChunk() {
  ThreadState* s = t_state;
  if (s == nullptr || s == kExitedState || !Claim(s)) return;
  FlushChunk(s);
  Leave(s);
}

void ResetStatesInForkChild() {
  ThreadState* self = t_state;
  for (ThreadState* it = g.registry.load(std::memory_order_acquire); it != nullptr;
       it = it->next) {
    it->chunk_open = false;  // the parent writes these events to its own file
    // A slot is the parent's (the region is shared): the child writes its
    // own file from its private buffers.
    it->slot.store(-1, std::memory_order_relaxed);
    it->commit = &it->commit_sink;
    it->busy.store(0, std::memory_order_relaxed);
    it->closed.store(0, std::memory_order_relaxed);
    it->flush_token.store(0, std::memory_order_relaxed);
    it->name_pending.store(0, std::memory_order_relaxed);
    it->open_since_ns.store(0, std::memory_order_relaxed);
    it->last_name[0] = '\0';  // the child's own trace needs the names again
    it->events_written = 0;
    it->allocs_written = 0;
    it->chunks_written = 0;
    it->threads_written = 0;
    it->wrote_chunk = false;
    it->threads_with_events = 0;
    it->wrote_events = false;
    it->next_sequence = 0;
    if (it != self) {
      it->in_use.store(0, std::memory_order_relaxed);
      it->counts = nullptr;  // those threads do not exist in the child
    }
  }
  t_next_sequence = 0;
  t_counted = false;  // the child's trace has not counted this thread yet
  t_counted_events = false;
  if (self != nullptr && self != kExitedState) {
    self->tid = CurrentTid();
    self->pthread_id = static_cast<unsigned long>(pthread_self());
    self->needs_name = true;
    // The child's counts start at the fork.
    self->counts_written[0] = t_sample.allocs;
    self->counts_written[1] = t_sample.frees;
    self->counts_written[2] = t_sample.dropped;
  }
}

void WriteTotals(const ExitStats& stats) {
  if ((g.fd < 0 && !channel::Attached()) || g.write_failed.load(std::memory_order_relaxed)) {
    return;
  }
  format::TraceTotals totals;
  totals.events = stats.events;
  totals.allocs = stats.allocs;
  totals.frees = stats.events - stats.allocs;
  totals.chunks = stats.chunks;
  totals.threads = stats.threads;
  uint8_t buf[format::kTotalsChunkBytes];
  ThreadState* self = t_state;
  uint32_t sequence = (self != nullptr && self != kExitedState) ? self->next_sequence++
                                                                 : t_next_sequence++;
  size_t n = format::EncodeTotalsChunk(totals, CurrentTid(), sequence, NowNs(), buf,
                                       sizeof(buf));
  if (channel::Attached()) {
    if (n != 0 && !channel::HandOff(buf, n)) channel::CountDropped(0);
    return;
  }
  if (n == 0) return;
  WriteBegin(g.trace_writers);
  const int fd = TraceFd();
  const bool written = fd < 0 || WriteAll(fd, buf, n);
  const int error = errno;
  WriteEnd(g.trace_writers);
  if (!written) ReportWriteFailure(error);
}

bool WriteOwnWindowRecord(format::WindowState state, format::WindowCause cause, uint64_t ts) {
  ThreadState* s = Enter();
  if (s == nullptr) return false;
  AppendRecord(s, ts, [&](format::ChunkWriter& w) { return w.AppendWindow(state, cause, ts); });
  FlushChunk(s);
  Leave(s);
  return true;
}

bool ReadyForWindowChangeInHandler() {
  if (__atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) != 0) return false;
  ThreadState* s = t_state;
  return s != nullptr && s != kExitedState && !s->needs_name &&
         s->name_pending.load(std::memory_order_relaxed) == 0 &&
         !g.modules_pending.load(std::memory_order_relaxed);
}

void AppendWindowRecordInForkChild(format::WindowCause cause, uint64_t ts) {
  ThreadState* s = t_state;
  if (s == nullptr || s == kExitedState || !Claim(s)) return;
  AppendRecord(s, ts, [&](format::ChunkWriter& w) {
    return w.AppendWindow(format::WindowState::kOpen, cause, ts);
  });
  Leave(s);
}

}  // namespace internal

using internal::AppendRecord;
using internal::Enter;
using internal::Leave;
using internal::ThreadState;

namespace {

// FlushBeforeBlocking, and with any_age FlushBeforeSignalWait.
void FlushBeforeWait(bool any_age) {
  const uint64_t bound = internal::g.settings.flush_ns;
  if (bound == 0 || __atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) != 0) return;
  ThreadState* s = internal::t_state;
  if (s == nullptr || s == internal::kExitedState) return;
  // Unsampled: only an open chunk has something to write. Sampled: the
  // counts may have moved without a sampled event.
  if (!s->chunk_open && !Sampling()) return;
  const uint64_t now = NowNs();
  const uint64_t last = s->last_write_ns.load(std::memory_order_relaxed);
  if (!any_age && last != 0 && now - last < bound) return;
  GuardScope guard;
  ErrnoSaver saved;
  if (!internal::Claim(s)) return;
  internal::FlushChunk(s);
  // Nothing to write (sampled, counts unchanged) still counts as a write
  // for the rate limit.
  s->last_write_ns.store(now, std::memory_order_relaxed);
  Leave(s);
}

}  // namespace

void FlushBeforeBlocking() { FlushBeforeWait(/*any_age=*/false); }

void FlushBeforeSignalWait() { FlushBeforeWait(/*any_age=*/true); }

void StartSampledThread() {
  SeedSampler();
  if (ThreadState* s = Enter()) Leave(s);
}

namespace {

// The common tail of RecordAlloc, RecordFree and RecordRealloc, once the
// thread is entered and the event's timestamp (and CPU) are read: the
// stack, the record (append(writer, stack id)), and the checks that follow
// every event. Inlined into each: no allocation, lock or stdio.
template <typename AppendFn>
inline void FinishEvent(ThreadState* s, uint64_t ts, const CallSite& site, AppendFn&& append) {
  // The open window's deadline (--duration), before the event is written:
  // an event at or after it lies outside the window and is not recorded.
  // A process that makes no call when the deadline passes notices it at
  // its next call, however much later; the window still closes at its
  // deadline (ChangeWindow), and that late call is not in the trace.
  if (__builtin_expect(ts >= g_window_deadline_ns, 0)) {
    Leave(s);
    WindowDeadlinePassed(ts);
    return;
  }
  const uint32_t stack =
      internal::g.stacks ? internal::CaptureAndIntern(s, site, ts) : format::kNoStack;
  AppendRecord(s, ts, [&](format::ChunkWriter& w) { return append(w, stack); });
  Leave(s);
  internal::MaybeFlushIdle(ts);
}

}  // namespace

void RecordAlloc(format::AllocFn fn, const void* address, uint64_t size, const CallSite& site) {
  ThreadState* s = internal::EnterAt(site);
  if (s == nullptr) return;
  const uint64_t ts = NowNs();
  const uint32_t cpu = CurrentCpu();
  const auto addr = reinterpret_cast<uint64_t>(address);
  FinishEvent(s, ts, site, [&](format::ChunkWriter& w, uint32_t stack) {
    return w.AppendAlloc(fn, ts, addr, size, stack, cpu);
  });
}

void RecordFree(format::FreeFn fn, uint64_t ts_ns, uint32_t cpu, const void* address,
                uint64_t size, const CallSite& site) {
  ThreadState* s = internal::EnterAt(site);
  if (s == nullptr) return;
  const auto addr = reinterpret_cast<uint64_t>(address);
  FinishEvent(s, ts_ns, site, [&](format::ChunkWriter& w, uint32_t stack) {
    return w.AppendFree(fn, ts_ns, addr, size, stack, cpu);
  });
}

void RecordRealloc(format::AllocFn fn, uint64_t ts_free_ns, const void* old_address,
                   const void* new_address, uint64_t size, const CallSite& site) {
  ThreadState* s = internal::EnterAt(site);
  if (s == nullptr) return;
  const uint64_t ts = NowNs();
  const uint32_t cpu = CurrentCpu();
  const auto old_addr = reinterpret_cast<uint64_t>(old_address);
  const auto new_addr = reinterpret_cast<uint64_t>(new_address);
  FinishEvent(s, ts, site, [&](format::ChunkWriter& w, uint32_t stack) {
    return w.AppendRealloc(fn, ts_free_ns, ts, old_addr, new_addr, size, stack, cpu);
  });
}

void RecordThreadName(const char* name) {
  ThreadState* s = Enter();
  if (s == nullptr) return;
  internal::AppendName(s, NowNs(), name, StrLen(name));
  Leave(s);
}

void NoteThreadName(unsigned long pthread, const char* name) {
  if (pthread == static_cast<unsigned long>(pthread_self())) {
    RecordThreadName(name);
    return;
  }
  for (ThreadState* it = internal::g.registry.load(std::memory_order_acquire); it != nullptr;
       it = it->next) {
    if (it->in_use.load(std::memory_order_acquire) == 0 || it->pthread_id != pthread) continue;
    size_t i = 0;
    for (; i + 1 < sizeof(it->pending_name) && name[i] != '\0'; ++i) it->pending_name[i] = name[i];
    it->pending_name[i] = '\0';
    it->name_pending.store(1, std::memory_order_release);
    return;
  }
  // The thread has no state yet: it reads its name from /proc when it does.
}

namespace {

// Central calls the tracer's own bookkeeping caused on this thread (while
// its record was busy): kept here and written, marked by_tracer and
// without a stack, by the thread's next RecordCentral.
struct PendingCentral {
  format::CentralOp op;
  uint32_t size_class;
  uint64_t count;
};
constexpr int kMaxPendingCentral = 32;
__thread PendingCentral t_pending_central[kMaxPendingCentral]
    __attribute__((tls_model("initial-exec")));
__thread int t_pending_count __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

void RecordCentral(format::CentralOp op, uint32_t size_class, uint64_t count,
                   const CallSite& site) {
  if (__atomic_load_n(&g_recording, __ATOMIC_RELAXED) != 1 || !internal::g.settings.central) {
    return;
  }
  // Busy: a record of this thread is in progress, so its (allocation-free)
  // bookkeeping reached tcmalloc; nesting a record there would corrupt it.
  ThreadState* cur = internal::t_state;
  if (cur != nullptr && cur != internal::kExitedState &&
      cur->busy.load(std::memory_order_relaxed) != 0) {
    if (t_pending_count < kMaxPendingCentral) {
      t_pending_central[t_pending_count++] = {op, size_class, count};
    }
    return;
  }
  GuardScope guard;
  ThreadState* s = internal::EnterAt(site);
  if (s == nullptr) return;
  uint64_t ts = NowNs();
  for (int i = 0; i < t_pending_count; ++i) {
    const PendingCentral& p = t_pending_central[i];
    AppendRecord(s, ts, [&](format::ChunkWriter& w) {
      return w.AppendCentral(p.op, ts, p.size_class, p.count, format::kNoStack, true);
    });
  }
  t_pending_count = 0;
  uint32_t stack =
      internal::g.stacks ? internal::CaptureAndIntern(s, site, ts) : format::kNoStack;
  AppendRecord(s, ts, [&](format::ChunkWriter& w) {
    return w.AppendCentral(op, ts, size_class, count, stack);
  });
  Leave(s);
}

}  // namespace crossfree::tracer
