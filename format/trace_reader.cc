// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, reader side: header validation and chunk walking
// with checksums (a chunk's records are decoded in record_decoder.cc). The
// one place that knows about versions.
#include "format/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "format/chunk_codec.h"
#include "format/chunk_refs.h"
#include "format/crc32c.h"
#include "format/trace_writer.h"
#include "format/wire.h"

namespace crossfree::format {

namespace {

// The body after the magic of a chunk holding one fixed-width extension
// record and nothing else (EncodeTotalsChunk, EncodeLossesChunk): null
// unless bytes is exactly such a chunk of `tag` and `magic`, its length
// word and checksum right.
const uint8_t* FixedChunkBody(std::span<const uint8_t> bytes, size_t total, uint8_t tag,
                              uint32_t magic) {
  if (bytes.size() != total) return nullptr;
  const uint8_t* b = bytes.data();
  const auto payload = static_cast<uint32_t>(total - kChunkHeaderBytes);
  if (wire::Load32(b + wire::kChkMagic) != kChunkMagic ||
      wire::Load32(b + wire::kChkLength) != wire::PackLength(payload) ||
      wire::Load32(b + wire::kChkEvents) != 0 ||
      Crc32c(b + wire::kChkCrcStart, total - wire::kChkCrcStart) !=
          wire::Load32(b + wire::kChkCrc)) {
    return nullptr;
  }
  const uint8_t* p = b + kChunkHeaderBytes;
  if (p[0] != tag || p[1] != payload - 2 || wire::Load32(p + 2) != magic) return nullptr;
  return p + 6;
}

}  // namespace

void LoadLossesCounts(const uint8_t* p, RecordLosses* losses) {
  losses->events_dropped = wire::Load64(p);
  losses->chunks_dropped = wire::Load64(p + 8);
  losses->chunks_damaged = wire::Load64(p + 16);
}

bool ParseTotalsChunk(std::span<const uint8_t> tail, TraceTotals* totals) {
  const uint8_t* p = FixedChunkBody(tail, kTotalsChunkBytes, kTagTotals, kTotalsMagic);
  if (p == nullptr) return false;
  totals->threads = wire::Load32(p);
  totals->events = wire::Load64(p + 4);
  totals->allocs = wire::Load64(p + 12);
  totals->frees = wire::Load64(p + 20);
  totals->chunks = wire::Load64(p + 28);
  return totals->allocs + totals->frees == totals->events;
}

bool ParseLossesChunk(std::span<const uint8_t> bytes, RecordLosses* losses) {
  const uint8_t* p = FixedChunkBody(bytes, kLossesChunkBytes, kTagLosses, kLossesMagic);
  if (p == nullptr) return false;
  LoadLossesCounts(p, losses);
  return true;
}

bool IsTotalsChunk(const Chunk& chunk) {
  return chunk.event_count == 0 && !chunk.compressed && !chunk.payload.empty() &&
         chunk.payload[0] == kTagTotals;
}

bool ParseLossesRecord(const Chunk& chunk, RecordLosses* losses) {
  // The checksum was verified when the chunk was read; the record is the
  // whole payload.
  if (chunk.compressed || chunk.event_count != 0 ||
      chunk.payload.size() != kLossesChunkBytes - kChunkHeaderBytes) {
    return false;
  }
  const uint8_t* p = chunk.payload.data();
  if (p[0] != kTagLosses || p[1] != kLossesBodyBytes || wire::Load32(p + 2) != kLossesMagic) {
    return false;
  }
  LoadLossesCounts(p + 6, losses);
  return true;
}

bool LoadTakenEnd(const uint8_t* p, RecordTakenEnd* end) {
  const uint32_t state = wire::Load32(p);
  if (state > static_cast<uint32_t>(TakenEndState::kRunning)) return false;
  end->state = static_cast<TakenEndState>(state);
  end->chunks_sealed = wire::Load64(p + 4);
  end->events = wire::Load64(p + 12);
  return true;
}

bool ParseTakenEndRecord(const Chunk& chunk, RecordTakenEnd* end) {
  // As ParseLossesRecord: the checksum was verified when the chunk was read.
  if (chunk.compressed || chunk.event_count != 0 ||
      chunk.payload.size() != kTakenEndChunkBytes - kChunkHeaderBytes) {
    return false;
  }
  const uint8_t* p = chunk.payload.data();
  if (p[0] != kTagTakenEnd || p[1] != kTakenEndBodyBytes ||
      wire::Load32(p + 2) != kTakenEndMagic) {
    return false;
  }
  return LoadTakenEnd(p + 6, end);
}

namespace {

// The checksum of the whole chunk [b, b + total) as its header's crc field
// should read: a compressed chunk's covers its magic too (trace-format.md 5).
uint32_t ChunkCrc(const uint8_t* b, size_t total) {
  uint32_t crc = 0;
  if (wire::Load32(b + wire::kChkMagic) == kCompressedChunkMagic) crc = Crc32c(b, 4);
  return Crc32c(b + wire::kChkCrcStart, total - wire::kChkCrcStart, crc);
}

// Every decision that depends on the format version is made here. Version 2
// only added the cpu record and compressed chunks, which a version 1 writer
// never wrote, so one decoder reads both; a later version that only adds
// header fields or extension records keeps this reader working (see
// docs/trace-format.md 8). Version 5 added the time resolution, a header
// field read whatever the version (absent: 1 ns).
bool CheckVersion(uint32_t version, const std::string& name, std::string* error) {
  if (version >= kOldestFormatVersion && version <= kFormatVersion) return true;
  *error = name + ": trace format version " + std::to_string(version) +
           " is not supported (this crossfree reads versions " +
           std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) + ")";
  return false;
}

bool ParseHeader(std::span<const uint8_t> bytes, const std::string& name, FileHeader* header,
                 std::string* error) {
  const uint8_t* b = bytes.data();
  size_t size = bytes.size();
  if (size == 0) {
    *error = name + ": empty file (not a crossfree trace)";
    return false;
  }
  size_t magic_len = size < sizeof(kFileMagic) ? size : sizeof(kFileMagic);
  if (memcmp(b, kFileMagic, magic_len) != 0) {
    *error = name + ": not a crossfree trace (bad magic)";
    return false;
  }
  auto truncated = [&] {
    *error = name + ": truncated trace header (file has " + std::to_string(size) + " bytes)";
    return false;
  };
  if (size < wire::kHdrVersion + 4) return truncated();
  if (!CheckVersion(wire::Load32(b + wire::kHdrVersion), name, error)) return false;
  if (size < wire::kHdrLength + 4) return truncated();
  uint32_t length = wire::Load32(b + wire::kHdrLength);
  if (length < wire::kHdrMinBytes || length > wire::kMaxHeaderBytes) {
    *error = name + ": corrupt trace header (header length " + std::to_string(length) + ")";
    return false;
  }
  if (size < length) return truncated();
  uint32_t stored_crc = wire::Load32(b + length - 4);
  if (Crc32c(b, length - 4) != stored_crc) {
    *error = name + ": corrupt trace header (checksum mismatch)";
    return false;
  }
  uint32_t exe_len = wire::Load32(b + wire::kHdrExeLen);
  if (exe_len > length - wire::kHdrMinBytes || exe_len > wire::kMaxExePathBytes) {
    *error = name + ": corrupt trace header (exe path length " + std::to_string(exe_len) +
             (exe_len > wire::kMaxExePathBytes
                  ? ", the format allows " + std::to_string(wire::kMaxExePathBytes) + ")"
                  : ")");
    return false;
  }
  // Values the format defines; anything else was not written by a tracer.
  uint8_t clock = b[wire::kHdrClock];
  if (clock != static_cast<uint8_t>(Clock::kMonotonic)) {
    *error = name + ": corrupt trace header (unknown clock " + std::to_string(clock) + ")";
    return false;
  }
  uint8_t unwinder = b[wire::kHdrUnwinder];
  if (unwinder > static_cast<uint8_t>(Unwinder::kHybrid)) {
    *error = name + ": corrupt trace header (unknown unwinder " + std::to_string(unwinder) + ")";
    return false;
  }
  header->version = wire::Load32(b + wire::kHdrVersion);
  HeaderFields& f = header->fields;
  f.pid = wire::Load32(b + wire::kHdrPid);
  f.ppid = wire::Load32(b + wire::kHdrPpid);
  f.clock = static_cast<Clock>(b[wire::kHdrClock]);
  f.unwinder = static_cast<Unwinder>(b[wire::kHdrUnwinder]);
  f.max_depth = wire::Load16(b + wire::kHdrMaxDepth);
  f.flags = wire::Load32(b + wire::kHdrFlags);
  f.start_monotonic_ns = wire::Load64(b + wire::kHdrStartMono);
  f.start_realtime_ns = wire::Load64(b + wire::kHdrStartReal);
  header->exe_path.assign(reinterpret_cast<const char*>(b + wire::kHdrExe), exe_len);
  // Fields after the exe path (docs/trace-format.md 4): each present when
  // the header is long enough to hold it.
  const size_t extra = length - wire::kHdrMinBytes - exe_len;
  if (extra >= wire::kHdrSampleBytes) {
    f.sample_period = wire::Load32(b + wire::kHdrExe + exe_len);
  }
  f.time_resolution_ns = 1;  // nanoseconds unless the header says otherwise
  if (extra >= wire::kHdrSampleBytes + wire::kHdrResolutionBytes) {
    const uint32_t r = wire::Load32(b + wire::kHdrExe + exe_len + wire::kHdrSampleBytes);
    if (r == 0 || r > kMaxTimeResolutionNs) {
      *error = name + ": corrupt trace header (time resolution " + std::to_string(r) +
               " ns, the format allows 1 to " + std::to_string(kMaxTimeResolutionNs) + ")";
      return false;
    }
    f.time_resolution_ns = r;
  }
  header->size_bytes = length;
  return true;
}

}  // namespace

std::unique_ptr<TraceReader> TraceReader::FromBytes(std::span<const uint8_t> bytes,
                                                    std::string name, std::string* error) {
  std::unique_ptr<TraceReader> reader(new TraceReader());
  if (!ParseHeader(bytes, name, &reader->header_, error)) return nullptr;
  reader->name_ = std::move(name);
  reader->bytes_ = bytes;
  reader->size_ = bytes.size();
  reader->offset_ = reader->header_.size_bytes;
  return reader;
}

std::unique_ptr<TraceReader> TraceReader::Open(const std::string& path, std::string* error) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise block until a
  // writer appears (forever, for `crossfree dump fifo`). The type is checked
  // on the open descriptor, so a file swapped in between cannot slip past.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *error = path + ": " + strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = path + ": " + strerror(errno);
    ::close(fd);
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file" +
             (S_ISFIFO(st.st_mode)  ? " (a FIFO)"
              : S_ISDIR(st.st_mode) ? " (a directory)"
              : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? " (a device)"
              : S_ISSOCK(st.st_mode) ? " (a socket)"
                                     : "");
    ::close(fd);
    return nullptr;
  }
  std::unique_ptr<TraceReader> reader(new TraceReader());
  reader->fd_ = fd;
  reader->name_ = path;
  reader->size_ = static_cast<uint64_t>(st.st_size);
  std::vector<uint8_t> head;
  bool io_error = false;
  std::span<const uint8_t> bytes =
      reader->View(0, std::min<uint64_t>(reader->size_, wire::kMaxHeaderBytes), &head, &io_error);
  if (io_error) {
    *error = path + ": read: " + strerror(errno);
    return nullptr;
  }
  if (!ParseHeader(bytes, path, &reader->header_, error)) return nullptr;
  reader->offset_ = reader->header_.size_bytes;
  return reader;
}

TraceReader::~TraceReader() {
  if (fd_ >= 0) ::close(fd_);
}

ssize_t TraceReader::ReadAt(uint64_t offset, size_t n, uint8_t* out) const {
  if (fd_ < 0) {
    if (offset >= bytes_.size()) return 0;
    size_t k = std::min<uint64_t>(n, bytes_.size() - offset);
    memcpy(out, bytes_.data() + offset, k);
    return static_cast<ssize_t>(k);
  }
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

// The n bytes at offset (fewer at the end of the data): a view of bytes_, or
// read into *buffer.
std::span<const uint8_t> TraceReader::View(uint64_t offset, size_t n, std::vector<uint8_t>* buffer,
                                           bool* io_error) const {
  *io_error = false;
  if (fd_ < 0) {
    if (offset >= bytes_.size()) return {};
    return bytes_.subspan(offset, std::min<uint64_t>(n, bytes_.size() - offset));
  }
  // Grown, never shrunk, to the largest read so far: a resize down to a
  // chunk header and back up to the chunk zero-filled the whole chunk first
  // for every chunk (its capacity never shrank anyway).
  if (buffer->size() < n) buffer->resize(n);
  ssize_t r = ReadAt(offset, n, buffer->data());
  if (r < 0) {
    *io_error = true;
    return {};
  }
  return std::span<const uint8_t>(buffer->data(), static_cast<size_t>(r));
}

ReadResult TraceReader::NextChunk(Chunk* chunk) {
  if (!error_.empty()) return error_result_;  // errors are sticky
  uint64_t size = size_;
  if (offset_ == size) return ReadResult::kEnd;
  auto fail = [&](ReadResult result, std::string what) {
    error_offset_ = offset_;
    error_ = std::move(what);
    error_result_ = result;
    return result;
  };
  uint64_t left = size - offset_;
  bool io_error = false;
  // The header first, then the whole chunk once its length is known and
  // checked, so a damaged length never makes us read (or allocate) more
  // than kMaxChunkBytes.
  std::span<const uint8_t> head =
      View(offset_, std::min<uint64_t>(left, kChunkHeaderBytes), &buffer_, &io_error);
  if (io_error) return fail(ReadResult::kCorrupt, std::string("read error: ") + strerror(errno));
  if (head.size() < std::min<uint64_t>(left, kChunkHeaderBytes)) {
    return fail(ReadResult::kCorrupt, "file changed while being read (it shrank below " +
                                          std::to_string(size) + " bytes)");
  }
  const uint8_t* b = head.data();
  // A partial chunk magic at the end is a truncation; anything else is not.
  // Both kinds share their first three bytes, "CHN".
  uint8_t magic[4], zmagic[4];
  wire::Store32(magic, kChunkMagic);
  wire::Store32(zmagic, kCompressedChunkMagic);
  const size_t magic_len = left < 4 ? left : 4;
  if (memcmp(b, magic, magic_len) != 0 && memcmp(b, zmagic, magic_len) != 0) {
    return fail(ReadResult::kCorrupt, "corrupt chunk at offset " + std::to_string(offset_) +
                                          " (bad chunk magic)");
  }
  if (left >= wire::kChkLength + 4) {
    uint32_t word = wire::Load32(b + wire::kChkLength);
    uint32_t payload = word & 0xffffff;
    if ((word >> 24) != wire::LengthGuard(payload)) {
      return fail(ReadResult::kCorrupt, "corrupt chunk at offset " + std::to_string(offset_) +
                                            " (damaged length field)");
    }
    if (kChunkHeaderBytes + payload > kMaxChunkBytes) {
      return fail(ReadResult::kCorrupt, "corrupt chunk at offset " + std::to_string(offset_) +
                                            " (length " + std::to_string(payload) +
                                            " exceeds the maximum chunk size)");
    }
    if (left >= kChunkHeaderBytes + payload) {
      size_t total = kChunkHeaderBytes + payload;
      std::span<const uint8_t> whole = View(offset_, total, &buffer_, &io_error);
      if (io_error) {
        return fail(ReadResult::kCorrupt, std::string("read error: ") + strerror(errno));
      }
      if (whole.size() < total) {
        return fail(ReadResult::kCorrupt, "file changed while being read (it shrank below " +
                                              std::to_string(size) + " bytes)");
      }
      b = whole.data();
      uint32_t crc = ChunkCrc(b, total);
      if (crc != wire::Load32(b + wire::kChkCrc)) {
        return fail(ReadResult::kCorrupt, "corrupt chunk at offset " + std::to_string(offset_) +
                                              " (checksum mismatch)");
      }
      const bool compressed = wire::Load32(b + wire::kChkMagic) == kCompressedChunkMagic;
      uint32_t raw = payload;
      std::string what;
      if (compressed &&
          !CheckCompressedPayload(whole.subspan(kChunkHeaderBytes, payload), &raw, &what)) {
        return fail(ReadResult::kCorrupt,
                    "corrupt chunk at offset " + std::to_string(offset_) + " (" + what + ")");
      }
      uint64_t id = uint64_t{wire::Load32(b + wire::kChkTid)} << 32 |
                    wire::Load32(b + wire::kChkSequence);
      auto [first, inserted] = seen_.try_emplace(id, crc, offset_);
      if (!inserted && first->second.first == crc) {
        return fail(ReadResult::kCorrupt,
                    "corrupt trace: the chunk at offset " + std::to_string(offset_) +
                        " duplicates the chunk at offset " + std::to_string(first->second.second) +
                        " (thread " + std::to_string(id >> 32) + ", sequence " +
                        std::to_string(id & 0xffffffff) + ")");
      }
      chunk->file_offset = offset_;
      chunk->tid = wire::Load32(b + wire::kChkTid);
      chunk->sequence = wire::Load32(b + wire::kChkSequence);
      chunk->event_count = wire::Load32(b + wire::kChkEvents);
      chunk->base_timestamp_ns = wire::Load64(b + wire::kChkBaseTs);
      chunk->payload_bytes = payload;
      chunk->crc = crc;
      chunk->compressed = compressed;
      chunk->raw_bytes = raw;
      chunk->payload = whole.subspan(kChunkHeaderBytes, payload);
      offset_ += total;
      return ReadResult::kChunk;
    }
  }
  return fail(ReadResult::kTruncated, "truncated chunk at offset " + std::to_string(offset_) +
                                          " (file ends after " + std::to_string(left) +
                                          " of its bytes)");
}

bool TraceReader::LoadPayload(const Chunk& chunk, std::vector<uint8_t>* buffer, Chunk* loaded,
                              std::string* error) const {
  *loaded = chunk;
  size_t total = kChunkHeaderBytes + chunk.payload_bytes;
  if (fd_ < 0) {
    if (chunk.file_offset > bytes_.size() || bytes_.size() - chunk.file_offset < total) {
      *error = name_ + ": chunk at offset " + std::to_string(chunk.file_offset) +
               " is outside the trace";
      return false;
    }
    loaded->payload = bytes_.subspan(chunk.file_offset + kChunkHeaderBytes, chunk.payload_bytes);
    return true;
  }
  if (buffer->size() < total) buffer->resize(total);  // as in View(): no zero-fill per chunk
  ssize_t r = ReadAt(chunk.file_offset, total, buffer->data());
  if (r < 0) {
    *error = name_ + ": read error at offset " + std::to_string(chunk.file_offset) + ": " +
             strerror(errno);
    return false;
  }
  const uint8_t* b = buffer->data();
  if (static_cast<size_t>(r) < total || ChunkCrc(b, total) != chunk.crc ||
      wire::Load32(b + wire::kChkCrc) != chunk.crc) {
    *error = name_ + ": file changed while being read (chunk at offset " +
             std::to_string(chunk.file_offset) + ")";
    return false;
  }
  loaded->payload = std::span<const uint8_t>(b + kChunkHeaderBytes, chunk.payload_bytes);
  return true;
}

}  // namespace crossfree::format
