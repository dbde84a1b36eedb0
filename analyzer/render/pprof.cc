// SPDX-License-Identifier: Apache-2.0
// The pprof renderer (see pprof.h).
#include "analyzer/render/pprof.h"

#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/core.h>

#include "analyzer/model/sites.h"
#include "analyzer/render/output.h"
#include "pprof/profile.pb.h"  // generated from pprof's profile.proto

namespace crossfree::analyzer::render {
namespace {

namespace pprof = ::perftools::profiles;

class Builder {
 public:
  int64_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) profile_.add_string_table(s);
    return it->second;
  }

  // One location per distinct (function, file, line, address) frame.
  uint64_t Location(const SymbolFrame& f) {
    auto key = std::make_tuple(f.function, f.file, f.line, f.address);
    auto it = locations_.find(key);
    if (it != locations_.end()) return it->second;
    uint64_t id = static_cast<uint64_t>(locations_.size()) + 1;
    auto* loc = profile_.add_location();
    loc->set_id(id);
    loc->set_address(f.address);
    auto* line = loc->add_line();
    line->set_function_id(Function(f));
    line->set_line(f.line);
    locations_.emplace(key, id);
    return id;
  }

  // A site without frames (no stack): one location named by its key.
  uint64_t KeyLocation(const std::string& key) {
    SymbolFrame f;
    f.function = key;
    return Location(f);
  }

  pprof::Profile& profile() { return profile_; }

 private:
  uint64_t Function(const SymbolFrame& f) {
    std::string name = FrameName(f, false);
    auto key = std::make_pair(name, f.file);
    auto it = functions_.find(key);
    if (it != functions_.end()) return it->second;
    uint64_t id = static_cast<uint64_t>(functions_.size()) + 1;
    auto* fn = profile_.add_function();
    fn->set_id(id);
    fn->set_name(String(name));
    fn->set_system_name(String(f.function.empty() ? name : f.function));
    fn->set_filename(String(f.file));
    functions_.emplace(key, id);
    return id;
  }

  pprof::Profile profile_;
  std::unordered_map<std::string, int64_t> strings_;
  std::map<std::tuple<std::string, std::string, int, uint64_t>, uint64_t> locations_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
};

}  // namespace

std::string RenderReportPprof(const Analysis& a) {
  Builder b;
  b.String("");  // string_table[0] must be ""
  pprof::Profile& p = b.profile();
  auto* frees = p.add_sample_type();
  frees->set_type(b.String("cross_thread_frees"));
  frees->set_unit(b.String("count"));
  auto* bytes = p.add_sample_type();
  bytes->set_type(b.String("cross_thread_bytes"));
  bytes->set_unit(b.String("bytes"));
  p.set_default_sample_type(b.String("cross_thread_frees"));
  for (const TraceInfo& t : a.traces) {
    p.add_comment(b.String("trace " + t.path));
    if (t.LastBuffersLost()) {
      p.add_comment(b.String("trace " + t.path +
                             ": no clean end (the process was killed): frees in its last "
                             "buffers were lost"));
    } else if (t.RunningAtEnd()) {
      p.add_comment(b.String("trace " + t.path +
                             ": no clean end (the process was still running at record's "
                             "end): its later frees are not in the trace"));
    }
  }
  // A sampled run: the values are estimates (period x the sampled count),
  // the profile's period says how it was sampled, and each sample carries
  // its sampled count and 95% interval as numeric labels.
  if (a.sampled()) {
    p.add_comment(b.String(fmt::format(
        "estimated, sampled 1/{}: values are {} x the sampled frees and bytes; labels "
        "sampled_frees, frees_low, frees_high (exact Poisson 95% interval)",
        a.sample_period, a.sample_period)));
    auto* period = p.mutable_period_type();
    period->set_type(b.String("allocations"));
    period->set_unit(b.String("count"));
    p.set_period(a.sample_period);
  }
  int64_t alloc_role = b.String("alloc_role"), free_role = b.String("free_role"),
          free_site = b.String("free_site"), lifecycle = b.String("lifecycle");
  for (const CrossPair& pair : a.pairs) {
    const std::string lifecycle_name = LifecycleName(pair.lifecycle());
    auto* s = p.add_sample();
    if (pair.alloc_site.frames.empty()) {
      s->add_location_id(b.KeyLocation(pair.alloc_site.key));
    } else {
      for (const SymbolFrame& f : pair.alloc_site.frames) s->add_location_id(b.Location(f));
    }
    const PairFigures f = a.Figures(pair);
    s->add_value(static_cast<int64_t>(f.frees));
    s->add_value(static_cast<int64_t>(f.total_bytes));
    if (a.sampled()) {
      const Estimate& n = f.count;
      for (auto [key, value] : {std::pair{"sampled_frees", pair.count.sampled},
                                std::pair{"frees_low", EstimateLow(n)},
                                std::pair{"frees_high", EstimateHigh(n)}}) {
        auto* label = s->add_label();
        label->set_key(b.String(key));
        label->set_num(static_cast<int64_t>(value));
        label->set_num_unit(b.String("count"));
      }
    }
    for (auto [key, value] : {std::pair{alloc_role, &pair.alloc_role},
                              std::pair{free_role, &pair.free_role},
                              std::pair{free_site, &pair.free_site.key},
                              std::pair{lifecycle, &lifecycle_name}}) {
      auto* label = s->add_label();
      label->set_key(key);
      label->set_str(b.String(*value));
    }
  }
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::GzipOutputStream::Options options;
    options.format = google::protobuf::io::GzipOutputStream::GZIP;
    google::protobuf::io::GzipOutputStream gz(&raw, options);
    p.SerializeToZeroCopyStream(&gz);
    gz.Close();
  }
  return out;
}

}  // namespace crossfree::analyzer::render
