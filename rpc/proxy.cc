// SPDX-License-Identifier: Apache-2.0
// Proxy implementation: prepares the call on the caller thread and posts it.
#include "rpc/proxy.h"

#include <atomic>
#include <chrono>
#include <ctime>

#include "rpc/alloc_pattern.h"
#include "rpc/connection.h"
#include "rpc/futex_mutex.h"
#include "rpc/notification.h"
#include "rpc/outbound_call.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

struct Proxy::ConnectionCache {
  FutexMutex mu;
  ConnectionRef conn;  // guarded by mu
};

Proxy::Proxy(std::shared_ptr<Messenger> messenger, const Sockaddr& remote)
    : messenger_(std::move(messenger)), remote_(remote) {}

Proxy::~Proxy() = default;

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
    std::lock_guard<FutexMutex> l(cache_->mu);
    ConnectionRef& cached = cache_->conn;
    if (cached && cached->closed()) cached.reset();
    if (cached) conn = ConnectionRef(cached.get());
  }
  // Lets the reactor lend this connection's read side after delivering
  // this call's response, so that the next call can read its own.
  const bool caller_reads_wanted = messenger_->options().caller_reads_sync_responses;
  call->caller_may_read = caller_reads_wanted;
  bool direct = false;
  bool caller_reads = false;
  // No clock read for the deadline here: Prepare just set it in the future
  // (timeouts are > 0), and both waits below enforce it.
  if (conn) {
    call->reactor = conn->reactor();
    direct = conn->TrySendCallDirect(call, caller_reads_wanted ? &caller_reads : nullptr);
  }
  if (!direct) {
    call->want_connection = !conn;
    messenger_->QueueOutboundCall(call);
    done.Wait();
  } else if (caller_reads) {
    // This thread owns the read side: it reads its response itself and the
    // call finishes here, or it hands the call back to the reactor (which
    // then finishes it, deadline and cancellation included) and waits.
    if (!conn->ReadOwnResponse(call)) done.Wait();
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
    std::lock_guard<FutexMutex> l(cache_->mu);
    if (!cache_->conn) cache_->conn = std::move(call->connection_for_caller);
    call->connection_for_caller.reset();
  }
  return controller->status();
}

}  // namespace crossfree::rpc
