// SPDX-License-Identifier: Apache-2.0
// Where `crossfree record` finds libcrossfree-trace.so, for both ways of
// recording (run_command.h, attach_record.h). Any thread.
#pragma once

#include <optional>
#include <string>

namespace crossfree::analyzer::record {

// $CROSSFREE_TRACER_LIB, else next to this binary (build tree: bin/../lib;
// installed: <prefix>/bin/../lib[64|/<triplet>|/crossfree]). When there is
// none, says on stderr where it looked and returns nullopt.
std::optional<std::string> TracerLibraryOrError();

}  // namespace crossfree::analyzer::record
