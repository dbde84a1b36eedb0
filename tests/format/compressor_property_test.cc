// SPDX-License-Identifier: Apache-2.0
// ChunkCompressor on every shape of input, in every layout and at the
// levels record uses: the chunk always reads back as it was, and
// compressing always ends. Before the fix of its output bound, a chunk of
// a few dozen events with random fields (what a short-lived server thread
// seals) made Compress wait forever for output room (issue 40).
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "tests/format/random_chunks.h"

namespace crossfree::format {
namespace {

using testing::ChunkShape;

// Runs fn on a thread of its own and waits at most seconds for it. A
// compressor that spins never returns and cannot be stopped from outside,
// so the test process ends at once with the case named: a hang becomes a
// failure, not a CI timeout.
template <typename Fn>
void Bounded(double seconds, const std::string& what, Fn fn) {
  std::packaged_task<void()> task(std::move(fn));
  std::future<void> done = task.get_future();
  std::thread worker(std::move(task));
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not end within %.0f s\n", what.c_str(), seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  worker.join();
  done.get();
}

const uint8_t kLayouts[] = {wire::kLayoutLanes, wire::kLayoutRefs, wire::kLayoutPlanes};

void CheckAllLayouts(const std::vector<uint8_t>& plain, const std::string& what) {
  for (int level : {1, 3}) {
    for (uint8_t layout : kLayouts) {
      ChunkCompressor compressor(level, layout);
      std::string failure;
      const std::string name =
          what + ", layout " + std::to_string(layout) + ", level " + std::to_string(level);
      Bounded(20, name, [&] { failure = testing::CompressRoundTrip(plain, compressor, nullptr); });
      INFO(name);
      CHECK(failure == "");
    }
  }
}

TEST_CASE("a small chunk of incompressible events compresses and ends (the record hang)",
          "[format][compressor]") {
  // 1 to 48 events with random fields: each of layout 3's 24 streams a
  // few incompressible bytes, so the frame needs a block header per stream
  // beyond ZSTD_compressBound's margin for the whole payload. (Before the
  // fix, this case spun in Compress: for 7 mixed events in a 128 KiB
  // buffer, as the next case found first.)
  for (size_t events = 1; events <= 48; ++events) {
    for (ChunkShape shape : {ChunkShape::kRandom, ChunkShape::kMixed}) {
      const auto plain = testing::RandomChunkTrace(shape, events * 7919, 128 * 1024, events);
      CheckAllLayouts(plain, std::to_string(events) + " " + testing::ShapeName(shape) +
                                 " events");
    }
  }
}

TEST_CASE("every shape of chunk, of every size, comes back exactly from every layout",
          "[format][compressor]") {
  const size_t capacities[] = {ChunkWriter::kMinChunkCapacity, 64 * 1024, 128 * 1024,
                               1024 * 1024};
  for (uint8_t s = 0; s < static_cast<uint8_t>(ChunkShape::kShapes); ++s) {
    const auto shape = static_cast<ChunkShape>(s);
    for (size_t capacity : capacities) {
      for (size_t events : {size_t{1}, size_t{7}, size_t{200}, size_t{1} << 30}) {
        const uint64_t seed = s * 1000003u + capacity + events;
        const auto plain = testing::RandomChunkTrace(shape, seed, capacity, events);
        CheckAllLayouts(plain, std::string(testing::ShapeName(shape)) + ", capacity " +
                                   std::to_string(capacity) + ", up to " +
                                   std::to_string(events) + " events");
      }
    }
  }
}

TEST_CASE("the largest chunk a reader accepts compresses in every layout", "[format][compressor]") {
  for (ChunkShape shape : {ChunkShape::kRandom, ChunkShape::kMixed}) {
    const auto plain = testing::RandomChunkTrace(shape, 99, kMaxChunkBytes, size_t{1} << 30);
    REQUIRE(plain.size() > kMaxChunkBytes - 4096);
    for (uint8_t layout : kLayouts) {
      ChunkCompressor compressor(1, layout);
      std::string failure;
      size_t bytes = 0;
      Bounded(60, "largest chunk", [&] {
        failure = testing::CompressRoundTrip(plain, compressor, &bytes);
      });
      INFO(testing::ShapeName(shape) << ", layout " << int{layout});
      CHECK(failure == "");
      CHECK(bytes <= plain.size());
    }
  }
}

TEST_CASE("a chunk that compression does not shrink is kept plain, byte for byte",
          "[format][compressor]") {
  std::string error;
  // A chunk of one thread name: the compressed chunk's own header (raw
  // length, layout, stream lengths) outweighs anything zstd saves. One
  // event repeated: compressed, by far.
  for (ChunkShape shape : {ChunkShape::kEmpty, ChunkShape::kConstant}) {
    const auto plain = testing::RandomChunkTrace(shape, 5, 64 * 1024, size_t{1} << 30);
    auto reader = TraceReader::FromBytes(plain, "plain", &error);
    REQUIRE(reader != nullptr);
    const size_t header = reader->header().size_bytes;
    for (uint8_t layout : kLayouts) {
      ChunkCompressor compressor(1, layout);
      std::vector<uint8_t> out;
      REQUIRE(compressor.Compress(plain.data() + header, plain.size() - header, out, &error));
      const bool compressed = wire::Load32(out.data()) == kCompressedChunkMagic;
      INFO(testing::ShapeName(shape) << ", layout " << int{layout});
      if (shape == ChunkShape::kEmpty) {
        CHECK_FALSE(compressed);
        CHECK(std::equal(out.begin(), out.end(), plain.begin() + header, plain.end()));
      } else {
        CHECK(compressed);
        CHECK(out.size() * 10 < plain.size() - header);
      }
    }
  }
}

}  // namespace
}  // namespace crossfree::format
