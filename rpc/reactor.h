// SPDX-License-Identifier: Apache-2.0
// Reactor: one event-loop thread (libev) that owns a set of connections and
// runs tasks posted to it by other threads.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <ev.h>

#include "rpc/connection.h"
#include "rpc/histogram.h"
#include "rpc/inline_function.h"
#include "rpc/sockaddr.h"
#include "rpc/status.h"

namespace crossfree::rpc {

class Messenger;
class OutboundCall;

// A unit of work for a reactor, stored by value with its captures inline
// (at most 48 bytes, checked at compile time). It is called exactly once:
// with OK to run, or with Aborted when the reactor shuts down first.
using ReactorTask = InlineFunction<void(const Status&), 48>;

// Owner: the Messenger. Thread rules:
//  - ScheduleTask, Shutdown and the accessors may be called from any thread
//    (Shutdown not from the reactor itself: called there, it logs an error
//    and aborts the process, in every build).
//  - Everything marked "reactor thread only" must run on this reactor's
//    thread, i.e. inside a task or an event callback; the functions check it
//    with CROSSFREE_DCHECK (Debug builds, or -DCROSSFREE_DCHECK=ON).
// Every Connection belongs to exactly one reactor, which alone runs its
// event callbacks, timers and tasks. Its state is touched only there,
// except what connection.h lets other threads touch under the
// connection's mutex: a direct writer's frame (a sync caller or a worker)
// and the read side lent to a sync caller.
// The 100 ms tick also applies the connection timeouts (Connection::OnTick).
class Reactor {
 public:
  Reactor(Messenger* messenger, int index, std::string thread_name);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Creates the loop and starts the thread.
  Status Start();
  // Closes every connection (their calls fail with Aborted), aborts the tasks
  // still queued, stops and joins the thread. Idempotent.
  void Shutdown();

  // Queues `task` to run on the reactor thread. The fixed pattern stores it
  // by value in a preallocated vector (no allocation per task); the
  // legacy_reactor_tasks pattern wraps it in a heap object the caller
  // allocates and the reactor deletes. After shutdown the task is aborted
  // on the calling thread.
  void ScheduleTask(ReactorTask task);
  // Any thread but this reactor's: runs `fn` on the reactor and waits for
  // it; does nothing if the reactor is shutting down.
  void RunAndWait(InlineFunction<void(), 40> fn);

  bool IsCurrentThread() const {
    return started_.load(std::memory_order_acquire) && pthread_equal(pthread_self(), tid_);
  }
  // Any thread: whether the loop is polling (or about to), i.e. a task
  // posted now would cost it a wake-up. A hint only; it may change at once.
  bool is_polling() const { return polling_.load(std::memory_order_relaxed); }
  Messenger* messenger() const { return messenger_; }
  const std::string& name() const { return name_; }
  int index() const { return index_; }
  struct ev_loop* loop() const { return loop_; }

  // --- reactor thread only ---
  // Takes ownership of an accepted, connected socket (server side). The
  // acceptor counted it in the messenger's connections; the reactor counts
  // it out when the connection ends.
  void RegisterInboundSocket(int fd, const Sockaddr& remote);
  // Marks every call being handled on this reactor's server connections
  // cancelled (the messenger's shutdown, after its grace period).
  void CancelInboundCalls();
  // Finds or opens the connection to the call's server and queues the call.
  void AssignOutboundCall(OutboundCall* call);
  // Closes `conn` (failing/aborting its calls with `why`) and drops the
  // reactor's reference to it.
  void DestroyConnection(Connection* conn, const Status& why);

  // Load statistics, sampled by the reactor (readable from any thread):
  // busy percent per 100 ms tick, and wall time per wake-up in microseconds.
  const Log2Histogram& load_percent() const { return load_percent_; }
  const Log2Histogram& active_latency_us() const { return active_latency_us_; }

 private:
  static void AsyncCallback(struct ev_loop* loop, ev_async* w, int revents);
  static void TickCallback(struct ev_loop* loop, ev_timer* w, int revents);
  // The busy-time accounting and the polling_ hint, as libev loop hooks
  // rather than an ev_prepare and an ev_check watcher. Why: two watchers
  // cost two event queueings and invocations per loop iteration, and each
  // read the clock, which libev reads right before and after polling
  // anyway (ev_now). BeforePoll / AfterPoll (ev_set_loop_release_cb) run
  // right around epoll_wait; InvokePending (ev_set_invoke_pending_cb) runs
  // the iteration's callbacks and stamps the busy period's start with the
  // loop time libev took after the poll. Reactor thread.
  static void BeforePoll(struct ev_loop* loop) noexcept;
  static void AfterPoll(struct ev_loop* loop) noexcept;
  static void InvokePending(struct ev_loop* loop) noexcept;
  void RunThread();
  void DrainTasks();
  void ShutdownOnReactor();
  // From the tick: timeouts and memory resumption of server connections;
  // idle client connections take their lent read side back.
  void CheckConnections();

  Messenger* const messenger_;
  const int index_;
  const std::string name_;
  struct ev_loop* loop_ = nullptr;
  ev_async wakeup_;
  ev_timer tick_;
  std::thread thread_;
  pthread_t tid_{};
  std::atomic<bool> started_{false};
  std::atomic<bool> polling_{false};  // set by BeforePoll, cleared by AfterPoll

  // Guards pending_ and closing_. Producers push; the reactor swaps pending_
  // with running_ and runs them, so both vectors keep their capacity and no
  // task costs an allocation (see ScheduleTask).
  std::mutex mu_;
  std::vector<ReactorTask> pending_;
  bool closing_ = false;
  std::vector<ReactorTask> running_;  // reactor thread only

  // Reactor thread only. The maps hold the reactor's reference to each
  // open connection.
  std::unordered_map<Sockaddr, ConnectionRef, SockaddrHash> client_conns_;
  std::unordered_map<Connection*, ConnectionRef> server_conns_;
  std::vector<Connection*> tick_scratch_;
  bool shut_down_on_reactor_ = false;

  // Busy-time accounting (reactor thread only, except the histograms), in
  // nanoseconds of libev's loop time (LoopNanos; 0: not in a busy period).
  uint64_t wake_ns_ = 0;
  uint64_t busy_ns_in_tick_ = 0;
  uint64_t tick_start_ns_ = 0;
  Log2Histogram load_percent_;
  Log2Histogram active_latency_us_;
};

}  // namespace crossfree::rpc
