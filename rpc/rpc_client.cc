// SPDX-License-Identifier: Apache-2.0
// rpc-client: calls one method of a crossfree RPC server from the command
// line, with the request in protobuf text format, and prints the response.
// Knows the services compiled into it (the example CalculatorService).
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "crossfree_version.h"
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/message.h>
#include <google/protobuf/text_format.h>

#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_test_service.pb.h"

namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::Message;
using google::protobuf::MessageFactory;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;

// Collects the text-format parser's complaints into one message.
class ParseErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    // line < 0: about the whole message (missing required fields).
    if (line >= 0) {
      text += "line " + std::to_string(line + 1) + " column " + std::to_string(column + 1) + ": ";
    }
    text += message + "\n";
  }
  std::string text;
};

const ServiceDescriptor* FindService(const std::string& name) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  if (const ServiceDescriptor* s = pool->FindServiceByName(name)) return s;
  // Short names of the services compiled in.
  return pool->FindServiceByName("crossfree.rpc.test." + name);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace crossfree::rpc;
  // Links the example service's descriptors into the generated pool.
  (void)test::AddRequestPB::descriptor();

  std::string server = "127.0.0.1:0";
  std::string service_name, method_name, request_text;
  int timeout_ms = 10000;
  CLI::App app{
      "rpc-client: calls SERVICE.METHOD on a crossfree RPC server with REQUEST in protobuf "
      "text format and prints the response in text format. Example:\n"
      "  rpc-client --server 127.0.0.1:7070 CalculatorService Add 'x: 7 y: 35'\n"
      "Exit status: 0 on success, 1 when the call fails (the status goes to stderr), 2 on bad "
      "arguments.\n\n"
      "SECURITY: the crossfree RPC core has NO authentication and NO encryption: the request "
      "and the response travel in clear text."};
  app.set_version_flag("--version", "rpc-client " CROSSFREE_VERSION);
  app.add_option("--server", server, "HOST:PORT of the server; IPv6 as [::1]:PORT")->required();
  app.add_option("--timeout_ms", timeout_ms, "Call timeout (0 = none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("service", service_name,
                 "Service, full (crossfree.rpc.test.CalculatorService) or short "
                 "(CalculatorService)")
      ->required();
  app.add_option("method", method_name, "Method of the service, e.g. Add")->required();
  app.add_option("request", request_text, "Request message in protobuf text format")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const ServiceDescriptor* svc = FindService(service_name);
  if (svc == nullptr) {
    fprintf(stderr, "rpc-client: unknown service '%s' (this client knows "
                    "crossfree.rpc.test.CalculatorService)\n", service_name.c_str());
    return 2;
  }
  const MethodDescriptor* method = svc->FindMethodByName(method_name);
  if (method == nullptr) {
    std::string known;
    for (int i = 0; i < svc->method_count(); ++i) known += " " + svc->method(i)->name();
    fprintf(stderr, "rpc-client: %s has no method '%s'; it has:%s\n", svc->full_name().c_str(),
            method_name.c_str(), known.c_str());
    return 2;
  }
  MessageFactory* factory = MessageFactory::generated_factory();
  std::unique_ptr<Message> req(factory->GetPrototype(method->input_type())->New());
  std::unique_ptr<Message> resp(factory->GetPrototype(method->output_type())->New());
  google::protobuf::TextFormat::Parser parser;
  ParseErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(request_text, req.get())) {
    fprintf(stderr, "rpc-client: bad %s: %s", method->input_type()->full_name().c_str(),
            errors.text.c_str());
    return 2;
  }
  if (!req->IsInitialized()) {
    fprintf(stderr, "rpc-client: %s is missing required fields: %s\n",
            method->input_type()->full_name().c_str(), req->InitializationErrorString().c_str());
    return 2;
  }
  Sockaddr addr;
  Status s = Sockaddr::ParseHostPort(server, &addr);
  if (!s.ok()) {
    fprintf(stderr, "rpc-client: --server: %s\n", s.ToString().c_str());
    return 2;
  }

  MessengerOptions mo;
  mo.name = "rpc-client";
  mo.num_reactors = 1;
  mo.reactor_prefix = "cli-reactor";
  std::shared_ptr<Messenger> messenger;
  s = Messenger::Create(mo, &messenger);
  if (!s.ok()) {
    fprintf(stderr, "rpc-client: %s\n", s.ToString().c_str());
    return 1;
  }
  Proxy proxy(messenger, addr);
  RemoteMethod remote{svc->full_name(), method->name()};
  RpcController controller;
  controller.set_timeout(std::chrono::milliseconds(timeout_ms));
  s = proxy.SyncRequest(remote, *req, resp.get(), &controller);
  int rc = 0;
  if (s.ok()) {
    std::string out;
    google::protobuf::TextFormat::PrintToString(*resp, &out);
    fputs(out.c_str(), stdout);
  } else {
    std::string code;
    if (const ErrorStatusPB* err = controller.error_response(); err != nullptr && err->has_code()) {
      code = std::string(" [") + ErrorStatusPB::RpcErrorCodePB_Name(err->code()) + "]";
    }
    fprintf(stderr, "rpc-client: %s.%s failed: %s%s\n", svc->full_name().c_str(),
            method->name().c_str(), s.ToString().c_str(), code.c_str());
    rc = 1;
  }
  messenger->Shutdown();
  return rc;
}
