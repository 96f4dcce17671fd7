// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the runner does around a run: resolve the target, try one connection before the first
// phase, and read the gateway's counters once they have caught up with the answers received.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <idemgate/loadtest/gateway_metrics.hpp>
#include <idemgate/loadtest/options.hpp>
#include <optional>
#include <string>

namespace idemgate::loadtest::detail {

// The target's addresses; throws run_error when the name does not resolve.
boost::asio::ip::tcp::resolver::results_type resolve(const target_url& url);

// One connection before the run: a target that refuses is a usage problem, not a failed check
// (throws run_error).
void probe(const options& o, const boost::asio::ip::tcp::resolver::results_type& endpoints,
           boost::asio::ssl::context* tls);

// Reads the metrics after the run. The gateway counts a request after writing its answer, so
// the last answers can reach us before they are counted: read until the gateway has counted at
// least as many requests as we received answers (bounded).
std::optional<gateway_counters> settled_metrics(const options& o, const gateway_counters& before,
                                                std::uint64_t answers, std::string& error);

} // namespace idemgate::loadtest::detail
