// SPDX-License-Identifier: Apache-2.0
// Recording windows (kTagWindow, header flag kHeaderFlagWindowed), known
// answers: frees of objects allocated before a window are "allocated before
// the window", not of unknown origin; objects live when the last window
// closed are "live at window end", not leaks; a closed stretch between two
// windows does not make double frees or allocations over live ones; events
// stamped just outside a window are analysed; and the report names both
// categories as it does for --from/--to.
#include <catch2/catch.hpp>
#include <fmt/core.h>

#include <map>
#include <string>
#include <vector>

#include "analyzer/model/analysis.h"
#include "analyzer/pairing/pairing.h"
#include "analyzer/render/html.h"
#include "analyzer/render/json.h"
#include "analyzer/render/text.h"
#include "tests/analyzer/model/name_resolver.h"
#include "tests/support/synthetic_trace.h"

namespace crossfree::analyzer {

// The models are checked as the renderers print them.
using namespace crossfree::analyzer::render;
namespace {

using format::WindowState;
using testing::NameResolver;
using testing::SyntheticTrace;

constexpr uint32_t kPid = 900;
constexpr uint32_t kA = 900, kB = 901, kC = 902;

format::HeaderFields Windowed(bool starts_closed) {
  format::HeaderFields f;
  f.pid = kPid;
  f.flags = starts_closed ? format::kHeaderFlagWindowed : 0;
  f.start_monotonic_ns = 1;
  return f;
}

std::vector<PairingResult> Pair(SyntheticTrace& t, const std::string& name = "w.trc") {
  std::vector<PairingResult> out;
  for (int jobs : {1, 2, 3}) {
    TraceSet set;
    std::string error;
    REQUIRE(set.AddBytes(t.Finish(), name, &error));
    PairingOptions options;
    options.jobs = jobs;
    out.emplace_back();
    REQUIRE(PairTrace(*set.traces()[0], options, &out.back(), &error));
  }
  return out;
}

TEST_CASE("windows: a trace that starts closed counts frees of older objects as before the window") {
  SyntheticTrace t(Windowed(true));
  t.Window(kA, 1000, WindowState::kOpen, format::WindowCause::kDelay);
  // Allocated before the window (untraced), freed in it: three of them.
  t.Free(kA, 1100, 0x100);
  t.Free(kB, 1200, 0x200);
  t.Free(kB, 1300, 0x300);
  // Inside: one cross-thread pair, one same-thread.
  t.Alloc(kA, 1400, 0x400, 32);
  t.Free(kB, 1500, 0x400);
  t.Alloc(kB, 1600, 0x500, 32);
  t.Free(kB, 1700, 0x500);
  // A thread that starts inside the window: its objects pair as any other.
  t.Alloc(kC, 1800, 0x600, 64);
  t.Free(kA, 1900, 0x600);
  // Live when the trace ends, with the window still open: a leak.
  t.Alloc(kC, 2000, 0x700, 128);
  for (const PairingResult& r : Pair(t)) {
    CHECK(r.starts_closed);
    REQUIRE(r.windows.size() == 1);
    CHECK(r.windows[0].open);
    CHECK(r.windows[0].timestamp_ns == 1000);
    CHECK(r.counts.before_window == 3);
    CHECK(r.counts.unknown_frees == 0);
    CHECK(r.counts.paired == 3);
    CHECK(r.counts.cross_thread == 2);
    CHECK(r.counts.live_at_exit == 1);
    CHECK(r.counts.live_bytes == 128);
    CHECK(r.counts.live_at_window_end == 0);
    CHECK(r.counts.double_frees == 0);
  }
}

TEST_CASE("windows: without the flag or window records, such frees stay of unknown origin") {
  SyntheticTrace t(Windowed(false));
  t.Free(kA, 1100, 0x100);
  t.Alloc(kA, 1400, 0x400, 32);
  t.Free(kB, 1500, 0x400);
  for (const PairingResult& r : Pair(t)) {
    CHECK_FALSE(r.starts_closed);
    CHECK(r.windows.empty());
    CHECK(r.counts.unknown_frees == 1);
    CHECK(r.counts.before_window == 0);
    CHECK(r.unknown_frees.size() == 1);
  }
}

TEST_CASE("windows: open from the start, closed, reopened: only the later window has before-window frees") {
  SyntheticTrace t(Windowed(false));
  // The first window is open from the start: a free of an object not in the
  // trace is of unknown origin (allocated before tracing, or lost).
  t.Free(kA, 500, 0x100);
  t.Alloc(kA, 600, 0x200, 16);   // live when the first window closes
  t.Alloc(kA, 700, 0x300, 16);   // freed in the second window
  t.Alloc(kA, 800, 0x400, 16);   // freed in the first window, freed again in the second
  t.Free(kB, 900, 0x400);
  t.Window(kC, 1000, WindowState::kClosed);
  // A thread that was inside a hook when the window closed: stamped just
  // after the close, still analysed (it pairs).
  t.Alloc(kB, 1001, 0x500, 16);
  t.Free(kA, 1002, 0x500);
  t.Window(kC, 2000, WindowState::kOpen);
  t.Free(kB, 2100, 0x600);  // allocated while closed: before the window
  t.Free(kB, 2200, 0x300);  // allocated in the first window: pairs
  t.Free(kB, 2300, 0x400);  // freed in the first, reallocated while closed: not a double free
  t.Alloc(kB, 2400, 0x200, 16);  // 0x200 was freed while closed: not an allocation over a live one
  t.Free(kB, 2500, 0x200);
  t.Alloc(kA, 2600, 0x700, 16);  // live at the end, window open: a leak
  for (const PairingResult& r : Pair(t)) {
    REQUIRE(r.windows.size() == 2);
    CHECK_FALSE(r.windows[0].open);
    CHECK(r.windows[1].open);
    CHECK(r.counts.unknown_frees == 1);    // 0x100
    CHECK(r.counts.before_window == 2);    // 0x600, the second 0x400
    CHECK(r.counts.double_frees == 0);
    CHECK(r.counts.alloc_over_live == 0);
    CHECK(r.counts.live_at_window_end == 1);  // the first 0x200
    CHECK(r.counts.live_at_exit == 1);        // 0x700
    CHECK(r.counts.cross_thread == 3);  // 0x400 (the first), 0x500, 0x300
    CHECK(r.counts.paired == 4);        // and the second 0x200, on one thread
  }
}

TEST_CASE("windows: objects live when the last window closed are live at window end, not leaks") {
  SyntheticTrace t(Windowed(true));
  t.Window(kA, 1000, WindowState::kOpen, format::WindowCause::kDelay);
  t.Alloc(kA, 1100, 0x100, 100);
  t.Alloc(kB, 1200, 0x200, 200);
  t.Alloc(kB, 1300, 0x300, 16);
  t.Free(kA, 1400, 0x300);
  t.Window(kB, 2000, WindowState::kClosed, format::WindowCause::kDuration);
  // Stamped just after the close by a thread inside a hook: in the trace,
  // and live at the end too.
  t.Alloc(kC, 2001, 0x400, 400);
  for (const PairingResult& r : Pair(t)) {
    CHECK(r.counts.live_at_exit == 0);
    CHECK(r.counts.live_bytes == 0);
    CHECK(r.counts.live_at_window_end == 3);
    CHECK(r.counts.live_window_end_bytes == 700);
    CHECK(r.live.size() == 0);
    CHECK(r.live_window_end.size() == 3);
    CHECK(r.counts.cross_thread == 1);
  }
}


TEST_CASE("windows: the report names recording windows and --from/--to alike") {
  SyntheticTrace t(Windowed(true));
  t.Stack(kA, 1, {0x1000, 0x9000});
  t.Window(kA, 1000000000, WindowState::kOpen, format::WindowCause::kDelay);
  t.Free(kA, 1100000000, 0x100, 1);
  t.Alloc(kA, 1200000000, 0x200, 64, 1);
  t.Window(kA, 3000000000, WindowState::kClosed, format::WindowCause::kDuration);
  std::string error;
  TraceSet set;
  REQUIRE(set.AddBytes(t.Finish(), "w.trc", &error));
  NameResolver resolver;
  Analysis a;
  REQUIRE(Analyze(set, {}, &resolver, &a, &error));
  CHECK(a.recording_windows);
  REQUIRE(a.traces.size() == 1);
  CHECK(a.traces[0].starts_closed);
  REQUIRE(a.traces[0].windows.size() == 2);
  CHECK(a.traces[0].windows[0].timestamp_ns == 1000000000 - 1);  // since the header's start
  std::string text = RenderReportText(a, {});
  INFO(text);
  CHECK(text.find("    recording windows: 1.000 s .. 3.000 s\n") != std::string::npos);
  CHECK(text.find("  before the window                   1   freed in a recording window, "
                  "allocated before it\n") != std::string::npos);
  CHECK(text.find("  live at window end                  1   64 B   still live when the window "
                  "ended: not leaks\n") != std::string::npos);
  CHECK(text.find("Live at window end (top 1 site)") != std::string::npos);
  CHECK(text.find("Live at exit") == std::string::npos);
  std::string json = RenderReportJson(a, {});
  CHECK(json.find("\"window\": {\"recording\": [{\"path\": \"w.trc\", \"starts_closed\": true, "
                  "\"edges\": [{\"at_s\": 1.000000, \"open\": true}, {\"at_s\": 3.000000, "
                  "\"open\": false}]}], \"allocated_before_window\": 1, \"live_at_window_end\": 1, "
                  "\"live_at_window_end_bytes\": 64}") != std::string::npos);
  CHECK(json.find("\"live_at_window_end_sites\": [") != std::string::npos);
  std::string html = RenderReportHtml(a);
  CHECK(html.find("<h2>Windows</h2><p>before the window: 1 (freed in the window, allocated before "
                  "it)<br>live at window end: 1 (still live when the window ended: not leaks)<br>"
                  "w.trc: recording started closed; open at 1.000 s, closed at 3.000 s</p>") !=
        std::string::npos);

  // --from/--to on a trace without recording windows: the same rows.
  SyntheticTrace u(kPid);
  u.Alloc(kA, 500, 0x100, 16);
  u.Free(kB, 1500, 0x100);
  u.Alloc(kA, 1600, 0x200, 16);
  TraceSet set2;
  REQUIRE(set2.AddBytes(u.Finish(), "u.trc", &error));
  AnalysisOptions options;
  options.pairing.window_from_ns = 1000;
  options.pairing.window_to_ns = 2000;
  Analysis b;
  REQUIRE(Analyze(set2, options, &resolver, &b, &error));
  std::string text2 = RenderReportText(b, {});
  INFO(text2);
  CHECK(text2.find("  before the window                   1   freed in the window 0.000 s .. "
                   "0.000 s of each trace, allocated before it\n") != std::string::npos);
  CHECK(text2.find("  live at window end                  1   16 B") != std::string::npos);
  std::string json2 = RenderReportJson(b, {});
  CHECK(json2.find("\"window\": {\"from_s\": 0.000001, \"to_s\": 0.000002, "
                   "\"allocated_before_window\": 1, \"live_at_window_end\": 1, "
                   "\"live_at_window_end_bytes\": 16}") != std::string::npos);
}

}  // namespace
}  // namespace crossfree::analyzer
