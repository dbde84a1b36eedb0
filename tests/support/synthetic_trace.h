// SPDX-License-Identifier: Apache-2.0
// Test helper: builds trace files in memory with the real writer
// (format::ChunkWriter + EncodeFileHeader), one chunk buffer per thread, so
// tests control exactly which events land in which chunk and in what file
// order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "format/trace_writer.h"

namespace crossfree::analyzer::testing {

class SyntheticTrace {
 public:
  explicit SyntheticTrace(uint32_t pid, uint32_t ppid = 0, std::string exe = "/bin/synthetic");
  // With these header fields (pid, sample_period, flags...): a sampled trace
  // (sample_period > 1) keeps room for a counts record in every chunk, as
  // the tracer does. Unset unwinder/max_depth/start times are filled in as
  // by the other constructor.
  explicit SyntheticTrace(format::HeaderFields fields, std::string exe = "/bin/synthetic");

  void Alloc(uint32_t tid, uint64_t ts, uint64_t address, uint64_t size, uint32_t stack = 0,
             format::AllocFn fn = format::AllocFn::kMalloc);
  void Free(uint32_t tid, uint64_t ts, uint64_t address, uint32_t stack = 0, uint64_t size = 0,
            format::FreeFn fn = format::FreeFn::kFree);
  void Realloc(uint32_t tid, uint64_t ts_free, uint64_t ts_alloc, uint64_t old_address,
               uint64_t new_address, uint64_t size, uint32_t stack = 0);
  void Stack(uint32_t tid, uint32_t id, const std::vector<uint64_t>& frames);
  void ThreadName(uint32_t tid, uint64_t ts, const std::string& name);
  void ThreadExit(uint32_t tid, uint64_t ts);
  void Module(uint32_t tid, const std::string& path, uint64_t load_bias, uint64_t start,
              uint64_t size);
  // A recording window opened or closed (kTagWindow), by thread tid at ts.
  // Its chunk is written at once, as the tracer does.
  void Window(uint32_t tid, uint64_t ts, format::WindowState state,
              format::WindowCause cause = format::WindowCause::kSignal);
  // tid's allocation/free counts since its previous counts record
  // (kTagCounts, sampled traces): the last record of its current chunk,
  // which is then written.
  void Counts(uint32_t tid, const format::ThreadCounts& counts);

  // Seals tid's current chunk (if it has records) and appends it to the file.
  void Flush(uint32_t tid);
  // Flushes every thread (in tid order) and returns the file bytes.
  const std::vector<uint8_t>& Finish();
  const std::vector<uint8_t>& bytes() const { return file_; }
  // Writes Finish() to path.
  void WriteTo(const std::string& path);
  // From now on, sealed chunks go to sink instead of memory (large traces).
  void StreamTo(std::FILE* sink);

 private:
  struct Thread {
    std::vector<uint8_t> buffer;
    format::ChunkWriter writer;
    uint32_t sequence = 0;
    bool begun = false;
    uint64_t last_ts = 0;
    explicit Thread(bool reserve_counts);
  };
  Thread& Get(uint32_t tid);
  template <typename Fn>
  void Append(uint32_t tid, uint64_t ts, Fn&& fn);

  std::vector<uint8_t> file_;
  std::FILE* sink_ = nullptr;
  std::map<uint32_t, Thread> threads_;
  bool reserve_counts_ = false;
};

// Tick k of the hand-offs the tie tests build (pairing_test, simulate's
// ties_test; docs/design.md, "Ties"), every event at ts, as a trace
// recorded with --time-resolution has them: producer p allocates block X
// (stack 1), consumer c frees it (stack 2), p allocates X again (the
// allocator hands the freed block back), c allocates a temporary Y of its
// own (stack 3) and frees it (y_free_stack), then frees X again. X is one
// of 8 addresses, Y one of 5, by k. p's chunk ends inside the tick when
// k % 37 == 5, c's when k % 41 == 7, so some ties span chunks.
void AppendTiedHandOffs(SyntheticTrace& t, uint32_t p, uint32_t c, uint64_t k, uint64_t ts,
                        uint32_t y_free_stack);

}  // namespace crossfree::analyzer::testing
