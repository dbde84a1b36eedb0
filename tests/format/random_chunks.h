// SPDX-License-Identifier: Apache-2.0
// Plain chunks of every shape the compressor can be handed, built with the
// real ChunkWriter from a seed: random bytes in every field (nothing to
// compress), constant fields (everything to compress), one kind of event
// only (the other kind's streams empty), no events at all, and any chunk
// size up to the largest a reader accepts. Used by the compressor's
// property test (compressor_property_test.cc) and its fuzz target
// (tests/fuzz/chunk_codec_fuzz.cc), which check that every chunk comes
// back from ChunkCompressor exactly, in bounded time.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "format/chunk_codec.h"
#include "format/trace_reader.h"
#include "format/trace_writer.h"
#include "tests/format/test_util.h"

namespace crossfree::format::testing {

enum class ChunkShape : uint8_t {
  kRandom,      // every field random: times, addresses, sizes, stacks, CPUs
  kConstant,    // one event repeated
  kMixed,       // each event random or repeated, by coin
  kAllocsOnly,  // the free streams stay empty
  kFreesOnly,   // the allocation streams stay empty
  kEmpty,       // a thread name and no event
  kShapes,
};

inline const char* ShapeName(ChunkShape s) {
  static const char* const names[] = {"random", "constant", "mixed", "allocs only", "frees only",
                                      "empty"};
  return names[static_cast<size_t>(s)];
}

// One trace (header and a single chunk) of the given shape with up to
// max_events events, the chunk's buffer capacity bytes (at least
// ChunkWriter::kMinChunkCapacity; the writer stops at kMaxChunkBytes).
inline std::vector<uint8_t> RandomChunkTrace(ChunkShape shape, uint64_t seed, size_t capacity,
                                             size_t max_events) {
  std::mt19937_64 rng(seed);
  TraceBuilder b(capacity);
  ChunkWriter& w = b.Begin(static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()), rng() >> 8);
  if (shape == ChunkShape::kEmpty) {
    w.AppendThreadName(rng() >> 8, "t", 1);
    b.Flush();
    return b.bytes();
  }
  static const AllocFn allocs[] = {AllocFn::kMalloc, AllocFn::kCalloc, AllocFn::kPosixMemalign,
                                   AllocFn::kNew, AllocFn::kNewArray, AllocFn::kAlignedAlloc};
  static const FreeFn frees[] = {FreeFn::kFree, FreeFn::kDelete, FreeFn::kDeleteArray};
  uint64_t ts = rng() >> 16;
  for (size_t i = 0; i < max_events; ++i) {
    const bool random = shape != ChunkShape::kConstant && (shape != ChunkShape::kMixed || rng() & 1);
    const uint64_t address = random ? rng() : 0x7f0000001000;
    const uint64_t size = random ? rng() >> (rng() % 64) : 48;
    const uint32_t stack = random ? static_cast<uint32_t>(rng()) : 7;
    const uint32_t cpu = random ? static_cast<uint32_t>(rng() % 300) : 1;
    ts += random ? rng() >> (16 + rng() % 48) : 100;
    bool alloc = shape == ChunkShape::kAllocsOnly ||
                 (shape != ChunkShape::kFreesOnly && (random ? (rng() & 1) != 0 : i % 2 == 0));
    const bool ok =
        alloc ? w.AppendAlloc(allocs[rng() % std::size(allocs)], ts, address, size, stack, cpu)
              : w.AppendFree(frees[rng() % std::size(frees)], ts, address, random ? size : 0,
                             stack, cpu);
    if (!ok) break;  // the chunk is full
  }
  b.Flush();
  return b.bytes();
}

// The events a reader decodes from a whole trace, and whether it read to a
// clean end; *error says why not.
inline bool ReadEvents(std::span<const uint8_t> bytes, std::vector<Event>* events,
                       std::string* error) {
  auto reader = TraceReader::FromBytes(bytes, "t", error);
  if (reader == nullptr) return false;
  Collector c;
  Chunk chunk;
  ReadResult r;
  while ((r = reader->NextChunk(&chunk)) == ReadResult::kChunk) {
    if (!DecodeChunk(chunk, c, error)) return false;
  }
  if (r != ReadResult::kEnd) {
    *error = reader->error();
    return false;
  }
  *events = std::move(c.events);
  return true;
}

// Compresses the single chunk of a RandomChunkTrace with compressor and
// checks that the result reads back as the plain chunk's events. Returns
// an empty string, or what went wrong.
inline std::string CompressRoundTrip(const std::vector<uint8_t>& plain,
                                     ChunkCompressor& compressor, size_t* compressed_bytes) {
  std::string error;
  auto reader = TraceReader::FromBytes(plain, "plain", &error);
  if (reader == nullptr) return "plain trace unreadable: " + error;
  const size_t header = reader->header().size_bytes;
  std::vector<uint8_t> out;
  if (!compressor.Compress(plain.data() + header, plain.size() - header, out, &error)) {
    return "Compress refused a valid chunk: " + error;
  }
  if (compressed_bytes != nullptr) *compressed_bytes = out.size();
  std::vector<uint8_t> file(plain.begin(), plain.begin() + header);
  file.insert(file.end(), out.begin(), out.end());
  std::vector<Event> want, got;
  if (!ReadEvents(plain, &want, &error)) return "plain chunk unreadable: " + error;
  if (!ReadEvents(file, &got, &error)) return "compressed chunk unreadable: " + error;
  if (got.size() != want.size()) {
    return std::to_string(got.size()) + " events back of " + std::to_string(want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!SameEvent(got[i], want[i])) return "event " + std::to_string(i) + " differs";
  }
  return {};
}

}  // namespace crossfree::format::testing
