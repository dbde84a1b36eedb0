// SPDX-License-Identifier: Apache-2.0
// Analyzer: central free-list transfers (see central.h).
#include "analysis/central.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/event_stream.h"
#include "format/trace_reader.h"
#include "render/output.h"

namespace crossfree::analyzer {

void CentralCounts::Add(const CentralCounts& o) {
  fetch += o.fetch;
  release += o.release;
  insert_range += o.insert_range;
  remove_range += o.remove_range;
  fetched_objects += o.fetched_objects;
  released_objects += o.released_objects;
}

const char* CentralOpName(format::CentralOp op) {
  switch (op) {
    case format::CentralOp::kFetch:
      return "fetch";
    case format::CentralOp::kRelease:
      return "release";
    case format::CentralOp::kInsertRange:
      return "insert_range";
    case format::CentralOp::kRemoveRange:
      return "remove_range";
  }
  return "?";
}

namespace {

struct RawKey {
  uint32_t tid;
  uint32_t stack;
  uint8_t op;
  bool operator==(const RawKey& o) const {
    return tid == o.tid && stack == o.stack && op == o.op;
  }
};
struct RawKeyHash {
  size_t operator()(const RawKey& k) const {
    return (static_cast<size_t>(k.tid) * 0x9e3779b97f4a7c15ull) ^ (k.stack * 31u) ^ k.op;
  }
};
struct RawValue {
  uint64_t calls = 0;
  uint64_t objects = 0;
};
void AddTo(CentralCounts* c, format::CentralOp op, const RawValue& v);

class CentralVisitor : public ChunkVisitor {
 public:
  CentralVisitor(std::unordered_map<RawKey, RawValue, RawKeyHash>* raw, CentralCounts* by_tracer)
      : raw_(raw), by_tracer_(by_tracer) {}
  void OnCentral(const format::CentralEvent& e) override {
    NoteCentral();
    if (e.by_tracer) {
      AddTo(by_tracer_, e.op, RawValue{1, e.count});
      return;
    }
    RawValue& v = (*raw_)[{e.tid, e.stack_id, static_cast<uint8_t>(e.op)}];
    v.calls += 1;
    v.objects += e.count;
  }

 private:
  std::unordered_map<RawKey, RawValue, RawKeyHash>* raw_;
  CentralCounts* by_tracer_;
};

void AddTo(CentralCounts* c, format::CentralOp op, const RawValue& v) {
  switch (op) {
    case format::CentralOp::kFetch:
      c->fetch += v.calls;
      c->fetched_objects += v.objects;
      break;
    case format::CentralOp::kRelease:
      c->release += v.calls;
      c->released_objects += v.objects;
      break;
    case format::CentralOp::kInsertRange:
      c->insert_range += v.calls;
      break;
    case format::CentralOp::kRemoveRange:
      c->remove_range += v.calls;
      break;
  }
}

}  // namespace

bool CollectCentral(TraceSet& set, GroupBy by, size_t top, SiteBuilder& sites,
                    CentralSummary* out, std::string* error) {
  *out = CentralSummary();
  std::map<std::string, CentralCounts> roles;
  std::map<std::tuple<uint8_t, std::string, std::string>, CentralSite> merged;
  for (size_t t = 0; t < set.traces().size(); ++t) {
    ProcessTrace& trace = *set.traces()[t];
    // The pairing pass has decoded every chunk already and noted whether
    // central records exist; a second full decode is paid only when they do.
    if (!trace.has_central.load(std::memory_order_relaxed)) continue;
    std::unordered_map<RawKey, RawValue, RawKeyHash> raw;
    CentralVisitor visitor(&raw, &out->by_tracer);
    for (const ThreadStream& stream : trace.streams) {
      for (const format::Chunk& chunk : stream.chunks) {
        if (!DecodeTraceChunk(trace, chunk, visitor, error)) return false;
      }
    }
    std::unordered_map<uint32_t, std::string> labels;
    for (const auto& [k, v] : raw) {
      auto [it, inserted] = labels.try_emplace(k.tid);
      if (inserted) it->second = ThreadLabel(trace, k.tid, by);
      auto op = static_cast<format::CentralOp>(k.op);
      AddTo(&roles[it->second], op, v);
      AddTo(&out->total, op, v);
      if (op != format::CentralOp::kFetch && op != format::CentralOp::kRelease) continue;
      const Site& site = sites.Get(t, trace, k.stack);
      CentralSite& s = merged[{k.op, it->second, site.key}];
      if (s.calls == 0) {
        s.op = op;
        s.role = it->second;
        s.site = site;
      }
      s.calls += v.calls;
      s.objects += v.objects;
    }
  }
  for (auto& [role, counts] : roles) out->roles.push_back({role, counts});
  std::sort(out->roles.begin(), out->roles.end(),
            [](const CentralRoleRow& a, const CentralRoleRow& b) {
              if (a.counts.transfers() != b.counts.transfers()) {
                return a.counts.transfers() > b.counts.transfers();
              }
              return a.role < b.role;
            });
  for (auto& [k, s] : merged) out->sites.push_back(std::move(s));
  std::sort(out->sites.begin(), out->sites.end(), [](const CentralSite& a, const CentralSite& b) {
    if (a.calls != b.calls) return a.calls > b.calls;
    return std::tie(a.op, a.role, a.site.key) < std::tie(b.op, b.role, b.site.key);
  });
  out->sites_total = out->sites.size();
  if (top != 0 && out->sites.size() > top) out->sites.resize(top);
  return true;
}

std::string RenderCentralText(const CentralSummary& c, GroupBy by, size_t width) {
  if (!c.present()) return "";
  std::string out = fmt::format(
      "\nCentral free-list transfers (tcmalloc): {} fetches, {} releases per {}\n",
      Commas(c.total.fetch), Commas(c.total.release), by == GroupBy::kRole ? "role" : "thread");
  auto row = [&](const std::string& role, const CentralCounts& n) {
    out += fmt::format("  {:<20} {:>11} {:>11} {:>12} {:>12} {:>11} {:>11}\n", Fit(role, 20),
                       Commas(n.fetch), Commas(n.release), Commas(n.remove_range),
                       Commas(n.insert_range), Commas(n.fetched_objects),
                       Commas(n.released_objects));
  };
  out += fmt::format("  {:<20} {:>11} {:>11} {:>12} {:>12} {:>11} {:>11}\n",
                     by == GroupBy::kRole ? "role" : "thread", "fetch", "release",
                     "remove_range", "insert_range", "fetched", "released");
  for (const CentralRoleRow& r : c.roles) row(r.role, r.counts);
  if (c.roles.size() > 1) row("total", c.total);
  if (c.by_tracer.transfers() > 0) {
    out += fmt::format("  (not counted above: {} fetches, {} releases caused by the tracer itself)\n",
                       Commas(c.by_tracer.fetch), Commas(c.by_tracer.release));
  }
  if (!c.sites.empty()) {
    out += fmt::format("  Call sites that triggered them (top {} of {})\n", c.sites.size(),
                       c.sites_total);
    for (const CentralSite& s : c.sites) {
      std::string head = fmt::format("  {:>11}  {:<7} {:<14} ", Commas(s.calls),
                                     CentralOpName(s.op), Fit(s.role, 14));
      out += head + Fit(s.site.key, width > head.size() ? width - head.size() : 10) + "\n";
    }
  }
  out +=
      "  fetch: the thread cache was empty and refilled from the central list (RemoveRange);\n"
      "  release: its list grew too long and went back (InsertRange).\n";
  return out;
}

namespace {

std::string CountsJson(const CentralCounts& n) {
  return fmt::format(
      "\"fetch\": {}, \"release\": {}, \"remove_range\": {}, \"insert_range\": {}, "
      "\"fetched_objects\": {}, \"released_objects\": {}",
      n.fetch, n.release, n.remove_range, n.insert_range, n.fetched_objects, n.released_objects);
}

}  // namespace

std::string RenderCentralJson(const CentralSummary& c) {
  std::string out = "{" + CountsJson(c.total) + ",\n    \"by_tracer\": {" +
                    CountsJson(c.by_tracer) + "},\n    \"roles\": [";
  for (size_t i = 0; i < c.roles.size(); ++i) {
    out += fmt::format("{}\n      {{\"role\": {}, {}}}", i ? "," : "", JsonString(c.roles[i].role),
                       CountsJson(c.roles[i].counts));
  }
  out += c.roles.empty() ? "],\n" : "\n    ],\n";
  out += fmt::format("    \"sites_total\": {},\n    \"sites\": [", c.sites_total);
  for (size_t i = 0; i < c.sites.size(); ++i) {
    const CentralSite& s = c.sites[i];
    out += fmt::format("{}\n      {{\"op\": \"{}\", \"role\": {}, \"calls\": {}, \"objects\": {}, "
                       "\"site\": {}}}",
                       i ? "," : "", CentralOpName(s.op), JsonString(s.role), s.calls, s.objects,
                       SiteJson(s.site));
  }
  out += c.sites.empty() ? "]}" : "\n    ]}";
  return out;
}

std::string RenderCentralDiffText(const CentralSummary& before, uint64_t before_allocs,
                                  const CentralSummary& after, uint64_t after_allocs) {
  if (!before.present() && !after.present()) return "";
  std::map<std::string, std::pair<CentralCounts, CentralCounts>> rows;
  for (const CentralRoleRow& r : before.roles) rows[r.role].first = r.counts;
  for (const CentralRoleRow& r : after.roles) rows[r.role].second = r.counts;
  auto per_k = [](uint64_t n, uint64_t allocs) { return allocs ? n * 1000.0 / allocs : 0.0; };
  std::string out =
      "\nCentral free-list transfers (tcmalloc): calls before -> after (per 1000 allocations)\n";
  out += fmt::format("  {:<20} {:>30} {:>30}\n", "role", "fetch", "release");
  auto line = [&](const std::string& role, const CentralCounts& b, const CentralCounts& a) {
    out += fmt::format("  {:<20} {:>30} {:>30}\n", Fit(role, 20),
                       fmt::format("{} -> {} ({:.1f} -> {:.1f})", Commas(b.fetch), Commas(a.fetch),
                                   per_k(b.fetch, before_allocs), per_k(a.fetch, after_allocs)),
                       fmt::format("{} -> {} ({:.1f} -> {:.1f})", Commas(b.release),
                                   Commas(a.release), per_k(b.release, before_allocs),
                                   per_k(a.release, after_allocs)));
  };
  for (const auto& [role, ba] : rows) line(role, ba.first, ba.second);
  line("total", before.total, after.total);
  return out;
}

std::string RenderCentralDiffJson(const CentralSummary& before, const CentralSummary& after) {
  std::map<std::string, std::pair<CentralCounts, CentralCounts>> rows;
  for (const CentralRoleRow& r : before.roles) rows[r.role].first = r.counts;
  for (const CentralRoleRow& r : after.roles) rows[r.role].second = r.counts;
  std::string out = "{\"before\": {" + CountsJson(before.total) + "}, \"after\": {" +
                    CountsJson(after.total) + "},\n    \"roles\": [";
  size_t i = 0;
  for (const auto& [role, ba] : rows) {
    out += fmt::format("{}\n      {{\"role\": {}, \"before\": {{{}}}, \"after\": {{{}}}}}",
                       i++ ? "," : "", JsonString(role), CountsJson(ba.first),
                       CountsJson(ba.second));
  }
  out += rows.empty() ? "]}" : "\n    ]}";
  return out;
}

}  // namespace crossfree::analyzer
