// SPDX-License-Identifier: Apache-2.0
// Proxy implementation: prepares the call on the caller thread and posts it.
#include "rpc/proxy.h"

#include <atomic>
#include <chrono>
#include <ctime>

#include "rpc/alloc_pattern.h"
#include "rpc/futex.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

namespace {

// A one-shot flag the reactor sets and the caller waits for, on a futex, so
// the notifier wakes the caller exactly once and the caller, once woken, does
// not block again on a mutex the notifier still holds. Lives on the caller's
// stack: Notify's last touch is the FUTEX_WAKE on its address, which is
// harmless even if the caller has returned meanwhile (the word is still
// mapped stack memory; a stray wake-up of a later futex there is spurious,
// and every futex waiter tolerates those).
class Notification {
 public:
  void Notify() {
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
      FutexWake(&state_, 1);
    }
  }
  void Wait() { WaitUntil(nullptr); }
  // False if `deadline` (steady clock; nullptr: none) passed first.
  bool WaitUntil(const std::chrono::steady_clock::time_point* deadline) {
    for (;;) {
      uint32_t s = state_.load(std::memory_order_acquire);
      if (s == kDone) return true;
      if (s == kIdle &&
          !state_.compare_exchange_strong(s, kSleeping, std::memory_order_acq_rel)) {
        continue;  // notified meanwhile
      }
      timespec ts;
      timespec* tsp = nullptr;
      if (deadline != nullptr) {
        auto left = *deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::nanoseconds(0)) return state_.load() == kDone;
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        ts.tv_sec = ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        tsp = &ts;
      }
      FutexWait(&state_, kSleeping, tsp);
    }
  }

 private:
  static constexpr uint32_t kIdle = 0, kSleeping = 1, kDone = 2;
  std::atomic<uint32_t> state_{kIdle};
};

}  // namespace

Proxy::Proxy(std::shared_ptr<Messenger> messenger, const Sockaddr& remote)
    : messenger_(std::move(messenger)), remote_(remote) {}

void Proxy::AsyncRequest(const RemoteMethod& method, const google::protobuf::MessageLite& request,
                         google::protobuf::MessageLite* response, RpcController* controller,
                         ResponseCallback callback) {
  OutboundCall* call = controller->call();
  call->outbound_sidecars = &controller->outbound_sidecars();
  Status s = call->Prepare(remote_, &method, request, response, std::move(callback),
                           controller->timeout());
  if (!s.ok()) {
    call->Finish(OutboundCall::State::kFinishedError, s);
    return;
  }
  messenger_->QueueOutboundCall(call);
}

Status Proxy::SyncRequest(const RemoteMethod& method, const google::protobuf::MessageLite& request,
                          google::protobuf::MessageLite* response, RpcController* controller) {
  if (!DirectWrites()) {
    Notification done;
    AsyncRequest(method, request, response, controller, [&done] { done.Notify(); });
    done.Wait();
    return controller->status();
  }
  OutboundCall* call = controller->call();
  call->outbound_sidecars = &controller->outbound_sidecars();
  Notification done;
  Status s = call->Prepare(remote_, &method, request, response, [&done] { done.Notify(); },
                           controller->timeout());
  if (!s.ok()) {
    call->Finish(OutboundCall::State::kFinishedError, s);
    return controller->status();
  }
  // The cached connection, unless it closed: then the reactor opens another.
  ConnectionRef conn;
  {
    std::lock_guard<std::mutex> l(conn_mu_);
    if (conn_ && conn_->closed()) conn_.reset();
    if (conn_) conn = ConnectionRef(conn_.get());
  }
  bool direct = false;
  if (conn && (!call->has_deadline() || std::chrono::steady_clock::now() < call->deadline())) {
    call->reactor = conn->reactor();
    direct = conn->TrySendCallDirect(call);
  }
  if (!direct) {
    call->want_connection = !conn;
    messenger_->QueueOutboundCall(call);
    done.Wait();
  } else if (!call->has_deadline()) {
    done.Wait();
  } else {
    std::chrono::steady_clock::time_point deadline = call->deadline();
    if (!done.WaitUntil(&deadline)) {
      // No libev timer on a direct call: time it out on its reactor, as the
      // timer would, and wait until that task has run (it touches the call).
      Notification ran;
      Notification* ran_p = &ran;
      call->reactor->ScheduleTask([call, ran_p](const Status& st) {
        if (st.ok()) call->TimeOut();
        ran_p->Notify();
      });
      ran.Wait();
      done.Wait();
    }
  }
  if (call->connection_for_caller) {
    std::lock_guard<std::mutex> l(conn_mu_);
    if (!conn_) conn_ = std::move(call->connection_for_caller);
    call->connection_for_caller.reset();
  }
  return controller->status();
}

}  // namespace crossfree::rpc
