// SPDX-License-Identifier: Apache-2.0
// crossfree trace format, reader side: header validation, chunk walking with
// checksums, record decoding. The one place that knows about versions.
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

bool ParseTotalsChunk(std::span<const uint8_t> tail, TraceTotals* totals) {
  if (tail.size() != kTotalsChunkBytes) return false;
  const uint8_t* b = tail.data();
  constexpr uint32_t kPayload = static_cast<uint32_t>(kTotalsChunkBytes - kChunkHeaderBytes);
  if (wire::Load32(b + wire::kChkMagic) != kChunkMagic ||
      wire::Load32(b + wire::kChkLength) != wire::PackLength(kPayload) ||
      wire::Load32(b + wire::kChkEvents) != 0 ||
      Crc32c(b + wire::kChkCrcStart, kTotalsChunkBytes - wire::kChkCrcStart) !=
          wire::Load32(b + wire::kChkCrc)) {
    return false;
  }
  const uint8_t* p = b + kChunkHeaderBytes;
  if (p[0] != kTagTotals || p[1] != kTotalsBodyBytes || wire::Load32(p + 2) != kTotalsMagic) {
    return false;
  }
  p += 2;
  totals->threads = wire::Load32(p + 4);
  totals->events = wire::Load64(p + 8);
  totals->allocs = wire::Load64(p + 16);
  totals->frees = wire::Load64(p + 24);
  totals->chunks = wire::Load64(p + 32);
  return totals->allocs + totals->frees == totals->events;
}

namespace {

// The checksum of the whole chunk [b, b + total) as its header's crc field
// should read: a compressed chunk's covers its magic too (trace-format.md 5).
uint32_t ChunkCrc(const uint8_t* b, size_t total) {
  uint32_t crc = 0;
  if (wire::Load32(b + wire::kChkMagic) == kCompressedChunkMagic) crc = Crc32c(b, 4);
  return Crc32c(b + wire::kChkCrcStart, total - wire::kChkCrcStart, crc);
}

std::string Hex(uint64_t v) {
  char buf[24];
  int n = snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return std::string(buf, n);
}

// Every decision that depends on the format version is made here. Version 2
// only added the cpu record and compressed chunks, which a version 1 writer
// never wrote, so one decoder reads both; a later version that only adds
// header fields or extension records keeps this reader working (see
// docs/trace-format.md 8).
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
  if (length - wire::kHdrMinBytes - exe_len >= wire::kHdrSampleBytes) {
    f.sample_period = wire::Load32(b + wire::kHdrExe + exe_len);
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

namespace {

class Decoder {
 public:
  // lanes: a compressed chunk's decompressed lanes (docs/trace-format.md
  // 5.1), null for a plain chunk, whose records are chunk.payload.
  // refs: layout 2's state (docs/trace-format.md 5.2), for lanes of that
  // layout only; reset here.
  Decoder(const Chunk& chunk, RecordVisitor& visitor, std::string* error,
          const ChunkLanes* lanes, ChunkRefs* refs = nullptr)
      : chunk_(chunk), visitor_(visitor), error_(error), lanes_(lanes), refs_(refs) {
    if (refs_ != nullptr) refs_->Reset();
  }

  bool Run();

 private:
  // Layout 2: an event's address from its lane 3 value v (docs/trace-format.md
  // 5.2), with base and shift those of its delta form. An allocation's is
  // then appended to the chunk's allocations. False with address_error_ set
  // when v names nothing.
  // Inlined into Run(): it runs on every event of a layout 2 chunk; the
  // messages are built out of line.
  __attribute__((always_inline)) bool Address(bool alloc, uint64_t v, uint64_t base,
                                              unsigned shift, uint64_t size, uint64_t* address) {
    if (alloc) {
      if (v == 0) {
        if (!refs_->Reuse(size, address)) return NoneFreed(size);
      } else {
        *address = base + (static_cast<uint64_t>(wire::UnZigZag(v - 1)) << shift);
      }
      refs_->AddAlloc(*address, size);
      return true;
    }
    if ((v & 1) == 0) {
      *address = base + (static_cast<uint64_t>(wire::UnZigZag(v >> 1)) << shift);
      return true;
    }
    if (!refs_->Free(v >> 1, address)) return NoSuchAllocation(v >> 1);
    return true;
  }
  __attribute__((noinline, cold)) bool NoneFreed(uint64_t size) {
    address_error_ = "allocation reuses a freed block of size class " +
                     std::to_string(ChunkRefs::ClassOf(size)) + ", none is free";
    return false;
  }
  __attribute__((noinline, cold)) bool NoSuchAllocation(uint64_t k) {
    address_error_ = "free refers to allocation " + std::to_string(k) + " back, the chunk has " +
                     std::to_string(refs_->allocs());
    return false;
  }

  bool Fail(const uint8_t* at, const char* what, uint64_t value = 0, bool show = false) {
    Flush();  // the records before the malformed one are delivered
    if (lanes_ != nullptr) {
      // Where the record is in the plain stream: the bytes of every lane
      // consumed before it (field cursors move only past whole events).
      uint64_t at_raw = static_cast<uint64_t>(at - lanes_->lane[0].data());
      for (size_t i = 1; i < wire::kLanes; ++i) {
        at_raw += static_cast<uint64_t>(field_[i] - lanes_->lane[i].data());
      }
      *error_ = "corrupt record in compressed chunk at offset " +
                std::to_string(chunk_.file_offset) + " (byte " + std::to_string(at_raw) +
                " of its records: " + what;
    } else {
      uint64_t offset = chunk_.file_offset + kChunkHeaderBytes + (at - chunk_.payload.data());
      *error_ = "corrupt record at offset " + std::to_string(offset) + " (" + what;
    }
    if (show) *error_ += " " + std::to_string(value);
    *error_ += ")";
    return false;
  }
  // Events are delivered in spans (RecordVisitor::OnEvents): Emit() adds
  // one, Flush() delivers those pending, before any other record and at the
  // end, so the visitor still sees every record in chunk order.
  void Emit(const Event& e) {
    batch_[batched_] = e;
    if (++batched_ == kBatch) Flush();
  }
  void Flush() {
    if (batched_ == 0) return;
    visitor_.OnEvents(std::span<const Event>(batch_, batched_));
    batched_ = 0;
  }

  bool Get(uint64_t* v) {
    p_ = wire::GetVarint(p_, end_, v);
    return p_ != nullptr;
  }
  bool GetDelta(uint64_t base, uint64_t* v) {
    uint64_t raw;
    if (!Get(&raw)) return false;
    *v = base + static_cast<uint64_t>(wire::UnZigZag(raw));
    return true;
  }
  bool GetStackId(uint32_t* id) {
    uint64_t v;
    if (!Get(&v)) return false;
    if (v > UINT32_MAX) return false;
    *id = static_cast<uint32_t>(v);
    return true;
  }

  // kTagCentral body in [p_, next); fields a newer writer appends are skipped.
  bool DecodeCentral(const uint8_t* start, uint64_t prev_ts, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    CentralEvent c{};
    c.tid = chunk_.tid;
    uint64_t op, cl, stack;
    uint64_t flags = 0;
    bool ok = GetDelta(prev_ts, &c.timestamp_ns) && Get(&op) && Get(&cl) && Get(&c.count) &&
              Get(&stack) && (p_ == next || Get(&flags));
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated central record");
    if (op > kMaxCentralOp) return Fail(start, "unknown central operation", op, true);
    if (cl > UINT32_MAX) return Fail(start, "bad size class", cl, true);
    if (stack > UINT32_MAX) return Fail(start, "bad stack id", stack, true);
    c.op = static_cast<CentralOp>(op);
    c.size_class = static_cast<uint32_t>(cl);
    c.stack_id = static_cast<uint32_t>(stack);
    c.by_tracer = (flags & 1) != 0;
    visitor_.OnCentral(c);
    return true;
  }

  // kTagWindow body in [p_, next).
  bool DecodeWindow(const uint8_t* start, uint64_t prev_ts, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    uint64_t ts, state, cause;
    bool ok = GetDelta(prev_ts, &ts) && Get(&state) && Get(&cause);
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated window record");
    if (state > static_cast<uint8_t>(WindowState::kOpen)) {
      return Fail(start, "unknown window state", state, true);
    }
    if (cause > kMaxWindowCause) return Fail(start, "unknown window cause", cause, true);
    visitor_.OnWindow(chunk_.tid, ts, static_cast<WindowState>(state),
                      static_cast<WindowCause>(cause));
    return true;
  }

  // kTagCounts body in [p_, next).
  bool DecodeCounts(const uint8_t* start, const uint8_t* next) {
    const uint8_t* saved_end = end_;
    end_ = next;
    ThreadCounts c;
    bool ok = Get(&c.allocs) && Get(&c.frees) && Get(&c.samples_dropped);
    end_ = saved_end;
    if (!ok) return Fail(start, "truncated counts record");
    if (c.samples_dropped > c.allocs) {
      return Fail(start, "more samples dropped than allocations", c.samples_dropped, true);
    }
    visitor_.OnCounts(chunk_.tid, c);
    return true;
  }

  const Chunk& chunk_;
  RecordVisitor& visitor_;
  std::string* error_;
  const ChunkLanes* lanes_;
  ChunkRefs* refs_;
  // Lanes 1-4: where the next event's field is, and where the lane ends.
  const uint8_t* field_[wire::kLanes] = {};
  const uint8_t* field_end_[wire::kLanes] = {};
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  std::string address_error_;
  uint64_t frames_[kMaxStackDepth];
  static constexpr size_t kBatch = 64;  // events per OnEvents() span at most
  Event batch_[kBatch];
  size_t batched_ = 0;
  // Mirror of ChunkWriter's per-chunk prediction table.
  struct Site {
    uint32_t stack_id;
    uint32_t size;  // sizes of 4 GiB and more are never repeated
    uint64_t address;
  };
  Site sites_[ChunkWriter::kSiteSlots];
};

constexpr bool ValidAllocFn(uint8_t fn) { return fn <= static_cast<uint8_t>(AllocFn::kMallocHook); }
constexpr bool ValidFreeFn(uint8_t fn) {
  switch (static_cast<FreeFn>(fn)) {
    case FreeFn::kFree:
    case FreeFn::kRealloc:
    case FreeFn::kDelete:
    case FreeFn::kDeleteArray:
    case FreeFn::kMallocHook:
      return true;
  }
  return false;
}

// What a tag says when it is an allocation or a free, looked up once per
// record rather than worked out from its kind and function with a branch
// each. One byte, so that the lookup is one load.
struct EventTag {
  bool event : 1 = false;     // one of the four allocation and free kinds
  bool alloc : 1 = false;
  bool valid_fn : 1 = false;  // its function is a known AllocFn or FreeFn
  uint8_t addr_shift : 3 = 0; // 4 for the aligned kinds (address delta in units of 16)
};
static_assert(sizeof(EventTag) == 1);

constexpr std::array<EventTag, 256> MakeEventTags() {
  std::array<EventTag, 256> tags{};
  for (int tag = 0; tag < 256; ++tag) {
    int kind = tag & 0xf0;
    auto fn = static_cast<uint8_t>(tag & 0x0f);
    EventTag& t = tags[tag];
    t.event = kind == kTagAllocBase || kind == kTagAllocAlignedBase || kind == kTagFreeBase ||
              kind == kTagFreeAlignedBase;
    t.alloc = kind == kTagAllocBase || kind == kTagAllocAlignedBase;
    t.valid_fn = t.alloc ? ValidAllocFn(fn) : ValidFreeFn(fn);
    t.addr_shift = kind == kTagAllocAlignedBase || kind == kTagFreeAlignedBase ? 4 : 0;
  }
  return tags;
}
constexpr std::array<EventTag, 256> kEventTags = MakeEventTags();

// The varint fields of an event record after its tag: timestamp delta,
// stack word (id << 1 | size present), address delta, and the size when
// the word says it is present.
struct EventFields {
  uint64_t ts_delta = 0;
  uint64_t word = 0;
  uint64_t addr_delta = 0;
  uint64_t size = 0;
};

// Nearly every event record has this many bytes or more after its tag in
// the chunk, enough for its (at most four) varints: none of them can then
// run past the end, and they are read without checking for it.
inline constexpr size_t kMaxEventFieldBytes = 4 * wire::kMaxVarintBytes;

// Reads the fields from [p, end); null when one runs past end or is
// malformed. The size is not read after a stack word too large for a stack
// id: the caller reports that first, whatever follows.
const uint8_t* GetEventFields(const uint8_t* p, const uint8_t* end, EventFields* f) {
  if (static_cast<size_t>(end - p) >= kMaxEventFieldBytes) {
    if (!(p = wire::GetVarintRoomy(p, &f->ts_delta)) || !(p = wire::GetVarintRoomy(p, &f->word)) ||
        !(p = wire::GetVarintRoomy(p, &f->addr_delta))) {
      return nullptr;
    }
    if (!(f->word & 1) || (f->word >> 1) > UINT32_MAX) return p;
    return wire::GetVarintRoomy(p, &f->size);
  }
  if (!(p = wire::GetVarint(p, end, &f->ts_delta)) || !(p = wire::GetVarint(p, end, &f->word)) ||
      !(p = wire::GetVarint(p, end, &f->addr_delta))) {
    return nullptr;
  }
  if (!(f->word & 1) || (f->word >> 1) > UINT32_MAX) return p;
  return wire::GetVarint(p, end, &f->size);
}

bool Decoder::Run() {
  if (lanes_ != nullptr) {
    p_ = lanes_->lane[0].data();
    end_ = p_ + lanes_->lane[0].size();
    for (size_t i = 1; i < wire::kLanes; ++i) {
      field_[i] = lanes_->lane[i].data();
      field_end_[i] = field_[i] + lanes_->lane[i].size();
    }
  } else {
    p_ = chunk_.payload.data();
    end_ = p_ + chunk_.payload.size();
  }
  uint64_t prev_ts = chunk_.base_timestamp_ns;
  uint64_t prev_addr = 0;
  uint64_t events = 0;
  uint32_t cpu = kUnknownCpu;
  memset(sites_, 0, sizeof(sites_));
  Event ev{};
  ev.tid = chunk_.tid;
  while (p_ < end_) {
    const uint8_t* start = p_;
    uint8_t tag = *p_++;
    uint8_t kind = tag & 0xf0;
    uint8_t fn = tag & 0x0f;
    // Allocations and frees, nearly every record, are told by the table
    // before the switch over the other kinds.
    const EventTag t = kEventTags[tag];
    if (t.event) {
      if (!t.valid_fn) {
        return Fail(start, t.alloc ? "unknown allocation function" : "unknown free function",
                    fn, true);
      }
      EventFields f;
      const uint8_t* lane_next[wire::kLanes] = {};  // the cursors after this event
      if (lanes_ == nullptr) {
        p_ = GetEventFields(p_, end_, &f);
        if (p_ == nullptr) return Fail(start, "truncated event");
      } else {
        // The fields from their lanes, read without a bounds check each
        // (ChunkLanes: padding follows every lane), then checked against
        // the lanes' ends at once. The cursors move only once the event is
        // decoded, so a failure reports the record's start.
        const uint8_t* t_at = wire::GetVarintRoomy(field_[1], &f.ts_delta);
        const uint8_t* w_at = wire::GetVarintRoomy(field_[2], &f.word);
        const uint8_t* a_at = wire::GetVarintRoomy(field_[3], &f.addr_delta);
        if (t_at == nullptr || w_at == nullptr || a_at == nullptr || t_at > field_end_[1] ||
            w_at > field_end_[2] || a_at > field_end_[3]) {
          return Fail(start, "truncated event");
        }
        const uint8_t* s_at = field_[4];
        if ((f.word & 1) && (f.word >> 1) <= UINT32_MAX &&
            ((s_at = wire::GetVarintRoomy(field_[4], &f.size)) == nullptr ||
             s_at > field_end_[4])) {
          return Fail(start, "truncated event");
        }
        lane_next[1] = t_at;
        lane_next[2] = w_at;
        lane_next[3] = a_at;
        lane_next[4] = s_at;
      }
      if ((f.word >> 1) > UINT32_MAX) return Fail(start, "bad stack id", f.word >> 1, true);
      ev.timestamp_ns = prev_ts + static_cast<uint64_t>(wire::UnZigZag(f.ts_delta));
      ev.stack_id = static_cast<uint32_t>(f.word >> 1);
      Site& site = sites_[ev.stack_id % ChunkWriter::kSiteSlots];
      bool hit = site.stack_id == ev.stack_id;
      if (f.word & 1) {
        ev.size = f.size;
      } else if (hit) {
        ev.size = site.size;
      } else {
        return Fail(start, "event repeats the size of a stack not seen in this chunk");
      }
      if (refs_ == nullptr) {
        ev.address = (hit ? site.address : prev_addr) +
                     (static_cast<uint64_t>(wire::UnZigZag(f.addr_delta)) << t.addr_shift);
      } else if (!Address(t.alloc, f.addr_delta, hit ? site.address : prev_addr, t.addr_shift,
                          ev.size, &ev.address)) {
        return Fail(start, address_error_.c_str());
      }
      if (lanes_ != nullptr) {
        for (size_t i = 1; i < wire::kLanes; ++i) field_[i] = lane_next[i];
      }
      site.stack_id = ev.stack_id;
      site.size = static_cast<uint32_t>(ev.size);
      site.address = ev.address;
      ev.op = t.alloc ? EventOp::kAlloc : EventOp::kFree;
      ev.fn = fn;
      ev.from_realloc = false;
      ev.cpu = cpu;
      prev_ts = ev.timestamp_ns;
      prev_addr = ev.address;
      ++events;
      Emit(ev);
      continue;
    }
    switch (kind) {
      case kTagReallocBase: {
        if (!ValidAllocFn(fn)) return Fail(start, "unknown allocation function", fn, true);
        uint64_t ts_free, ts_alloc, old_addr, new_addr, size;
        uint32_t stack;
        if (!GetDelta(prev_ts, &ts_free) || !GetDelta(ts_free, &ts_alloc) ||
            !GetDelta(prev_addr, &old_addr) || !GetDelta(old_addr, &new_addr) || !Get(&size)) {
          return Fail(start, "truncated realloc");
        }
        if (!GetStackId(&stack)) return Fail(start, "bad stack id in realloc");
        ev.from_realloc = true;
        ev.stack_id = stack;
        ev.cpu = cpu;
        ev.op = EventOp::kFree;
        ev.fn = static_cast<uint8_t>(FreeFn::kRealloc);
        ev.timestamp_ns = ts_free;
        ev.address = old_addr;
        ev.size = 0;
        Emit(ev);
        ev.op = EventOp::kAlloc;
        ev.fn = fn;
        ev.timestamp_ns = ts_alloc;
        ev.address = new_addr;
        ev.size = size;
        Emit(ev);
        prev_ts = ts_alloc;
        prev_addr = new_addr;
        events += 2;
        break;
      }
      case 0x00:
        if (tag == kTagCpu) {
          uint64_t v;
          if (!Get(&v)) return Fail(start, "truncated cpu record");
          if (v > UINT32_MAX) return Fail(start, "bad cpu", v, true);
          cpu = static_cast<uint32_t>(v);
          Flush();  // in chunk order; a thread changes CPU rarely
          visitor_.OnCpu(chunk_.tid, cpu);
          break;
        }
        Flush();
        switch (tag) {
          case kTagStackDef: {
            uint64_t id, depth;
            if (!Get(&id) || !Get(&depth)) return Fail(start, "truncated stack definition");
            if (id == kNoStack || id > UINT32_MAX) return Fail(start, "bad stack id", id, true);
            if (depth > kMaxStackDepth) return Fail(start, "stack depth", depth, true);
            uint64_t prev = 0;
            for (uint64_t i = 0; i < depth; ++i) {
              if (!GetDelta(prev, &frames_[i])) return Fail(start, "truncated stack definition");
              prev = frames_[i];
            }
            visitor_.OnStack(static_cast<uint32_t>(id),
                             std::span<const uint64_t>(frames_, static_cast<size_t>(depth)));
            break;
          }
          case kTagThreadName: {
            uint64_t ts, len;
            if (!GetDelta(prev_ts, &ts) || !Get(&len)) return Fail(start, "truncated thread name");
            if (len > wire::kMaxNameBytes || len > static_cast<uint64_t>(end_ - p_)) {
              return Fail(start, "bad thread name length", len, true);
            }
            std::string_view name(reinterpret_cast<const char*>(p_), len);
            p_ += len;
            prev_ts = ts;
            visitor_.OnThreadName(chunk_.tid, ts, name);
            break;
          }
          case kTagModule: {
            Module m;
            uint64_t len;
            if (!GetDelta(prev_ts, &m.timestamp_ns) || !Get(&m.load_bias) || !Get(&len)) {
              return Fail(start, "truncated module");
            }
            if (len > wire::kMaxModulePathBytes || len > static_cast<uint64_t>(end_ - p_)) {
              return Fail(start, "bad module path length", len, true);
            }
            m.path.assign(reinterpret_cast<const char*>(p_), len);
            p_ += len;
            if (!Get(&len)) return Fail(start, "truncated module");
            if (len > wire::kMaxBuildIdBytes || len > static_cast<uint64_t>(end_ - p_)) {
              return Fail(start, "bad build id length", len, true);
            }
            m.build_id.assign(p_, p_ + len);
            p_ += len;
            uint64_t count;
            if (!Get(&count)) return Fail(start, "truncated module");
            if (count > wire::kMaxSegments) return Fail(start, "segment count", count, true);
            m.segments.resize(count);
            for (auto& seg : m.segments) {
              if (!GetDelta(m.load_bias, &seg.start) || !Get(&seg.size)) {
                return Fail(start, "truncated module");
              }
            }
            prev_ts = m.timestamp_ns;
            visitor_.OnModule(chunk_.tid, m);
            break;
          }
          case kTagThreadExit: {
            uint64_t ts;
            if (!GetDelta(prev_ts, &ts)) return Fail(start, "truncated thread exit");
            prev_ts = ts;
            visitor_.OnThreadExit(chunk_.tid, ts);
            break;
          }
          default:
            return Fail(start, ("unknown record tag " + Hex(tag)).c_str());
        }
        break;
      default:
        Flush();
        if (tag >= kExtensionTagBase) {
          uint64_t len;
          if (!Get(&len) || len > static_cast<uint64_t>(end_ - p_)) {
            return Fail(start, "bad extension record length");
          }
          const uint8_t* next = p_ + len;
          if (tag == kTagCentral) {
            if (!DecodeCentral(start, prev_ts, next)) return false;
          } else if (tag == kTagWindow) {
            if (!DecodeWindow(start, prev_ts, next)) return false;
          } else if (tag == kTagCounts) {
            if (!DecodeCounts(start, next)) return false;
          }
          p_ = next;  // unknown tags: a record from a newer writer, skipped on purpose
          break;
        }
        return Fail(start, ("unknown record tag " + Hex(tag)).c_str());
    }
  }
  Flush();
  if (lanes_ != nullptr) {
    for (size_t i = 1; i < wire::kLanes; ++i) {
      if (field_[i] != field_end_[i]) {
        *error_ = "corrupt chunk at offset " + std::to_string(chunk_.file_offset) + " (lane " +
                  std::to_string(i) + " has " + std::to_string(field_end_[i] - field_[i]) +
                  " bytes left after the last record)";
        return false;
      }
    }
  }
  if (events != chunk_.event_count) {
    uint64_t offset = chunk_.file_offset;
    *error_ = "corrupt chunk at offset " + std::to_string(offset) + " (header says " +
              std::to_string(chunk_.event_count) + " events, payload has " +
              std::to_string(events) + ")";
    return false;
  }
  return true;
}

}  // namespace

bool DecodeChunk(const Chunk& chunk, RecordVisitor& visitor, std::string* error) {
  if (!chunk.compressed) {
    Decoder decoder(chunk, visitor, error, nullptr);
    return decoder.Run();
  }
  // One per thread: the parallel reading workers each decompress into their
  // own buffer, bounded by the largest chunk they decoded.
  thread_local ChunkInflater inflater;
  ChunkLanes lanes;
  std::string what;
  if (!inflater.Inflate(chunk.payload, &lanes, &what)) {
    *error = "corrupt chunk at offset " + std::to_string(chunk.file_offset) + " (" + what + ")";
    return false;
  }
  // Layout 2's state, like the inflater one per thread (fixed size).
  thread_local ChunkRefs refs;
  Decoder decoder(chunk, visitor, error, &lanes,
                  lanes.layout == wire::kLayoutRefs ? &refs : nullptr);
  return decoder.Run();
}

}  // namespace crossfree::format
