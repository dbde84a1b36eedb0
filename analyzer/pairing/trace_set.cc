// SPDX-License-Identifier: Apache-2.0
// Analyzer: opening and indexing traces.
#include "analyzer/pairing/trace_set.h"

#include <fmt/core.h>

#include "format/names.h"
#include "format/trace_reader.h"

#include <unordered_map>

namespace crossfree::analyzer {

bool TraceSet::Add(const std::string& path, std::string* error) {
  auto reader = format::TraceReader::Open(path, error);
  if (!reader) return false;
  return Index(std::move(reader), path, error);
}

bool TraceSet::AddBytes(std::span<const uint8_t> bytes, const std::string& name,
                        std::string* error) {
  auto reader = format::TraceReader::FromBytes(bytes, name, error);
  if (!reader) return false;
  return Index(std::move(reader), name, error);
}

bool TraceSet::Index(std::unique_ptr<format::TraceReader> reader, const std::string& name,
                     std::string* error) {
  auto trace = std::make_unique<ProcessTrace>();
  trace->path = name;
  trace->progress = progress_;
  if (progress_) progress_->total_bytes += reader->file_size();
  trace->header = reader->header();
  std::unordered_map<uint32_t, size_t> stream_of_tid;
  format::Chunk chunk;
  bool saw_totals = false;
  for (;;) {
    format::ReadResult r = reader->NextChunk(&chunk);
    if (r == format::ReadResult::kEnd) break;
    if (r == format::ReadResult::kTruncated) {
      trace->truncated = true;
      trace->truncated_offset = reader->error_offset();
      warnings_.push_back(fmt::format(
          "{}: truncated at offset {} (incomplete last chunk); analyzing the {} complete chunks "
          "before it",
          name, reader->error_offset(), trace->chunk_count));
      break;
    }
    if (r == format::ReadResult::kCorrupt) {
      *error = reader->error().empty()
                   ? fmt::format("{}: corrupt trace at offset {}", name, reader->error_offset())
                   : reader->error();
      // The reader's message should name the file; make sure it does.
      if (error->find(name) == std::string::npos) *error = fmt::format("{}: {}", name, *error);
      return false;
    }
    if (format::IsTotalsChunk(chunk)) saw_totals = true;
    // What record could not write: noted for the trace, kept out of the
    // threads (its tid is the process's, its sequence none of theirs).
    if (format::RecordLosses losses; format::ParseLossesRecord(chunk, &losses)) {
      trace->losses.events_dropped += losses.events_dropped;
      trace->losses.chunks_dropped += losses.chunks_dropped;
      trace->losses.chunks_damaged += losses.chunks_damaged;
      ++trace->chunk_count;
      continue;
    }
    if (format::RecordTakenEnd end; format::ParseTakenEndRecord(chunk, &end)) {
      trace->taken_end = end;
      ++trace->chunk_count;
      continue;
    }
    auto [it, inserted] = stream_of_tid.try_emplace(chunk.tid, trace->streams.size());
    if (inserted) trace->streams.push_back(ThreadStream{chunk.tid, {}});
    // Only the chunk's place is kept; its payload is read again when a pass
    // decodes it (event_stream.h), so memory does not follow the file size.
    chunk.payload = {};
    trace->streams[it->second].chunks.push_back(chunk);
    ++trace->chunk_count;
    trace->payload_bytes += chunk.payload_bytes;
    if (progress_) {
      progress_->indexed_bytes += format::kChunkHeaderBytes + chunk.payload_bytes;
      progress_->total_payload += chunk.payload_bytes;
    }
  }
  const format::RecordTakenEnd* taken = trace->taken_end ? &*trace->taken_end : nullptr;
  const format::TraceEnd end = format::EndOf(
      (trace->header.fields.flags & format::kHeaderFlagEndsWithTotals) != 0, saw_totals, taken);
  trace->end = end;
  if (end != format::TraceEnd::kClean) {
    // Blocks 'live at exit' of a process killed with everything taken were
    // live when it died; otherwise some may have been freed later.
    warnings_.push_back(fmt::format("{}: {}{}", name, format::NoCleanEndText(taken),
                                    end == format::TraceEnd::kTakenWhole
                                        ? ""
                                        : "; blocks 'live at exit' may have been "
                                          "freed and are not leaks"));
  } else {
    trace->taken_end.reset();  // a clean end after all: the tracer's totals say so
  }
  if (trace->losses.any()) {
    warnings_.push_back(fmt::format("{}: incomplete: {}", name, LossesText(trace->losses)));
  }
  trace->reader = std::move(reader);
  traces_.push_back(std::move(trace));
  return true;
}

}  // namespace crossfree::analyzer
