// SPDX-License-Identifier: Apache-2.0
// CROSSFREE_DCHECK: contracts of rpc/ (mostly thread affinity) that are
// checked in Debug builds and in builds configured with -DCROSSFREE_DCHECK=ON,
// and compiled out otherwise. Unlike assert() it does not depend on NDEBUG,
// which every RelWithDebInfo build defines.
#pragma once

#include <cstdio>
#include <cstdlib>

#if defined(CROSSFREE_DCHECK_ON) && CROSSFREE_DCHECK_ON
#define CROSSFREE_DCHECK_IS_ON() 1
// Prints the failed condition with its place and aborts, so a broken
// contract stops the process where it happened (a core dump, a stack).
#define CROSSFREE_DCHECK(cond)                                                         \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: CROSSFREE_DCHECK failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                             \
      std::abort();                                                                    \
    }                                                                                  \
  } while (false)
#else
#define CROSSFREE_DCHECK_IS_ON() 0
// Off: the condition is still compiled (so it cannot rot) but never evaluated.
#define CROSSFREE_DCHECK(cond) \
  do {                         \
    if (false) (void)(cond);   \
  } while (false)
#endif
