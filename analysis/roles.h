// SPDX-License-Identifier: Apache-2.0
// Analyzer: thread roles. A report groups threads by role, the thread name
// with every run of digits folded to "N" (reactor-0, reactor-13 ->
// reactor-N), so it reads "worker-N -> reactor-N" instead of listing tids.
// Unnamed threads are "main" (tid == pid) or "thread". Stateless.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/trace_set.h"

namespace crossfree::analyzer {

enum class GroupBy { kRole, kThread };

// "reactor-12" -> "reactor-N"; "io2x3" -> "ioNxN".
std::string FoldDigits(std::string_view name);

// The role of a thread: folded name, or main/thread when unnamed.
std::string ThreadRole(std::string_view name, uint32_t tid, uint32_t pid);

// True when name is the one Linux gives every thread of a process that has
// not named itself: the executable's file name, cut to 15 bytes. Such
// threads count as unnamed (main or thread).
bool IsInheritedName(std::string_view name, std::string_view exe_path);

// The label a thread is grouped under: its role (kRole), or its unfolded
// name (or main/thread) followed by " (tid)" (kThread).
std::string ThreadLabel(const ProcessTrace& trace, uint32_t tid, GroupBy by);

}  // namespace crossfree::analyzer
