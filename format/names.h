// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: the names of the allocation and free functions,
// central free-list operations, clocks and unwinders that the format's
// enumerations stand for, as `crossfree dump` and the reports print them.
// Next to trace_format.h so that adding an enumerator and its name is one
// change in one folder. "?" for a value the format does not define.
#pragma once

#include <cstdint>
#include <string>

#include "format/trace_format.h"

namespace crossfree::format {

const char* AllocFnName(uint8_t fn);  // an AllocFn value
const char* FreeFnName(uint8_t fn);   // a FreeFn value
const char* CentralOpName(CentralOp op);
const char* ClockName(Clock clock);
const char* UnwinderName(Unwinder unwinder);
const char* WindowStateName(WindowState state);  // "open" / "closed"
const char* WindowCauseName(WindowCause cause);  // "delay", "duration", "signal"
// What a losses record says, in one phrase shared by record, dump and the
// reports: "N events dropped by the tracer in M chunks (no free buffer in
// record's region in time)", and the damaged chunks when there are any.
std::string LossesText(const RecordLosses& losses);
// How a trace's end stands, from its header's promise of a totals chunk
// (kHeaderFlagEndsWithTotals), whether the reader met that chunk, and
// record's end-taken record (trace format 6.9). The one decision dump,
// record's summary and the analyzer make of it.
enum class TraceEnd {
  kClean,         // the tracer's totals, or no promise of them (the reader cannot tell)
  kTakenWhole,    // no totals; record took every buffer of the ended process
  kTakenRunning,  // no totals; the process outlived record: its later events are missing
  kBuffersLost,   // no totals, nothing taken: the last buffers went with the process
};
TraceEnd EndOf(bool promised_totals, bool saw_totals, const RecordTakenEnd* taken);
// Whether events the process recorded are missing at the end.
inline bool EventsMissingAtEnd(TraceEnd end) {
  return end == TraceEnd::kTakenRunning || end == TraceEnd::kBuffersLost;
}

// Why a trace has no clean end, in words, for one without the tracer's
// totals record: with record's end-taken record, how it ended and that
// what was recorded before is there; without, that the last buffers are
// lost. One phrase for dump, report and gate.
std::string NoCleanEndText(const RecordTakenEnd* taken);

}  // namespace crossfree::format
