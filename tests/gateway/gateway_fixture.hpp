// SPDX-License-Identifier: Apache-2.0
#pragma once
// One gateway in front of one test upstream, over the store chosen by IDEMGATE_TEST_STORE
// (memory by default, "redis" starts a private redis-server, "map" is the test-only backend of
// IDEMGATE_TEST_BACKEND builds), so every test in this folder runs unchanged against each store.
#include "idemgate/test/harness.hpp"

#include <boost/json.hpp>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::test {

// The `store:` block of the YAML plus the server behind it, if any.
struct store_under_test {
    std::unique_ptr<redis_server> redis;
    std::shared_ptr<redis_cluster> cluster; // IDEMGATE_TEST_STORE=cluster (shared by tests)
    std::string yaml;                       // top-level "store:" block, newline-terminated
    // Records outlive the gateway process (Redis, standalone or cluster).
    bool persistent() const { return redis || cluster; }
};

// Knobs a test may turn; each string is a block of YAML lines inserted as described.
struct gateway_options {
    std::string on_failure = "reject";      // store.on_failure
    std::size_t memory_max_entries = 10000; // store.memory.max_entries (memory store only)
    std::string lock_ttl = "30s";           // /api/ route
    std::string record_ttl = "24h";         // /api/ route
    std::string idempotency_extra; // extra keys for the /api/ route's idempotency block (6-space indent)
    std::string limits;            // keys under limits: (2-space indent)
    std::string timeouts;          // keys under timeouts: (2-space indent)
    std::string top_level;         // extra top-level keys
    std::string extra_routes;      // more routes after /plain/ ("  - path_prefix: ..." lines)
    std::string access_log = "access_log: true\n"; // the access_log key (a line or a block)
    std::string store_extra;                       // extra keys under store: (2-space indent)
    std::string redis_extra; // extra keys under store.redis: (4-space indent; Redis stores only)
    std::vector<std::pair<std::string, std::string>> env; // extra environment of the gateway
    bool breaks_store = false; // the test calls break_store(): a cluster of its own, not the shared one
};

// Routes of the generated config:
//   /api/     -> upstream, idempotency on (POST, PATCH), key optional
//   /tenant/  -> upstream, idempotency with tenant_header X-Tenant-ID
//   /strict/  -> upstream, idempotency with required: true
//   /down/    -> an upstream address nobody listens on, idempotency on
//   /plain/   -> upstream, no idempotency
// memory, redis when IDEMGATE_TEST_STORE=redis, a Redis Cluster (3 + 3) when it is cluster:
// one cluster shared by the tests of the process, i.e. of one ctest entry (each gateway under its
// own key_prefix), unless options.breaks_store.
store_under_test make_store(const gateway_options& options = {});

std::string gateway_yaml(const store_under_test& store, std::uint16_t upstream_port, std::uint16_t dead_port,
                         const gateway_options& options);

class gateway_fixture {
public:
    explicit gateway_fixture(gateway_options options = {});

    test_upstream_process upstream;
    store_under_test store;
    std::unique_ptr<gateway_process> gateway;

    std::uint16_t port() const { return gateway->port(); }
    child_process& process() { return gateway->process(); }
    long executions() { return upstream.executions(); }

    // POST over a fresh connection with an Idempotency-Key (none when key is empty).
    http_response post(const std::string& path, const std::string& key, const std::string& body,
                       std::vector<std::pair<std::string, std::string>> headers = {});
    // Waits (bounded) until the upstream has executed `count` requests; false on timeout.
    bool wait_for_executions(long count, milliseconds timeout = 5s);
    // Makes the store fail from now on: stops redis, or fills a memory store created with
    // memory_max_entries = 1 (one recorded key); returns a description for messages.
    std::string break_store();
    // Starts a new gateway process (same config, same store) in place of the current one,
    // which must have exited or will be killed; waits until it is ready.
    void start_gateway();
    // Starts one more gateway process beside the current one (same config, same store: a second
    // instance of a fleet); returns it once it is ready.
    std::unique_ptr<gateway_process> start_another();

private:
    std::string yaml_;
    std::vector<std::pair<std::string, std::string>> env_;
    bool options_breaks_store_ = false;
};

// Waits (bounded, 10 s) until the gateway's /readyz answers 200: "listening" means the sockets
// are bound, while a remote store may still be connecting. Throws with the gateway's output.
void wait_until_ready(gateway_process& gateway);

// The store this process's tests run over: IDEMGATE_TEST_STORE, "memory" when it is unset.
std::string store_kind();

// True when this run uses a Redis store (IDEMGATE_TEST_STORE=redis or cluster).
bool redis_store_under_test();

// A doctest decorator for a case or a whole suite written for some stores only:
//   TEST_CASE("..." * needs_store("redis"))
//   TEST_SUITE_BEGIN("cluster" * needs_store("cluster"));
// On any other store doctest skips it: counted as skipped rather than passed, named in the output
// by the listener in gateway_fixture.cpp, and cmake/doctest_suites.cmake writes no ctest entry for
// a suite left with nothing to run on a store. Decided at registration (static initialisation):
// a process's store is fixed by its environment.
struct needs_store {
    explicit needs_store(const char* store, const char* or_store = nullptr);
    template<class Test>
    void fill(Test& test) const
    {
        test.m_skip = skip;
        test.m_description = reason;
    }
    bool skip = false;
    const char* reason = nullptr; // "needs IDEMGATE_TEST_STORE=redis"; doctest keeps the pointer
};

// Socket timeout for every client call in these tests: the gateway answers in milliseconds, so
// a hang (e.g. a response without framing) fails fast instead of stalling the suite.
inline constexpr milliseconds io_timeout = 4s;

// http_request with io_timeout.
http_response gateway_request(std::uint16_t port, const std::string& method, const std::string& path,
                              const std::vector<std::pair<std::string, std::string>>& headers = {},
                              const std::string& body = {});

// Assertion helpers shared by the test files.
// The JSON object in `text`, or an empty object when it is not one.
boost::json::object parse_object(const std::string& text);
// An RFC 9457 answer: this status, application/problem+json, string type/title/detail, numeric status.
bool is_problem(const http_response& res, int status);
std::string unique_key(const std::string& stem);
// `raw` without the header lines named `names` (as sent, e.g. "Date"): the fields every answer
// carries its own value of (X-Request-Id, Date, Idempotency-Status), left out to compare bytes.
std::string without_fields(std::string raw, std::initializer_list<std::string_view> names);
// Polls the sample `series` until it reaches `want` or 3 s pass, and returns its last value
// (outcomes and route metrics are counted just after the answer is sent).
double metric_reaching(gateway_fixture& f, const std::string& series, double want);
// The admin token the tests' gateways read from IDEMGATE_TEST_ADMIN_TOKEN.
inline const std::string admin_token = "admin-token-0123456789";

} // namespace idemgate::test
