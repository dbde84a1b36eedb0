// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the analysis' pairing pass over a fuzzed trace. The
// input is indexed as a whole file and, like trace_reader_fuzz, also as one
// resealed chunk payload behind a valid header, so the pass sees decodable
// chunks of arbitrary events. Built by tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analyzer/pairing/pairing.h"
#include "analyzer/pairing/trace_set.h"
#include "tests/format/test_util.h"

namespace {

using namespace crossfree;

void PairAll(std::span<const uint8_t> bytes) {
  analyzer::TraceSet set;
  std::string error;
  if (!set.AddBytes(bytes, "fuzz", &error)) return;
  for (auto& trace : set.traces()) {
    for (int jobs : {1, 2}) {
      analyzer::PairingOptions options;
      options.jobs = jobs;
      options.max_buffered_events = 64;  // reach the wait-for-the-others path
      analyzer::PairingResult result;
      if (!analyzer::PairTrace(*trace, options, &result, &error)) break;
      const auto& c = result.counts;
      // Every free is paired, unknown or double; nothing else.
      if (c.paired + c.unknown_frees + c.double_frees > c.frees) __builtin_trap();
      if (c.cross_thread > c.paired) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PairAll(std::span<const uint8_t>(data, size));
  using namespace crossfree::format;
  if (size > kMaxChunkBytes - kChunkHeaderBytes) return 0;
  std::vector<uint8_t> payload(data, data + size);
  uint32_t events = size >= 1 ? data[0] : 0;
  std::vector<uint8_t> file = testing::TraceBuilder().bytes();
  for (uint32_t tid : {1u, 2u}) {  // the same events on two threads: cross-thread pairs
    std::vector<uint8_t> chunk = testing::MakeChunk(tid, 0, 0, events, payload);
    file.insert(file.end(), chunk.begin(), chunk.end());
  }
  PairAll(file);
  return 0;
}
