// SPDX-License-Identifier: Apache-2.0
// Tracer: settings, read once from the environment when the tracer starts.
//
// Every environment variable the tracer reads (also in docs/guide/tracer.md):
//
//   CROSSFREE_OUTPUT         Trace file path template. "%p" expands to the
//                            pid. Default "crossfree.%p.trace" in the cwd.
//                            Without "%p": the main process (see
//                            CROSSFREE_MAIN_PID) writes the path itself,
//                            every other process (fork child, exec'd child)
//                            writes "<path>.<pid>".
//   CROSSFREE_MAIN_PID       The pid that owns a %p-less output path. Set by
//                            `crossfree record` to the command's pid; when
//                            unset, the first traced process sets it to its
//                            own pid for its exec'd children.
//   CROSSFREE_UNWIND         fp | libunwind | hybrid. Default hybrid.
//   CROSSFREE_DEPTH          Frames per stack, 1..256. Default 32.
//   CROSSFREE_ENABLE_STACKS  0 disables stack capture. Default 1.
//   CROSSFREE_BUFFER_KB      Per-thread chunk buffer in KiB, 16..4096.
//                            Default 128.
//   CROSSFREE_FLUSH_MS       Age bound in ms, 0..600000: a thread's buffered
//                            events are written once the oldest is this old
//                            (at the thread's next event, or another
//                            thread's), so SIGKILL loses about this much.
//                            0 = only when full. Default 1000.
//   CROSSFREE_MALLOC_HOOK    0 never registers gperftools MallocHook hooks
//                            (static tcmalloc). Default 1 (auto-detect).
//   CROSSFREE_CENTRAL        0 does not record tcmalloc central free-list
//                            transfers (docs/guide/central.md). Default 1.
//   CROSSFREE_TSC            0 stamps events with clock_gettime instead of
//                            the calibrated TSC clock (sys.h). Default 1.
//   CROSSFREE_STACK_CHECK    1: every hybrid capture is also walked in full
//                            (without the per-thread walk memo) and the
//                            process aborts on any difference. For tests;
//                            doubles the capture cost. Default 0.
//   CROSSFREE_STACK_MEMO     0 walks every frame of every capture (no reuse
//                            of the thread's previous walk). For benchmarks.
//                            Default 1.
//   CROSSFREE_SAMPLE         N: trace each allocation with probability 1/N
//                            (and its free, wherever it happens), and count
//                            every allocation and free per thread.
//                            1..2^30. Default 1 (trace everything).
//   CROSSFREE_DELAY_MS       Recording starts this long after the start
//                            (CROSSFREE_START_NS, else the tracer's start).
//                            0..86400000. Default 0.
//   CROSSFREE_DURATION_MS    Each recording window closes this long after
//                            it opened. 0 (default): no limit.
//   CROSSFREE_START_NS       CLOCK_MONOTONIC ns the delay counts from. Set
//                            by `crossfree record` so that exec'd children
//                            keep the command's window. Default: unset.
//   CROSSFREE_TOGGLE_SIGNAL  Signal number that opens and closes the
//                            recording window. Recording then starts closed
//                            (unless CROSSFREE_DELAY_MS opens it). Default:
//                            none (the target may use the signal).
//   CROSSFREE_CHANNEL        Set by `crossfree record`: the descriptor of its
//                            shared-memory region (protocol/shm_channel.h).
//                            The command's process (first image and the
//                            images it execs) hands its chunks over there
//                            instead of writing a file (tracer/channel.h).
//   CROSSFREE_CHANNEL_SOCKET Set by `crossfree record`: "<fd>,<pid>", its socket
//                            for children's regions (channel::AttachSocket).
//   CROSSFREE_CHANNEL_WAIT_MS How long a thread waits for `record` to free a
//                            slot before its chunk goes to its private
//                            buffer (handed over later, or counted as
//                            dropped). 0..60000. Default 1000.
//   CROSSFREE_VERBOSE        1 prints a one-line summary per process at exit
//                            (trace path, events, stacks). Default 0.
//
// Read with getenv (which neither allocates nor locks) from the first hook
// or the library constructor, whichever comes first. Invalid values print one
// line on stderr and fall back to the default.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tracer/stacks.h"

namespace crossfree::tracer {

struct Settings {
  char output_template[1024] = "crossfree.%p.trace";
  uint32_t main_pid = 0;  // 0: unset
  UnwindMode unwind = UnwindMode::kHybrid;
  int depth = 32;
  bool stacks = true;
  size_t buffer_bytes = 128 * 1024;
  uint64_t flush_ns = 1'000'000'000;
  bool malloc_hook = true;
  bool verbose = false;
  bool central = true;
  bool tsc = true;
  bool stack_check = false;
  bool stack_memo = true;
  uint32_t sample_period = 1;  // 1: every allocation
  uint64_t delay_ns = 0;
  uint64_t duration_ns = 0;    // 0: none
  uint64_t start_ns = 0;       // 0: the tracer's own start
  int toggle_signal = 0;       // 0: none
  int channel_fd = -1;         // -1: not under `crossfree record`'s hand-off
  uint64_t channel_wait_ns = 1'000'000'000;
};

inline constexpr uint64_t kMaxSamplePeriod = 1u << 30;

// Parses the environment into *settings. Never allocates.
void LoadSettings(Settings* settings);

// Expands the output template for process pid into out (cap bytes, NUL
// terminated). fork_child asks for the per-pid name of a process that does
// not own a %p-less path. Returns false if the result does not fit.
bool ExpandOutputPath(const Settings& settings, uint32_t pid, bool owns_plain_path,
                      char* out, size_t cap);

}  // namespace crossfree::tracer
