// SPDX-License-Identifier: Apache-2.0
// Analyzer: the traces of one analysis run, one file per traced process.
// Opening a trace validates its header and indexes its chunks by thread (a
// thread's chunks are in file order, which is its time order); the chunks are
// decoded later, through the event stream (event_stream.h), which also fills
// in the metadata (stacks, thread names, modules) found in them.
//
// Built and read by one thread; the first pass over the chunks fills the
// metadata from its workers under metadata_mutex.
#pragma once

#include "analyzer/pairing/stream_index.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/names.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer {

// How far a run has got, for a progress line: bytes of trace read while
// indexing, and payload bytes decoded by the first pass. Written by the
// analysis (any thread), read by whoever shows it.
struct ReadProgress {
  std::atomic<uint64_t> total_bytes{0};
  std::atomic<uint64_t> indexed_bytes{0};
  std::atomic<uint64_t> total_payload{0};
  std::atomic<uint64_t> decoded_payload{0};
};

// All chunks of one thread id, in file order. The chunks' payloads are not
// kept: TraceReader::LoadPayload reads them when they are decoded.
struct ThreadStream {
  uint32_t tid = 0;
  std::vector<format::Chunk> chunks;
};

struct ProcessTrace {
  std::string path;
  std::unique_ptr<format::TraceReader> reader;  // reads the chunks' payloads
  format::FileHeader header;
  std::vector<ThreadStream> streams;  // indexed by StreamIndex (stream_index.h)
  const ThreadStream& stream(StreamIndex i) const { return streams[i.value]; }
  // The threads that recorded an allocation or a free: the "threads" that
  // reports count. Not every stream: the tracer's own control thread, under
  // `record -p`, writes the window's records and the totals and nothing
  // else. From the chunk headers' event counts (a claim, used only to
  // count).
  size_t ThreadsWithEvents() const {
    size_t n = 0;
    for (const ThreadStream& s : streams) {
      for (const format::Chunk& c : s.chunks) {
        if (c.event_count != 0) {
          ++n;
          break;
        }
      }
    }
    return n;
  }
  uint64_t chunk_count = 0;
  uint64_t payload_bytes = 0;
  bool truncated = false;           // last chunk incomplete (warning issued)
  // How the trace ended (format::EndOf): other than kClean when the writer
  // promised a totals chunk at a clean end (kHeaderFlagEndsWithTotals) and
  // the file has none (warning issued): the process was killed or crashed,
  // and unless record took its buffers the events in its last ones are
  // lost.
  format::TraceEnd end = format::TraceEnd::kClean;
  bool clean_end() const { return end == format::TraceEnd::kClean; }
  // What `crossfree record` could not write (its losses chunk, trace
  // format 6.9); any() makes the trace incomplete (warning issued).
  format::RecordLosses losses;
  // When the end is not clean and `crossfree record` ended the trace itself
  // (its end-taken chunk, trace format 6.9): how, and that nothing
  // recorded before that end is lost.
  std::optional<format::RecordTakenEnd> taken_end;
  uint64_t truncated_offset = 0;

  // Filled by the first pass over the chunks (event_stream.h).
  std::mutex metadata_mutex;
  std::unordered_map<uint32_t, std::vector<uint64_t>> stacks;  // id -> return addresses
  std::unordered_map<uint32_t, std::string> thread_names;      // tid -> last name set
  std::vector<format::Module> modules;                         // by load time
  // tid -> (timestamp, name) of the latest name seen so far; resolved into
  // thread_names by FinishMetadata, which also sets metadata_complete.
  std::unordered_map<uint32_t, std::pair<uint64_t, std::string>> name_log;
  std::atomic<bool> metadata_complete{false};
  // The main thread's first name, (timestamp, name): recorded by the
  // tracer's constructor before the program runs, so, in a trace that is
  // not a fork child's, the name the kernel gave the process at exec (the
  // basename of the path it was started as, a symlink's name included).
  std::pair<uint64_t, std::string> main_first_name{~uint64_t{0}, {}};
  std::string exec_name;  // main_first_name's name; empty in a fork child's trace
  ReadProgress* progress = nullptr;  // optional, owned by the caller
  // tid -> the entry function of a thread that has no name of its own
  // (roles.h, AssignEntryRoles).
  std::unordered_map<uint32_t, std::string> entry_roles;
  // Whether any chunk holds tcmalloc central free-list records, so the
  // central pass (central.cc) decodes only traces that have them.
  std::atomic<bool> has_central{false};

  uint32_t pid() const { return header.fields.pid; }
};

class TraceSet {
 public:
  // Opens and indexes one trace. A truncated trace is kept (up to its last
  // complete chunk) and one warning is appended. Returns false with *error
  // set to one line naming the file (and the offset for corruption).
  bool Add(const std::string& path, std::string* error);
  // Same over bytes the caller keeps alive (tests).
  bool AddBytes(std::span<const uint8_t> bytes, const std::string& name, std::string* error);

  // Reports reading and decoding into *progress from now on (optional; it
  // must outlive the set's analysis).
  void set_progress(ReadProgress* progress) { progress_ = progress; }

  std::vector<std::unique_ptr<ProcessTrace>>& traces() { return traces_; }
  const std::vector<std::unique_ptr<ProcessTrace>>& traces() const { return traces_; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  bool Index(std::unique_ptr<format::TraceReader> reader, const std::string& name,
             std::string* error);

  std::vector<std::unique_ptr<ProcessTrace>> traces_;
  std::vector<std::string> warnings_;
  ReadProgress* progress_ = nullptr;
};

}  // namespace crossfree::analyzer
