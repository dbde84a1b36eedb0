// SPDX-License-Identifier: Apache-2.0
// Proxy implementation: prepares the call on the caller thread and posts it.
#include "rpc/proxy.h"

#include <condition_variable>
#include <mutex>

#include "rpc/messenger.h"

namespace crossfree::rpc {

namespace {

// A one-shot flag the reactor sets and the caller waits for. Lives on the
// caller's stack; the reactor signals while holding the mutex, so the caller
// cannot return (and destroy it) before the reactor is done with it.
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    cv_.notify_one();
  }
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return done_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
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
  Notification done;
  AsyncRequest(method, request, response, controller, [&done] { done.Notify(); });
  done.Wait();
  return controller->status();
}

}  // namespace crossfree::rpc
