// SPDX-License-Identifier: Apache-2.0
// `crossfree diff BEFORE AFTER`: which cross-thread pairs a change removed,
// added, grew or shrank, normalized per 1000 allocations.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <vector>

#include "analyzer/render/html.h"
#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/cli/cli_common.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/diff.h"

namespace crossfree::analyzer::cli {
namespace {

struct DiffArgs {
  std::string before;
  std::string after;
  std::vector<std::string> before_set;
  std::vector<std::string> after_set;
  std::string format = "text";
  std::string output;
  double min_change = 0.1;
  uint64_t before_operations = 0;
  uint64_t after_operations = 0;
  CommonOptions common;
};

}  // namespace

void RegisterDiffCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Compare the cross-thread pairs of two runs (per operation or per 1000 allocations)");
  sub->add_option("BEFORE", args->before, "Trace of the run before the change");
  sub->add_option("AFTER", args->after, "Trace of the run after the change");
  sub->add_option("--before", args->before_set,
                  "Traces of the run before (repeatable: one per process; instead of BEFORE)");
  sub->add_option("--after", args->after_set,
                  "Traces of the run after (repeatable: one per process; instead of AFTER)");
  AddFormatOption(sub, &args->format, {"text", "json", "html"});
  sub->add_option("--min-change", args->min_change,
                  "Relative rate change below which a pair counts as unchanged (0.1 = 10%)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  AddOutputOption(sub, &args->output, "diff");
  sub->add_option("--before-operations", args->before_operations,
                  "Operations the run before performed (with --after-operations: rates per "
                  "operation)");
  sub->add_option("--after-operations", args->after_operations,
                  "Operations the run after performed");
  AddCommonOptions(sub, &args->common);
  sub->callback([args, exit_code] {
    if (ListSkips(args->common)) return;
    std::vector<std::string> before_traces = args->before_set, after_traces = args->after_set;
    if (!args->before.empty()) before_traces.insert(before_traces.begin(), args->before);
    if (!args->after.empty()) after_traces.insert(after_traces.begin(), args->after);
    if (before_traces.empty() || after_traces.empty()) {
      fmt::print(stderr,
                 "crossfree diff: give the runs to compare: BEFORE AFTER, or --before FILE... "
                 "--after FILE... (one file per process)\n");
      *exit_code = kExitUsage;
      return;
    }
    if ((args->before_operations == 0) != (args->after_operations == 0)) {
      fmt::print(stderr, "crossfree diff: give both --before-operations and --after-operations "
                         "(rates per operation need both runs' operations), or neither\n");
      *exit_code = kExitUsage;
      return;
    }
    analyzer::Analysis before, after;
    if (!RunAnalysis("diff", before_traces, args->common, &before) ||
        !RunAnalysis("diff", after_traces, args->common, &after)) {
      *exit_code = kExitUsage;
      return;
    }
    before.operations = args->before_operations;
    after.operations = args->after_operations;
    analyzer::DiffResult d = analyzer::ComputeDiff(before, after, args->min_change);
    std::string text = args->format == "html" ? analyzer::render::RenderDiffHtml(before, after, d)
                       : args->format == "json" ? analyzer::render::RenderDiffJson(before, after, d)
                                              : analyzer::render::RenderDiffText(before, after, d,
                                                                         TextWidth(args->common, args->output));
    // HTML escapes what it shows itself (and its script must stay intact).
    *exit_code = WriteOutput("diff", args->output, text,
                             args->format == "html" ? Escape::kNone : Escape::kControls)
                     ? kExitOk
                     : kExitUsage;
  });
}

}  // namespace crossfree::analyzer::cli
