// SPDX-License-Identifier: Apache-2.0
// ConnectionThread: one accepted server connection served by a thread of
// its own with blocking I/O (MessengerOptions::connection_threads).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <pthread.h>

#include "rpc/serialization.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class ConnectionThreadSet;
class InboundCall;
class InboundTransfer;
class Messenger;
class Notification;
class OutboundTransfer;
class ServicePool;

// Why: with one sync client on a connection, a reactor costs an epoll_wait
// per call before it reads the request (and a wake-up, the expensive part
// on a VM); a thread blocked in recv() on the socket costs exactly what a
// raw blocking TCP ping-pong does: recv, (handler), send.
//
// The loop: a blocking recv() into a fixed 64 KiB buffer (a large body
// straight into its frame buffer); the bytes go
// through the same framing as a reactor connection (connection header
// check, InboundTransfer: frame-size limit, a buffer that grows as bytes
// arrive, charged to the messenger's budget). It does not borrow a
// Connection's FrameReader: with one call at a time it keeps exactly one
// frame transfer and needs no pool or frame hand-over, and going through
// FrameReader measured 167 more instructions per call on rpc-bench
// --connection_threads (4,757 -> 4,924, callgrind, client and server); each complete frame becomes
// the connection's one InboundCall (Parse), is routed and handled on this
// thread (Messenger::HandleInboundCallHere), and its response written with
// send() before the next frame is looked at. One call at a time.
//
// Owner: the ConnectionThreadSet (created by the acceptor thread, deleted
// by whoever joins it: the next connection thread to exit, or the set's
// Shutdown). Threads: Run and everything it calls on the connection's own
// thread, which alone makes, uses and frees the read buffer, the call and
// the frame buffer (so a call allocates nothing and nothing crosses
// threads); ResponseReady on the responder's thread (this thread, or a
// deferred-pool thread for RpcContext::Defer); RequestStop, Cancel,
// ShutdownSocket and CloseSocket from the set, under its lock (the set's
// lock is what keeps the descriptor number from being reused under a
// shutdown(2)).
//
// Shutdown (ConnectionThreadSet): the socket is shut down for reading,
// which ends a blocking recv() (EOF once the bytes already received are
// read); frames already received are still answered (the service pools
// answer FATAL_SERVER_SHUTTING_DOWN by then), the call being handled
// finishes and its response is written; then the thread ends.
//
// Timeouts, without a clock read per call: the socket has a 100 ms
// receive timeout (SO_RCVTIMEO); every slice that passes with no byte
// counts 100 ms of silence, compared with frame_timeout_ms while a frame
// (or the connection header) is incomplete and with idle_timeout_ms
// between frames. A response the client does not take is waited for in
// 100 ms poll() slices: frame_timeout_ms of them without progress close
// the connection, and a stop request ends the wait at the next slice.
class ConnectionThread {
 public:
  // `fd`: a blocking socket, owned from here (closed by the set).
  ConnectionThread(ConnectionThreadSet* set, Messenger* messenger, int fd, const Sockaddr& remote,
                   std::string name);
  ~ConnectionThread();
  ConnectionThread(const ConnectionThread&) = delete;
  ConnectionThread& operator=(const ConnectionThread&) = delete;

  // The set: starts the thread (false, with errno's value in *err, if it
  // cannot); Join once it has called ConnectionThreadSet::OnThreadExit.
  bool Start(int* err);
  void Join();

  // The set, under its lock. RequestStop: read no further frame and stop
  // waiting for a stuck send at its next slice. Cancel: the call being
  // handled reads as cancelled (shutdown grace period over). ShutdownSocket:
  // shutdown(2) with `how`, which wakes a blocked recv (EOF) or send/poll
  // (error). CloseSocket: at the thread's end.
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }
  void Cancel() { closed_.store(true, std::memory_order_relaxed); }
  void ShutdownSocket(int how);
  void CloseSocket();

  // Any thread, while the connection's call is live: its
  // InboundCall::cancelled(). True once Cancel() ran, or when the client has
  // hung up: nobody reads the socket while a handler runs, so this looks
  // (one poll(2), timeout 0, POLLRDHUP) each time it is asked; calls whose
  // handler never asks pay nothing.
  bool closed() const;
  Messenger* messenger() const { return messenger_; }
  const Sockaddr& remote() const { return remote_; }

  // The call's responder, once (InboundCall::QueueResponse): the response
  // is prepared; this thread writes it. Must be the responder's last touch
  // of the call.
  void ResponseReady();
  // This thread (the call's ReleaseCallState): the request frame's transfer
  // comes back, kept for the next frame unless its buffer grew beyond
  // kMaxKeptBufferBytes.
  void RecycleInboundTransfer(std::unique_ptr<InboundTransfer> t);

  // Position in the set's list (the set's lock).
  size_t set_index = 0;

 private:
  static constexpr int kSliceMs = 100;
  // The thread's stack: handlers run on it, so not tiny, but not the 8 MiB
  // default either (max_connections threads of it would be mapped).
  static constexpr size_t kStackBytes = 2 * 1024 * 1024;
  static constexpr size_t kReadBufferSize = 64 * 1024;
  static constexpr size_t kMaxKeptBufferBytes = 64 * 1024;

  static void* ThreadMain(void* self);
  void Run();
  // Reads and answers frames until the connection ends; returns why.
  Status Serve();
  // The complete frame in inbound_: parse, handle, wait for and write the
  // response. Not OK: close the connection.
  Status HandleFrame();
  Status WriteResponse(OutboundTransfer* t);
  // The budget (max_buffer_bytes) refused to grow the frame's buffer: waits
  // one slice for room, counted in *quiet_ms against the frame timeout.
  Status WaitForBudget(int* quiet_ms);
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  Status BadData(const Status& s) {
    bad_data_ = true;
    return s;
  }

  ConnectionThreadSet* const set_;
  Messenger* const messenger_;
  int fd_;  // written (closed) by the set under its lock, after Run's last use
  const Sockaddr remote_;
  const std::string name_;
  pthread_t thread_{};
  bool started_ = false;
  std::atomic<bool> stop_{false};
  mutable std::atomic<bool> closed_{false};

  // This thread's only.
  bool bad_data_ = false;
  std::unique_ptr<uint8_t[]> read_buf_;
  std::unique_ptr<InboundCall> call_;
  std::unique_ptr<InboundTransfer> inbound_;
  ConnHeaderReceiver conn_header_;
  ServicePool* last_pool_ = nullptr;  // Messenger::HandleInboundCallHere
  // The current call's "response ready" flag (on HandleFrame's stack): the
  // responder notifies it; set before the handler runs, so a responder on
  // another thread got it through the hand-off that gave it the call.
  Notification* ready_ = nullptr;
};

}  // namespace crossfree::rpc
