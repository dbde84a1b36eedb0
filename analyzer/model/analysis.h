// SPDX-License-Identifier: Apache-2.0
// Analyzer: one analysis run, from trace files to the symbolic model that
// report, diff and gate print or compare. Pairs every trace, aggregates by
// (stack, thread) first, then symbolizes only the stacks of cross-thread
// pairs (and the few lone sites shown) and merges them into symbolic pairs:
// (alloc role, free role, alloc site, free site).
//
// Used from one thread (pairing uses its own workers inside).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/model/central.h"
#include "analyzer/model/estimate.h"
#include "analyzer/model/fork_frees.h"
#include "analyzer/model/pair_costs.h"
#include "analyzer/pairing/pairing.h"
#include "analyzer/model/roles.h"
#include "analyzer/model/sites.h"
#include "analyzer/pairing/trace_set.h"

namespace crossfree::analyzer {

struct AnalysisOptions {
  SiteOptions sites;
  GroupBy by = GroupBy::kRole;
  PairingOptions pairing;
  size_t lone_sites = 5;  // live/unknown/double-free sites kept, each
  size_t central_sites = 10;  // central free-list call sites kept (0 = all)
};

struct TraceInfo {
  std::string path;
  std::string exe;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  uint64_t chunks = 0;
  uint64_t events = 0;
  size_t threads = 0;
  bool truncated = false;
  format::TraceEnd end = format::TraceEnd::kClean;  // ProcessTrace::end
  bool clean_end() const { return end == format::TraceEnd::kClean; }
  // With no clean end: record ended the trace itself, nothing before that
  // end lost (trace_set.h); empty: the last buffers are lost.
  std::optional<format::RecordTakenEnd> taken_end;
  // Events the process recorded may be missing at its end (frees among
  // them): no clean end, and record did not take the end itself.
  bool LastBuffersLost() const { return end == format::TraceEnd::kBuffersLost; }
  // The process outlived record: its later events are not in the trace.
  bool RunningAtEnd() const { return end == format::TraceEnd::kTakenRunning; }
  // Either of those two.
  bool EventsMissingAtEnd() const { return format::EventsMissingAtEnd(end); }
  format::RecordLosses losses;    // what record could not write; any(): incomplete
  uint64_t truncated_offset = 0;  // where the incomplete chunk starts
  uint64_t file_bytes = 0;        // so the bytes lost are file_bytes - truncated_offset
  uint32_t sample_period = 1;     // > 1: each allocation traced with probability 1/period
  // Recording windows (header flag kHeaderFlagWindowed or window records):
  // the edges in ns since the trace's start, and whether it started closed.
  bool recording_windows = false;
  bool starts_closed = false;
  std::vector<WindowEdge> windows;
};

// What a pair's objects are, by the signals of PairCounts (pairing.h):
// per-call when most of them are of the steady state (their number grows
// with the work), bounded when most are one-off (start-up, shutdown, once
// per thread or connection: their number does not).
enum class Lifecycle { kPerCall, kBounded };
const char* LifecycleName(Lifecycle l);  // "per-call", "bounded"

// A count of sampled objects (or of their bytes). In a sampled run
// (Analysis::sampled()) it stands for about sample_period times as many, and
// what it stands for, with its interval, is in the figures
// (Analysis::Figures); in an unsampled run it is exact. Not an integer, so
// that a renderer cannot print it as the run's count by mistake: the number
// itself is `.sampled`.
struct SampledCount {
  uint64_t sampled = 0;

  SampledCount& operator+=(SampledCount o) {
    sampled += o.sampled;
    return *this;
  }
  friend SampledCount operator+(SampledCount a, SampledCount b) { return {a.sampled + b.sampled}; }
  friend SampledCount operator-(SampledCount a, SampledCount b) { return {a.sampled - b.sampled}; }
  friend auto operator<=>(const SampledCount&, const SampledCount&) = default;
};

// A cross-thread pair: objects allocated at one site by one role (or
// thread) and freed at another by another.
struct CrossPair {
  std::string key;  // PairKeyText(): stable, what diff, gate and baselines compare
  std::string alloc_role;
  std::string free_role;
  Site alloc_site;
  Site free_site;
  // Sampled counts: what they stand for is in Analysis::Figures(pair).
  SampledCount count;
  SampledCount bytes;
  // Of count, the one-off objects by signal (PairCounts; sampled counts too).
  SampledCount thread_bounded;
  SampledCount edge_bounded;
  std::map<int, uint64_t> size_classes;  // size class index -> frees
  // Cross-thread frees per time bucket since the start of each trace
  // (Analysis::timeline_bucket_ns wide): start-up and shutdown pairs stand
  // apart from per-request ones.
  std::vector<uint64_t> timeline;

  SampledCount bounded() const { return thread_bounded + edge_bounded; }
  SampledCount steady() const { return count - bounded(); }
  Lifecycle lifecycle() const {
    return steady() > bounded() ? Lifecycle::kPerCall : Lifecycle::kBounded;
  }
  // The evidence for lifecycle(), one line: "9,876 of 10,000 objects in the
  // steady state" or "3 freed after ...; 1 allocated and freed at the edges".
  // In a sampled analysis the counts are of sampled objects, and say so.
  std::string LifecycleEvidence(bool sampled = false) const;
};

// Per role (or thread) and size class: allocations made minus frees done.
// net > 0: the thread cache drains (fetches from the central free list);
// net < 0: it overflows (releases to the central list).
// Counts are sampled: what they stand for is in Analysis::Figures(row);
// net is allocs - frees of the sampled counts, for its sign.
struct AsymmetryRow {
  std::string role;
  int size_class = 0;
  SampledCount allocs;
  SampledCount frees;
  int64_t net = 0;
  std::string top_site;       // cross-thread site contributing most, if any
  SampledCount top_site_count;
};

// Where lone events happened (live at exit, unknown frees, double frees).
struct LoneSite {
  std::string role;
  Site site;
  SampledCount count;  // what they stand for: Analysis::Figures(site)
  SampledCount bytes;
};

// The final figures of a pair, a lone site or an asymmetry row: what every
// renderer prints, computed in one place (Analysis::Figures) from the
// sampled counts, so that no format estimates on its own. In an unsampled
// run every estimate is exact (low = value = high) and every total is the
// count itself.
struct PairFigures {
  Estimate count;            // frees (Analysis::Count)
  Estimate bytes;            // their bytes (Analysis::Bytes)
  Estimate rate;             // frees per 1000 allocations (Analysis::Rate)
  uint64_t frees = 0;        // Analysis::Scaled(count): the estimate, whole
  uint64_t total_bytes = 0;  // Analysis::Scaled(bytes)
  double per_thousand = 0;   // Analysis::PerThousand(count)
  double share = 0;          // of the run's cross-thread frees (0 when none)
  // Lifecycle (CrossPair::steady(), thread_bounded, edge_bounded), scaled.
  uint64_t steady = 0;
  uint64_t thread_bounded = 0;
  uint64_t edge_bounded = 0;
  uint64_t bounded = 0;      // CrossPair::bounded(), scaled
  Estimate steady_per_unit;  // per-call objects per unit (Analysis::PerUnit)
  std::map<int, uint64_t> size_classes;  // size class index -> frees, scaled
  std::map<int, double> size_class_shares;  // size class index -> share of the pair's frees
  std::vector<uint64_t> timeline;        // CrossPair::timeline, scaled
};

struct LoneFigures {
  Estimate count;
  Estimate bytes;
  uint64_t objects = 0;      // Analysis::Scaled(count)
  uint64_t total_bytes = 0;  // Analysis::Scaled(bytes)
};

struct AsymmetryFigures {
  Estimate allocs;
  Estimate frees;
  Estimate net;              // Analysis::Net
  uint64_t total_allocs = 0; // Analysis::Scaled(allocs)
  uint64_t total_frees = 0;  // Analysis::Scaled(frees)
};

// A count of the run (PairingCounts) as printed: its estimate with the 95%
// interval, and the whole estimate (Analysis::Scaled).
struct TotalFigure {
  Estimate estimate;
  uint64_t total = 0;
};

// The run's counts as the renderers print them (Analysis::Totals). Where a
// renderer has printed a count two ways, both are kept, named for the
// difference, so that outputs stay as they were: the estimate bounded by the
// run's exact frees (FreeCount) or not (Count).
struct RunFigures {
  TotalFigure cross_thread;          // FreeCount
  TotalFigure cross_thread_unbounded;  // Count
  // cross_thread's estimate, whole (cut toward 0), and its share of the
  // run's exact frees (Frees()).
  uint64_t cross_thread_frees = 0;
  double cross_thread_share = 0;
  Estimate cross_thread_rate;        // per 1000 allocations (Rate)
  double cross_thread_per_thousand = 0;
  TotalFigure same_thread;           // FreeCount of paired - cross_thread
  TotalFigure live_at_exit;          // AllocCount
  TotalFigure live_bytes;            // Bytes(live_at_exit, live_bytes)
  TotalFigure unknown_frees;         // Count
  Estimate unknown_frees_bounded;    // FreeCount
  TotalFigure double_frees;          // Count
  Estimate double_frees_bounded;     // FreeCount
  TotalFigure forked_frees;          // FreeCount
  TotalFigure alloc_over_live;       // Count
  TotalFigure before_window;         // Count
  TotalFigure live_at_window_end;    // Count
  uint64_t live_window_end_bytes = 0;  // Scaled
  // The sampler's choices it could not follow (PairingCounts::samples_dropped)
  // as a share of all its choices (those and the sampled allocations).
  double samples_dropped_share = 0;
  // The pairs' per-call (steady-state) objects and the rest (one-off) of the
  // cross-thread frees, with the per-call rate per 1000 allocations (Rate)
  // and per unit (PerUnit).
  TotalFigure steady;                // Count
  TotalFigure bounded;               // Count of cross_thread - steady
  Estimate steady_rate;
  Estimate steady_per_unit;
};

struct Analysis {
  std::vector<TraceInfo> traces;
  PairingCounts counts;
  size_t threads = 0;
  std::vector<CrossPair> pairs;           // cross-thread, by count desc, then key
  std::vector<AsymmetryRow> asymmetry;    // rows with net != 0, by |net| desc
  std::vector<LoneSite> live;             // by count desc, at most lone_sites
  std::vector<LoneSite> live_at_window_end;
  std::vector<LoneSite> unknown_frees;
  std::vector<LoneSite> double_frees;
  // Frees in fork children of blocks their parent allocated (fork_frees.h).
  ForkFrees fork_frees;
  std::vector<std::string> warnings;      // truncation, symbolization
  CentralSummary central;                 // tcmalloc central transfers (central.h)
  // report --allocator / --lifetimes: per pair, the model's cost, lifetimes
  // and CPUs (pair_costs.h); absent otherwise.
  std::optional<PairCosts> pair_costs;
  uint64_t timeline_bucket_ns = 0;        // width of CrossPair::timeline buckets
  // --from/--to: the analysis window in ns since each trace's start, when set.
  bool windowed = false;
  uint64_t window_from_ns = 0;
  uint64_t window_to_ns = ~uint64_t{0};
  // Some trace has recording windows (TraceInfo::recording_windows).
  bool recording_windows = false;
  // What the run did, as the workload counts it (RPC calls, requests), from
  // --operations; 0 when not given. Rates of per-call objects are then per
  // operation (PerUnit), so that fixing one allocation changes no other
  // pair's rate; otherwise per 1000 allocations.
  uint64_t operations = 0;
  // The steady state of each trace (PairCounts), ns since its start.
  std::vector<std::pair<uint64_t, uint64_t>> steady_states;
  // For each allocation site of a cross-thread pair (its key): the objects
  // allocated there and freed, on any thread, the freeing thread's own
  // included (sampled counts). What share of a site's objects crosses
  // threads is how the gate tells timing-dependent hand-offs (gate.h).
  // Counted over the stacks whose innermost return address is one a
  // cross-thread pair's allocation stack has (the same call instruction).
  std::map<std::string, uint64_t> site_objects;
  // The traces' sample period (all alike, or the analysis fails): > 1 means
  // counts, bytes and pairs are of the sampled objects, and what the run did
  // is estimated from them (estimate.h). 1: every event was traced.
  uint32_t sample_period = 1;

  bool sampled() const { return sample_period > 1; }
  // The run's allocations and frees: in a sampled run the exact totals of
  // the counts records (the denominators of every rate), estimated only
  // when the traces have none (a warning says so).
  uint64_t Allocations() const {
    if (!sampled()) return counts.allocations;
    return counts.counts_records ? std::max(counts.total_allocs, counts.allocations)
                                 : ScaleCount(counts.allocations, sample_period);
  }
  uint64_t Frees() const {
    if (!sampled()) return counts.frees;
    return counts.counts_records ? std::max(counts.total_frees, counts.frees)
                                 : ScaleCount(counts.frees, sample_period);
  }
  // What a sampled count stands for: period x count (count itself when not
  // sampled), and with its interval.
  uint64_t Scaled(uint64_t count) const { return ScaleCount(count, sample_period); }
  uint64_t Scaled(SampledCount count) const { return Scaled(count.sampled); }
  Estimate Count(uint64_t count) const { return EstimateCount(count, sample_period); }
  Estimate Count(SampledCount count) const { return Count(count.sampled); }
  // Count() of a part of the frees (of the allocations), bounded by their
  // exact total when the counts records give it (issue 31).
  Estimate FreeCount(uint64_t count) const {
    Estimate e = Count(count);
    return sampled() && counts.counts_records ? Bounded(e, static_cast<double>(Frees())) : e;
  }
  Estimate AllocCount(uint64_t count) const {
    Estimate e = Count(count);
    return sampled() && counts.counts_records ? Bounded(e, static_cast<double>(Allocations()))
                                              : e;
  }
  Estimate Bytes(uint64_t count, uint64_t bytes) const {
    return EstimateBytes(count, bytes, sample_period);
  }
  // Allocations minus frees of an asymmetry row, estimated.
  Estimate Net(const AsymmetryRow& r) const {
    return EstimateDifference(r.allocs.sampled, r.frees.sampled, sample_period);
  }
  // A sampled count of frees as frees per 1000 allocations of this run,
  // estimated; its interval bounded as FreeCount's (a part of the frees
  // cannot exceed them). Unsampled: the exact rate, low = high =
  // PerThousand(count).
  Estimate Rate(uint64_t count) const {
    uint64_t a = Allocations();
    Estimate e = FreeCount(count);
    double f = a ? 1000.0 / static_cast<double>(a) : 0.0;
    // The bounded value when the bound cut it, else the rate as computed
    // everywhere else (to the last digit).
    const bool cut = e.value < static_cast<double>(Scaled(count));
    e.value = cut ? e.value * f : PerThousand(count);
    e.low = sampled() ? e.low * f : e.value;
    e.high = sampled() ? e.high * f : e.value;
    return e;
  }

  // count per 1000 allocations of this run (0 when there are none); count
  // is a sampled count in a sampled run (then the rate is an estimate).
  double PerThousand(uint64_t count) const {
    uint64_t a = Allocations();
    return a ? Scaled(count) * 1000.0 / a : 0.0;
  }

  // The unit of per-call rates: an operation when the run's operations are
  // known, else 1000 allocations.
  bool per_operation() const { return operations > 0; }
  const char* UnitName() const { return per_operation() ? "per operation" : "per 1000 allocations"; }
  // How many units the run made: operations, or allocations / 1000.
  double Units() const {
    return per_operation() ? static_cast<double>(operations) : Allocations() / 1000.0;
  }
  // A (sampled) count per unit, estimated, with its 95% interval.
  Estimate PerUnit(uint64_t count) const {
    double u = Units();
    return Count(count).Scaled(u > 0 ? 1.0 / u : 0.0);
  }
  Estimate PerUnit(SampledCount count) const { return PerUnit(count.sampled); }

  // Per-call (steady-state) objects exclude those allocated and freed at
  // the run's edges (PairCounts::edge_bounded), so their rate divides by
  // the units of the same window: the share of the run's time (its traces'
  // durations summed) in the steady state stands for the share of its
  // operations there (the operations are a count, not events of the
  // trace). Without it a uniform per-call hand-off reads about 10% low
  // (issue 42). Time, not allocations: a workload that allocates little
  // per operation makes most of its allocations at start-up, and their
  // share would say nothing of the operations. If the operations avoid the
  // edges (a slow start-up), the rate reads at most 1/0.9 high. 1 when the
  // traces have no edges (shorter than kMinSteadyNs, attached) or the
  // counts do not say (an analysis built by hand).
  double SteadyShare() const {
    if (counts.duration_ticks == 0) return 1.0;
    return std::min(1.0, static_cast<double>(counts.steady_ticks) /
                             static_cast<double>(counts.duration_ticks));
  }
  double SteadyUnits() const { return Units() * SteadyShare(); }
  // A (sampled) count of per-call objects per unit of the steady state: an
  // unbiased estimate of per-call objects per operation (per 1000
  // allocations), with its 95% interval.
  Estimate PerSteadyUnit(uint64_t count) const {
    double u = SteadyUnits();
    return Count(count).Scaled(u > 0 ? 1.0 / u : 0.0);
  }
  Estimate PerSteadyUnit(SampledCount count) const { return PerSteadyUnit(count.sampled); }

  // The figures renderers print (PairFigures), from this analysis as it is
  // now (its operations included).
  PairFigures Figures(const CrossPair& p) const;
  LoneFigures Figures(const LoneSite& s) const;
  AsymmetryFigures Figures(const AsymmetryRow& r) const;
  RunFigures Totals() const;
};

// "alloc_role -> free_role | alloc: A <- B | free: C <- D".
std::string PairKeyText(const std::string& alloc_role, const std::string& free_role,
                        const std::string& alloc_site, const std::string& free_site);

// Analyzes opened traces. resolver may be null (MakeDefaultResolver). Returns
// false with *error on a decoding error or a bad --skip pattern.
bool Analyze(TraceSet& set, const AnalysisOptions& options, SymbolResolver* resolver,
             Analysis* out, std::string* error);

// Opens the files, then Analyze(). Errors name the file.
// progress (optional) follows the reading and decoding.
bool AnalyzeFiles(const std::vector<std::string>& paths, const AnalysisOptions& options,
                  Analysis* out, std::string* error, ReadProgress* progress = nullptr);

// 1234567 -> "1,234,567": counts in the model's own sentences (an
// object's lifecycle text, the gate's unit line), as the renderers print them.
std::string GroupedCount(uint64_t n);

}  // namespace crossfree::analyzer
