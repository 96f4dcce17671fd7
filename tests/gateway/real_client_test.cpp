// SPDX-License-Identifier: Apache-2.0
// The client behind a balancer (listen.trusted_proxies, listen.proxy_protocol): what the access
// line calls the client, and the X-Forwarded-For the upstream receives, for forwarded headers
// from trusted and untrusted peers, PROXY headers v1 and v2 (whole, split, broken, from the wrong
// peer), over HTTP/1.1, h2c and h2 over TLS. None of it depends on the store.
#include "gateway_fixture.hpp"
#include "idemgate/test/tls.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

gateway_options behind(const std::string& listen, const std::string& top_level = {})
{
    gateway_options o;
    o.top_level = "listen:\n  address: \"${LISTEN}\"\n" + listen + top_level;
    return o;
}

// The access line of the request `id`: {client, peer} ("" for a field it does not have).
std::pair<std::string, std::string> access_client(gateway_fixture& f, const std::string& id)
{
    auto line = f.process().wait_for_line(
        [&](const std::string& l) {
            return l.find("\"msg\":\"access\"") != std::string::npos &&
                   l.find("\"request_id\":\"" + id + "\"") != std::string::npos;
        },
        5s);
    REQUIRE_MESSAGE(line, "no access line for " << id << "\n" << f.process().output());
    auto obj = parse_object(*line);
    auto text = [&](const char* name) {
        auto* v = obj.if_contains(name);
        return v && v->is_string() ? std::string(v->as_string()) : std::string();
    };
    return {text("client"), text("peer")};
}

// The X-Forwarded-For line of a head the upstream echoed ("" when none).
std::string forwarded_for(const std::string& head)
{
    const std::string name = "\r\nX-Forwarded-For: ";
    auto at = head.find(name);
    if (at == std::string::npos)
        return {};
    at += name.size();
    return head.substr(at, head.find("\r\n", at) - at);
}

// An echoed plain request, with `fields` ("Name: value\r\n" lines), under the request ID `id`.
std::string echo_request(const std::string& id, const std::string& fields = {})
{
    return "GET /plain/echo HTTP/1.1\r\nHost: orders.example\r\nX-Test-Echo-Head: 1\r\nX-Request-Id: " + id +
           "\r\n" + fields + "\r\n";
}

// Sends `bytes` on a new connection and reads one answer: the X-Forwarded-For the upstream got.
std::string upstream_xff(std::uint16_t port, const std::string& bytes)
{
    http_connection c(port, io_timeout);
    c.send_raw(bytes);
    auto res = c.read_response();
    REQUIRE(res.status == 201);
    return forwarded_for(res.body);
}

std::string v2_header(unsigned char command, unsigned char family, const std::string& block)
{
    std::string out("\r\n\r\n\0\r\nQUIT\n", 12);
    out.push_back(static_cast<char>(command));
    out.push_back(static_cast<char>(family));
    out.push_back(static_cast<char>(block.size() >> 8));
    out.push_back(static_cast<char>(block.size() & 0xff));
    return out + block;
}

std::string v2_ipv4(std::initializer_list<int> source)
{
    std::string block;
    for (int b : source)
        block.push_back(static_cast<char>(b));
    block += std::string("\x7f\0\0\x01\x15\xb3\x00\x50", 8); // to 127.0.0.1, ports 5555 and 80
    return v2_header(0x21, 0x11, block);
}

std::pair<int, std::vector<std::string>> run_curl(std::vector<std::string> args)
{
    child_process curl("/usr/bin/curl", std::move(args));
    auto status = curl.wait_exit(15s);
    return {status.value_or(-1), curl.lines()};
}

double refused(gateway_fixture& f, const char* reason)
{
    return metric(f.gateway->admin_port(),
                  std::string("idemgate_proxy_protocol_refused_total{reason=\"") + reason + "\"}");
}

} // namespace

TEST_SUITE_BEGIN("real_client");

TEST_CASE("forwarded headers from a trusted peer name the client: rightmost untrusted hop" *
          needs_store("memory"))
{
    gateway_fixture f(behind("  trusted_proxies: [127.0.0.1/32, 10.0.0.0/8, \"::1/128\"]\n"));
    // The client's own hop on the left is never reached; trusted hops on the right are skipped.
    CHECK(upstream_xff(f.port(),
                       echo_request("rc-xff", "X-Forwarded-For: 198.51.100.1, 203.0.113.7, 10.0.0.2\r\n")) ==
          "198.51.100.1, 203.0.113.7, 10.0.0.2, 127.0.0.1");
    CHECK(access_client(f, "rc-xff") == std::pair<std::string, std::string>{"203.0.113.7", "127.0.0.1"});
    // Several X-Forwarded-For fields are one list, all of it passed on.
    CHECK(upstream_xff(f.port(), echo_request("rc-two", "X-Forwarded-For: 203.0.113.9\r\n"
                                                        "X-Forwarded-For: 10.0.0.3\r\n")) ==
          "203.0.113.9, 10.0.0.3, 127.0.0.1");
    CHECK(access_client(f, "rc-two").first == "203.0.113.9");
    // Every hop trusted: the leftmost.
    upstream_xff(f.port(), echo_request("rc-all", "X-Forwarded-For: 10.9.9.9, 10.0.0.2\r\n"));
    CHECK(access_client(f, "rc-all").first == "10.9.9.9");
    // Forwarded (RFC 7239): a quoted IPv6 node with a port.
    upstream_xff(f.port(), echo_request("rc-fwd", "Forwarded: for=\"[2001:db8:cafe::17]:4711\";proto=https, "
                                                  "for=10.0.0.2\r\n"));
    CHECK(access_client(f, "rc-fwd").first == "2001:db8:cafe::17");
    // An obfuscated node: not an address, the peer stays the client.
    upstream_xff(f.port(), echo_request("rc-hidden", "Forwarded: for=_hidden, for=10.0.0.2\r\n"));
    CHECK(access_client(f, "rc-hidden") == std::pair<std::string, std::string>{"127.0.0.1", ""});
    // Both: X-Forwarded-For wins.
    upstream_xff(f.port(), echo_request("rc-both", "Forwarded: for=192.0.2.1\r\n"
                                                   "X-Forwarded-For: 198.51.100.2\r\n"));
    CHECK(access_client(f, "rc-both").first == "198.51.100.2");
    // Malformed: the peer's address, and the request served all the same.
    CHECK(
        upstream_xff(f.port(), echo_request("rc-bad", "X-Forwarded-For: 203.0.113.7, not-an-address\r\n")) ==
        "203.0.113.7, not-an-address, 127.0.0.1");
    CHECK(access_client(f, "rc-bad").first == "127.0.0.1");
    upstream_xff(f.port(), echo_request("rc-badfwd", "Forwarded: for=\"[2001:db8::1\r\n"));
    CHECK(access_client(f, "rc-badfwd").first == "127.0.0.1");
}

TEST_CASE("forwarded headers from an untrusted peer are ignored: a client cannot choose its address" *
          needs_store("memory"))
{
    gateway_fixture f(behind("  trusted_proxies: [10.0.0.0/8]\n"));
    CHECK(upstream_xff(f.port(), echo_request("rc-spoof", "X-Forwarded-For: 203.0.113.7\r\n")) ==
          "203.0.113.7, 127.0.0.1");
    CHECK(access_client(f, "rc-spoof") == std::pair<std::string, std::string>{"127.0.0.1", ""});
    upstream_xff(f.port(), echo_request("rc-spoof-fwd", "Forwarded: for=203.0.113.7\r\n"));
    CHECK(access_client(f, "rc-spoof-fwd").first == "127.0.0.1");
    // h2c: the same.
}

TEST_CASE("PROXY v1 and v2 from a trusted balancer: the header's source is the client" *
          needs_store("memory"))
{
    gateway_fixture f(
        behind("  trusted_proxies: [127.0.0.1/32]\n  proxy_protocol: true\n", "http2:\n  cleartext: true\n"));
    // v1, the request in the same segment: the bytes after the header are HTTP's.
    CHECK(upstream_xff(f.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n" + echo_request("rc-v1")) ==
          "203.0.113.7");
    CHECK(access_client(f, "rc-v1") == std::pair<std::string, std::string>{"203.0.113.7", "127.0.0.1"});
    // v2 split across segments, then a second request on the same connection: the same client.
    {
        http_connection c(f.port(), io_timeout);
        const auto header = v2_ipv4({198, 51, 100, 4});
        c.send_raw(header.substr(0, 7));
        std::this_thread::sleep_for(30ms); // two segments: the gateway sees a prefix first
        c.send_raw(header.substr(7, 10));
        std::this_thread::sleep_for(30ms);
        c.send_raw(header.substr(17) + echo_request("rc-v2a"));
        auto res = c.read_response();
        REQUIRE(res.status == 201);
        CHECK(forwarded_for(res.body) == "198.51.100.4");
        c.send_raw(echo_request("rc-v2b"));
        REQUIRE(c.read_response().status == 201);
    }
    CHECK(access_client(f, "rc-v2a").first == "198.51.100.4");
    CHECK(access_client(f, "rc-v2b").first == "198.51.100.4");
    // v2 IPv6 with a TLV; LOCAL (a balancer's health check) keeps the peer.
    std::string six(36, '\0');
    six[0] = 0x20, six[1] = 0x01, six[2] = 0x0d, six[3] = static_cast<char>(0xb8), six[15] = 7;
    six[31] = 1;
    CHECK(upstream_xff(f.port(), v2_header(0x21, 0x21, six + std::string("\x02\x00\x01x", 4)) +
                                     echo_request("rc-v2six")) == "2001:db8::7");
    CHECK(upstream_xff(f.port(), v2_header(0x20, 0x00, "") + echo_request("rc-local")) == "127.0.0.1");
    CHECK(access_client(f, "rc-local") == std::pair<std::string, std::string>{"127.0.0.1", ""});
    // A trusted PROXY source's forwarded headers count too; an untrusted one's do not.
    upstream_xff(f.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n" +
                               echo_request("rc-v1-xff", "X-Forwarded-For: 192.0.2.1\r\n"));
    CHECK(access_client(f, "rc-v1-xff").first == "203.0.113.7");
    // curl --haproxy-protocol sends v1 (its own address: 127.0.0.1), over HTTP/1.1 and h2c, the
    // latter with forwarded headers (the PROXY source 127.0.0.1 is trusted).
    const auto url = "http://127.0.0.1:" + std::to_string(f.port()) + "/plain/curl";
    auto [status, lines] = run_curl({"-sS", "--haproxy-protocol", "-o", "/dev/null", "-w", "%{http_code}\n",
                                     "-H", "X-Request-Id: rc-curl1", url});
    REQUIRE(status == 0);
    CHECK(lines.back() == "201");
    CHECK(access_client(f, "rc-curl1").first == "127.0.0.1");
    std::tie(status, lines) = run_curl({"-sS", "--haproxy-protocol", "--http2-prior-knowledge", "-o",
                                        "/dev/null", "-w", "%{http_version} %{http_code}\n", "-H",
                                        "X-Request-Id: rc-curl2", "-H", "X-Forwarded-For: 203.0.113.8", url});
    REQUIRE(status == 0);
    CHECK(lines.back() == "2 201");
    CHECK(access_client(f, "rc-curl2").first == "203.0.113.8");
    CHECK(refused(f, "missing") == 0);
    CHECK(refused(f, "invalid") == 0);
}

TEST_CASE("PROXY: no header, a broken one, or one from an untrusted peer closes the connection" *
          needs_store("memory"))
{
    SUBCASE("trusted peer")
    {
        gateway_fixture f(behind("  trusted_proxies: [127.0.0.1/32]\n  proxy_protocol: true\n"));
        {
            http_connection c(f.port(), io_timeout);
            c.send_raw(echo_request("rc-none"));
            CHECK(c.closed_by_peer());
        }
        wait_until("missing counted", 5s, [&] { return refused(f, "missing") == 1; });
        for (const auto& bad : {std::string("PROXY TCP4 2001:db8::1 127.0.0.1 1 2\r\n"), // wrong family
                                std::string("PROXY TCP4 203.0.113.7 127.0.0.1 1 2\n"),
                                "PROXY UNKNOWN " + std::string(100, 'x'),        // over 107 bytes
                                v2_header(0x21, 0x12, std::string(12, '\1'))}) { // UDP
            http_connection c(f.port(), io_timeout);
            c.send_raw(bad + echo_request("rc-broken"));
            CHECK(c.closed_by_peer());
        }
        wait_until("invalid counted", 5s, [&] { return refused(f, "invalid") == 4; });
        // The gateway still serves a good one.
        CHECK(upstream_xff(f.port(), "PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n" +
                                         echo_request("rc-ok")) == "203.0.113.7");
    }
    SUBCASE("untrusted peer")
    {
        gateway_fixture f(behind("  trusted_proxies: [10.0.0.0/8]\n  proxy_protocol: true\n"));
        for (const auto& header :
             {std::string("PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n"), v2_ipv4({203, 0, 113, 7})}) {
            http_connection c(f.port(), io_timeout);
            c.send_raw(header + echo_request("rc-untrusted"));
            CHECK(c.closed_by_peer());
        }
        wait_until("untrusted counted", 5s, [&] { return refused(f, "untrusted") == 2; });
        auto [status, lines] =
            run_curl({"-sS", "--haproxy-protocol", "-o", "/dev/null", "-w", "%{http_code}\n",
                      "http://127.0.0.1:" + std::to_string(f.port()) + "/plain/x"});
        CHECK(status != 0);
        CHECK(f.executions() == 0);
    }
}

TEST_CASE("PROXY before TLS, then h2 by ALPN with forwarded headers" * needs_store("memory"))
{
    test_certificates certs;
    gateway_fixture f(behind("  trusted_proxies: [127.0.0.1/32]\n  proxy_protocol: true\n",
                             "tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" +
                                 certs.server_key + "\"\n"));
    const auto url = "https://localhost:" + std::to_string(f.port()) + "/plain/tls";
    auto [status, lines] =
        run_curl({"-sS", "--haproxy-protocol", "--http2", "--cacert", certs.ca_cert, "-o", "/dev/null", "-w",
                  "%{http_version} %{http_code}\n", "-H", "X-Request-Id: rc-tls", "-H",
                  "X-Forwarded-For: 203.0.113.9, 127.0.0.1", url});
    REQUIRE(status == 0);
    CHECK(lines.back() == "2 201");
    CHECK(access_client(f, "rc-tls") == std::pair<std::string, std::string>{"203.0.113.9", "127.0.0.1"});
    // Without the header the TLS listener closes the connection before any handshake.
    std::tie(status, lines) = run_curl({"-sS", "--cacert", certs.ca_cert, "-o", "/dev/null", url});
    CHECK(status != 0);
}
