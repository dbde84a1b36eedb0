// SPDX-License-Identifier: Apache-2.0
// `crossfree simulate TRACE...`: predicts the central free-list transfers
// gperftools 2.10's thread caches would make for a recorded run.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>

#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/cli/cli_common.h"
#include "analyzer/cli/commands.h"
#include "analyzer/simulate/simulate.h"

namespace crossfree::analyzer::cli {
namespace {

struct SimulateArgs {
  std::vector<std::string> traces;
  uint64_t max_total_thread_cache_bytes = simulate::kDefaultOverallThreadCacheSize;
  int transfer_num_objects = simulate::kDefaultTransferNumObjects;
  size_t top = 10;
  bool cache_from_first_event = false;
  std::string format = "text";
  std::string output;
  CommonOptions common;
};

}  // namespace

void RegisterSimulateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sub = app.add_subcommand(
      "simulate",
      "Predict gperftools 2.10 central free-list transfers (thread-cache fetches and releases)");
  sub->add_option("traces", args->traces, "Trace files (one per process of the run)");
  sub->add_option("--max-total-thread-cache-bytes", args->max_total_thread_cache_bytes,
                  "TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES of the modelled run")
      ->capture_default_str();
  sub->add_option("--transfer-num-objects", args->transfer_num_objects,
                  "TCMALLOC_TRANSFER_NUM_OBJ of the modelled run (batch cap)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  sub->add_flag("--cache-from-first-event", args->cache_from_first_event,
                "Give each thread a cache at its first traced event, not its first allocation "
                "(for runs recorded under libtcmalloc, where the tracer allocates on every thread)");
  sub->add_option("--top", args->top, "Fetch and release sites shown, each (0 = all)")
      ->capture_default_str();
  sub->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  sub->add_option("--output,-o", args->output, "Write the result to this file (default stdout)");
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
    if (args->traces.empty()) {
      fmt::print(stderr, "crossfree simulate: no trace given (crossfree simulate TRACE...)\n");
      *exit_code = kExitUsage;
      return;
    }
    analyzer::AnalysisOptions analysis = ToAnalysisOptions(args->common);
    simulate::SimulateOptions options;
    options.allocator.max_total_thread_cache_bytes = args->max_total_thread_cache_bytes;
    options.allocator.transfer_num_objects = args->transfer_num_objects;
    options.by = analysis.by;
    options.sites = analysis.sites;
    options.top = args->top;
    options.cache_from_first_event = args->cache_from_first_event;
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
    std::string text = args->format == "json" ? simulate::RenderSimulationJson(result, options)
                                              : simulate::RenderSimulationText(result, options);
    *exit_code = WriteOutput("simulate", args->output, text) ? kExitOk : kExitUsage;
  });
}

}  // namespace crossfree::analyzer::cli
