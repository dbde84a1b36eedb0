// SPDX-License-Identifier: Apache-2.0
// OutboundCall implementation: request serialization, timer, response
// parsing and the exactly-once callback.
#include "rpc/outbound_call.h"

#include <cmath>

#include "rpc/alloc_pattern.h"
#include "rpc/connection.h"
#include "rpc/reactor.h"

namespace crossfree::rpc {

const char* OutboundCall::StateName(State s) {
  switch (s) {
    case State::kReady: return "READY";
    case State::kOnOutboundQueue: return "ON_OUTBOUND_QUEUE";
    case State::kSending: return "SENDING";
    case State::kSent: return "SENT";
    case State::kFinishedSuccess: return "FINISHED_SUCCESS";
    case State::kFinishedError: return "FINISHED_ERROR";
    case State::kTimedOut: return "TIMED_OUT";
    case State::kCancelled: return "CANCELLED";
  }
  return "UNKNOWN";
}

OutboundCall::~OutboundCall() {
  // Only what the members' own destructors do not free (Reset would also
  // rebuild the response, transfer and status for a next call: wasted
  // work when a controller lives for one call, the common case).
  delete legacy_response_;
  delete legacy_callback_;
}

Status OutboundCall::Prepare(const Sockaddr& remote, const RemoteMethod* method,
                             const google::protobuf::MessageLite& request,
                             google::protobuf::MessageLite* response, ResponseCallback callback,
                             std::chrono::nanoseconds timeout) {
  remote_ = remote;
  method_ = method;
  response_pb_ = response;
  if (!request.IsInitialized()) {
    return Status::InvalidArgument("request is missing required fields: " +
                                   request.InitializationErrorString());
  }
  const size_t body_size = request.ByteSizeLong();
  body_inline_ = body_size <= kInlineBodyBytes;
  if (body_inline_) {
    // ByteSizeLong cached the sizes: serialized without a string or a copy.
    request.SerializeWithCachedSizesToArray(frame_inline_ + kInlineHeaderBytes);
    body_size_ = body_size;
  } else {
    request_body_.clear();
    if (!request.AppendPartialToString(&request_body_)) {
      return Status::InvalidArgument("request too large to serialize");
    }
    body_size_ = request_body_.size();
  }
  if (GetAllocPattern().legacy_client_transfer) {
    // Historical pattern: a heap-stored callback made here, freed by the
    // client reactor after it runs.
    legacy_callback_ = new ResponseCallback(std::move(callback));
  } else {
    callback_ = std::move(callback);
  }
  timeout_ = timeout;
  has_deadline_ = timeout.count() > 0;
  if (has_deadline_) {
    deadline_ = std::chrono::steady_clock::now() + timeout;
    double ms = std::ceil(std::chrono::duration<double, std::milli>(timeout).count());
    timeout_millis_ = ms > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(ms);
  } else {
    timeout_millis_ = 0;
  }
  status_ = Status::OK();
  call_id_ = -1;
  has_deferred_ = false;
  finish_pending_cancel_ = false;
  pending_cancels.store(0, std::memory_order_relaxed);
  caller_may_read = false;
  set_state(State::kReady);
  return Status::OK();
}

void OutboundCall::Reset() {
  delete legacy_response_;
  legacy_response_ = nullptr;
  response_ = CallResponse();
  error_.reset();
  header_heap_.reset();
  transfer_.Reset();
  delete legacy_callback_;
  legacy_callback_ = nullptr;
  callback_.Reset();
  connection_for_caller.reset();
  want_connection = false;
  status_ = Status::OK();
  set_state(State::kReady);
}

void OutboundCall::SerializeHeader(int32_t call_id) {
  call_id_ = call_id;
  RequestHeaderFields h;
  h.call_id = call_id;
  h.remote_method_field = method_->remote_method_field;
  h.timeout_millis = timeout_millis_;
  h.body_size = body_size_;
  size_t sidecar_bytes = 0;
  if (outbound_sidecars != nullptr) {
    h.sidecars = *outbound_sidecars;
    for (const std::string& sc : *outbound_sidecars) sidecar_bytes += sc.size();
  }
  FrameLayout layout = ComputeFrameLayout(RequestHeaderSize(h), body_size_, sidecar_bytes);
  uint8_t* const inline_body = frame_inline_ + kInlineHeaderBytes;
  uint8_t* head;
  bool contiguous = false;  // head and body in one slice
  if (layout.head_bytes > kInlineHeaderBytes) {
    // Freed on this reactor as soon as the frame is written.
    header_heap_.reset(new uint8_t[layout.head_bytes]);
    head = header_heap_.get();
  } else if (body_inline_) {
    head = inline_body - layout.head_bytes;  // ends where the body starts
    contiguous = true;
  } else {
    head = frame_inline_;
  }
  WriteBodyLength(layout, WriteRequestHeader(h, WriteFrameStart(layout, head)));
  transfer_.Reset();
  if (contiguous) {
    transfer_.AddSlice(head, layout.head_bytes + body_size_);
  } else {
    transfer_.AddSlice(head, layout.head_bytes);
    transfer_.AddSlice(body_inline_ ? inline_body : reinterpret_cast<const uint8_t*>(request_body_.data()),
                       body_size_);
  }
  if (outbound_sidecars != nullptr) {
    for (const std::string& sc : *outbound_sidecars) transfer_.AddSlice(sc.data(), sc.size());
  }
  transfer_.set_callbacks(this);
}

void OutboundCall::NotifyTransferFinished() {
  header_heap_.reset();
  if (has_deferred_) {
    has_deferred_ = false;
    Finish(deferred_state_, deferred_status_);
    return;
  }
  set_state(State::kSent);
}

void OutboundCall::NotifyTransferAborted(const Status&) {
  header_heap_.reset();
  if (has_deferred_) {
    // Abandoned while being written: no longer in the awaiting map, so the
    // connection will not finish it; do it here.
    has_deferred_ = false;
    Finish(deferred_state_, deferred_status_);
  }
  // Otherwise the connection finishes it from its awaiting map.
}

void OutboundCall::HandleResponse(CallResponse* r, Connection* conn) {
  Status st;
  State state = State::kFinishedSuccess;
  if (r->header.is_error) {
    auto err = std::make_unique<ErrorStatusPB>();
    if (!err->ParsePartialFromArray(r->body_pb.data(), static_cast<int>(r->body_pb.size())) ||
        !err->IsInitialized()) {
      st = Status::IOError("invalid RPC error response: unparsable ErrorStatusPB");
    } else {
      // Overload and shutdown are worth a retry elsewhere: say so by code.
      const int posix = err->has_posix_code() ? err->posix_code() : 0;
      switch (err->code()) {
        case ErrorStatusPB::ERROR_SERVER_TOO_BUSY:
        case ErrorStatusPB::ERROR_UNAVAILABLE:
        case ErrorStatusPB::FATAL_SERVER_SHUTTING_DOWN:
          st = Status::ServiceUnavailable(err->message(), posix);
          break;
        default:
          st = Status::RemoteError(err->message(), posix);
      }
      error_ = std::move(err);
    }
    state = State::kFinishedError;
  } else if (!response_pb_->ParsePartialFromArray(r->body_pb.data(),
                                                   static_cast<int>(r->body_pb.size()))) {
    st = Status::IOError("invalid RPC response: unparsable body");
    state = State::kFinishedError;
  } else if (!response_pb_->IsInitialized()) {
    st = Status::IOError("invalid RPC response, missing fields: " +
                         response_pb_->InitializationErrorString());
    state = State::kFinishedError;
  }
  const AllocPattern& p = GetAllocPattern();
  // Fix 5: the frame was allocated by this reactor; give it back to the
  // connection's pool (or free it) here, right after parsing, unless the
  // caller still needs it for sidecar views.
  if (!p.legacy_client_transfer && r->sidecars.empty()) {
    conn->RecycleInboundTransfer(std::move(r->transfer));
    r->body_pb = std::string_view();
  }
  if (p.legacy_call_response) {
    // Historical pattern: allocated here, freed with the call by its owner.
    delete legacy_response_;
    legacy_response_ = new CallResponse(std::move(*r));
  } else {
    response_ = std::move(*r);
  }
  if (caller_may_read && conn->reactor()->IsCurrentThread()) conn->MaybeParkReadSide();
  Finish(state, st);
}

const CallResponse* OutboundCall::response() const {
  return legacy_response_ != nullptr ? legacy_response_ : &response_;
}

void OutboundCall::Finish(State state, const Status& status) {
  status_ = status;
  if (pending_cancels.load(std::memory_order_acquire) > 0) {
    // A Cancel() task is queued for this call and will dereference it; let
    // that task run the callback so the owner cannot free the call first.
    finish_pending_cancel_ = true;
    pending_finish_state_ = state;
    return;
  }
  ResponseCallback* box = legacy_callback_;
  legacy_callback_ = nullptr;
  ResponseCallback cb = std::move(callback_);
  set_state(state);
  // From here on the owner may free this call: touch nothing of it.
  if (box != nullptr) {
    (*box)();
    delete box;
  } else if (cb) {
    cb();
  }
}

void OutboundCall::ArmTimer(struct ev_loop* loop, Connection* conn) {
  timer_loop_ = loop;
  timer_conn_ = conn;
  if (!has_deadline_) return;
  double after = std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
  if (after < 0) after = 0;
  ev_timer_init(&timer_, &OutboundCall::TimerCallback, after, 0.);
  timer_.data = this;
  ev_timer_start(loop, &timer_);
  timer_armed_ = true;
}

void OutboundCall::StopTimer() {
  if (timer_armed_) {
    ev_timer_stop(timer_loop_, &timer_);
    timer_armed_ = false;
  }
}

void OutboundCall::TimerCallback(struct ev_loop* loop, ev_timer* w, int) {
  auto* call = static_cast<OutboundCall*>(w->data);
  call->timer_armed_ = false;
  auto now = std::chrono::steady_clock::now();
  if (now < call->deadline_) {
    // libev measures from its cached loop time, which can lag: never time
    // out before the deadline.
    double left = std::chrono::duration<double>(call->deadline_ - now).count();
    ev_timer_set(&call->timer_, left, 0.);
    ev_timer_start(loop, &call->timer_);
    call->timer_armed_ = true;
    return;
  }
  call->TimeOut();
}

void OutboundCall::TimeOut() {
  if (is_finished() || timer_conn_ == nullptr) return;
  double ms = std::chrono::duration<double, std::milli>(timeout_).count();
  char buf[64];
  snprintf(buf, sizeof(buf), "%.3f ms", ms);
  timer_conn_->AbandonCall(this, Status::TimedOut(method_->method_name + " RPC to " +
                                                  remote_.ToString() + " timed out after " +
                                                  buf + " (" + StateName(state()) + ")"));
}

void OutboundCall::HandleCancelTask() {
  int left = pending_cancels.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if (finish_pending_cancel_) {
    if (left == 0) {
      finish_pending_cancel_ = false;
      Status st = status_;
      Finish(pending_finish_state_, st);
    }
    return;
  }
  State s = state();
  if (s == State::kOnOutboundQueue || s == State::kSent) {
    timer_conn_->AbandonCall(this, Status::Aborted("call cancelled"));
  }
  // kSending: already abandoned; kReady cannot happen (the call was posted
  // before the cancel task); finished: nothing to do.
}

}  // namespace crossfree::rpc
