// SPDX-License-Identifier: Apache-2.0
// Tracer: stack capture dispatch (fp / libunwind / hybrid) and the
// process-wide stack table behind stacks.h.
#include "tracer/stacks.h"

#include <cstring>

#include "format/trace_format.h"
#include "tracer/stack_table.h"
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
constinit int g_max_depth = 64;
constinit bool g_libunwind_ok = false;

int CaptureFramePointer(uintptr_t ret, uintptr_t fp, uint64_t* frames, int max_depth) {
  frames[0] = ret;
  StackBounds bounds = CurrentThreadStackBounds();
  if (bounds.high == 0) return 1;
  return WalkFramePointers(fp, bounds, frames, 1, max_depth, nullptr);
}

int CaptureHybrid(uintptr_t ret, uintptr_t fp, uint64_t* frames, int max_depth) {
  frames[0] = ret;
  StackBounds bounds = CurrentThreadStackBounds();
  if (bounds.high == 0) return 1;
  uintptr_t last_fp = fp;
  int depth = WalkFramePointers(fp, bounds, frames, 1, max_depth, &last_fp);
  if (depth >= max_depth || !g_libunwind_ok || !PlausibleFrame(last_fp, bounds)) return depth;
  // The chain ended: if it ended at the process's outermost frame the
  // saved fp is 0; otherwise hand the frame record's state to DWARF.
  uintptr_t saved_fp = reinterpret_cast<const uintptr_t*>(last_fp)[0];
  if (saved_fp == 0) return depth;
  return ContinueWithLibunwind(frames[depth - 1] - 1, last_fp + 16, saved_fp, frames,
                               depth, max_depth);
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

bool InitStacks(UnwindMode mode, int max_depth) {
  if (max_depth < 1) max_depth = 1;
  if (max_depth > static_cast<int>(format::kMaxStackDepth)) {
    max_depth = static_cast<int>(format::kMaxStackDepth);
  }
  g_max_depth = max_depth;
  if (!g_table.initialized() && !g_table.Init(kMaxStacks, kMaxInternedFrames)) return false;
  // Computes (and caches) this thread's bounds now, outside any hook.
  CurrentThreadStackBounds();
  if (mode != UnwindMode::kFramePointer && !g_libunwind_ok) g_libunwind_ok = InitLibunwind();
  if (mode == UnwindMode::kLibunwind && !g_libunwind_ok) return false;
  g_mode = mode;
  return true;
}

int CaptureStack(void* hook_return_address, void* hook_frame_address, uint64_t* frames,
                 int max_depth) {
  if (max_depth > g_max_depth) max_depth = g_max_depth;
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
      return CaptureHybrid(ret, fp, frames, max_depth);
    case UnwindMode::kFramePointer:
    default:
      return CaptureFramePointer(ret, fp, frames, max_depth);
  }
}

uint32_t InternStack(const uint64_t* frames, int depth, bool* is_new) {
  if (depth > static_cast<int>(format::kMaxStackDepth)) {
    depth = static_cast<int>(format::kMaxStackDepth);
  }
  return g_table.Intern(frames, depth, is_new);
}

uint32_t InternedStackCount() { return g_table.Count(); }

uint64_t DroppedStackCount() { return g_table.Dropped(); }

}  // namespace crossfree::tracer
