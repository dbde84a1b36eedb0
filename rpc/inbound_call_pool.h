// SPDX-License-Identifier: Apache-2.0
// InboundCallPool: finished server calls kept by one connection for its next
// requests, so a call costs no allocation for its object, its parsed header's
// submessage and strings (about 1.4 KiB each).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace crossfree::rpc {

class Connection;
class InboundCall;
class InboundTransfer;

// Owner: one server Connection. Thread: that connection's reactor only (no
// lock), so every pooled call is made and freed by the same thread. A
// pooled call holds no reference to the connection (the pool is part of the
// connection; a reference would keep it alive forever); it gets one back
// when Get() hands it out. Bounded: at most `capacity` calls.
class InboundCallPool {
 public:
  explicit InboundCallPool(size_t capacity);
  ~InboundCallPool();  // deletes the pooled calls
  InboundCallPool(const InboundCallPool&) = delete;
  InboundCallPool& operator=(const InboundCallPool&) = delete;

  // A call for the request in `transfer` on `conn`: a pooled one if there is
  // any, else a new one.
  InboundCall* Get(Connection* conn, std::unique_ptr<InboundTransfer> transfer);
  // Keeps a finished call if there is room and it is small enough to keep
  // (InboundCall::Recycle); false if the caller must delete it. Putting a
  // call drops its connection reference: the caller must hold another one
  // (the reactor's, as long as the connection is open).
  bool Put(InboundCall* call);
  // Deletes every pooled call (connection shutdown).
  void Clear();
  // Deletes pooled calls beyond the first `keep` (an idle connection's tick).
  void Trim(size_t keep);
  size_t size() const { return calls_.size(); }

 private:
  const size_t capacity_;
  std::vector<InboundCall*> calls_;  // reserved to capacity_
};

}  // namespace crossfree::rpc
