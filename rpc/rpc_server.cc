// SPDX-License-Identifier: Apache-2.0
// rpc-server: a standalone server of the example CalculatorService (Add,
// Echo, Sleep) with every MessengerOptions bound as a flag, for poking by
// hand (rpc-client) and for the attack tests in tests/rpc.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "crossfree_version.h"

#include "rpc/calculator_service.h"
#include "rpc/logging.h"
#include "rpc/messenger.h"

namespace {

constexpr char kNoSecurity[] =
    "SECURITY: the crossfree RPC core has NO authentication and NO encryption. Anyone who can "
    "reach the port can call every method, and everything travels in clear text. Bind to "
    "loopback (the default) or a trusted network only.";

// What the flags set.
struct ServerFlags {
  crossfree::rpc::MessengerOptions o;
  std::string bind = "127.0.0.1";
  int port = 0;
  crossfree::rpc::ServicePoolOptions po;
  bool verbose = false;
};

// A numeric flag within `check`, its default shown in --help.
template <typename T>
void AddNumber(CLI::App* app, const std::string& name, T& field, const std::string& help,
               const CLI::Validator& check) {
  app->add_option(name, field, help)->check(check)->capture_default_str();
}

// Every flag, bound to its field of *f (MessengerOptions one for one).
void AddFlags(CLI::App* app, ServerFlags* f) {
  app->set_version_flag("--version", "rpc-server " CROSSFREE_VERSION);
  app->add_option("--bind", f->bind, "Address to listen on, numeric IPv4 or IPv6 (e.g. ::1)")
      ->capture_default_str();
  AddNumber(app, "--port", f->port, "TCP port; 0 picks a free one", CLI::Range(0, 65535));
  AddNumber(app, "--reactors", f->o.num_reactors, "Reactor (event loop) threads",
            CLI::PositiveNumber);
  AddNumber(app, "--workers", f->po.num_workers, "Service-pool worker threads",
            CLI::PositiveNumber);
  AddNumber(app, "--queue_length", f->po.queue_length,
            "Calls waiting for a worker; beyond it ERROR_SERVER_TOO_BUSY",
            CLI::PositiveNumber);
  AddNumber(app, "--max_message_size", f->o.max_message_size,
            "Largest frame in bytes (prefix included); larger closes the connection",
            CLI::Range(size_t{64}, size_t{INT32_MAX}));
  AddNumber(app, "--max_calls_in_flight_per_connection",
            f->o.max_calls_in_flight_per_connection,
            "Calls per connection from request to written response; at the limit the "
            "socket is not read (0 = no limit)",
            CLI::NonNegativeNumber);
  app->add_option("--max_queued_response_bytes_per_connection",
                  f->o.max_queued_response_bytes_per_connection,
                  "Unwritten response bytes per connection; at the limit the socket is not read "
                  "(0 = no limit)")
      ->capture_default_str();
  app->add_option("--max_buffer_bytes", f->o.max_buffer_bytes,
                  "Receive buffers plus queued responses over all connections; a connection "
                  "whose buffer cannot grow stops reading (0 = no limit)")
      ->capture_default_str();
  AddNumber(app, "--frame_timeout_ms", f->o.frame_timeout_ms,
            "Close a connection whose current frame or connection header gets no byte "
            "for this long (0 = never)",
            CLI::NonNegativeNumber);
  AddNumber(app, "--idle_timeout_ms", f->o.idle_timeout_ms,
            "Close a connection with no call and no byte received for this long (0 = "
            "never)",
            CLI::NonNegativeNumber);
  AddNumber(app, "--max_connections", f->o.max_connections,
            "Open connections; one more is accepted and closed at once (0 = no limit)",
            CLI::NonNegativeNumber);
  AddNumber(app, "--accept_backoff_ms", f->o.accept_backoff_ms,
            "Pause of the acceptor after accept() fails (EMFILE, ENFILE, ENOBUFS)",
            CLI::NonNegativeNumber);
  AddNumber(app, "--deferred_threads", f->o.deferred_threads,
            "Threads for deferred handlers (Sleep deferred=true), started on demand",
            CLI::NonNegativeNumber);
  AddNumber(app, "--deferred_queue_length", f->o.deferred_queue_length,
            "Deferred tasks waiting; beyond it ERROR_SERVER_TOO_BUSY",
            CLI::NonNegativeNumber);
  AddNumber(app, "--shutdown_grace_ms", f->o.shutdown_grace_ms,
            "On SIGTERM/SIGINT, how long running calls may finish before they are "
            "cancelled",
            CLI::NonNegativeNumber);
  app->add_option("--inline_methods", f->po.inline_methods,
                  "Methods run on the reactor that read the request, which writes the "
                  "response too (no worker hand-off), e.g. Add,Echo. Only for handlers that "
                  "never block: Sleep (unless deferred) would stall the reactor")
      ->delimiter(',');
  app->add_flag("--connection_threads", f->o.connection_threads,
                "Serve each connection on its own thread with blocking I/O; every handler runs "
                "on it (no reactors, no workers). --max_connections must be > 0 (each "
                "connection is a thread)");
  app->add_flag("--verbose", f->verbose,
                "Also log informational lines (closed connections, ...)");
}

// Serves until SIGTERM or SIGINT, then shuts the messenger down.
int Serve(const ServerFlags& f) {
  using namespace crossfree::rpc;
  // Blocked in every thread (the messenger's threads inherit the mask), so
  // the signals wait for sigwait below instead of killing the process.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that closes early must not kill the server with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);

  std::shared_ptr<Messenger> messenger;
  Status s = Messenger::Create(f.o, &messenger);
  if (s.ok()) s = messenger->RegisterService(std::make_unique<test::CalculatorService>(), f.po);
  Sockaddr bound;
  if (s.ok()) s = messenger->StartAcceptor(f.bind, static_cast<uint16_t>(f.port), &bound);
  if (!s.ok()) {
    fprintf(stderr, "rpc-server: %s\n", s.ToString().c_str());
    return 1;
  }
  printf("listening on %s\n", bound.ToString().c_str());
  fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  fprintf(stderr, "rpc-server: got %s, shutting down\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  messenger->Shutdown();
  fprintf(stderr, "rpc-server: stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace crossfree::rpc;
  ServerFlags f;
  f.o.name = "rpc-server";
  f.po.num_workers = 2;

  CLI::App app{std::string("rpc-server: serves the example CalculatorService (crossfree.rpc.test."
                           "CalculatorService: Add, Echo, Sleep) over TCP. The first line on "
                           "stdout is 'listening on HOST:PORT'. SIGTERM or SIGINT shuts it down "
                           "gracefully: running calls get --shutdown_grace_ms to finish, then "
                           "they are cancelled; queued calls fail with "
                           "FATAL_SERVER_SHUTTING_DOWN.\n\n") +
               kNoSecurity};
  AddFlags(&app, &f);
  app.footer(kNoSecurity);
  CLI11_PARSE(app, argc, argv);
  if (f.verbose) SetMinLogLevel(LogLevel::kInfo);
  return Serve(f);
}
