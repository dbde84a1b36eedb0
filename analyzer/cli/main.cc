// SPDX-License-Identifier: Apache-2.0
// `crossfree`: record a program's allocations and report the objects that
// cross threads. Dispatches to the subcommands in cli/*_command.cc.
#include <malloc.h>

#include <exception>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "analyzer/cli/commands.h"
#include "crossfree_version.h"

int main(int argc, char** argv) {
  // The analysis commands fill buffers of a few MiB chunk after chunk (the
  // pairing pass's decoded parts, the inflated lanes, the symbolizer's
  // DWARF). With glibc's default pad of 128 KiB the heap's top grew by a
  // brk call at a time and was trimmed back between chunks, and its pages
  // were faulted in again: 8,254 minor faults for `report --jobs 1` of a
  // 20 M-event trace, 4,737 with this pad, and about 4% less wall time
  // (docs/results/trace-size.md, "Reading"). It keeps at most 16 MiB of
  // free heap.
  mallopt(M_TOP_PAD, 16 << 20);
  CLI::App app{"crossfree: find objects allocated on one thread and freed on another"};
  app.require_subcommand(1);
  int exit_code = crossfree::analyzer::cli::kExitOk;
  crossfree::analyzer::cli::RegisterRecordCommand(app, &exit_code);
  crossfree::analyzer::cli::RegisterDumpCommand(app, &exit_code);
  crossfree::analyzer::cli::RegisterReportCommand(app, &exit_code);
  crossfree::analyzer::cli::RegisterDiffCommand(app, &exit_code);
  crossfree::analyzer::cli::RegisterGateCommand(app, &exit_code);
  crossfree::analyzer::cli::RegisterSimulateCommand(app, &exit_code);
  app.set_version_flag("--version", "crossfree " CROSSFREE_VERSION);
  app.footer(
      "DESCRIPTION\n"
      "  Records a program's allocations with a preloaded tracer, then reports the objects\n"
      "  allocated on one thread and freed on another. 'crossfree COMMAND --help' for one.\n\n"
      "EXAMPLES\n"
      "  crossfree record -o run.trace -- ./server --port 8080\n"
      "  crossfree report run.trace*\n"
      "  crossfree gate --baseline ci.baseline run.trace*");
  // Perf-style examples under each subcommand's synopsis and options.
  const std::pair<const char*, const char*> kExamples[] = {
      {"record", "crossfree record -o run.trace -- ./server --port 8080\n"
                 "  crossfree record --unwind fp --depth 16 -o run.trace -- ./a.out"},
      {"dump", "crossfree dump --summary run.trace"},
      {"report", "crossfree report --top 10 run.trace\n"
                 "  crossfree report --format pprof -o run.pprof run.trace"},
      {"diff", "crossfree diff before.trace after.trace"},
      {"gate", "crossfree gate --write-baseline --baseline ci.baseline run.trace\n"
               "  crossfree gate --baseline ci.baseline run.trace"},
      {"simulate", "crossfree simulate --top 5 run.trace"},
  };
  for (const auto& [name, example] : kExamples) {
    CLI::App* sub = app.get_subcommand(name);
    sub->footer(std::string("EXAMPLES\n  ") + example);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : crossfree::analyzer::cli::kExitUsage;
  } catch (const std::exception& e) {
    // The error may be a failed write to stderr itself (closed, or a pipe
    // whose reader went away): saying so must not throw again.
    try {
      fmt::print(stderr, "crossfree: {}\n", e.what());
    } catch (const std::exception&) {
    }
    return crossfree::analyzer::cli::kExitUsage;
  }
  return exit_code;
}
