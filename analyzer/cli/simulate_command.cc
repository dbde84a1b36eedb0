// SPDX-License-Identifier: Apache-2.0
// `crossfree simulate TRACE...`: predicts the central free-list transfers
// gperftools 2.10's thread caches would make for a recorded run.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>

#include "analyzer/render/html.h"
#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/cli/cli_common.h"
#include "analyzer/cli/commands.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::cli {
namespace {

struct SimulateArgs {
  std::vector<std::string> traces;
  size_t top = 10;
  std::string allocator = simulate::DefaultAllocator().name;
  bool pairs = false;
  // Every model setting, gperftools' and --cache-from-first-event's
  // included (AddModelOptions registers the rest).
  simulate::ModelSettings model;
  std::string format = "text";
  std::string output;
  CommonOptions common;
};

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Predict gperftools 2.10 central free-list transfers (thread-cache fetches and releases), "
      "or with --allocator what jemalloc's, glibc's or mimalloc's caches would cost per pair");
  AddTracesArgument(sub, &args->traces);
  sub->add_option("--max-total-thread-cache-bytes",
                  args->model.gperftools.max_total_thread_cache_bytes,
                  "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES of the modelled run")
      ->capture_default_str();
  sub->add_option("--transfer-num-objects", args->model.gperftools.transfer_num_objects,
                  "TCMALLOC_TRANSFER_NUM_OBJ of the modelled run (batch cap)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  sub->add_flag("--cache-from-first-event", args->model.cache_from_first_event,
                "Give each thread a cache at its first traced event, not its first allocation "
                "(gperftools, jemalloc, glibc: for a run where something untraced allocates on "
                "every thread, e.g. one recorded under attach)");
  sub->add_option("--allocator", args->allocator,
                  "Allocator model (gperftools: the transfer simulation; the others: costs per "
                  "pair)")
      ->check(CLI::IsMember(simulate::AllocatorNames()))
      ->capture_default_str();
  sub->add_flag("--pairs", args->pairs,
                "With gperftools: the cost view per pair (lifetimes, CPUs) instead of transfers");
  AddModelOptions(sub, &args->model);
  sub->add_option("--top", args->top, "Fetch and release sites shown, each (0 = all)")
      ->capture_default_str();
  AddFormatOption(sub, &args->format, {"text", "json", "html"});
  AddOutputOption(sub, &args->output, "result");
  AddCommonOptions(sub, &args->common);
  // Common options that have no meaning for a simulation are refused, not
  // ignored, and --help says so: the thread caches' state at any moment
  // depends on every event before it (no window), the replay is one ordered
  // pass (no workers), and its text is not wrapped (no width).
  static const char* const kRefused[][2] = {
      {"--jobs", "the simulation replays the events in one ordered pass on one thread"},
      {"--from", "the thread caches' state depends on every event from the start, so the "
                 "whole trace is simulated"},
      {"--to", "the thread caches' state depends on every event from the start, so the "
               "whole trace is simulated"},
      {"--width", "simulate's text output is not wrapped"},
  };
  for (const auto& [name, why] : kRefused) {
    sub->get_option(name)->description(std::string("Refused by simulate: ") + why);
  }
  sub->callback([args, exit_code, sub] {
    if (ListSkips(args->common)) return;
    for (const auto& [name, why] : kRefused) {
      if (sub->count(name) > 0) {
        fmt::print(stderr, "crossfree simulate: {} does not apply to simulate: {}\n", name, why);
        *exit_code = kExitUsage;
        return;
      }
    }
    if (!HasTraces("simulate", args->traces)) {
      *exit_code = kExitUsage;
      return;
    }
    // Settings of one allocator given to another are refused, not ignored
    // (the allocator table, allocators.h, says which model takes which).
    const simulate::AllocatorEntry* allocator = simulate::FindAllocator(args->allocator);
    using simulate::ModelFlag;
    std::vector<ModelFlag> given;
    if (args->model.cache_from_first_event) given.push_back(ModelFlag::kCacheFromFirstEvent);
    if (args->pairs) given.push_back(ModelFlag::kPairs);
    if (sub->count("--transfer-num-objects")) given.push_back(ModelFlag::kTransferNumObjects);
    if (sub->count("--max-total-thread-cache-bytes")) {
      given.push_back(ModelFlag::kMaxTotalThreadCacheBytes);
    }
    for (ModelFlag f : GivenModelFlags(args->model)) given.push_back(f);
    if (auto refused = simulate::RefusedFlag(allocator, given)) {
      fmt::print(stderr, "crossfree simulate: {} does not apply to --allocator {}\n",
                 simulate::ModelFlagName(*refused), args->allocator);
      *exit_code = kExitUsage;
      return;
    }
    analyzer::AnalysisOptions analysis = ToAnalysisOptions(args->common);
    simulate::SimulateOptions options;
    options.by = analysis.by;
    options.sites = analysis.sites;
    options.top = args->top;
    options.allocator = allocator;
    // The cost view of gperftools is asked for with --pairs; HTML has only
    // the cost view.
    options.pairs = args->pairs || args->format == "html";
    options.model = args->model;
    bool from_flags = HasModelOptions(args->model) ||
                      sub->count("--max-total-thread-cache-bytes") ||
                      sub->count("--transfer-num-objects");
    // The trace holds no environment of the recorded run (docs/trace-format.md).
    options.settings_source = std::string(from_flags ? "flags" : "defaults") +
                              "; the trace does not record the run's environment";
    simulate::SimulationResult result;
    std::string error;
    if (!simulate::SimulateFiles(args->traces, options, &result, &error)) {
      fmt::print(stderr, "crossfree simulate: {}\n", Printable(error));
      *exit_code = kExitUsage;
      return;
    }
    for (const std::string& w : result.warnings) {
      fmt::print(stderr, "crossfree simulate: warning: {}\n", Printable(w));
    }
    std::string text = args->format == "json"   ? simulate::RenderSimulationJson(result, options)
                       : args->format == "html" ? simulate::RenderSimulationHtml(result, options)
                                                : simulate::RenderSimulationText(result, options);
    *exit_code = WriteOutput("simulate", args->output, text) ? kExitOk : kExitUsage;
  });
}

}  // namespace crossfree::analyzer::cli
