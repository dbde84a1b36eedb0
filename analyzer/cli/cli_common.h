// SPDX-License-Identifier: Apache-2.0
// Analyzer CLI: the options report, diff and gate share (site depth, skips,
// grouping, jobs) and the one way they run an analysis and report errors.
#pragma once

#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/render/output.h"
#include "analyzer/simulate/allocator_model.h"
#include "analyzer/simulate/allocators.h"

namespace CLI {
class App;
}

namespace crossfree::analyzer::cli {

struct CommonOptions {
  std::string by = "role";
  int site_depth = 3;
  std::vector<std::string> skips;
  bool no_default_skips = false;
  bool key_lines = false;
  int jobs = 0;
  double from_s = -1;      // --from SECONDS since trace start; -1: the start
  double to_s = -1;        // --to SECONDS; -1: the end
  int width = -1;          // --width; -1: the terminal's, or unlimited when not a terminal
  bool list_skips = false; // --list-skips: print the default skip rules and exit
};

// The text width for output to path ("" or "-": stdout): --width when given,
// else the terminal's columns when stdout is a terminal, else 0 (unlimited:
// files and pipes get whole lines).
size_t TextWidth(const CommonOptions& options, const std::string& path);

// --list-skips: prints the default skip rules, one per line. True if it did
// (the command then exits 0).
bool ListSkips(const CommonOptions& options);

// Registers the positional TRACE... of the commands that read one run
// (report, gate, simulate); HasTraces then checks that some were given.
void AddTracesArgument(CLI::App* sub, std::vector<std::string>* traces);

// Registers --format, one of formats (the default is what *format holds,
// and --help shows it), for report, diff, gate and simulate alike.
void AddFormatOption(CLI::App* sub, std::string* format, std::vector<std::string> formats,
                     const std::string& help = "Output format");

// Registers --output/-o, the file the command's result (what: "report",
// "diff", ...) goes to instead of stdout.
void AddOutputOption(CLI::App* sub, std::string* output, const std::string& what);

// False (and a one-line error naming the command) when no trace is given.
bool HasTraces(const std::string& command, const std::vector<std::string>& traces);

// Registers --malloc-conf, --glibc-tunables and --cpus: the settings, in
// the allocator's own syntax, of the model that report --allocator and
// simulate build (the other ModelSettings fields are simulate's own).
void AddModelOptions(CLI::App* sub, simulate::ModelSettings* model);

// True when any option of AddModelOptions was given.
bool HasModelOptions(const simulate::ModelSettings& model);

// The options of AddModelOptions that were given (--cpus, --malloc-conf,
// --glibc-tunables, in that order), for simulate::RefusedFlag: a setting
// the chosen model does not take is refused, never ignored.
std::vector<simulate::ModelFlag> GivenModelFlags(const simulate::ModelSettings& model);

// Registers --by, --site-depth, --skip, --no-default-skips, --key-lines, --jobs.
void AddCommonOptions(CLI::App* sub, CommonOptions* options);

analyzer::AnalysisOptions ToAnalysisOptions(const CommonOptions& options);

// Analyzes the traces; prints warnings (and on failure the error) to stderr
// prefixed with "crossfree <command>: ". Returns false on error (exit 2).
bool RunAnalysis(const std::string& command, const std::vector<std::string>& traces,
                 const CommonOptions& options, analyzer::Analysis* out);

// How WriteOutput treats control characters: a report or diff is for eyes
// and escapes them (analyzer/render/output.h, PrintableText); a file that a program
// reads back byte for byte (a baseline) is written as is.
enum class Escape { kControls, kNone };

// Writes text to a file (replacing it only once the whole text is written),
// or to stdout for "" or "-". False (message printed) on error.
bool WriteOutput(const std::string& command, const std::string& path, const std::string& text,
                 Escape escape = Escape::kControls);

using analyzer::render::Printable;

}  // namespace crossfree::analyzer::cli
