// SPDX-License-Identifier: Apache-2.0
// Messenger implementation: wiring of reactors, acceptor and service pools.
#include "rpc/messenger.h"

#include "rpc/acceptor.h"
#include "rpc/inbound_call.h"
#include "rpc/outbound_call.h"

namespace crossfree::rpc {

Messenger::Messenger(const MessengerOptions& options) : options_(options) {}

Status Messenger::Create(const MessengerOptions& options, std::shared_ptr<Messenger>* out) {
  if (options.num_reactors < 1) {
    return Status::InvalidArgument("a messenger needs at least one reactor, got " +
                                   std::to_string(options.num_reactors));
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
  return Status::OK();
}

Messenger::~Messenger() {
  Shutdown();
  services_.clear();
  reactors_.clear();
}

Status Messenger::StartAcceptor(const std::string& host, uint16_t port, sockaddr_in* bound) {
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
  {
    std::shared_lock<std::shared_mutex> sl(services_mu_);
    for (auto& [name, pool] : services_) pool->Shutdown();
  }
  for (auto& r : reactors_) r->Shutdown();
}

Reactor* Messenger::ReactorFor(const sockaddr_in& addr) const {
  uint64_t h = RemoteKey(addr) * 0x9E3779B97F4A7C15ull;
  return reactors_[(h >> 32) % reactors_.size()].get();
}

void Messenger::QueueInboundCall(InboundCall* call) {
  std::shared_lock<std::shared_mutex> l(services_mu_);
  auto it = services_.find(call->service_name());
  if (it == services_.end()) {
    l.unlock();
    call->RespondFailure(ErrorStatusPB::ERROR_NO_SUCH_SERVICE,
                         Status::NotFound("service " + call->service_name() +
                                          " is not registered on this server"));
    return;
  }
  it->second->QueueInboundCall(call);
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

uint64_t Messenger::queue_overflows() const {
  std::shared_lock<std::shared_mutex> l(services_mu_);
  uint64_t n = 0;
  for (auto& [name, pool] : services_) n += pool->queue_overflows();
  return n;
}

}  // namespace crossfree::rpc

namespace crossfree::rpc {

int Messenger::queued_calls() const {
  std::shared_lock<std::shared_mutex> l(services_mu_);
  int n = 0;
  for (auto& [name, pool] : services_) n += pool->queued_calls();
  return n;
}

}  // namespace crossfree::rpc
