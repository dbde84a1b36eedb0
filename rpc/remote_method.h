// SPDX-License-Identifier: Apache-2.0
// RemoteMethod: the name of one method of one service, as a proxy calls it.
#pragma once

#include <string>

namespace crossfree::rpc {

// Generated proxies hold static instances. Immutable: the encoded header
// field is computed from the names once (remote_method.cc). Any thread.
struct RemoteMethod {
  RemoteMethod(std::string service, std::string method);
  const std::string service_name;
  const std::string method_name;
  // The RequestHeader's remote_method field as sent (header_codec.h): every
  // request copies these bytes instead of encoding the names again.
  const std::string remote_method_field;
};

}  // namespace crossfree::rpc
