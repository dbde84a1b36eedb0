// SPDX-License-Identifier: Apache-2.0
// InboundTransfer (one frame being received) and OutboundTransfer (one frame
// being sent as a list of slices), both used only on a reactor thread.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "rpc/status.h"

namespace crossfree::rpc {

class MemoryBudget;

// Receives one frame: the 4-byte big-endian length, then that many bytes into
// a buffer allocated by the reactor thread that reads it. The buffer grows
// as bytes arrive (doubling, capped at the frame length), never from the
// length prefix alone, so a peer that announces a 50 MiB frame and sends 10
// bytes costs 10 bytes; the capacity stays below twice the bytes received
// plus the next read (at most 64 KiB on the direct-read path). Each growth is charged to `budget` (when given) and
// released when the buffer is freed.
// Owner: the Connection while reading; then the InboundCall (server) or the
// client call path (freed on the client reactor after parsing, or handed to
// the caller in the legacy_client_transfer pattern).
// Thread: reading happens on the reactor; afterwards whoever owns it.
class InboundTransfer {
 public:
  explicit InboundTransfer(size_t max_message_size, MemoryBudget* budget = nullptr)
      : max_message_size_(max_message_size), budget_(budget) {}
  ~InboundTransfer();
  InboundTransfer(const InboundTransfer&) = delete;
  InboundTransfer& operator=(const InboundTransfer&) = delete;

  // Takes up to `len` bytes from `data`; *used tells how many. NetworkError
  // "invalid length" or "RPC frame had a length of X, but we only support
  // messages up to Y" when the prefix is bad: the caller must then close the
  // connection. Takes fewer bytes, and sets blocked_on_memory(), when the
  // budget refuses to grow the buffer: the caller stops reading until the
  // budget has room and then offers the rest again.
  Status Consume(const uint8_t* data, size_t len, size_t* used);

  bool complete() const { return have_length_ && received_ == length_; }
  // True once any byte of the frame (its prefix included) has arrived.
  bool started() const { return prefix_received_ > 0; }
  bool blocked_on_memory() const { return blocked_on_memory_; }
  // Body bytes still missing (0 until the prefix is known).
  size_t body_remaining() const { return have_length_ ? length_ - received_ : 0; }
  // For large bodies the connection reads straight into the buffer: makes
  // room for at least min(want, body_remaining()) more body bytes (growing
  // the buffer, charged to the budget), sets *dst and returns how many fit
  // (more than `want` when the buffer has grown ahead); 0 when the budget
  // refused (blocked_on_memory()).
  size_t PrepareDirectRead(size_t want, uint8_t** dst);
  void BodyAdvance(size_t n) { received_ += n; }

  // The frame after its length prefix; valid once complete().
  std::string_view frame() const {
    return std::string_view(reinterpret_cast<const char*>(buf_.get()), length_);
  }
  // The buffer itself (reused by InboundCall for the response when big enough).
  uint8_t* mutable_buffer() { return buf_.get(); }
  size_t buffer_size() const { return length_; }
  // Bytes the buffer can hold (kept across Reset).
  size_t buffer_capacity() const { return capacity_; }

  // Forgets the frame but keeps the buffer, so a pooled transfer receives
  // the next frame that fits without allocating (Connection's pool).
  void Reset();

 private:
  // Growth in two steps, so that the allocation itself happens in Consume /
  // PrepareDirectRead: the new capacity for `needed` bytes (<= length_),
  // charged to the budget (false if it refused); then the new buffer takes
  // the bytes received so far.
  bool ReserveGrowth(size_t needed, size_t* new_cap);
  void AdoptBuffer(uint8_t* new_buf, size_t new_cap);

  size_t max_message_size_;
  MemoryBudget* budget_;
  uint8_t prefix_[4];
  size_t prefix_received_ = 0;
  bool have_length_ = false;
  bool blocked_on_memory_ = false;
  uint32_t length_ = 0;
  size_t received_ = 0;
  size_t capacity_ = 0;
  size_t charged_ = 0;  // bytes taken from budget_
  std::unique_ptr<uint8_t[]> buf_;
};

// Told when an OutboundTransfer has been fully written or dropped. Runs on the
// reactor thread of the connection. Each transfer calls exactly one of them,
// exactly once.
class TransferCallbacks {
 public:
  virtual void NotifyTransferFinished() = 0;
  virtual void NotifyTransferAborted(const Status& status) = 0;

 protected:
  ~TransferCallbacks() = default;
};

// One frame to send: up to kInlineSlices slices stored inline (more go to a
// vector allocated by whoever adds them). Does not own the bytes or the
// callbacks. Owner: embedded in OutboundCall (client) or InboundCall (server,
// fixed pattern), or heap-allocated (legacy_response_transfer).
// Thread: filled by one thread, then handed to a reactor, which alone touches
// it until a callback fires.
class OutboundTransfer {
 public:
  static constexpr int kInlineSlices = 4;

  OutboundTransfer() = default;
  OutboundTransfer(const OutboundTransfer&) = delete;
  OutboundTransfer& operator=(const OutboundTransfer&) = delete;

  // Forgets slices, callbacks and progress.
  void Reset();
  void set_callbacks(TransferCallbacks* cb) { callbacks_ = cb; }
  TransferCallbacks* callbacks() const { return callbacks_; }
  void AddSlice(const void* data, size_t len);

  // Writes as much as the socket takes. OK with done() false on EAGAIN;
  // NetworkError on a socket error.
  Status Write(int fd);
  bool done() const { return cur_slice_ == num_slices_; }
  // True once any byte went out: the frame can no longer be withdrawn.
  bool started() const { return started_; }
  size_t total_bytes() const { return total_bytes_; }

  // Intrusive FIFO hook, used by Connection.
  OutboundTransfer* next_in_queue = nullptr;

 private:
  iovec& slice(int i) { return i < kInlineSlices ? inline_[i] : overflow_[i - kInlineSlices]; }

  iovec inline_[kInlineSlices];
  std::vector<iovec> overflow_;
  int num_slices_ = 0;
  int cur_slice_ = 0;
  size_t cur_offset_ = 0;
  size_t total_bytes_ = 0;
  bool started_ = false;
  TransferCallbacks* callbacks_ = nullptr;
};

}  // namespace crossfree::rpc
