// SPDX-License-Identifier: Apache-2.0
// `crossfree dump`: SCAFFOLD, to be replaced by its owner.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "analyzer/commands.h"

namespace crossfree::cli {

void RegisterDumpCommand(CLI::App& app, int* exit_code) {
  CLI::App* sub = app.add_subcommand("dump", "(not implemented yet)");
  sub->allow_extras();
  sub->callback([exit_code] {
    fmt::print(stderr, "crossfree dump: not implemented yet\n");
    *exit_code = kExitUsage;
  });
}

}  // namespace crossfree::cli
