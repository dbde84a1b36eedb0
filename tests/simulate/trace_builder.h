// SPDX-License-Identifier: Apache-2.0
// Simulate tests: builds a trace file in memory with the real writer
// (format::EncodeFileHeader + format::ChunkWriter). Events are appended per
// thread; each thread's events go into its own chunks, chunks are written in
// thread order, so the replay must merge them by timestamp.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/trace_writer.h"

namespace crossfree::simulate::testing {

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid);

  void Alloc(uint32_t tid, uint64_t ts, uint64_t address, uint64_t size, uint32_t stack = 0,
             format::AllocFn fn = format::AllocFn::kMalloc);
  void Free(uint32_t tid, uint64_t ts, uint64_t address, uint32_t stack = 0);
  void Realloc(uint32_t tid, uint64_t ts_free, uint64_t ts_alloc, uint64_t old_address,
               uint64_t new_address, uint64_t size, uint32_t stack = 0);
  void Stack(uint32_t tid, uint32_t id, const std::vector<uint64_t>& frames);
  void ThreadName(uint32_t tid, uint64_t ts, const std::string& name);
  void ThreadExit(uint32_t tid, uint64_t ts);

  // Seals every thread's chunk and returns the file bytes.
  const std::vector<uint8_t>& Finish();

 private:
  struct Thread {
    std::vector<uint8_t> buffer;
    format::ChunkWriter writer;
    uint32_t sequence = 0;
    bool begun = false;
    Thread();
  };
  template <typename Fn>
  void Append(uint32_t tid, uint64_t ts, Fn&& fn);
  void Flush(uint32_t tid, Thread& t);

  std::vector<uint8_t> file_;
  std::map<uint32_t, Thread> threads_;
};

}  // namespace crossfree::simulate::testing
