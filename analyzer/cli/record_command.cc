// SPDX-License-Identifier: Apache-2.0
// `crossfree record [-o FILE] [--unwind MODE] [--depth N] [--no-stacks]
// [--sample N] [--delay S] [--duration S] [--toggle-signal SIG]
// [--time-resolution NS] [--preload LIB]... [--wait-children S] -- CMD ARGS...` or
// `crossfree record -p PID [--duration S] ...`: parses the flags and hands
// them to the record stage, which runs CMD under the tracer
// (analyzer/record/run_command.h) or attaches to PID
// (analyzer/record/attach_record.h).
#include <climits>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "analyzer/cli/commands.h"
#include "analyzer/record/attach_record.h"
#include "analyzer/record/messages.h"
#include "analyzer/record/run_command.h"
#include "analyzer/record/tracer_library.h"
#include "format/trace_format.h"

namespace crossfree::analyzer::cli {
namespace {

struct RecordArgs {
  record::RecordOptions run;
  int pid = 0;  // -p: attach to this running process instead
};

int RunAttachRecord(const RecordArgs& args) {
  std::optional<std::string> library = record::TracerLibraryOrError();
  if (!library) return kExitUsage;
  record::AttachOptions o;
  o.pid = static_cast<pid_t>(args.pid);
  o.output = args.run.output;
  o.unwind = args.run.unwind;
  o.depth = args.run.depth;
  o.no_stacks = args.run.no_stacks;
  o.sample = args.run.sample;
  o.duration_s = args.run.duration_s;
  o.library = *library;
  return record::RunAttach(o);
}

}  // namespace

void RegisterRecordCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RecordArgs>();
  CLI::App* sub = app.add_subcommand(
      "record", "Run a command with the allocation tracer preloaded and record a trace");
  sub->add_option("-o,--output", args->run.output,
                  "Trace file of the command (forked/exec'd children write FILE.<pid>); "
                  "default ./crossfree.<pid>.trace");
  sub->add_option("--unwind", args->run.unwind, "Stack unwinder (default hybrid)")
      ->check(CLI::IsMember({"fp", "libunwind", "hybrid"}));
  sub->add_option("--depth", args->run.depth, "Frames per stack (default 32)")
      ->check(CLI::Range(1, 256));
  sub->add_flag("--no-stacks", args->run.no_stacks, "Record without call stacks");
  sub->add_option("--sample", args->run.sample,
                  "Trace each allocation with probability 1/N, and its free wherever it "
                  "happens; every allocation and free is still counted. report, diff and gate "
                  "then show estimates with 95% intervals (docs/guide/analyzer.md)")
      ->check(CLI::Range(1u, 1u << 30));
  sub->add_option("--delay", args->run.delay_s,
                  "Start recording SECONDS after the command starts (the program runs on "
                  "untraced before)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--duration", args->run.duration_s,
                  "Stop recording SECONDS after it started: every buffer is written and the "
                  "program runs on untraced")
      ->check(CLI::Range(0.001, 86400.0));
  sub->add_option("--toggle-signal", args->run.toggle_signal,
                  "Signal (e.g. USR2) that switches recording on and off while the command "
                  "runs; recording starts off unless --delay opens it. Off by default: the "
                  "command may use the signal itself");
  sub->add_option("--time-resolution", args->run.time_resolution_ns,
                  "Round the trace's times down to multiples of NS nanoseconds (1 to "
                  "1000000, default 1): a smaller trace; times exact to NS, pairs kept up to a "
                  "few hundred ns (docs/guide/tracer.md, Time resolution)")
      ->check(CLI::Range(1u, format::kMaxTimeResolutionNs));
  sub->add_option("--preload", args->run.preloads,
                  "Also preload LIB after the tracer (e.g. an allocator: libtcmalloc.so.4); "
                  "repeatable, kept in order")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false)
      ->expected(1);
  CLI::Option* wait_children =
      sub->add_option("--wait-children", args->run.wait_children_s,
                      "After the command exits, wait up to SECONDS for the processes it left "
                      "running (background jobs, daemons), then name those still running "
                      "(default 60; at most 1 after a SIGINT or SIGTERM to record)")
          ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("-p,--pid", args->pid,
                  "Attach to the running process PID instead: record until --duration or "
                  "Ctrl-C, then detach and leave it running as it was (docs/guide/tracer.md)")
      ->check(CLI::Range(1, INT_MAX));
  sub->add_option("command", args->run.command, "The command to run, after --");
  sub->footer(
      "Examples: crossfree record -o server.trace -- ./server --port 8080\n"
      "          crossfree record -p 4242 --duration 2 -o server.trace");
  sub->callback([args, exit_code, wait_children] {
    // Before record opens anything (messages.h): its descriptors off 0-2,
    // and no SIGPIPE from a stderr whose reader went away.
    record::ReserveStandardDescriptors();
    record::IgnorePipeSignal();
    if (args->pid != 0) {
      // --wait-children is about the processes a command record started
      // leaves; an attached process is not record's child, and its
      // children are not reparented to record.
      if (!args->run.command.empty() || args->run.delay_s >= 0 || !args->run.toggle_signal.empty() ||
          !args->run.preloads.empty() || wait_children->count() != 0) {
        record::Say("crossfree record: -p attaches to a running process: give no command, "
                    "--delay, --toggle-signal, --preload or --wait-children with it\n");
        *exit_code = kExitUsage;
        return;
      }
      if (args->run.time_resolution_ns > 1) {
        // The attached tracer writes the trace itself, not through record,
        // and its hook path stays as it is: nothing would round its times.
        record::Say("crossfree record: --time-resolution is not available with -p: the attached "
                    "tracer writes the trace itself, in nanoseconds; record without it\n");
        *exit_code = kExitUsage;
        return;
      }
      *exit_code = RunAttachRecord(*args);
      return;
    }
    if (args->run.command.empty()) {
      record::Say("crossfree record: give a command after --, or -p PID\n");
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = record::RunRecord(args->run);
  });
}

}  // namespace crossfree::analyzer::cli
