// SPDX-License-Identifier: Apache-2.0
// `crossfree report`: SCAFFOLD, to be replaced by its owner.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "analyzer/commands.h"

namespace crossfree::cli {

void RegisterReportCommand(CLI::App& app, int* exit_code) {
  CLI::App* sub = app.add_subcommand("report", "(not implemented yet)");
  sub->allow_extras();
  sub->callback([exit_code] {
    fmt::print(stderr, "crossfree report: not implemented yet\n");
    *exit_code = kExitUsage;
  });
}

}  // namespace crossfree::cli
