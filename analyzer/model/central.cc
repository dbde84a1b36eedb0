// SPDX-License-Identifier: Apache-2.0
// Analyzer: central free-list transfers (see central.h).
#include "analyzer/model/central.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analyzer/pairing/add_counts.h"
#include "analyzer/pairing/event_stream.h"
#include "format/trace_reader.h"

namespace crossfree::analyzer {

void CentralCounts::Add(const CentralCounts& o) {
  using C = CentralCounts;
  AddCounts(*this, o, &C::fetch, &C::release, &C::insert_range, &C::remove_range,
            &C::fetched_objects, &C::released_objects);
}

namespace {

// n per 1000 of allocations (0 when there are none).
double PerThousandOf(uint64_t n, uint64_t allocations) {
  return allocations ? n * 1000.0 / allocations : 0.0;
}

CentralDiffRow DiffRowOf(std::string role, const CentralCounts& before,
                         uint64_t before_allocations, const CentralCounts& after,
                         uint64_t after_allocations) {
  CentralDiffRow r;
  r.role = std::move(role);
  r.before = before;
  r.after = after;
  r.before_fetch_rate = PerThousandOf(before.fetch, before_allocations);
  r.after_fetch_rate = PerThousandOf(after.fetch, after_allocations);
  r.before_release_rate = PerThousandOf(before.release, before_allocations);
  r.after_release_rate = PerThousandOf(after.release, after_allocations);
  return r;
}

}  // namespace

CentralDiff DiffCentral(const CentralSummary& before, uint64_t before_allocations,
                        const CentralSummary& after, uint64_t after_allocations) {
  CentralDiff d;
  d.present = before.present() || after.present();
  std::map<std::string, std::pair<CentralCounts, CentralCounts>> rows;
  for (const CentralRoleRow& r : before.roles) rows[r.role].first = r.counts;
  for (const CentralRoleRow& r : after.roles) rows[r.role].second = r.counts;
  for (const auto& [role, ba] : rows) {
    d.roles.push_back(DiffRowOf(role, ba.first, before_allocations, ba.second, after_allocations));
  }
  d.total = DiffRowOf("total", before.total, before_allocations, after.total, after_allocations);
  return d;
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


}  // namespace crossfree::analyzer
