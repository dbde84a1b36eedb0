// SPDX-License-Identifier: Apache-2.0
// Test fixture helpers for tests/rpc: a loopback server with the
// CalculatorService and client messengers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rpc/calculator_service.h"
#include "rpc/messenger.h"

namespace crossfree::rpc::testing {

struct TestServer {
  std::shared_ptr<Messenger> messenger;
  Sockaddr address;
  test::CalculatorService* service = nullptr;  // owned by the messenger
};

// The messenger's default limit (MessengerOptions::max_message_size).
inline constexpr size_t kMaxMsg = 50 * 1024 * 1024;
using Clock = std::chrono::steady_clock;

// Starts a server on 127.0.0.1 with `reactors` reactors and a pool of
// `workers` workers and a queue of `queue_length`; `inline_methods` run on
// the reactors (ServicePoolOptions::inline_methods).
TestServer StartServer(int reactors = 2, int workers = 2, int queue_length = 50,
                       size_t max_message_size = kMaxMsg,
                       std::vector<std::string> inline_methods = {});
// A server on 127.0.0.1 with these options (e.g. connection_threads) and the
// CalculatorService in a pool with `pool`.
TestServer StartServer(const MessengerOptions& options, const ServicePoolOptions& pool);
// `caller_reads`: MessengerOptions::caller_reads_sync_responses.
std::shared_ptr<Messenger> StartClient(int reactors = 1,
                                       size_t max_message_size = kMaxMsg,
                                       bool caller_reads = false);

}  // namespace crossfree::rpc::testing

namespace crossfree::rpc::testing {

inline double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Waits up to 5 s for `pred`, polling every 10 ms (the 5 s is a deadline,
// not a synchronisation); tests then check exact outcomes, so a slow
// (loaded) machine delays them instead of making them flaky.
template <typename Pred>
bool WaitFor(Pred pred) {
  for (int i = 0; i < 500; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

// One Add(x, y) call through proxy, given `timeout`; *resp gets the answer.
Status Add(test::CalculatorServiceProxy* proxy, uint32_t x, uint32_t y, test::AddResponsePB* resp,
           std::chrono::nanoseconds timeout = std::chrono::seconds(10));

inline test::SleepRequestPB SleepReq(uint32_t micros) {
  test::SleepRequestPB r;
  r.set_sleep_micros(micros);
  return r;
}

// Echoes 3 MiB through proxy (frames larger than every buffer: partial
// writes, receive buffers that grow, reads in several steps) and checks
// that the same bytes came back.
void CheckLargeEcho(test::CalculatorServiceProxy* proxy);

// Counts callbacks of async calls and waits for them; remembers if any call's
// callback ran more than once.
class CallbackCounter {
 public:
  explicit CallbackCounter(int calls) : runs_(calls) {}
  void Done(int index);
  // True if every call's callback ran, within `timeout`.
  bool WaitAll(std::chrono::milliseconds timeout);
  int total() const;
  bool any_twice() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> runs_;
  int total_ = 0;
};

}  // namespace crossfree::rpc::testing
