// SPDX-License-Identifier: Apache-2.0
// `crossfree record`: the chunk hand-off (record_channel.h) as the command's
// start and end drive it. Before fork the region is made; the child waits
// until record has created the trace file (so that no image of the command
// can take that path first), then passes the region on in
// CROSSFREE_CHANNEL; after the command is reaped the rest is written and
// one report says what was done. The command's fork children hand their
// own regions over through a socket (record_children.h): those are
// finished once the processes the command left were waited for.
//
// Threading: RunRecord's thread only. Prepare runs before fork (record is
// single-threaded then), InChild in the child between fork and exec,
// InParent, Finish and Report in record after fork, in that order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "analyzer/record/record_channel.h"
#include "analyzer/record/record_children.h"
#include "analyzer/record/window_alarm.h"

namespace crossfree::analyzer::record {

class RecordHandOff {
 public:
  // The region of CROSSFREE_CHANNEL_KB KiB of buffers (default 49152;
  // 0 turns the hand-off off: the command writes its own trace, as under
  // a bare LD_PRELOAD). Null when off, or after one line on stderr when
  // the region cannot be made (then too the command writes its own trace).
  // Every trace written here (the command's and its children's) has its
  // times rounded down to multiples of time_resolution_ns
  // (docs/trace-format.md 7.1; 1: nanoseconds, as the tracer stamps).
  static std::unique_ptr<RecordHandOff> Prepare(uint32_t time_resolution_ns);
  ~RecordHandOff();
  RecordHandOff(const RecordHandOff&) = delete;
  RecordHandOff& operator=(const RecordHandOff&) = delete;

  // Child, after fork: waits for InParent, then sets CROSSFREE_CHANNEL and
  // keeps the region's descriptor across exec, or unsets it when record
  // could not create the trace file.
  void InChild();
  // Record, after fork: creates (or truncates) the trace at path, starts
  // the drain and lets the child go on. child_path(pid) names a fork
  // child's trace.
  void InParent(const std::string& path, std::function<std::string(uint32_t)> child_path);
  // --delay: at at_ns (CLOCK_MONOTONIC, the origin the tracer was given
  // plus the delay) every region's window nudge moves (window_alarm.h),
  // until FinishChildren. After InParent.
  void OpenWindowAt(uint64_t at_ns);
  // After the command was reaped: the rest of the region written, the
  // file closed (and removed when the command never attached: nothing
  // was written to it).
  void Finish();
  // After the processes the command left running were waited for: the fork
  // children's regions finished (record_children.h).
  void FinishChildren();
  // On stderr: what the hand-off wrote, what it could not get and why,
  // and record's own CPU time and peak memory. Nothing when the command
  // never attached. Returns whether anything the command recorded is
  // missing from its traces (dropped for want of a free buffer, damaged in
  // shared memory, a write error): record's exit code then says so
  // (exit_codes.h).
  bool Report() const;

 private:
  RecordHandOff() = default;
  std::unique_ptr<ChunkChannel> channel_;
  std::unique_ptr<ChildRegions> children_;  // null: child processes write their own files
  int go_[2] = {-1, -1};  // record -> child: '1' use the region, '0' do not
  int out_ = -1;
  std::string path_;
  bool finished_ = false;
  ChunkChannel::Stats stats_;
  ChildRegions::Totals child_totals_;
  // Last: it is stopped before the regions it nudges go.
  std::unique_ptr<WindowAlarm> window_alarm_;
};

}  // namespace crossfree::analyzer::record
