// SPDX-License-Identifier: Apache-2.0
// Tracer: stack capture dispatch (fp / libunwind / hybrid) and the
// process-wide stack table behind stacks.h.
#include "tracer/stacks.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "format/trace_format.h"
#include "tracer/code_ranges.h"
#include "tracer/stack_table.h"
#include "tracer/sys.h"
#include "tracer/unwind_cfi.h"
#include "tracer/unwind_fp.h"
#include "tracer/unwind_libunwind.h"

namespace crossfree::tracer {
namespace {

// Room for 1M distinct stacks of 32 frames on average; MAP_NORESERVE makes
// the unused part free.
constexpr uint32_t kMaxStacks = 1u << 20;
constexpr uint64_t kMaxInternedFrames = uint64_t{kMaxStacks} * 32;

constinit StackTable g_table;
constinit UnwindMode g_mode = UnwindMode::kFramePointer;
constinit bool g_libunwind_ok = false;
constinit bool g_cfi_ok = false;
constinit bool g_stack_check = false;

int CaptureFramePointer(uintptr_t ret, uintptr_t fp, uint64_t* frames, int max_depth) {
  frames[0] = ret;
  const StackBounds bounds = CurrentWalkBounds();
  return WalkFramePointers(fp, bounds, frames, 1, max_depth, nullptr);
}

// Check mode (SetStackCheck): a capture that differs from the full walk of
// the same stack is a bug in the memo; say what differs and abort.
[[noreturn]] void StackCheckFailed(const uint64_t* got, int got_depth, const uint64_t* want,
                                   int want_depth) {
  int i = 0;
  while (i < got_depth && i < want_depth && got[i] == want[i]) ++i;
  char line[256];
  int n = 0;
  auto put = [&](const char* t) {
    while (*t != '\0' && n < static_cast<int>(sizeof(line)) - 1) line[n++] = *t++;
  };
  auto num = [&](uint64_t v) {
    char digits[20];
    const size_t k = FormatDecimal(v, digits);
    for (size_t d = 0; d < k && n < static_cast<int>(sizeof(line)) - 1; ++d) line[n++] = digits[d];
  };
  put("crossfree-trace: CROSSFREE_STACK_CHECK: capture differs from the full walk at frame ");
  num(static_cast<uint64_t>(i));
  put(" (depth ");
  num(static_cast<uint64_t>(got_depth));
  put(", full walk ");
  num(static_cast<uint64_t>(want_depth));
  put(")\n");
  ssize_t ignored = write(2, line, static_cast<size_t>(n));
  (void)ignored;
  abort();
}

// Check mode: walks the stack again from its rules alone and aborts on any
// difference from the capture. Out of line: its buffer would otherwise
// enlarge every capture's frame.
__attribute__((noinline, cold)) void CheckHybridCapture(uintptr_t ret, uintptr_t fp,
                                                        uintptr_t caller_fp,
                                                        const StackBounds& bounds,
                                                        const uint64_t* frames, int depth,
                                                        int max_depth) {
  uint64_t full[format::kMaxStackDepth + 32];
  const int limit = max_depth < static_cast<int>(sizeof(full) / sizeof(full[0]))
                        ? max_depth
                        : static_cast<int>(sizeof(full) / sizeof(full[0]));
  full[0] = ret;
  const int want = WalkWithCfi(ret, fp + 16, caller_fp, bounds, full, 1, limit, nullptr);
  if (want != depth || std::memcmp(full, frames, sizeof(uint64_t) * depth) != 0) {
    StackCheckFailed(frames, depth, full, want);
  }
}

int CaptureHybrid(uintptr_t ret, uintptr_t fp, uint64_t* frames, int max_depth,
                  CaptureCache* cache) {
  frames[0] = ret;
  const StackBounds bounds = CurrentWalkBounds();
  // The hook has a frame record, so the caller's state is exact: it
  // resumes at ret with rsp just above the record and its own rbp saved in
  // it (a value only: it is checked before anything is read through it).
  if (!PlausibleFrame(fp, bounds)) return 1;
  if (!g_cfi_ok) return WalkFramePointers(fp, bounds, frames, 1, max_depth, nullptr);
  uintptr_t caller_fp = reinterpret_cast<const uintptr_t*>(fp)[0];
  const int depth = WalkWithCfi(ret, fp + 16, caller_fp, bounds, frames, 1, max_depth,
                                cache != nullptr ? &cache->walk : nullptr);
  if (__builtin_expect(g_stack_check, 0)) {
    CheckHybridCapture(ret, fp, caller_fp, bounds, frames, depth, max_depth);
  }
  return depth;
}

}  // namespace

bool ParseUnwindMode(const char* text, UnwindMode* mode) {
  if (text == nullptr) return false;
  if (std::strcmp(text, "fp") == 0) {
    *mode = UnwindMode::kFramePointer;
  } else if (std::strcmp(text, "libunwind") == 0) {
    *mode = UnwindMode::kLibunwind;
  } else if (std::strcmp(text, "hybrid") == 0) {
    *mode = UnwindMode::kHybrid;
  } else {
    return false;
  }
  return true;
}

void ResetInternedStacks() { g_table.Reset(); }

bool InitStacks(UnwindMode mode, int max_depth) {
  if (max_depth < 1) max_depth = 1;
  if (max_depth > 32) max_depth = 32;  // only sizes the warm-up capture
  if (!g_table.initialized() && !g_table.Init(kMaxStacks, kMaxInternedFrames)) return false;
  // Computes (and caches) this thread's bounds now, outside any hook.
  CurrentThreadStackBounds();
  RefreshCodeRanges();  // frame-pointer steps check return addresses against it
  if (mode != UnwindMode::kFramePointer && !g_libunwind_ok) g_libunwind_ok = InitLibunwind();
  if (mode == UnwindMode::kHybrid && !g_cfi_ok) g_cfi_ok = g_libunwind_ok && InitCfiUnwinder();
  if (mode == UnwindMode::kLibunwind && !g_libunwind_ok) return false;
  g_mode = mode;
  if (mode == UnwindMode::kHybrid && g_cfi_ok) {
    // Warm-up: loads the CFI of the modules on the start-up stack (the
    // executable, libc, ld.so) now rather than inside the first hooks.
    uint64_t frames[32];
    CaptureStack(__builtin_return_address(0), __builtin_frame_address(0), frames, max_depth);
  }
  return true;
}

int CaptureStack(void* hook_return_address, void* hook_frame_address, uint64_t* frames,
                 int max_depth, CaptureCache* cache) {
  // The memo a capture leaves in cache->walk.last (RememberedStackId) is
  // only a hybrid walk's: every other path, a hybrid capture that stops
  // before walking included, must not leave the previous capture's there.
  if (cache != nullptr) cache->walk.last = nullptr;
  // max_depth is the caller's buffer size and is honoured as given (the
  // tracer asks for extra frames when it will drop allocator frames).
  if (max_depth <= 0 || hook_return_address == nullptr) return 0;
  uintptr_t ret = reinterpret_cast<uintptr_t>(hook_return_address);
  uintptr_t fp = reinterpret_cast<uintptr_t>(hook_frame_address);
  switch (g_mode) {
    case UnwindMode::kLibunwind: {
      if (g_libunwind_ok) {
        int depth = CaptureWithLibunwind(ret, fp, frames, max_depth);
        if (depth > 0) return depth;
      }
      return CaptureFramePointer(ret, fp, frames, max_depth);
    }
    case UnwindMode::kHybrid:
      return CaptureHybrid(ret, fp, frames, max_depth, cache);
    case UnwindMode::kFramePointer:
    default:
      return CaptureFramePointer(ret, fp, frames, max_depth);
  }
}

void SetStackCheck(bool enabled) { g_stack_check = enabled; }

bool StackCheckEnabled() { return g_stack_check; }

namespace {

inline int ThreadStackIndex(const uint64_t* frames, int depth) {
  uint64_t k = (frames[0] ^ static_cast<uint64_t>(depth)) * 0x9e3779b97f4a7c15ull;
  if (depth > 1) k += frames[1] * 0xc2b2ae3d27d4eb4full;
  if (depth > 2) k += frames[2] * 0x165667b19e3779f9ull;
  return static_cast<int>((k >> 50) & (kThreadStackSlots - 1));
}

}  // namespace

uint32_t InternStack(const uint64_t* frames, int depth, bool* is_new, CaptureCache* cache) {
  if (depth > static_cast<int>(format::kMaxStackDepth)) {
    depth = static_cast<int>(format::kMaxStackDepth);
  }
  if (cache == nullptr || depth <= 0 || depth > kThreadStackFrames) {
    return g_table.Intern(frames, depth, is_new);
  }
  ThreadStackSlot& slot = cache->stacks[ThreadStackIndex(frames, depth)];
  if (slot.id != 0 && slot.depth == static_cast<uint32_t>(depth) &&
      std::memcmp(slot.frames, frames, sizeof(uint64_t) * depth) == 0) {
    *is_new = false;
    return slot.id;
  }
  const uint32_t id = g_table.Intern(frames, depth, is_new);
  if (id != 0) {
    slot.id = id;
    slot.depth = static_cast<uint32_t>(depth);
    std::memcpy(slot.frames, frames, sizeof(uint64_t) * depth);
  }
  return id;
}

uint32_t InternedStackCount() { return g_table.Count(); }

uint64_t DroppedStackCount() { return g_table.Dropped(); }

}  // namespace crossfree::tracer
