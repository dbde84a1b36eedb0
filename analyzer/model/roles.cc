// SPDX-License-Identifier: Apache-2.0
// Analyzer: thread roles (see roles.h).
#include "analyzer/model/roles.h"

#include <fmt/core.h>

#include "analyzer/model/sites.h"

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

bool IsInheritedName(std::string_view name, std::string_view exe_path,
                     std::string_view main_name) {
  // Linux names a process's threads after the file it was started as (the
  // first 15 bytes of the name given to execve) until they set their own.
  if (name.empty()) return false;
  size_t slash = exe_path.rfind('/');
  std::string_view exe = slash == std::string_view::npos ? exe_path : exe_path.substr(slash + 1);
  if (exe.substr(0, 15) == name) return true;
  // Started through a symlink that names the version: python3 ->
  // python3.11, gcc -> gcc-12. The exe path is the resolved one.
  if (exe.size() > name.size() && exe.starts_with(name) &&
      (exe[name.size()] == '.' || exe[name.size()] == '-')) {
    return true;
  }
  return !main_name.empty() && name == main_name;
}

namespace {

// The main thread's name: what a thread it starts inherits (Linux copies the
// creating thread's name).
std::string_view MainName(const ProcessTrace& trace) {
  auto named = trace.thread_names.find(trace.pid());
  return named == trace.thread_names.end() ? std::string_view() : named->second;
}

// Whether a thread's name is one it did not choose: inherited from the
// executable's name or the main thread's, or the name the process was
// started as (through a symlink: redis-server -> redis-check-rdb).
bool Inherited(const ProcessTrace& trace, std::string_view name, uint32_t tid) {
  if (IsInheritedName(name, trace.header.exe_path, tid == trace.pid() ? "" : MainName(trace))) {
    return true;
  }
  return !name.empty() && name == trace.exec_name;
}

bool IsStartupFrame(std::string_view function, std::string_view module) {
  static constexpr std::string_view kStart[] = {
      "start_thread", "clone", "clone3", "__clone", "__clone3", "_start",
      "__libc_start_main", "__libc_start_call_main", "execute_native_thread_routine",
      "thread_start"};
  for (std::string_view s : kStart) {
    if (function == s) return true;
  }
  std::string_view callable = CallableName(function);
  if (callable.starts_with("std::") || callable.starts_with("__gnu_cxx::")) return true;
  if (function.empty()) {
    size_t slash = module.rfind('/');
    std::string_view file = slash == std::string_view::npos ? module : module.substr(slash + 1);
    return file.starts_with("libc.so") || file.starts_with("libstdc++") ||
           file.starts_with("libpthread") || file.starts_with("ld-linux");
  }
  return false;
}

// A lambda is named by what encloses it: "ProducerLoop()::{lambda()#1}::
// operator()() const" (out of line) or "ProducerLoop()::{lambda@f.cc:18}::
// operator()" (inlined) -> "ProducerLoop()::lambda"; empty for a function
// that is not a lambda's body.
std::string LambdaRole(std::string_view function) {
  std::string_view callable = CallableName(function);
  size_t at = callable.find("::{lambda");
  if (at == std::string_view::npos) {
    if (callable.starts_with("{lambda")) return "lambda";
    return {};
  }
  std::string_view outer = callable.substr(0, at);
  // The enclosing function without its parameters and scopes, as a role.
  std::string bare = BareFunctionName(outer);
  if (bare.empty()) bare = std::string(outer);
  return bare + "()::lambda";
}

bool IsThreadStart(std::string_view function) {
  return function == "start_thread" || function == "clone" || function == "clone3" ||
         function == "__clone" || function == "__clone3" || function == "thread_start";
}

}  // namespace

void AssignEntryRoles(ProcessTrace& trace, size_t trace_index,
                      const std::vector<uint32_t>& entry_stack, SymbolResolver& resolver) {
  for (size_t s = 0; s < trace.streams.size() && s < entry_stack.size(); ++s) {
    uint32_t tid = trace.streams[s].tid;
    if (tid == trace.pid()) continue;
    auto named = trace.thread_names.find(tid);
    if (named != trace.thread_names.end() && !Inherited(trace, named->second, tid)) {
      continue;
    }
    auto stack = trace.stacks.find(entry_stack[s]);
    if (stack == trace.stacks.end() || stack->second.empty()) continue;
    // Outermost first: the stack must begin at the thread's start.
    std::vector<SymbolFrame> frames;
    for (uint64_t address : stack->second) {
      for (const SymbolFrame& f : resolver.Resolve(trace_index, address)) frames.push_back(f);
    }
    bool started = false;
    for (size_t i = frames.size(); i-- > 0;) {
      const SymbolFrame& f = frames[i];
      if (IsThreadStart(f.function)) started = true;
      if (!started || IsStartupFrame(f.function, f.module)) continue;
      if (f.function.empty()) break;  // an unsymbolized frame names nothing
      std::string role = LambdaRole(f.function);
      if (role.empty()) role = BareFunctionName(f.function);
      if (!role.empty()) trace.entry_roles[tid] = role;
      break;
    }
  }
}

std::string ThreadLabel(const ProcessTrace& trace, uint32_t tid, GroupBy by) {
  auto it = trace.thread_names.find(tid);
  std::string_view name = it == trace.thread_names.end() ? std::string_view() : it->second;
  if (Inherited(trace, name, tid)) name = {};
  if (name.empty() && tid != trace.pid()) {
    auto role = trace.entry_roles.find(tid);
    if (role != trace.entry_roles.end()) name = role->second;
  }
  if (by == GroupBy::kRole) return ThreadRole(name, tid, trace.pid());
  if (name.empty()) name = tid == trace.pid() ? "main" : "thread";
  return fmt::format("{} ({})", name, tid);
}

}  // namespace crossfree::analyzer
