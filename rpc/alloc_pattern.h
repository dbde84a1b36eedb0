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
  void Add(const AllocPattern& other);
  static AllocPattern Legacy();
  // "fixed" or "legacy"; anything else is InvalidArgument.
  static Status FromName(std::string_view name, AllocPattern* out);
  // "fixed", "legacy" or the list of legacy switches, e.g. "legacy_messages".
  std::string ToString() const;
};

// Every switch of AllocPattern once: its name (ToString's word and
// rpc-bench's --<name> flag), its member, and what it restores in a line.
// Add, Legacy, ToString and the benchmark's flags loop over it, so a new
// switch is one row here (and its member above).
struct AllocPatternSwitch {
  const char* name;
  bool AllocPattern::*member;
  const char* help;
};
inline constexpr AllocPatternSwitch kAllocPatternSwitches[] = {
    {"legacy_reactor_tasks", &AllocPattern::legacy_reactor_tasks,
     "Heap reactor tasks: producer new, reactor delete"},
    {"legacy_call_response", &AllocPattern::legacy_call_response,
     "Client CallResponse new'ed on the client reactor, freed by the caller"},
    {"legacy_response_transfer", &AllocPattern::legacy_response_transfer,
     "Server response transfer/callbacks/buffer new'ed on the worker, freed on the reactor"},
    {"legacy_messages", &AllocPattern::legacy_messages,
     "Server messages on a per-call arena: blocks from the worker, freed on the reactor; "
     "RpcContext new'ed on the worker"},
    {"legacy_client_transfer", &AllocPattern::legacy_client_transfer,
     "Client response transfer+buffer freed by the caller; callback boxed on the caller, freed "
     "on the reactor"},
    {"legacy_reactor_writes", &AllocPattern::legacy_reactor_writes,
     "Every socket write through the reactor (KRPC): no direct send by the sync caller, no "
     "direct response write by the worker"},
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
