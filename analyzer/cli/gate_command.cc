// SPDX-License-Identifier: Apache-2.0
// `crossfree gate --baseline FILE TRACE...`: fails (exit 1) when a run has a
// cross-thread pair its baseline does not allow, or one whose rate grew.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <memory>

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
  if (a.write_baseline) {
    baseline.allowed.clear();  // rewritten whatever its unit; what changes is counted below
    baseline.per_operation = analysis.per_operation();
  }
  if (!analyzer::EvaluateGate(analysis, baseline, suppressions, a.gate, &result, &error)) {
    fmt::print(stderr, "crossfree gate: {}: {}\n", Printable(a.baseline), Printable(error));
    return kExitUsage;
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
  std::string text =
      a.format == "json"
          ? analyzer::render::RenderGateJson(analysis, result, AcceptCommand(a))
          : analyzer::render::RenderGateText(analysis, result, AcceptCommand(a),
                                             TextWidth(a.common, "-"));
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
  AddFormatOption(sub, &args->format, {"text", "json"}, "Output format of the verdict");
  sub->add_option("--operations", args->operations,
                  "Operations the traced run performed (RPC calls, requests): rates per "
                  "operation, which other pairs' fixes do not move (default: per 1000 "
                  "allocations)");
  sub->add_option("--max-growth", args->gate.max_growth,
                  "A group fails only beyond this factor of its baseline rate")
      ->check(CLI::Range(1.0, 1e9))
      ->capture_default_str();
  sub->add_option("--min-effect", args->gate.min_effect,
                  "A group fails only when its per-call rate rose by at least this much (default "
                  "0.05 per operation, 1 per 1000 allocations)")
      ->check(CLI::Range(0.0, 1e9));
  sub->add_flag("--write-baseline", args->write_baseline,
                "Create or rewrite the baseline from this run instead of checking");
  sub->add_option("--suppressions", args->suppressions,
                  "File of pair patterns to ignore, each with a mandatory reason");
  sub->add_flag("--accept-truncated", args->accept_truncated,
                "Gate on the complete chunks of a truncated trace (default: exit 2)");
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
