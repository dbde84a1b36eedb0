// SPDX-License-Identifier: Apache-2.0
// In-process cross-thread allocation counter for tests/rpc: replaces global
// operator new/delete in the test binary, remembers which thread allocated
// each block while recording, and counts frees on a different thread.
#pragma once

#include <map>
#include <string>

namespace crossfree::rpc::testing {

// Starts recording: clears the table and counts from now on. Allocations
// made before Start are ignored when freed.
void StartAllocRecording();
// Stops recording and returns the cross-thread pairs seen, keyed
// "<alloc thread role> -> <free thread role>" (thread names with digits
// folded to N, e.g. "worker-N -> reactor-N"), valued by count. Call while the
// threads involved are still alive (names are read from /proc).
std::map<std::string, long> StopAllocRecording();
// Allocations recorded (all threads) since Start.
long RecordedAllocations();
// Allocations recorded since Start by thread role ("reactor-N", ...; same
// folding as above). Call before the threads exit.
std::map<std::string, long> RecordedAllocationsByRole();

}  // namespace crossfree::rpc::testing
