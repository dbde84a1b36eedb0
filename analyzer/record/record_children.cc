// SPDX-License-Identifier: Apache-2.0
// `crossfree record`: the command's children's regions (see
// record_children.h).
#include "analyzer/record/record_children.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>

#include <fmt/core.h>

#include "analyzer/record/command_process.h"
#include "analyzer/record/target_process.h"
#include "protocol/shm_channel.h"

namespace crossfree::analyzer::record {
namespace {


// How often the live regions are drained: the children's seals wake no one
// here (their regions' futexes are not waited on), so a child finds a slot
// freed at most this late; with 32 slots of 128 KiB each, a child
// recording faster than 800 MB/s would wait.
constexpr int kPumpIntervalMs = 5;
constexpr size_t kMaxNotes = 5;

// The process a pidfd refers to, from its fdinfo: pid, its pid in record's
// namespace (the "Pid:" line; 0 once the process has ended, -1 when fd is
// no pidfd), and own_pid, its pid as it sees itself (getpid): in the
// innermost pid namespace it is in, the last "NSpid:" field (pid itself
// outside any namespace of its own; unshare --pid, bwrap and container
// runtimes make one).
struct PidfdPids {
  long pid = -1;
  long own_pid = -1;
};
PidfdPids PidsOfPidfd(int fd) {
  PidfdPids out;
  if (DescriptorLink(getpid(), fd) != "anon_inode:[pidfd]") return out;
  std::istringstream info(ReadText(fmt::format("/proc/self/fdinfo/{}", fd)));
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("Pid:", 0) == 0) {
      const long pid = std::strtol(line.c_str() + 4, nullptr, 10);
      out.pid = pid > 0 ? pid : 0;
    } else if (line.rfind("NSpid:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      for (long v; fields >> v;) out.own_pid = v;
    }
  }
  if (out.own_pid < 0) out.own_pid = out.pid;  // a kernel without NSpid
  return out;
}

void Add(ChunkChannel::Stats& to, const ChunkChannel::Stats& s) {
  to.events += s.events;
  to.chunks += s.chunks;
  to.partial_chunks += s.partial_chunks;
  to.partial_events += s.partial_events;
  to.plain_bytes += s.plain_bytes;
  to.bytes_written += s.bytes_written;
  to.dropped_events += s.dropped_events;
  to.dropped_chunks += s.dropped_chunks;
  to.damaged_chunks += s.damaged_chunks;
  to.out_of_order += s.out_of_order;
  to.plain_to_keep_up += s.plain_to_keep_up;
  to.held_back += s.held_back;
  to.rescued += s.rescued;
  if (!s.first_file.empty()) to.files.push_back(s.first_file);
  to.files.insert(to.files.end(), s.files.begin(), s.files.end());
}

}  // namespace

std::unique_ptr<ChildRegions> ChildRegions::Create(uint32_t time_resolution_ns,
                                                   std::string* error) {
  std::unique_ptr<ChildRegions> c(new ChildRegions());
  c->time_resolution_ns_ = time_resolution_ns;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, c->sock_) != 0 ||
      pipe2(c->stop_, O_CLOEXEC) != 0) {
    *error = fmt::format("socketpair: {}", std::strerror(errno));
    return nullptr;
  }
  return c;
}

ChildRegions::~ChildRegions() {
  if (thread_.joinable()) {
    char c = 's';
    ssize_t ignored = write(stop_[1], &c, 1);
    (void)ignored;
    thread_.join();
  }
  for (Live& l : live_) close(l.pidfd);
  for (int fd : {sock_[0], sock_[1], stop_[0], stop_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void ChildRegions::InChild() {
  // With record's pid, which the tracer checks against the socket's peer.
  const int fd = InheritedDescriptor(sock_[1]);
  setenv(shm::kSocketEnv, fmt::format("{},{}", fd, getppid()).c_str(), 1);
}

void ChildRegions::Start(std::function<std::string(uint32_t)> path_for) {
  close(sock_[1]);
  sock_[1] = -1;
  path_for_ = std::move(path_for);
  if (ChunkChannel::Level() != 0) {  // 0: plain chunks, no compressor
    compressor_ = std::make_unique<format::ChunkCompressor>(ChunkChannel::Level());
  }
  thread_ = std::thread([this] {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the owner thread's
    Loop();
  });
}

void ChildRegions::Loop() {
  bool socket_open = true;
  std::vector<struct pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({stop_[0], POLLIN, 0});
    fds.push_back({socket_open ? sock_[0] : -1, POLLIN, 0});
    for (const Live& l : live_) fds.push_back({l.pidfd, POLLIN, 0});
    const int ready =
        poll(fds.data(), fds.size(), live_.empty() ? -1 : kPumpIntervalMs);
    if (ready < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    // Ended processes first (their regions change no more), then the rest.
    std::vector<Live> still;
    for (size_t i = 0; i < live_.size(); ++i) {
      if (fds[2 + i].revents != 0) {
        Retire(live_[i]);
      } else {
        live_[i].region->SetWindowNudges(window_nudges_.load(std::memory_order_relaxed));
        live_[i].region->Pump();
        still.push_back(std::move(live_[i]));
      }
    }
    live_ = std::move(still);
    // Every holder of the command's end closed it (end of file): no process
    // can offer a region any more, and the socket would poll ready for ever.
    if ((fds[1].revents & POLLIN) != 0 && !Receive(/*adopt=*/true)) socket_open = false;
    if ((fds[1].revents & (POLLERR | POLLNVAL)) != 0) socket_open = false;
  }
}

bool ChildRegions::Receive(bool adopt) {
  for (;;) {
    alignas(shm::ChildRegionMessage) uint8_t data[sizeof(shm::ChildRegionMessage) + 1];
    // Room for more descriptors than a child sends, so extra ones are seen
    // (and closed) rather than silently cut off.
    alignas(struct cmsghdr) char control[CMSG_SPACE(8 * sizeof(int))];
    struct iovec iov = {data, sizeof(data)};
    struct msghdr mh = {};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control;
    mh.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(sock_[0], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return true;  // EAGAIN: none waiting
    int fds[8];
    size_t nfds = 0;
    for (struct cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
      if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        if (nfds < std::size(fds)) {
          fds[nfds++] = fd;
        } else {
          close(fd);
        }
      }
    }
    if (n == 0 && nfds == 0) {
      // End of file (every holder closed its end), or an empty message.
      struct pollfd p = {sock_[0], POLLIN, 0};
      if (poll(&p, 1, 0) == 1 && (p.revents & POLLHUP) != 0) return false;
    }
    Offered(data, static_cast<size_t>(n), fds, nfds,
            (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0, adopt);
  }
}

void ChildRegions::Offered(const uint8_t* data, size_t n, const int* fds, size_t nfds,
                           bool truncated, bool adopt) {
  shm::ChildRegionMessage msg = {};
  if (n == sizeof(msg)) std::memcpy(&msg, data, sizeof(msg));
  if (n != sizeof(msg) || truncated || nfds != 2 || msg.magic != shm::kChildMessageMagic ||
      msg.version != shm::kChannelVersion) {
    for (size_t i = 0; i < nfds; ++i) close(fds[i]);
    Refused("a malformed region offer on the hand-off socket", 0);
    return;
  }
  const int pidfd = fds[1];
  std::string error;
  std::unique_ptr<ChunkChannel> region = ChunkChannel::Adopt(fds[0], &error);
  if (region == nullptr) {
    close(pidfd);
    Refused(error, 0);
    return;
  }
  region->SetTimeResolution(time_resolution_ns_);
  // The child names itself by getpid(), which in a pid namespace of its
  // own is not its pid here: it must be the pidfd's innermost one. Its
  // trace is named by its pid here, unique across namespaces.
  const PidfdPids pids = PidsOfPidfd(pidfd);
  if (pids.pid < 0 || (pids.pid > 0 && static_cast<uint32_t>(pids.own_pid) != msg.pid) ||
      region->AttachedPid() != msg.pid || msg.pid == 0) {
    region->Refuse();
    close(pidfd);
    Refused(fmt::format("the region offered for pid {} came with another process's pidfd",
                        msg.pid),
            0);
    return;
  }
  if (!adopt || live_.size() >= shm::kMaxChildRegions) {
    // The child writes its own file, at once. Said with the limit: a user
    // who finds files record did not write must learn why from record.
    region->Refuse();
    close(pidfd);
    Refused(adopt ? fmt::format("offered while {} were live, the most record adopts at once",
                                shm::kMaxChildRegions)
                  : std::string("offered as record was ending"),
            msg.pid);
    return;
  }
  const uint32_t pid_here = pids.pid > 0 ? static_cast<uint32_t>(pids.pid) : msg.pid;
  if (!region->Claim(path_for_(pid_here), compressor_.get())) {
    close(pidfd);  // the child gave up waiting: it writes its own file
    Refused("the process had stopped waiting for record", msg.pid);
    return;
  }
  ++totals_.processes;
  region->SetWindowNudges(window_nudges_.load(std::memory_order_relaxed));
  region->Pump();  // its header, published before the offer
  live_.push_back({pid_here, pidfd, std::move(region)});
}

void ChildRegions::Retire(Live& live, bool still_running) {
  const ChunkChannel::Stats s = live.region->Finish(still_running);
  live.region.reset();
  close(live.pidfd);
  live.pidfd = -1;
  Add(totals_.sum, s);
  totals_.exec_images += s.files.size();
  if (!s.error.empty()) Note(totals_.errors, fmt::format("pid {}: {}", live.pid, s.error));
}

void ChildRegions::Note(std::vector<std::string>& to, const std::string& text) {
  if (to.size() < kMaxNotes) to.push_back(text);
}

void ChildRegions::Refused(const std::string& why, uint32_t pid) {
  ++totals_.refused;
  bool counted = false;
  for (auto& [text, count] : totals_.refusals) {
    if (text == why) {
      ++count;
      counted = true;
    }
  }
  if (!counted && totals_.refusals.size() < kMaxNotes) totals_.refusals.emplace_back(why, 1);
  if (pid == 0 || !path_for_) return;
  ++totals_.refused_named;
  if (totals_.refused_files.size() < kMaxNotes) totals_.refused_files.push_back(path_for_(pid));
}

ChildRegions::Totals ChildRegions::Finish() {
  if (finished_) return totals_;
  finished_ = true;
  if (thread_.joinable()) {
    char c = 's';
    ssize_t ignored = write(stop_[1], &c, 1);
    (void)ignored;
    thread_.join();
  }
  // Offers still waiting: refused, so those children go on at once.
  if (sock_[0] >= 0) Receive(/*adopt=*/false);
  for (Live& l : live_) {
    // Its pidfd is readable once the process has ended; a process still
    // running keeps its trace up to now (its end-taken chunk says so).
    struct pollfd p = {l.pidfd, POLLIN, 0};
    Retire(l, /*still_running=*/poll(&p, 1, 0) == 0);
  }
  live_.clear();
  // A process still running now sees record gone and stops handing over.
  for (int* fd : {&sock_[0], &sock_[1]}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  return totals_;
}

}  // namespace crossfree::analyzer::record
