// SPDX-License-Identifier: Apache-2.0
#pragma once
// Who may say who the client is on `listen`: trusted balancers and the PROXY protocol.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::config {

// An IPv4 or IPv6 network (listen.trusted_proxies): "10.0.0.0/8", "::1/128"; a bare address is
// its /32 or /128. Addresses are held as 16 bytes, IPv4 ones IPv4-mapped (::ffff:a.b.c.d, prefix
// + 96), so an IPv4 peer that reached a dual-stack socket matches the IPv4 networks.
using ip_bytes = std::array<unsigned char, 16>;
struct cidr {
    ip_bytes network{};
    unsigned prefix = 0; // leading bits of the 128 that must match
    bool contains(const ip_bytes& address) const noexcept;
    friend bool operator==(const cidr&, const cidr&) = default;
};
// An IPv4 or IPv6 address (no brackets, no zone), as 16 bytes; nullopt if it is not one.
std::optional<ip_bytes> parse_ip(std::string_view text);
// "10.0.0.0/8"; nullopt with `problem` set if malformed (host bits set included).
std::optional<cidr> parse_cidr(std::string_view text, std::string* problem = nullptr);
std::string cidr_text(const cidr& c);
bool contains_address(const std::vector<cidr>& networks, const ip_bytes& address) noexcept;

// Who may say who the client is on `listen` (its map form). A peer inside trusted_proxies is a
// balancer: its X-Forwarded-For or Forwarded name the client, and with proxy_protocol so does
// the PROXY header that must open each of its connections.
struct listen_proxy_config {
    std::vector<cidr> trusted_proxies;
    bool proxy_protocol = false; // a PROXY header (v1 or v2) opens every connection
    friend bool operator==(const listen_proxy_config&, const listen_proxy_config&) = default;
};

} // namespace idemgate::config
