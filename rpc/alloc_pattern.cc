// SPDX-License-Identifier: Apache-2.0
// The process-wide AllocPattern value.
#include "rpc/alloc_pattern.h"

namespace crossfree::rpc {

namespace {
AllocPattern g_pattern;
}  // namespace

void AllocPattern::Add(const AllocPattern& other) {
  for (const AllocPatternSwitch& s : kAllocPatternSwitches) this->*s.member |= other.*s.member;
}

AllocPattern AllocPattern::Legacy() {
  AllocPattern p;
  for (const AllocPatternSwitch& s : kAllocPatternSwitches) p.*s.member = true;
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
  bool all = true;
  for (const AllocPatternSwitch& s : kAllocPatternSwitches) {
    all = all && this->*s.member;
    if (!(this->*s.member)) continue;
    if (!out.empty()) out += ",";
    out += s.name;
  }
  if (out.empty()) return "fixed";
  if (all) return "legacy";
  return out;
}

const AllocPattern& GetAllocPattern() { return g_pattern; }
void SetAllocPattern(const AllocPattern& pattern) { g_pattern = pattern; }

}  // namespace crossfree::rpc
