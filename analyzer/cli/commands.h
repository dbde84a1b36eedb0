// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `crossfree` CLI. Each lives in its own
// <name>_command.cc and registers itself on the CLI11 app; when CLI11 selects
// it, its callback runs the command and stores the process exit code.
//
// Exit codes, for every command: 0 ok, 1 gate failed (gate only; record
// returns the traced command's status), 2 usage or input error.
#pragma once

namespace CLI {
class App;
}

namespace crossfree::analyzer::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitGateFailed = 1;
inline constexpr int kExitUsage = 2;

void RegisterRecordCommand(CLI::App& app, int* exit_code);
void RegisterDumpCommand(CLI::App& app, int* exit_code);
void RegisterReportCommand(CLI::App& app, int* exit_code);
void RegisterDiffCommand(CLI::App& app, int* exit_code);
void RegisterGateCommand(CLI::App& app, int* exit_code);
void RegisterSimulateCommand(CLI::App& app, int* exit_code);

}  // namespace crossfree::analyzer::cli
