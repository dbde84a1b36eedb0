// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: the constants and plain types shared by the writer
// (tracer/, allocation-free) and the reader (analysis/, cli/, tests). The byte
// layout is specified in docs/trace-format.md; this header is its index.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::format {

// File layout (all integers little endian; details in docs/trace-format.md):
//
//   file   := file_header chunk*
//   chunk  := chunk_header payload          (self-delimiting, checksummed)
//   payload:= record*                       (varint/delta coded, see below)
//
// Every thread encodes its own chunks into a private buffer and appends a
// complete chunk with one write(2) on an O_APPEND descriptor, so the file is
// a sequence of whole chunks in no global order. A reader recovers the order
// of events on one address from their timestamps (docs/design.md, "The ordering rule").
// Delta state (previous timestamp, previous address, the per-stack size and
// address prediction table) resets at the start of every chunk, so each
// chunk decodes on its own and a truncated file loses only its last,
// incomplete chunk.

inline constexpr char kFileMagic[8] = {'C', 'R', 'S', 'F', 'T', 'R', 'C', '\n'};
inline constexpr uint32_t kChunkMagic = 0x4b4e4843;  // "CHNK" in file order
// A compressed chunk (docs/trace-format.md 5.1): the records of one plain
// chunk, split into lanes and compressed with zstd (format/chunk_codec.h).
inline constexpr uint32_t kCompressedChunkMagic = 0x5a4e4843;  // "CHNZ" in file order
// The newest version this code reads and writes; it reads
// kOldestFormatVersion and later. It writes kFormatVersion for a header
// with a time resolution above 1 ns (docs/trace-format.md 7.1), and
// kNanosecondFormatVersion otherwise, so that older readers still read
// every trace with nanosecond times. Version handling lives in
// trace_reader.cc (CheckVersion); nothing else may branch on it.
inline constexpr uint32_t kFormatVersion = 5;
inline constexpr uint32_t kNanosecondFormatVersion = 4;
inline constexpr uint32_t kOldestFormatVersion = 1;
// The time resolutions a header may give (`record --time-resolution`).
inline constexpr uint32_t kMaxTimeResolutionNs = 1'000'000;

// The CPU of an event when the tracer could not read it (no rseq), and the
// per-chunk cpu state before the chunk's first cpu record.
inline constexpr uint32_t kUnknownCpu = 0xFFFFFFFF;

// Which clock the timestamps come from (file header field).
enum class Clock : uint8_t {
  kMonotonic = 1,  // clock_gettime(CLOCK_MONOTONIC), nanoseconds
};

// How stacks were captured (file header field, informational).
enum class Unwinder : uint8_t {
  kNone = 0,
  kFramePointer = 1,
  kLibunwind = 2,
  kHybrid = 3,  // frame pointers while the chain is sound, DWARF below
};

// The function that made an allocation or a free. Stored in the low nibble of
// the record tag, so it costs no extra byte.
enum class AllocFn : uint8_t {
  kMalloc = 0,
  kCalloc = 1,
  kRealloc = 2,
  kReallocArray = 3,
  kPosixMemalign = 4,
  kAlignedAlloc = 5,
  kMemalign = 6,
  kValloc = 7,
  kPvalloc = 8,
  kNew = 9,            // operator new (all plain/nothrow/aligned variants)
  kNewArray = 10,      // operator new[] (all variants)
  kMallocHook = 11,    // seen through gperftools MallocHook (static tcmalloc)
};

enum class FreeFn : uint8_t {
  kFree = 0,
  kRealloc = 2,        // the free half of a realloc that moved or shrank to 0
  kDelete = 9,         // operator delete (plain/sized/aligned/nothrow)
  kDeleteArray = 10,   // operator delete[] (all variants)
  kMallocHook = 11,
};

// Record tags. Event tags carry the AllocFn/FreeFn in their low nibble.
// Tags >= kExtensionTagBase are followed by a varint byte length, so a reader
// skips extension records it does not know; any other unknown tag is
// corruption. Field encodings (varint, zigzag deltas, the per-chunk
// size/address prediction by stack) are in docs/trace-format.md.
enum RecordTag : uint8_t {
  kTagStackDef = 0x01,     // varint id, varint depth, depth x zigzag delta frames
  kTagThreadName = 0x02,   // zigzag ts delta, varint len, bytes
  kTagModule = 0x03,       // see ModuleView
  kTagThreadExit = 0x04,   // zigzag ts delta
  kTagCpu = 0x05,          // varint cpu: the CPU of the chunk's following events (version 2)
  // Events: ts delta, stack word (id << 1 | size present), address delta,
  // [size]. A free's size is the sized-delete size, 0 when unknown.
  kTagAllocBase = 0x10,    // | AllocFn, address delta in bytes
  kTagFreeBase = 0x20,     // | FreeFn,  address delta in bytes
  kTagReallocBase = 0x30,  // | AllocFn: ts_free, ts_alloc, old, new, size, stack
  kTagAllocAlignedBase = 0x40,  // | AllocFn, address delta in units of 16 bytes
  kTagFreeAlignedBase = 0x50,   // | FreeFn,  address delta in units of 16 bytes
  kExtensionTagBase = 0x80,
  // Extension records (varint byte length first, so older readers skip them).
  kTagCentral = 0x80,  // len, zigzag ts delta, op, size class, count, stack id
  kTagTotals = 0x81,   // len 40, fixed-width process totals (TraceTotals)
  kTagWindow = 0x82,   // len, zigzag ts delta, state (WindowState), cause (WindowCause)
  kTagCounts = 0x83,   // len, allocations, frees, samples dropped (ThreadCounts)
  kTagLosses = 0x84,   // len 28, fixed-width: what record could not write (RecordLosses)
  kTagTakenEnd = 0x85,  // len 24, fixed-width: an end record took itself (RecordTakenEnd)
};

// Whether `kind` (a tag with its AllocFn/FreeFn nibble masked off) is a
// plain alloc or free event: the records whose ts, stack, address and size
// go to the compressed layout's lanes and that time rounding rewrites.
// Realloc records are not among them: they carry two times of their own.
constexpr bool IsEventKind(uint8_t kind) {
  return kind == kTagAllocBase || kind == kTagFreeBase || kind == kTagAllocAlignedBase ||
         kind == kTagFreeAlignedBase;
}

// Recording windows (kTagWindow, docs/guide/tracer.md "Windows"). A trace
// whose header has kHeaderFlagWindowed starts closed: only the events
// between an open and the next close record were traced. Without the flag
// recording is open from the header's start time to the end.
enum class WindowState : uint8_t {
  kClosed = 0,
  kOpen = 1,
};
enum class WindowCause : uint8_t {
  kDelay = 0,     // --delay elapsed (the first window opens)
  kDuration = 1,  // --duration elapsed (the window closes)
  kSignal = 2,    // the --toggle-signal arrived
  kAttach = 3,    // `crossfree record -p` attached (opens) or detached (closes)
};
inline constexpr uint8_t kMaxWindowCause = 3;

// What one thread did in all while recording, sampled or not (kTagCounts):
// allocations and frees since that thread's previous counts record, so the
// sum over a thread's chunks is its total. Written only in sampled traces
// (in a full trace the events are the counts). samples_dropped: allocations
// the sampler chose but could not follow (live-object table full); they
// are in `allocs` but not in the trace.
struct ThreadCounts {
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t samples_dropped = 0;
};

// What the tracer wrote into one trace file, as it counted it at exit
// (extension record kTagTotals, alone in a fixed-size chunk that is the
// file's last when nothing was written after it). Lets `crossfree record`
// print its summary without decoding the trace (docs/trace-format.md 6.9).
struct TraceTotals {
  uint64_t events = 0;   // allocation/free events in the chunks before it
  uint64_t allocs = 0;   // of which allocations (a realloc is one of each)
  uint64_t frees = 0;
  uint64_t chunks = 0;   // chunks before it
  uint32_t threads = 0;  // threads that wrote at least one chunk
};
inline constexpr uint32_t kTotalsMagic = 0x4c544f54;  // "TOTL" in file order
inline constexpr size_t kTotalsBodyBytes = 40;
// chunk header + tag + one-byte length + body
inline constexpr size_t kTotalsChunkBytes = 32 + 2 + kTotalsBodyBytes;

// What `crossfree record` could not write into a trace (extension record
// kTagLosses, alone in a fixed-size chunk after every other chunk of the
// file, written by record only: docs/trace-format.md 6.9). Its presence
// makes the trace incomplete.
struct RecordLosses {
  uint64_t events_dropped = 0;  // the tracer found no free buffer in time
  uint64_t chunks_dropped = 0;  // the chunks those events were in
  uint64_t chunks_damaged = 0;  // failed validation in the region: not written
  bool any() const { return events_dropped != 0 || chunks_dropped != 0 || chunks_damaged != 0; }
};
inline constexpr uint32_t kLossesMagic = 0x53534f4c;  // "LOSS" in file order
inline constexpr size_t kLossesBodyBytes = 28;
inline constexpr uint32_t kLossesSequence = 0xFFFFFFFF;
// chunk header + tag + one-byte length + body
inline constexpr size_t kLossesChunkBytes = 32 + 2 + kLossesBodyBytes;

// How a trace ended when its process did not end with the exit flush and
// `crossfree record` sealed its threads' open buffers itself (extension
// record kTagTakenEnd, alone in a fixed-size chunk after every other chunk
// of the file but the losses chunk, written by record only:
// docs/trace-format.md 6.9). Nothing recorded before that end is lost.
enum class TakenEndState : uint32_t {
  kEnded = 0,    // the image had ended: killed, crashed, _exit without the flush
  kRunning = 1,  // still running when record finished: nothing after is in the file
};
struct RecordTakenEnd {
  TakenEndState state = TakenEndState::kEnded;
  uint64_t chunks_sealed = 0;  // buffers record sealed itself
  uint64_t events = 0;         // events in them
};
inline constexpr uint32_t kTakenEndMagic = 0x4e4b4154;  // "TAKN" in file order
inline constexpr size_t kTakenEndBodyBytes = 24;
// chunk header + tag + one-byte length + body; sequence kLossesSequence
inline constexpr size_t kTakenEndChunkBytes = 32 + 2 + kTakenEndBodyBytes;

// A tcmalloc (gperftools) central free-list transfer seen by the tracer
// (kTagCentral). Fetch/Release are the ThreadCache entry points; Insert/
// RemoveRange are the CentralFreeList calls they make (sub-counts).
enum class CentralOp : uint8_t {
  kFetch = 0,        // ThreadCache::FetchFromCentralCache
  kRelease = 1,      // ThreadCache::ReleaseToCentralCache
  kInsertRange = 2,  // CentralFreeList::InsertRange
  kRemoveRange = 3,  // CentralFreeList::RemoveRange
};
inline constexpr uint8_t kMaxCentralOp = 3;

// Stack id 0 means "no stack captured". Ids are process-wide: a stack is
// defined once (kTagStackDef) in the chunk of whichever thread interned it
// first, and may be referenced from chunks that precede its definition.
inline constexpr uint32_t kNoStack = 0;
inline constexpr uint32_t kMaxStackDepth = 256;

// Bytes of the fixed chunk header that precedes every payload.
inline constexpr size_t kChunkHeaderBytes = 32;
// A chunk never exceeds this (payload included); larger lengths are corrupt.
// It also bounds a compressed chunk's plain record stream (its raw length).
inline constexpr size_t kMaxChunkBytes = 16u << 20;
inline constexpr size_t kMaxRawPayloadBytes = kMaxChunkBytes - kChunkHeaderBytes;

// One PT_LOAD segment of a module, as mapped in the traced process.
struct ModuleSegment {
  uint64_t start;  // absolute address of the first byte
  uint64_t size;   // p_memsz
};

// The settings recorded in the file header.
struct HeaderFields {
  uint32_t pid = 0;
  uint32_t ppid = 0;            // parent pid; the parent's trace for a fork child
  Clock clock = Clock::kMonotonic;
  Unwinder unwinder = Unwinder::kNone;
  uint16_t max_depth = 0;       // configured stack depth
  uint32_t flags = 0;           // kHeaderFlag*
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  // Each allocation was traced with probability 1/sample_period (its free
  // whenever it happens); 0 or 1: every allocation and free was traced.
  // Stored after the exe path, only when > 1 or when the time resolution
  // is stored (docs/trace-format.md 4).
  uint32_t sample_period = 0;
  // Every timestamp of the file's chunks is a multiple of it (they were
  // rounded down by `crossfree record`, docs/trace-format.md 7.1); 0 or 1:
  // nanoseconds, as the tracer stamps them. Stored after sample_period, in
  // version 5, only when > 1.
  uint32_t time_resolution_ns = 0;
};

inline constexpr uint32_t kHeaderFlagForkChild = 1u << 0;
inline constexpr uint32_t kHeaderFlagMallocHook = 1u << 1;  // events via MallocHook
// Recording starts closed and kTagWindow records open and close it.
inline constexpr uint32_t kHeaderFlagWindowed = 1u << 2;
// The writer ends a clean run with a totals chunk (kTagTotals): a file with
// this flag and no such chunk had no clean end (SIGKILL, a crash, or a
// thread still busy at the exit flush), and its last buffers are lost.
inline constexpr uint32_t kHeaderFlagEndsWithTotals = 1u << 3;

}  // namespace crossfree::format
