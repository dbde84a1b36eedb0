// SPDX-License-Identifier: Apache-2.0
// Analyzer: frees in a fork child of blocks its parent allocated (see
// fork_frees.h).
#include "analyzer/model/fork_frees.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "format/trace_reader.h"

namespace crossfree::analyzer {
namespace {

// The parent's last event at an address, at or before a fork.
struct LastEvent {
  uint64_t timestamp_ns = 0;
  bool alloc = false;
  bool seen = false;
  uint32_t stack = 0;
  uint32_t tid = 0;
  uint64_t size = 0;
};

// Keeps, for each (fork time, address) asked, the parent's latest event at
// that address no later than the fork time.
class ParentVisitor : public format::RecordVisitor {
 public:
  // address -> the fork times asked for it (a few children at most)
  explicit ParentVisitor(std::unordered_map<uint64_t, std::vector<uint64_t>>* forks)
      : forks_(forks) {}

  void OnEvents(std::span<const format::Event> events) override {
    for (const format::Event& e : events) {
      auto it = forks_->find(e.address);
      if (it == forks_->end()) continue;
      const bool alloc = e.op == format::EventOp::kAlloc;
      for (uint64_t fork_ns : it->second) {
        if (e.timestamp_ns > fork_ns) continue;
        LastEvent& last = last_[{fork_ns, e.address}];
        // Later wins; on equal stamps the allocation (frees sort first).
        if (last.seen && (e.timestamp_ns < last.timestamp_ns ||
                          (e.timestamp_ns == last.timestamp_ns && !alloc))) {
          continue;
        }
        last = {e.timestamp_ns, alloc, true, e.stack_id, e.tid, e.size};
      }
    }
  }

  std::map<std::pair<uint64_t, uint64_t>, LastEvent>& last() { return last_; }

 private:
  std::unordered_map<uint64_t, std::vector<uint64_t>>* forks_;
  std::map<std::pair<uint64_t, uint64_t>, LastEvent> last_;
};

}  // namespace

bool AttributeForkFrees(TraceSet& set, const std::vector<PairingResult>& results,
                        SiteBuilder& sites, GroupBy by, ForkFrees* out,
                        std::string* error) {
  auto& traces = set.traces();
  std::unordered_map<uint32_t, size_t> by_pid;  // the first trace of each pid
  for (size_t t = 0; t < traces.size(); ++t) by_pid.try_emplace(traces[t]->pid(), t);
  // Children per parent trace.
  std::map<size_t, std::vector<size_t>> children;
  for (size_t t = 0; t < traces.size(); ++t) {
    out->forked += results[t].counts.forked_frees;
    if (results[t].forked.empty()) continue;
    auto parent = by_pid.find(traces[t]->header.fields.ppid);
    if (parent == by_pid.end() || parent->second == t) continue;
    children[parent->second].push_back(t);
  }
  struct Key {
    std::string alloc_role, free_role, alloc_key, free_key;
    uint32_t parent_pid, child_pid;
    bool operator<(const Key& o) const {
      return std::tie(alloc_role, free_role, alloc_key, free_key, parent_pid, child_pid) <
             std::tie(o.alloc_role, o.free_role, o.alloc_key, o.free_key, o.parent_pid,
                      o.child_pid);
    }
  };
  std::map<Key, ForkPair> pairs;
  for (const auto& [p, kids] : children) {
    ProcessTrace& parent = *traces[p];
    std::unordered_map<uint64_t, std::vector<uint64_t>> forks;
    for (size_t c : kids) {
      const uint64_t fork_ns = traces[c]->header.fields.start_monotonic_ns;
      for (const ForkedFree& f : results[c].forked) {
        auto& times = forks[f.address];
        if (std::find(times.begin(), times.end(), fork_ns) == times.end()) {
          times.push_back(fork_ns);
        }
      }
    }
    ParentVisitor visitor(&forks);
    std::vector<uint8_t> buffer;
    for (const ThreadStream& stream : parent.streams) {
      for (const format::Chunk& chunk : stream.chunks) {
        format::Chunk loaded;
        if (!parent.reader->LoadPayload(chunk, &buffer, &loaded, error) ||
            !format::DecodeChunk(loaded, visitor, error)) {
          return false;
        }
      }
    }
    for (size_t c : kids) {
      ProcessTrace& child = *traces[c];
      const uint64_t fork_ns = child.header.fields.start_monotonic_ns;
      for (const ForkedFree& f : results[c].forked) {
        auto found = visitor.last().find({fork_ns, f.address});
        if (found == visitor.last().end() || !found->second.alloc) continue;
        const LastEvent& a = found->second;
        ++out->attributed;
        const Site& alloc_site = sites.Get(p, parent, a.stack);
        const Site& free_site = sites.Get(c, child, f.stack);
        Key key{ThreadLabel(parent, a.tid, by), ThreadLabel(child, child.stream(f.thread).tid, by),
                alloc_site.key, free_site.key, parent.pid(), child.pid()};
        ForkPair& pair = pairs[key];
        if (pair.count == 0) {
          pair = {key.alloc_role, key.free_role, alloc_site, free_site, parent.pid(),
                  child.pid(), 0, 0};
        }
        ++pair.count;
        pair.bytes += a.size;
      }
    }
  }
  for (auto& [key, pair] : pairs) out->pairs.push_back(std::move(pair));
  std::stable_sort(out->pairs.begin(), out->pairs.end(),
                   [](const ForkPair& a, const ForkPair& b) { return a.count > b.count; });
  return true;
}

}  // namespace crossfree::analyzer
