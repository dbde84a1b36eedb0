// SPDX-License-Identifier: Apache-2.0
// Status: the error value every rpc/ function returns instead of throwing.
// Part of the crossfree RPC core (rpc/).
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace crossfree::rpc {

// Every error code once, in Code's order: its name, which makes the
// enumerator (Code::kNotFound), the factory (Status::NotFound(message,
// errno)) and the predicate (IsNotFound()), and the text ToString() starts
// with. A new code is one line here.
#define CROSSFREE_RPC_STATUS_CODES(X)             \
  X(NotFound, "Not found")                        \
  X(Corruption, "Corruption")                     \
  X(NotSupported, "Not implemented")              \
  X(InvalidArgument, "Invalid argument")          \
  X(IOError, "IO error")                          \
  X(AlreadyPresent, "Already present")            \
  X(RuntimeError, "Runtime error")                \
  X(NetworkError, "Network error")                \
  X(IllegalState, "Illegal state")                \
  X(Aborted, "Aborted")                           \
  X(RemoteError, "Remote error")                  \
  X(ServiceUnavailable, "Service unavailable")    \
  X(TimedOut, "Timed out")

// A Status is a code, a human-readable message and an optional POSIX errno.
// An OK status holds no heap memory; an error status owns its code, message
// and errno (one allocation, plus the message's if it is long).
// Thread safety: a Status is a plain value; copy it between threads freely.
class Status {
 public:
  enum class Code : int {
    kOk = 0,
#define CROSSFREE_RPC_STATUS_ENUMERATOR(name, text) k##name,
    CROSSFREE_RPC_STATUS_CODES(CROSSFREE_RPC_STATUS_ENUMERATOR)
#undef CROSSFREE_RPC_STATUS_ENUMERATOR
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
  bool ok() const { return state_ == nullptr; }
#define CROSSFREE_RPC_STATUS_MAKE_AND_TEST(name, text)                                  \
  static Status name(std::string_view m, int e = 0) { return Status(Code::k##name, m, e); } \
  bool Is##name() const { return code() == Code::k##name; }
  CROSSFREE_RPC_STATUS_CODES(CROSSFREE_RPC_STATUS_MAKE_AND_TEST)
#undef CROSSFREE_RPC_STATUS_MAKE_AND_TEST

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
