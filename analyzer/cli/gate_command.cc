// SPDX-License-Identifier: Apache-2.0
// `crossfree gate --baseline FILE TRACE...`: fails (exit 1) when a run has a
// cross-thread pair its baseline does not allow, or one whose rate grew.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <memory>

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
  analyzer::GateOptions gate;
  // -1: not given (the unit's default); CLI11 fills plain doubles.
  double min_effect = -1;
  double bounded_effect = -1;
  std::string source_root;  // --source-root; empty: the current directory
  uint64_t operations = 0;
  bool write_baseline = false;
  std::string suppressions;
  bool accept_truncated = false;
  std::string format = "text";
  CommonOptions common;
};

// A gate must never pass because its input is damaged: a truncated trace
// (the process was killed, the disk filled up, or a damaged length made the
// rest of the file unreadable) fails unless the user accepts truncation,
// and then the loss is stated. Corrupt chunks already fail the analysis.
bool CheckTruncation(const GateArgs& a, const analyzer::Analysis& analysis) {
  bool ok = true;
  for (const analyzer::TraceInfo& t : analysis.traces) {
    // Events record could not write (its losses record): as damaging as a
    // cut, since a missing hand-off must never let the gate pass.
    if (t.losses.any()) {
      const std::string what = fmt::format("{}: incomplete: {}", Printable(t.path),
                                           format::LossesText(t.losses));
      if (a.accept_truncated) {
        fmt::print(stderr, "crossfree gate: warning: {}; gating on the rest (--accept-truncated)\n",
                   what);
      } else {
        fmt::print(stderr, "crossfree gate: {}; the gate does not pass on an incomplete trace "
                           "(--accept-truncated gates on what was written)\n",
                   what);
        ok = false;
      }
    }
    if (!t.truncated) continue;
    uint64_t lost = t.file_bytes - t.truncated_offset;
    std::string what = fmt::format(
        "{}: truncated at offset {}: {} of its {} bytes ({:.1f}%) after the last complete chunk "
        "were not analysed ({} complete chunks were)",
        Printable(t.path), t.truncated_offset, lost, t.file_bytes,
        t.file_bytes ? lost * 100.0 / t.file_bytes : 0.0, t.chunks);
    if (a.accept_truncated) {
      fmt::print(stderr, "crossfree gate: warning: {}; gating on the rest (--accept-truncated)\n",
                 what);
    } else {
      fmt::print(stderr, "crossfree gate: {}; the gate does not pass on a damaged trace "
                         "(--accept-truncated gates on the complete chunks)\n",
                 what);
      ok = false;
    }
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
  if (a.operations) cmd += fmt::format(" --operations {}", a.operations);
  for (const std::string& t : a.traces) cmd += " " + ShellQuote(t);
  return cmd;
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
  sub->add_option("--operations", args->operations,
                  "Operations the traced run performed (RPC calls, requests): rates per "
                  "operation, which other pairs' fixes do not move (default: per 1000 "
                  "allocations)");
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
                  "A timing-dependent site fails when the share of its objects that stay on their "
                  "thread falls below the baseline's divided by this")
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
    if (args->baseline.empty() || args->traces.empty()) {
      fmt::print(stderr, "crossfree gate: usage: crossfree gate --baseline FILE TRACE...\n");
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = RunGate(*args);
  });
}

}  // namespace crossfree::analyzer::cli
