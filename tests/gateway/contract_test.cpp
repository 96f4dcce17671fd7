// SPDX-License-Identifier: Apache-2.0
// What the gateway publishes and answers itself on the client listener: the client lookup of a
// key in the caller's own scope, the OpenAPI contract (--contract and /.well-known/idempotency),
// and the pages of its problem types. Against the real binary over both stores.
#include "gateway_fixture.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

namespace {

const std::string secret = "0123456789abcdef0123456789abcdef-test-secret";

// /api/ keyed per credential (Authorization) with a lookup path; /t/ keyed per tenant with its
// own. A 500 holds the key, so every state can be shown.
gateway_options lookup_options()
{
    gateway_options options;
    options.store_extra = "  key_secret_env: IDEMGATE_TEST_KEY_SECRET\n";
    options.env = {{"IDEMGATE_TEST_KEY_SECRET", secret}};
    options.idempotency_extra = "      credential_headers: [Authorization]\n"
                                "      client_lookup_path: \"/api/keys/\"\n"
                                "      on_status: { \"500\": hold }\n";
    options.extra_routes = "  - path_prefix: \"/t/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      tenant_header: X-Tenant-ID\n"
                           "      client_lookup_path: \"/t/keys/\"\n";
    return options;
}

http_response lookup(gateway_fixture& f, const std::string& target,
                     std::vector<std::pair<std::string, std::string>> headers = {})
{
    return gateway_request(f.port(), "GET", target, headers);
}

std::string state_of(const http_response& res)
{
    auto doc = parse_object(res.body);
    auto* state = doc.if_contains("state");
    return res.status == 200 && state && state->is_string() ? std::string(state->as_string()) : "";
}

const std::vector<std::pair<std::string, std::string>> alice{{"Authorization", "Bearer alice"}};
const std::vector<std::pair<std::string, std::string>> mallory{{"Authorization", "Bearer mallory"}};

std::string type_of(const http_response& res)
{
    auto doc = parse_object(res.body);
    auto* type = doc.if_contains("type");
    return type && type->is_string() ? std::string(type->as_string()) : "";
}

} // namespace

TEST_SUITE_BEGIN("contract");

TEST_CASE("client lookup: each state in the caller's own scope, and nothing is executed")
{
    gateway_fixture f(lookup_options());
    const auto key = unique_key("lookup");
    auto absent = lookup(f, "/api/keys/" + key, alice);
    REQUIRE(absent.status == 200);
    CHECK(absent.header("content-type") == "application/json");
    auto doc = parse_object(absent.body);
    CHECK(doc["state"] == "absent");
    CHECK(doc["replayable"] == false);
    CHECK(doc["status"].is_null());
    CHECK(doc["location"].is_null());
    CHECK(f.executions() == 0);

    auto first = f.post("/api/orders", key, "{}", alice);
    REQUIRE(first.status == 201);
    auto completed = lookup(f, "/api/keys/" + key, alice);
    doc = parse_object(completed.body);
    CHECK(doc["state"] == "completed");
    CHECK(doc["status"] == 201);
    CHECK(doc["replayable"] == true);
    CHECK(doc["location"] == boost::json::value(first.header("location")));
    CHECK(doc["created"].as_string().ends_with("Z"));
    CHECK(doc["expires"].as_string() > doc["created"].as_string());
    // The key in the path is read like the key field: the quoted spelling, percent-encoded.
    CHECK(state_of(lookup(f, "/api/keys/%22" + key + "%22", alice)) == "completed");
    // Another credential, and no credential, are other scopes.
    CHECK(state_of(lookup(f, "/api/keys/" + key, mallory)) == "absent");
    CHECK(state_of(lookup(f, "/api/keys/" + key)) == "absent");

    const auto held = unique_key("lookup-held");
    REQUIRE(f.post("/api/orders", held, "{}", {{"Authorization", "Bearer alice"}, {"X-Test-Status", "500"}})
                .status == 500);
    CHECK(state_of(lookup(f, "/api/keys/" + held, alice)) == "outcome_unknown");

    const auto slow = unique_key("lookup-slow");
    std::thread first_slow([&] {
        f.post("/api/orders", slow, "{}", {{"Authorization", "Bearer alice"}, {"X-Test-Delay-Ms", "800"}});
    });
    REQUIRE(f.wait_for_executions(3));
    auto during = lookup(f, "/api/keys/" + slow, alice);
    first_slow.join();
    CHECK(state_of(during) == "in_flight");
    CHECK(parse_object(during.body)["replayable"] == false);
    CHECK(state_of(lookup(f, "/api/keys/" + slow, alice)) == "completed");
    CHECK(f.executions() == 3); // lookups never reach the upstream
}

TEST_CASE("client lookup: a bad key is refused like a bad key field; only GET")
{
    gateway_fixture f(lookup_options());
    for (const char* bad : {"/api/keys/%ZZ", "/api/keys/", "/api/keys/%22open", "/api/keys/a%20b"}) {
        auto res = lookup(f, bad, alice);
        CHECK_MESSAGE(is_problem(res, 400), bad);
        CHECK(type_of(res) == "/.well-known/idempotency/problems/invalid-idempotency-key");
    }
    auto post = gateway_request(f.port(), "POST", "/api/keys/k1", alice, "{}");
    CHECK(is_problem(post, 405));
    CHECK(post.header("allow") == "GET");
    CHECK(f.executions() == 0);
}

TEST_CASE("every 405 is a method-not-allowed problem whose status is 405, with Allow")
{
    gateway_options options;
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", "admin-token-0123456789");
    gateway_fixture f(options);
    const std::vector<std::pair<std::string, std::string>> auth{
        {"Authorization", "Bearer admin-token-0123456789"}};
    struct row {
        std::uint16_t port;
        const char* method;
        const char* path;
        const char* allow;
    };
    const row rows[] = {
        {f.gateway->admin_port(), "POST", "/healthz", "GET, HEAD"},
        {f.gateway->admin_port(), "GET", "/admin/v1/reload", "POST"},
        {f.gateway->admin_port(), "PUT", "/admin/v1/records?key=k", "GET, DELETE"},
        {f.port(), "POST", "/.well-known/idempotency/problems/no-route", "GET"},
    };
    for (const auto& r : rows) {
        CAPTURE(std::string(r.path));
        auto res = http_request(r.port, r.method, r.path, auth, {});
        CHECK(is_problem(res, 405)); // the body's status is 405 too
        CHECK(type_of(res) == "/.well-known/idempotency/problems/method-not-allowed");
        CHECK(res.header("allow") == r.allow);
    }
}

TEST_CASE("client lookup: a tenant sees only its own records")
{
    gateway_fixture f(lookup_options());
    const auto key = unique_key("tenant-lookup");
    REQUIRE(f.post("/t/orders", key, "{}", {{"X-Tenant-ID", "acme"}}).status == 201);
    CHECK(state_of(lookup(f, "/t/keys/" + key, {{"X-Tenant-ID", "acme"}})) == "completed");
    CHECK(state_of(lookup(f, "/t/keys/" + key, {{"X-Tenant-ID", "globex"}})) == "absent");
    auto no_tenant = lookup(f, "/t/keys/" + key);
    CHECK(is_problem(no_tenant, 400));
    CHECK(type_of(no_tenant) == "/.well-known/idempotency/problems/missing-tenant");
    // The /api/ scope (no tenant, a credential) is yet another.
    CHECK(state_of(lookup(f, "/api/keys/" + key, alice)) == "absent");
    CHECK(f.executions() == 1);
}

TEST_CASE("client lookup: an answer too large to record is completed but not replayable; an expired "
          "record with a tombstone is expired")
{
    gateway_options options;
    options.record_ttl = "1s";
    options.limits = "  max_record_body: 64KiB\n";
    options.idempotency_extra = "      client_lookup_path: \"/api/keys/\"\n"
                                "      tombstone_ttl: 30s\n";
    gateway_fixture f(options);
    const auto big = unique_key("lookup-big");
    auto first =
        gateway_request(f.port(), "POST", "/api/orders",
                        {{"Idempotency-Key", big}, {"X-Test-Body-Size", std::to_string(256 * 1024)}}, "{}");
    REQUIRE(first.status == 201);
    auto doc = parse_object(lookup(f, "/api/keys/" + big).body);
    CHECK(doc["state"] == "completed");
    CHECK(doc["status"] == 201);
    CHECK(doc["replayable"] == false);
    CHECK(doc["location"] == boost::json::value(first.header("location")));

    const auto old = unique_key("lookup-expired");
    REQUIRE(f.post("/api/orders", old, "{}").status == 201);
    CHECK(state_of(lookup(f, "/api/keys/" + old)) == "completed");
    std::this_thread::sleep_for(std::chrono::milliseconds(1300)); // the record expires, its tombstone stays
    doc = parse_object(lookup(f, "/api/keys/" + old).body);
    CHECK(doc["state"] == "expired");
    CHECK(doc["status"] == 201);
    CHECK(doc["replayable"] == false);
    CHECK(doc["expires"].is_null());
    CHECK(doc["created"].is_string());
    CHECK(f.executions() == 2);
}

TEST_CASE("contract: --contract prints a valid OpenAPI 3.1 document, the one /.well-known/idempotency serves")
{
    gateway_options options;
    options.idempotency_extra =
        "      key_format: { min_length: 8, max_length: 64, pattern: \"[a-z0-9-]+\" }\n"
        "      mismatch_status: 422\n"
        "      on_status: { \"409\": release }\n";
    gateway_fixture f(options);
    auto served = gateway_request(f.port(), "GET", "/.well-known/idempotency");
    REQUIRE(served.status == 200);
    CHECK(served.header("content-type") == "application/json");
    CHECK(f.executions() == 0);

    temp_dir dir;
    auto yaml = gateway_yaml(f.store, f.upstream.port(), f.upstream.port(), options);
    for (const char* placeholder : {"${LISTEN}", "${ADMIN}"})
        yaml.replace(yaml.find(placeholder), std::string_view(placeholder).size(), "127.0.0.1:0");
    auto config_path = dir.write_file("gateway.yaml", yaml);
    child_process contract(gateway_bin(), {"--config", config_path, "--contract"});
    REQUIRE_MESSAGE(contract.wait_exit(10s) == 0, contract.output());
    auto printed = contract.output();
    auto doc = parse_object(printed);
    // The same document but for the port numbers nothing in it names.
    CHECK(doc == parse_object(served.body));

    CHECK(doc["openapi"] == "3.1.0");
    auto& post = doc["paths"].as_object()["/api/"].as_object()["post"].as_object();
    auto& key = post["parameters"].as_array()[0].as_object();
    CHECK(key["name"] == "Idempotency-Key");
    CHECK(key["in"] == "header");
    auto& schema = key["schema"].as_object();
    CHECK(schema["minLength"] == 8);
    CHECK(schema["maxLength"] == 64);
    CHECK(schema["pattern"] == "^(?:[a-z0-9-]+)$");
    auto& responses = post["responses"].as_object();
    for (const char* status : {"400", "409", "422", "503", "default"})
        CHECK_MESSAGE(responses.contains(status), status);
    auto& mismatch = responses["422"].as_object()["x-problem-types"].as_array();
    CHECK(mismatch[0] == "/.well-known/idempotency/problems/idempotency-key-reused");
    auto& replay_headers = responses["default"].as_object()["headers"].as_object();
    CHECK(replay_headers.contains("Idempotent-Replayed"));
    CHECK(replay_headers.contains("Idempotency-Status"));
    auto& policy = post["x-idempotency"].as_object();
    CHECK(policy["lock_ttl"] == "PT30S");
    CHECK(policy["record_ttl"] == "PT86400S");
    CHECK(policy["tombstone_ttl"] == "PT0S"); // off
    CHECK(policy["on_status"].as_object()["409"] == "release");
    CHECK(policy["on_status"].as_object()["5xx"] == "release");
    CHECK(doc["paths"].as_object().contains("/api/"));
    CHECK_FALSE(doc["paths"].as_object().contains("/plain/")); // not guarded

    // A schema check against the OpenAPI Initiative's 3.1 document schema (jsonschema, Debian's
    // python3-jsonschema), which also resolves every local $ref.
    const std::string check = "python3 " IDEMGATE_SOURCE_DIR "/tests/gateway/check_openapi.py ";
    auto file = dir.write_file("contract.json", printed);
    child_process validator("/bin/sh", {"-c", check + file});
    auto status = validator.wait_exit(60s);
    CHECK_MESSAGE(status == 0, "tests/gateway/check_openapi.py (scripts/install-deps.sh installs "
                               "python3-jsonschema and python3-yaml): "
                                   << validator.output());
    // And it can fail: a document without its responses is refused.
    auto broken = printed;
    broken.replace(broken.find("\"responses\""), 11, "\"responsez\"");
    child_process refused("/bin/sh", {"-c", check + dir.write_file("broken.json", broken)});
    CHECK(refused.wait_exit(60s) != 0);
}

TEST_CASE("problem pages: every type's page is served, and answers link to them")
{
    gateway_fixture f;
    for (const char* slug : {"bad-request",
                             "plain-http-to-tls-port",
                             "bad-framing",
                             "bad-connection-header",
                             "missing-idempotency-key",
                             "invalid-idempotency-key",
                             "missing-tenant",
                             "client-certificate-required",
                             "invalid-tenant",
                             "unauthorized",
                             "record-not-found",
                             "no-route",
                             "invalid-path",
                             "request-in-flight",
                             "outcome-unknown",
                             "request-released",
                             "tenant-quota-exceeded",
                             "too-many-waiting",
                             "idempotency-key-reused",
                             "body-too-large",
                             "header-too-large",
                             "request-timeout",
                             "upstream-unavailable",
                             "upstream-timeout",
                             "store-unavailable",
                             "store-full",
                             "shutting-down",
                             "method-not-allowed",
                             "invalid-configuration",
                             "method-not-supported"}) {
        auto page =
            gateway_request(f.port(), "GET", std::string("/.well-known/idempotency/problems/") + slug);
        CHECK_MESSAGE(page.status == 200, slug);
        CHECK(page.header("content-type") == "text/html; charset=utf-8");
        CHECK(page.body.find(std::string("<code>") + slug + "</code>") != std::string::npos);
        CHECK(page.body.find("What to do") != std::string::npos);
    }
    CHECK(
        is_problem(gateway_request(f.port(), "GET", "/.well-known/idempotency/problems/no-such-type"), 404));
    // A refusal's type is a page the gateway serves.
    auto refused = gateway_request(f.port(), "POST", "/strict/orders", {}, "{}");
    REQUIRE(is_problem(refused, 400));
    auto page = gateway_request(f.port(), "GET", type_of(refused));
    CHECK(page.status == 200);
    CHECK(page.body.find("Idempotency-Key is required") != std::string::npos);
    CHECK(f.executions() == 0);
}

TEST_CASE("problem types: with problems.base_uri they name the operator's documentation")
{
    gateway_options options;
    options.top_level = "problems:\n  base_uri: \"https://docs.example.com/errors/\"\n";
    gateway_fixture f(options);
    auto refused = gateway_request(f.port(), "POST", "/strict/orders", {}, "{}");
    CHECK(type_of(refused) == "https://docs.example.com/errors/missing-idempotency-key");
}

TEST_CASE("--check warns when a route covers the gateway's own paths")
{
    temp_dir dir;
    auto path = dir.write_file("covered.yaml", R"(upstreams:
  orders: { address: "127.0.0.1:9" }
routes:
  - path_prefix: "/api/keys"
    upstream: orders
  - path_prefix: "/api/"
    upstream: orders
    idempotency: { client_lookup_path: "/api/keys/" }
  - path_prefix: "/.well-known/"
    upstream: orders
  - path_prefix: "/"
    upstream: orders
)");
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    CHECK(proc.wait_exit(10s) == 0);
    auto out = proc.output();
    CHECK(out.find("warning: routes[0].path_prefix: \"/api/keys\" covers "
                   "routes[1].idempotency.client_lookup_path") != std::string::npos);
    CHECK(out.find("warning: routes[2].path_prefix: \"/.well-known/\" covers the gateway's own") !=
          std::string::npos);
    CHECK(out.find("routes[3]") == std::string::npos); // "/" is a catch-all, not a claim on them
    CHECK(out.find("routes[1].path_prefix") == std::string::npos);
}

TEST_SUITE_END();
