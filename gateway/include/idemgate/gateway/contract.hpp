// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency contract the gateway publishes (idemgate --contract, GET
// /.well-known/idempotency): an OpenAPI 3.1 document, meant to be merged into the API's own, with
// for every guarded route and method the key parameter and its format, the response headers the
// gateway adds, the problem answers it gives with their types, and the route's policy under
// `x-idempotency`.
#include <idemgate/config/config.hpp>
#include <string>

namespace idemgate::gateway {

// The document as JSON text.
std::string contract_json(const config::config& cfg);

} // namespace idemgate::gateway
