// SPDX-License-Identifier: Apache-2.0
// ServicePoolOptions: how a registered service runs its handlers
// (Messenger::RegisterService); public, unlike the ServicePool itself.
#pragma once

#include <string>
#include <vector>

namespace crossfree::rpc {

struct ServicePoolOptions {
  int num_workers = 1;
  int queue_length = 200;
  // Methods (by name) whose handlers run inline: on the server reactor
  // thread that read the request, which then writes the response itself,
  // skipping the hand-off to a worker and back (two thread wake-ups per
  // call fewer). Empty (the default) is the KRPC topology: every call goes
  // through the queue to a worker. Only for handlers that never block (no
  // I/O, no locks held long, no sleeping): while one runs, every other
  // connection of that reactor waits. A handler may still RpcContext::Defer
  // the slow part to the deferred pool. Inline calls skip the queue, so
  // queue_length does not bound them; the per-connection bounds
  // (MessengerOptions) do. Unknown names make RegisterService fail. With
  // MessengerOptions::connection_threads every method runs on the
  // connection's own thread, whatever this says (and the workers idle).
  std::vector<std::string> inline_methods;
};

}  // namespace crossfree::rpc
