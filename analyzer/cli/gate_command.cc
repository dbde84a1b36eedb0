// SPDX-License-Identifier: Apache-2.0
// `crossfree gate --baseline FILE TRACE...`: fails (exit 1) when a run has a
// cross-thread pair its baseline does not allow, or one whose rate grew.
// `crossfree gate --write-baseline --baseline FILE [--run TRACE...]...`
// writes the baseline from one run (TRACE...) or several (each --run: one
// run's traces, analysed on its own; --operations once for all, or once per
// run).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include "format/names.h"
#include "analyzer/render/gate_formats.h"
#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "analyzer/model/baseline.h"
#include "analyzer/cli/cli_common.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/gate.h"

namespace crossfree::analyzer::cli {
namespace {

struct GateArgs {
  std::string baseline;
  std::vector<std::string> traces;
  // --run: several runs' traces, one group per run (--write-baseline only).
  std::vector<std::vector<std::string>> runs;
  analyzer::GateOptions gate;
  // -1: not given (the unit's default); CLI11 fills plain doubles.
  double min_effect = -1;
  double bounded_effect = -1;
  std::string source_root;  // --source-root; empty: the current directory
  uint64_t operations = 0;  // of the one run gated (or each run written)
  // --operations as given: one value, or one per --run.
  std::vector<uint64_t> run_operations;
  bool write_baseline = false;
  std::string suppressions;
  bool accept_truncated = false;
  std::string format = "text";
  CommonOptions common;
};

// A gate must never pass because its input is damaged: a truncated trace
// (the process was killed, the disk filled up, or a damaged length made the
// rest of the file unreadable), one that lost events (record's losses
// record, or no clean end with its last buffers gone) fails unless the user
// accepts truncation, and then the loss is stated. Corrupt chunks already
// fail the analysis.
bool CheckTruncation(const GateArgs& a, const analyzer::Analysis& analysis) {
  bool ok = true;
  // What is missing from a trace: stated as a warning with
  // --accept-truncated, else the gate refuses the trace.
  auto judge = [&](const std::string& what, const char* refusal) {
    if (a.accept_truncated) {
      fmt::print(stderr, "crossfree gate: warning: {}; gating on the rest (--accept-truncated)\n",
                 what);
    } else {
      fmt::print(stderr, "crossfree gate: {}; {}\n", what, refusal);
      ok = false;
    }
  };
  for (const analyzer::TraceInfo& t : analysis.traces) {
    // Events record could not write (its losses record): as damaging as a
    // cut, since a missing hand-off must never let the gate pass.
    if (t.losses.any()) {
      judge(fmt::format("{}: incomplete: {}", Printable(t.path), format::LossesText(t.losses)),
            "the gate does not pass on an incomplete trace (--accept-truncated gates on what "
            "was written)");
    }
    // A trace whose last buffers went with its process (no clean end, and
    // record did not take them), or whose process outlived record: events
    // are missing at its end, which could hide a rise as well.
    if (t.EventsMissingAtEnd()) {
      judge(fmt::format("{}: incomplete: {}", Printable(t.path),
                        format::NoCleanEndText(t.taken_end ? &*t.taken_end : nullptr)),
            "the gate does not pass on an incomplete trace (--accept-truncated gates on what "
            "was written)");
    }
    if (!t.truncated) continue;
    uint64_t lost = t.file_bytes - t.truncated_offset;
    judge(fmt::format(
              "{}: truncated at offset {}: {} of its {} bytes ({:.1f}%) after the last complete "
              "chunk were not analysed ({} complete chunks were)",
              Printable(t.path), t.truncated_offset, lost, t.file_bytes,
              t.file_bytes ? lost * 100.0 / t.file_bytes : 0.0, t.chunks),
          "the gate does not pass on a damaged trace (--accept-truncated gates on the complete "
          "chunks)");
  }
  return ok;
}

std::string ShellQuote(const std::string& s) {
  bool plain = !s.empty() && s.find_first_not_of(
                                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789-_./=:+,@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command that rewrites the baseline from this same run.
std::string AcceptCommand(const GateArgs& a) {
  std::string cmd = "crossfree gate --write-baseline --baseline " + ShellQuote(a.baseline);
  if (!a.suppressions.empty()) cmd += " --suppressions " + ShellQuote(a.suppressions);
  const CommonOptions& c = a.common;
  if (c.by != "role") cmd += " --by " + c.by;
  if (c.site_depth != 3) cmd += fmt::format(" --site-depth {}", c.site_depth);
  for (const std::string& s : c.skips) cmd += " --skip " + ShellQuote(s);
  if (c.no_default_skips) cmd += " --no-default-skips";
  if (c.key_lines) cmd += " --key-lines";
  if (!a.runs.empty()) {
    for (uint64_t ops : a.run_operations) cmd += fmt::format(" --operations {}", ops);
    for (const auto& run : a.runs) {
      cmd += " --run";
      for (const std::string& t : run) cmd += " " + ShellQuote(t);
    }
    return cmd;
  }
  if (a.operations) cmd += fmt::format(" --operations {}", a.operations);
  for (const std::string& t : a.traces) cmd += " " + ShellQuote(t);
  return cmd;
}

// --write-baseline --run ... --run ...: each run analysed on its own (its
// steady state and units are its own), the baseline's rates over all of
// them and each site's counts per run (baseline.h).
int WriteBaselineFromRuns(const GateArgs& a,
                          const std::vector<analyzer::Suppression>& suppressions) {
  std::vector<analyzer::Analysis> analyses(a.runs.size());
  std::vector<analyzer::BaselineRun> runs;
  std::vector<std::string> warnings;
  size_t suppressed = 0;
  for (size_t i = 0; i < a.runs.size(); ++i) {
    analyzer::Analysis& analysis = analyses[i];
    if (!RunAnalysis("gate", a.runs[i], a.common, &analysis)) return kExitUsage;
    if (!CheckTruncation(a, analysis)) return kExitUsage;
    analysis.operations =
        a.run_operations.empty() ? 0 : a.run_operations[a.run_operations.size() == 1 ? 0 : i];
    analyzer::Baseline empty;
    empty.per_operation = analysis.per_operation();
    analyzer::GateResult result;
    std::string error;
    if (!analyzer::EvaluateGate(analysis, empty, suppressions, a.gate, &result, &error)) {
      fmt::print(stderr, "crossfree gate: {}\n", Printable(error));
      return kExitUsage;
    }
    for (const std::string& w : result.warnings) {
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    }
    suppressed += result.suppressed.size();
    runs.push_back({&analysis, analyzer::UnsuppressedPairs(analysis, suppressions)});
  }
  for (const std::string& w : warnings) fmt::print(stderr, "crossfree gate: warning: {}\n", w);
  std::string text = analyzer::FormatBaseline(runs, AcceptCommand(a));
  if (!WriteOutput("gate", a.baseline, text, Escape::kNone)) return kExitUsage;
  std::set<std::string> keys;
  for (const analyzer::BaselineRun& r : runs) {
    for (const analyzer::CrossPair* p : r.pairs) keys.insert(p->key);
  }
  fmt::print("crossfree gate: wrote {} from {} runs ({} pairs allowed, rates {}; {} suppressed)\n",
             Printable(a.baseline), runs.size(), keys.size(), analyses[0].UnitName(),
             suppressed);
  return kExitOk;
}

int RunGate(const GateArgs& a) {
  std::vector<analyzer::Suppression> suppressions;
  std::string error;
  if (!a.suppressions.empty() && !analyzer::ReadSuppressions(a.suppressions, &suppressions, &error)) {
    fmt::print(stderr, "crossfree gate: {}\n", Printable(error));
    return kExitUsage;
  }
  analyzer::Baseline baseline;
  bool have_baseline = std::filesystem::exists(a.baseline);
  if (!a.write_baseline || have_baseline) {
    if (!analyzer::ReadBaseline(a.baseline, &baseline, &error)) {
      if (!have_baseline) {
        error += fmt::format(" (create it with: {})", AcceptCommand(a));
      }
      fmt::print(stderr, "crossfree gate: {}\n", Printable(error));
      return kExitUsage;
    }
  }
  if (!a.runs.empty()) return WriteBaselineFromRuns(a, suppressions);
  analyzer::Analysis analysis;
  if (!RunAnalysis("gate", a.traces, a.common, &analysis)) return kExitUsage;
  if (!CheckTruncation(a, analysis)) return kExitUsage;
  analysis.operations = a.operations;

  analyzer::GateResult result;
  analyzer::GateOptions options = a.gate;
  if (a.min_effect >= 0) options.min_effect = a.min_effect;
  if (a.bounded_effect >= 0) options.bounded_effect = a.bounded_effect;
  if (a.write_baseline) {
    baseline = analyzer::Baseline();  // rewritten whatever its unit and version
    baseline.per_operation = analysis.per_operation();
  }
  if (!analyzer::EvaluateGate(analysis, baseline, suppressions, options, &result, &error)) {
    fmt::print(stderr, "crossfree gate: {}: {}\n", Printable(a.baseline), Printable(error));
    return kExitUsage;
  }
  // What was not judged, on stderr whatever the format (JSON, SARIF and
  // JUnit carry them too); when writing a baseline, what will not be.
  for (const std::string& w : result.warnings) {
    fmt::print(stderr, "crossfree gate: warning: {}\n", w);
  }
  if (a.write_baseline) {
    std::string text = analyzer::FormatBaseline(
        analyzer::UnsuppressedPairs(analysis, suppressions), analysis, AcceptCommand(a));
    if (!WriteOutput("gate", a.baseline, text, Escape::kNone)) return kExitUsage;
    fmt::print("crossfree gate: wrote {} ({} pairs allowed, rates {}; {} suppressed)\n",
               Printable(a.baseline), analysis.pairs.size() - result.suppressed.size(),
               analysis.UnitName(), result.suppressed.size());
    return kExitOk;
  }
  std::string root = a.source_root;
  if (root.empty()) {
    std::error_code ec;
    root = std::filesystem::current_path(ec).string();
  }
  const std::string accept = AcceptCommand(a);
  std::string text;
  if (a.format == "json") {
    text = analyzer::render::RenderGateJson(analysis, result, accept);
  } else if (a.format == "junit") {
    text = analyzer::render::RenderGateJunit(analysis, result, accept);
  } else if (a.format == "github") {
    text = analyzer::render::RenderGateGithub(analysis, result, accept, root);
  } else if (a.format == "sarif") {
    text = analyzer::render::RenderGateSarif(analysis, result, accept, root);
  } else {
    text = analyzer::render::RenderGateText(analysis, result, accept, TextWidth(a.common, "-"));
  }
  if (!WriteOutput("gate", "-", text)) return kExitUsage;
  return result.passed() ? kExitOk : kExitGateFailed;
}

}  // namespace

void RegisterGateCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<GateArgs>();
  CLI::App* sub = app.add_subcommand(
      "gate", "Fail (exit 1) on cross-thread pairs the baseline does not allow, for CI");
  sub->add_option("--baseline", args->baseline, "Baseline file (see docs/guide/analyzer.md)");
  AddTracesArgument(sub, &args->traces);
  AddFormatOption(sub, &args->format, {"text", "json", "junit", "github", "sarif"},
                  "Output format of the verdict: text, json, junit (JUnit XML), github "
                  "(GitHub Actions annotations), sarif (SARIF 2.1.0)");
  sub->add_option("--source-root", args->source_root,
                  "For github and sarif: source paths are made relative to this directory "
                  "(default: the current directory)");
  sub->add_option("--operations", args->run_operations,
                  "Operations the traced run performed (RPC calls, requests): rates per "
                  "operation, which other pairs' fixes do not move (default: per 1000 "
                  "allocations); with --run, once for every run or once per run, in order")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--run", args->runs,
                  "With --write-baseline: one run's traces (repeat for each run); the baseline "
                  "then holds each timing-dependent site's spread across the runs")
      ->expected(1, -1);
  sub->add_option("--max-growth", args->gate.max_growth,
                  "A group fails only beyond this factor of its baseline rate")
      ->check(CLI::Range(1.0, 1e9))
      ->capture_default_str();
  sub->add_option("--min-effect", args->min_effect,
                  "A group fails only when its per-call rate rose by at least this much (default "
                  "0.05 per operation, 1 per 1000 allocations; 0: any significant rise beyond "
                  "--max-growth)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--bounded-effect", args->bounded_effect,
                  "With --operations: a group's one-off (bounded) objects fail only when they "
                  "rose by at least this many per operation (default 1)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_option("--timing-slack", args->gate.timing_slack,
                  "A timing-dependent site of a one-run baseline fails when the share of its "
                  "objects that stay on their thread falls below the lower bound of the baseline's "
                  "divided by this (a baseline of several runs, --run, bounds it by their spread)")
      ->check(CLI::Range(1.0, 1e9))
      ->capture_default_str();
  sub->add_flag("--write-baseline", args->write_baseline,
                "Create or rewrite the baseline from this run instead of checking");
  sub->add_option("--suppressions", args->suppressions,
                  "File of pair patterns to ignore, each with a mandatory reason");
  sub->add_flag("--accept-truncated", args->accept_truncated,
                "Gate on the complete chunks of a truncated trace, or on what record wrote of "
                "an incomplete one (default: exit 2)");
  AddCommonOptions(sub, &args->common);
  sub->callback([args, exit_code] {
    if (ListSkips(args->common)) return;
    if (args->baseline.empty() || (args->traces.empty() && args->runs.empty())) {
      fmt::print(stderr, "crossfree gate: usage: crossfree gate --baseline FILE TRACE...\n");
      *exit_code = kExitUsage;
      return;
    }
    if (!args->runs.empty() && (!args->write_baseline || !args->traces.empty())) {
      fmt::print(stderr, "crossfree gate: --run is for --write-baseline, and replaces the "
                         "positional traces (gate one run: crossfree gate --baseline FILE "
                         "TRACE...)\n");
      *exit_code = kExitUsage;
      return;
    }
    const size_t groups = args->runs.empty() ? 1 : args->runs.size();
    if (args->run_operations.size() > 1 && args->run_operations.size() != groups) {
      fmt::print(stderr, "crossfree gate: --operations given {} times for {} run{}: give it once, "
                         "or once per --run\n",
                 args->run_operations.size(), groups, groups == 1 ? "" : "s");
      *exit_code = kExitUsage;
      return;
    }
    if (std::count(args->run_operations.begin(), args->run_operations.end(), 0) > 0 &&
        std::count(args->run_operations.begin(), args->run_operations.end(), 0) <
            static_cast<long>(args->run_operations.size())) {
      fmt::print(stderr, "crossfree gate: --operations 0 (rates per 1000 allocations) with other "
                         "runs' operations: every run's rates must have one unit\n");
      *exit_code = kExitUsage;
      return;
    }
    args->operations = args->run_operations.empty() ? 0 : args->run_operations[0];
    *exit_code = RunGate(*args);
  });
}

}  // namespace crossfree::analyzer::cli
