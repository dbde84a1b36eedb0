// SPDX-License-Identifier: Apache-2.0
// Decimal formatting without libc, for code that may run where libc's
// formatting cannot (the tracer's hooks and its signal-safe messages) and
// for the plain-data protocol headers shared with the CLI. Pure function:
// any thread may call it at any time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace crossfree::format {

// Writes v in decimal at out (no terminator) and returns the number of
// digits written; out needs room for 20.
inline size_t FormatDecimal(uint64_t v, char* out) {
  char reversed[20];
  size_t n = 0;
  do {
    reversed[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; ++i) out[i] = reversed[n - 1 - i];
  return n;
}

}  // namespace crossfree::format
