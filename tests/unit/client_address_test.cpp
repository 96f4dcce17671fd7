// SPDX-License-Identifier: Apache-2.0
// The client behind balancers: networks (listen.trusted_proxies), X-Forwarded-For and Forwarded
// hops, the walk from the right, and the config keys that set it up.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <idemgate/gateway/client_address.hpp>
#include <string>
#include <vector>

using namespace config_test;
using idemgate::gateway::forwarded_client;
using idemgate::gateway::forwarded_hops;
using idemgate::gateway::x_forwarded_for_hops;

namespace {

std::vector<cfg::cidr> networks(std::initializer_list<const char*> texts)
{
    std::vector<cfg::cidr> out;
    for (const auto* t : texts) {
        auto n = cfg::parse_cidr(t);
        REQUIRE_MESSAGE(n, t);
        out.push_back(*n);
    }
    return out;
}

bool inside(const std::vector<cfg::cidr>& nets, const char* address)
{
    auto bytes = cfg::parse_ip(address);
    REQUIRE_MESSAGE(bytes, address);
    return cfg::contains_address(nets, *bytes);
}

// The client X-Forwarded-For `fields` name behind `trusted` ("" = the peer's address stays).
std::string via_xff(std::vector<std::string_view> fields, const std::vector<cfg::cidr>& trusted)
{
    return forwarded_client(fields, {}, trusted).value_or("");
}

std::string via_forwarded(std::vector<std::string_view> fields, const std::vector<cfg::cidr>& trusted)
{
    return forwarded_client({}, fields, trusted).value_or("");
}

} // namespace

TEST_CASE("a network contains the addresses under its prefix, IPv4 and IPv6")
{
    const auto nets =
        networks({"10.0.0.0/8", "192.168.1.128/25", "127.0.0.1/32", "::1/128", "2001:db8::/32"});
    CHECK(inside(nets, "10.0.0.1"));
    CHECK(inside(nets, "10.255.255.255"));
    CHECK_FALSE(inside(nets, "11.0.0.1"));
    CHECK(inside(nets, "192.168.1.128"));
    CHECK(inside(nets, "192.168.1.255"));
    CHECK_FALSE(inside(nets, "192.168.1.127"));
    CHECK(inside(nets, "127.0.0.1"));
    CHECK_FALSE(inside(nets, "127.0.0.2"));
    CHECK(inside(nets, "::1"));
    CHECK_FALSE(inside(nets, "::2"));
    CHECK(inside(nets, "2001:db8:ffff::1"));
    CHECK_FALSE(inside(nets, "2001:db9::1"));
    // An IPv4 peer on a dual-stack socket is IPv4-mapped: the IPv4 networks hold it.
    CHECK(inside(nets, "::ffff:10.1.2.3"));
    CHECK_FALSE(inside(nets, "::ffff:11.1.2.3"));
    // /0 holds everything of its family; a bare address is its /32 or /128.
    CHECK(inside(networks({"0.0.0.0/0"}), "203.0.113.9"));
    CHECK_FALSE(inside(networks({"0.0.0.0/0"}), "2001:db8::1"));
    CHECK(inside(networks({"::/0"}), "2001:db8::1"));
    CHECK(inside(networks({"203.0.113.9"}), "203.0.113.9"));
    CHECK_FALSE(inside({}, "127.0.0.1"));
    CHECK(cfg::cidr_text(*cfg::parse_cidr("10.0.0.0/8")) == "10.0.0.0/8");
    CHECK(cfg::cidr_text(*cfg::parse_cidr("2001:DB8::/32")) == "2001:db8::/32");
    CHECK(cfg::cidr_text(*cfg::parse_cidr("::1")) == "::1/128");
}

TEST_CASE("a malformed network is refused with the reason")
{
    for (const char* bad :
         {"", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.0.0/8", "010.0.0.0/8", "10.0.0.0/8x", "10.0.0.0/-1",
          "host.example/8", "[::1]/128", "fe80::1%eth0/64", "10.0.0.0/8/8"}) {
        std::string why;
        CHECK_MESSAGE(!cfg::parse_cidr(bad, &why), bad);
        CHECK_MESSAGE(!why.empty(), bad);
    }
    std::string why;
    CHECK_FALSE(cfg::parse_cidr("192.168.1.1/24", &why));
    CHECK(why == "\"192.168.1.1/24\" has bits set past its prefix length (did you mean 192.168.1.0/24?)");
}

TEST_CASE("X-Forwarded-For: the rightmost untrusted hop, skipping trusted ones")
{
    const auto trusted = networks({"10.0.0.0/8", "127.0.0.1/32", "::1/128"});
    CHECK(via_xff({"203.0.113.7"}, trusted) == "203.0.113.7");
    CHECK(via_xff({"203.0.113.7, 10.0.0.2"}, trusted) == "203.0.113.7");
    // A client's own (spoofed) hops to the left of the real one are never reached.
    CHECK(via_xff({"1.1.1.1, 203.0.113.7, 10.0.0.2, 10.0.0.3"}, trusted) == "203.0.113.7");
    // Every hop trusted: the leftmost.
    CHECK(via_xff({"10.0.0.9, 10.0.0.2"}, trusted) == "10.0.0.9");
    // Several fields are one list, in order.
    CHECK(via_xff({"1.1.1.1, 203.0.113.7", "10.0.0.2"}, trusted) == "203.0.113.7");
    CHECK(via_xff({"203.0.113.7", "198.51.100.1"}, trusted) == "198.51.100.1");
    // Ports, brackets, IPv6 (normalized), empty elements, spaces.
    CHECK(via_xff({"203.0.113.7:5555"}, trusted) == "203.0.113.7");
    CHECK(via_xff({"[2001:DB8::1]:443, ::1"}, trusted) == "2001:db8::1");
    CHECK(via_xff({"2001:db8::1"}, trusted) == "2001:db8::1");
    CHECK(via_xff({" ,203.0.113.7 ,, 10.0.0.2 "}, trusted) == "203.0.113.7");
    // The walk ends on "unknown": not an address, the peer's stays.
    CHECK(via_xff({"203.0.113.7, unknown, 10.0.0.2"}, trusted).empty());
    CHECK(via_xff({"unknown, 10.0.0.2"}, trusted).empty());
    // Malformed: the peer's address stays, whatever else the header holds.
    for (std::string_view bad : {"garbage", "203.0.113.7, not-an-ip", "1.2.3", "1.2.3.4:port", "[::1",
                                 "[1.2.3.4]", "1.2.3.4:99999999", "::1]:80", "203.0.113.7 10.0.0.2"})
        CHECK_MESSAGE(via_xff({bad}, trusted).empty(), bad);
    CHECK(via_xff({""}, trusted).empty());
    CHECK(x_forwarded_for_hops(std::vector<std::string_view>{"1.2.3.4, 5.6.7.8"})->size() == 2);
}

TEST_CASE("Forwarded: for= of each element, quoted IPv6, obfuscated and unknown identifiers")
{
    const auto trusted = networks({"10.0.0.0/8", "::1/128"});
    CHECK(via_forwarded({"for=203.0.113.7"}, trusted) == "203.0.113.7");
    CHECK(via_forwarded({"for=203.0.113.7;proto=https, for=10.0.0.2"}, trusted) == "203.0.113.7");
    CHECK(via_forwarded({"FOR=\"203.0.113.7:4711\";by=10.0.0.2"}, trusted) == "203.0.113.7");
    CHECK(via_forwarded({"for=\"[2001:db8:cafe::17]:4711\""}, trusted) == "2001:db8:cafe::17");
    CHECK(via_forwarded({"for=\"[2001:db8:cafe::17]\", for=\"[::1]:80\""}, trusted) == "2001:db8:cafe::17");
    CHECK(via_forwarded({"for=192.0.2.43, for=198.51.100.17", "for=10.0.0.1"}, trusted) == "198.51.100.17");
    CHECK(via_forwarded({"proto=https;for=192.0.2.43;host=example.com"}, trusted) == "192.0.2.43");
    // Every hop trusted: the leftmost.
    CHECK(via_forwarded({"for=10.1.1.1, for=10.0.0.2"}, trusted) == "10.1.1.1");
    // Identifiers that are not addresses end the walk: the peer's address stays.
    CHECK(via_forwarded({"for=unknown"}, trusted).empty());
    CHECK(via_forwarded({"for=_hidden, for=10.0.0.2"}, trusted).empty());
    CHECK(via_forwarded({"for=\"_hidden:_port\""}, trusted).empty());
    CHECK(via_forwarded({"for=192.0.2.43, proto=https"}, trusted).empty()); // an element without for=
    // ... but only when the walk reaches them.
    CHECK(via_forwarded({"for=_hidden, for=192.0.2.43"}, trusted) == "192.0.2.43");
    // Malformed: the peer's address stays.
    for (std::string_view bad : {"for=", "for", "for=[2001:db8::1]", "for=\"[2001:db8::1]:80",
                                 "for=203.0.113.7 junk", "=x", "for=\"203.0.113.7\";for=\"10.0.0.2\"",
                                 "for=not-an-address", "for=\"[::1]:port\"", "for=\"a\x01\""})
        CHECK_MESSAGE(via_forwarded({bad}, trusted).empty(), bad);
    CHECK(forwarded_hops(std::vector<std::string_view>{"for=1.2.3.4,for=unknown;proto=http"})->size() == 2);
}

TEST_CASE("X-Forwarded-For wins over Forwarded when both came")
{
    const auto trusted = networks({"10.0.0.0/8"});
    const std::vector<std::string_view> xff{"198.51.100.1, 10.0.0.2"};
    const std::vector<std::string_view> fwd{"for=203.0.113.7"};
    CHECK(forwarded_client(xff, fwd, trusted) == "198.51.100.1");
    CHECK(forwarded_client({}, fwd, trusted) == "203.0.113.7");
    // A malformed X-Forwarded-For is not replaced by Forwarded: the peer's address stays.
    const std::vector<std::string_view> bad{"garbage"};
    CHECK_FALSE(forwarded_client(bad, fwd, trusted));
}

TEST_CASE("listen takes a map with trusted_proxies and proxy_protocol")
{
    auto c = cfg::parse(minimal + "listen:\n  address: \"0.0.0.0:8443\"\n  trusted_proxies: [10.0.0.0/8, "
                                  "\"::1/128\", 127.0.0.1]\n  proxy_protocol: true\n",
                        no_env);
    CHECK(c.listen.port == 8443);
    REQUIRE(c.listen_proxy.trusted_proxies.size() == 3);
    CHECK(cfg::cidr_text(c.listen_proxy.trusted_proxies[2]) == "127.0.0.1/32");
    CHECK(c.listen_proxy.proxy_protocol);
    auto plain = cfg::parse(minimal + "listen: \"127.0.0.1:9000\"\n", no_env);
    CHECK(plain.listen.port == 9000);
    CHECK(plain.listen_proxy.trusted_proxies.empty());
    CHECK_FALSE(plain.listen_proxy.proxy_protocol);
    CHECK(joined(problems_of(minimal + "listen:\n  trusted_proxies: 10.0.0.0/8\n")) ==
          "listen.trusted_proxies: expected a list of networks (e.g. [10.0.0.0/8, ::1/128]), got a scalar");
    CHECK(joined(problems_of(minimal + "listen:\n  trusted_proxies: [10.0.0.0/8, \"::1/200\"]\n")) ==
          "listen.trusted_proxies[1]: \"::1/200\" has no valid prefix length (0 to 128 after the /)");
}
