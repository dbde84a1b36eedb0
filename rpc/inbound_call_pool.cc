// SPDX-License-Identifier: Apache-2.0
// InboundCallPool implementation.
#include "rpc/inbound_call_pool.h"

#include "rpc/inbound_call.h"
#include "rpc/transfer.h"

namespace crossfree::rpc {

InboundCallPool::InboundCallPool(size_t capacity) : capacity_(capacity) {
  calls_.reserve(capacity);
}

InboundCallPool::~InboundCallPool() { Clear(); }

InboundCall* InboundCallPool::Get(Connection* conn, std::unique_ptr<InboundTransfer> transfer) {
  if (calls_.empty()) return new InboundCall(conn, std::move(transfer));
  InboundCall* call = calls_.back();
  calls_.pop_back();
  call->Reuse(std::move(transfer));
  return call;
}

bool InboundCallPool::Put(InboundCall* call) {
  if (calls_.size() >= capacity_ || !call->CanRecycle()) return false;
  calls_.push_back(call);
  // Drops the call's connection reference; the caller holds another one,
  // so this pool (part of the connection) stays alive.
  call->Recycle();
  return true;
}

void InboundCallPool::Clear() {
  for (InboundCall* c : calls_) delete c;
  calls_.clear();
}

void InboundCallPool::Trim(size_t keep) {
  while (calls_.size() > keep) {
    delete calls_.back();
    calls_.pop_back();
  }
}

}  // namespace crossfree::rpc
