// SPDX-License-Identifier: Apache-2.0
// Status formatting helpers.
#include "rpc/status.h"

#include <cstring>

namespace crossfree::rpc {

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
#define CROSSFREE_RPC_STATUS_CASE(name, text) \
  case Code::k##name:                         \
    return text;
    CROSSFREE_RPC_STATUS_CODES(CROSSFREE_RPC_STATUS_CASE)
#undef CROSSFREE_RPC_STATUS_CASE
  }
  return "Unknown";
}

const std::string& Status::EmptyMessage() {
  static const std::string* const kEmpty = new std::string();  // never destroyed
  return *kEmpty;
}

std::string Status::ToString() const {
  std::string out = CodeName(code());
  if (ok()) return out;
  out += ": ";
  out += state_->message;
  if (state_->posix_code != 0) {
    char buf[128];
    // GNU strerror_r returns the message pointer, which may not be buf.
    const char* text = strerror_r(state_->posix_code, buf, sizeof(buf));
    out += " (error " + std::to_string(state_->posix_code) + ": " + text + ")";
  }
  return out;
}

Status Status::CloneAndPrepend(std::string_view prefix) const {
  if (ok()) return *this;
  std::string msg(prefix);
  msg += ": ";
  msg += state_->message;
  return Status(state_->code, msg, state_->posix_code);
}

}  // namespace crossfree::rpc
