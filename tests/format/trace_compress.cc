// SPDX-License-Identifier: Apache-2.0
// crossfree-trace-compress IN OUT [LEVEL [LAYOUT]]: rewrites a trace with
// every plain chunk compressed by format::ChunkCompressor (docs/trace-format.md
// 5.1; LAYOUT 3, the default, 5.3, or 1 or 2 to compare), as
// `crossfree record` does with the chunks it receives. For the format tests
// (a compressed trace read back by `crossfree dump` and `report`) and for
// the size and reading-speed figures of docs/results/trace-size.md. The
// header is copied with its version set to the current one.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "format/chunk_codec.h"
#include "format/crc32c.h"
#include "format/trace_reader.h"
#include "format/wire.h"

using namespace crossfree::format;

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5 ||
      (argc == 5 && (std::atoi(argv[4]) < wire::kLayoutLanes ||
                     std::atoi(argv[4]) > wire::kLayoutPlanes))) {
    std::fprintf(stderr, "usage: crossfree-trace-compress IN OUT [LEVEL [LAYOUT (1, 2 or 3)]]\n");
    return 2;
  }
  const int level = argc >= 4 ? std::atoi(argv[3]) : kDefaultCompressionLevel;
  ChunkCompressor compressor(
      level, argc == 5 ? static_cast<uint8_t>(std::atoi(argv[4])) : wire::kLayoutPlanes);
  std::string error;
  auto reader = TraceReader::Open(argv[1], &error);
  if (reader == nullptr) {
    std::fprintf(stderr, "crossfree-trace-compress: %s\n", error.c_str());
    return 2;
  }
  FILE* out = std::fopen(argv[2], "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "crossfree-trace-compress: cannot create %s\n", argv[2]);
    return 2;
  }
  // The header as it is on disk.
  std::vector<uint8_t> header(reader->header().size_bytes);
  FILE* in = std::fopen(argv[1], "rb");
  if (in == nullptr || std::fread(header.data(), 1, header.size(), in) != header.size()) {
    std::fprintf(stderr, "crossfree-trace-compress: cannot read %s\n", argv[1]);
    return 2;
  }
  std::fclose(in);
  // At least version 4 (layout 3 chunks); a rounded trace keeps its 5.
  wire::Store32(header.data() + wire::kHdrVersion,
                std::max(wire::Load32(header.data() + wire::kHdrVersion), kNanosecondFormatVersion));
  wire::Store32(header.data() + header.size() - 4, Crc32c(header.data(), header.size() - 4));
  std::fwrite(header.data(), 1, header.size(), out);

  Chunk chunk;
  ReadResult r;
  std::vector<uint8_t> plain, packed;
  uint64_t in_bytes = header.size(), out_bytes = header.size(), events = 0, chunks = 0;
  while ((r = reader->NextChunk(&chunk)) == ReadResult::kChunk) {
    // The whole chunk again: header and payload, as the tracer wrote it.
    plain.resize(kChunkHeaderBytes + chunk.payload_bytes);
    Chunk loaded;
    if (!reader->LoadPayload(chunk, &packed, &loaded, &error)) {
      std::fprintf(stderr, "crossfree-trace-compress: %s\n", error.c_str());
      return 2;
    }
    std::copy(loaded.payload.data() - kChunkHeaderBytes,
              loaded.payload.data() + loaded.payload.size(), plain.begin());
    const std::vector<uint8_t>* write = &plain;
    std::vector<uint8_t> compressed;
    if (!chunk.compressed) {
      if (!compressor.Compress(plain.data(), plain.size(), compressed, &error)) {
        std::fprintf(stderr, "crossfree-trace-compress: chunk at offset %llu: %s\n",
                     static_cast<unsigned long long>(chunk.file_offset), error.c_str());
        return 2;
      }
      write = &compressed;
    }
    std::fwrite(write->data(), 1, write->size(), out);
    in_bytes += plain.size();
    out_bytes += write->size();
    events += chunk.event_count;
    ++chunks;
  }
  if (std::fclose(out) != 0) {
    std::fprintf(stderr, "crossfree-trace-compress: cannot write %s\n", argv[2]);
    return 2;
  }
  std::printf("%llu chunks, %llu events: %llu -> %llu bytes (%.2fx), %.3f -> %.3f bytes/event\n",
              static_cast<unsigned long long>(chunks), static_cast<unsigned long long>(events),
              static_cast<unsigned long long>(in_bytes),
              static_cast<unsigned long long>(out_bytes),
              out_bytes ? static_cast<double>(in_bytes) / static_cast<double>(out_bytes) : 0.0,
              events ? static_cast<double>(in_bytes) / static_cast<double>(events) : 0.0,
              events ? static_cast<double>(out_bytes) / static_cast<double>(events) : 0.0);
  if (r != ReadResult::kEnd) {
    std::fprintf(stderr, "crossfree-trace-compress: %s: %s\n", argv[1], reader->error().c_str());
    return 2;
  }
  return 0;
}
