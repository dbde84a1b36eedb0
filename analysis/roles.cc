// SPDX-License-Identifier: Apache-2.0
// Analyzer: thread roles (see roles.h).
#include "analysis/roles.h"

#include <fmt/core.h>

namespace crossfree::analyzer {

std::string FoldDigits(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool in_digits = false;
  for (char c : name) {
    bool digit = c >= '0' && c <= '9';
    if (digit && !in_digits) out.push_back('N');
    if (!digit) out.push_back(c);
    in_digits = digit;
  }
  return out;
}

std::string ThreadRole(std::string_view name, uint32_t tid, uint32_t pid) {
  if (name.empty()) return tid == pid ? "main" : "thread";
  return FoldDigits(name);
}

bool IsInheritedName(std::string_view name, std::string_view exe_path) {
  // Linux names a process's threads after its executable (the first 15
  // bytes of the file name) until they set a name of their own.
  size_t slash = exe_path.rfind('/');
  std::string_view exe = slash == std::string_view::npos ? exe_path : exe_path.substr(slash + 1);
  return !name.empty() && exe.substr(0, 15) == name;
}

std::string ThreadLabel(const ProcessTrace& trace, uint32_t tid, GroupBy by) {
  auto it = trace.thread_names.find(tid);
  std::string_view name = it == trace.thread_names.end() ? std::string_view() : it->second;
  if (IsInheritedName(name, trace.header.exe_path)) name = {};
  if (by == GroupBy::kRole) return ThreadRole(name, tid, trace.pid());
  if (name.empty()) name = tid == trace.pid() ? "main" : "thread";
  return fmt::format("{} ({})", name, tid);
}

}  // namespace crossfree::analyzer
