// SPDX-License-Identifier: Apache-2.0
// ServicePool implementation: worker threads draining the service queue.
#include "rpc/service_pool.h"

#include <chrono>

#include "rpc/inbound_call.h"
#include "rpc/logging.h"

namespace crossfree::rpc {

ServicePool::ServicePool(std::unique_ptr<ServiceIf> service, const ServicePoolOptions& options,
                         int first_worker_index, std::string worker_prefix)
    : service_(std::move(service)),
      options_(options),
      first_worker_index_(first_worker_index),
      worker_prefix_(std::move(worker_prefix)),
      queue_(options.queue_length, options.num_workers) {}

ServicePool::~ServicePool() { Shutdown(); }

Status ServicePool::Start() {
  for (const std::string& name : options_.inline_methods) {
    int i = service_->FindMethod(name);
    if (i < 0) {
      return Status::InvalidArgument("inline method " + name + " is not a method of service " +
                                     service_name());
    }
    if (inline_.size() <= static_cast<size_t>(i)) inline_.resize(i + 1, false);
    inline_[i] = true;
  }
  for (int i = 0; i < options_.num_workers; ++i) {
    consumers_.push_back(std::make_unique<ServiceQueue::Consumer>());
  }
  for (int i = 0; i < options_.num_workers; ++i) {
    workers_.emplace_back([this, i] { RunWorker(i); });
  }
  return Status::OK();
}

void ServicePool::AnswerShuttingDown(InboundCall* call) {
  call->RespondFailure(ErrorStatusPB::FATAL_SERVER_SHUTTING_DOWN,
                       Status::ServiceUnavailable("service " + service_name() +
                                                  " is shutting down"));
}

void ServicePool::BeginShutdown() {
  if (shut_down_.exchange(true)) return;
  std::vector<InboundCall*> left = queue_.Shutdown();
  for (InboundCall* call : left) {
    AnswerShuttingDown(call);
  }
}

bool ServicePool::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> l(exit_mu_);
  return exit_cv_.wait_until(l, deadline, [this] {
    return workers_exited_ == static_cast<int>(workers_.size());
  });
}

void ServicePool::Shutdown() {
  BeginShutdown();
  if (joined_.exchange(true)) return;
  for (std::thread& t : workers_) t.join();
}

int ServicePool::InlineMethodIndex(InboundCall* call) const {
  if (inline_.empty()) return -1;
  int i = service_->FindMethod(call->method_name());
  call->set_method_index(i);  // a queued call's worker needs it too
  return i >= 0 && static_cast<size_t>(i) < inline_.size() && inline_[i] ? i : -1;
}

void ServicePool::QueueInboundCall(InboundCall* call) {
  if (int method = InlineMethodIndex(call); method >= 0) {
    // Inline: the handler runs here, on the reactor that read the request;
    // its response is written from here too (InboundCall::QueueResponse on
    // the reactor thread), unless the handler defers.
    if (shut_down_.load()) {
      AnswerShuttingDown(call);
      return;
    }
    // No staleness check (a clock read): the request was parsed just now, on
    // this thread, and its deadline is at least 1 ms after that; a
    // disconnected client is seen by the write.
    service_->Handle(call, method);
    return;
  }
  InboundCall* evicted = nullptr;
  if (queue_.Put(call, &evicted)) {
    if (evicted != nullptr) {
      overflows_.fetch_add(1, std::memory_order_relaxed);
      evicted->RespondFailure(ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
                              Status::ServiceUnavailable(
                                  "service queue is full; a call with an earlier deadline "
                                  "took this call's place in " + service_name()));
    }
    return;
  }
  if (shut_down_.load()) {
    AnswerShuttingDown(call);
    return;
  }
  overflows_.fetch_add(1, std::memory_order_relaxed);
  call->RespondFailure(ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
                       Status::ServiceUnavailable(
                           "service queue is full; " + service_name() + " has " +
                           std::to_string(queue_.capacity()) + " queued calls already"));
}

void ServicePool::HandleInboundCallHere(InboundCall* call) {
  if (shut_down_.load()) {
    AnswerShuttingDown(call);
    return;
  }
  // No staleness check, as for inline methods: the request was parsed just
  // now, on this thread.
  service_->Handle(call);
}

bool ServicePool::AnswerIfStale(InboundCall* call) {
  if (call->has_deadline() && std::chrono::steady_clock::now() >= call->deadline()) {
    // The client has given up already: skip the work.
    expired_.fetch_add(1, std::memory_order_relaxed);
    call->RespondFailure(ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
                         Status::TimedOut("call timed out in the service queue"));
    return true;
  }
  if (call->cancelled()) {
    // The client disconnected while the call waited: nobody will read the
    // answer, so skip the work.
    cancelled_.fetch_add(1, std::memory_order_relaxed);
    call->RespondFailure(ErrorStatusPB::ERROR_UNAVAILABLE,
                         Status::Aborted("call cancelled before it ran: the client "
                                         "disconnected"));
    return true;
  }
  return false;
}

void ServicePool::RunWorker(int index) {
  SetCurrentThreadName(worker_prefix_ + "-" + std::to_string(first_worker_index_ + index));
  ServiceQueue::Consumer* me = consumers_[index].get();
  ServiceQueue::current() = &queue_;
  while (InboundCall* call = queue_.BlockingGet(me)) {
    if (!AnswerIfStale(call)) service_->Handle(call);
  }
  std::lock_guard<std::mutex> l(exit_mu_);
  ++workers_exited_;
  exit_cv_.notify_all();
}

}  // namespace crossfree::rpc
