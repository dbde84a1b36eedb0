// SPDX-License-Identifier: Apache-2.0
// Messenger: the RPC endpoint of a process. Owns the reactors, the acceptor
// and the registered services; used by both clients and servers.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rpc/reactor.h"
#include "rpc/service_pool.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class Acceptor;
class InboundCall;
class OutboundCall;

struct MessengerOptions {
  std::string name = "messenger";
  int num_reactors = 4;
  // Thread names: "<reactor_prefix>-N", "<worker_prefix>-N", acceptor_name.
  std::string reactor_prefix = "reactor";
  std::string worker_prefix = "worker";
  std::string acceptor_name = "acceptor";
  // Frames larger than this (prefix included) close the connection.
  size_t max_message_size = 50 * 1024 * 1024;
};

// Owner: whoever Create()d it (shared_ptr so proxies can keep it alive).
// Threads: all public methods are thread-safe. Shutdown() (also run by the
// destructor) must not be called from one of its own threads.
// Shutdown order: acceptor, service pools (queued calls answered with
// FATAL_SERVER_SHUTTING_DOWN), then reactors (connections closed, waiting
// client calls finish with Aborted, queued tasks aborted).
class Messenger {
 public:
  static Status Create(const MessengerOptions& options, std::shared_ptr<Messenger>* out);
  ~Messenger();
  Messenger(const Messenger&) = delete;
  Messenger& operator=(const Messenger&) = delete;

  // Listens on host:port (port 0 = any); *bound gets the address.
  Status StartAcceptor(const std::string& host, uint16_t port, sockaddr_in* bound);
  // Registers a service with its own worker pool and queue. AlreadyPresent
  // if a service of the same name exists.
  Status RegisterService(std::unique_ptr<ServiceIf> service, const ServicePoolOptions& options);
  void Shutdown();
  bool is_shut_down() const { return shut_down_.load(); }

  // The reactor owning connections to/from `addr` (hash of the address).
  Reactor* ReactorFor(const sockaddr_in& addr) const;
  const std::vector<std::unique_ptr<Reactor>>& reactors() const { return reactors_; }
  const MessengerOptions& options() const { return options_; }
  size_t max_message_size() const { return options_.max_message_size; }

  // Server reactor thread: routes a parsed call to its service pool, or
  // answers ERROR_NO_SUCH_SERVICE.
  void QueueInboundCall(InboundCall* call);
  // Any thread: posts a prepared call to its reactor.
  void QueueOutboundCall(OutboundCall* call);

  // Totals over all pools, for tests and the bench.
  uint64_t queue_overflows() const;
  int queued_calls() const;

 private:
  explicit Messenger(const MessengerOptions& options);
  Status Init();

  const MessengerOptions options_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::unique_ptr<Acceptor> acceptor_;
  mutable std::shared_mutex services_mu_;
  std::unordered_map<std::string, std::unique_ptr<ServicePool>> services_;
  int next_worker_index_ = 0;
  std::mutex shutdown_mu_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace crossfree::rpc
