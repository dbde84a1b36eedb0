// SPDX-License-Identifier: Apache-2.0
// `crossfree record`: the chunk hand-off around the command's fork and exec
// (see record_handoff.h).
#include "analyzer/record/record_handoff.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "analyzer/record/command_process.h"
#include "analyzer/record/messages.h"
#include "format/names.h"
#include "protocol/shm_channel.h"

namespace crossfree::analyzer::record {
namespace {

// How record kept up with the command, for the hand-off line: chunks its
// rescue thread took out of their slots, chunks it held back to compress
// after, and chunks it wrote plain.
std::string KeepUpText(const ChunkChannel::Stats& s) {
  std::vector<std::string> parts;
  if (s.rescued > 0) {
    parts.push_back(fmt::format(
        "{} chunks rescued from their slots while the drain waited for a core", s.rescued));
  }
  if (s.held_back > 0) {
    parts.push_back(fmt::format("{} chunks held back and compressed after", s.held_back));
  }
  if (s.plain_to_keep_up > 0) {
    parts.push_back(fmt::format("{} chunks written plain to keep up", s.plain_to_keep_up));
  }
  return parts.empty() ? std::string() : fmt::format(" ({})", fmt::join(parts, ", "));
}

}  // namespace

std::unique_ptr<RecordHandOff> RecordHandOff::Prepare(uint32_t time_resolution_ns) {
  size_t region = shm::kDefaultRegionBytes;
  if (const char* v = getenv("CROSSFREE_CHANNEL_KB"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long kb = std::strtoull(v, &end, 10);
    const unsigned long long max_kb = (shm::kMaxRegionBytes - shm::kBuffersOffset) >> 10;
    if (errno != 0 || end == v || *end != '\0' || kb > max_kb) {
      Say("crossfree record: ignoring CROSSFREE_CHANNEL_KB='{}' (0..{}); using the "
          "default\n",
          v, max_kb);
    } else if (kb == 0) {
      if (time_resolution_ns > 1) {
        Say("crossfree record: with CROSSFREE_CHANNEL_KB=0 the command writes its own "
            "trace, in nanoseconds: --time-resolution applies to the traces record "
            "writes\n");
      }
      return nullptr;
    } else {
      region = shm::kBuffersOffset + static_cast<size_t>(kb) * 1024;
    }
  }
  std::unique_ptr<RecordHandOff> h(new RecordHandOff());
  std::string error;
  h->channel_ = ChunkChannel::Create(region, &error);
  if (h->channel_ != nullptr) h->channel_->SetTimeResolution(time_resolution_ns);
  if (h->channel_ == nullptr || pipe2(h->go_, O_CLOEXEC) != 0) {
    Say("crossfree record: no hand-off ({}); the command writes its own trace\n",
        h->channel_ == nullptr ? error : std::strerror(errno));
    return nullptr;
  }
  h->children_ = ChildRegions::Create(time_resolution_ns, &error);
  if (h->children_ == nullptr) {
    Say("crossfree record: child processes write their own traces ({})\n", error);
  }
  return h;
}

RecordHandOff::~RecordHandOff() {
  for (int fd : go_) {
    if (fd >= 0) close(fd);
  }
  if (out_ >= 0) close(out_);
}

void RecordHandOff::InChild() {
  close(go_[1]);
  char go = '0';
  ssize_t n;
  while ((n = read(go_[0], &go, 1)) < 0 && errno == EINTR) {
  }
  close(go_[0]);
  if (n == 1 && go == '1') {
    // The one descriptor the command inherits from record (the original
    // stays close-on-exec); the tracer closes it once it has mapped the
    // region.
    const int fd = InheritedDescriptor(channel_->fd());
    setenv(shm::kChannelEnv, std::to_string(fd).c_str(), 1);
    if (children_ != nullptr) children_->InChild();
  } else {
    unsetenv(shm::kChannelEnv);
  }
}

void RecordHandOff::InParent(const std::string& path,
                             std::function<std::string(uint32_t)> child_path) {
  close(go_[0]);
  go_[0] = -1;
  path_ = path;
  // Truncated, not exclusive: a file left at this path (an earlier run
  // whose command had the same pid) is this run's now. Never through a
  // symlink placed at the path.
  out_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  char go = '0';
  if (out_ >= 0) {
    channel_->Start(out_, path);
    if (children_ != nullptr) children_->Start(std::move(child_path));
    go = '1';
  }
  // If the file cannot be made, the tracer writes its own and says why
  // (the summary then reports it as without the hand-off).
  ssize_t ignored = write(go_[1], &go, 1);
  (void)ignored;
  close(go_[1]);
  go_[1] = -1;
}

void RecordHandOff::Finish() {
  if (finished_) return;
  finished_ = true;
  stats_ = channel_->Finish();
  if (out_ >= 0) {
    close(out_);
    out_ = -1;
    struct stat st;
    // Nothing attached (a command that did not load the tracer, or failed
    // to start): the empty file record made is not a trace.
    if (!stats_.attached && stat(path_.c_str(), &st) == 0 && st.st_size == 0) {
      unlink(path_.c_str());
    }
  }
}

void RecordHandOff::OpenWindowAt(uint64_t at_ns) {
  // The command's region stays mapped until this object goes, after the
  // alarm: a nudge after Finish is a store nobody reads any more.
  window_alarm_ = std::make_unique<WindowAlarm>(at_ns, [this] {
    channel_->SetWindowNudges(1);
    if (children_ != nullptr) children_->SetWindowNudges(1);
  });
}

void RecordHandOff::FinishChildren() {
  window_alarm_.reset();
  if (children_ != nullptr) child_totals_ = children_->Finish();
}

bool RecordHandOff::Report() const {
  if (!stats_.attached) return false;
  // The command's region and its fork children's, as one.
  ChunkChannel::Stats all = stats_;
  const ChunkChannel::Stats& c = child_totals_.sum;
  all.events += c.events;
  all.chunks += c.chunks;
  all.partial_chunks += c.partial_chunks;
  all.partial_events += c.partial_events;
  all.plain_bytes += c.plain_bytes;
  all.bytes_written += c.bytes_written;
  all.dropped_events += c.dropped_events;
  all.dropped_chunks += c.dropped_chunks;
  all.damaged_chunks += c.damaged_chunks;
  all.out_of_order += c.out_of_order;
  all.plain_to_keep_up += c.plain_to_keep_up;
  all.held_back += c.held_back;
  const uint64_t exec_images = stats_.files.size() + child_totals_.exec_images;
  const uint64_t forks = child_totals_.processes;
  const double ratio = all.bytes_written > 0
                           ? static_cast<double>(all.plain_bytes) /
                                 static_cast<double>(all.bytes_written)
                           : 1.0;
  // The same words as the losses record written into the trace says
  // them in dump and the reports.
  std::string lost = format::LossesText(
      {.events_dropped = all.dropped_events, .chunks_dropped = all.dropped_chunks,
       .chunks_damaged = all.damaged_chunks});
  if (!all.error.empty()) lost += fmt::format("{}{}", lost.empty() ? "" : ", ", all.error);
  for (const std::string& e : child_totals_.errors) {
    lost += fmt::format("{}{}", lost.empty() ? "" : ", ", e);
  }
  std::string also;
  if (exec_images > 0) {
    also = fmt::format("{} exec'd image{}", exec_images, exec_images == 1 ? "" : "s");
  }
  if (forks > 0) {
    also += fmt::format("{}{} child process{}", also.empty() ? "" : ", ", forks,
                        forks == 1 ? "" : "es");
  }
  if (!also.empty()) also = " (also for " + also + ")";
  if (all.out_of_order > 0) {
    lost += fmt::format("{}{} chunks written after later ones (a seal that did not finish "
                        "within 1 s)",
                        lost.empty() ? "" : ", ", all.out_of_order);
  }
  // User + system CPU: record's own (the drain included), and its reaped
  // children's (the command and whatever it started).
  auto seconds = [](const struct rusage& u) {
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  std::string usage_text;
  struct rusage self, children;
  if (getrusage(RUSAGE_SELF, &self) == 0 && getrusage(RUSAGE_CHILDREN, &children) == 0) {
    usage_text = fmt::format("; record used {:.2f} s of CPU, peak RSS {} MiB (the command: {:.2f} s)",
                             seconds(self), (self.ru_maxrss + 1023) / 1024, seconds(children));
  }
  // One line (then one for refused offers, below): the run's summary follows.
  Say("crossfree record: hand-off: {} events in {} chunks ({} events in {} partly filled "
      "chunk{} taken after their process ended), {} bytes written{}, compression {:.2f}x{}; "
      "{}{}\n",
      all.events, all.chunks, all.partial_events, all.partial_chunks,
      all.partial_chunks == 1 ? "" : "s", all.bytes_written,
      also,
      ratio,
      KeepUpText(all),
      lost.empty() ? "0 events lost of those the command recorded"
                   : "not written: " + lost,
      usage_text);
  // Offers record did not take, in a line of their own: the hand-off
  // line's counts leave those processes out, and the run's summary below
  // counts the traces they wrote themselves, so the user is told why, and
  // where those traces are.
  if (child_totals_.refused > 0) {
    std::string why;
    for (const auto& [text, count] : child_totals_.refusals) {
      why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", text, count);
    }
    const uint64_t n = child_totals_.refused;
    std::string where;
    for (const std::string& f : child_totals_.refused_files) {
      where += fmt::format("{}{}", where.empty() ? ": " : ", ", f);
    }
    const uint64_t unnamed = child_totals_.refused_named - child_totals_.refused_files.size();
    if (unnamed > 0) where += fmt::format(" and {} more", unnamed);
    Say("crossfree record: {} child process region{} refused ({}); {}, as without "
        "record{}\n",
        n, n == 1 ? "" : "s", why,
        n == 1 ? "that process writes its own trace"
               : "those processes write their own traces",
        where);
  }
  return all.dropped_events > 0 || all.damaged_chunks > 0 || !all.error.empty() ||
         !child_totals_.errors.empty();
}

}  // namespace crossfree::analyzer::record
