// SPDX-License-Identifier: Apache-2.0
// The exit codes of `crossfree record` that are record's own, not the traced
// command's (docs/guide/analyzer.md, "Exit codes"). record otherwise
// returns the command's status, 128 + N when signal N killed it.
#pragma once

namespace crossfree::analyzer::record {

// Bad options, a command that succeeded but left no trace, an attach that
// could not start: the value every crossfree command uses for usage and
// input errors (analyzer/cli/commands.h).
inline constexpr int kExitUsage = 2;

// The command succeeded but its traces miss events it recorded: the tracer
// found no free buffer in time and dropped them, chunks were damaged in
// shared memory, or a write failed. record's last lines say how many and
// why. (When the command itself failed, its status wins: it is non-zero
// already.)
inline constexpr int kExitEventsLost = 3;

}  // namespace crossfree::analyzer::record
