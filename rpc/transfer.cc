// SPDX-License-Identifier: Apache-2.0
// Frame transfers: prefix validation on receive, resumable gather writes
// (sendmsg with MSG_NOSIGNAL) on send.
#include "rpc/transfer.h"

#include <errno.h>
#include <limits.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "rpc/memory_budget.h"
#include "rpc/serialization.h"
#include "rpc/socket_io.h"

namespace crossfree::rpc {

InboundTransfer::~InboundTransfer() {
  if (budget_ != nullptr && charged_ > 0) budget_->Release(charged_);
}

bool InboundTransfer::ReserveGrowth(size_t needed, size_t* new_cap) {
  // Doubling keeps the copies linear in the frame size; the cap at the
  // frame length and at `needed` (what has actually arrived) keeps a
  // length prefix alone from reserving anything.
  size_t doubled = std::max<size_t>(2 * capacity_, 256);
  *new_cap = std::max(needed, std::min<size_t>(length_, doubled));
  size_t delta = *new_cap - capacity_;
  if (budget_ != nullptr) {
    if (!budget_->TryCharge(delta)) {
      blocked_on_memory_ = true;
      return false;
    }
    charged_ += delta;
  }
  return true;
}

void InboundTransfer::AdoptBuffer(uint8_t* nb, size_t new_cap) {
  if (received_ > 0) memcpy(nb, buf_.get(), received_);
  buf_.reset(nb);
  capacity_ = new_cap;
}

Status InboundTransfer::Consume(const uint8_t* data, size_t len, size_t* used) {
  size_t taken = 0;
  blocked_on_memory_ = false;
  if (!have_length_) {
    uint32_t length;
    if (prefix_received_ == 0 && len >= kFrameLengthPrefix) {
      // The whole prefix in this read (the usual case): decoded in place,
      // without the variable-length copy into prefix_.
      length = DecodeBigEndian32(data);
      prefix_received_ = kFrameLengthPrefix;
      taken = kFrameLengthPrefix;
    } else {
      size_t n = std::min(len, kFrameLengthPrefix - prefix_received_);
      memcpy(prefix_ + prefix_received_, data, n);
      prefix_received_ += n;
      taken += n;
      if (prefix_received_ < kFrameLengthPrefix) {
        *used = taken;
        return Status::OK();
      }
      length = DecodeBigEndian32(prefix_);
    }
    if (length < kMinFrameLength) {
      *used = taken;
      return Status::NetworkError("invalid length: frame length prefix is " +
                                  std::to_string(length));
    }
    if (length + kFrameLengthPrefix > max_message_size_ || length > INT32_MAX) {
      *used = taken;
      return Status::NetworkError("RPC frame had a length of " +
                                  std::to_string(uint64_t{length} + kFrameLengthPrefix) +
                                  ", but we only support messages up to " +
                                  std::to_string(max_message_size_) + " bytes");
    }
    length_ = length;
    have_length_ = true;
  }
  size_t n = std::min(len - taken, body_remaining());
  if (n > 0 && received_ + n > capacity_) {
    size_t cap;
    if (!ReserveGrowth(received_ + n, &cap)) {
      *used = taken;
      return Status::OK();
    }
    // The allocation stays in Consume itself: it is the site that traces
    // (and tests/e2e/expected-pairs.txt) name for a frame buffer.
    AdoptBuffer(new uint8_t[cap], cap);
  }
  if (n > 0) memcpy(buf_.get() + received_, data + taken, n);
  received_ += n;
  *used = taken + n;
  return Status::OK();
}

size_t InboundTransfer::PrepareDirectRead(size_t want, uint8_t** dst) {
  blocked_on_memory_ = false;
  // Grow() doubles, so asking for one chunk more still grows geometrically.
  size_t n = std::min(want, body_remaining());
  if (n == 0) return 0;
  if (received_ + n > capacity_) {
    size_t cap;
    if (!ReserveGrowth(received_ + n, &cap)) return 0;
    AdoptBuffer(new uint8_t[cap], cap);
  }
  *dst = buf_.get() + received_;
  return std::min(capacity_, static_cast<size_t>(length_)) - received_;
}

void InboundTransfer::Reset() {
  prefix_received_ = 0;
  have_length_ = false;
  blocked_on_memory_ = false;
  length_ = 0;
  received_ = 0;
}

void OutboundTransfer::Reset() {
  overflow_.clear();
  num_slices_ = 0;
  cur_slice_ = 0;
  cur_offset_ = 0;
  total_bytes_ = 0;
  started_ = false;
  callbacks_ = nullptr;
  next_in_queue = nullptr;
}

void OutboundTransfer::AddSlice(const void* data, size_t len) {
  if (len == 0) return;
  iovec v{const_cast<void*>(data), len};
  if (num_slices_ < kInlineSlices) {
    inline_[num_slices_] = v;
  } else {
    overflow_.push_back(v);
  }
  ++num_slices_;
  total_bytes_ += len;
}

Status OutboundTransfer::Write(int fd) {
  constexpr int kMaxIov = 64;
  // send/sendmsg with MSG_NOSIGNAL rather than write/writev: a peer that
  // reset the connection must cost an EPIPE, not a SIGPIPE that kills the
  // process. MSG_DONTWAIT: a client socket whose read side is lent to
  // blocking callers has O_NONBLOCK cleared (Connection::MakeReadsBlocking);
  // no writer may block on it.
  constexpr int kFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
  while (!done()) {
    ssize_t w;
    if (cur_slice_ + 1 == num_slices_) {
      // One slice left (a small frame is one): no iovec array to build.
      const iovec& v = slice(cur_slice_);
      w = SocketSend(fd, static_cast<char*>(v.iov_base) + cur_offset_, v.iov_len - cur_offset_, kFlags);
    } else {
      iovec iov[kMaxIov];
      int n = 0;
      for (int i = cur_slice_; i < num_slices_ && n < kMaxIov; ++i, ++n) {
        iov[n] = slice(i);
      }
      iov[0].iov_base = static_cast<char*>(iov[0].iov_base) + cur_offset_;
      iov[0].iov_len -= cur_offset_;
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(n);
      w = SocketSendMsg(fd, &msg, kFlags);
    }
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
      int err = errno;
      return Status::NetworkError("send failed", err);
    }
    if (w > 0) started_ = true;
    size_t left = static_cast<size_t>(w);
    while (left > 0 && cur_slice_ < num_slices_) {
      size_t in_slice = slice(cur_slice_).iov_len - cur_offset_;
      if (left >= in_slice) {
        left -= in_slice;
        ++cur_slice_;
        cur_offset_ = 0;
      } else {
        cur_offset_ += left;
        left = 0;
      }
    }
  }
  return Status::OK();
}

}  // namespace crossfree::rpc
