// SPDX-License-Identifier: Apache-2.0
// AllocPattern: the process-wide switches that bring back each historical
// KRPC cross-thread allocation pattern (KUDU-1865), one fix at a time.
#pragma once

#include <string>
#include <string_view>

#include "rpc/status.h"

namespace crossfree::rpc {

// Every boolean false = all fixes on (the default, "fixed"). Each boolean true
// restores one historical pattern (see docs/guide/rpc.md, "Allocation patterns"):
//   legacy_reactor_tasks     reactor tasks are heap objects new'ed by the
//                            producer (C or W) and deleted by the reactor.
//   legacy_call_response     the client's CallResponse is new'ed on the client
//                            reactor and freed with the call on the caller.
//   legacy_response_transfer the server's response OutboundTransfer, its
//                            callbacks and its buffer are new'ed by the
//                            responder (W) and deleted by the server reactor.
//   legacy_messages          request/response messages live on a per-call
//                            protobuf Arena whose blocks W allocates and the
//                            server reactor frees; RpcContext new'ed on W.
//   legacy_client_transfer   the client's response InboundTransfer and its
//                            buffer are handed to the call and freed by the
//                            caller; the async callback is boxed on the heap
//                            by the caller and freed by the client reactor.
//   legacy_reactor_writes    every socket write goes through the reactor, as
//                            in KRPC: the caller posts its request to the
//                            client reactor and the worker posts its response
//                            to the server reactor (two thread hand-offs per
//                            call that the fixed pattern skips when the
//                            connection has nothing queued; see DirectWrites()).
// Thread safety: set it once before any Messenger is built (flags parsing);
// afterwards the RPC threads only read it.
struct AllocPattern {
  bool legacy_reactor_tasks = false;
  bool legacy_call_response = false;
  bool legacy_response_transfer = false;
  bool legacy_messages = false;
  bool legacy_client_transfer = false;
  bool legacy_reactor_writes = false;

  static AllocPattern Fixed() { return AllocPattern(); }
  // Switches on every switch that `other` has on.
  void Add(const AllocPattern& other) {
    legacy_reactor_tasks |= other.legacy_reactor_tasks;
    legacy_call_response |= other.legacy_call_response;
    legacy_response_transfer |= other.legacy_response_transfer;
    legacy_messages |= other.legacy_messages;
    legacy_client_transfer |= other.legacy_client_transfer;
    legacy_reactor_writes |= other.legacy_reactor_writes;
  }
  static AllocPattern Legacy();
  // "fixed" or "legacy"; anything else is InvalidArgument.
  static Status FromName(std::string_view name, AllocPattern* out);
  // "fixed", "legacy" or the list of legacy switches, e.g. "legacy_messages".
  std::string ToString() const;
};

// The process-wide pattern. Read by the RPC threads on every call.
const AllocPattern& GetAllocPattern();
void SetAllocPattern(const AllocPattern& pattern);

// True when callers and workers may write to a connection's socket themselves
// (the fast paths of Connection::TrySendCallDirect and
// Connection::TryWriteResponseDirect). Off with legacy_reactor_writes, and
// with the two switches whose historical pairs are the reactor task
// (legacy_reactor_tasks) and the reactor-side deletion of the worker's
// response transfer (legacy_response_transfer), so that each switch alone
// still reproduces exactly its historical pairs.
inline bool DirectWrites() {
  const AllocPattern& p = GetAllocPattern();
  return !p.legacy_reactor_writes && !p.legacy_reactor_tasks && !p.legacy_response_transfer;
}

}  // namespace crossfree::rpc
