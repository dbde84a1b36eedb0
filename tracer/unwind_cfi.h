// SPDX-License-Identifier: Apache-2.0
// Tracer: the hybrid unwinder. Walks the stack with per-return-address
// unwind rules taken from the modules' DWARF CFI (.eh_frame, read with
// elfutils libdw) and cached process-wide, so that after warm-up each frame
// costs one hash lookup and two loads, frame pointer or not.
#pragma once

#include <cstdint>

#include "tracer/unwind_fp.h"

namespace crossfree::tracer {

// Maps the rule cache. Call once from InitStacks (allocates through mmap
// only). Returns false if the mapping fails.
bool InitCfiUnwinder();

// Attach mode, at the end of a session (no thread unwinds): unmaps the
// object files whose CFI was read (their descriptors were closed once
// read) and frees libdw's copies of it, so that a detached process keeps
// none of them mapped. The rules already
// computed stay cached (they depend on the code, not on the files); the
// next session opens files again as it needs them. False when another
// thread holds the fill lock (then everything stays as it is).
bool ReleaseCfiFiles();

// Unwinds outward from the frame that executes at return address `pc` with
// stack pointer `sp` and frame pointer `fp` (pc itself is already recorded
// in frames[depth-1]). Appends return addresses and returns the new depth.
//
// Per frame: the rule for pc is looked up in a lock-free cache. On a miss
// the rule is computed from the module's CFI, which allocates (malloc,
// through libdw) and takes the loader lock (dl_iterate_phdr), so the caller
// must run inside the tracer's recursion guard; a process-wide try-lock
// serialises those fills and a thread that finds it taken does not wait, it
// continues with libunwind instead. Frames with rules outside the simple
// "CFA = rsp/rbp + offset, rbp and return address saved at CFA offsets"
// form (signal trampolines, hand-written assembly) are also handed to
// libunwind, which continues only while the stack pointer stays inside
// bounds. Code without any CFI (JIT, hand-written assembly) is walked by
// frame pointer, only through records inside bounds. Every address this
// walker reads is checked against `bounds` (CurrentWalkBounds: from
// the current frame to the top of the current stack) first, without overflow.
//
// memo: one thread's walk memo (below), or null to walk every frame from
// its rule (the stack check mode compares the two). With it, the frames
// that did not change since that thread's previous walk are replayed,
// proven word by word; the result is the same either way.
struct WalkMemo;
int WalkWithCfi(uintptr_t pc, uintptr_t sp, uintptr_t fp, const StackBounds& bounds,
                uint64_t* frames, int depth, int max_depth, WalkMemo* memo = nullptr);

// ---- The walk memo: reuse of the part of the stack that did not change. --
//
// One step of the walk is a function of its state (pc, sp, fp), the rule
// for pc, the bounds' top and the (at most two) words it reads: the saved
// rbp and the return address. A thread keeps the steps of its last walk as
// facts: "from this state, the step read these addresses and, given these
// values, went to the next state" (or stopped). A later walk that reaches a
// state recorded there replays the following steps by re-reading each
// recorded address and comparing it with the recorded value, without
// looking up rules or redoing the arithmetic: the replayed frames are
// exactly those a full walk would find, and the first difference resumes
// the full walk from the last state proven equal. Facts stay true whatever
// the stack holds later (and whichever thread later uses the memo), so the
// memo never needs invalidating; it is only trusted through these
// comparisons. Lives in the thread's state (mmap'd, zero = empty), not in
// TLS: 5 KiB more of static TLS would come out of every thread's stack and
// make pthread_create fail for threads with PTHREAD_STACK_MIN stacks.
struct MemoStep {
  uintptr_t pc, sp, fp;          // the state
  uintptr_t ra_addr, ra_val;     // the return address read (ra_addr 0: none)
  uintptr_t rbp_addr, rbp_val;   // the saved rbp read; when the step read
                                 // none but a return address, that address
                                 // and value again (the replay then checks
                                 // two words without a branch); both 0 when
                                 // it read nothing
};
inline constexpr int kMemoSteps = 48;

// A thread's direct-mapped front cache of rules by return address: the
// shared table is spread over megabytes and its lines miss in L1; a
// thread's hot return addresses fit in 2 KiB of its own. Kept in the
// thread's state with the memo, not in TLS, for the same reason.
inline constexpr int kFrontBits = 7;
inline constexpr int kFrontSlots = 1 << kFrontBits;
struct FrontCache {
  uint64_t pc[kFrontSlots];    // 0: empty (no walk looks a rule up for pc 0)
  uint64_t rule[kFrontSlots];
};

// The facts of one walk, kept for the next that may meet them.
struct MemoSteps {
  uintptr_t high;  // bounds.high of the walks the facts were made with
  int count;       // steps, OUTERMOST first: step[0] is the walk's last state
  int ended;       // 1: step[0] ended the walk (after its reads, if any);
                   // 0: the walk stopped at step[0] for max_depth
  MemoStep step[kMemoSteps];
  // The stack id the recorder interned for the walk these steps describe,
  // with what shaped it from the frames (the capture's depth limit and its
  // allocator-frame filter); id_valid is cleared whenever the steps change.
  uint32_t stack_id;
  int id_valid;
  int id_want;
  const void* id_skip;
};

// A thread's walk state. A walk uses (and then replaces) the memo chosen
// by a hash of its first state's return address and stack pointer: the
// call site and how deep below it the thread is. So the walks of a loop
// that allocates at several sites, through several paths, each meet the
// last walk that started where they start, and usually replay it whole.
// Any memo is as sound as any other (its facts are only trusted through
// the comparisons); the choice only decides how much of a walk is
// replayed. Deep workload, tracer instructions per event (callgrind): one
// memo 1306; 8 by call site 1104; 32 by call site and stack pointer 1057,
// and 1146 against one memo's 1321 when each site's depth varies at random.
// 32 memos are 86 KiB of the thread's mmap'd state, touched only as the
// thread's walks start at different places.
inline constexpr int kMemoSiteBits = 5;
struct WalkMemo {
  MemoSteps by_site[1 << kMemoSiteBits];  // two-way sets (PickMemo)
  uint8_t recent_way[1 << (kMemoSiteBits - 1)];
  FrontCache front;             // used with or without the memo's steps
  // Set by every walk with this state: the memo that now describes the
  // walk's frames (null when none does: the memo was off, full, or the walk
  // went on in libunwind), and whether the walk only replayed it whole, so
  // that its frames equal those of the walk that memo described before.
  MemoSteps* last;
  int whole;
  MemoStep fresh[kMemoSteps];  // the walk in progress, filled from the end
                               // down (innermost in the last slot)
};

// Turns the walk memo off for every walk (benchmarks: the cost without it).
void SetWalkMemo(bool enabled);

// Cache statistics for tests and benchmarks: rules computed so far, and
// frames handed over to libunwind.
struct CfiStats {
  uint64_t rules;
  uint64_t fallbacks;
};
CfiStats GetCfiStats();

// Tests only: while held, every cache miss behaves as if another thread were
// filling the cache (the capture continues with libunwind). Returns false if
// the lock could not be taken or released.
bool HoldCfiFillLockForTests(bool hold);

}  // namespace crossfree::tracer
