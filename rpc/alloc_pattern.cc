// SPDX-License-Identifier: Apache-2.0
// The process-wide AllocPattern value.
#include "rpc/alloc_pattern.h"

namespace crossfree::rpc {

namespace {
AllocPattern g_pattern;
}  // namespace

AllocPattern AllocPattern::Legacy() {
  AllocPattern p;
  p.legacy_reactor_tasks = true;
  p.legacy_call_response = true;
  p.legacy_response_transfer = true;
  p.legacy_messages = true;
  p.legacy_client_transfer = true;
  p.legacy_reactor_writes = true;
  return p;
}

Status AllocPattern::FromName(std::string_view name, AllocPattern* out) {
  if (name == "fixed") {
    *out = Fixed();
  } else if (name == "legacy") {
    *out = Legacy();
  } else {
    return Status::InvalidArgument("unknown alloc pattern '" + std::string(name) +
                                   "' (expected fixed or legacy)");
  }
  return Status::OK();
}

std::string AllocPattern::ToString() const {
  std::string out;
  auto add = [&out](bool on, const char* name) {
    if (!on) return;
    if (!out.empty()) out += ",";
    out += name;
  };
  add(legacy_reactor_tasks, "legacy_reactor_tasks");
  add(legacy_call_response, "legacy_call_response");
  add(legacy_response_transfer, "legacy_response_transfer");
  add(legacy_messages, "legacy_messages");
  add(legacy_client_transfer, "legacy_client_transfer");
  add(legacy_reactor_writes, "legacy_reactor_writes");
  if (out.empty()) return "fixed";
  if (legacy_reactor_tasks && legacy_call_response && legacy_response_transfer &&
      legacy_messages && legacy_client_transfer && legacy_reactor_writes) {
    return "legacy";
  }
  return out;
}

const AllocPattern& GetAllocPattern() { return g_pattern; }
void SetAllocPattern(const AllocPattern& pattern) { g_pattern = pattern; }

}  // namespace crossfree::rpc
