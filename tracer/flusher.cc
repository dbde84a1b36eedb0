// SPDX-License-Identifier: Apache-2.0
// Tracer: writing other threads' buffers (see recorder_internal.h): the exit
// flush (CloseAndFlushAll), the age-bound and window flushes through the
// borrow hand-off (FlushIdleStates, FlushAllStates), and the flusher's half
// of the asymmetric fence. The hand-off between a buffer's owner and these
// flushers is described at the top of recorder.cc, which holds the owner's
// half (Claim, Leave).
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "tracer/clock.h"
#include "tracer/recorder_internal.h"

namespace crossfree::tracer::internal {

void InitAsymmetricFence() {
  g.asym_fence = false;
  long supported = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) return;
  g.asym_fence = true;
}

namespace {

// The flusher's half of the asymmetric fence (see the top of this file).
void HeavyFence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!g.asym_fence) return;  // owners store busy with seq_cst themselves
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
  // Registered at start-up, so neither should fail. If one does, give
  // every other thread time to be descheduled (a context switch is a full
  // barrier) before trusting what we read.
  uint64_t until = NowNs() + 20'000'000;
  while (NowNs() < until) sched_yield();
}

}  // namespace

ExitStats CloseAndFlushAll(uint64_t wait_budget_ns) {
  ExitStats stats;
  uint64_t deadline = NowNs() + wait_budget_ns;
  // One snapshot of the registry for both passes: close every state, one
  // heavy fence, then wait for and flush each.
  ThreadState* const head = g.registry.load(std::memory_order_acquire);
  for (ThreadState* it = head; it != nullptr; it = it->next) {
    // A state borrowed by the idle flusher is handed back within a write;
    // one still borrowed at the deadline is left alone (skipped below).
    for (;;) {
      uint32_t expected = kOpen;
      if (it->closed.compare_exchange_strong(expected, kClosedForExit,
                                             std::memory_order_seq_cst) ||
          expected == kClosedForExit || NowNs() >= deadline) {
        break;
      }
      sched_yield();
    }
  }
  HeavyFence();
  for (ThreadState* it = head; it != nullptr; it = it->next) {
    while (it->busy.load(std::memory_order_seq_cst) != 0 && NowNs() < deadline) sched_yield();
    if (it->busy.load(std::memory_order_seq_cst) != 0 ||
        it->closed.load(std::memory_order_seq_cst) != kClosedForExit) {
      ++stats.threads_skipped;  // its owner flushes when the record ends
    } else if (it->flush_token.exchange(1, std::memory_order_acq_rel) == 0) {
      FlushChunk(it);
    }
    ++stats.states;
    stats.events += it->events_written;
    stats.allocs += it->allocs_written;
    stats.chunks += it->chunks_written;
    stats.threads += it->threads_written;
    stats.threads_with_events += it->threads_with_events;
  }
  return stats;
}

namespace {

// Borrows every other thread's state that pick(state) selects, writes the
// chunk of each whose owner is not inside a record, and hands them back;
// returns how many it borrowed but could not write. Until deadline (0:
// not at all) it waits for states another flusher holds and for owners
// inside a record (they finish it within microseconds). Signals stay
// blocked throughout: a handler that longjmp'd out while this thread
// holds borrows (or one that waited for an owner) would leave the owners
// waiting for ever.
template <typename Pick>
uint32_t BorrowAndFlush(const Pick& pick, uint64_t deadline) {
  ThreadState* const self = CallingThreadState();
  ThreadState* const head = g.registry.load(std::memory_order_acquire);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  // Several threads may flush at once (the age bound, a thread short of
  // slots), each borrowing a different subset of the states. A state is
  // written and handed back only by the call that borrowed it: one that took
  // every kBorrowed state as its own wrote another flusher's chunk at the
  // same time as that flusher (one slot sealed twice, the next chunk written
  // into a slot record had freed) and reopened the state under it.
  const uint64_t mine = g.next_borrow.fetch_add(1, std::memory_order_relaxed) + 1;
  int borrowed = 0;
  for (ThreadState* it = head; it != nullptr; it = it->next) {
    if (it == self || !pick(it)) continue;
    for (;;) {
      uint32_t expected = kOpen;
      if (it->closed.compare_exchange_strong(expected, kBorrowed, std::memory_order_seq_cst)) {
        it->borrow.store(mine, std::memory_order_relaxed);
        ++borrowed;
        break;
      }
      // Closed for exit: the exit flush owns it. Borrowed by another
      // flusher: handed back within a write.
      if (expected == kClosedForExit || NowNs() >= deadline) break;
      sched_yield();
    }
  }
  uint32_t skipped = 0;
  if (borrowed != 0) {
    HeavyFence();
    for (ThreadState* it = head; it != nullptr; it = it->next) {
      if (it == self || it->closed.load(std::memory_order_relaxed) != kBorrowed ||
          it->borrow.load(std::memory_order_relaxed) != mine) {
        continue;
      }
      while (it->busy.load(std::memory_order_seq_cst) != 0 && NowNs() < deadline) sched_yield();
      // busy still means the owner is inside a record: it writes its own
      // chunk at that record's end (age bound).
      if (it->busy.load(std::memory_order_seq_cst) == 0) {
        FlushChunk(it);
      } else {
        ++skipped;
      }
      it->closed.store(kOpen, std::memory_order_release);
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return skipped;
}

}  // namespace

void FlushIdleStates(uint64_t now) {
  uint64_t due = g.next_idle_scan_ns.load(std::memory_order_relaxed);
  if (now < due || !g.next_idle_scan_ns.compare_exchange_strong(
                       due, now + g.settings.flush_ns / 2, std::memory_order_relaxed)) {
    return;  // not due, or another thread scans now
  }
  if (g.phase.load(std::memory_order_acquire) != kActive) return;
  // Only states whose open chunk is older than the bound; no waiting.
  BorrowAndFlush(
      [now](const ThreadState* it) {
        const uint64_t since = it->open_since_ns.load(std::memory_order_relaxed);
        return since != 0 && now > since && now - since >= g.settings.flush_ns;
      },
      0);
}

uint32_t FlushAllStates(uint64_t wait_budget_ns) {
  // Every state, whatever its age (recording is already off, so owners
  // inside a record start no other).
  return BorrowAndFlush([](const ThreadState*) { return true; }, NowNs() + wait_budget_ns);
}

void FlushOthersForSlots() {
  if (g.phase.load(std::memory_order_acquire) != kActive) return;
  // Only states holding a slot; no waiting for busy owners (they hand
  // their chunk over at its end, or release the slot at their exit).
  BorrowAndFlush(
      [](const ThreadState* it) { return it->slot.load(std::memory_order_relaxed) >= 0; }, 0);
}

void ResetStatesForNewTrace() {
  for (ThreadState* it = g.registry.load(std::memory_order_acquire); it != nullptr;
       it = it->next) {
    it->next_sequence = 0;
    it->chunk_open = false;
    it->open_since_ns.store(0, std::memory_order_relaxed);
    it->last_write_ns.store(0, std::memory_order_relaxed);
    it->events_written = 0;
    it->allocs_written = 0;
    it->chunks_written = 0;
    it->threads_written = 0;
    it->wrote_chunk = false;
    it->threads_with_events = 0;
    it->wrote_events = false;
    it->last_name[0] = '\0';
    it->needs_name = it->in_use.load(std::memory_order_acquire) != 0;
    if (const SampleCounts* c = it->counts) {
      it->counts_written[0] = __atomic_load_n(&c->allocs, __ATOMIC_RELAXED);
      it->counts_written[1] = __atomic_load_n(&c->frees, __ATOMIC_RELAXED);
      it->counts_written[2] = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
    }
    // Ids of the previous trace's stacks (ResetInternedStacks).
    __builtin_memset(static_cast<void*>(&it->capture), 0, sizeof(it->capture));
  }
}

void ReopenStates() {
  for (ThreadState* it = g.registry.load(std::memory_order_acquire); it != nullptr;
       it = it->next) {
    it->flush_token.store(0, std::memory_order_relaxed);
    it->closed.store(0, std::memory_order_seq_cst);
  }
}

}  // namespace crossfree::tracer::internal
