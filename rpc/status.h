// SPDX-License-Identifier: Apache-2.0
// Status: the error value every rpc/ function returns instead of throwing.
// Part of the crossfree RPC core (rpc/).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace crossfree::rpc {

// A Status is a code, a human-readable message and an optional POSIX errno.
// An OK status holds no heap memory; an error status owns its code, message
// and errno (one allocation, plus the message's if it is long).
// Thread safety: a Status is a plain value; copy it between threads freely.
class Status {
 public:
  enum class Code : int {
    kOk = 0,
    kNotFound,
    kCorruption,
    kNotSupported,
    kInvalidArgument,
    kIOError,
    kAlreadyPresent,
    kRuntimeError,
    kNetworkError,
    kIllegalState,
    kAborted,
    kRemoteError,
    kServiceUnavailable,
    kTimedOut,
  };

  Status() = default;
  // Copies own their own copy of an error (as the message string used to):
  // each thread frees what it made. Moves leave the source OK.
  Status(const Status& o)
      : state_(o.state_ != nullptr ? std::make_unique<State>(*o.state_) : nullptr) {}
  Status(Status&& o) noexcept = default;
  Status& operator=(const Status& o) {
    if (this != &o) state_ = o.state_ != nullptr ? std::make_unique<State>(*o.state_) : nullptr;
    return *this;
  }
  Status& operator=(Status&& o) noexcept = default;
  static Status OK() { return Status(); }
  static Status NotFound(std::string_view m, int e = 0) { return Status(Code::kNotFound, m, e); }
  static Status Corruption(std::string_view m, int e = 0) { return Status(Code::kCorruption, m, e); }
  static Status NotSupported(std::string_view m, int e = 0) { return Status(Code::kNotSupported, m, e); }
  static Status InvalidArgument(std::string_view m, int e = 0) {
    return Status(Code::kInvalidArgument, m, e);
  }
  static Status IOError(std::string_view m, int e = 0) { return Status(Code::kIOError, m, e); }
  static Status AlreadyPresent(std::string_view m, int e = 0) {
    return Status(Code::kAlreadyPresent, m, e);
  }
  static Status RuntimeError(std::string_view m, int e = 0) { return Status(Code::kRuntimeError, m, e); }
  static Status NetworkError(std::string_view m, int e = 0) { return Status(Code::kNetworkError, m, e); }
  static Status IllegalState(std::string_view m, int e = 0) { return Status(Code::kIllegalState, m, e); }
  static Status Aborted(std::string_view m, int e = 0) { return Status(Code::kAborted, m, e); }
  static Status RemoteError(std::string_view m, int e = 0) { return Status(Code::kRemoteError, m, e); }
  static Status ServiceUnavailable(std::string_view m, int e = 0) {
    return Status(Code::kServiceUnavailable, m, e);
  }
  static Status TimedOut(std::string_view m, int e = 0) { return Status(Code::kTimedOut, m, e); }

  bool ok() const { return state_ == nullptr; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsCorruption() const { return code() == Code::kCorruption; }
  bool IsInvalidArgument() const { return code() == Code::kInvalidArgument; }
  bool IsIOError() const { return code() == Code::kIOError; }
  bool IsNetworkError() const { return code() == Code::kNetworkError; }
  bool IsIllegalState() const { return code() == Code::kIllegalState; }
  bool IsAborted() const { return code() == Code::kAborted; }
  bool IsRemoteError() const { return code() == Code::kRemoteError; }
  bool IsServiceUnavailable() const { return code() == Code::kServiceUnavailable; }
  bool IsTimedOut() const { return code() == Code::kTimedOut; }

  Code code() const { return state_ != nullptr ? state_->code : Code::kOk; }
  // Empty for OK.
  const std::string& message() const { return state_ != nullptr ? state_->message : EmptyMessage(); }
  int posix_code() const { return state_ != nullptr ? state_->posix_code : 0; }

  // "Code name: message (error N: strerror)".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // Returns a copy whose message is "<prefix>: <message>".
  Status CloneAndPrepend(std::string_view prefix) const;

 private:
  // Only errors have a state (never with Code::kOk): an OK status is one
  // null pointer, so making, moving, testing and dropping the OK statuses
  // every call passes around costs a store or a compare, not a string.
  struct State {
    Code code;
    std::string message;
    int posix_code;
  };
  Status(Code code, std::string_view msg, int posix_code)
      : state_(std::make_unique<State>(State{code, std::string(msg), posix_code})) {}
  static const std::string& EmptyMessage();

  std::unique_ptr<State> state_;
};

}  // namespace crossfree::rpc

// Returns the status of `expr` from the enclosing function when it is an error.
#define CROSSFREE_RETURN_NOT_OK(expr)                      \
  do {                                                     \
    ::crossfree::rpc::Status _s = (expr);                  \
    if (!_s.ok()) return _s;                               \
  } while (0)

// Same, with "<msg>: " prepended to the message.
#define CROSSFREE_RETURN_NOT_OK_PREPEND(expr, msg)         \
  do {                                                     \
    ::crossfree::rpc::Status _s = (expr);                  \
    if (!_s.ok()) return _s.CloneAndPrepend(msg);          \
  } while (0)
