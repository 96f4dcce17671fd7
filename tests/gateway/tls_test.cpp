// SPDX-License-Identifier: Apache-2.0
// TLS on both HTTP hops: HTTPS clients through the real gateway binary (keyed
// requests, replays, client certificates, versions, ALPN, resumption, plain HTTP on the TLS
// port, drain), HTTPS upstreams (verification, names, client certificates, session reuse) and
// --check of the TLS files. Certificates are made per test with the openssl CLI.
#include "gateway_fixture.hpp"

#include <csignal>
#include <doctest/doctest.h>
#include <fstream>
#include <idemgate/test/tls.hpp>
#include <sstream>
#include <thread>

using namespace idemgate::test;

namespace {

// The top-level tls: block for the gateway's listen address.
std::string listen_tls(const test_certificates& certs, const std::string& extra = "")
{
    return "tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" + certs.server_key + "\"\n" +
           extra;
}

tls_client_options trusting(const test_certificates& certs)
{
    tls_client_options o;
    o.ca_file = certs.ca_cert;
    return o;
}

tls_client_options with_client_cert(const test_certificates& certs)
{
    auto o = trusting(certs);
    o.cert_file = certs.client_cert;
    o.key_file = certs.client_key;
    return o;
}

// A gateway with TLS on listen over the store under test (IDEMGATE_TEST_STORE).
struct tls_gateway {
    explicit tls_gateway(const test_certificates& certs, const std::string& tls_extra = "",
                         const std::string& timeouts = "")
    {
        gateway_options options;
        options.top_level = listen_tls(certs, tls_extra);
        options.timeouts = timeouts;
        fixture = std::make_unique<gateway_fixture>(options);
    }
    std::uint16_t port() const { return fixture->port(); }
    std::uint16_t admin_port() const { return fixture->gateway->admin_port(); }
    // The failure count for `reason` once it reached `at_least` (bounded wait: the client can see
    // the refusal, e.g. an alert or the deadline's close, just before the gateway counts it).
    double failures(const std::string& reason, double at_least = 1) const
    {
        auto series = "idemgate_tls_handshake_failures_total{reason=\"" + reason + "\"}";
        auto deadline = std::chrono::steady_clock::now() + 2s;
        double value = metric(admin_port(), series);
        while (value < at_least && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(10ms);
            value = metric(admin_port(), series);
        }
        return value;
    }
    std::unique_ptr<gateway_fixture> fixture;
};

http_response keyed_post(std::uint16_t port, const tls_client_options& tls, const std::string& path,
                         const std::string& key, const std::string& body,
                         std::vector<std::pair<std::string, std::string>> headers = {})
{
    headers.emplace_back("Idempotency-Key", key);
    headers.emplace_back("Content-Type", "application/json");
    return https_request(port, tls, "POST", path, headers, body, io_timeout);
}

// The raw answer without the replay marker and the fields every answer carries its own value of
// (its request's ID, Date, what became of the key): what must be byte-identical between a first
// answer and a replay.
std::string without_replay_marker(const std::string& raw)
{
    return without_fields(raw, {"Idempotent-Replayed", "X-Request-Id", "Date", "Idempotency-Status"});
}

// True when the handshake or the first exchange on a fresh connection fails (with TLS 1.3 a
// refused client certificate shows only on the first read).
bool refused(std::uint16_t port, const tls_client_options& tls)
{
    try {
        http_connection conn(port, tls, io_timeout);
        conn.request("GET", "/plain/x");
        return false;
    } catch (const std::exception&) {
        return true;
    }
}

} // namespace

TEST_SUITE_BEGIN("tls");

TEST_CASE("HTTPS client: a keyed request runs once and its retry is replayed byte for byte over TLS")
{
    test_certificates certs;
    tls_gateway g(certs);
    const auto key = unique_key("tls-keyed");
    auto tls = trusting(certs);

    http_connection conn(g.port(), tls, io_timeout);
    CHECK(conn.tls_alpn() == "http/1.1");
    auto first =
        conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"Content-Type", "application/json"}},
                     R"({"sku":"tls"})");
    REQUIRE(first.status == 201);
    auto echo = parse_object(first.body);
    REQUIRE(echo.contains("headers"));
    CHECK(echo["headers"].as_object()["x-forwarded-proto"] == "https");
    CHECK(first.header("idempotent-replayed") != "true");

    // Same connection (keep-alive over TLS), then a fresh one.
    auto replay =
        conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"Content-Type", "application/json"}},
                     R"({"sku":"tls"})");
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(without_replay_marker(replay.raw) == without_replay_marker(first.raw));
    auto fresh = keyed_post(g.port(), tls, "/api/orders", key, R"({"sku":"tls"})");
    CHECK(without_replay_marker(fresh.raw) == without_replay_marker(first.raw));
    CHECK(g.fixture->executions() == 1);
    CHECK(metric(g.admin_port(), "idemgate_tls_handshakes_total{resumed=\"false\"}") >= 2);
}

TEST_CASE("HTTPS client: a session is resumed on reconnect")
{
    test_certificates certs;
    tls_gateway g(certs);
    for (int max_version : {0x0303, 0x0304}) {
        CAPTURE(max_version);
        auto tls = trusting(certs);
        tls.max_version = max_version;
        std::shared_ptr<void> session;
        {
            http_connection conn(g.port(), tls, io_timeout);
            CHECK(conn.request("GET", "/plain/x").status == 201);
            CHECK_FALSE(conn.tls_session_reused());
            session = conn.tls_session(); // TLS 1.3: the ticket arrived with the answer
        }
        REQUIRE(session);
        tls.session = session;
        http_connection again(g.port(), tls, io_timeout);
        CHECK(again.request("GET", "/plain/x").status == 201);
        CHECK(again.tls_session_reused());
    }
    CHECK(metric(g.admin_port(), "idemgate_tls_handshakes_total{resumed=\"true\"}") >= 2);
}

TEST_CASE("client_auth: required refuses a client without a certificate and serves one with")
{
    test_certificates certs;
    tls_gateway g(certs, "  client_ca_file: \"" + certs.ca_cert + "\"\n  client_auth: required\n");
    for (int max_version : {0x0303, 0x0304}) {
        CAPTURE(max_version);
        auto anonymous = trusting(certs);
        anonymous.max_version = max_version;
        CHECK(refused(g.port(), anonymous));
        auto identified = with_client_cert(certs);
        identified.max_version = max_version;
        auto res = https_request(g.port(), identified, "GET", "/plain/x", {}, {}, io_timeout);
        CHECK(res.status == 201);
    }
    CHECK(g.failures("no_client_cert", 2) >= 2);
    // A certificate from a CA the gateway does not trust (here: a server certificate whose chain
    // ends in the same CA is fine, so use the wrong-name one presented as a client certificate:
    // it chains to the CA but lacks clientAuth, which OpenSSL's purpose check refuses).
    auto wrong_purpose = trusting(certs);
    wrong_purpose.cert_file = certs.wrong_name_cert;
    wrong_purpose.key_file = certs.wrong_name_key;
    CHECK(refused(g.port(), wrong_purpose));
    CHECK(g.failures("bad_client_cert") >= 1);
    // The gateway is still up.
    CHECK(https_request(g.port(), with_client_cert(certs), "GET", "/plain/x", {}, {}, io_timeout).status ==
          201);
}

TEST_CASE("tenant_from: client_cert scopes keys by the certificate's common name")
{
    test_certificates certs;
    auto other = certs.make_client("other-client", "Other Payments Ltd");
    gateway_options options;
    options.top_level =
        listen_tls(certs, "  client_ca_file: \"" + certs.ca_cert + "\"\n  client_auth: optional\n");
    options.idempotency_extra = "      tenant_from: client_cert\n";
    // A quota for the second certificate's tenant only: the tenant is its common name.
    options.top_level += "tenants:\n  \"Other Payments Ltd\": { new_keys_per_second: 1 }\n";
    const std::string admin_token = "admin-token-0123456789";
    options.top_level += "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    gateway_fixture g(options);
    const auto key = unique_key("cert-tenant");
    const std::string body = R"({"sku":"cert"})";

    auto alice = with_client_cert(certs);
    auto first = keyed_post(g.port(), alice, "/api/orders", key, body);
    REQUIRE(first.status == 201);
    CHECK(first.header("idempotent-replayed") != "true");
    auto replay = keyed_post(g.port(), alice, "/api/orders", key, body);
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(g.executions() == 1);

    // The same key under another certificate is another tenant's key: it runs, and never sees
    // the first tenant's answer.
    auto bob = trusting(certs);
    bob.cert_file = other.cert_file;
    bob.key_file = other.key_file;
    auto theirs = keyed_post(g.port(), bob, "/api/orders", key, body);
    CHECK(theirs.status == 201);
    CHECK(theirs.header("idempotent-replayed") != "true");
    CHECK(g.executions() == 2);
    // Its quota (1 new key per second, burst 1) applies to it alone.
    auto second_key = keyed_post(g.port(), bob, "/api/orders", unique_key("cert-tenant-b"), body);
    CHECK(second_key.status == 429);
    auto alice_more = keyed_post(g.port(), alice, "/api/orders", unique_key("cert-tenant-a"), body);
    CHECK(alice_more.status == 201);

    // No certificate: a keyed request cannot be scoped, so it is refused; keyless ones pass.
    auto anonymous = keyed_post(g.port(), trusting(certs), "/api/orders", unique_key("cert-none"), body);
    CHECK(anonymous.status == 403);
    CHECK(anonymous.header("content-type") == "application/problem+json");
    CHECK(anonymous.body.find("client-certificate-required") != std::string::npos);
    CHECK(https_request(g.port(), trusting(certs), "POST", "/api/orders", {}, body, io_timeout).status ==
          201);
    CHECK(g.executions() == 4);

    // A client naming the same tenant in a header (the /tenant/ route) never reaches the
    // certificate-authenticated tenant's records: same tenant name and key, its own scope (a
    // shared scope would answer 409, the paths differ).
    auto acme = certs.make_client("acme", "acme");
    auto acme_tls = trusting(certs);
    acme_tls.cert_file = acme.cert_file;
    acme_tls.key_file = acme.key_file;
    const auto acme_key = unique_key("cert-acme");
    REQUIRE(keyed_post(g.port(), acme_tls, "/api/orders", acme_key, body).status == 201);
    auto claimed =
        keyed_post(g.port(), trusting(certs), "/tenant/orders", acme_key, body, {{"X-Tenant-ID", "acme"}});
    CHECK(claimed.status == 201);
    CHECK(claimed.header("idempotent-replayed") != "true");
    CHECK(g.executions() == 6);

    // The admin API finds a certificate tenant's record by its common name.
    const std::vector<std::pair<std::string, std::string>> bearer{{"Authorization", "Bearer " + admin_token}};
    auto shown = http_request(g.gateway->admin_port(), "GET",
                              "/admin/v1/records?cert_tenant=acme&key=" + acme_key, bearer, {});
    CHECK(shown.status == 200);
    auto spaced = http_request(g.gateway->admin_port(), "GET",
                               "/admin/v1/records?cert_tenant=Other%20Payments%20Ltd&key=" + key, bearer, {});
    CHECK(spaced.status == 200);
    auto by_header = http_request(g.gateway->admin_port(), "GET",
                                  "/admin/v1/records?tenant=acme&key=" + acme_key, bearer, {});
    CHECK(by_header.status == 200); // the header tenant's own record, made by the /tenant/ request
    auto missing = http_request(g.gateway->admin_port(), "GET",
                                "/admin/v1/records?cert_tenant=nobody&key=" + acme_key, bearer, {});
    CHECK(missing.status == 404);
}

TEST_CASE("reload renews the listener certificate for new connections; open ones keep theirs")
{
    test_certificates certs;
    test_certificates renewed; // another CA: a client trusting only one of them tells them apart
    tls_gateway g(certs);
    auto& proc = g.fixture->process();
    auto reloads = [&](const std::string& needle) {
        return proc
            .wait_for_line([&](const std::string& l) { return l.find(needle) != std::string::npos; }, 5s)
            .has_value();
    };
    http_connection open(g.port(), trusting(certs), io_timeout);
    REQUIRE(open.request("GET", "/plain/x").status == 201);

    const auto path = g.fixture->gateway->config_path();
    std::string text;
    {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    auto swap = [](std::string t, const std::string& from, const std::string& to) {
        auto at = t.find(from);
        REQUIRE(at != std::string::npos);
        return t.replace(at, from.size(), to);
    };
    auto next =
        swap(swap(text, certs.server_cert, renewed.server_cert), certs.server_key, renewed.server_key);
    std::ofstream(path, std::ios::trunc) << next;
    proc.signal(SIGHUP);
    REQUIRE(reloads("\"msg\":\"configuration reloaded\""));

    CHECK(open.request("GET", "/plain/x").status == 201); // the open connection is untouched
    CHECK(https_request(g.port(), trusting(renewed), "GET", "/plain/x", {}, {}, io_timeout).status == 201);
    CHECK(refused(g.port(), trusting(certs))); // new connections get the renewed certificate

    // A certificate file that cannot be read: the reload fails, the running certificate stays.
    std::ofstream(path, std::ios::trunc) << swap(next, renewed.server_cert, renewed.server_cert + ".missing");
    proc.signal(SIGHUP);
    REQUIRE(reloads("configuration reload failed"));
    CHECK(reloads("tls.cert_file"));
    CHECK(https_request(g.port(), trusting(renewed), "GET", "/plain/x", {}, {}, io_timeout).status == 201);

    // Turning TLS off needs a restart: logged, and the listener stays TLS.
    auto tls_at = next.find("tls:\n");
    REQUIRE(tls_at != std::string::npos);
    auto plain = next;
    plain.erase(tls_at, next.find("key_file:", tls_at) - tls_at);
    plain.erase(tls_at, plain.find('\n', tls_at) + 1 - tls_at); // the key_file line
    std::ofstream(path, std::ios::trunc) << plain;
    proc.signal(SIGHUP);
    REQUIRE(reloads("turning TLS on listen on or off needs a restart"));
    CHECK(https_request(g.port(), trusting(renewed), "GET", "/plain/x", {}, {}, io_timeout).status == 201);
    CHECK(open.request("GET", "/plain/x").status == 201);
}

TEST_CASE("client_auth: optional serves clients with and without a certificate; none ignores one")
{
    test_certificates certs;
    SUBCASE("optional")
    {
        tls_gateway g(certs, "  client_ca_file: \"" + certs.ca_cert + "\"\n  client_auth: optional\n");
        CHECK(https_request(g.port(), trusting(certs), "GET", "/plain/x", {}, {}, io_timeout).status == 201);
        CHECK(
            https_request(g.port(), with_client_cert(certs), "GET", "/plain/x", {}, {}, io_timeout).status ==
            201);
    }
    SUBCASE("none")
    {
        tls_gateway g(certs, "  client_auth: none\n");
        CHECK(https_request(g.port(), trusting(certs), "GET", "/plain/x", {}, {}, io_timeout).status == 201);
        CHECK(
            https_request(g.port(), with_client_cert(certs), "GET", "/plain/x", {}, {}, io_timeout).status ==
            201);
    }
}

TEST_CASE("plain HTTP, garbage and silence on the TLS port are answered or closed, counted, and harmless")
{
    test_certificates certs;
    tls_gateway g(certs, "", "  header_read: 500ms\n");

    http_connection plain(g.port(), io_timeout);
    auto res = plain.request("POST", "/api/orders", {{"Idempotency-Key", unique_key("plain")}}, "{}");
    CHECK(is_problem(res, 400));
    CHECK(res.body.find("plain-http-to-tls-port") != std::string::npos);
    CHECK(plain.closed_by_peer());
    CHECK(g.failures("plain_http") == 1);

    http_connection garbage(g.port(), io_timeout);
    garbage.send_raw(std::string("\x01\x02\x03\x04 not tls", 12));
    CHECK(garbage.closed_by_peer());
    CHECK(g.failures("not_tls") == 1);

    // Connected, then silent: closed at timeouts.header_read.
    http_connection silent(g.port(), io_timeout);
    CHECK(silent.closed_by_peer(3s));
    CHECK(g.failures("timeout") == 1);

    // A TLS record that stops half-way through the ClientHello: also closed at the deadline.
    http_connection half(g.port(), io_timeout);
    half.send_raw(std::string("\x16\x03\x01\x02\x00\x01", 6));
    CHECK(half.closed_by_peer(3s));
    CHECK(g.failures("timeout", 2) == 2);

    CHECK(g.fixture->executions() == 0);
    CHECK(g.fixture->process().running());
    CHECK(https_request(g.port(), trusting(certs), "GET", "/plain/x", {}, {}, io_timeout).status == 201);
    // The connections above end asynchronously after the client saw them close: poll the gauge.
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (metric(g.admin_port(), "idemgate_connections_active") > 1 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms); // polling the gateway's own gauge
    CHECK(metric(g.admin_port(), "idemgate_connections_active") <= 1);
}

TEST_CASE("min_version 1.3 refuses a TLS 1.2-only client")
{
    test_certificates certs;
    tls_gateway g(certs, "  min_version: \"1.3\"\n");
    auto old_client = trusting(certs);
    old_client.max_version = 0x0303;
    CHECK_THROWS_AS(http_connection(g.port(), old_client, io_timeout), tls_error);
    CHECK(g.failures("protocol_version") == 1);

    http_connection modern(g.port(), trusting(certs), io_timeout);
    CHECK(modern.tls_version() == "TLSv1.3");
    CHECK(modern.request("GET", "/plain/x").status == 201);
}

TEST_CASE("ALPN: h2 is preferred; with http2.enabled false a client offering only h2 is refused; one "
          "offering nothing is served HTTP/1.1")
{
    test_certificates certs;
    {
        tls_gateway with_h2(certs);
        auto both = trusting(certs);
        both.alpn = {"http/1.1", "h2"};
        CHECK(http_connection(with_h2.port(), both, io_timeout).tls_alpn() == "h2");
    }
    tls_gateway g(certs, "http2:\n  enabled: false\n");
    auto h2_only = trusting(certs);
    h2_only.alpn = {"h2"};
    CHECK_THROWS_AS(http_connection(g.port(), h2_only, io_timeout), tls_error);
    CHECK(g.failures("alpn") == 1);
    auto no_alpn = trusting(certs);
    no_alpn.alpn.clear();
    http_connection conn(g.port(), no_alpn, io_timeout);
    CHECK(conn.tls_alpn().empty());
    CHECK(conn.request("GET", "/plain/x").status == 201);
}

TEST_CASE("drain over TLS: the answer in flight arrives with Connection: close, then close_notify")
{
    test_certificates certs;
    tls_gateway g(certs);
    http_connection idle(g.port(), trusting(certs), io_timeout);
    CHECK(idle.request("GET", "/plain/x").status == 201);

    http_connection busy(g.port(), trusting(certs), io_timeout);
    busy.send_raw("POST /api/orders HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + unique_key("drain") +
                  "\r\nX-Test-Delay-Ms: 700\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(g.fixture->wait_for_executions(2));
    g.fixture->process().signal(SIGTERM);
    auto res = busy.read_response();
    CHECK(res.status == 201);
    CHECK(res.header("connection") == "close");
    CHECK(busy.closed_by_peer());
    auto status = g.fixture->process().wait_exit(10s);
    REQUIRE(status);
    CHECK(*status == 0);
}

// ---------------------------------------------------------------------------------------------
// HTTPS upstreams

namespace {

// A gateway in front of one HTTPS test upstream ("secure", route /api/) and, for the
// released-key check, the same upstream over plain HTTP (route /plain-hop/).
struct https_upstream_setup {
    https_upstream_setup(const test_certificates& certs, const std::string& cert, const std::string& key,
                         const std::string& upstream_tls, std::vector<std::string> upstream_args = {})
        : upstream([&] {
              std::vector<std::string> args{"--tls-cert", cert, "--tls-key", key};
              args.insert(args.end(), upstream_args.begin(), upstream_args.end());
              return test_upstream_process(args);
          }()),
          store(make_store())
    {
        (void)certs;
        std::string y;
        y += "listen: \"${LISTEN}\"\nadmin_listen: \"${ADMIN}\"\nthreads: 1\naccess_log: true\n";
        y += store.yaml;
        y += "upstreams:\n";
        y += "  secure:\n    address: \"127.0.0.1:" + std::to_string(upstream.tls_port()) + "\"\n";
        y += "    tls:\n      enabled: true\n" + upstream_tls;
        y += "  clear:\n    address: \"127.0.0.1:" + std::to_string(upstream.port()) + "\"\n";
        y += "routes:\n";
        y += "  - path_prefix: \"/api/\"\n    upstream: secure\n    idempotency:\n      methods: [POST]\n";
        y += "  - path_prefix: \"/plain-hop/\"\n    upstream: clear\n    idempotency:\n      methods: "
             "[POST]\n";
        gateway = std::make_unique<gateway_process>(y);
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            try {
                if (http_request(gateway->admin_port(), "GET", "/readyz", {}, {}, 1s).status == 200)
                    return;
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(10ms);
        }
        throw std::runtime_error("gateway not ready");
    }
    http_response post(const std::string& path, const std::string& key,
                       std::vector<std::pair<std::string, std::string>> headers = {})
    {
        headers.emplace_back("Idempotency-Key", key);
        return gateway_request(gateway->port(), "POST", path, headers, "{}");
    }
    double admin_metric(const std::string& series) { return metric(gateway->admin_port(), series); }
    bool logged(const std::string& text)
    {
        return gateway->process()
            .wait_for_line([&](const std::string& l) { return l.find(text) != std::string::npos; }, 2s)
            .has_value();
    }

    test_upstream_process upstream;
    store_under_test store;
    std::unique_ptr<gateway_process> gateway;
};

std::string ca_only(const test_certificates& certs)
{
    return "      ca_file: \"" + certs.ca_cert + "\"\n";
}

} // namespace

TEST_CASE("HTTPS upstream: verified, pooled, resumed; 201 then a replay")
{
    test_certificates certs;
    https_upstream_setup s(certs, certs.server_cert, certs.server_key, ca_only(certs));
    const auto key = unique_key("https-upstream");
    auto first = s.post("/api/orders", key);
    REQUIRE(first.status == 201);
    auto replay = s.post("/api/orders", key);
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.body == first.body);
    CHECK(s.upstream.executions() == 1);

    // Keep-alive to the upstream: the next request reuses the pooled TLS connection.
    CHECK(s.post("/api/orders", unique_key("pooled")).status == 201);
    CHECK(s.admin_metric("idemgate_upstream_connections_total{kind=\"reused\"}") >= 1);
    // The upstream closes after each answer: every reconnect offers the last session.
    CHECK(s.post("/api/orders", unique_key("close-1"), {{"X-Test-Close", "1"}}).status == 201);
    CHECK(s.post("/api/orders", unique_key("close-2"), {{"X-Test-Close", "1"}}).status == 201);
    // The second reconnect resumed the session the first one got (a ticket, TLS 1.3).
    CHECK(s.admin_metric("idemgate_upstream_tls_handshakes_total{resumed=\"true\"}") >= 1);
    CHECK(s.upstream.executions() == 4);
}

TEST_CASE("a request without Host reaches an upstream with its configured name: the TLS server_name, else "
          "the address")
{
    test_certificates certs;
    https_upstream_setup s(certs, certs.server_cert, certs.server_key,
                           ca_only(certs) + "      server_name: localhost\n");
    auto host_seen = [&](const std::string& path) {
        http_connection conn(s.gateway->port(), io_timeout);
        conn.send_raw("GET " + path + " HTTP/1.0\r\n\r\n");
        auto res = conn.read_response();
        REQUIRE(res.status == 201);
        auto headers = parse_object(res.body)["headers"].as_object();
        return headers.contains("host") ? std::string(headers["host"].as_string()) : std::string("<none>");
    };
    CHECK(host_seen("/api/orders") == "localhost:" + std::to_string(s.upstream.tls_port()));
    CHECK(host_seen("/plain-hop/orders") == "127.0.0.1:" + std::to_string(s.upstream.port()));
}

TEST_CASE("HTTPS upstream with a certificate the gateway cannot verify: 502, the key is released")
{
    test_certificates certs;
    struct row {
        const char* name;
        std::string cert, key, tls, log;
    };
    std::vector<row> rows{
        {"wrong CA", certs.server_cert, certs.server_key, "      ca_file: \"" + certs.other_ca_cert + "\"\n",
         "certificate verify failed"},
        {"wrong name", certs.wrong_name_cert, certs.wrong_name_key, ca_only(certs), "IP address mismatch"},
        {"wrong server_name", certs.server_cert, certs.server_key,
         ca_only(certs) + "      server_name: orders.internal\n", "hostname mismatch"},
        {"expired", certs.expired_cert, certs.expired_key, ca_only(certs), "certificate has expired"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        https_upstream_setup s(certs, r.cert, r.key, r.tls);
        const auto key = unique_key("bad-upstream");
        auto res = s.post("/api/orders", key);
        CHECK(is_problem(res, 502));
        CHECK(s.upstream.executions() == 0);
        CHECK(s.logged(r.log));
        CHECK(s.admin_metric("idemgate_upstream_tls_failures_total") == 1);
        // Released, not held or recorded: the same key then runs once on a working route.
        auto retry = s.post("/plain-hop/orders", key);
        CHECK(retry.status == 201);
        CHECK(retry.header("idempotent-replayed") != "true");
        CHECK(s.upstream.executions() == 1);
    }
}

TEST_CASE("HTTPS upstream that requires a client certificate")
{
    test_certificates certs;
    std::vector<std::string> require_client{"--tls-client-ca", certs.ca_cert};
    SUBCASE("sent: 201")
    {
        https_upstream_setup s(certs, certs.server_cert, certs.server_key,
                               ca_only(certs) + "      cert_file: \"" + certs.client_cert +
                                   "\"\n      key_file: \"" + certs.client_key + "\"\n",
                               require_client);
        CHECK(s.post("/api/orders", unique_key("mtls-up")).status == 201);
        CHECK(s.upstream.executions() == 1);
    }
    SUBCASE("not configured: 502, nothing executed")
    {
        https_upstream_setup s(certs, certs.server_cert, certs.server_key, ca_only(certs), require_client);
        auto res = s.post("/api/orders", unique_key("mtls-up-missing"));
        // TLS 1.3: the upstream's refusal can come after the handshake, with the request already
        // written; either way the gateway answers 502 and the upstream ran nothing.
        CHECK(is_problem(res, 502));
        CHECK(s.upstream.executions() == 0);
    }
}

namespace {

// The certificate's notAfter as Unix time, as the openssl CLI reads it (x509 -enddate).
double not_after(const std::string& cert_file)
{
    child_process date("/bin/sh", {"-c", "date -u -d \"$(openssl x509 -enddate -noout -in '" + cert_file +
                                             "' | cut -d= -f2)\" +%s"});
    REQUIRE(date.wait_exit(10s) == 0);
    auto lines = date.lines();
    REQUIRE_FALSE(lines.empty());
    return std::stod(lines.back());
}

const std::string expiry_gauge = "idemgate_tls_certificate_expiry_timestamp_seconds";

} // namespace

TEST_CASE("certificate expiry: the listener's and an upstream client certificate's notAfter, "
          "renewed by a reload" *
          needs_store("memory"))
{
    test_certificates certs;
    {
        https_upstream_setup s(certs, certs.server_cert, certs.server_key,
                               ca_only(certs) + "      cert_file: \"" + certs.client_cert +
                                   "\"\n      key_file: \"" + certs.client_key + "\"\n",
                               {});
        CHECK(s.admin_metric(expiry_gauge + "{use=\"upstream\",name=\"secure\"}") ==
              not_after(certs.client_cert));
        // An upstream without a client certificate, and no listener TLS: no series.
        CHECK(s.admin_metric(expiry_gauge + "{use=\"upstream\",name=\"clear\"}") == -1);
        CHECK(s.admin_metric(expiry_gauge + "{use=\"listener\",name=\"listen\"}") == -1);
    }
    tls_gateway g(certs);
    const auto listener = expiry_gauge + "{use=\"listener\",name=\"listen\"}";
    CHECK(metric(g.admin_port(), listener) == not_after(certs.server_cert));
    // A reload reads the new file: the gauge follows (to the expired certificate's 2020 date).
    const auto path = g.fixture->gateway->config_path();
    std::string text;
    {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    for (const auto& [from, to] :
         {std::pair{certs.server_cert, certs.expired_cert}, std::pair{certs.server_key, certs.expired_key}})
        text.replace(text.find(from), from.size(), to);
    std::ofstream(path, std::ios::trunc) << text;
    g.fixture->process().signal(SIGHUP);
    const auto expired = not_after(certs.expired_cert);
    CHECK(poll_until(5s, [&] { return metric(g.admin_port(), listener) == expired; }));
}

// ---------------------------------------------------------------------------------------------
// --check

namespace {

// Runs `idemgate --check` on `yaml`; returns the exit status and the output.
std::pair<int, std::string> check(const std::string& yaml)
{
    temp_dir dir;
    auto path = dir.write_file("idemgate.yaml", yaml);
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    auto status = proc.wait_exit(10s);
    return {status ? *status : -1, proc.output()};
}

std::string minimal(const std::string& tls, const std::string& upstream_tls = "")
{
    return "listen: \"127.0.0.1:0\"\n" + tls + "upstreams:\n  orders:\n    address: \"127.0.0.1:9\"\n" +
           upstream_tls + "routes:\n  - path_prefix: /\n    upstream: orders\n";
}

} // namespace

TEST_CASE("--check: TLS files are loaded and matched, with the key path in every message")
{
    test_certificates certs;
    temp_dir dir;
    auto not_pem = dir.write_file("not.pem", "this is not a certificate\n");
    auto ok = check(minimal(listen_tls(certs)));
    CHECK_MESSAGE(ok.first == 0, ok.second);

    struct row {
        const char* name;
        std::string yaml;
        std::string message;
    };
    std::vector<row> rows{
        {"key of another certificate",
         minimal("tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" + certs.stray_key +
                 "\"\n"),
         "tls.key_file:"},
        {"certificate not PEM",
         minimal("tls:\n  cert_file: \"" + not_pem + "\"\n  key_file: \"" + certs.server_key + "\"\n"),
         "tls.cert_file: no certificate could be loaded"},
        {"missing key file", minimal("tls:\n  cert_file: \"" + certs.server_cert + "\"\n"),
         "tls.key_file: required key is missing"},
        {"unreadable file",
         minimal("tls:\n  cert_file: \"" + dir.path() + "/absent.crt\"\n  key_file: \"" + certs.server_key +
                 "\"\n"),
         "tls.cert_file: cannot read"},
        {"client_auth without CA", minimal(listen_tls(certs, "  client_auth: required\n")),
         "tls.client_auth: needs tls.client_ca_file"},
        {"CA without client_auth",
         minimal(listen_tls(certs, "  client_ca_file: \"" + certs.ca_cert + "\"\n")),
         "tls.client_ca_file: set while tls.client_auth is none"},
        {"client CA not PEM",
         minimal(listen_tls(certs, "  client_ca_file: \"" + not_pem + "\"\n  client_auth: optional\n")),
         "tls.client_ca_file: no CA certificate could be loaded"},
        {"bad min_version", minimal(listen_tls(certs, "  min_version: \"1.1\"\n")), "tls.min_version:"},
        {"bad client_auth", minimal(listen_tls(certs, "  client_auth: sometimes\n")), "tls.client_auth:"},
        {"unknown key", minimal(listen_tls(certs, "  ciphers: ALL\n")), "tls.ciphers: unknown key"},
        {"upstream CA not PEM",
         minimal("", "    tls:\n      enabled: true\n      ca_file: \"" + not_pem + "\"\n"),
         "upstreams.orders.tls.ca_file: no CA certificate could be loaded"},
        {"upstream key mismatch",
         minimal("", "    tls:\n      enabled: true\n      cert_file: \"" + certs.client_cert +
                         "\"\n      key_file: \"" + certs.stray_key + "\"\n"),
         "upstreams.orders.tls.key_file:"},
        {"upstream cert without key",
         minimal("", "    tls:\n      enabled: true\n      cert_file: \"" + certs.client_cert + "\"\n"),
         "upstreams.orders.tls.cert_file: needs upstreams.orders.tls.key_file"},
        {"upstream keys while disabled", minimal("", "    tls:\n      ca_file: \"" + certs.ca_cert + "\"\n"),
         "upstreams.orders.tls.ca_file: set while upstreams.orders.tls.enabled is false"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        auto [status, output] = check(r.yaml);
        CHECK(status == 1);
        CHECK_MESSAGE(output.find(r.message) != std::string::npos, output);
    }
    auto warned = check(minimal("", "    tls:\n      enabled: true\n      verify: false\n"));
    CHECK(warned.first == 0);
    CHECK(warned.second.find("upstreams.orders.tls.verify: false") != std::string::npos);
}

TEST_SUITE_END();
