// SPDX-License-Identifier: Apache-2.0
// Analyzer: baseline and suppression files (see baseline.h).
#include "analyzer/model/baseline.h"

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace crossfree::analyzer {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Calls fn(line_number, trimmed_line) for each line that is not blank or a comment.
template <typename Fn>
bool ForEachLine(const std::string& text, Fn&& fn) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (!fn(number, t)) return false;
  }
  return true;
}

// Parses "<number>" as a non-negative rate; false if it is not one.
bool ParseRate(const std::string& text, double* rate) {
  char* end = nullptr;
  *rate = std::strtod(text.c_str(), &end);
  return !text.empty() && end != text.c_str() && *end == '\0' && *rate >= 0 &&
         *rate < 1e300;
}

// Parses "<digits>" as a count; false if it is not one.
bool ParseCount(const std::string& text, uint64_t* count) {
  if (text.empty() || text.size() > 19 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *count = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

// Splits off the first space-separated word of s.
std::string NextWord(std::string* s) {
  size_t space = s->find(' ');
  std::string word = s->substr(0, space);
  *s = space == std::string::npos ? "" : Trim(s->substr(space + 1));
  return word;
}

}  // namespace

bool ReadTextFile(const std::string& path, std::string* text, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return false;
  }
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

bool ParseBaseline(const std::string& text, const std::string& name, Baseline* out,
                   std::string* error) {
  bool seen_header = false;
  bool seen_unit = false;
  bool ok = ForEachLine(text, [&](int line, const std::string& t) {
    if (!seen_header) {
      if (t == "crossfree-baseline 1" || t == "crossfree-baseline 2" ||
          t == "crossfree-baseline 3" ||
          t == fmt::format("crossfree-baseline {}", kBaselineVersion)) {
        out->version = t.back() - '0';
        seen_header = true;
        return true;
      }
      *error = fmt::format(
          "{}:{}: not a crossfree baseline (expected 'crossfree-baseline {}' first)", name, line,
          kBaselineVersion);
      return false;
    }
    if (out->version >= 2 && t.rfind("unit ", 0) == 0) {
      std::string unit = Trim(t.substr(5));
      if (seen_unit || out->allowed.size() > 0 ||
          (unit != "operation" && unit != "1000-allocations")) {
        *error = fmt::format(
            "{}:{}: expected one 'unit operation' or 'unit 1000-allocations' before the "
            "'allow' lines",
            name, line);
        return false;
      }
      out->per_operation = unit == "operation";
      seen_unit = true;
      return true;
    }
    if (out->version >= 3 && t.rfind("units ", 0) == 0) {
      std::string rest = Trim(t.substr(6));
      std::string units = NextWord(&rest);
      std::string steady = NextWord(&rest);
      if (!ParseRate(units, &out->units) || !ParseRate(steady, &out->steady_units) ||
          !rest.empty() || out->steady_units > out->units) {
        *error = fmt::format("{}:{}: expected 'units <units> <steady units>' (steady <= all)",
                             name, line);
        return false;
      }
      return true;
    }
    if (out->version >= 4 && t.rfind("runs ", 0) == 0) {
      std::string rest = Trim(t.substr(5));
      uint64_t runs = 0;
      if (!ParseCount(NextWord(&rest), &runs) || runs < 1 || runs > 1'000'000 || !rest.empty()) {
        *error = fmt::format("{}:{}: expected 'runs <number of runs, at least 1>'", name, line);
        return false;
      }
      out->runs = static_cast<int>(runs);
      return true;
    }
    if (out->version >= 4 && t.rfind("site-runs ", 0) == 0) {
      std::string rest = Trim(t.substr(10));
      uint64_t n = 0;
      bool ok = ParseCount(NextWord(&rest), &n) && n >= 1 && n <= 1'000'000;
      std::vector<SiteRunCount> counts;
      for (uint64_t i = 0; ok && i < n; ++i) {
        std::string pair = NextWord(&rest);
        size_t colon = pair.find(':');
        SiteRunCount c;
        ok = colon != std::string::npos && ParseCount(pair.substr(0, colon), &c.objects) &&
             ParseCount(pair.substr(colon + 1), &c.crossed) && c.crossed <= c.objects;
        counts.push_back(c);
      }
      if (!ok || rest.empty()) {
        *error = fmt::format(
            "{}:{}: expected 'site-runs <runs> <objects>:<crossed>... <alloc site>' (crossed <= "
            "objects)",
            name, line);
        return false;
      }
      out->site_runs[rest] = std::move(counts);
      return true;
    }
    if (out->version >= 2 && t.rfind("site ", 0) == 0) {
      std::string rest = Trim(t.substr(5));
      std::string rate_text = NextWord(&rest);
      double rate = 0;
      double share = 0;
      bool ok = ParseRate(rate_text, &rate);
      if (ok && out->version >= 3) ok = ParseRate(NextWord(&rest), &share) && share <= 1;
      if (!ok || rest.empty()) {
        *error = fmt::format("{}:{}: expected 'site <objects per unit>{} <alloc site>'", name,
                             line, out->version >= 3 ? " <crossing share>" : "");
        return false;
      }
      out->sites[rest] = rate;
      if (out->version >= 3) out->site_shares[rest] = share;
      return true;
    }
    if (t.rfind("allow ", 0) != 0) {
      *error = fmt::format("{}:{}: expected {}", name, line,
                           out->version >= 2 ? "'allow <per-call rate> <bounded rate> <pair key>'"
                                             : "'allow <rate> <pair key>'");
      return false;
    }
    if (out->version >= 2 && !seen_unit) {
      *error = fmt::format("{}:{}: 'allow' before the 'unit' line", name, line);
      return false;
    }
    std::string rest = Trim(t.substr(6));
    BaselineRates rates;
    std::string per_call = NextWord(&rest);
    if (!ParseRate(per_call, &rates.per_call)) {
      *error = fmt::format("{}:{}: bad rate '{}' (objects per {})", name, line, per_call,
                           out->per_operation ? "operation" : "1000 allocations");
      return false;
    }
    if (out->version >= 2) {
      std::string bounded = NextWord(&rest);
      if (!ParseRate(bounded, &rates.bounded)) {
        *error = fmt::format("{}:{}: bad bounded rate '{}'", name, line, bounded);
        return false;
      }
    }
    if (rest.empty()) {
      *error = fmt::format("{}:{}: 'allow' without a pair key", name, line);
      return false;
    }
    out->allowed[rest] = rates;
    return true;
  });
  if (ok && !seen_header) {
    *error = fmt::format("{}: empty baseline (no 'crossfree-baseline {}' line)", name,
                         kBaselineVersion);
    return false;
  }
  if (ok && out->version >= 2 && !seen_unit) {
    *error = fmt::format("{}: no 'unit' line", name);
    return false;
  }
  return ok;
}

bool ReadBaseline(const std::string& path, Baseline* out, std::string* error) {
  std::string text;
  if (!ReadTextFile(path, &text, error)) return false;
  return ParseBaseline(text, path, out, error);
}

std::string FormatBaseline(const std::vector<const CrossPair*>& pairs, const Analysis& analysis,
                           const std::string& accept_command) {
  return FormatBaseline(std::vector<BaselineRun>{{&analysis, pairs}}, accept_command);
}

std::string FormatBaseline(const std::vector<BaselineRun>& runs,
                           const std::string& accept_command) {
  const Analysis& first = *runs.front().analysis;
  // Each pair's objects over the runs (scaled counts: the estimate of a
  // sampled run) and the runs' units; one run: its own rates.
  struct PairObjects {
    const CrossPair* pair = nullptr;  // the first run's with this key
    double steady = 0, bounded = 0;
  };
  std::map<std::string, PairObjects> pairs;
  double units = 0, steady_units = 0;
  // alloc site -> each run's objects and crossed objects (sampled counts)
  std::map<std::string, std::vector<SiteRunCount>> sites;
  bool any_sampled = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Analysis& a = *runs[i].analysis;
    units += a.Units();
    steady_units += a.SteadyUnits();
    any_sampled = any_sampled || a.sampled();
    for (const CrossPair* p : runs[i].pairs) {
      PairObjects& o = pairs[p->key];
      if (!o.pair) o.pair = p;
      o.steady += static_cast<double>(a.Scaled(p->steady()));
      o.bounded += static_cast<double>(a.Scaled(p->bounded()));
      auto& counts = sites[p->alloc_site.key];
      counts.resize(runs.size());
      counts[i].crossed += p->count.sampled;
    }
  }
  std::string out;
  out += "# crossfree gate baseline: the cross-thread pairs this project allows.\n";
  out += fmt::format(
      "# allow <per-call objects {0}> <bounded objects {0}> <alloc role> -> <free role> | "
      "alloc: <site> | free: <site>\n",
      first.UnitName());
  out += "# Regenerate with:\n#   " + accept_command + "\n";
  if (runs.size() == 1 && first.sampled()) {
    out += fmt::format(
        "# Written from a trace sampled 1/{}: each rate is an estimate.\n", first.sample_period);
  } else if (any_sampled) {
    out += "# Written from sampled traces: each rate is an estimate.\n";
  }
  out += fmt::format("crossfree-baseline {}\n", kBaselineVersion);
  out += fmt::format("unit {}\n", first.per_operation() ? "operation" : "1000-allocations");
  // Rates to 6 digits: the gate takes the baseline's counts back as rate x
  // units.
  out += fmt::format("units {:.10g} {:.10g}\n", units, steady_units);
  out += fmt::format("runs {}\n", runs.size());
  for (const auto& [key, o] : pairs) {
    if (runs.size() == 1) {
      // One run: its own estimates (Analysis::PerSteadyUnit, PerUnit).
      out += fmt::format("allow {:.6g} {:.6g} {}\n",
                         first.PerSteadyUnit(o.pair->steady().sampled).value,
                         first.PerUnit(o.pair->bounded().sampled).value, key);
    } else {
      out += fmt::format("allow {:.6g} {:.6g} {}\n", steady_units > 0 ? o.steady / steady_units : 0,
                         units > 0 ? o.bounded / units : 0, key);
    }
  }
  std::string site_runs;
  for (auto& [site, counts] : sites) {
    SiteRunCount total;
    double scaled_objects = 0;
    for (size_t i = 0; i < runs.size(); ++i) {
      const Analysis& a = *runs[i].analysis;
      auto it = a.site_objects.find(site);
      if (it == a.site_objects.end() || it->second == 0) {
        counts[i] = SiteRunCount{};  // not counted in this run
        continue;
      }
      counts[i].objects = it->second;
      counts[i].crossed = std::min(counts[i].crossed, it->second);
      total.Add(counts[i]);
      scaled_objects += static_cast<double>(a.Scaled(it->second));
    }
    if (total.objects == 0) continue;
    double share = static_cast<double>(total.crossed) / static_cast<double>(total.objects);
    double rate = runs.size() == 1 ? first.PerUnit(total.objects).value
                                   : (units > 0 ? scaled_objects / units : 0);
    out += fmt::format("site {:.6g} {:.4g} {}\n", rate, share, site);
    site_runs += fmt::format("site-runs {}", runs.size());
    for (const SiteRunCount& c : counts) site_runs += fmt::format(" {}:{}", c.objects, c.crossed);
    site_runs += " " + site + "\n";
  }
  return out + site_runs;
}

bool ParseSuppressions(const std::string& text, const std::string& name,
                       std::vector<Suppression>* out, std::string* error) {
  bool ok = ForEachLine(text, [&](int line, const std::string& t) {
    if (t.rfind("pattern:", 0) == 0) {
      if (!out->empty() && out->back().reason.empty()) {
        *error = fmt::format("{}:{}: suppression '{}' has no 'reason:' line", name,
                             out->back().line, out->back().pattern);
        return false;
      }
      Suppression s;
      s.pattern = Trim(t.substr(8));
      s.line = line;
      if (s.pattern.empty()) {
        *error = fmt::format("{}:{}: empty pattern", name, line);
        return false;
      }
      try {
        s.regex = std::regex(s.pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        *error = fmt::format("{}:{}: bad pattern '{}': {}", name, line, s.pattern, e.what());
        return false;
      }
      out->push_back(std::move(s));
      return true;
    }
    if (t.rfind("reason:", 0) == 0) {
      if (out->empty() || !out->back().reason.empty()) {
        *error = fmt::format("{}:{}: 'reason:' without a 'pattern:' before it", name, line);
        return false;
      }
      out->back().reason = Trim(t.substr(7));
      if (out->back().reason.empty()) {
        *error = fmt::format("{}:{}: empty reason", name, line);
        return false;
      }
      return true;
    }
    *error = fmt::format("{}:{}: expected 'pattern: <regex>' or 'reason: <text>'", name, line);
    return false;
  });
  if (ok && !out->empty() && out->back().reason.empty()) {
    *error = fmt::format("{}:{}: suppression '{}' has no 'reason:' line", name, out->back().line,
                         out->back().pattern);
    return false;
  }
  return ok;
}

bool ReadSuppressions(const std::string& path, std::vector<Suppression>* out,
                      std::string* error) {
  std::string text;
  if (!ReadTextFile(path, &text, error)) return false;
  return ParseSuppressions(text, path, out, error);
}

}  // namespace crossfree::analyzer
