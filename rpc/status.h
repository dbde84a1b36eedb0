// SPDX-License-Identifier: Apache-2.0
// Status: the error value every rpc/ function returns instead of throwing.
// Part of the crossfree RPC core (rpc/).
#pragma once

#include <string>
#include <string_view>

namespace crossfree::rpc {

// A Status is a code, a human-readable message and an optional POSIX errno.
// An OK status holds no heap memory; an error status owns its message.
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

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsNetworkError() const { return code_ == Code::kNetworkError; }
  bool IsIllegalState() const { return code_ == Code::kIllegalState; }
  bool IsAborted() const { return code_ == Code::kAborted; }
  bool IsRemoteError() const { return code_ == Code::kRemoteError; }
  bool IsServiceUnavailable() const { return code_ == Code::kServiceUnavailable; }
  bool IsTimedOut() const { return code_ == Code::kTimedOut; }

  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  int posix_code() const { return posix_code_; }

  // "Code name: message (error N: strerror)".
  std::string ToString() const;
  static const char* CodeName(Code code);

  // Returns a copy whose message is "<prefix>: <message>".
  Status CloneAndPrepend(std::string_view prefix) const;

 private:
  Status(Code code, std::string_view msg, int posix_code)
      : code_(code), message_(msg), posix_code_(posix_code) {}

  Code code_ = Code::kOk;
  std::string message_;
  int posix_code_ = 0;
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
