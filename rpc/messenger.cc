// SPDX-License-Identifier: Apache-2.0
// Messenger implementation: wiring of reactors, acceptor and service pools.
#include "rpc/messenger.h"

#include "rpc/acceptor.h"
#include "rpc/connection_thread_set.h"
#include "rpc/dcheck.h"
#include "rpc/deferred_pool.h"
#include "rpc/inbound_call.h"
#include "rpc/logging.h"
#include "rpc/memory_budget.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"
#include "rpc/service_pool.h"

namespace crossfree::rpc {

Messenger::Messenger(const MessengerOptions& options)
    : options_(options),
      budget_(std::make_unique<MemoryBudget>(options.max_buffer_bytes)),
      deferred_(std::make_unique<DeferredPool>(options.deferred_prefix, options.deferred_threads,
                                               options.deferred_queue_length)) {}

Status Messenger::Create(const MessengerOptions& options, std::shared_ptr<Messenger>* out) {
  if (options.num_reactors < 1) {
    return Status::InvalidArgument("a messenger needs at least one reactor, got " +
                                   std::to_string(options.num_reactors));
  }
  if (options.connection_threads && options.max_connections <= 0) {
    // Each connection costs a thread: an unbounded number is refused.
    return Status::InvalidArgument(
        "connection_threads needs a max_connections bound (each connection is a thread)");
  }
  std::shared_ptr<Messenger> m(new Messenger(options));
  CROSSFREE_RETURN_NOT_OK(m->Init());
  *out = std::move(m);
  return Status::OK();
}

Status Messenger::Init() {
  for (int i = 0; i < options_.num_reactors; ++i) {
    reactors_.push_back(
        std::make_unique<Reactor>(this, i, options_.reactor_prefix + "-" + std::to_string(i)));
  }
  for (auto& r : reactors_) CROSSFREE_RETURN_NOT_OK(r->Start());
  if (options_.connection_threads) connection_threads_ = std::make_unique<ConnectionThreadSet>(this);
  return Status::OK();
}

Messenger::~Messenger() {
  Shutdown();
  connection_threads_.reset();
  services_.clear();
  reactors_.clear();
}

Status Messenger::StartAcceptor(const std::string& host, uint16_t port, Sockaddr* bound) {
  if (acceptor_ != nullptr) return Status::IllegalState("acceptor already started");
  acceptor_ = std::make_unique<Acceptor>(this);
  return acceptor_->Start(host, port, bound);
}

Status Messenger::RegisterService(std::unique_ptr<ServiceIf> service,
                                  const ServicePoolOptions& options) {
  std::unique_lock<std::shared_mutex> l(services_mu_);
  const std::string name = service->service_name();
  if (services_.count(name) != 0) {
    return Status::AlreadyPresent("service " + name + " is already registered");
  }
  auto pool = std::make_unique<ServicePool>(std::move(service), options, next_worker_index_,
                                            options_.worker_prefix);
  next_worker_index_ += options.num_workers;
  CROSSFREE_RETURN_NOT_OK(pool->Start());
  services_.emplace(name, std::move(pool));
  return Status::OK();
}

void Messenger::Shutdown() {
  std::lock_guard<std::mutex> l(shutdown_mu_);
  if (shut_down_.exchange(true)) return;
  if (acceptor_ != nullptr) acceptor_->Shutdown();
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.shutdown_grace_ms);
  std::shared_lock<std::shared_mutex> sl(services_mu_);
  deferred_->BeginShutdown();
  for (auto& [name, pool] : services_) pool->BeginShutdown();
  if (connection_threads_ != nullptr) connection_threads_->BeginShutdown();
  bool idle = deferred_->WaitIdle(deadline);
  for (auto& [name, pool] : services_) idle = pool->WaitIdle(deadline) && idle;
  if (connection_threads_ != nullptr) idle = connection_threads_->WaitIdle(deadline) && idle;
  if (!idle) {
    // Handlers that watch RpcContext::cancelled() stop now; the others are
    // waited for below, however long they take.
    Log(LogLevel::kWarning, "messenger " + options_.name + ": handlers still running after the " +
                                std::to_string(options_.shutdown_grace_ms) +
                                " ms shutdown grace period; cancelling their calls");
    for (auto& r : reactors_) {
      Reactor* reactor = r.get();
      reactor->RunAndWait([reactor] { reactor->CancelInboundCalls(); });
    }
    if (connection_threads_ != nullptr) connection_threads_->CancelCalls();
  }
  deferred_->Shutdown();
  for (auto& [name, pool] : services_) pool->Shutdown();
  // After the deferred pool: a connection thread may wait for a deferred
  // response, which its Shutdown answered by now.
  if (connection_threads_ != nullptr) connection_threads_->Shutdown();
  sl.unlock();
  for (auto& r : reactors_) r->Shutdown();
}

bool Messenger::TryAddServerConnection() {
  int cur = server_connections_.load(std::memory_order_relaxed);
  do {
    if (options_.max_connections > 0 && cur >= options_.max_connections) return false;
  } while (!server_connections_.compare_exchange_weak(cur, cur + 1, std::memory_order_relaxed));
  return true;
}

Reactor* Messenger::ReactorFor(const Sockaddr& addr) const {
  return reactors_[(addr.Hash() >> 32) % reactors_.size()].get();
}

inline ServicePool* Messenger::PoolFor(InboundCall* call, ServicePool** last_pool) {
  ServicePool* pool = *last_pool;
  if (pool == nullptr || pool->service_name() != call->service_name()) {
    std::shared_lock<std::shared_mutex> l(services_mu_);
    auto it = services_.find(call->service_name());
    if (it == services_.end()) {
      l.unlock();
      call->RespondFailure(ErrorStatusPB::ERROR_NO_SUCH_SERVICE,
                           Status::NotFound("service " + std::string(call->service_name()) +
                                            " is not registered on this server"));
      return nullptr;
    }
    pool = it->second.get();
    *last_pool = pool;
  }
  return pool;
}

void Messenger::QueueInboundCall(InboundCall* call, ServicePool** last_pool) {
  CROSSFREE_DCHECK(call->connection() != nullptr &&
                   call->connection()->reactor()->IsCurrentThread());
  if (ServicePool* pool = PoolFor(call, last_pool)) pool->QueueInboundCall(call);
}

void Messenger::HandleInboundCallHere(InboundCall* call, ServicePool** last_pool) {
  CROSSFREE_DCHECK(call->connection() == nullptr);  // a ConnectionThread's call
  if (ServicePool* pool = PoolFor(call, last_pool)) pool->HandleInboundCallHere(call);
}

void Messenger::QueueOutboundCall(OutboundCall* call) {
  Reactor* reactor = ReactorFor(call->remote());
  call->reactor = reactor;
  reactor->ScheduleTask([call](const Status& s) {
    if (s.ok()) {
      call->reactor->AssignOutboundCall(call);
    } else {
      call->Finish(OutboundCall::State::kFinishedError, s);
    }
  });
}

template <typename Count, typename CountFn>
Count Messenger::SumOverPools(CountFn count) const {
  std::shared_lock<std::shared_mutex> l(services_mu_);
  Count n = 0;
  for (auto& [name, pool] : services_) n += count(*pool);
  return n;
}

uint64_t Messenger::queue_overflows() const {
  return SumOverPools<uint64_t>([](ServicePool& p) { return p.queue_overflows(); });
}

uint64_t Messenger::expired_in_queue() const {
  return SumOverPools<uint64_t>([](ServicePool& p) { return p.expired_in_queue(); });
}

uint64_t Messenger::cancelled_in_queue() const {
  return SumOverPools<uint64_t>([](ServicePool& p) { return p.cancelled_in_queue(); });
}

int Messenger::queued_calls() const {
  return SumOverPools<int>([](ServicePool& p) { return p.queued_calls(); });
}

}  // namespace crossfree::rpc
