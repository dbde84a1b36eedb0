// SPDX-License-Identifier: Apache-2.0
// The trace files of a recorded run and their counts (recorded_traces.h).
#include "analyzer/record/recorded_traces.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <span>

#include "format/names.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer::record {
namespace {

class CountingVisitor : public format::RecordVisitor {
 public:
  explicit CountingVisitor(TraceCounts* counts) : counts_(counts) {}
  void OnEvent(const format::Event& event) override {
    ++counts_->events;
    if (event.op == format::EventOp::kAlloc) {
      ++counts_->allocs;
    } else {
      ++counts_->frees;
    }
  }
  void OnTakenEnd(const format::RecordTakenEnd& end) override { taken_end = end; }

  std::optional<format::RecordTakenEnd> taken_end;  // record's end-taken record

 private:
  TraceCounts* counts_;
};

// The counts the tracer wrote at exit in the file's last chunk
// (format::ParseTotalsChunk), or in the one before a losses chunk that
// record wrote last (trace format 6.9), read with one pread of the file's
// last bytes; none when the file does not end so (killed, still being
// written, an older tracer, a thread that wrote after them).
std::optional<format::TraceTotals> ReadTotals(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  std::optional<format::TraceTotals> result;
  struct stat st;
  uint8_t tail[format::kTotalsChunkBytes + format::kLossesChunkBytes];
  const off_t want = fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
                         ? std::min<off_t>(sizeof(tail), st.st_size)
                         : 0;
  if (want >= static_cast<off_t>(format::kTotalsChunkBytes) &&
      pread(fd, tail, static_cast<size_t>(want), st.st_size - want) == want) {
    const std::span<const uint8_t> bytes(tail, static_cast<size_t>(want));
    format::TraceTotals totals;
    format::RecordLosses losses;
    if (format::ParseTotalsChunk(bytes.last(format::kTotalsChunkBytes), &totals)) {
      result = totals;
    } else if (bytes.size() == sizeof(tail) &&
               format::ParseLossesChunk(bytes.last(format::kLossesChunkBytes), &losses) &&
               format::ParseTotalsChunk(bytes.first(format::kTotalsChunkBytes), &totals)) {
      result = totals;
    }
  }
  close(fd);
  return result;
}

}  // namespace

bool EndsWithTotals(const std::string& path) { return ReadTotals(path).has_value(); }

std::optional<TraceCounts> CountTrace(const std::string& path, bool header_only) {
  std::string error;
  auto reader = format::TraceReader::Open(path, &error);
  if (reader == nullptr) return std::nullopt;
  TraceCounts counts;
  counts.pid = reader->header().fields.pid;
  counts.ppid = reader->header().fields.ppid;
  counts.fork_child = (reader->header().fields.flags & format::kHeaderFlagForkChild) != 0;
  counts.sample_period = reader->header().fields.sample_period;
  if (header_only) return counts;
  if (auto totals = ReadTotals(path)) {
    counts.events = totals->events;
    counts.allocs = totals->allocs;
    counts.frees = totals->frees;
    counts.thread_count = totals->threads;
    return counts;
  }
  CountingVisitor visitor(&counts);
  format::Chunk chunk;
  bool saw_totals = false;
  for (;;) {
    format::ReadResult r = reader->NextChunk(&chunk);
    if (r == format::ReadResult::kEnd) break;
    if (r != format::ReadResult::kChunk) {
      counts.complete = false;
      counts.problem = reader->error();
      break;
    }
    // A thread is a tid that wrote a chunk (as `crossfree dump` counts).
    counts.threads.insert(chunk.tid);
    saw_totals = saw_totals || format::IsTotalsChunk(chunk);
    if (!format::DecodeChunk(chunk, visitor, &error)) {
      counts.complete = false;
      counts.problem = error;
      break;
    }
  }
  counts.thread_count = counts.threads.size();
  // The tracer promised its totals at a clean end and wrote none: unless
  // record took the buffers of a process that had ended (its end-taken
  // record says so), events are missing at the end (trace format 6.9).
  const bool promised = (reader->header().fields.flags & format::kHeaderFlagEndsWithTotals) != 0;
  const format::RecordTakenEnd* taken = visitor.taken_end ? &*visitor.taken_end : nullptr;
  if (counts.complete && format::EventsMissingAtEnd(format::EndOf(promised, saw_totals, taken))) {
    counts.complete = false;
    counts.problem = format::NoCleanEndText(taken);
  }
  return counts;
}

namespace {

class WindowVisitor : public format::RecordVisitor {
 public:
  explicit WindowVisitor(format::WindowCause cause) : cause_(cause) {}
  void OnWindow(uint32_t, uint64_t, format::WindowState, format::WindowCause cause) override {
    records += cause == cause_ ? 1 : 0;
  }
  uint64_t records = 0;

 private:
  format::WindowCause cause_;
};

}  // namespace

uint64_t CountWindowRecords(const std::string& path, format::WindowCause cause) {
  std::string error;
  auto reader = format::TraceReader::Open(path, &error);
  if (reader == nullptr) return 0;
  WindowVisitor visitor(cause);
  format::Chunk chunk;
  while (reader->NextChunk(&chunk) == format::ReadResult::kChunk &&
         format::DecodeChunk(chunk, visitor, &error)) {
  }
  return visitor.records;
}

namespace {

// The paths of the regular files in dir whose names `keep` accepts,
// modified at or after `since`.
template <typename Keep>
std::vector<std::string> ListFiles(const std::string& dir, time_t since, Keep keep) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (!keep(name)) continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_mtime < since) continue;
    out.push_back(path);
  }
  closedir(d);
  return out;
}

}  // namespace

std::vector<std::string> ListCandidates(const std::string& dir, const std::string& prefix,
                                        const std::string& suffix, time_t since) {
  return ListFiles(dir, since, [&](const std::string& name) {
    if (name.size() <= prefix.size() + suffix.size()) return false;
    if (name.compare(0, prefix.size(), prefix) != 0) return false;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
    std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    return middle.find_first_not_of("0123456789.") == std::string::npos;
  });
}

std::vector<std::string> ListTraceImages(const std::string& dir, time_t since) {
  return ListFiles(dir, since, [](const std::string& name) {
    return name.rfind("crossfree.", 0) == 0 && name.find(".trace.") != std::string::npos;
  });
}

std::vector<std::string> StaleTraces(const std::string& dir, const std::string& base) {
  std::vector<std::string> out;
  for (const std::string& path : ListCandidates(dir, base + ".", "", 0)) {
    std::string error;
    if (format::TraceReader::Open(path, &error) != nullptr) out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace crossfree::analyzer::record
