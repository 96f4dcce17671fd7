// SPDX-License-Identifier: Apache-2.0
// IPv4 and IPv6 networks (listen.trusted_proxies) and the addresses they contain.
#include <arpa/inet.h>
#include <charconv>
#include <cstring>
#include <idemgate/config/config.hpp>
#include <netinet/in.h>
#include <string>

namespace idemgate::config {

namespace {

constexpr unsigned mapped_bits = 96; // ::ffff:0:0/96 holds the IPv4 addresses

bool is_mapped_v4(const ip_bytes& a) noexcept
{
    static constexpr unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(a.data(), prefix, sizeof prefix) == 0;
}

} // namespace

std::optional<ip_bytes> parse_ip(std::string_view text)
{
    // inet_pton: dotted quads only (no octal or short forms) for IPv4, RFC 4291 text for IPv6.
    char buffer[INET6_ADDRSTRLEN];
    if (text.empty() || text.size() >= sizeof buffer)
        return std::nullopt;
    std::memcpy(buffer, text.data(), text.size());
    buffer[text.size()] = '\0';
    ip_bytes out{};
    if (text.find(':') == std::string_view::npos) {
        in_addr v4{};
        if (inet_pton(AF_INET, buffer, &v4) != 1)
            return std::nullopt;
        out[10] = out[11] = 0xff;
        std::memcpy(out.data() + 12, &v4, 4);
        return out;
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, buffer, &v6) != 1)
        return std::nullopt;
    std::memcpy(out.data(), &v6, 16);
    return out;
}

bool cidr::contains(const ip_bytes& address) const noexcept
{
    const unsigned whole = prefix / 8, rest = prefix % 8;
    if (std::memcmp(address.data(), network.data(), whole) != 0)
        return false;
    if (rest == 0)
        return true;
    const auto mask = static_cast<unsigned char>(0xff << (8 - rest));
    return (address[whole] & mask) == network[whole];
}

std::optional<cidr> parse_cidr(std::string_view text, std::string* problem)
{
    auto fail = [&](const std::string& why) -> std::optional<cidr> {
        if (problem)
            *problem = std::string("\"").append(text).append("\" ").append(why); // not "x" + s: GCC 12 warns
        return std::nullopt;
    };
    const auto slash = text.find('/');
    auto address = parse_ip(text.substr(0, slash));
    if (!address)
        return fail("is not a network (an IPv4 or IPv6 address with a /prefix, e.g. 10.0.0.0/8 or ::1/128)");
    const bool v4 = text.substr(0, slash).find(':') == std::string_view::npos;
    const unsigned max = v4 ? 32 : 128;
    unsigned prefix = max;
    if (slash != std::string_view::npos) {
        auto digits = text.substr(slash + 1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
        if (digits.empty() || digits.size() > 3 || ec != std::errc{} ||
            end != digits.data() + digits.size() || prefix > max)
            return fail("has no valid prefix length (0 to " + std::to_string(max) + " after the /)");
    }
    cidr out;
    out.network = *address;
    out.prefix = prefix + (v4 ? mapped_bits : 0);
    // Bits past the prefix must be zero: "10.0.0.1/8" is more likely a typo than 10.0.0.0/8.
    ip_bytes masked = out.network;
    for (unsigned bit = out.prefix; bit < 128; ++bit)
        masked[bit / 8] &= static_cast<unsigned char>(~(0x80u >> (bit % 8)));
    if (masked != out.network) {
        out.network = masked;
        return fail("has bits set past its prefix length (did you mean " + cidr_text(out) + "?)");
    }
    return out;
}

std::string cidr_text(const cidr& c)
{
    char buffer[INET6_ADDRSTRLEN] = {};
    if (is_mapped_v4(c.network) && c.prefix >= mapped_bits) {
        inet_ntop(AF_INET, c.network.data() + 12, buffer, sizeof buffer);
        return std::string(buffer) + "/" + std::to_string(c.prefix - mapped_bits);
    }
    inet_ntop(AF_INET6, c.network.data(), buffer, sizeof buffer);
    return std::string(buffer) + "/" + std::to_string(c.prefix);
}

bool contains_address(const std::vector<cidr>& networks, const ip_bytes& address) noexcept
{
    for (const auto& n : networks)
        if (n.contains(address))
            return true;
    return false;
}

} // namespace idemgate::config
