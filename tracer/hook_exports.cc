// SPDX-License-Identifier: Apache-2.0
// Build tool: prints the linker version script of libcrossfree-trace.so
// from the hook table (hook_table.h), so that the library exports exactly
// the symbols it interposes and nothing else. Run by tracer/CMakeLists.txt.
#include <cstdio>

#include "tracer/hook_table.h"

int main() {
  std::printf("/* Generated from tracer/hook_table.h by hook_exports: do not edit. */\n");
  std::printf("{\n  global:\n");
#define CROSSFREE_PRINT_NEXT(field, symbol, required, ret, params) std::printf("    %s;\n", symbol);
#define CROSSFREE_PRINT_OTHER(name, symbol) std::printf("    %s;\n", symbol);
  CROSSFREE_NEXT_HOOKS(CROSSFREE_PRINT_NEXT)
  CROSSFREE_OTHER_HOOKS(CROSSFREE_PRINT_OTHER)
  // The attach entry point (tracer/attach.cc, protocol/attach_protocol.h).
  std::printf("    crossfree_attach;\n");
  std::printf("  local: *;\n};\n");
  return 0;
}
