// SPDX-License-Identifier: Apache-2.0
#include "rpc/frame_reader.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/socket_io.h"

namespace crossfree::rpc {

FrameReader::FrameReader(size_t max_message_size, MemoryBudget* budget, size_t pool_limit)
    : max_message_size_(max_message_size),
      budget_(budget),
      pool_limit_(pool_limit),
      buf_(new uint8_t[kBufferSize]) {
  spare_.reserve(pool_limit_);
}

FrameReader::Next FrameReader::NextFrame(std::unique_ptr<InboundTransfer>* frame,
                                         Status* error) {
  for (;;) {
    // A body read straight into its buffer (Recv) may have completed it.
    if (inbound_ != nullptr && inbound_->complete()) {
      *frame = std::move(inbound_);
      return Next::kFrame;
    }
    if (pos_ == len_) return Next::kNeedBytes;
    if (inbound_ == nullptr) {
      if (!spare_.empty()) {
        inbound_ = std::move(spare_.back());
        spare_.pop_back();
        spare_bytes_ -= inbound_->buffer_capacity();
      } else {
        inbound_.reset(new InboundTransfer(max_message_size_, budget_));
      }
    }
    size_t used = 0;
    Status s = inbound_->Consume(buf_.get() + pos_, len_ - pos_, &used);
    pos_ += used;
    if (!s.ok()) {
      *error = std::move(s);
      return Next::kBad;
    }
    if (inbound_->blocked_on_memory()) return Next::kBlockedOnMemory;
  }
}

Status FrameReader::ConsumeConnHeader(ConnHeaderReceiver* header) {
  size_t used = 0;
  Status s = header->Consume(buf_.get() + pos_, len_ - pos_, &used);
  pos_ += used;
  return s;
}

ssize_t FrameReader::Recv(int fd, int flags, bool* short_read) {
  if (inbound_ != nullptr && inbound_->body_remaining() >= kBufferSize) {
    uint8_t* dst = nullptr;
    const size_t room = inbound_->PrepareDirectRead(kBufferSize, &dst);
    if (room == 0) return kNoMemory;
    const ssize_t n = SocketRecv(fd, dst, room, flags);
    if (n > 0) {
      *short_read = static_cast<size_t>(n) < room;
      inbound_->BodyAdvance(static_cast<size_t>(n));
    }
    return n;
  }
  const ssize_t n = SocketRecv(fd, buf_.get(), kBufferSize, flags);
  if (n > 0) {
    *short_read = static_cast<size_t>(n) < kBufferSize;
    pos_ = 0;
    len_ = static_cast<size_t>(n);
  }
  return n;
}

FrameReader::Wait FrameReader::WaitForBytes(int fd, int wake_fd, bool* block,
                                             const timespec* timeout, int* err) {
  ssize_t r;
  if (*block) {
    // Sleeps in the kernel until bytes, EOF, or the end of the slice.
    r = SocketRecv(fd, buf_.get(), kBufferSize, 0);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      *block = false;  // a slow call: poll from now on
      return Wait::kNothing;
    }
  } else {
    // Sleeps in the kernel until bytes, EOF, the wake-up or the timeout.
    pollfd pfd[2] = {{fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    const int n = ::ppoll(pfd, 2, timeout, nullptr);
    if (n < 0) {
      if (errno == EINTR) return Wait::kNothing;
      *err = errno;
      return Wait::kPollError;
    }
    if (n == 0) return Wait::kNothing;
    if (pfd[1].revents != 0) {
      uint64_t v;
      ssize_t d = ::read(wake_fd, &v, sizeof(v));  // drain; the waker says why
      (void)d;
    }
    if (pfd[0].revents == 0) return Wait::kNothing;
    // MSG_DONTWAIT: the descriptor may be blocking.
    r = SocketRecv(fd, buf_.get(), kBufferSize, MSG_DONTWAIT);
  }
  if (r > 0) {
    pos_ = 0;
    len_ = static_cast<size_t>(r);
    return Wait::kBytes;
  }
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return Wait::kNothing;
  if (r == 0) return Wait::kEof;
  *err = errno;
  return Wait::kRecvError;
}

void FrameReader::Recycle(std::unique_ptr<InboundTransfer> t) {
  if (spare_.size() >= pool_limit_ || t->buffer_capacity() > kMaxPooledBufferBytes ||
      spare_bytes_ + t->buffer_capacity() > kMaxPooledBufferTotal) {
    return;  // freed here, by the reader that made it
  }
  t->Reset();
  spare_bytes_ += t->buffer_capacity();
  spare_.push_back(std::move(t));
}

void FrameReader::Trim(size_t keep) {
  while (spare_.size() > keep) {
    spare_bytes_ -= spare_.back()->buffer_capacity();
    spare_.pop_back();
  }
}

void FrameReader::Clear() {
  inbound_.reset();
  spare_.clear();
  spare_bytes_ = 0;
}

}  // namespace crossfree::rpc
