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
  std::vector<const CrossPair*> sorted = pairs;
  std::sort(sorted.begin(), sorted.end(),
            [](const CrossPair* a, const CrossPair* b) { return a->key < b->key; });
  std::string out;
  out += "# crossfree gate baseline: the cross-thread pairs this project allows.\n";
  out += fmt::format(
      "# allow <per-call objects {0}> <bounded objects {0}> <alloc role> -> <free role> | "
      "alloc: <site> | free: <site>\n",
      analysis.UnitName());
  out += "# Regenerate with:\n#   " + accept_command + "\n";
  if (analysis.sampled()) {
    out += fmt::format(
        "# Written from a trace sampled 1/{}: each rate is an estimate.\n", analysis.sample_period);
  }
  out += fmt::format("crossfree-baseline {}\n", kBaselineVersion);
  out += fmt::format("unit {}\n", analysis.per_operation() ? "operation" : "1000-allocations");
  // Rates to 6 digits: the gate takes the baseline's counts back as rate x
  // units.
  out += fmt::format("units {:.10g} {:.10g}\n", analysis.Units(), analysis.SteadyUnits());
  std::map<std::string, uint64_t> crossed;  // alloc site -> its pairs' objects
  for (const CrossPair* p : sorted) {
    out += fmt::format("allow {:.6g} {:.6g} {}\n",
                       analysis.PerSteadyUnit(p->steady().sampled).value,
                       analysis.PerUnit(p->bounded().sampled).value, p->key);
    crossed[p->alloc_site.key] += p->count.sampled;
  }
  for (const auto& [site, count] : crossed) {
    auto it = analysis.site_objects.find(site);
    if (it == analysis.site_objects.end() || it->second == 0) continue;
    double share = std::min(1.0, static_cast<double>(count) / static_cast<double>(it->second));
    out += fmt::format("site {:.6g} {:.4g} {}\n", analysis.PerUnit(it->second).value, share,
                       site);
  }
  return out;
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
