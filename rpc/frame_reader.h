// SPDX-License-Identifier: Apache-2.0
// FrameReader: the read side of a Connection, the one piece of code that
// turns socket bytes into frames for both of its readers (the reactor and a
// sync caller it lends the read side to).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <vector>

#include "rpc/serialization.h"
#include "rpc/status.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

class MemoryBudget;

// The socket's reads, a 64 KiB read buffer (one read() delivers many small
// frames), the frame being assembled and a pool of spare frame transfers
// for the next frames.
// Owner: its Connection. Thread: one reader at a time, with no lock of its
// own: the connection's reactor, or the sync caller the connection lent
// its read side to (Connection::read_side_, handed over under the
// connection's mutex, so one reader's accesses happen before the next
// one's). Everything it allocates is made and freed by that reader.
class FrameReader {
 public:
  static constexpr size_t kBufferSize = 64 * 1024;

  // `budget` (nullptr: none) is charged for frame buffers; the pool keeps
  // at most `pool_limit` transfers.
  FrameReader(size_t max_message_size, MemoryBudget* budget, size_t pool_limit);
  FrameReader(const FrameReader&) = delete;
  FrameReader& operator=(const FrameReader&) = delete;

  enum class Next {
    kFrame,            // *frame is a complete frame
    kNeedBytes,        // every buffered byte is taken; read more
    kBlockedOnMemory,  // the budget refused to grow the frame's buffer: the
                       // rest stays buffered; call again once it has room
    kBad,              // *error says what (the connection must close)
  };
  // The next frame out of the bytes read so far.
  Next NextFrame(std::unique_ptr<InboundTransfer>* frame, Status* error);
  // Server: feeds buffered bytes to the connection header first.
  Status ConsumeConnHeader(ConnHeaderReceiver* header);
  bool buffered() const { return pos_ < len_; }
  // A frame has begun arriving and is not complete yet.
  bool mid_frame() const { return inbound_ != nullptr && inbound_->started(); }

  // The reactor: one recv() with `flags`, into the buffer or, while the
  // frame being read misses at least kBufferSize body bytes, straight into
  // the frame's buffer. recv's result (errno set for -1), or kNoMemory
  // when the budget refused to grow that buffer. *short_read: fewer bytes
  // arrived than were asked for (the socket is drained).
  static constexpr ssize_t kNoMemory = -2;
  ssize_t Recv(int fd, int flags, bool* short_read);

  enum class Wait { kBytes, kNothing, kEof, kRecvError, kPollError };
  // A reading caller: waits for bytes into the buffer. While *block, in a
  // blocking recv() bounded by the socket's SO_RCVTIMEO (a slice that ends
  // without bytes clears *block); else in ppoll() on `fd` and `wake_fd`
  // (drained when it fired) for at most `timeout` (nullptr: none).
  // kNothing: the wait ended without bytes (slice, timeout, wake-up, or
  // EINTR/EAGAIN); the caller checks why and waits again. kRecvError and
  // kPollError: *err is the errno.
  Wait WaitForBytes(int fd, int wake_fd, bool* block, const timespec* timeout, int* err);

  // A frame transfer this read side made, back once its frame is no longer
  // needed: kept for the next frame if the pool has room and its buffer is
  // at most kMaxPooledBufferBytes, else freed.
  void Recycle(std::unique_ptr<InboundTransfer> t);
  // Frees spare transfers beyond `keep`.
  void Trim(size_t keep);
  // Frees the frame being read and the spare transfers.
  void Clear();

 private:
  static constexpr size_t kMaxPooledBufferBytes = 8 * 1024;
  static constexpr size_t kMaxPooledBufferTotal = 64 * 1024;

  const size_t max_message_size_;
  MemoryBudget* const budget_;
  const size_t pool_limit_;
  std::unique_ptr<uint8_t[]> buf_;
  size_t pos_ = 0;
  size_t len_ = 0;
  std::unique_ptr<InboundTransfer> inbound_;
  std::vector<std::unique_ptr<InboundTransfer>> spare_;
  size_t spare_bytes_ = 0;  // buffer capacity of spare_
};

}  // namespace crossfree::rpc
