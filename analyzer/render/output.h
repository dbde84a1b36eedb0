// SPDX-License-Identifier: Apache-2.0
// Render: small helpers shared by the renderers (text, JSON) of report,
// diff and gate. Stateless.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/model/estimate.h"
#include "analyzer/model/roles.h"
#include "analyzer/model/sites.h"

namespace crossfree::analyzer::render {

// JSON schema versions: bump on any incompatible change of the document.
inline constexpr int kReportSchemaVersion = 1;
inline constexpr int kDiffSchemaVersion = 2;
inline constexpr int kGateSchemaVersion = 2;

// How much of a report to show (text and JSON alike).
struct ReportOptions {
  size_t top = 10;             // cross-thread pairs shown; 0 = all
  size_t asymmetry_rows = 12;  // asymmetry rows shown (text); 0 = all
  GroupBy by = GroupBy::kRole;
  int site_depth = 3;
  size_t width = 100;          // text columns; 0 = unlimited
};

// "drains" for net > 0, "overflows" for net < 0.
const char* AsymmetryEffect(int64_t net);

// 1234567 -> "1,234,567".
std::string Commas(uint64_t n);
std::string SignedCommas(int64_t n);  // "+1,234" / "-1,234" / "0"
// A share (0.123) as a percentage with `decimals` decimals: "12.3%".
std::string PercentText(double share, int decimals);
// A time since a trace's start, ns, in seconds (what the outputs print
// with 3 or 6 decimals).
double Seconds(uint64_t ns);
// 1536 -> "1.5 KiB".
std::string HumanBytes(uint64_t n);
// "850 ns", "12.3 us", "4.56 ms", "1.23 s": three significant digits.
std::string DurationText(uint64_t ns);
// A size class for people: "48 B", "1 KiB", "large".
std::string SizeClassLabel(int size_class);
// Which characters MarkupEscape writes as entities.
enum class Markup {
  kHtml,  // & < > " (the HTML page's text and double-quoted attributes)
  kXml,   // & < > " ' and, as '?', C0 controls but tab and line breaks
          // (XML 1.0 cannot hold them even as references): JUnit files
};
// s as markup text or an attribute value. One function for both so that
// the HTML page and the gate's XML escape the specials they share alike.
std::string MarkupEscape(std::string_view s, Markup markup);
// A JSON string literal, quotes included.
std::string JsonString(std::string_view s);
// The strings as JSON literals separated by ", " (an array's contents,
// without its brackets).
std::string JsonStringList(const std::vector<std::string>& strings);
// s with every control character (C0, DEL, and C1 as UTF-8) written as \xHH,
// so a thread name, path or symbol from a trace cannot drive the terminal.
std::string Printable(std::string_view s);
// The same for a whole rendered text: its own line breaks are kept.
std::string PrintableText(std::string_view text);
// Shortens s to at most width columns, ending in "..." when cut.
std::string Fit(std::string_view s, size_t width);  // width 0: s whole
// "file.cc:42" or "" (basename of the file).
std::string FrameLocation(const SymbolFrame& frame);
// Estimates of sampled runs (analyzer/model/estimate.h). Counts and bytes are
// shown as whole numbers: the estimate rounded, the interval widened to
// whole numbers (low rounded down, high up).
uint64_t EstimateLow(const Estimate& e);
uint64_t EstimateHigh(const Estimate& e);
uint64_t EstimateValue(const Estimate& e);
// v rounded as asked, clamped to int64 (a signed estimate: an asymmetry's net).
int64_t RoundSigned(double v);
int64_t FloorSigned(double v);
int64_t CeilSigned(double v);
// "~80,000"
std::string EstimateText(const Estimate& e);
// "69,500 .. 91,600"
std::string IntervalText(const Estimate& e);
// "2.1 MiB .. 2.8 MiB"
std::string BytesIntervalText(const Estimate& e);
// "347.2 .. 457.4" (decimals as given)
std::string RateIntervalText(const Estimate& e, int decimals = 1);
// {"observed": X, "estimate": E, "low": L, "high": H}: integers, or for a
// rate (decimals > 0) decimals with that precision and no "observed".
std::string EstimateJson(const Estimate& e, int decimals = 0);
// "sampled 1/100"
std::string SampledLabel(uint32_t period);

// A frame as a JSON object.
std::string FrameJson(const SymbolFrame& frame);
// A site as a JSON object: {"key": ..., "frames": [...]}.
std::string SiteJson(const Site& site);
// Lines "<indent><label><function>  <location>" for each frame of a site,
// each at most `width` columns. The label goes on the first line only.
std::string SiteText(const Site& site, std::string_view label, size_t indent, size_t width);

}  // namespace crossfree::analyzer::render
