// SPDX-License-Identifier: Apache-2.0
// `crossfree record --delay`: the moment the delay ends, on record's clock.
// A traced process whose window is closed looks at its own clock on one
// allocation or free in 64 of each thread (tracer/recorder.h); a program
// whose threads allocate rarely would notice the delay's end late, or
// never. At that moment record moves the window nudge of every region it
// drains (protocol/shm_channel.h, Control::window_nudges), and the next
// allocation or free of any thread of the process opens the window.
//
// Threading: made and destroyed by RunRecord's thread (RecordHandOff).
// fire runs once, on a thread of the alarm's own with every signal
// blocked (signals are the owner thread's to forward), unless the alarm
// is destroyed first; the destructor wakes that thread and joins it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace crossfree::analyzer::record {

class WindowAlarm {
 public:
  // at_ns: CLOCK_MONOTONIC nanoseconds (command_process.h, MonotonicNowNs).
  WindowAlarm(uint64_t at_ns, std::function<void()> fire);
  ~WindowAlarm();
  WindowAlarm(const WindowAlarm&) = delete;
  WindowAlarm& operator=(const WindowAlarm&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace crossfree::analyzer::record
