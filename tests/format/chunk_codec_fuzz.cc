// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: ChunkCompressor over chunks built from the fuzzer's
// bytes, in every layout, at level 1 or 3. The first byte picks the level
// and the chunk's capacity; then each event takes a control byte (kind,
// function, and which fields repeat the previous event's) and, for each
// field that does not repeat, 1 to 8 bytes of value. The chunk must read
// back exactly, and Compress must return (libFuzzer's -timeout catches a
// spin, the record hang of issue 40). Aborts on any difference.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/format/random_chunks.h"

namespace {

using namespace crossfree::format;

class Bytes {
 public:
  Bytes(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  bool empty() const { return p_ == end_; }
  uint8_t Byte() { return p_ < end_ ? *p_++ : 0; }
  uint64_t Value(unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n && p_ < end_; ++i) v |= uint64_t{*p_++} << (8 * i);
    return v;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const uint8_t first = in.Byte();
  const int level = first & 1 ? 3 : 1;
  const size_t capacity = ChunkWriter::kMinChunkCapacity << ((first >> 1) % 5);
  testing::TraceBuilder b(capacity);
  ChunkWriter& w = b.Begin(static_cast<uint32_t>(in.Value(4)), 0, in.Value(6));
  uint64_t ts = 0, address = 0x7f0000001000, size_value = 48;
  uint32_t stack = 1, cpu = 0;
  static const AllocFn allocs[] = {AllocFn::kMalloc, AllocFn::kPosixMemalign, AllocFn::kNew,
                                   AllocFn::kCalloc};
  static const FreeFn frees[] = {FreeFn::kFree, FreeFn::kDelete};
  bool ok = true;
  while (ok && !in.empty()) {
    const uint8_t c = in.Byte();
    const unsigned width = 1 + (c >> 5);  // 1 to 8 bytes per new value
    if (c & 0x04) address = in.Value(width);
    if (c & 0x08) size_value = in.Value(width);
    if (c & 0x10) stack = static_cast<uint32_t>(in.Value(width < 4 ? width : 4));
    ts += c & 0x02 ? in.Value(width) : 1;
    if ((c & 0x1c) == 0x1c) cpu = in.Byte();
    ok = c & 1 ? w.AppendFree(frees[(c >> 2) & 1], ts, address, size_value & 0xffff, stack, cpu)
               : w.AppendAlloc(allocs[(c >> 2) & 3], ts, address, size_value, stack, cpu);
  }
  b.Flush();
  const std::vector<uint8_t>& plain = b.bytes();
  for (uint8_t layout : {wire::kLayoutLanes, wire::kLayoutRefs, wire::kLayoutPlanes}) {
    ChunkCompressor compressor(level, layout);
    const std::string failure = testing::CompressRoundTrip(plain, compressor, nullptr);
    if (!failure.empty()) {
      std::fprintf(stderr, "layout %d level %d: %s\n", layout, level, failure.c_str());
      std::abort();
    }
  }
  return 0;
}
