// SPDX-License-Identifier: Apache-2.0
// Simulate: ranking transfer sites (see site_ranking.h).
#include "analyzer/simulate/site_ranking.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "analyzer/model/roles.h"

namespace crossfree::analyzer::simulate {

using analyzer::ProcessTrace;
using analyzer::Site;
using analyzer::TraceSet;

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

}  // namespace crossfree::analyzer::simulate
