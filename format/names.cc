// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: names of the format's enumerations (see names.h).
#include "format/names.h"

#include <cstddef>
#include <iterator>

namespace crossfree::format {

namespace {

// The names of an enumeration whose values run from 0 without a gap, in the
// order of its values; the static_asserts keep each table as long as its
// enumeration.
constexpr const char* kAllocFnNames[] = {
    "malloc",   "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "new",          "new[]",          "malloc-hook"};
static_assert(std::size(kAllocFnNames) == static_cast<size_t>(AllocFn::kMallocHook) + 1);
constexpr const char* kUnwinderNames[] = {"none", "frame-pointer", "libunwind", "hybrid"};
static_assert(std::size(kUnwinderNames) == static_cast<size_t>(Unwinder::kHybrid) + 1);
constexpr const char* kCentralOpNames[] = {"fetch", "release", "insert_range", "remove_range"};
static_assert(std::size(kCentralOpNames) == kMaxCentralOp + 1);
constexpr const char* kWindowStateNames[] = {"closed", "open"};
static_assert(std::size(kWindowStateNames) == static_cast<size_t>(WindowState::kOpen) + 1);
constexpr const char* kWindowCauseNames[] = {"delay", "duration", "signal", "attach"};
static_assert(std::size(kWindowCauseNames) == kMaxWindowCause + 1);

// names[value], or `unknown` for a value the table does not reach.
template <typename Enum, size_t N>
const char* NameOf(const char* const (&names)[N], Enum value, const char* unknown = "?") {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : unknown;
}

}  // namespace

const char* AllocFnName(uint8_t fn) { return NameOf(kAllocFnNames, fn); }

// FreeFn's values have gaps (they are those of the AllocFn each one undoes).
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
  return NameOf(kUnwinderNames, unwinder, "unknown");
}

const char* CentralOpName(CentralOp op) { return NameOf(kCentralOpNames, op); }

const char* WindowStateName(WindowState state) { return NameOf(kWindowStateNames, state); }

const char* WindowCauseName(WindowCause cause) { return NameOf(kWindowCauseNames, cause); }

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

TraceEnd EndOf(bool promised_totals, bool saw_totals, const RecordTakenEnd* taken) {
  if (saw_totals || !promised_totals) return TraceEnd::kClean;
  if (taken == nullptr) return TraceEnd::kBuffersLost;
  return taken->state == TakenEndState::kRunning ? TraceEnd::kTakenRunning
                                                 : TraceEnd::kTakenWhole;
}

std::string NoCleanEndText(const RecordTakenEnd* taken) {
  if (taken == nullptr) {
    return "no clean end (no totals record: the process was killed or crashed, or a thread was "
           "busy at exit): the events in its last buffers are lost";
  }
  const std::string took =
      "crossfree record took the " + std::to_string(taken->events) + " events of the " +
      std::to_string(taken->chunks_sealed) +
      (taken->chunks_sealed == 1 ? " buffer" : " buffers") + " its threads had open";
  if (taken->state == TakenEndState::kRunning) {
    return "no clean end: the process was still running when crossfree record finished "
           "(--wait-children); " + took + ", so the trace holds its events up to then and "
           "none after";
  }
  return "no clean end: the process ended without its exit flush (killed or crashed); " + took +
         ", so nothing it recorded is lost but the one record a thread may have been writing";
}

}  // namespace crossfree::format
