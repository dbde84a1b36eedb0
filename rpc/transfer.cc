// SPDX-License-Identifier: Apache-2.0
// Frame transfers: prefix validation on receive, resumable writev on send.
#include "rpc/transfer.h"

#include <errno.h>
#include <limits.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "rpc/serialization.h"

namespace crossfree::rpc {

Status InboundTransfer::Consume(const uint8_t* data, size_t len, size_t* used) {
  size_t taken = 0;
  if (!have_length_) {
    size_t n = std::min(len, kFrameLengthPrefix - prefix_received_);
    memcpy(prefix_ + prefix_received_, data, n);
    prefix_received_ += n;
    taken += n;
    if (prefix_received_ < kFrameLengthPrefix) {
      *used = taken;
      return Status::OK();
    }
    uint32_t length = DecodeBigEndian32(prefix_);
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
    if (length_ > capacity_) {
      buf_.reset(new uint8_t[length_]);
      capacity_ = length_;
    }
  }
  size_t n = std::min(len - taken, body_remaining());
  memcpy(buf_.get() + received_, data + taken, n);
  received_ += n;
  *used = taken + n;
  return Status::OK();
}

void InboundTransfer::Reset() {
  prefix_received_ = 0;
  have_length_ = false;
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
  while (!done()) {
    iovec iov[kMaxIov];
    int n = 0;
    for (int i = cur_slice_; i < num_slices_ && n < kMaxIov; ++i, ++n) {
      iov[n] = slice(i);
    }
    iov[0].iov_base = static_cast<char*>(iov[0].iov_base) + cur_offset_;
    iov[0].iov_len -= cur_offset_;
    ssize_t w = ::writev(fd, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::OK();
      int err = errno;
      return Status::NetworkError("writev failed", err);
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
