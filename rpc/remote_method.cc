// SPDX-License-Identifier: Apache-2.0
// RemoteMethod: encodes the header field once, where the codec is known.
#include "rpc/remote_method.h"

#include <utility>

#include "rpc/header_codec.h"

namespace crossfree::rpc {

RemoteMethod::RemoteMethod(std::string service, std::string method)
    : service_name(std::move(service)),
      method_name(std::move(method)),
      remote_method_field(EncodeRemoteMethodField(service_name, method_name)) {}

}  // namespace crossfree::rpc
