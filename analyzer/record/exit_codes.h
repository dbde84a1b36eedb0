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

}  // namespace crossfree::analyzer::record
