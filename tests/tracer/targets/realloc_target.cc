// SPDX-License-Identifier: Apache-2.0
// Tracer test target: realloc and reallocarray growth, shrink, NULL and 0
// cases, and a failing realloc (records nothing), all from tt_realloc_steps.
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "target_util.h"

extern "C" TT_FN int tt_realloc_steps() {
  int failures = 0;
  char* p = static_cast<char*>(realloc(nullptr, 20000));  // alloc (kRealloc)
  p[0] = 1;
  p = static_cast<char*>(realloc(p, 400000));  // grow: realloc event
  p = static_cast<char*>(realloc(p, 100));     // shrink: realloc event
  void* fail = realloc(p, SIZE_MAX / 2);       // fails: nothing
  if (fail != nullptr || errno != ENOMEM) ++failures;
  void* gone = realloc(p, 0);  // glibc frees: free (kRealloc)
  if (gone != nullptr) ++failures;
  char* q = static_cast<char*>(reallocarray(nullptr, 10, 2001));  // alloc 20010
  q = static_cast<char*>(reallocarray(q, 10, 4001));              // realloc 40010
  void* overflow = reallocarray(q, SIZE_MAX / 2, 4);              // fails: nothing
  if (overflow != nullptr) ++failures;
  free(q);  // free (kFree)
  return failures;
}

int main() {
  TT_REPORT(tt_realloc_steps);
  int failures = tt_realloc_steps();
  printf("result %d\n", failures);
  return failures;
}
