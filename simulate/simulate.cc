// SPDX-License-Identifier: Apache-2.0
// Simulate: trace replay through the thread-cache model, aggregation and
// rendering (see simulate.h).
#include "simulate/simulate.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <unordered_map>

#include "analysis/event_stream.h"
#include "format/trace_reader.h"
#include "render/output.h"

namespace crossfree::simulate {

using analyzer::ChunkVisitor;
using analyzer::DecodeTraceChunk;
using analyzer::FinishMetadata;
using analyzer::MergeHeap;
using analyzer::OrderKey;
using analyzer::ProcessTrace;
using analyzer::Rank;
using analyzer::Site;
using analyzer::TraceSet;

void TransferCounts::Add(const TransferCounts& o) {
  allocations += o.allocations;
  frees += o.frees;
  large_allocations += o.large_allocations;
  fetch_calls += o.fetch_calls;
  fetched_objects += o.fetched_objects;
  short_fetches += o.short_fetches;
  release_calls += o.release_calls;
  released_objects += o.released_objects;
  for (int i = 0; i < kReleaseCauseCount; ++i) {
    release_calls_by_cause[i] += o.release_calls_by_cause[i];
  }
  direct_central_frees += o.direct_central_frees;
}

namespace {

enum Kind : uint8_t { kFree = 0, kAlloc = 1, kRealloc = 2, kExit = 3 };

// One replayed operation of one thread. A realloc record (free half, then
// alloc half) becomes one kRealloc at the alloc half's timestamp, because
// tcmalloc allocates the new block before it frees the old one.
struct SimEvent {
  uint64_t ts = 0;
  uint64_t address = 0;
  uint64_t old_address = 0;  // kRealloc
  uint64_t size = 0;
  uint32_t stack = 0;
  uint8_t kind = kAlloc;
  uint8_t fn = 0;
};

// The ordering rule of the event stream: free before allocation on equal
// timestamps, a thread exit last.
OrderKey KeyOf(const SimEvent& e) {
  return {e.ts, e.kind == kFree ? Rank::kFree : e.kind == kExit ? Rank::kThreadExit : Rank::kAlloc};
}

constexpr uint32_t kExitStack = std::numeric_limits<uint32_t>::max();

// Decodes one chunk into SimEvents and the trace's metadata.
class ChunkCollector : public ChunkVisitor {
 public:
  explicit ChunkCollector(std::vector<SimEvent>* out) : out_(out) {}

  void OnEvent(const format::Event& ev) override {
    ++events;
    if (ev.op == format::EventOp::kFree && ev.from_realloc) {
      FlushPending();
      pending_ = Make(ev, kFree);
      has_pending_ = true;
      return;
    }
    if (ev.op == format::EventOp::kAlloc && ev.from_realloc && has_pending_) {
      SimEvent e = Make(ev, kRealloc);
      e.old_address = pending_.address;
      has_pending_ = false;
      out_->push_back(e);
      return;
    }
    FlushPending();
    out_->push_back(Make(ev, ev.op == format::EventOp::kFree ? kFree : kAlloc));
  }
  void OnThreadExit(uint32_t, uint64_t ts) override {
    FlushPending();
    SimEvent e;
    e.ts = ts;
    e.kind = kExit;
    out_->push_back(e);
  }
  void FlushPending() {
    if (has_pending_) out_->push_back(pending_);
    has_pending_ = false;
  }

  uint64_t events = 0;

 private:
  static SimEvent Make(const format::Event& ev, uint8_t kind) {
    SimEvent e;
    e.ts = ev.timestamp_ns;
    e.address = ev.address;
    e.size = ev.size;
    e.stack = ev.stack_id;
    e.kind = kind;
    e.fn = ev.fn;
    return e;
  }

  std::vector<SimEvent>* out_;
  SimEvent pending_;
  bool has_pending_ = false;
};

struct StreamState {
  int heap = -1;
  size_t next_chunk = 0;
  std::vector<SimEvent> events;
  size_t pos = 0;
  TransferCounts counts;
  std::map<int, TransferCounts> by_class;
};

struct Block {
  uint64_t bytes = 0;   // class size, or whole pages for a large block
  int cl = 0;           // 0: large
  uint32_t object = 0;  // the model's object (its span)
};

struct SiteKey {
  uint32_t stream;
  uint32_t stack;
  bool operator==(const SiteKey&) const = default;
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const {
    return std::hash<uint64_t>()(uint64_t{k.stream} << 32 | k.stack);
  }
};
struct CallsObjects {
  uint64_t calls = 0;
  uint64_t objects = 0;
};
using SiteMap = std::unordered_map<SiteKey, CallsObjects, SiteKeyHash>;

// Replays one process.
class Replayer : public TransferSink {
 public:
  Replayer(ProcessTrace* trace, const SimulateOptions& options)
      : trace_(trace),
        model_(options.allocator, this),
        streams_(trace->streams.size()),
        cache_from_first_event_(options.cache_from_first_event) {}

  bool Run(std::string* error) {
    MergeHeap<Cursor> heap;
    for (uint32_t s = 0; s < streams_.size(); ++s) {
      if (!Refill(s, error)) return false;
      if (!Exhausted(s)) heap.Push(Cursor{this, s});
    }
    heap.Build();
    while (!heap.empty()) {
      uint32_t s = heap.top().stream;
      Process(s, Head(s));
      ++streams_[s].pos;
      if (!Refill(s, error)) return false;
      if (Exhausted(s)) {
        heap.Pop();
      } else {
        heap.Fix();
      }
    }
    FinishMetadata(*trace_);
    return true;
  }

  void OnFetch(int, int cl, int objects, int wanted) override {
    StreamState& st = streams_[current_];
    for (TransferCounts* c : {&st.counts, &st.by_class[cl]}) {
      c->fetch_calls += 1;
      c->fetched_objects += objects;
      if (objects < wanted) c->short_fetches += 1;
    }
    CallsObjects& site = fetch_sites_[{static_cast<uint32_t>(current_), current_stack_}];
    site.calls += 1;
    site.objects += objects;
  }
  void OnRelease(int, int cl, int objects, ReleaseCause cause) override {
    StreamState& st = streams_[current_];
    for (TransferCounts* c : {&st.counts, &st.by_class[cl]}) {
      c->release_calls += 1;
      c->released_objects += objects;
      c->release_calls_by_cause[static_cast<int>(cause)] += 1;
    }
    uint32_t stack = cause == ReleaseCause::kThreadExit ? kExitStack : current_stack_;
    CallsObjects& site = release_sites_[{static_cast<uint32_t>(current_), stack}];
    site.calls += 1;
    site.objects += objects;
  }

  const std::vector<StreamState>& streams() const { return streams_; }
  const SiteMap& fetch_sites() const { return fetch_sites_; }
  const SiteMap& release_sites() const { return release_sites_; }
  uint64_t events() const { return events_; }
  uint64_t unknown_frees() const { return unknown_frees_; }
  uint64_t inplace_reallocs() const { return inplace_reallocs_; }

 private:
  // A merge cursor: the head event of one stream.
  struct Cursor {
    const Replayer* replayer;
    uint32_t stream;
    OrderKey key() const { return KeyOf(replayer->Head(stream)); }
  };

  bool Exhausted(size_t s) const { return streams_[s].pos >= streams_[s].events.size(); }
  const SimEvent& Head(size_t s) const { return streams_[s].events[streams_[s].pos]; }

  // Decodes the stream's next chunks until it has an event or none is left.
  bool Refill(size_t s, std::string* error) {
    StreamState& st = streams_[s];
    const auto& chunks = trace_->streams[s].chunks;
    while (st.pos >= st.events.size() && st.next_chunk < chunks.size()) {
      st.events.clear();
      st.pos = 0;
      ChunkCollector collector(&st.events);
      if (!DecodeTraceChunk(*trace_, chunks[st.next_chunk++], collector, error)) return false;
      collector.FlushPending();
      events_ += collector.events;
    }
    return true;
  }

  void Process(size_t s, const SimEvent& e) {
    current_ = s;
    current_stack_ = e.stack;
    if (cache_from_first_event_ && streams_[s].heap < 0 && e.kind != kExit) {
      streams_[s].heap = model_.CreateHeap();
    }
    switch (e.kind) {
      case kAlloc:
        Allocate(s, e.address, RequestSize(e), e.stack);
        break;
      case kFree:
        Free(s, e.address);
        break;
      case kRealloc:
        Realloc(s, e);
        break;
      case kExit:
        if (streams_[s].heap >= 0) model_.DeleteHeap(streams_[s].heap);
        streams_[s].heap = -1;
        break;
    }
  }

  // tcmalloc.cc: valloc and pvalloc are memalign at the system page size
  // (4 KiB, within kPageSize), i.e. malloc of the size rounded up to it;
  // pvalloc(0) asks for one page. Other aligned calls do not record their
  // alignment: their size is taken as is (docs/guide/simulate.md).
  static uint64_t RequestSize(const SimEvent& e) {
    auto fn = static_cast<format::AllocFn>(e.fn);
    constexpr uint64_t kSystemPage = 4096;
    if (fn == format::AllocFn::kValloc || fn == format::AllocFn::kPvalloc) {
      uint64_t size = e.size == 0 && fn == format::AllocFn::kPvalloc ? kSystemPage : e.size;
      return (size + kSystemPage - 1) / kSystemPage * kSystemPage;
    }
    return e.size;
  }

  void Allocate(size_t s, uint64_t address, uint64_t size, uint32_t) {
    StreamState& st = streams_[s];
    st.counts.allocations += 1;
    if (address == 0) return;
    int cl = model_.size_map().SizeClass(size);
    if (cl == 0) {
      st.counts.large_allocations += 1;
      uint64_t pages = (size + kPageSize - 1) >> kPageShift;
      live_[address] = Block{std::max<uint64_t>(pages, 1) << kPageShift, 0, 0};
      return;
    }
    if (st.heap < 0) st.heap = model_.CreateHeap();
    st.by_class[cl].allocations += 1;
    uint32_t object = model_.Allocate(st.heap, cl);
    live_[address] = Block{model_.size_map().ClassSize(cl), cl, object};
  }

  void Free(size_t s, uint64_t address) {
    if (address == 0) return;
    auto it = live_.find(address);
    if (it == live_.end()) {
      ++unknown_frees_;
      return;
    }
    Block block = it->second;
    live_.erase(it);
    FreeBlock(s, block);
  }

  void FreeBlock(size_t s, const Block& block) {
    StreamState& st = streams_[s];
    st.counts.frees += 1;
    if (block.cl == 0) return;  // page heap
    st.by_class[block.cl].frees += 1;
    if (st.heap < 0) {
      st.counts.direct_central_frees += 1;
      st.by_class[block.cl].direct_central_frees += 1;
      model_.DeallocateToCentral(block.cl, block.object);
      return;
    }
    model_.Deallocate(st.heap, block.cl, block.object);
  }

  // tcmalloc.cc do_realloc_with_callback: a block that grows moves to a
  // new block of at least 1.25x the old size; one that shrinks below half
  // moves; otherwise it stays. The trace says whether it moved.
  void Realloc(size_t s, const SimEvent& e) {
    auto it = live_.find(e.old_address);
    bool known = it != live_.end();
    if (e.address == e.old_address) {
      ++inplace_reallocs_;
      if (!known) Allocate(s, e.address, e.size, e.stack);
      return;
    }
    uint64_t size = e.size;
    Block old;
    if (known) {
      old = it->second;
      live_.erase(it);
      uint64_t lower_bound_to_grow = old.bytes + old.bytes / 4;
      if (size > old.bytes && size < lower_bound_to_grow) size = lower_bound_to_grow;
    }
    Allocate(s, e.address, size, e.stack);
    if (known) {
      FreeBlock(s, old);
    } else {
      ++unknown_frees_;
    }
  }

  ProcessTrace* trace_;
  TcmallocModel model_;
  std::vector<StreamState> streams_;
  std::unordered_map<uint64_t, Block> live_;
  SiteMap fetch_sites_;
  SiteMap release_sites_;
  size_t current_ = 0;
  uint32_t current_stack_ = 0;
  uint64_t events_ = 0;
  uint64_t unknown_frees_ = 0;
  uint64_t inplace_reallocs_ = 0;
  bool cache_from_first_event_ = false;
};

struct RawSite {
  size_t trace;
  SiteKey key;
  CallsObjects value;
};

// Symbolizes the busiest raw sites and merges them by (group, site key).
std::vector<SiteTransfers> TopSites(std::vector<RawSite> raw, const TraceSet& set,
                                    const SimulateOptions& options,
                                    analyzer::SiteBuilder& builder) {
  size_t keep = options.top == 0 ? raw.size() : std::min(raw.size(), options.top * 4);
  std::partial_sort(raw.begin(), raw.begin() + keep, raw.end(),
                    [](const RawSite& a, const RawSite& b) {
                      return std::tie(b.value.calls, a.trace, a.key.stream, a.key.stack) <
                             std::tie(a.value.calls, b.trace, b.key.stream, b.key.stack);
                    });
  std::map<std::pair<std::string, std::string>, SiteTransfers> merged;
  for (size_t i = 0; i < keep; ++i) {
    const ProcessTrace& trace = *set.traces()[raw[i].trace];
    std::string group = analyzer::ThreadLabel(trace, trace.streams[raw[i].key.stream].tid,
                                              options.by);
    Site site;
    if (raw[i].key.stack == kExitStack) {
      site.key = "(thread exit)";
    } else {
      site = builder.Get(raw[i].trace, trace, raw[i].key.stack);
    }
    SiteTransfers& t = merged[{group, site.key}];
    if (t.calls == 0) {
      t.group = group;
      t.site = site;
    }
    t.calls += raw[i].value.calls;
    t.objects += raw[i].value.objects;
  }
  std::vector<SiteTransfers> out;
  for (auto& [k, v] : merged) out.push_back(std::move(v));
  std::sort(out.begin(), out.end(), [](const SiteTransfers& a, const SiteTransfers& b) {
    if (a.calls != b.calls) return a.calls > b.calls;
    return std::tie(a.group, a.site.key) < std::tie(b.group, b.site.key);
  });
  if (options.top != 0 && out.size() > options.top) out.resize(options.top);
  return out;
}

}  // namespace

bool Simulate(TraceSet& set, const SimulateOptions& options, analyzer::SymbolResolver* resolver,
              SimulationResult* out, std::string* error) {
  *out = SimulationResult();
  out->warnings = set.warnings();
  std::map<std::string, GroupResult> groups;
  std::vector<RawSite> fetch_raw, release_raw;
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    auto replayer = std::make_unique<Replayer>(&trace, options);
    if (!replayer->Run(error)) return false;
    SimTraceInfo info;
    info.path = trace.path;
    info.pid = trace.pid();
    info.threads = trace.streams.size();
    info.events = replayer->events();
    info.truncated = trace.truncated;
    out->traces.push_back(info);
    out->unknown_frees += replayer->unknown_frees();
    out->inplace_reallocs += replayer->inplace_reallocs();
    for (size_t s = 0; s < trace.streams.size(); ++s) {
      const StreamState& st = replayer->streams()[s];
      std::string name = analyzer::ThreadLabel(trace, trace.streams[s].tid, options.by);
      GroupResult& g = groups[name];
      g.name = name;
      g.threads += 1;
      g.counts.Add(st.counts);
      for (const auto& [cl, c] : st.by_class) g.by_class[cl].Add(c);
      out->totals.Add(st.counts);
    }
    for (const auto& [k, v] : replayer->fetch_sites()) fetch_raw.push_back({t, k, v});
    for (const auto& [k, v] : replayer->release_sites()) release_raw.push_back({t, k, v});
  }
  for (auto& [name, g] : groups) out->groups.push_back(std::move(g));
  std::stable_sort(out->groups.begin(), out->groups.end(),
                   [](const GroupResult& a, const GroupResult& b) {
                     return a.counts.fetch_calls + a.counts.release_calls >
                            b.counts.fetch_calls + b.counts.release_calls;
                   });

  std::unique_ptr<analyzer::SymbolResolver> default_resolver;
  if (!resolver) {
    default_resolver = analyzer::MakeDefaultResolver(set);
    resolver = default_resolver.get();
  }
  auto builder = analyzer::SiteBuilder::Create(options.sites, resolver, error);
  if (!builder) return false;
  out->fetch_sites = TopSites(std::move(fetch_raw), set, options, *builder);
  out->release_sites = TopSites(std::move(release_raw), set, options, *builder);
  for (const std::string& w : resolver->Warnings()) out->warnings.push_back(w);
  return true;
}

bool SimulateFiles(const std::vector<std::string>& paths, const SimulateOptions& options,
                   SimulationResult* out, std::string* error) {
  TraceSet set;
  for (const std::string& path : paths) {
    if (!set.Add(path, error)) return false;
  }
  return Simulate(set, options, nullptr, out, error);
}

namespace {

std::string CountsJson(const TransferCounts& c) {
  return fmt::format(
      "\"allocations\": {}, \"frees\": {}, \"large_allocations\": {}, "
      "\"fetch_calls\": {}, \"fetched_objects\": {}, \"short_fetches\": {}, \"release_calls\": {}, "
      "\"released_objects\": {}, \"release_calls_by_cause\": {{\"{}\": {}, \"{}\": {}, "
      "\"{}\": {}}}, \"direct_central_frees\": {}",
      c.allocations, c.frees, c.large_allocations, c.fetch_calls, c.fetched_objects,
      c.short_fetches, c.release_calls, c.released_objects, ReleaseCauseName(ReleaseCause::kListTooLong),
      c.release_calls_by_cause[0], ReleaseCauseName(ReleaseCause::kScavenge),
      c.release_calls_by_cause[1], ReleaseCauseName(ReleaseCause::kThreadExit),
      c.release_calls_by_cause[2], c.direct_central_frees);
}

std::string SitesJson(const std::vector<SiteTransfers>& sites) {
  std::string out;
  for (const SiteTransfers& s : sites) {
    if (!out.empty()) out += ",\n";
    out += fmt::format("    {{\"group\": {}, \"calls\": {}, \"objects\": {}, \"site\": {}}}",
                       analyzer::JsonString(s.group), s.calls, s.objects,
                       analyzer::SiteJson(s.site));
  }
  return out.empty() ? "[]" : "[\n" + out + "\n  ]";
}

std::string CountsRow(const std::string& name, size_t threads, const TransferCounts& c) {
  return fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>11} {:>10} {:>11} {:>9} {:>9} {:>7} {:>9}\n",
                     analyzer::Fit(name, 24), threads, analyzer::Commas(c.allocations),
                     analyzer::Commas(c.frees), analyzer::Commas(c.fetch_calls),
                     analyzer::Commas(c.fetched_objects), analyzer::Commas(c.release_calls),
                     analyzer::Commas(c.released_objects),
                     analyzer::Commas(c.release_calls_by_cause[0]),
                     analyzer::Commas(c.release_calls_by_cause[1]),
                     analyzer::Commas(c.release_calls_by_cause[2]),
                     analyzer::Commas(c.direct_central_frees));
}

std::string SitesText(const std::vector<SiteTransfers>& sites, const char* what,
                      const char* label) {
  std::string out;
  for (size_t i = 0; i < sites.size(); ++i) {
    const SiteTransfers& s = sites[i];
    out += fmt::format("  {:>2}. {} {} ({} objects)  [{}]\n", i + 1, analyzer::Commas(s.calls),
                       what, analyzer::Commas(s.objects), s.group);
    out += analyzer::SiteText(s.site, label, 6, 110);
  }
  return out.empty() ? "  (none)\n" : out;
}

}  // namespace

std::string RenderSimulationText(const SimulationResult& r, const SimulateOptions& options) {
  std::string out = fmt::format(
      "crossfree simulate: gperftools 2.10 thread caches (max total {}, batches of at most {} "
      "objects)\n",
      analyzer::HumanBytes(options.allocator.max_total_thread_cache_bytes),
      options.allocator.transfer_num_objects);
  for (const SimTraceInfo& t : r.traces) {
    out += fmt::format("trace {}: pid {}, {} threads, {} events{}\n", t.path, t.pid, t.threads,
                       analyzer::Commas(t.events), t.truncated ? " (truncated)" : "");
  }
  const TransferCounts& c = r.totals;
  out += fmt::format(
      "\npredicted central free-list transfers: {} fetches ({} objects; {} short), {} releases "
      "({} objects)\n",
      analyzer::Commas(c.fetch_calls), analyzer::Commas(c.fetched_objects),
      analyzer::Commas(c.short_fetches),
      analyzer::Commas(c.release_calls), analyzer::Commas(c.released_objects));
  out += fmt::format(
      "  releases: {} list too long, {} scavenge, {} thread exit; {} frees without a thread "
      "cache\n",
      analyzer::Commas(c.release_calls_by_cause[0]), analyzer::Commas(c.release_calls_by_cause[1]),
      analyzer::Commas(c.release_calls_by_cause[2]), analyzer::Commas(c.direct_central_frees));
  out += fmt::format(
      "  {} allocations ({} large, page heap), {} frees, {} unknown frees skipped, {} reallocs in "
      "place\n\n",
      analyzer::Commas(c.allocations), analyzer::Commas(c.large_allocations),
      analyzer::Commas(c.frees), analyzer::Commas(r.unknown_frees),
      analyzer::Commas(r.inplace_reallocs));
  out += fmt::format("{:<24} {:>7} {:>12} {:>12} {:>10} {:>11} {:>10} {:>11} {:>9} {:>9} {:>7} {:>9}\n",
                     options.by == analyzer::GroupBy::kRole ? "role" : "thread", "threads",
                     "allocs", "frees", "fetches", "fetched", "releases", "released",
                     "too-long", "scavenge", "exit", "no-cache");
  for (const GroupResult& g : r.groups) out += CountsRow(g.name, g.threads, g.counts);
  size_t threads = 0;
  for (const GroupResult& g : r.groups) threads += g.threads;
  out += CountsRow("total", threads, c);
  out += "\nTop fetch sites (the allocation whose thread-cache miss fetched a batch):\n";
  out += SitesText(r.fetch_sites, "fetches", "alloc: ");
  out += "\nTop release sites (the free that overflowed its list or cache):\n";
  out += SitesText(r.release_sites, "releases", "free: ");
  return out;
}

std::string RenderSimulationJson(const SimulationResult& r, const SimulateOptions& options) {
  std::string traces;
  for (const SimTraceInfo& t : r.traces) {
    if (!traces.empty()) traces += ",\n";
    traces += fmt::format(
        "    {{\"path\": {}, \"pid\": {}, \"threads\": {}, \"events\": {}, \"truncated\": {}}}",
        analyzer::JsonString(t.path), t.pid, t.threads, t.events, t.truncated);
  }
  const SizeMap map(options.allocator.transfer_num_objects);
  std::string groups;
  for (const GroupResult& g : r.groups) {
    std::string classes;
    for (const auto& [cl, c] : g.by_class) {
      if (c.fetch_calls == 0 && c.release_calls == 0 && c.direct_central_frees == 0) continue;
      if (!classes.empty()) classes += ",\n";
      classes += fmt::format("        {{\"class\": {}, \"bytes\": {}, {}}}", cl,
                             cl < map.num_classes() ? map.ClassSize(cl) : 0, CountsJson(c));
    }
    if (!groups.empty()) groups += ",\n";
    groups += fmt::format("    {{\"name\": {}, \"threads\": {}, {}, \"size_classes\": [{}{}{}]}}",
                          analyzer::JsonString(g.name), g.threads, CountsJson(g.counts),
                          classes.empty() ? "" : "\n", classes,
                          classes.empty() ? "" : "\n      ");
  }
  std::string warnings;
  for (const std::string& w : r.warnings) {
    if (!warnings.empty()) warnings += ", ";
    warnings += analyzer::JsonString(w);
  }
  return fmt::format(
      "{{\n  \"tool\": \"crossfree simulate\",\n  \"schema\": 1,\n"
      "  \"model\": {{\"allocator\": \"gperftools-2.10\", \"page_shift\": {}, \"max_size\": {}, "
      "\"max_total_thread_cache_bytes\": {}, \"transfer_num_objects\": {}}},\n"
      "  \"by\": \"{}\",\n  \"traces\": [\n{}\n  ],\n"
      "  \"totals\": {{{}, \"unknown_frees\": {}, \"inplace_reallocs\": {}}},\n"
      "  \"groups\": [\n{}\n  ],\n  \"fetch_sites\": {},\n  \"release_sites\": {},\n"
      "  \"warnings\": [{}]\n}}\n",
      kPageShift, kMaxSize, options.allocator.max_total_thread_cache_bytes,
      options.allocator.transfer_num_objects,
      options.by == analyzer::GroupBy::kRole ? "role" : "thread", traces, CountsJson(r.totals),
      r.unknown_frees, r.inplace_reallocs, groups, SitesJson(r.fetch_sites),
      SitesJson(r.release_sites), warnings);
}

}  // namespace crossfree::simulate
