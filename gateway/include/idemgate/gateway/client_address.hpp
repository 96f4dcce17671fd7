// SPDX-License-Identifier: Apache-2.0
#pragma once
// The client's address behind balancers: from X-Forwarded-For or Forwarded (RFC 7239), sent by
// a peer inside listen.trusted_proxies. The hops are walked from the right, skipping trusted
// ones: the client is the rightmost hop that is not trusted (nginx's real_ip_recursive on,
// Envoy's trusted hops), the leftmost when every hop is trusted. Pure functions, for the codecs
// and the tests alike.
#include <idemgate/config/config.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway {

// One hop a forwarded header names: an address, or an identifier that is not one (RFC 7239's
// "unknown" and obfuscated "_names", a squid's "unknown" in X-Forwarded-For).
struct forwarded_hop {
    std::string address; // normalized text ("" when not an address)
    config::ip_bytes bytes{};
};

// The hops of X-Forwarded-For field values (several fields in order, as one list); nullopt
// when one is malformed (then the peer's address is kept). "1.2.3.4", "1.2.3.4:80", "2001:db8::1",
// "[2001:db8::1]:80" and "unknown" are hops; empty list elements are skipped.
std::optional<std::vector<forwarded_hop>> x_forwarded_for_hops(std::span<const std::string_view> fields);
// The hops of Forwarded field values: each element's for= parameter (a token or quoted-string:
// "192.0.2.60", "\"[2001:db8::1]:4711\"", unknown, _hidden); an element without for= is a hop
// that is not an address. nullopt when malformed.
std::optional<std::vector<forwarded_hop>> forwarded_hops(std::span<const std::string_view> fields);

// The client among `hops` (left = farthest), or nullopt when the walk ends on a hop that is not
// an address (then the peer's address is kept) or there are none.
std::optional<std::string> client_from_hops(const std::vector<forwarded_hop>& hops,
                                            const std::vector<config::cidr>& trusted);

// X-Forwarded-For wins over Forwarded when a request carries both: the balancers that stand in
// front of gateways (AWS ALB, Google's, nginx, HAProxy's forwardfor, Envoy) append the client to
// X-Forwarded-For and pass a client's own Forwarded through untouched, so believing Forwarded
// first would let any client behind them choose its address. Forwarded is read when no
// X-Forwarded-For field came. The client address, or nullopt: keep the peer's.
std::optional<std::string> forwarded_client(std::span<const std::string_view> x_forwarded_for,
                                            std::span<const std::string_view> forwarded,
                                            const std::vector<config::cidr>& trusted);

} // namespace idemgate::gateway
