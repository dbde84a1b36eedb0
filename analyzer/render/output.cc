// SPDX-License-Identifier: Apache-2.0
// Analyzer: rendering helpers (see output.h).
#include "analyzer/render/output.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "analyzer/pairing/size_class.h"

namespace crossfree::analyzer::render {

std::string Commas(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string SignedCommas(int64_t n) {
  if (n == 0) return "0";
  uint64_t magnitude = n < 0 ? uint64_t(0) - static_cast<uint64_t>(n) : static_cast<uint64_t>(n);
  return (n < 0 ? "-" : "+") + Commas(magnitude);
}

std::string PercentText(double share, int decimals) {
  return fmt::format("{:.{}f}%", 100.0 * share, decimals);
}

double Seconds(uint64_t ns) { return ns / 1e9; }

std::string HumanBytes(uint64_t n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return fmt::format("{} B", n);
  double v = static_cast<double>(n);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string DurationText(uint64_t ns) {
  if (ns < 1000) return fmt::format("{} ns", ns);
  static const char* kUnits[] = {"us", "ms", "s"};
  double v = static_cast<double>(ns) / 1000;
  int unit = 0;
  while (v >= 1000 && unit < 2) {
    v /= 1000;
    ++unit;
  }
  int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}", v, decimals, kUnits[unit]);
}

namespace {
uint64_t ToCount(double v) {
  if (!(v > 0)) return 0;
  if (v >= 1.8e19) return ~uint64_t{0};
  return static_cast<uint64_t>(v);
}
}  // namespace

uint64_t EstimateLow(const Estimate& e) { return ToCount(std::floor(e.low)); }
uint64_t EstimateHigh(const Estimate& e) { return ToCount(std::ceil(e.high)); }
uint64_t EstimateValue(const Estimate& e) { return ToCount(std::round(e.value)); }

namespace {
int64_t ToSigned(double v) {
  if (!(v == v)) return 0;  // NaN
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}
}  // namespace

int64_t RoundSigned(double v) { return ToSigned(std::round(v)); }
int64_t FloorSigned(double v) { return ToSigned(std::floor(v)); }
int64_t CeilSigned(double v) { return ToSigned(std::ceil(v)); }

std::string EstimateText(const Estimate& e) { return "~" + Commas(EstimateValue(e)); }

std::string IntervalText(const Estimate& e) {
  return Commas(EstimateLow(e)) + " .. " + Commas(EstimateHigh(e));
}

std::string BytesIntervalText(const Estimate& e) {
  return HumanBytes(EstimateLow(e)) + " .. " + HumanBytes(EstimateHigh(e));
}

std::string RateIntervalText(const Estimate& e, int decimals) {
  return fmt::format("{:.{}f} .. {:.{}f}", e.low, decimals, e.high, decimals);
}

std::string EstimateJson(const Estimate& e, int decimals) {
  if (decimals > 0) {
    return fmt::format("{{\"estimate\": {:.{}f}, \"low\": {:.{}f}, \"high\": {:.{}f}}}", e.value,
                       decimals, e.low, decimals, e.high, decimals);
  }
  return fmt::format("{{\"observed\": {}, \"estimate\": {}, \"low\": {}, \"high\": {}}}",
                     e.observed, EstimateValue(e), EstimateLow(e), EstimateHigh(e));
}

std::string SampledLabel(uint32_t period) { return fmt::format("sampled 1/{}", period); }

std::string SizeClassLabel(int size_class) {
  uint64_t bytes = SizeClassBytes(size_class);
  if (bytes == 0) return "large";
  if (bytes >= 1024 && bytes % 1024 == 0) return fmt::format("{} KiB", bytes / 1024);
  return fmt::format("{} B", bytes);
}

namespace {

std::string EscapeControls(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
              static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if (c1) {
      out += fmt::format("\\xc2\\x{:02x}", static_cast<unsigned char>(s[++i]));
    } else if ((c < 0x20 && !(keep_newlines && c == '\n')) || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

const char* AsymmetryEffect(int64_t net) {
  return net > 0 ? "drains" : net < 0 ? "overflows" : "balanced";
}

std::string Printable(std::string_view s) { return EscapeControls(s, false); }

std::string PrintableText(std::string_view text) { return EscapeControls(text, true); }

std::string JsonStringList(const std::vector<std::string>& strings) {
  std::string out;
  for (const std::string& s : strings) {
    if (!out.empty()) out += ", ";
    out += JsonString(s);
  }
  return out;
}

std::string MarkupEscape(std::string_view s, Markup markup) {
  const bool xml = markup == Markup::kXml;
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (xml && c == '\'') {
          out += "&apos;";
        } else if (xml && static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' &&
                   c != '\r') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out += '"';
  return out;
}

std::string Fit(std::string_view s, size_t width) {
  if (width == 0 || s.size() <= width) return std::string(s);
  if (width <= 3) return std::string(s.substr(0, width));
  return std::string(s.substr(0, width - 3)) + "...";
}

std::string FrameLocation(const SymbolFrame& frame) {
  if (frame.file.empty()) return "";
  size_t slash = frame.file.rfind('/');
  std::string base = slash == std::string::npos ? frame.file : frame.file.substr(slash + 1);
  return frame.line > 0 ? fmt::format("{}:{}", base, frame.line) : base;
}

std::string FrameJson(const SymbolFrame& f) {
  return fmt::format(
      "{{\"function\": {}, \"file\": {}, \"line\": {}, \"module\": {}, \"offset\": \"{:#x}\", "
      "\"inlined\": {}}}",
      JsonString(f.function), JsonString(f.file), f.line, JsonString(f.module), f.module_offset,
      f.inlined ? "true" : "false");
}

std::string SiteJson(const Site& site) {
  std::string frames;
  for (const SymbolFrame& f : site.frames) {
    if (!frames.empty()) frames += ", ";
    frames += FrameJson(f);
  }
  return fmt::format("{{\"key\": {}, \"frames\": [{}]}}", JsonString(site.key), frames);
}

std::string SiteText(const Site& site, std::string_view label, size_t indent, size_t width) {
  std::string out;
  std::string pad(indent, ' ');
  std::string label_pad(label.size(), ' ');
  if (site.frames.empty()) {
    return fmt::format("{}{}{}\n", pad, label, site.key);
  }
  bool first = true;
  for (const SymbolFrame& f : site.frames) {
    std::string prefix = pad + std::string(first ? label : std::string_view(label_pad));
    std::string name = FrameName(f, false);
    if (f.inlined) name += " [inlined]";
    std::string loc = FrameLocation(f);
    if (width == 0) {  // unlimited: nothing is cut
      out += loc.empty() ? fmt::format("{}{}\n", prefix, name)
                         : fmt::format("{}{}  {}\n", prefix, name, loc);
      first = false;
      continue;
    }
    size_t room = width > prefix.size() + 30 ? width - prefix.size() : 30;
    // Locations line up in a column of their own at the right, and are
    // never cut: a long one takes its room from the function name.
    constexpr size_t kLocationWidth = 24;
    if (loc.empty()) {
      out += fmt::format("{}{}\n", prefix, Fit(name, room));
    } else {
      size_t loc_room = std::max(kLocationWidth, loc.size() + 2);
      size_t name_room = room > loc_room + 12 ? room - loc_room : 12;
      out += fmt::format("{}{:<{}}  {}\n", prefix, Fit(name, name_room), name_room, loc);
    }
    first = false;
  }
  return out;
}

}  // namespace crossfree::analyzer::render
