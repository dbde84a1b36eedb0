// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, reader side: validates a trace file and decodes its
// chunks. Shared by the analyzer, `crossfree dump` and the tests; the only
// place that knows about format versions. Not used inside the tracer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <sys/types.h>
#include <vector>

#include "format/trace_format.h"

namespace crossfree::format {

struct FileHeader {
  uint32_t version = 0;
  HeaderFields fields;
  std::string exe_path;
  size_t size_bytes = 0;  // bytes of the header on disk; chunks follow
};

enum class EventOp : uint8_t { kAlloc, kFree };

// One allocation or free. A realloc record is delivered as two events: the
// free of the old block (stamped before the real call) and the allocation of
// the new one (stamped after), both with from_realloc set.
struct Event {
  EventOp op;
  uint8_t fn;            // AllocFn or FreeFn value, by op
  bool from_realloc;
  uint32_t tid;
  uint64_t timestamp_ns;
  uint64_t address;
  uint64_t size;         // requested size; for a free, 0 unless sized delete
  uint32_t stack_id;     // kNoStack when none
  // The CPU the thread ran on (read with the timestamp: docs/trace-format.md
  // 6.8); kUnknownCpu when unknown, as in every version 1 trace. In the
  // struct's former tail padding.
  uint32_t cpu = kUnknownCpu;
};
static_assert(sizeof(Event) == 40, "Event is copied per event: keep it 40 bytes");

// A tcmalloc central free-list transfer (record kTagCentral).
struct CentralEvent {
  uint32_t tid;
  uint64_t timestamp_ns;
  CentralOp op;
  uint32_t size_class;  // tcmalloc size class (cl)
  uint64_t count;       // objects moved; 0 when unknown
  uint32_t stack_id;    // kNoStack when none
  bool by_tracer;       // caused by the tracer's own bookkeeping (flags bit 0)
};

struct Module {
  uint64_t timestamp_ns = 0;
  uint64_t load_bias = 0;
  std::string path;
  std::vector<uint8_t> build_id;
  std::vector<ModuleSegment> segments;
};

// Receives the records of a chunk in order. Default implementations ignore
// the record, so a visitor overrides only what it needs.
class RecordVisitor {
 public:
  virtual ~RecordVisitor() = default;
  virtual void OnEvent(const Event& /*event*/) {}
  // Consecutive events of the chunk (no other record between them, nor
  // inside the span), in order; the decoder delivers every event this way,
  // in spans of up to a few dozen. The default hands each to OnEvent. A
  // visitor whose per-event work is small overrides this instead, and pays
  // one virtual call per span rather than per event.
  virtual void OnEvents(std::span<const Event> events) {
    for (const Event& e : events) OnEvent(e);
  }
  virtual void OnStack(uint32_t /*stack_id*/, std::span<const uint64_t> /*frames*/) {}
  virtual void OnThreadName(uint32_t /*tid*/, uint64_t /*ts_ns*/, std::string_view /*name*/) {}
  virtual void OnModule(uint32_t /*tid*/, const Module& /*module*/) {}
  virtual void OnThreadExit(uint32_t /*tid*/, uint64_t /*ts_ns*/) {}
  // A cpu record (version 2): thread tid's following events in this chunk
  // ran on cpu (kUnknownCpu: unknown). Every event also carries its cpu, so
  // only a visitor that counts the records themselves needs this.
  virtual void OnCpu(uint32_t /*tid*/, uint32_t /*cpu*/) {}
  virtual void OnCentral(const CentralEvent& /*event*/) {}
  // A recording window opened or closed (kTagWindow), on thread tid.
  virtual void OnWindow(uint32_t /*tid*/, uint64_t /*ts_ns*/, WindowState /*state*/,
                        WindowCause /*cause*/) {}
  // Thread tid's allocation/free counts since its previous counts record
  // (kTagCounts; sampled traces).
  virtual void OnCounts(uint32_t /*tid*/, const ThreadCounts& /*counts*/) {}
  // What `crossfree record` could not write into this trace (kTagLosses).
  virtual void OnLosses(const RecordLosses& /*losses*/) {}
  // How `crossfree record` ended this trace itself (kTagTakenEnd).
  virtual void OnTakenEnd(const RecordTakenEnd& /*end*/) {}
};

// A complete, checksum-verified chunk. Where payload points depends on the
// reader: into the caller's bytes for FromBytes() (valid as long as they
// are); into the reader's own buffer for Open() (valid until the next
// NextChunk() call). To decode a chunk later, keep the Chunk and call
// TraceReader::LoadPayload(), which reads it again.
struct Chunk {
  uint64_t file_offset = 0;  // offset of the chunk header in the file
  uint32_t tid = 0;
  uint32_t sequence = 0;     // per-thread chunk number, from 0
  uint64_t base_timestamp_ns = 0;
  uint32_t event_count = 0;  // allocation/free events (a realloc counts 2); a claim, never
                             // a size to allocate by
  uint32_t payload_bytes = 0;  // on disk, after the header
  uint32_t crc = 0;          // the chunk's checksum, as verified
  // A compressed chunk (docs/trace-format.md 5.1): payload is its lanes
  // header and zstd frame, and raw_bytes the length of the plain record
  // stream it holds (checked: at most kMaxRawPayloadBytes). For a plain
  // chunk raw_bytes == payload_bytes.
  bool compressed = false;
  uint32_t raw_bytes = 0;
  std::span<const uint8_t> payload;
};

enum class ReadResult {
  kChunk,      // *chunk filled
  kEnd,        // clean end of file
  kTruncated,  // the file ends inside a chunk: every earlier chunk was good
  kCorrupt,    // bad chunk magic, length or checksum at error_offset()
};

// Reads the totals chunk from the last kTotalsChunkBytes of a trace file
// (EncodeTotalsChunk). False unless those bytes are exactly one valid
// totals chunk: then the file may still be whole, but its writer's counts
// are not known and the file must be decoded to count its events.
bool ParseTotalsChunk(std::span<const uint8_t> tail, TraceTotals* totals);
// Whether a chunk NextChunk returned is the writer's totals chunk (a plain
// chunk of no events whose payload opens with kTagTotals): the mark of a
// clean end (kHeaderFlagEndsWithTotals). Its body is not checked here.
bool IsTotalsChunk(const Chunk& chunk);

// Reads a losses chunk (EncodeLossesChunk): a whole chunk of
// kLossesChunkBytes, as a file's last bytes or as NextChunk returned it
// (header and payload). False unless it is exactly one valid losses chunk.
bool ParseLossesChunk(std::span<const uint8_t> bytes, RecordLosses* losses);
// The same from a chunk NextChunk returned (a plain chunk whose payload is
// exactly the losses record).
bool ParseLossesRecord(const Chunk& chunk, RecordLosses* losses);
// The losses record's three counts from the kLossesBodyBytes - 4 bytes
// after its magic (trace-format.md 6.9): the one reading of them, for
// ParseLossesChunk, ParseLossesRecord and the record decoder.
void LoadLossesCounts(const uint8_t* p, RecordLosses* losses);
// The end-taken record (kTagTakenEnd) from a chunk NextChunk returned (a
// plain chunk whose payload is exactly that record). False unless it is
// one, its state known.
bool ParseTakenEndRecord(const Chunk& chunk, RecordTakenEnd* end);
// Its fields from the kTakenEndBodyBytes - 4 bytes after the magic: false
// for an unknown state. The one reading of them, for ParseTakenEndRecord
// and the record decoder.
bool LoadTakenEnd(const uint8_t* p, RecordTakenEnd* end);

// Reads one trace file. Open() validates the header; NextChunk() walks the
// chunks in file order. A file is read with pread() in chunk-sized pieces,
// never mapped: memory stays bounded by the largest chunk whatever the file
// size, and a file that shrinks or changes while it is read is an error
// ("file changed while being read"), not a SIGBUS. NextChunk() is for one
// thread; LoadPayload() may be called from several threads at once, and
// decoding of distinct chunks too (DecodeChunk is a free function).

class TraceReader {
 public:
  // Returns null and sets *error to one line naming the file and the problem
  // (not a trace, unsupported version, truncated header, I/O error).
  static std::unique_ptr<TraceReader> Open(const std::string& path, std::string* error);
  // Same over bytes the caller keeps alive (tests, fuzzers).
  static std::unique_ptr<TraceReader> FromBytes(std::span<const uint8_t> bytes,
                                                std::string name, std::string* error);
  ~TraceReader();

  // Owns a file descriptor and buffers: not copyable.
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const FileHeader& header() const { return header_; }
  const std::string& name() const { return name_; }
  uint64_t file_size() const { return size_; }

  ReadResult NextChunk(Chunk* chunk);

  // Makes chunk (from an earlier NextChunk() of this reader) decodable:
  // *loaded is the chunk with its payload in *buffer (for FromBytes(), in
  // the caller's bytes; *buffer is not touched). Fails with *error naming
  // the file and offset when the bytes on disk are no longer those that
  // were verified. Thread-safe.
  bool LoadPayload(const Chunk& chunk, std::vector<uint8_t>* buffer, Chunk* loaded,
                   std::string* error) const;
  // After kTruncated or kCorrupt: where and what.
  uint64_t error_offset() const { return error_offset_; }
  const std::string& error() const { return error_; }

 private:
  TraceReader() = default;
  // Reads [offset, offset + n) of the trace into out: from bytes_, or with
  // pread from fd_. Returns the bytes read (fewer at the end of the file, or
  // when the file shrank); -1 on an I/O error (errno set).
  ssize_t ReadAt(uint64_t offset, size_t n, uint8_t* out) const;
  std::span<const uint8_t> View(uint64_t offset, size_t n, std::vector<uint8_t>* buffer,
                                bool* io_error) const;

  std::string name_;
  std::span<const uint8_t> bytes_;  // FromBytes()
  int fd_ = -1;                     // Open()
  uint64_t size_ = 0;               // file size at Open()
  std::vector<uint8_t> buffer_;     // NextChunk()'s current chunk, for fd_ readers
  // (tid << 32 | sequence) -> (checksum, offset) of the first chunk seen with
  // it: a byte-identical repeat is a duplicated chunk (it would count twice).
  // A thread id the kernel reused starts again at sequence 0 with other bytes.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint64_t>> seen_;
  FileHeader header_;
  uint64_t offset_ = 0;
  uint64_t error_offset_ = 0;
  std::string error_;
  ReadResult error_result_ = ReadResult::kEnd;  // repeated once error_ is set
};

// Decodes a verified chunk's records into the visitor. Returns false and sets
// *error (with the byte offset inside the file) if a record is malformed;
// records before it have been delivered. A compressed chunk is decompressed
// first into a buffer of the calling thread's (one zstd context and one
// buffer per thread, reused; at most one chunk's raw bytes), so any thread
// may call this, and the reading workers decompress in parallel.
bool DecodeChunk(const Chunk& chunk, RecordVisitor& visitor, std::string* error);

}  // namespace crossfree::format
