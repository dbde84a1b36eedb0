// SPDX-License-Identifier: Apache-2.0
// Proxy: the client handle for one service at one address; generated typed
// proxies derive from it.
#pragma once

#include <memory>
#include <string>

#include <google/protobuf/message_lite.h>

#include "rpc/in_place.h"
#include "rpc/remote_method.h"
#include "rpc/response_callback.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class Messenger;

// Owner: the caller; keeps the messenger alive. Threads: any thread may make
// calls concurrently, each with its own controller.
class Proxy {
 public:
  Proxy(std::shared_ptr<Messenger> messenger, const Sockaddr& remote);
  virtual ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // Starts a call; `callback` runs exactly once on the client reactor (or on
  // this thread if the call fails before reaching a reactor). `request` may
  // be freed on return; `response` and `controller` must live until the
  // callback.
  void AsyncRequest(const RemoteMethod& method, const google::protobuf::MessageLite& request,
                    google::protobuf::MessageLite* response, RpcController* controller,
                    ResponseCallback callback);
  // Blocks until the call finishes; returns controller->status(). In the
  // fixed pattern (DirectWrites()) the calling thread writes the request to
  // the connection itself when it can (Connection::TrySendCallDirect), else
  // it posts the call to the client reactor; either way the reactor reads
  // the response and wakes the caller once. With the messenger's
  // caller_reads_sync_responses, a caller whose call is the only one
  // outstanding on the connection reads the response from the socket itself
  // (Connection::ReadOwnResponse), and no other thread is woken.
  Status SyncRequest(const RemoteMethod& method, const google::protobuf::MessageLite& request,
                     google::protobuf::MessageLite* response, RpcController* controller);

  const Sockaddr& remote() const { return remote_; }
  Messenger* messenger() const { return messenger_.get(); }

 private:
  std::shared_ptr<Messenger> messenger_;
  Sockaddr remote_;
  // The connection the last sync call went over (see SyncRequest), for
  // direct sends; dropped once it is closed. Defined in proxy.cc (a mutex
  // and a counted reference to the connection), kept in place.
  struct ConnectionCache;
  InPlace<ConnectionCache, 16, alignof(void*)> cache_;
};

}  // namespace crossfree::rpc
