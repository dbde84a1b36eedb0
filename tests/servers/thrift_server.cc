// SPDX-License-Identifier: Apache-2.0
// Test harness around libthrift (Debian's libthrift-dev) for tests/servers:
// a TThreadPoolServer (4 worker threads of Thrift's ThreadManager; the
// main thread accepts, Thrift hands each connection to a worker) and its
// client, both over 127.0.0.1. The server's threads, buffers and the
// hand-over of connections are Thrift's; the handler only adds and echoes.
//   thrift_server serve PORT                  serves until a shutdown call
//   thrift_server call PORT THREADS CALLS     THREADS clients, CALLS calls each
//                                             (a new connection every 20 calls);
//                                             exit 1 on a wrong answer
//   thrift_server stop PORT                   the shutdown call
#include <thrift/concurrency/ThreadFactory.h>
#include <thrift/concurrency/ThreadManager.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/server/TThreadPoolServer.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TServerSocket.h>
#include <thrift/transport/TSocket.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "Calculator.h"

namespace {

using namespace apache::thrift;
using crossfree::servers::CalculatorClient;
using crossfree::servers::CalculatorIf;
using crossfree::servers::CalculatorProcessor;

// Set by the shutdown call (a worker thread), waited for by the stopper.
struct Stop {
  std::mutex mutex;
  std::condition_variable cv;
  bool asked = false;
};

class Handler : public CalculatorIf {
 public:
  explicit Handler(Stop* stop) : stop_(stop) {}
  int64_t add(const int64_t a, const int64_t b) override { return a + b; }
  void echo(std::string& out, const std::string& text) override { out = text; }
  void shutdown() override {
    std::lock_guard<std::mutex> lock(stop_->mutex);
    stop_->asked = true;
    stop_->cv.notify_all();
  }

 private:
  Stop* stop_;
};

int Serve(int port) {
  Stop stop;
  auto workers = concurrency::ThreadManager::newSimpleThreadManager(4);
  workers->threadFactory(std::make_shared<concurrency::ThreadFactory>());
  workers->start();
  server::TThreadPoolServer server(
      std::make_shared<CalculatorProcessor>(std::make_shared<Handler>(&stop)),
      std::make_shared<transport::TServerSocket>("127.0.0.1", port),
      std::make_shared<transport::TBufferedTransportFactory>(),
      std::make_shared<protocol::TBinaryProtocolFactory>(), workers);
  // stop() from another thread than the one in serve(): the shutdown call
  // runs on a worker, which serve() would wait for.
  std::thread stopper([&] {
    std::unique_lock<std::mutex> lock(stop.mutex);
    stop.cv.wait(lock, [&] { return stop.asked; });
    server.stop();
  });
  server.serve();
  stopper.join();
  workers->stop();
  return 0;
}

struct Connection {
  std::shared_ptr<transport::TTransport> transport;
  std::unique_ptr<CalculatorClient> client;
  explicit Connection(int port) {
    auto socket = std::make_shared<transport::TSocket>("127.0.0.1", port);
    transport = std::make_shared<transport::TBufferedTransport>(socket);
    client = std::make_unique<CalculatorClient>(
        std::make_shared<protocol::TBinaryProtocol>(transport));
    transport->open();
  }
  ~Connection() { transport->close(); }
};

int Call(int port, int threads, int calls) {
  std::vector<std::thread> clients;
  std::vector<int> wrong(threads, 0);
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&, t] {
      try {
        std::unique_ptr<Connection> c;
        for (int i = 0; i < calls; ++i) {
          if (i % 20 == 0) c = std::make_unique<Connection>(port);
          std::string text(16 + i % 200, static_cast<char>('a' + t));
          std::string back;
          c->client->echo(back, text);
          if (back != text || c->client->add(i, t) != i + t) ++wrong[t];
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "thrift_server: client %d: %s\n", t, e.what());
        wrong[t] = -1;
      }
    });
  }
  int failed = 0;
  for (int t = 0; t < threads; ++t) {
    clients[t].join();
    if (wrong[t] != 0) failed = 1;
  }
  printf("%d clients x %d calls: %s\n", threads, calls, failed ? "FAILED" : "ok");
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "serve" && argc == 3) return Serve(atoi(argv[2]));
  if (what == "call" && argc == 5) return Call(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
  if (what == "stop" && argc == 3) {
    Connection c(atoi(argv[2]));
    c.client->shutdown();
    return 0;
  }
  fprintf(stderr, "usage: thrift_server serve PORT | call PORT THREADS CALLS | stop PORT\n");
  return 2;
}
