// SPDX-License-Identifier: Apache-2.0
// `crossfree report TRACE...`: the cross-thread pairs of one run (one trace
// per process), as text or JSON.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <fmt/core.h>

#include <memory>

#include "analyzer/cli/cli_common.h"
#include "analyzer/cli/commands.h"
#include "analyzer/render/folded.h"
#include "analyzer/render/html.h"
#include "analyzer/render/pprof.h"
#include "analyzer/render/text.h"
#include "analyzer/render/json.h"
#include "analyzer/simulate/report_costs.h"

namespace crossfree::analyzer::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> traces;
  size_t top = 10;
  std::string format = "text";
  std::string output;
  uint64_t operations = 0;
  std::string allocator;
  bool lifetimes = false;
  simulate::ModelSettings model;  // AddModelOptions
  CommonOptions common;
};

}  // namespace

void RegisterReportCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ReportArgs>();
  CLI::App* sub = app.add_subcommand(
      "report", "Report the objects allocated on one thread and freed on another");
  AddTracesArgument(sub, &args->traces);
  sub->add_option("--top", args->top, "Cross-thread pairs shown (0 = all)")->capture_default_str();
  AddFormatOption(sub, &args->format, {"text", "json", "html", "folded", "pprof"});
  AddOutputOption(sub, &args->output, "report");
  sub->add_option("--operations", args->operations,
                  "Operations the traced run performed (RPC calls, requests): per-call rates "
                  "become per operation");
  sub->add_option("--allocator", args->allocator,
                  "Add each pair's cost under this allocator model, its lifetimes and CPUs "
                  "(crossfree simulate --allocator; one more ordered pass over the traces)")
      ->check(CLI::IsMember(simulate::AllocatorNames()));
  sub->add_flag("--lifetimes", args->lifetimes,
                "Add each pair's object lifetimes and CPUs (one more ordered pass)");
  AddModelOptions(sub, &args->model);
  AddCommonOptions(sub, &args->common);
  sub->callback([args, exit_code, sub] {
    if (ListSkips(args->common)) return;
    if (!HasTraces("report", args->traces)) {
      *exit_code = kExitUsage;
      return;
    }
    // Model settings without the model they set, or a model with a window
    // (the replay's caches depend on every event from the start): refused.
    const simulate::AllocatorEntry* allocator = simulate::FindAllocator(args->allocator);
    if (auto refused = simulate::RefusedFlag(allocator, GivenModelFlags(args->model))) {
      const simulate::AllocatorEntry* taker = simulate::OnlyAllocatorTaking(*refused);
      fmt::print(stderr, "crossfree report: {} needs --allocator {}\n",
                 simulate::ModelFlagName(*refused), taker ? taker->name : "NAME");
      *exit_code = kExitUsage;
      return;
    }
    bool costs = allocator || args->lifetimes;
    if (costs && (sub->count("--from") || sub->count("--to"))) {
      fmt::print(stderr,
                 "crossfree report: --{} replays the whole trace; it does not combine with "
                 "--from/--to\n",
                 allocator ? "allocator" : "lifetimes");
      *exit_code = kExitUsage;
      return;
    }
    analyzer::Analysis analysis;
    if (!RunAnalysis("report", args->traces, args->common, &analysis)) {
      *exit_code = kExitUsage;
      return;
    }
    if (costs) {
      std::string source = std::string(HasModelOptions(args->model) ? "flags" : "defaults") +
                           "; the trace does not record the run's environment";
      std::string error;
      if (!simulate::AddPairCosts(args->traces, allocator, args->model, source,
                                  ToAnalysisOptions(args->common), &analysis, &error)) {
        fmt::print(stderr, "crossfree report: {}\n", Printable(error));
        *exit_code = kExitUsage;
        return;
      }
    }
    analysis.operations = args->operations;
    analyzer::render::ReportOptions options;
    options.top = args->top;
    options.by = ToAnalysisOptions(args->common).by;
    options.site_depth = args->common.site_depth;
    options.width = TextWidth(args->common, args->output);
    std::string text = args->format == "json"     ? analyzer::render::RenderReportJson(analysis, options)
                       : args->format == "folded" ? analyzer::render::RenderReportFolded(analysis)
                       : args->format == "pprof"  ? analyzer::render::RenderReportPprof(analysis)
                       : args->format == "html"   ? analyzer::render::RenderReportHtml(analysis)
                                                  : analyzer::render::RenderReportText(analysis, options);
    if (args->format == "pprof" && (args->output.empty() || args->output == "-") &&
        isatty(STDOUT_FILENO)) {
      fmt::print(stderr, "crossfree report: --format pprof is binary: give -o FILE.pb.gz\n");
      *exit_code = kExitUsage;
      return;
    }
    // Binary and machine formats are written byte for byte.
    *exit_code = WriteOutput("report", args->output, text,
                             args->format == "pprof" || args->format == "html" ? Escape::kNone
                                                                               : Escape::kControls)
                     ? kExitOk
                     : kExitUsage;
  });
}

}  // namespace crossfree::analyzer::cli
