// SPDX-License-Identifier: Apache-2.0
// `crossfree dump FILE [--summary]`: prints a trace file record by record
// and validates all of it (header, every chunk checksum, every record).
//
// Exit status: 0 when the whole file is valid (an incomplete one too: the
// summary's "complete: no" line and a warning on stderr say what is
// missing: dropped events, no clean end; a process killed under record
// whose buffers record took is complete, and its line says how it ended);
// 2 for bad input (not a trace,
// unsupported version, corrupt chunk or record) with one line on stderr that
// names the file and the byte offset. A truncated file (the traced process
// died mid-write) prints every complete chunk and the summary, warns on
// stderr and also exits 2, so scripts notice that the trace is incomplete.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include "format/names.h"
#include "analyzer/model/central.h"
#include "analyzer/cli/commands.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer::cli {
namespace {

using format::AllocFn;
using format::Chunk;
using format::Event;
using format::EventOp;
using format::FreeFn;
using format::Module;
using format::ReadResult;
using format::TraceReader;


std::string FlagNames(uint32_t flags) {
  std::string names;
  auto add = [&](uint32_t bit, const char* name) {
    if (!(flags & bit)) return;
    if (!names.empty()) names += ",";
    names += name;
    flags &= ~bit;
  };
  add(format::kHeaderFlagForkChild, "fork-child");
  add(format::kHeaderFlagMallocHook, "malloc-hook");
  add(format::kHeaderFlagWindowed, "windowed");
  if (flags != 0) add(flags, fmt::format("0x{:x}", flags).c_str());
  return names.empty() ? "none" : names;
}

std::string Utc(uint64_t realtime_ns) {
  time_t seconds = static_cast<time_t>(realtime_ns / 1000000000);
  struct tm tm;
  if (gmtime_r(&seconds, &tm) == nullptr) return "?";
  char buf[32];
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:09}Z", buf, realtime_ns % 1000000000);
}

// Printable form of a name or path: control bytes and quotes escaped.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

struct Totals {
  uint64_t chunks = 0;
  uint64_t events = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t realloc_events = 0;
  uint64_t stack_defs = 0;
  uint64_t thread_names = 0;
  uint64_t modules = 0;
  uint64_t thread_exits = 0;
  uint64_t central[format::kMaxCentralOp + 1] = {};  // by CentralOp
  uint64_t windows = 0;                              // window records
  uint64_t counted_allocs = 0;                       // from counts records
  uint64_t counted_frees = 0;
  uint64_t samples_dropped = 0;
  uint64_t cpu_records = 0;
  uint64_t unknown_cpu_events = 0;
  std::set<uint32_t> cpus;             // CPUs events ran on
  uint64_t compressed_chunks = 0;
  uint64_t compressed_bytes = 0;       // on disk: chunk headers and payloads
  uint64_t compressed_raw_bytes = 0;   // the same chunks, plain
  uint64_t plain_chunk_bytes = 0;
  std::set<uint32_t> threads;
  std::set<uint32_t> stacks_defined;
  std::set<uint32_t> stacks_used;
  bool saw_totals = false;       // the tracer's totals chunk (a clean end)
  format::RecordLosses losses;   // what record could not write (losses record)
  std::optional<format::RecordTakenEnd> taken_end;  // record ended it itself (end-taken record)
};

// Counts everything and, unless summary_only, prints each record. Output for
// one chunk goes to a buffer written in one piece.
class DumpVisitor : public format::RecordVisitor {
 public:
  DumpVisitor(Totals* totals, bool print) : totals_(totals), print_(print) {}

  fmt::memory_buffer& out() { return out_; }

  void OnEvent(const Event& e) override {
    ++totals_->events;
    if (e.op == EventOp::kAlloc) {
      ++totals_->allocs;
    } else {
      ++totals_->frees;
    }
    if (e.from_realloc) ++totals_->realloc_events;
    if (e.stack_id != format::kNoStack) totals_->stacks_used.insert(e.stack_id);
    if (e.cpu == format::kUnknownCpu) {
      ++totals_->unknown_cpu_events;
    } else {
      totals_->cpus.insert(e.cpu);
    }
    if (!print_) return;
    bool alloc = e.op == EventOp::kAlloc;
    fmt::format_to(std::back_inserter(out_),
                   "  {:<5} {:<14} tid {} ts {} addr {:#x} size {} stack {}{}{}\n",
                   alloc ? "alloc" : "free", alloc ? format::AllocFnName(e.fn) : format::FreeFnName(e.fn), e.tid,
                   e.timestamp_ns, e.address, e.size, e.stack_id,
                   e.cpu == format::kUnknownCpu ? "" : fmt::format(" cpu {}", e.cpu),
                   e.from_realloc ? " (realloc)" : "");
  }

  void OnCpu(uint32_t /*tid*/, uint32_t cpu) override {
    ++totals_->cpu_records;
    if (!print_) return;
    if (cpu == format::kUnknownCpu) {
      fmt::format_to(std::back_inserter(out_), "  cpu unknown\n");
    } else {
      fmt::format_to(std::back_inserter(out_), "  cpu {}\n", cpu);
    }
  }

  void OnStack(uint32_t stack_id, std::span<const uint64_t> frames) override {
    ++totals_->stack_defs;
    totals_->stacks_defined.insert(stack_id);
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  stack {} depth {}:", stack_id, frames.size());
    for (uint64_t f : frames) fmt::format_to(std::back_inserter(out_), " {:#x}", f);
    out_.push_back('\n');
  }

  void OnThreadName(uint32_t tid, uint64_t ts_ns, std::string_view name) override {
    ++totals_->thread_names;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  thread-name tid {} ts {} {}\n", tid, ts_ns,
                   Quoted(name));
  }

  void OnModule(uint32_t tid, const Module& m) override {
    ++totals_->modules;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  module tid {} ts {} bias {:#x} path {} build-id ",
                   tid, m.timestamp_ns, m.load_bias, Quoted(m.path));
    if (m.build_id.empty()) fmt::format_to(std::back_inserter(out_), "none");
    for (uint8_t b : m.build_id) fmt::format_to(std::back_inserter(out_), "{:02x}", b);
    fmt::format_to(std::back_inserter(out_), " segments {}", m.segments.size());
    for (const auto& s : m.segments) {
      fmt::format_to(std::back_inserter(out_), " {:#x}+{:#x}", s.start, s.size);
    }
    out_.push_back('\n');
  }

  void OnThreadExit(uint32_t tid, uint64_t ts_ns) override {
    ++totals_->thread_exits;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  thread-exit tid {} ts {}\n", tid, ts_ns);
  }

  void OnWindow(uint32_t tid, uint64_t ts_ns, format::WindowState state,
                format::WindowCause cause) override {
    ++totals_->windows;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  window {} tid {} ts {} ({})\n",
                   format::WindowStateName(state), tid, ts_ns, format::WindowCauseName(cause));
  }

  void OnCounts(uint32_t tid, const format::ThreadCounts& c) override {
    totals_->counted_allocs += c.allocs;
    totals_->counted_frees += c.frees;
    totals_->samples_dropped += c.samples_dropped;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  counts tid {} allocs {} frees {} dropped {}\n",
                   tid, c.allocs, c.frees, c.samples_dropped);
  }

  void OnTakenEnd(const format::RecordTakenEnd& e) override {
    totals_->taken_end = e;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  end-taken {} buffers-sealed {} events {}\n",
                   e.state == format::TakenEndState::kRunning ? "running" : "ended",
                   e.chunks_sealed, e.events);
  }

  void OnLosses(const format::RecordLosses& l) override {
    totals_->losses.events_dropped += l.events_dropped;
    totals_->losses.chunks_dropped += l.chunks_dropped;
    totals_->losses.chunks_damaged += l.chunks_damaged;
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_),
                   "  losses events-dropped {} chunks-dropped {} chunks-damaged {}\n",
                   l.events_dropped, l.chunks_dropped, l.chunks_damaged);
  }

  void OnCentral(const format::CentralEvent& c) override {
    ++totals_->central[static_cast<uint8_t>(c.op)];
    if (c.stack_id != format::kNoStack) totals_->stacks_used.insert(c.stack_id);
    if (!print_) return;
    fmt::format_to(std::back_inserter(out_), "  central {} tid {} ts {} class {} count {} stack {}{}\n",
                   format::CentralOpName(c.op), c.tid, c.timestamp_ns, c.size_class, c.count, c.stack_id,
                   c.by_tracer ? " (tracer)" : "");
  }

 private:
  Totals* totals_;
  bool print_;
  fmt::memory_buffer out_;
};

void PrintHeader(const TraceReader& reader) {
  const format::FileHeader& h = reader.header();
  const format::HeaderFields& f = h.fields;
  fmt::print("trace {}\n", reader.name());
  fmt::print("  format version {}, header {} bytes, file {} bytes\n", h.version, h.size_bytes,
             reader.file_size());
  fmt::print("  pid {} ppid {} exe {}\n", f.pid, f.ppid, Quoted(h.exe_path));
  fmt::print("  clock {} unwinder {} max-depth {} flags {}\n", format::ClockName(f.clock),
             format::UnwinderName(f.unwinder), f.max_depth, FlagNames(f.flags));
  fmt::print("  start monotonic {} ns, realtime {} ns ({})\n", f.start_monotonic_ns,
             f.start_realtime_ns, Utc(f.start_realtime_ns));
  fmt::print("  time resolution {} ns\n", std::max<uint32_t>(f.time_resolution_ns, 1));
  if (f.sample_period > 1) {
    fmt::print("  sampled: each allocation with probability 1/{}\n", f.sample_period);
  }
}

// How the trace ended (format::EndOf).
format::TraceEnd EndOf(const TraceReader& reader, const Totals& t) {
  const bool promised = (reader.header().fields.flags & format::kHeaderFlagEndsWithTotals) != 0;
  return format::EndOf(promised, t.saw_totals, t.taken_end ? &*t.taken_end : nullptr);
}

// Whether every event the process recorded is in the file, and if not, why
// not; empty when the writer made no promise (a trace written before the
// totals chunk existed, or by a test). A process killed under record, its
// open buffers taken, lost nothing it recorded: complete, and the summary
// says how it ended.
std::string Incompleteness(const TraceReader& reader, const Totals& t, bool truncated) {
  std::string why;
  if (t.losses.any()) why = format::LossesText(t.losses);
  if (truncated) why += (why.empty() ? "" : "; ") + std::string("truncated");
  if (format::EventsMissingAtEnd(EndOf(reader, t))) {
    why += (why.empty() ? "" : "; ") +
           format::NoCleanEndText(t.taken_end ? &*t.taken_end : nullptr);
  }
  return why;
}

void PrintSummary(const TraceReader& reader, const Totals& t, bool truncated) {
  uint64_t undefined = 0;
  for (uint32_t id : t.stacks_used) undefined += t.stacks_defined.count(id) == 0;
  fmt::print("summary\n");
  fmt::print("  chunks: {}\n", t.chunks);
  fmt::print("  events: {}\n", t.events);
  fmt::print("  allocs: {}\n", t.allocs);
  fmt::print("  frees: {}\n", t.frees);
  fmt::print("  realloc events: {}\n", t.realloc_events);
  fmt::print("  threads: {}\n", t.threads.size());
  fmt::print("  thread names: {}\n", t.thread_names);
  fmt::print("  thread exits: {}\n", t.thread_exits);
  fmt::print("  stacks: {}\n", t.stacks_defined.size());
  fmt::print("  stacks referenced but not defined: {}\n", undefined);
  fmt::print("  modules: {}\n", t.modules);
  uint64_t central = 0;
  for (uint64_t n : t.central) central += n;
  if (central > 0) {  // only in traces that have them: older outputs stay as they were
    fmt::print("  central transfers: {} (fetch {}, release {}, insert_range {}, remove_range {})\n",
               central, t.central[0], t.central[1], t.central[2], t.central[3]);
  }
  if (t.windows > 0) fmt::print("  window records: {}\n", t.windows);
  if (t.cpu_records > 0) {  // version 2 traces from a tracer that could read the CPU
    fmt::print("  cpu records: {} ({} CPUs; {} events on an unknown CPU)\n", t.cpu_records,
               t.cpus.size(), t.unknown_cpu_events);
  }
  if (t.compressed_chunks > 0) {
    fmt::print("  compressed chunks: {} of {}: {} bytes on disk for {} bytes plain ({:.2f}x)\n",
               t.compressed_chunks, t.chunks, t.compressed_bytes, t.compressed_raw_bytes,
               static_cast<double>(t.compressed_raw_bytes) /
                   static_cast<double>(t.compressed_bytes));
    // The whole file as plain chunks: what the tracer alone would have written.
    const uint64_t plain_file = reader.header().size_bytes + t.plain_chunk_bytes +
                                t.compressed_raw_bytes;
    fmt::print("  plain, the file would be: {} bytes ({:.2f}x)\n", plain_file,
               static_cast<double>(plain_file) / static_cast<double>(reader.file_size()));
  }
  if (reader.header().fields.sample_period > 1) {
    fmt::print("  counted (all, sampled or not): {} allocs, {} frees, {} samples dropped\n",
               t.counted_allocs, t.counted_frees, t.samples_dropped);
  }
  if (t.events > 0) {
    fmt::print("  bytes/event: {:.2f}\n",
               static_cast<double>(reader.file_size()) / static_cast<double>(t.events));
  } else {
    fmt::print("  bytes/event: -\n");
  }
  const std::string why = Incompleteness(reader, t, truncated);
  if (!why.empty()) {
    fmt::print("  complete: no: {}\n", why);
  } else if (EndOf(reader, t) == format::TraceEnd::kTakenWhole) {
    fmt::print("  complete: yes ({})\n", format::NoCleanEndText(&*t.taken_end));
  } else if ((reader.header().fields.flags & format::kHeaderFlagEndsWithTotals) != 0) {
    fmt::print("  complete: yes\n");
  }
}

int RunDump(const std::string& path, bool summary_only) {
  std::string error;
  std::unique_ptr<TraceReader> reader = TraceReader::Open(path, &error);
  if (reader == nullptr) {
    fmt::print(stderr, "crossfree dump: {}\n", error);
    return kExitUsage;
  }
  PrintHeader(*reader);
  Totals totals;
  DumpVisitor visitor(&totals, !summary_only);
  Chunk chunk;
  ReadResult result;
  std::string failure;
  bool truncated = false;
  while ((result = reader->NextChunk(&chunk)) == ReadResult::kChunk) {
    ++totals.chunks;
    // Losses and end-taken chunks are record's, under the process's pid:
    // no thread's.
    format::RecordLosses losses;
    format::RecordTakenEnd taken;
    if (!format::ParseLossesRecord(chunk, &losses) && !format::ParseTakenEndRecord(chunk, &taken)) {
      totals.threads.insert(chunk.tid);
    }
    if (format::IsTotalsChunk(chunk)) totals.saw_totals = true;
    auto& out = visitor.out();
    out.clear();
    if (!summary_only) {
      fmt::format_to(std::back_inserter(out),
                     "chunk @{} tid {} seq {} base-ts {} events {} payload {} bytes{}\n",
                     chunk.file_offset, chunk.tid, chunk.sequence, chunk.base_timestamp_ns,
                     chunk.event_count, chunk.payload.size(),
                     chunk.compressed ? fmt::format(" compressed from {} bytes", chunk.raw_bytes)
                                      : "");
    }
    if (chunk.compressed) {
      ++totals.compressed_chunks;
      totals.compressed_bytes += format::kChunkHeaderBytes + chunk.payload_bytes;
      totals.compressed_raw_bytes += format::kChunkHeaderBytes + chunk.raw_bytes;
    } else {
      totals.plain_chunk_bytes += format::kChunkHeaderBytes + chunk.payload_bytes;
    }
    bool ok = format::DecodeChunk(chunk, visitor, &error);
    fwrite(out.data(), 1, out.size(), stdout);
    if (!ok) {
      failure = error;
      break;
    }
  }
  if (result == ReadResult::kTruncated) {
    truncated = true;
    failure = reader->error();
  } else if (result == ReadResult::kCorrupt) {
    failure = reader->error();
  }
  PrintSummary(*reader, totals, truncated);
  fflush(stdout);
  if (failure.empty()) {
    // Valid, but said on stderr too, so that a script sees it.
    if (std::string why = Incompleteness(*reader, totals, false); !why.empty()) {
      fmt::print(stderr, "crossfree dump: warning: {}: the trace is incomplete: {}\n", path, why);
    }
    return kExitOk;
  }
  if (truncated) {
    fmt::print(stderr,
               "crossfree dump: warning: {}: {}; the {} complete chunks before it are shown\n",
               path, failure, totals.chunks);
  } else {
    fmt::print(stderr, "crossfree dump: {}: {}\n", path, failure);
  }
  return kExitUsage;
}

}  // namespace

void RegisterDumpCommand(CLI::App& app, int* exit_code) {
  struct Options {
    std::string path;
    bool summary = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "dump",
      "Print and validate a trace file: header, every chunk and record, summary. Exit 0 if "
      "the whole file is valid, 2 if it is corrupt, truncated or not a trace.");
  sub->add_option("file", options->path, "Trace file written by crossfree record")->required();
  sub->add_flag("--summary", options->summary, "Print only the header and the summary");
  sub->callback([options, exit_code] { *exit_code = RunDump(options->path, options->summary); });
}

}  // namespace crossfree::analyzer::cli
