// SPDX-License-Identifier: Apache-2.0
// Config of routes: lock_ttl warnings, scopes and fingerprints, client-certificate tenants,
// tenant limits and wait mode.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

TEST_CASE("warnings name every guarded route whose lock_ttl does not outlast the upstream deadlines")
{
    auto base = std::string(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
timeouts:
  upstream_connect: 2s
  upstream_response: 10s
routes:
  - path_prefix: "/a/"
    upstream: orders
    idempotency: { lock_ttl: 15s }
  - path_prefix: "/b/"
    upstream: orders
    idempotency: { lock_ttl: 14s }
  - path_prefix: "/c/"
    upstream: orders
)");
    auto c = idemgate::config::parse(base);
    auto w = idemgate::config::warnings(c);
    REQUIRE(w.size() == 1);
    CHECK(w[0].starts_with("routes[1].idempotency.lock_ttl: 14000ms"));
    // The defaults are consistent with each other.
    auto defaults = idemgate::config::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency: {}
)");
    CHECK(idemgate::config::warnings(defaults).empty());
}

TEST_CASE("scope and fingerprint options parse, and their errors name the key path")
{
    static const char* secret_env = "IDEMGATE_UNIT_SECRET";
    auto getenv_fn = [](const char* name) -> const char* {
        if (std::string_view(name) == "IDEMGATE_UNIT_SECRET")
            return "0123456789abcdef0123456789abcdef";
        if (std::string_view(name) == "IDEMGATE_SHORT_SECRET")
            return "short";
        return nullptr;
    };
    (void)secret_env;
    auto c = idemgate::config::parse(R"(store:
  key_secret_env: IDEMGATE_UNIT_SECRET
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      record_ttl: 7d
      credential_headers: [Authorization, X-Api-Key]
      mode: shadow
      expose_expiry: true
      fingerprint:
        query: false
        headers: [Content-Type]
        ignore_json_fields: ["/client_sent_at", "/a~1b"]
)",
                                     getenv_fn);
    const auto& idem = c.routes[0].idempotency;
    CHECK(c.store.key_secret == "0123456789abcdef0123456789abcdef");
    CHECK(idem.record_ttl == std::chrono::hours(7 * 24));
    CHECK(idem.credential_headers == std::vector<std::string>{"Authorization", "X-Api-Key"});
    CHECK(idem.mode == idemgate::config::route_mode::shadow);
    CHECK(idem.expose_expiry);
    CHECK_FALSE(idem.fingerprint.query);
    CHECK(idem.fingerprint.headers == std::vector<std::string>{"Content-Type"});
    CHECK(idem.fingerprint.json == idemgate::config::json_mode::canonical); // implied by ignore_json_fields
    CHECK(idem.fingerprint.ignore_json_fields.size() == 2);

    auto problems_of = [&](const std::string& yaml) {
        try {
            idemgate::config::parse(yaml, getenv_fn);
        } catch (const idemgate::config::config_error& e) {
            std::string all;
            for (const auto& p : e.problems())
                all += p + "\n";
            return all;
        }
        return std::string();
    };
    auto bad = problems_of(R"(store:
  key_secret_env: IDEMGATE_SHORT_SECRET
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      credential_headers: [Authorization, authorization, "bad header"]
      mode: loud
      fingerprint: { json: pretty, ignore_json_fields: ["client_sent_at", "/x~2"], headers: notalist }
)");
    CHECK(bad.find("store.key_secret_env: environment variable \"IDEMGATE_SHORT_SECRET\" must hold at least "
                   "32 bytes") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.credential_headers[1]: \"authorization\" is listed twice") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.credential_headers[2]: \"bad header\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.mode: \"loud\" is not a mode") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.json: \"pretty\" is not a JSON mode") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.ignore_json_fields[0]: \"client_sent_at\" is not a "
                   "JSON Pointer") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.ignore_json_fields[1]") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.headers: expected a list") != std::string::npos);

    auto no_secret = problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency: { credential_headers: [Authorization] }
)");
    CHECK(no_secret.find("routes[0].idempotency.credential_headers: needs store.key_secret_env") !=
          std::string::npos);
    CHECK(idemgate::config::parse_duration("2d") == std::chrono::hours(48));
}

TEST_CASE("tenant_from: client_cert parses and needs a listener that asks for client certificates")
{
    auto problems_of = [](const std::string& yaml) {
        try {
            idemgate::config::parse(yaml);
        } catch (const idemgate::config::config_error& e) {
            std::string all;
            for (const auto& p : e.problems())
                all += p + "\n";
            return all;
        }
        return std::string();
    };
    // The TLS files are only checked to be readable and non-empty here (--check loads them).
    temp_file pem("-----BEGIN CERTIFICATE-----\n");
    const std::string tls_files = "  cert_file: " + pem.path.string() + "\n  key_file: " + pem.path.string() +
                                  "\n  client_ca_file: " + pem.path.string() + "\n";
    const std::string upstream_and_route = R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
)";
    auto c = idemgate::config::parse("tls:\n" + tls_files + "  client_auth: optional\n" + upstream_and_route +
                                     "      tenant_from: client_cert\n");
    CHECK(c.routes[0].idempotency.tenant_from == idemgate::config::tenant_source::client_cert);
    CHECK(c.routes[0].idempotency.tenant_scoped());
    CHECK(c.routes[0].idempotency.tenant_header.empty());

    auto plain = problems_of(upstream_and_route + "      tenant_from: client_cert\n");
    CHECK(
        plain.find("routes[0].idempotency.tenant_from: client_cert needs a TLS listener that asks for client "
                   "certificates") != std::string::npos);
    auto both = problems_of("tls:\n" + tls_files + "  client_auth: required\n" + upstream_and_route +
                            "      tenant_header: X-Tenant-ID\n      tenant_from: client_cert\n");
    CHECK(both.find("routes[0].idempotency.tenant_from: client_cert takes the tenant from the client "
                    "certificate; remove tenant_header") != std::string::npos);
    auto bad_auth = problems_of("tls:\n" + tls_files + "  client_auth: sometimes\n" + upstream_and_route);
    CHECK_MESSAGE(
        bad_auth.find("tls.client_auth: \"sometimes\" is not allowed (use none, optional or required)") !=
            std::string::npos,
        bad_auth);
    auto unknown = problems_of(upstream_and_route + "      tenant_from: cookie\n");
    CHECK(unknown.find("routes[0].idempotency.tenant_from: \"cookie\" is not allowed (use header or "
                       "client_cert)") != std::string::npos);
    auto header = idemgate::config::parse(upstream_and_route + "      tenant_from: header\n");
    CHECK_FALSE(header.routes[0].idempotency.tenant_scoped());
}

TEST_CASE("tenants, wait mode and max_waiting parse, and their errors name the key path")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      tenant_header: X-Tenant-ID
      on_in_flight: wait
      wait_timeout: 2s
limits:
  max_waiting: 50
tenants:
  default: { max_in_flight: 0, new_keys_per_second: 0 }
  acme: { max_in_flight: 50, new_keys_per_second: 0.5, record_ttl: 7d, lock_ttl: 40s }
)",
                        no_env);
    const auto& idem = c.routes[0].idempotency;
    CHECK(idem.on_in_flight == cfg::in_flight_mode::wait);
    CHECK(idem.wait_timeout == std::chrono::seconds(2));
    CHECK(c.limits.max_waiting == 50);
    REQUIRE(c.tenants.size() == 2);
    const auto* acme = c.find_tenant("acme");
    REQUIRE(acme != nullptr);
    CHECK(acme->max_in_flight == 50);
    CHECK(acme->new_keys_per_second == 0.5);
    CHECK(acme->record_ttl == std::chrono::hours(7 * 24));
    CHECK(acme->lock_ttl == std::chrono::seconds(40));
    const auto* other = c.find_tenant("globex");
    REQUIRE(other != nullptr);
    CHECK(other == c.find_tenant("default"));
    CHECK_FALSE(other->limited());

    auto defaults = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)",
                               no_env);
    CHECK(defaults.find_tenant("acme") == nullptr);
    CHECK(defaults.limits.max_waiting == 10000);

    auto bad = joined(problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      on_in_flight: queue
      wait_timeout: 0s
limits:
  max_waiting: -3
tenants:
  acme: { max_in_flight: lots, new_keys_per_second: -1, record_ttl: forever, burst: 3 }
  "bad\ttenant": {}
  "Acme Payments GmbH": {}
  globex: 7
)"));
    CHECK(bad.find("routes[0].idempotency.on_in_flight: \"queue\" is not allowed (use reject or wait)") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.wait_timeout: must be greater than 0") != std::string::npos);
    CHECK(bad.find("limits.max_waiting: -3 out of range") != std::string::npos);
    CHECK(bad.find("tenants.acme.max_in_flight: \"lots\" is not an integer") != std::string::npos);
    CHECK(bad.find("tenants.acme.new_keys_per_second: \"-1\" is not a rate") != std::string::npos);
    CHECK(bad.find("tenants.acme.record_ttl: \"forever\" is not a duration") != std::string::npos);
    CHECK(bad.find("tenants.acme.burst: unknown key") != std::string::npos);
    CHECK(bad.find("tenants.bad\ttenant: a tenant is 1 to 255 characters without control characters") !=
          std::string::npos);
    CHECK(bad.find("Acme Payments GmbH") == std::string::npos); // a certificate's name may have spaces
    CHECK(bad.find("tenants.globex: expected a map") != std::string::npos);
}

TEST_CASE("warnings name a tenant whose lock_ttl does not outlast the upstream deadlines")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
tenants:
  acme: { lock_ttl: 5s }
  globex: { lock_ttl: 60s }
)",
                        no_env);
    auto w = joined(cfg::warnings(c));
    CHECK(w.find("tenants.acme.lock_ttl: 5000ms is not above") != std::string::npos);
    CHECK(w.find("tenants.globex") == std::string::npos);
}

TEST_CASE("on_status, status_header and replay_drop_headers parse over their defaults")
{
    using idemgate::config::status_action;
    auto route = minimal + "    idempotency:\n";
    auto defaults = idemgate::config::parse(route + "      {}\n").routes[0].idempotency;
    CHECK(defaults.on_status.action_for(201) == status_action::record);
    CHECK(defaults.on_status.action_for(401) == status_action::record);
    CHECK(defaults.on_status.action_for(408) == status_action::release);
    CHECK(defaults.on_status.action_for(425) == status_action::release);
    CHECK(defaults.on_status.action_for(429) == status_action::release);
    CHECK(defaults.on_status.action_for(500) == status_action::release);
    CHECK(defaults.status_header == "Idempotency-Status");
    CHECK(defaults.replay_drop_headers.size() == 6);
    // A route without an idempotency block still names the status header (to say "ignored").
    CHECK(idemgate::config::parse(minimal).routes[0].idempotency.status_header == "Idempotency-Status");

    auto c = idemgate::config::parse(route + R"(      on_status:
        "500": hold
        504: hold
        "4xx": release
        "429": record
        "2XX": record
      status_header: ""
      replay_drop_headers: [X-Request-Cost, "X-Quota-*"]
)")
                 .routes[0]
                 .idempotency;
    CHECK(c.on_status.action_for(500) == status_action::hold);
    CHECK(c.on_status.action_for(504) == status_action::hold);
    CHECK(c.on_status.action_for(503) == status_action::release); // the default class stays
    CHECK(c.on_status.action_for(404) == status_action::release); // the class...
    CHECK(c.on_status.action_for(429) == status_action::record);  // ...but a code beats it
    CHECK(c.on_status.action_for(408) == status_action::release);
    CHECK(c.on_status.action_for(201) == status_action::record);
    CHECK(c.status_header.empty());
    CHECK(c.replay_drop_headers == std::vector<std::string>{"X-Request-Cost", "X-Quota-*"});
    CHECK(idemgate::config::parse(route + "      replay_drop_headers: []\n")
              .routes[0]
              .idempotency.replay_drop_headers.empty());

    auto bad = joined(problems_of(route + R"(      on_status:
        "5xx": keep
        "abc": record
        "600": hold
        "6xx": hold
        "42": hold
        "404": [hold]
      status_header: "Bad Header"
      replay_drop_headers: ["X-*-Limit", "*", "Set-Cookie", "set-cookie"]
)"));
    CHECK(bad.find("routes[0].idempotency.on_status.\"5xx\": unknown action \"keep\" (use record, release or "
                   "hold)") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.on_status.\"abc\": unknown status \"abc\"") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.on_status.\"600\": unknown status") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.on_status.\"6xx\": unknown status") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.on_status.\"42\": unknown status") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.on_status.\"404\": expected an action") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.status_header: \"Bad Header\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.replay_drop_headers[0]: \"X-*-Limit\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.replay_drop_headers[1]: \"*\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.replay_drop_headers[3]: \"set-cookie\" is listed twice") !=
          std::string::npos);
    CHECK(joined(problems_of(route + "      on_status: [hold]\n"))
              .find("routes[0].idempotency.on_status: expected a map") != std::string::npos);
}

TEST_CASE(
    "tombstone_ttl, attempt_header and limits.max_record_body parse, and their errors name the key path")
{
    auto route = minimal + "    idempotency:\n";
    auto defaults = idemgate::config::parse(route + "      {}\n");
    CHECK(defaults.routes[0].idempotency.tombstone_ttl.count() == 0);
    CHECK(defaults.routes[0].idempotency.attempt_header.empty());
    auto c = idemgate::config::parse(route +
                                     "      tombstone_ttl: 30d\n      attempt_header: Idempotency-Attempt\n" +
                                     "limits:\n  max_record_body: 1MiB\n  max_response_body: 2MiB\n");
    CHECK(c.routes[0].idempotency.tombstone_ttl == std::chrono::hours(24 * 30));
    CHECK(c.routes[0].idempotency.attempt_header == "Idempotency-Attempt");
    CHECK(c.limits.max_record_body == 1024 * 1024);
    CHECK(c.limits.max_response_body == 2 * 1024 * 1024);
    CHECK(idemgate::config::parse(route + "      tombstone_ttl: 0\n")
              .routes[0]
              .idempotency.tombstone_ttl.count() == 0);

    auto bad = joined(problems_of(route + "      tombstone_ttl: forever\n      attempt_header: \"A B\"\n" +
                                  "limits:\n  max_record_body: 4MiB\n  max_response_body: 2MiB\n"));
    CHECK(bad.find("routes[0].idempotency.tombstone_ttl: \"forever\" is not a duration") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.attempt_header: \"A B\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("limits.max_record_body: must not be above limits.max_response_body") !=
          std::string::npos);
}

TEST_CASE("key_format and key_space parse, and their errors name the key path")
{
    using namespace config_test;
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /a/
    upstream: orders
    idempotency:
      key_format: { min_length: 16, max_length: 64, pattern: "ord-[0-9a-f]+" }
      key_space: route
  - path_prefix: /b/
    upstream: orders
    idempotency:
      key_format: { pattern: uuid }
  - path_prefix: /c/
    upstream: orders
    idempotency: {}
)",
                        no_env);
    const auto& a = c.routes[0].idempotency;
    CHECK(a.key_format.min_length == 16);
    CHECK(a.key_format.max_length == 64);
    CHECK(a.key_format.pattern == "ord-[0-9a-f]+");
    CHECK_FALSE(a.key_format.uuid);
    CHECK(a.key_format.regex);
    CHECK(a.key_space == cfg::key_space_mode::route);
    const auto& b = c.routes[1].idempotency;
    CHECK(b.key_format.uuid);
    CHECK_FALSE(b.key_format.regex);
    CHECK(b.key_space == cfg::key_space_mode::tenant);
    const auto& defaults = c.routes[2].idempotency;
    CHECK(defaults.key_format.min_length == 1);
    CHECK(defaults.key_format.max_length == 255);
    CHECK(defaults.key_format.pattern.empty());
    CHECK_FALSE(defaults.key_format.regex);
    CHECK(defaults.key_space == cfg::key_space_mode::tenant);

    auto bad = joined(problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /a/
    upstream: orders
    idempotency:
      key_format: { min_length: 40, max_length: 20, pattern: "([a-z" }
      key_space: global
  - path_prefix: /b/
    upstream: orders
    idempotency:
      key_format: { min_length: 0, max_length: 256, colour: red }
  - path_prefix: /c/
    upstream: orders
    idempotency:
      key_format: { max_length: 32, pattern: uuid }
  - path_prefix: /d/
    upstream: orders
    idempotency:
      key_format: { pattern: "(a)\\1" }
  - path_prefix: /e/
    upstream: orders
    idempotency:
      key_format: uuid
)"));
    CHECK(bad.find("routes[0].idempotency.key_format: min_length 40 is greater than max_length 20") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.key_format.pattern: \"([a-z\" is not a usable ECMAScript regular "
                   "expression") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.key_space: \"global\" is not a key space (use tenant or route)") !=
          std::string::npos);
    CHECK(bad.find("routes[1].idempotency.key_format.min_length: 0 out of range (1-255)") !=
          std::string::npos);
    CHECK(bad.find("routes[1].idempotency.key_format.max_length: 256 out of range (1-255)") !=
          std::string::npos);
    CHECK(bad.find("routes[1].idempotency.key_format.colour: unknown key") != std::string::npos);
    CHECK(bad.find(
              "routes[2].idempotency.key_format.pattern: uuid keys have 36 characters, outside min_length 1 "
              "to max_length 32") != std::string::npos);
    CHECK(bad.find("routes[3].idempotency.key_format.pattern: \"(a)\\1\" is not a usable ECMAScript regular "
                   "expression: back-references are not allowed") != std::string::npos);
    CHECK(bad.find("routes[4].idempotency.key_format: expected a map") != std::string::npos);
}

TEST_CASE("key_from and the key's JSON pointers parse, and their errors name the key path")
{
    using namespace config_test;
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /a/
    upstream: orders
    idempotency: { key_from: json, key_json_pointer: /client_ref }
  - path_prefix: /b/
    upstream: orders
    idempotency: { key_from: header_or_json, key_json_pointers: [/merchant_id, "/order~1ref"] }
  - path_prefix: /c/
    upstream: orders
    idempotency: {}
)",
                        no_env);
    CHECK(c.routes[0].idempotency.key_from == cfg::key_source::json);
    CHECK(c.routes[0].idempotency.key_json_pointers == std::vector<std::string>{"/client_ref"});
    CHECK(c.routes[1].idempotency.key_from == cfg::key_source::header_or_json);
    CHECK(c.routes[1].idempotency.key_json_pointers ==
          std::vector<std::string>{"/merchant_id", "/order~1ref"});
    CHECK(c.routes[2].idempotency.key_from == cfg::key_source::header);
    CHECK(c.routes[2].idempotency.key_json_pointers.empty());

    std::string bad;
    for (const auto& p : problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /a/
    upstream: orders
    idempotency: { key_from: body }
  - path_prefix: /b/
    upstream: orders
    idempotency: { key_from: json }
  - path_prefix: /c/
    upstream: orders
    idempotency: { key_from: json, key_json_pointer: client_ref }
  - path_prefix: /d/
    upstream: orders
    idempotency: { key_from: json, key_json_pointer: /a, key_json_pointers: [/b] }
  - path_prefix: /e/
    upstream: orders
    idempotency: { key_json_pointer: /a }
  - path_prefix: /f/
    upstream: orders
    idempotency: { key_from: json, key_json_pointers: [/a, /a, "/x~2"] }
  - path_prefix: /g/
    upstream: orders
    idempotency: { key_from: json, key_json_pointers: [] }
)"))
        bad += p + "\n";
    CHECK(bad.find("routes[0].idempotency.key_from: \"body\" is not a key source (use header, json or "
                   "header_or_json)") != std::string::npos);
    CHECK(bad.find(
              "routes[1].idempotency.key_from: \"json\" takes the key from the body: set key_json_pointer") !=
          std::string::npos);
    CHECK(
        bad.find("routes[2].idempotency.key_json_pointer: \"client_ref\" is not a JSON Pointer to a field") !=
        std::string::npos);
    CHECK(
        bad.find(
            "routes[3].idempotency.key_json_pointers: set key_json_pointer or key_json_pointers, not both") !=
        std::string::npos);
    CHECK(
        bad.find("routes[4].idempotency.key_json_pointer: only read with key_from: json or header_or_json") !=
        std::string::npos);
    CHECK(bad.find("routes[5].idempotency.key_json_pointers[1]: \"/a\" is listed twice") !=
          std::string::npos);
    CHECK(bad.find("routes[5].idempotency.key_json_pointers[2]: \"/x~2\" is not a JSON Pointer") !=
          std::string::npos);
    CHECK(bad.find("routes[6].idempotency.key_json_pointers: must not be empty") != std::string::npos);
}
