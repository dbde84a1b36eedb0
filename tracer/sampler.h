// SPDX-License-Identifier: Apache-2.0
// Tracer: allocation sampling (CROSSFREE_SAMPLE=N, `crossfree record
// --sample N`). Each allocation is traced with probability 1/N, and the
// free of a traced ("sampled") object is traced whenever and wherever it
// happens. Every thread also counts all of its allocations and frees, so
// that totals and rates stay exact (format::ThreadCounts, kTagCounts).
//
// The choice is a per-thread geometric skip counter: the number of
// allocations up to and including the next sampled one is drawn from
// Geometric(1/N), so every allocation is an independent Bernoulli(1/N)
// trial and an unsampled one costs a decrement. The analyzer's estimator
// (N times what it sees) is unbiased because of that independence.
//
// A free finds out whether its object was sampled in the live set: a
// fixed, lock-free hash set of the addresses of sampled objects not yet
// freed. Buckets are one cache line of 7 address slots; beside them a byte
// per bucket counts the live entries whose home is that bucket, so a free
// whose home count is 0 (almost every free at N = 1000) costs one load from
// a 16 KiB array and nothing else. An entry lives in its home bucket or one
// of the next kProbe - 1; when all are full the sample is dropped (counted,
// and reported by the analyzer). Entries are inserted after the real
// allocation returned and removed before the real free runs, so an
// address is never in the set twice.
//
// Threading: any thread, any time, no lock. The live set is shared; the
// skip counter and the counts are the calling thread's own (TLS), read by
// other threads only through ThreadState::counts when they write that
// thread's chunk (recorder.cc), as relaxed atomics.
#pragma once

#include <atomic>
#include <cstdint>

#include "tracer/recorder.h"

namespace crossfree::tracer {

// 0 when not sampling (everything is traced), else N >= 2. Set once at
// start-up, before recording begins.
extern uint32_t g_sample_period;

// This thread's counts since it started (monotonic; the recorder writes
// the differences). Written only by the owning thread, with relaxed
// atomic stores, because other threads read them while it runs.
struct SampleCounts {
  uint64_t allocs;
  uint64_t frees;
  uint64_t dropped;  // samples chosen but not followed (live set full)
  int64_t skip;      // allocations left until the next sampled one
  uint64_t rng;      // splitmix64 state; 0 = not seeded yet
};
extern __thread SampleCounts t_sample __attribute__((tls_model("initial-exec")));

inline bool Sampling() { return g_sample_period != 0; }

namespace sampler_internal {
inline void Bump(uint64_t* v) {
  __atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}
}  // namespace sampler_internal

inline void CountFree() { sampler_internal::Bump(&t_sample.frees); }

// Draws the next skip; inserts address into the live set. False when the
// set had no room (the sample is dropped and counted).
bool TakeSample(const void* address);

// A thread's first counted call: seeds its generator and draws its first
// skip. The recorder's StartSampledThread also gives the thread a buffer,
// so that its counts are written even if none of its allocations is
// sampled.
void SeedSampler();
inline bool SamplerSeeded() { return t_sample.rng != 0; }

// Counts one allocation of the calling thread and decides whether it is
// sampled; if so, address is in the live set when this returns true.
inline bool SampleAllocation(const void* address) {
  sampler_internal::Bump(&t_sample.allocs);
  if (__builtin_expect(--t_sample.skip > 0, 1)) return false;
  return TakeSample(address);
}

// Live set. LiveRemove returns whether address was sampled (and removes
// it); LiveInsert re-adds an address (a failed realloc keeps its block),
// false when full.
bool LiveRemoveSlow(uint64_t address);
bool LiveInsert(uint64_t address);
inline constexpr uint32_t kLiveBucketBits = 14;
inline constexpr uint32_t kLiveBuckets = 1u << kLiveBucketBits;
inline constexpr uint32_t kLiveSlots = 7;
inline constexpr uint32_t kLiveProbe = 4;
// Live entries by home bucket (saturates at 255: then samples homed there
// are dropped). In .bss: pages nobody touched cost nothing.
extern std::atomic<uint8_t> g_live_home_counts[kLiveBuckets];
inline uint32_t LiveHome(uint64_t address) {
  // Fibonacci hashing of the address without its alignment bits.
  return static_cast<uint32_t>(((address >> 4) * 0x9E3779B97F4A7C15ull) >>
                               (64 - kLiveBucketBits));
}
// No live entry is homed where address would be: it is certainly not in
// the set (the one load an unsampled free makes).
inline bool LiveHomeEmpty(const void* address) {
  return g_live_home_counts[LiveHome(reinterpret_cast<uint64_t>(address))].load(
             std::memory_order_relaxed) == 0;
}
inline bool LiveRemove(const void* address) {
  if (__builtin_expect(LiveHomeEmpty(address), 1)) return false;
  return LiveRemoveSlow(reinterpret_cast<uint64_t>(address));
}

// Start-up, before recording begins: period >= 2 turns sampling on. The
// live set is static (1 MiB of slots + 16 KiB of counts, in .bss).
void InitSampler(uint32_t period);

// Attach mode, between two sessions: objects sampled in an earlier session
// may have been freed while the GOT did not reach the hooks; the next
// session starts with an empty set. Reads before writing: untouched pages
// stay untouched.
void ClearLiveSet();

// A forked child keeps the parent's live set (its objects are the
// child's too) and its counts, and reseeds its generator so that it does
// not repeat the parent's choices.
void ReseedSamplerInForkChild();

// Natural logarithm of x > 0, without libm (the tracer may not need it).
// Exposed for its test.
double SamplerLog(double x);

// The hooks' questions (interpose.cc, malloc_hook.cc). Call with the guard
// held, except ForgetSampled.

// The thread's first counted call starts its sampler (StartSampledThread).
inline void StartSampledThreadOnce() {
  if (__builtin_expect(!SamplerSeeded(), 0)) StartSampledThread();
}

// Whether the allocation p (not null) is to be recorded; counts it.
inline bool KeepAllocation(const void* p) {
  if (!Sampling()) return true;
  StartSampledThreadOnce();
  return SampleAllocation(p);
}

// Whether the free of p (not null) is to be recorded: p was sampled (and
// is now out of the live set). Counts it.
inline bool KeepFree(const void* p) {
  if (!Sampling()) return true;
  StartSampledThreadOnce();
  CountFree();
  return LiveRemove(p);
}

// A free while recording is off (window closed): with sampling, p leaves
// the live set all the same. Not while the guard is held: then an outer
// hook of this thread deals with p. True if p was sampled.
inline bool ForgetSampled(const void* p) {
  return Sampling() && p != nullptr &&
         __atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) == 0 && LiveRemove(p);
}

// ---- The unsampled fast path ----------------------------------------------
//
// While sampling, nearly every call is an allocation the skip counter
// already knows is not sampled, or a free whose address has no live entry
// homed in its bucket. Those need nothing but their count, so the hooks
// ask these first and keep everything else out of line: the common call
// then costs a few loads and the count, close to plain interposition.
// Both need the same conditions as KeepAllocation/KeepFree on the hooks'
// path: no hook of this thread active (the guard), recording on (1: a
// pending toggle request, 2, takes the slow path) and this thread's
// sampler running (a skip was drawn).

inline bool UnsampledPathOpen() {
  return __atomic_load_n(&crossfree_tracer_guard, __ATOMIC_RELAXED) == 0 &&
         __atomic_load_n(&g_recording, __ATOMIC_RELAXED) == 1;
}

// The next successful allocation of this thread is not sampled (skip > 1
// is only ever set by a running sampler). Then the hook makes the real
// call and, if it succeeded, CountUnsampledAllocation.
inline bool NextAllocationUnsampled() {
  return __builtin_expect(t_sample.skip > 1, 1) && UnsampledPathOpen();
}
inline void CountUnsampledAllocation() {
  sampler_internal::Bump(&t_sample.allocs);
  --t_sample.skip;  // a signal handler's sample in between leaves it <= 1: the slow path then samples
}

// The free of p (not null) is counted and certainly not of a sampled
// object; the hook then calls CountFree and the real free.
inline bool FreeUnsampled(const void* p) {
  return p != nullptr && __builtin_expect(SamplerSeeded(), 1) && UnsampledPathOpen() &&
         LiveHomeEmpty(p);
}

}  // namespace crossfree::tracer
