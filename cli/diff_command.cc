// SPDX-License-Identifier: Apache-2.0
// `crossfree diff BEFORE AFTER`: which cross-thread pairs a change removed,
// added, grew or shrank, normalized per 1000 allocations.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>

#include "render/json.h"
#include "render/text.h"
#include "cli/cli_common.h"
#include "cli/commands.h"
#include "analysis/diff.h"

namespace crossfree::cli {
namespace {

struct DiffArgs {
  std::string before;
  std::string after;
  std::string format = "text";
  std::string output;
  double min_change = 0.1;
  CommonOptions common;
};

}  // namespace

void RegisterDiffCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App* sub = app.add_subcommand(
      "diff", "Compare the cross-thread pairs of two runs (per 1000 allocations)");
  sub->add_option("before", args->before, "Trace of the run before the change")->required();
  sub->add_option("after", args->after, "Trace of the run after the change")->required();
  sub->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub->add_option("--min-change", args->min_change,
                  "Relative rate change below which a pair counts as unchanged (0.1 = 10%)")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub->add_option("--output,-o", args->output, "Write the diff to this file (default stdout)");
  AddCommonOptions(sub, &args->common);
  sub->callback([args, exit_code] {
    analyzer::Analysis before, after;
    if (!RunAnalysis("diff", {args->before}, args->common, &before) ||
        !RunAnalysis("diff", {args->after}, args->common, &after)) {
      *exit_code = kExitUsage;
      return;
    }
    analyzer::DiffResult d = analyzer::ComputeDiff(before, after, args->min_change);
    std::string text = args->format == "json" ? analyzer::RenderDiffJson(before, after, d)
                                              : analyzer::RenderDiffText(before, after, d);
    *exit_code = WriteOutput("diff", args->output, text) ? kExitOk : kExitUsage;
  });
}

}  // namespace crossfree::cli
