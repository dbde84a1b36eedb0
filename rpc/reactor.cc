// SPDX-License-Identifier: Apache-2.0
// Reactor implementation: libev loop, task queue, connection registry.
#include "rpc/reactor.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <utility>

#include "rpc/alloc_pattern.h"
#include "rpc/connection.h"
#include "rpc/dcheck.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"
#include "rpc/outbound_call.h"

namespace crossfree::rpc {

namespace {

constexpr size_t kTaskQueueCapacity = 4096;
constexpr double kTickSeconds = 0.1;

// The legacy_reactor_tasks pattern: the producer allocates this box, the
// reactor deletes it after running (KRPC before 6ab30abe2).
struct HeapTask {
  explicit HeapTask(ReactorTask t) : task(std::move(t)) {}
  ReactorTask task;
};

// libev's loop time (ev_now: taken right before and right after each
// poll) in nanoseconds; for the busy-time accounting, which so reads no
// clock of its own.
uint64_t LoopNanos(struct ev_loop* loop) {
  return static_cast<uint64_t>(ev_now(loop) * 1e9);
}

}  // namespace

Reactor::Reactor(Messenger* messenger, int index, std::string thread_name)
    : messenger_(messenger), index_(index), name_(std::move(thread_name)) {
  pending_.reserve(kTaskQueueCapacity);
  running_.reserve(kTaskQueueCapacity);
}

Reactor::~Reactor() {
  Shutdown();
  if (loop_ != nullptr) ev_loop_destroy(loop_);
}

Status Reactor::Start() {
  loop_ = ev_loop_new(EVFLAG_AUTO | EVFLAG_NOSIGMASK);
  if (loop_ == nullptr) return Status::RuntimeError("ev_loop_new failed");
  ev_set_userdata(loop_, this);
  ev_async_init(&wakeup_, &Reactor::AsyncCallback);
  wakeup_.data = this;
  ev_async_start(loop_, &wakeup_);
  ev_timer_init(&tick_, &Reactor::TickCallback, kTickSeconds, kTickSeconds);
  tick_.data = this;
  ev_timer_start(loop_, &tick_);
  ev_set_loop_release_cb(loop_, &Reactor::BeforePoll, &Reactor::AfterPoll);
  ev_set_invoke_pending_cb(loop_, &Reactor::InvokePending);
  thread_ = std::thread([this] { RunThread(); });
  while (!started_.load()) std::this_thread::yield();
  return Status::OK();
}

void Reactor::RunThread() {
  SetCurrentThreadName(name_);
  tid_ = pthread_self();
  started_.store(true);
  ev_now_update(loop_);
  tick_start_ns_ = LoopNanos(loop_);
  ev_run(loop_, 0);
  // The loop stopped: nothing more will be posted successfully (closing_ is
  // set), abort whatever is left, on this thread.
  DrainTasks();
}

void Reactor::RunAndWait(InlineFunction<void(), 40> fn) {
  CROSSFREE_DCHECK(!IsCurrentThread());
  if (!thread_.joinable()) return;
  std::mutex mu;
  std::condition_variable cv;
  bool ran = false;
  ScheduleTask([&](const Status& s) {
    if (s.ok() && fn) fn();
    std::lock_guard<std::mutex> l(mu);
    ran = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> l(mu);
  cv.wait(l, [&] { return ran; });
}

void Reactor::Shutdown() {
  if (IsCurrentThread()) {
    // Broken contract (reactor.h; Messenger::Shutdown, the one caller, has
    // the same rule for all its threads): the thread cannot join itself,
    // and RunAndWait would wait for a task only this thread can run. Stop
    // here with a line that says so, in every build, rather than hang or
    // die of a self-join's exception.
    Log(LogLevel::kError, "reactor " + name_ +
                              ": Shutdown() called from the reactor's own thread (a callback or "
                              "task); shut the messenger down from another thread");
    std::abort();
  }
  if (thread_.joinable()) {
    // Let the tasks queued so far run normally first (e.g. the error
    // responses a service pool sends while shutting down), then close.
    RunAndWait(nullptr);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    closing_ = true;
  }
  if (thread_.joinable()) {
    ev_async_send(loop_, &wakeup_);
    thread_.join();
  }
}

void Reactor::ScheduleTask(ReactorTask task) {
  if (GetAllocPattern().legacy_reactor_tasks) {
    HeapTask* box = new HeapTask(std::move(task));
    task = ReactorTask([box](const Status& s) {
      box->task(s);
      delete box;
    });
  }
  bool wake;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!closing_) {
      wake = pending_.empty();
      pending_.push_back(std::move(task));
    } else {
      wake = false;
    }
  }
  if (task) {
    // Not queued: the reactor is shutting down.
    task(Status::Aborted("reactor " + name_ + " is shutting down"));
    return;
  }
  // Only the first task after a drain wakes the loop; later ones ride along.
  if (wake) ev_async_send(loop_, &wakeup_);
}

void Reactor::DrainTasks() {
  bool closing;
  {
    std::lock_guard<std::mutex> l(mu_);
    running_.swap(pending_);
    closing = closing_;
  }
  if (closing && !shut_down_on_reactor_) {
    ShutdownOnReactor();
  }
  for (ReactorTask& t : running_) {
    if (closing) {
      t(Status::Aborted("reactor " + name_ + " is shutting down"));
    } else {
      t(Status::OK());
    }
  }
  running_.clear();
  if (closing) {
    // Tasks queued by the aborts above.
    std::lock_guard<std::mutex> l(mu_);
    if (!pending_.empty()) {
      running_.swap(pending_);
    }
  }
  if (closing && !running_.empty()) {
    for (ReactorTask& t : running_) t(Status::Aborted("reactor " + name_ + " is shutting down"));
    running_.clear();
  }
}

void Reactor::ShutdownOnReactor() {
  shut_down_on_reactor_ = true;
  Status why = Status::Aborted("reactor " + name_ + " is shutting down");
  // Copy the sets: DestroyConnection erases from them.
  std::vector<Connection*> conns;
  for (auto& [key, c] : client_conns_) conns.push_back(c.get());
  for (auto& [c, ref] : server_conns_) conns.push_back(c);
  for (Connection* c : conns) DestroyConnection(c, why);
  ev_timer_stop(loop_, &tick_);
  ev_break(loop_, EVBREAK_ALL);
}

void Reactor::AsyncCallback(struct ev_loop*, ev_async* w, int) {
  static_cast<Reactor*>(w->data)->DrainTasks();
}

void Reactor::TickCallback(struct ev_loop*, ev_timer* w, int) {
  Reactor* r = static_cast<Reactor*>(w->data);
  // The loop time of this wake-up (the tick runs inside a busy period,
  // which starts at it: what follows counts in the next tick).
  uint64_t now = LoopNanos(r->loop_);
  uint64_t wall = now > r->tick_start_ns_ ? now - r->tick_start_ns_ : 0;
  uint64_t busy = r->busy_ns_in_tick_ + (now > r->wake_ns_ ? now - r->wake_ns_ : 0);
  if (wall > 0) r->load_percent_.Record(busy * 100 / wall);
  r->busy_ns_in_tick_ = 0;
  r->tick_start_ns_ = now;
  r->wake_ns_ = now;
  r->CheckConnections();
}

void Reactor::CheckConnections() {
  const bool clients = messenger_->options().caller_reads_sync_responses;
  if (server_conns_.empty() && (!clients || client_conns_.empty())) return;
  // A copy: OnTick may close (and erase) its connection.
  tick_scratch_.clear();
  for (auto& [c, ref] : server_conns_) tick_scratch_.push_back(c);
  // Client connections only lend their read side (OnTick takes it back
  // when idle).
  if (clients) {
    for (auto& [addr, ref] : client_conns_) tick_scratch_.push_back(ref.get());
  }
  double now = ev_now(loop_);
  for (Connection* c : tick_scratch_) c->OnTick(now);
}

void Reactor::CancelInboundCalls() {
  CROSSFREE_DCHECK(IsCurrentThread());
  for (auto& [c, ref] : server_conns_) c->CancelInboundCalls();
}

void Reactor::AfterPoll(struct ev_loop* loop) noexcept {
  static_cast<Reactor*>(ev_userdata(loop))->polling_.store(false, std::memory_order_relaxed);
}

void Reactor::InvokePending(struct ev_loop* loop) noexcept {
  // libev updated its loop time right after the poll: a busy period starts
  // (the first invocation after a poll; without fork or prepare watchers,
  // the only one).
  Reactor* r = static_cast<Reactor*>(ev_userdata(loop));
  if (r->wake_ns_ == 0) r->wake_ns_ = LoopNanos(loop);
  ev_invoke_pending(loop);
}

void Reactor::BeforePoll(struct ev_loop* loop) noexcept {
  // libev updated its loop time right before this: the busy period ends.
  Reactor* r = static_cast<Reactor*>(ev_userdata(loop));
  r->polling_.store(true, std::memory_order_relaxed);
  if (r->wake_ns_ == 0) return;
  uint64_t now = LoopNanos(loop);
  uint64_t d = now > r->wake_ns_ ? now - r->wake_ns_ : 0;  // realtime-based: may step back
  r->busy_ns_in_tick_ += d;
  r->active_latency_us_.Record(d / 1000);
  r->wake_ns_ = 0;
}

void Reactor::RegisterInboundSocket(int fd, const Sockaddr& remote) {
  CROSSFREE_DCHECK(IsCurrentThread());
  if (shut_down_on_reactor_) {
    ::close(fd);
    messenger_->RemoveServerConnection();
    return;
  }
  auto* conn = new Connection(this, Connection::Direction::kServer, fd, remote);
  server_conns_.emplace(conn, ConnectionRef(conn));
  conn->Start(false);
}

void Reactor::AssignOutboundCall(OutboundCall* call) {
  CROSSFREE_DCHECK(IsCurrentThread());
  auto it = client_conns_.find(call->remote());
  Connection* conn;
  if (it != client_conns_.end()) {
    conn = it->second.get();
  } else {
    const Sockaddr& remote = call->remote();
    int fd = ::socket(remote.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      int err = errno;
      call->Finish(OutboundCall::State::kFinishedError,
                   Status::NetworkError("socket() failed", err));
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    bool connecting = false;
    if (::connect(fd, remote.addr(), remote.addr_len()) < 0) {
      if (errno == EINPROGRESS) {
        connecting = true;
      } else {
        int err = errno;
        ::close(fd);
        call->Finish(OutboundCall::State::kFinishedError,
                     Status::NetworkError("connect to " + remote.ToString() + " failed", err));
        return;
      }
    }
    conn = new Connection(this, Connection::Direction::kClient, fd, remote);
    client_conns_.emplace(remote, ConnectionRef(conn));
    conn->Start(connecting);
  }
  // Before queueing: the call may finish (and its owner read this) at once.
  if (call->want_connection) call->connection_for_caller = ConnectionRef(conn);
  conn->QueueOutboundCall(call);
}

void Reactor::DestroyConnection(Connection* conn, const Status& why) {
  CROSSFREE_DCHECK(IsCurrentThread());
  // Keep it alive through Shutdown: erasing below drops the reactor's ref.
  ConnectionRef keep;
  if (conn->direction() == Connection::Direction::kClient) {
    auto it = client_conns_.find(conn->remote());
    if (it == client_conns_.end() || it->second.get() != conn) return;
    keep = std::move(it->second);
    client_conns_.erase(it);
  } else {
    auto it = server_conns_.find(conn);
    if (it == server_conns_.end()) return;
    keep = std::move(it->second);
    server_conns_.erase(it);
    messenger_->RemoveServerConnection();
  }
  conn->Shutdown(why);
}

}  // namespace crossfree::rpc
