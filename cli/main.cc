// SPDX-License-Identifier: Apache-2.0
// `crossfree`: record a program's allocations and report the objects that
// cross threads. Dispatches to the subcommands in cli/*_command.cc.
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"crossfree: find objects allocated on one thread and freed on another"};
  app.require_subcommand(1);
  int exit_code = crossfree::cli::kExitOk;
  crossfree::cli::RegisterRecordCommand(app, &exit_code);
  crossfree::cli::RegisterDumpCommand(app, &exit_code);
  crossfree::cli::RegisterReportCommand(app, &exit_code);
  crossfree::cli::RegisterDiffCommand(app, &exit_code);
  crossfree::cli::RegisterGateCommand(app, &exit_code);
  crossfree::cli::RegisterSimulateCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : crossfree::cli::kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "crossfree: {}\n", e.what());
    return crossfree::cli::kExitUsage;
  }
  return exit_code;
}
