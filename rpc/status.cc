// SPDX-License-Identifier: Apache-2.0
// Status formatting helpers.
#include "rpc/status.h"

#include <cstring>

namespace crossfree::rpc {

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "Not found";
    case Code::kCorruption: return "Corruption";
    case Code::kNotSupported: return "Not implemented";
    case Code::kInvalidArgument: return "Invalid argument";
    case Code::kIOError: return "IO error";
    case Code::kAlreadyPresent: return "Already present";
    case Code::kRuntimeError: return "Runtime error";
    case Code::kNetworkError: return "Network error";
    case Code::kIllegalState: return "Illegal state";
    case Code::kAborted: return "Aborted";
    case Code::kRemoteError: return "Remote error";
    case Code::kServiceUnavailable: return "Service unavailable";
    case Code::kTimedOut: return "Timed out";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  std::string out = CodeName(code_);
  if (ok()) return out;
  out += ": ";
  out += message_;
  if (posix_code_ != 0) {
    char buf[128];
    // GNU strerror_r returns the message pointer, which may not be buf.
    const char* text = strerror_r(posix_code_, buf, sizeof(buf));
    out += " (error " + std::to_string(posix_code_) + ": " + text + ")";
  }
  return out;
}

Status Status::CloneAndPrepend(std::string_view prefix) const {
  if (ok()) return *this;
  std::string msg(prefix);
  msg += ": ";
  msg += message_;
  return Status(code_, msg, posix_code_);
}

}  // namespace crossfree::rpc
