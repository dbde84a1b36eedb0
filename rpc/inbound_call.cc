// SPDX-License-Identifier: Apache-2.0
// InboundCall implementation: request parsing and response preparation in
// the fixed (embedded) and legacy (heap, worker-allocated) patterns.
#include "rpc/inbound_call.h"

#include "rpc/alloc_pattern.h"
#include "rpc/connection.h"
#include "rpc/connection_thread.h"
#include "rpc/dcheck.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"
#include "rpc/serialization.h"
#include "rpc/service_queue.h"

namespace crossfree::rpc {

// legacy_response_transfer: the callbacks object KRPC new'ed on the worker
// for each response; the server reactor deletes it, the transfer, the buffer
// and the call once the response is written.
class LegacyResponseCallbacks final : public TransferCallbacks {
 public:
  explicit LegacyResponseCallbacks(InboundCall* call) : call_(call) {}
  void NotifyTransferFinished() override { Done(); }
  void NotifyTransferAborted(const Status&) override { Done(); }

 private:
  void Done() {
    InboundCall* call = call_;
    call->legacy_callbacks_ = nullptr;
    delete this;
    InboundCall::Destroy(call);
  }
  InboundCall* call_;
};

InboundCall::InboundCall(Connection* conn, std::unique_ptr<InboundTransfer> transfer)
    : conn_(conn), conn_ref_(conn), transfer_(std::move(transfer)) {}

InboundCall::InboundCall(ConnectionThread* owner)
    : conn_(nullptr), thread_conn_(owner), pooled_(true) {}

bool InboundCall::cancelled() const {
  if (cancelled_.load(std::memory_order_relaxed)) return true;
  return conn_ != nullptr ? conn_->closed() : thread_conn_->closed();
}

Messenger* InboundCall::messenger() const {
  return conn_ != nullptr ? conn_->reactor()->messenger() : thread_conn_->messenger();
}

InboundCall::~InboundCall() {
  // Pooled: state already released. conn_ref_ (if any) is dropped after
  // this body, once nothing here needs the connection.
  if (!pooled_) ReleaseCallState();
}

void InboundCall::ReleaseCallState() {
  delete legacy_callbacks_;
  legacy_callbacks_ = nullptr;
  delete legacy_transfer_;
  legacy_transfer_ = nullptr;
  delete legacy_buffer_;
  legacy_buffer_ = nullptr;
  context_.reset();
  arena_.reset();
  ReleaseMessages();
  response_heap_.reset();
  // The request frame came from this connection's reactor: back to its pool
  // when we are on that reactor (not on the shutdown path of another thread).
  // A connection thread's call is released by that thread only (Recycle),
  // and the frame is its reused receive buffer.
  if (transfer_ != nullptr) {
    if (conn_ == nullptr) {
      thread_conn_->RecycleInboundTransfer(std::move(transfer_));
    } else if (conn_->reactor()->IsCurrentThread()) {
      conn_->RecycleInboundTransfer(std::move(transfer_));
    }
  }
  transfer_.reset();
}

void InboundCall::Destroy(InboundCall* call) {
  // A connection thread's call ends in its thread's Recycle, never here.
  CROSSFREE_DCHECK(call->conn_ != nullptr);
  // IsCurrentThread first: only the reactor may read the connection state.
  if (call->conn_->reactor()->IsCurrentThread()) {
    call->conn_->ReleaseInboundCall(call);
    return;
  }
  Messenger* messenger = call->messenger();
  delete call;
  messenger->CountInboundCallReleased();
}

bool InboundCall::CanRecycle() const {
  // Bounded retention: keep only calls whose reusable parts are small.
  // (The method names are views into the request frame: nothing to keep.)
  constexpr size_t kMaxKeptSidecars = 8;
  return sidecars_.capacity() <= kMaxKeptSidecars &&
         outbound_sidecars_.capacity() <= kMaxKeptSidecars &&
         header_.sidecar_offsets.capacity() <= kMaxKeptSidecars;
}

void InboundCall::Recycle() {
  CROSSFREE_DCHECK(conn_ == nullptr || conn_->reactor()->IsCurrentThread());
  ReleaseCallState();
  body_pb_ = std::string_view();
  sidecars_.clear();
  has_deadline_ = false;
  deadline_ = {};
  outbound_sidecars_.clear();  // response sidecar strings, freed on this reactor
  response_transfer_.Reset();
  response_transfer_ptr_ = nullptr;
  pooled_ = true;
  conn_ref_.reset();
}

void InboundCall::Reuse(std::unique_ptr<InboundTransfer> transfer) {
  CROSSFREE_DCHECK(conn_ == nullptr || conn_->reactor()->IsCurrentThread());
  conn_ref_ = ConnectionRef(conn_);
  pooled_ = false;
  cancelled_.store(false, std::memory_order_relaxed);
  method_index_ = kMethodNotLookedUp;
  transfer_ = std::move(transfer);
}

Status InboundCall::Parse() {
  CROSSFREE_DCHECK(conn_ == nullptr || conn_->reactor()->IsCurrentThread());
  arrival_ = std::chrono::steady_clock::now();
  std::string_view body;
  CROSSFREE_RETURN_NOT_OK(ParseFrame(transfer_->frame(), &header_, &body));
  if (!header_.has_remote_method) {
    return Status::Corruption("request header for call id " + std::to_string(header_.call_id) +
                              " has no remote_method");
  }
  CROSSFREE_RETURN_NOT_OK(
      SplitSidecars(body, header_.sidecar_offsets, &body_pb_, &sidecars_, kMaxSidecars));
  if (header_.timeout_millis > 0) {
    has_deadline_ = true;
    deadline_ = arrival_ + std::chrono::milliseconds(header_.timeout_millis);
  }
  return Status::OK();
}

RpcContext* InboundCall::CreateContext(google::protobuf::MessageLite* request,
                                       google::protobuf::MessageLite* response, bool legacy) {
  if (legacy) return new RpcContext(this, request, response, true);
  context_.emplace(this, request, response, false);
  return &*context_;
}

google::protobuf::Arena* InboundCall::arena() {
  if (!arena_) arena_.emplace();
  return &*arena_;
}

void InboundCall::ConstructMessages(const MethodInfo& method,
                                    google::protobuf::MessageLite** request,
                                    google::protobuf::MessageLite** response) {
  CROSSFREE_DCHECK(placed_request_ == nullptr && !message_arena_);
  const size_t align = method.message_align;
  // The response starts at the first multiple of its alignment after the request.
  const size_t resp_offset = align == 0 ? 0 : (method.request_size + align - 1) / align * align;
  if (method.place_request != nullptr && align <= kMessageBlockAlign &&
      resp_offset + method.response_size <= sizeof(message_arena_block_)) {
    placed_request_ = method.place_request(message_arena_block_);
    placed_response_ = method.place_response(message_arena_block_ + resp_offset);
    *request = placed_request_;
    *response = placed_response_;
    return;
  }
  message_arena_.emplace(message_arena_block_, sizeof(message_arena_block_));
  *request = method.new_request(&*message_arena_);
  *response = method.new_response(&*message_arena_);
}

void InboundCall::ReleaseMessages() {
  if (placed_request_ != nullptr) {
    placed_response_->~MessageLite();
    placed_request_->~MessageLite();
    placed_request_ = placed_response_ = nullptr;
  }
  message_arena_.reset();
}

void InboundCall::PrepareSuccess(const google::protobuf::MessageLite& response,
                                 std::vector<std::string>* sidecars) {
  if (sidecars != nullptr) outbound_sidecars_.swap(*sidecars);
  PrepareResponse(false, response);
}

void InboundCall::PrepareFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status) {
  ErrorStatusPB err;
  err.set_message(status.ToString());
  err.set_code(code);
  err.set_app_status_code(static_cast<int>(status.code()));
  if (status.posix_code() != 0) err.set_posix_code(status.posix_code());
  outbound_sidecars_.clear();
  PrepareResponse(true, err);
}

void InboundCall::RespondFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status) {
  PrepareFailure(code, status);
  QueueResponse();
}

void InboundCall::PrepareResponse(bool is_error, const google::protobuf::MessageLite& body) {
  ResponseHeaderFields header;
  header.call_id = call_id();
  header.is_error = is_error;
  size_t body_size = body.ByteSizeLong();
  header.body_size = body_size;
  header.sidecars = outbound_sidecars_;
  size_t sidecar_bytes = 0;
  for (const std::string& sc : outbound_sidecars_) sidecar_bytes += sc.size();
  FrameLayout layout = ComputeFrameLayout(ResponseHeaderSize(header), body_size, sidecar_bytes);
  const size_t n = layout.head_bytes + body_size;
  uint8_t* dst;
  OutboundTransfer* t;
  if (GetAllocPattern().legacy_response_transfer) {
    // Historical pattern: buffer, transfer and callbacks made by the
    // responder (a worker), deleted by the server reactor.
    legacy_buffer_ = new std::string(n, '\0');
    dst = reinterpret_cast<uint8_t*>(legacy_buffer_->data());
    legacy_transfer_ = new OutboundTransfer();
    legacy_callbacks_ = new LegacyResponseCallbacks(this);
    t = legacy_transfer_;
    t->set_callbacks(legacy_callbacks_);
  } else {
    // Fix 3: everything lives in the call. The request frame is no longer
    // needed once the handler responds, and the reactor allocated it, so a
    // response that does not fit inline reuses it.
    if (n <= kInlineResponseBytes) {
      dst = response_inline_;
    } else if (n <= transfer_->buffer_size()) {
      dst = transfer_->mutable_buffer();
    } else {
      response_heap_.reset(new uint8_t[n]);
      dst = response_heap_.get();
    }
    t = &response_transfer_;
    t->Reset();
    t->set_callbacks(this);
  }
  uint8_t* p = WriteBodyLength(layout, WriteResponseHeader(header, WriteFrameStart(layout, dst)));
  body.SerializeWithCachedSizesToArray(p);
  t->AddSlice(dst, n);
  for (const std::string& sc : outbound_sidecars_) t->AddSlice(sc.data(), sc.size());
  response_transfer_ptr_ = t;
}

void InboundCall::QueueResponse() {
  if (conn_ == nullptr) {
    // Connection-thread mode: that thread writes it (it is waiting for this,
    // or will look once the handler returns).
    thread_conn_->ResponseReady();
    return;
  }
  Reactor* r = conn_->reactor();
  if (r->IsCurrentThread()) {
    conn_->QueueResponseForCall(this);
    return;
  }
  // Fast path: the responder writes the response itself when the
  // connection has nothing queued, the reactor is idle (a task would cost
  // it a wake-up) and the responder has no backlog (a worker with calls
  // waiting is the bottleneck: the reactor writes then, keeping the
  // syscall off the worker).
  if (DirectWrites() && r->is_polling()) {
    ServiceQueue* q = ServiceQueue::current();
    if ((q == nullptr || q->approx_queued() == 0) && conn_->TryWriteResponseDirect(this)) return;
  }
  InboundCall* self = this;
  r->ScheduleTask([self](const Status& s) {
    if (s.ok()) {
      self->conn_->QueueResponseForCall(self);
    } else {
      InboundCall::Destroy(self);
    }
  });
}

void InboundCall::NotifyTransferFinished() { Destroy(this); }
void InboundCall::NotifyTransferAborted(const Status&) { Destroy(this); }

}  // namespace crossfree::rpc
