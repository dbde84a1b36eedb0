// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the trace reader and decoder. Built only with clang
// and -DCROSSFREE_FUZZ=ON (tests/format/CMakeLists.txt). The input is used
// twice: as a whole file, and as one chunk payload behind a valid header and
// a resealed chunk header, so the fuzzer reaches the decoder past the
// checksum.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/trace_reader.h"
#include "tests/format/test_util.h"

namespace {

using namespace crossfree::format;

class Sink : public RecordVisitor {
 public:
  void OnEvent(const Event& e) override { sum_ += e.address + e.size + e.stack_id; }
  void OnStack(uint32_t id, std::span<const uint64_t> frames) override {
    sum_ += id + frames.size();
  }
  uint64_t sum_ = 0;
};

void ReadAll(std::span<const uint8_t> bytes) {
  std::string error;
  auto reader = TraceReader::FromBytes(bytes, "fuzz", &error);
  if (reader == nullptr) return;
  Chunk chunk;
  Sink sink;
  while (reader->NextChunk(&chunk) == ReadResult::kChunk) {
    if (!DecodeChunk(chunk, sink, &error) && error.empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReadAll(std::span<const uint8_t>(data, size));
  if (size > kMaxChunkBytes - kChunkHeaderBytes) return 0;
  std::vector<uint8_t> payload(data, data + size);
  uint32_t events = size >= 1 ? data[0] : 0;
  std::vector<uint8_t> file = testing::TraceBuilder().bytes();
  std::vector<uint8_t> chunk = testing::MakeChunk(1, 0, 0, events, payload);
  file.insert(file.end(), chunk.begin(), chunk.end());
  ReadAll(file);
  return 0;
}
