// SPDX-License-Identifier: Apache-2.0
// Analyzer: the gate's two input files, both line-oriented text so they
// review and diff well in version control (formats in docs/guide/analyzer.md).
//
// Baseline: the cross-thread pairs a project allows, with the rates each
// had when accepted: its per-call objects (per unit of the runs' steady
// state, Analysis::SteadyUnits) and its bounded (one-off) ones (per unit),
// per operation or per 1000 allocations (the `unit` line), over one run or
// several (each rate: the runs' objects over their summed units):
//   crossfree-baseline 4
//   unit operation                     (or: unit 1000-allocations)
//   units 20000 18012.5                (the runs' units, and their steady ones)
//   runs 3                             (how many runs it was written from)
//   allow 1.0002 0.0004 worker-N -> reactor-N | alloc: A <- B | free: C <- D
//   site 2.0001 0.5 A <- B
//   site-runs 3 13336:6668 13402:6590 13270:6752 A <- B
// The `units` line lets the gate's significance test allow for the
// baseline's own noise (its counts are rate x units). A `site` line gives
// the objects an allocation site of the allowed pairs allocated per unit,
// freed on any thread, and the share of them that crossed threads: with it
// the gate tells a timing-dependent hand-off (some of the site's objects
// cross, some do not) from a regression. Its `site-runs` line gives each
// run's objects:crossed (sampled counts; 0:0 when the run did not count the
// site), from which the gate bounds how far a rerun's share may move
// (gate.h, StayingBound).
// Version 3 files (no `runs` or `site-runs` lines: one run, its site counts
// taken back as rate x units and share x objects), version 2 files (no
// `units` line, `site <rate> <site>`) and version 1 files (`allow <rate>
// <key>`, per 1000 allocations, no lifecycles) are still read: a version 1
// rate counts as per-call, and without units the baseline's rates are taken
// as exact.
#pragma once

#include <cstdint>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "analyzer/model/analysis.h"

namespace crossfree::analyzer {

inline constexpr int kBaselineVersion = 4;

struct BaselineRates {
  double per_call = 0;  // steady-state objects per unit when accepted
  double bounded = 0;   // one-off objects per unit
};

// One run's count of an allocation site's objects (a `site-runs` entry).
struct SiteRunCount {
  uint64_t objects = 0;  // the site's objects in the run (sampled counts)
  uint64_t crossed = 0;  // of them, freed on another thread

  void Add(const SiteRunCount& o) {
    objects += o.objects;
    crossed += o.crossed;
  }
};

struct Baseline {
  int version = kBaselineVersion;
  bool per_operation = false;  // the rates' unit: an operation, or 1000 allocations
  std::map<std::string, BaselineRates> allowed;  // pair key -> rates when accepted
  std::map<std::string, double> sites;           // alloc site key -> objects per unit
  std::map<std::string, double> site_shares;     // alloc site key -> share that crossed (v3)
  double units = 0;         // the runs' units (v3; 0: not given)
  double steady_units = 0;  // of those, in their steady state
  int runs = 1;             // the runs it was written from (v4)
  std::map<std::string, std::vector<SiteRunCount>> site_runs;  // alloc site -> per run (v4)
};

// Returns false with *error ("FILE:LINE: problem") on a malformed file.
bool ParseBaseline(const std::string& text, const std::string& name, Baseline* out,
                   std::string* error);
bool ReadBaseline(const std::string& path, Baseline* out, std::string* error);
// Every pair of the analysis not suppressed, sorted by key. accept_command
// goes into a comment (how to regenerate).
std::string FormatBaseline(const std::vector<const CrossPair*>& pairs, const Analysis& analysis,
                           const std::string& accept_command);
// One run of a baseline written from several: its analysis (per operation
// in every run, or in none) and its pairs not suppressed.
struct BaselineRun {
  const Analysis* analysis = nullptr;
  std::vector<const CrossPair*> pairs;
};
// A baseline of several runs (one: as above, byte for byte): each pair's
// and site's rate is its objects over all the runs' units; `site-runs`
// gives each run's counts of each site.
std::string FormatBaseline(const std::vector<BaselineRun>& runs,
                           const std::string& accept_command);

struct Suppression {
  std::string pattern;
  std::regex regex;
  std::string reason;
  int line = 0;
};

bool ParseSuppressions(const std::string& text, const std::string& name,
                       std::vector<Suppression>* out, std::string* error);
bool ReadSuppressions(const std::string& path, std::vector<Suppression>* out,
                      std::string* error);

// Reads a whole file; false with *error naming it.
bool ReadTextFile(const std::string& path, std::string* text, std::string* error);

}  // namespace crossfree::analyzer
