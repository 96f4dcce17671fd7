// SPDX-License-Identifier: Apache-2.0
// Credential scopes, fingerprint options, shadow mode and Idempotency-Expires,
// against the real binary over both stores.
#include "gateway_fixture.hpp"

#include <chrono>
#include <ctime>
#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

namespace {

const std::string secret = "0123456789abcdef0123456789abcdef-test-secret";

gateway_options credential_options()
{
    gateway_options options;
    options.store_extra = "  key_secret_env: IDEMGATE_TEST_KEY_SECRET\n";
    options.env = {{"IDEMGATE_TEST_KEY_SECRET", secret}};
    options.idempotency_extra = "      credential_headers: [Authorization]\n";
    return options;
}

// Parses an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") into Unix seconds; -1 if malformed.
long long parse_http_date(const std::string& text)
{
    std::tm tm{};
    char month[4] = {};
    char day[4] = {};
    if (std::sscanf(text.c_str(), "%3s, %d %3s %d %d:%d:%d GMT", day, &tm.tm_mday, month, &tm.tm_year,
                    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 7)
        return -1;
    static const std::string months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    auto pos = months.find(month);
    if (pos == std::string::npos)
        return -1;
    tm.tm_mon = static_cast<int>(pos / 3);
    tm.tm_year -= 1900;
    return static_cast<long long>(timegm(&tm));
}

} // namespace

TEST_SUITE_BEGIN("scopes");

TEST_CASE("credential scopes: two principals with one key are two requests, each replays its own")
{
    gateway_fixture f(credential_options());
    const std::string key = unique_key("cred");
    auto alice = f.post("/api/orders", key, R"({"amount":1})", {{"Authorization", "Bearer alice"}});
    auto mallory = f.post("/api/orders", key, R"({"amount":1})", {{"Authorization", "Bearer mallory"}});
    CHECK(alice.status == 201);
    CHECK(mallory.status == 201);
    CHECK(mallory.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);

    auto alice_again = f.post("/api/orders", key, R"({"amount":1})", {{"Authorization", "Bearer alice"}});
    CHECK(alice_again.header("idempotent-replayed") == "true");
    CHECK(alice_again.body == alice.body);
    auto mallory_again = f.post("/api/orders", key, R"({"amount":1})", {{"Authorization", "Bearer mallory"}});
    CHECK(mallory_again.body == mallory.body);
    // No credential at all is its own anonymous scope, not alice's.
    auto anonymous = f.post("/api/orders", key, R"({"amount":1})");
    CHECK(anonymous.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 3);

    // The raw credential never reaches the log.
    for (const auto& line : f.process().lines()) {
        CHECK(line.find("Bearer alice") == std::string::npos);
        CHECK(line.find("mallory") == std::string::npos);
    }
}

TEST_CASE("credential_headers without store.key_secret_env is a config error naming the key")
{
    gateway_options options;
    options.idempotency_extra = "      credential_headers: [Authorization]\n";
    auto store = make_store(options);
    temp_dir dir;
    auto path = dir.write_file("bad.yaml", gateway_yaml(store, 9, 10, options));
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    CHECK(proc.wait_exit(10s) == 1);
    CHECK(proc.output().find("routes[0].idempotency.credential_headers: needs store.key_secret_env") !=
          std::string::npos);
}

TEST_CASE("canonical JSON fingerprints: key order and ignored fields do not make a mismatch")
{
    gateway_options options;
    options.idempotency_extra = "      fingerprint:\n        ignore_json_fields: [\"/client_sent_at\"]\n";
    gateway_fixture f(options);
    const std::string key = unique_key("canon");
    auto first = f.post("/api/orders", key, R"({"a":1,"b":[1,2],"client_sent_at":"10:00"})");
    CHECK(first.status == 201);
    auto reordered =
        f.post("/api/orders", key, "{ \"b\" : [1, 2], \"client_sent_at\": \"10:05\", \"a\": 1 }");
    CHECK(reordered.header("idempotent-replayed") == "true");
    CHECK(reordered.body == first.body);
    auto changed = f.post("/api/orders", key, R"({"a":2,"b":[1,2]})");
    CHECK(changed.status == 409);
    auto reordered_array = f.post("/api/orders", key, R"({"a":1,"b":[2,1]})");
    CHECK(reordered_array.status == 409);
    CHECK(f.executions() == 1);
}

TEST_CASE("canonical JSON fingerprints: integers past 64 bits differing in the last digit are a mismatch")
{
    gateway_options options;
    options.idempotency_extra = "      fingerprint:\n        json: canonical\n";
    gateway_fixture f(options);
    const std::string key = unique_key("account");
    REQUIRE(f.post("/api/orders", key, R"({"account":18446744073709551616})").status == 201);
    // Both read as one double: another account's retry was once replayed this answer.
    auto other = f.post("/api/orders", key, R"({"account":18446744073709551617})");
    CHECK(is_problem(other, 409));
    CHECK(other.header("idempotent-replayed") != "true");
    auto again = f.post("/api/orders", key, "{ \"account\" : 18446744073709551616 }");
    CHECK(again.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("a header listed in fingerprint.headers joins the fingerprint; the query can be left out")
{
    gateway_options options;
    options.idempotency_extra = "      fingerprint:\n        headers: [Content-Type]\n        query: false\n";
    gateway_fixture f(options);
    const std::string key = unique_key("fp-header");
    auto first = gateway_request(f.port(), "POST", "/api/orders?trace=1",
                                 {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    CHECK(first.status == 201);
    auto other_query =
        gateway_request(f.port(), "POST", "/api/orders?trace=2",
                        {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    CHECK(other_query.header("idempotent-replayed") == "true");
    auto other_type = gateway_request(f.port(), "POST", "/api/orders",
                                      {{"Idempotency-Key", key}, {"Content-Type", "text/plain"}}, "{}");
    CHECK(other_type.status == 409);
    CHECK(f.executions() == 1);
}

TEST_CASE("shadow mode forwards every duplicate and counts what enforcement would have done")
{
    gateway_options options;
    options.idempotency_extra = "      mode: shadow\n";
    gateway_fixture f(options);
    const std::string key = unique_key("shadow");
    auto first = f.post("/api/orders", key, "{}");
    auto second = f.post("/api/orders", key, "{}");
    auto other_body = f.post("/api/orders", key, R"({"x":1})");
    auto bad_key = f.post("/api/orders", "bad key", "{}");
    CHECK(first.status == 201);
    CHECK(second.status == 201);
    CHECK(second.header("idempotent-replayed") != "true");
    CHECK(other_body.status == 201);
    CHECK(bad_key.status == 201);
    CHECK(f.executions() == 4);
    // Shadow mode changes nothing the client sees but says that the key was not enforced.
    for (const auto* res : {&first, &second, &other_body, &bad_key})
        CHECK(res->header("idempotency-status") == "ignored");
    auto finding = [&](const std::string& what) {
        return f.process()
            .wait_for_line(
                [&](const std::string& l) {
                    return l.find("\"shadow\":\"" + what + "\"") != std::string::npos;
                },
                5s)
            .has_value();
    };
    CHECK(finding("would_replay"));
    CHECK(finding("would_mismatch"));
    CHECK(finding("would_reject"));
    auto metrics = http_request(f.gateway->admin_port(), "GET", "/metrics");
    CHECK(metrics.body.find("idemgate_shadow_total{would=\"replay\"} 1") != std::string::npos);
    CHECK(metrics.body.find("idemgate_shadow_total{would=\"mismatch\"} 1") != std::string::npos);
}

TEST_CASE("expose_expiry: recorded and replayed answers carry the record's expiry")
{
    gateway_options options;
    options.record_ttl = "2d";
    options.idempotency_extra = "      expose_expiry: true\n";
    gateway_fixture f(options);
    const std::string key = unique_key("expiry");
    // system_clock, as the gateway reads it: time() is the coarse clock, which can still show the
    // previous second when the gateway's clock_gettime has crossed into the next one.
    auto unix_seconds = [] {
        return static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
    };
    auto before = unix_seconds();
    auto first = f.post("/api/orders", key, "{}");
    auto after = unix_seconds();
    REQUIRE(first.has_header("idempotency-expires"));
    auto expires = parse_http_date(first.header("idempotency-expires"));
    CHECK(expires >= before + 2 * 86400 - 1);
    CHECK(expires <= after + 2 * 86400);
    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("idempotency-expires") == first.header("idempotency-expires"));
    // An answer that is not recorded makes no promise.
    auto failed = f.post("/api/orders", unique_key("expiry-5xx"), "{}", {{"X-Test-Status", "503"}});
    CHECK(failed.status == 503);
    CHECK_FALSE(failed.has_header("idempotency-expires"));
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("unknown-outcome");

TEST_CASE("on_unknown_outcome: hold keeps a key whose request was sent but not answered")
{
    gateway_options options;
    options.idempotency_extra = "      on_unknown_outcome: hold\n";
    options.timeouts = "  upstream_response: 300ms\n";
    gateway_fixture f(options);

    SUBCASE("timeout after sending")
    {
        const std::string key = unique_key("hold-timeout");
        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}});
        CHECK(is_problem(first, 504));
        auto retry = f.post("/api/orders", key, "{}");
        CHECK(is_problem(retry, 409));
        CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
        CHECK(f.wait_for_executions(1));
        CHECK(f.executions() == 1);
    }
    SUBCASE("connection lost after sending")
    {
        const std::string key = unique_key("hold-abort");
        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Abort", "1"}});
        CHECK(is_problem(first, 502));
        auto retry = f.post("/api/orders", key, "{}");
        CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
        CHECK(f.executions() == 1);
    }
    SUBCASE("never sent: a connect failure still releases the key")
    {
        const std::string key = unique_key("hold-connect");
        auto first = f.post("/down/orders", key, "{}");
        CHECK(is_problem(first, 502));
        auto retry = f.post("/down/orders", key, "{}");
        CHECK(is_problem(retry, 502)); // tried again, not held
    }
}

TEST_CASE("the default on_unknown_outcome holds: the retry does not run again")
{
    gateway_options options;
    options.timeouts = "  upstream_response: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("hold-timeout-default");
    auto first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}});
    CHECK(is_problem(first, 504));
    CHECK(first.header("idempotency-status") == "held");
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(is_problem(retry, 409));
    CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(f.wait_for_executions(1));
    CHECK(f.executions() == 1);
}

TEST_CASE("on_unknown_outcome: release is the opt-in that runs the retry again")
{
    gateway_options options;
    options.idempotency_extra = "      on_unknown_outcome: release\n";
    options.timeouts = "  upstream_response: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("release-timeout");
    CHECK(is_problem(f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}}), 504));
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(retry.status == 201);
    CHECK(f.executions() == 2);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("admin-api");

namespace {

gateway_options admin_options()
{
    gateway_options options = credential_options();
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    return options;
}

http_response admin_call(gateway_fixture& f, const std::string& method, const std::string& target,
                         const std::string& token = admin_token)
{
    std::vector<std::pair<std::string, std::string>> headers;
    if (!token.empty())
        headers.emplace_back("Authorization", "Bearer " + token);
    return http_request(f.gateway->admin_port(), method, target, headers, {});
}

} // namespace

TEST_CASE("admin API: a token is required, the record is shown and can be deleted")
{
    gateway_fixture f(admin_options());
    const std::string key = unique_key("admin");
    REQUIRE(f.post("/api/orders", key, "{}", {{"Authorization", "Bearer alice"}}).status == 201);
    const std::string target = "/admin/v1/records?key=" + key + "&credential=Bearer%20alice";

    CHECK(is_problem(admin_call(f, "GET", target, ""), 401));
    auto wrong = admin_call(f, "GET", target, "not-the-token");
    CHECK(is_problem(wrong, 401));
    CHECK(wrong.has_header("www-authenticate"));

    auto shown = admin_call(f, "GET", target);
    REQUIRE(shown.status == 200);
    auto record = parse_object(shown.body);
    CHECK(record["state"] == "completed");
    CHECK(record["status"] == 201);
    CHECK(record["fingerprint"].as_string().size() == 64);
    CHECK(record["expires_in_ms"].to_number<long long>() > 0);
    CHECK(record["body_bytes"].to_number<long long>() > 0);

    // Another principal's scope has no record under this key.
    CHECK(is_problem(admin_call(f, "GET", "/admin/v1/records?key=" + key + "&credential=Bearer%20mallory"),
                     404));

    auto deleted = admin_call(f, "DELETE", target);
    CHECK(deleted.status == 204);
    CHECK(is_problem(admin_call(f, "DELETE", target), 404));
    auto again = f.post("/api/orders", key, "{}", {{"Authorization", "Bearer alice"}});
    CHECK(again.status == 201);
    CHECK(again.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
}

TEST_CASE("admin API: the access log's principal names a credential scope without the credential")
{
    gateway_fixture f(admin_options());
    const std::string key = unique_key("admin-principal");
    auto alice = f.post("/api/orders", key, "{}", {{"Authorization", "Bearer alice"}});
    REQUIRE(alice.status == 201);
    REQUIRE(f.post("/api/orders", key, "{}", {{"Authorization", "Bearer mallory"}}).status == 201);
    // Alice's request's access line (found by its request ID: two workers may write their lines
    // in either order), and the principal it shows.
    const auto alice_id = alice.header("x-request-id");
    REQUIRE(!alice_id.empty());
    std::string principal;
    for (int attempt = 0; attempt < 50 && principal.empty(); ++attempt) {
        for (const auto& line : f.process().lines()) {
            auto doc = parse_object(line);
            if (doc.contains("principal") && doc["request_id"] == alice_id.c_str()) {
                principal = std::string(doc["principal"].as_string());
                break;
            }
        }
        if (principal.empty())
            std::this_thread::sleep_for(100ms);
    }
    REQUIRE(principal.size() == 64);
    const std::string target = "/admin/v1/records?key=" + key + "&principal=" + principal;
    auto shown = admin_call(f, "GET", target);
    REQUIRE(shown.status == 200);
    CHECK(parse_object(shown.body)["state"] == "completed");
    CHECK(is_problem(
        admin_call(f, "GET", "/admin/v1/records?key=" + key + "&principal=" + principal.substr(0, 16)), 400));
    CHECK(is_problem(admin_call(f, "GET", target + "&credential=Bearer%20alice"), 400));
    CHECK(admin_call(f, "DELETE", target).status == 204);
    // Alice's key runs again; mallory's record is untouched.
    CHECK(
        f.post("/api/orders", key, "{}", {{"Authorization", "Bearer alice"}}).header("idempotent-replayed") !=
        "true");
    CHECK(f.post("/api/orders", key, "{}", {{"Authorization", "Bearer mallory"}})
              .header("idempotent-replayed") == "true");
    CHECK(f.executions() == 3);
    // No credential at all: the anonymous scope is "-".
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    CHECK(admin_call(f, "GET", "/admin/v1/records?key=" + key + "&principal=-").status == 200);
}

TEST_CASE("admin API: off without admin.token_env")
{
    gateway_fixture f;
    CHECK(is_problem(admin_call(f, "GET", "/admin/v1/records?key=k"), 404));
}

TEST_CASE("admin API: a key held with an unknown outcome is released by DELETE")
{
    gateway_options options = admin_options();
    options.idempotency_extra += "      on_unknown_outcome: hold\n";
    options.timeouts = "  upstream_response: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("admin-hold");
    CHECK(is_problem(f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}}), 504));
    auto shown = admin_call(f, "GET", "/admin/v1/records?key=" + key + "&credential=");
    CHECK(parse_object(shown.body)["state"] == "outcome_unknown");
    CHECK(parse_object(f.post("/api/orders", key, "{}").body)["type"] ==
          "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(admin_call(f, "DELETE", "/admin/v1/records?key=" + key + "&credential=").status == 204);
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(retry.status == 201);
    CHECK(f.wait_for_executions(2));
}

TEST_SUITE_END();
