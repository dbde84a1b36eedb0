// SPDX-License-Identifier: Apache-2.0
// Messenger: the RPC endpoint of a process. Owns the reactors, the acceptor
// and the registered services; used by both clients and servers.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rpc/service_pool_options.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace crossfree::rpc {

// The core's internals, used here by pointer only: a program that includes
// this header sees none of their definitions.
class Acceptor;
class ConnectionThreadSet;
class DeferredPool;
class InboundCall;
class MemoryBudget;
class OutboundCall;
class Reactor;
class ServiceIf;
class ServicePool;

// Settings of one messenger. The bounds protect a server from clients that
// misbehave (by accident or on purpose); each has a default meant for a
// real server, and 0 turns a bound off unless said otherwise. They apply to
// the server side (accepted connections) unless said otherwise.
struct MessengerOptions {
  std::string name = "messenger";
  int num_reactors = 4;
  // Thread names: "<reactor_prefix>-N", "<worker_prefix>-N",
  // "<deferred_prefix>-N", acceptor_name.
  std::string reactor_prefix = "reactor";
  std::string worker_prefix = "worker";
  std::string deferred_prefix = "deferred";
  std::string acceptor_name = "acceptor";
  // Frames larger than this (prefix included) close the connection (both
  // sides). Receive buffers grow as the bytes arrive, so a large announced
  // length alone costs nothing.
  size_t max_message_size = 50 * 1024 * 1024;

  // Calls of one connection between the arrival of the request and the end
  // of writing its response. At the limit the connection's socket is no
  // longer read (back-pressure: the client's sends block in TCP) until a
  // call ends.
  int max_calls_in_flight_per_connection = 100;
  // Response bytes queued on one connection and not yet written (the client
  // does not read). At the limit its requests are no longer read until the
  // queue drains below it.
  size_t max_queued_response_bytes_per_connection = 4 * 1024 * 1024;
  // Bytes of receive buffers plus queued responses over all connections of
  // the messenger. When a receive buffer cannot grow within it, that
  // connection stops reading until the budget has room (checked every
  // 100 ms); the frame timeout still applies to it. Not counted: the fixed
  // 64 KiB read buffer of each connection (bounded by max_connections).
  size_t max_buffer_bytes = 128 * 1024 * 1024;
  // A connection whose current frame (or, before it, the 8-byte connection
  // header) receives no byte for this long is closed. Time spent with
  // reading stopped by the two per-connection bounds above does not count.
  int frame_timeout_ms = 10000;
  // A connection with no call in flight, no response queued and no byte
  // received for this long is closed (KRPC's default keepalive is 65 s).
  int idle_timeout_ms = 65000;
  // Open server connections; one more is accepted and closed at once.
  int max_connections = 1000;
  // How long the acceptor stops watching the listening socket after
  // accept() fails (EMFILE, ENFILE, ENOBUFS, ENOMEM, ...).
  int accept_backoff_ms = 100;
  // The pool for RpcContext::Defer: threads (started on demand) and tasks
  // waiting; beyond it Defer answers ERROR_SERVER_TOO_BUSY.
  int deferred_threads = 4;
  int deferred_queue_length = 1000;
  // Shutdown waits this long for running handlers and deferred tasks to
  // finish by themselves, then marks every call still in flight cancelled
  // (RpcContext::cancelled()) and waits for them to return.
  int shutdown_grace_ms = 5000;

  // Client side. A sync caller that is the only call outstanding on its
  // connection reads its response from the socket itself (poll + read on
  // the caller's thread) instead of being woken by the client reactor: one
  // thread wake-up per call fewer, and no busy-polling (the caller sleeps in
  // the kernel). The reactor lends the connection's read side to callers
  // while no other call is outstanding and takes it back for async calls,
  // concurrent callers, timeouts, cancellation and closing
  // (Connection::ReadOwnResponse states who may read when). Needs the
  // fixed pattern's direct writes (DirectWrites()); off by default (the
  // KRPC topology: the reactor reads every response).
  bool caller_reads_sync_responses = false;

  // Server side: one thread per accepted connection, doing blocking I/O
  // (ConnectionThread): it reads a request frame with a blocking recv(),
  // runs the handler right there (whatever ServicePoolOptions says: no
  // worker, no reactor), and writes the response with a blocking send.
  // Why: with one sync client per connection a call then costs the same
  // system calls as a raw blocking TCP ping-pong (no epoll_wait before the
  // read; on a VM every wake-up is expensive). Off by default (the KRPC
  // topology: reactors + worker pools). Threads: the acceptor starts each
  // connection's thread ("<connection_thread_prefix>-N"); the messenger
  // owns and joins them (Shutdown). Bounds in this mode:
  //  - max_connections caps the threads too and must not be 0 (Create
  //    refuses it): each connection costs a thread.
  //  - One call at a time per connection: the next frame is read only once
  //    the previous response is written, so max_calls_in_flight_per_
  //    connection is 1 in effect and responses never queue
  //    (max_queued_response_bytes_per_connection is never reached): a
  //    client that does not read blocks its own thread's send (TCP
  //    back-pressure). A send that makes no progress for frame_timeout_ms
  //    closes the connection, and shutdown stops it within 100 ms.
  //  - max_message_size, max_buffer_bytes (a receive buffer grows as bytes
  //    arrive; while the budget refuses, the thread waits in 100 ms steps),
  //    frame_timeout_ms and idle_timeout_ms as for reactor connections,
  //    measured in 100 ms receive-timeout slices (SO_RCVTIMEO).
  //  - Nobody reads the socket while a handler runs: a client that
  //    disconnects meanwhile is seen when the handler asks
  //    RpcContext::cancelled() (which then polls the socket, one poll(2)
  //    per question) or when the response is written.
  // Use it for a few connections of latency-bound sync clients; the reactor
  // topology for many connections, pipelining/async clients or handlers
  // that block.
  bool connection_threads = false;
  std::string connection_thread_prefix = "conn";
};

// Owner: whoever Create()d it (shared_ptr so proxies can keep it alive).
// Threads: the public methods are thread-safe, except the two that hand a
// parsed server call over (QueueInboundCall: the call's reactor;
// HandleInboundCallHere: its connection thread; both CROSSFREE_DCHECKed).
// Shutdown() (also run by the destructor) must not be called from one of
// its own threads.
// Shutdown order: acceptor; deferred pool and service pools stop taking
// work (queued deferred tasks and queued calls are answered
// FATAL_SERVER_SHUTTING_DOWN); connection threads (connection_threads)
// stop reading (their sockets are shut down for reading, which wakes idle
// ones); running handlers get shutdown_grace_ms to finish, then their calls
// are marked cancelled and waited for; connection threads are joined (one
// stuck in a send gives up within 100 ms; sockets of threads not ended 1 s
// later are shut down both ways); then the
// reactors (queued tasks run, e.g. those responses; connections closed,
// waiting client calls finish with Aborted).
class Messenger {
 public:
  static Status Create(const MessengerOptions& options, std::shared_ptr<Messenger>* out);
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  // Listens on host:port (numeric IPv4 or IPv6; port 0 = any); *bound gets
  // the address.
  Status StartAcceptor(const std::string& host, uint16_t port, Sockaddr* bound);
  // Registers a service with its own worker pool and queue. AlreadyPresent
  // if a service of the same name exists.
  Status RegisterService(std::unique_ptr<ServiceIf> service, const ServicePoolOptions& options);
  void Shutdown();
  bool is_shut_down() const { return shut_down_.load(); }

  // The reactor owning connections to/from `addr` (hash of the address).
  Reactor* ReactorFor(const Sockaddr& addr) const;
  const std::vector<std::unique_ptr<Reactor>>& reactors() const { return reactors_; }
  const MessengerOptions& options() const { return options_; }
  size_t max_message_size() const { return options_.max_message_size; }

  // Server reactor thread: routes a parsed call to its service pool, or
  // answers ERROR_NO_SUCH_SERVICE. `last_pool` (the connection's, reactor
  // state) is the pool of the connection's previous call: tried first, by
  // name, since a client calls the same service again and again; the map
  // (a shared lock and a hash of the name) is asked only when the name
  // differs, and *last_pool updated. Pools live as long as the messenger,
  // so the pointer stays valid while the connection can read calls.
  void QueueInboundCall(InboundCall* call, ServicePool** last_pool);
  // Connection thread (connection_threads): the same routing, but the
  // handler runs now, on the calling thread, whatever the pool's
  // inline_methods say.
  void HandleInboundCallHere(InboundCall* call, ServicePool** last_pool);
  // Any thread: posts a prepared call to its reactor.
  void QueueOutboundCall(OutboundCall* call);

  // Totals over all pools, for tests and the bench.
  uint64_t queue_overflows() const;
  int queued_calls() const;
  uint64_t expired_in_queue() const;
  uint64_t cancelled_in_queue() const;

  // The budget of max_buffer_bytes (any thread).
  MemoryBudget* buffer_budget() { return budget_.get(); }
  // The RpcContext::Defer pool (any thread).
  DeferredPool* deferred_pool() { return deferred_.get(); }
  // The connection threads (connection_threads; nullptr otherwise). The
  // acceptor hands them accepted sockets.
  ConnectionThreadSet* connection_thread_set() { return connection_threads_.get(); }
  // Open server connections. The acceptor adds one before handing a socket
  // to a reactor (false at max_connections); the reactor removes it when
  // the connection ends. Any thread.
  bool TryAddServerConnection();
  void RemoveServerConnection() { server_connections_.fetch_sub(1, std::memory_order_relaxed); }
  int server_connections() const { return server_connections_.load(std::memory_order_relaxed); }
  // Client: responses that sync callers read from the socket themselves
  // (caller_reads_sync_responses), for tests and the bench. Any thread.
  uint64_t caller_read_responses() const {
    return caller_read_responses_.load(std::memory_order_relaxed);
  }
  // Server: calls fully released, counted once a call's last server-side
  // allocation is back (its response transfer written or dropped, the call
  // pooled or deleted): written by the thread that ends the call (its
  // connection's reactor, a connection thread, or the thread deleting it on
  // shutdown), after the release; any thread may read it. Tests wait on it
  // instead of sleeping until the server is done with their calls.
  uint64_t inbound_calls_released() const {
    return inbound_calls_released_.load(std::memory_order_acquire);
  }
  // Client: responses a reactor handed to their calls (the callback run and
  // everything the reactor frees for the response freed), counted after that
  // on the reactor thread; any thread may read it. Responses a sync caller
  // read itself are in caller_read_responses() instead.
  uint64_t reactor_handled_responses() const {
    return reactor_handled_responses_.load(std::memory_order_acquire);
  }

 private:
  friend class Connection;  // counts caller_read_responses_ and the two below
  friend class ConnectionThread;  // counts inbound_calls_released_
  friend class InboundCall;       // counts inbound_calls_released_
  void CountCallerReadResponse() { caller_read_responses_.fetch_add(1, std::memory_order_relaxed); }
  void CountInboundCallReleased() { inbound_calls_released_.fetch_add(1, std::memory_order_release); }
  void CountReactorHandledResponse() {
    reactor_handled_responses_.fetch_add(1, std::memory_order_release);
  }

  explicit Messenger(const MessengerOptions& options);
  Status Init();
  // The pool of the call's service (last_pool first, see QueueInboundCall),
  // or nullptr having answered ERROR_NO_SUCH_SERVICE. Always inlined into its
  // two callers (messenger.cc): it is on every call's path, where a call of
  // its own costs more than its body.
  [[gnu::always_inline]] inline ServicePool* PoolFor(InboundCall* call, ServicePool** last_pool);

  const MessengerOptions options_;
  // Before the reactors: connections and calls release into them until
  // the reactors are gone. Made with the messenger (messenger.cc).
  const std::unique_ptr<MemoryBudget> budget_;
  const std::unique_ptr<DeferredPool> deferred_;
  std::atomic<int> server_connections_{0};
  std::atomic<uint64_t> caller_read_responses_{0};
  std::atomic<uint64_t> inbound_calls_released_{0};
  std::atomic<uint64_t> reactor_handled_responses_{0};
  std::vector<std::unique_ptr<Reactor>> reactors_;
  // Before the acceptor: it hands sockets to the set until it is joined.
  std::unique_ptr<ConnectionThreadSet> connection_threads_;
  std::unique_ptr<Acceptor> acceptor_;
  mutable std::shared_mutex services_mu_;
  // Any thread: the sum of count(pool) over the service pools, under
  // services_mu_ (shared). Defined in messenger.cc, its only user.
  template <typename Count, typename CountFn>
  Count SumOverPools(CountFn count) const;
  // Transparent hash and equality: a call's service name (a view into its
  // request frame) is looked up without making a std::string of it.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<ServicePool>, NameHash, std::equal_to<>>
      services_;
  int next_worker_index_ = 0;
  std::mutex shutdown_mu_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace crossfree::rpc
