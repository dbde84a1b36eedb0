// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: names of the format's enumerations (see names.h).
#include "format/names.h"

namespace crossfree::format {

const char* AllocFnName(uint8_t fn) {
  switch (static_cast<AllocFn>(fn)) {
    case AllocFn::kMalloc: return "malloc";
    case AllocFn::kCalloc: return "calloc";
    case AllocFn::kRealloc: return "realloc";
    case AllocFn::kReallocArray: return "reallocarray";
    case AllocFn::kPosixMemalign: return "posix_memalign";
    case AllocFn::kAlignedAlloc: return "aligned_alloc";
    case AllocFn::kMemalign: return "memalign";
    case AllocFn::kValloc: return "valloc";
    case AllocFn::kPvalloc: return "pvalloc";
    case AllocFn::kNew: return "new";
    case AllocFn::kNewArray: return "new[]";
    case AllocFn::kMallocHook: return "malloc-hook";
  }
  return "?";
}

const char* FreeFnName(uint8_t fn) {
  switch (static_cast<FreeFn>(fn)) {
    case FreeFn::kFree: return "free";
    case FreeFn::kRealloc: return "realloc";
    case FreeFn::kDelete: return "delete";
    case FreeFn::kDeleteArray: return "delete[]";
    case FreeFn::kMallocHook: return "malloc-hook";
  }
  return "?";
}

const char* ClockName(Clock clock) {
  return clock == Clock::kMonotonic ? "monotonic" : "unknown";
}

const char* UnwinderName(Unwinder unwinder) {
  switch (unwinder) {
    case Unwinder::kNone: return "none";
    case Unwinder::kFramePointer: return "frame-pointer";
    case Unwinder::kLibunwind: return "libunwind";
    case Unwinder::kHybrid: return "hybrid";
  }
  return "unknown";
}

const char* CentralOpName(CentralOp op) {
  switch (op) {
    case CentralOp::kFetch:
      return "fetch";
    case CentralOp::kRelease:
      return "release";
    case CentralOp::kInsertRange:
      return "insert_range";
    case CentralOp::kRemoveRange:
      return "remove_range";
  }
  return "?";
}

const char* WindowStateName(WindowState state) {
  switch (state) {
    case WindowState::kClosed: return "closed";
    case WindowState::kOpen: return "open";
  }
  return "?";
}

const char* WindowCauseName(WindowCause cause) {
  switch (cause) {
    case WindowCause::kDelay: return "delay";
    case WindowCause::kDuration: return "duration";
    case WindowCause::kSignal: return "signal";
    case WindowCause::kAttach: return "attach";
  }
  return "?";
}

std::string LossesText(const RecordLosses& losses) {
  std::string out;
  if (losses.events_dropped != 0 || losses.chunks_dropped != 0) {
    out = std::to_string(losses.events_dropped) + " events in " +
          std::to_string(losses.chunks_dropped) +
          " chunks dropped by the tracer (record fell behind: no free buffer within "
          "CROSSFREE_CHANNEL_WAIT_MS)";
  }
  if (losses.chunks_damaged != 0) {
    out += (out.empty() ? "" : ", ") + std::to_string(losses.chunks_damaged) +
           " chunks damaged in shared memory (not written)";
  }
  return out;
}

}  // namespace crossfree::format
