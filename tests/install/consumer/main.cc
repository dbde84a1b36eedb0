// SPDX-License-Identifier: Apache-2.0
// Serves consumer.Greeter on 127.0.0.1 and calls Hello once through the
// generated proxy; prints the greeting. Exit 0 on success.
#include <cstdio>
#include <memory>
#include <string>

#include <crossfree/format/trace_reader.h>
#include <crossfree/rpc/messenger.h>
#include <crossfree/rpc/rpc_controller.h>

#include "greeter.crpc.h"

namespace {

using namespace crossfree::rpc;

class Greeter : public consumer::GreeterIf {
 public:
  void Hello(const consumer::HelloRequestPB* req, consumer::HelloResponsePB* resp,
             RpcContext* context) override {
    resp->set_greeting("hello, " + req->name());
    context->RespondSuccess();
  }
};

int Fail(const char* what, const Status& s) {
  fprintf(stderr, "greeter: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main() {
  // The trace reader links too: an empty buffer is not a trace.
  std::string error;
  if (crossfree::format::TraceReader::FromBytes({}, "empty", &error) != nullptr) return 1;

  MessengerOptions options;
  options.num_reactors = 1;
  std::shared_ptr<Messenger> server, client;
  Status s = Messenger::Create(options, &server);
  if (!s.ok()) return Fail("server messenger", s);
  s = server->RegisterService(std::make_unique<Greeter>(), ServicePoolOptions{});
  if (!s.ok()) return Fail("register", s);
  Sockaddr bound;
  s = server->StartAcceptor("127.0.0.1", 0, &bound);
  if (!s.ok()) return Fail("listen", s);
  s = Messenger::Create(options, &client);
  if (!s.ok()) return Fail("client messenger", s);

  consumer::GreeterProxy proxy(client, bound);
  consumer::HelloRequestPB req;
  req.set_name("consumer");
  consumer::HelloResponsePB resp;
  RpcController controller;
  s = proxy.Hello(req, &resp, &controller);
  if (!s.ok()) return Fail("Hello", s);
  printf("%s\n", resp.greeting().c_str());
  client->Shutdown();
  server->Shutdown();
  return resp.greeting() == "hello, consumer" ? 0 : 1;
}
