// SPDX-License-Identifier: Apache-2.0
// crossfree trace format: a time resolution for a chunk (docs/trace-format.md
// 7.1, version 5). Rounds every timestamp of a sealed plain chunk down to a
// multiple of R, keeping every other byte of its records, so that the
// chunk compresses smaller. Used outside the traced process (`crossfree
// record`, before it compresses a chunk; tests); never linked into the
// tracer, whose hook path stamps nanoseconds as before.
//
// Threading: a ChunkRounder is for one thread at a time; distinct objects
// may be used on distinct threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace crossfree::format {

// floor(t / resolution_ns) * resolution_ns; t when resolution_ns is 0 or 1.
inline uint64_t RoundTimeDown(uint64_t t, uint32_t resolution_ns) {
  return resolution_ns > 1 ? t - t % resolution_ns : t;
}

class ChunkRounder {
 public:
  // resolution_ns: 1 to kMaxTimeResolutionNs (trace_format.h); 1 copies.
  explicit ChunkRounder(uint32_t resolution_ns) : resolution_(resolution_ns) {}

  // Writes to out (replacing its contents) the sealed plain chunk
  // [chunk, chunk + bytes) with its base timestamp and the timestamp of
  // every record (events, both halves of a realloc, thread names, modules,
  // thread exits, central and window records) rounded down to a multiple
  // of the resolution: the ts varints re-encoded as deltas of the rounded
  // times, every other byte as it was, and the chunk's length word and
  // checksum made anew. A thread's order of events is kept (rounding down
  // is monotonic). Returns false with *error (one line) when the input is
  // not one whole, checksum-valid plain chunk whose records parse (an
  // unknown tag, a record cut short), or when the rounded chunk would
  // pass kMaxChunkBytes; out is then unspecified. The input is checked,
  // never trusted: it may come from another process.
  bool Round(const uint8_t* chunk, size_t bytes, std::vector<uint8_t>& out,
             std::string* error) const;

  uint32_t resolution_ns() const { return resolution_; }

 private:
  uint32_t resolution_;
};

}  // namespace crossfree::format
