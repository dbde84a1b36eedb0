// SPDX-License-Identifier: Apache-2.0
// ResponseCallback: what an asynchronous call runs when it finishes.
#pragma once

#include "rpc/inline_function.h"

namespace crossfree::rpc {

// Called once when a call finishes. Runs on the client reactor thread (or on
// the caller's thread if the call fails before reaching a reactor, or if a
// sync caller reads its own response) and must not block. Inline storage:
// captures of up to 48 bytes, no heap allocation.
using ResponseCallback = InlineFunction<void(), 48>;

}  // namespace crossfree::rpc
