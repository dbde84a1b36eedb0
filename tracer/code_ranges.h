// SPDX-License-Identifier: Apache-2.0
// Tracer: the executable segments of the loaded modules, for stack walks
// that follow frame pointers. A word found where a return address should be
// is only taken as one if it lies in a module's executable PT_LOAD segment:
// in code without frame pointers the "saved rbp" is any value, and the word
// above it a stack canary, a heap pointer or text (issue 31: on a Thrift
// server 2,125 of 2,325 fp stacks held such words). Frames in code that
// belongs to no module (JIT code: node, the JVM) end the walk too.
//
// Any thread may call InCode, inside the recursion guard (a miss may rescan
// the module list: dl_iterate_phdr takes the loader lock, and the table is
// mmap'd). No allocation through malloc, no stdio.
#pragma once

#include <cstdint>

namespace crossfree::tracer {

// True if pc lies in an executable segment of a loaded module. Before any
// table could be built (or when mmap fails) every pc passes, as before.
// A pc in no segment rescans the modules at most once a millisecond, when
// dl_iterate_phdr's counters say objects were loaded or unloaded since the
// table was built: a frame in an object dlopen'ed less than a millisecond
// before may end a walk early.
bool InCode(uintptr_t pc);  // defined below: the thread's two last hits inline

// The calling thread's two last hit segments, [low, high): a walk's return
// addresses mostly alternate between the executable and libc, so these
// usually answer with two compares and no call. Initial-exec TLS.
struct CodeHits {
  uintptr_t low[2];
  uintptr_t size[2];  // high - low; 0: empty
};
extern __thread CodeHits tls_code_hits __attribute__((tls_model("initial-exec")));

// The table search behind InCode (out of line).
bool InCodeSlow(uintptr_t pc);

inline bool InCode(uintptr_t pc) {
  const CodeHits& h = tls_code_hits;
  if (pc - h.low[0] < h.size[0] || pc - h.low[1] < h.size[1]) return true;
  return InCodeSlow(pc);
}

// Builds the table now (InitStacks; tests).
void RefreshCodeRanges();

}  // namespace crossfree::tracer
