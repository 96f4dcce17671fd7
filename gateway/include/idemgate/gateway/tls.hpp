// SPDX-License-Identifier: Apache-2.0
#pragma once
// TLS on both HTTP hops: what --check and start-up verify with OpenSSL itself.
#include <idemgate/config/config.hpp>
#include <string>
#include <vector>

namespace idemgate::gateway {

// Loads every certificate, key and CA file named under `tls` and `upstreams.<name>.tls` the
// way the gateway will, and returns one problem per line naming the key path (a file that is
// not PEM, a key that is not the certificate's, ...). Empty when all of it loads.
std::vector<std::string> check_tls_config(const config::config& cfg);

} // namespace idemgate::gateway
