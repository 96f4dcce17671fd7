// SPDX-License-Identifier: Apache-2.0
// The three layers composed, with real processes: the idemgate gateway (API layer) in front of
// the order-service (domain guard + inbox), Redis as the gateway's store and the payment stream.
#include "fixture.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <stdexcept>
#include <thread>

using namespace idemgate::order_service_test;

namespace {

std::string gateway_yaml(const std::string& redis_address, std::uint16_t order_service_port)
{
    return "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 2\n"
           "store:\n"
           "  type: redis\n"
           "  redis: { address: \"" +
           redis_address +
           "\" }\n"
           "upstreams:\n"
           "  orders: { address: \"127.0.0.1:" +
           std::to_string(order_service_port) +
           "\" }\n"
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      methods: [POST]\n"
           "      lock_ttl: 30s\n"
           "      record_ttl: 1h\n"
           "      attempt_header: Idempotency-Attempt\n";
}

// Readiness is the gateway's /readyz answering 200 (its Redis store connected); bounded wait.
void wait_ready(gateway_process& gateway)
{
    wait_until(
        "idemgate's /readyz answers 200", 10s,
        [&] {
            try {
                return http_request(gateway.admin_port(), "GET", "/readyz").status == 200;
            } catch (const std::exception&) {
                return false;
            }
        },
        10ms);
}

std::string output(child_process& proc)
{
    std::string out;
    for (const auto& line : proc.lines())
        out += line + "\n";
    return out;
}

// Redis, the order service (consuming the payment stream) and the gateway in front of it.
struct stack_fixture {
    redis_server redis;
    temp_dir dir;
    order_service_process service{{dir.path() + "/orders.db", redis.address(), "c1", 200}};
    gateway_process gateway{gateway_yaml(redis.address(), service.port())};

    stack_fixture() { wait_ready(gateway); }

    std::uint16_t gw() const { return gateway.port(); }
    std::uint16_t direct() const { return service.port(); }
};

const std::string order_body = R"({"items":[{"sku":"book","qty":2,"price_cents":500}]})";

} // namespace

// The seed's TestDuplicateRequestRunsHandlerOnce, through the real gateway and service.
TEST_CASE_FIXTURE(stack_fixture, "duplicate request runs the handler once")
{
    auto first = call(gw(), "POST", "/api/v1/orders", order_body, {{"Idempotency-Key", "key-1"}});
    auto second = call(gw(), "POST", "/api/v1/orders", order_body, {{"Idempotency-Key", "key-1"}});
    REQUIRE(first.status == 201);
    CHECK(second.status == 201);
    CHECK(second.raw.body == first.raw.body);
    CHECK(second.raw.header("idempotent-replayed") == "true");
    CHECK_FALSE(first.raw.has_header("idempotent-replayed"));
    CHECK(executions(direct(), "create_order") == 1);

    auto conflict =
        call(gw(), "POST", "/api/v1/orders", R"({"items":[{"sku":"pen","qty":1,"price_cents":100}]})",
             {{"Idempotency-Key", "key-1"}});
    CHECK(conflict.status == 409);
    CHECK(executions(direct(), "create_order") == 1);
}

// The seed's TestServerErrorIsNotCached: the service fails the first call on purpose
// (X-Fail-Once, which the gateway forwards like any end-to-end header).
TEST_CASE_FIXTURE(stack_fixture, "server error is not cached")
{
    auto first = call(gw(), "POST", "/api/v1/orders", order_body,
                      {{"Idempotency-Key", "key-1"}, {"X-Fail-Once", "boom"}});
    CHECK(first.status == 500);
    auto second = call(gw(), "POST", "/api/v1/orders", order_body,
                       {{"Idempotency-Key", "key-1"}, {"X-Fail-Once", "boom"}});
    CHECK(second.status == 201);
    CHECK_FALSE(second.raw.has_header("idempotent-replayed"));
    CHECK(executions(direct(), "create_order") == 2);
    // And now that it settled, the answer is replayed.
    auto third = call(gw(), "POST", "/api/v1/orders", order_body, {{"Idempotency-Key", "key-1"}});
    CHECK(third.status == 201);
    CHECK(third.raw.header("idempotent-replayed") == "true");
    CHECK(third.raw.body == second.raw.body);
    CHECK(executions(direct(), "create_order") == 2);
    // The service logged which execution of the key each one was: 1, then 2 after the release.
    for (const char* attempt : {"1", "2"}) {
        CAPTURE(attempt);
        auto line = service.process().wait_for_line(
            [&](const std::string& l) {
                return l.find("\"attempt\"") != std::string::npos &&
                       l.find(std::string("\"attempt\":\"") + attempt + "\"") != std::string::npos &&
                       l.find("\"key\":\"key-1\"") != std::string::npos;
            },
            5s);
        CHECK(line.has_value());
    }
}

TEST_CASE_FIXTURE(stack_fixture, "32 concurrent duplicates of one payment reach the service once")
{
    std::string id = create_order(direct(), 1000);
    const std::string path = "/api/v1/orders/" + id + "/payments";
    constexpr int n = 32;
    std::atomic<int> executed{0}, replayed{0}, in_flight{0}, other{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&] {
            while (!go.load())
                std::this_thread::yield();
            try {
                auto r = call(gw(), "POST", path, payment_body(1000, "ref-1"), {{"Idempotency-Key", "K1"}});
                if (r.status == 201 && r.raw.header("idempotent-replayed") == "true")
                    ++replayed;
                else if (r.status == 201)
                    ++executed;
                else if (r.status == 409)
                    ++in_flight; // the first one was still running: retry later
                else
                    ++other;
            } catch (...) {
                ++other;
            }
        });
    }
    go = true;
    for (auto& t : threads)
        t.join();
    CHECK(executed == 1);
    CHECK(replayed + in_flight == n - 1);
    CHECK(other == 0);
    CHECK(executions(direct(), "pay") == 1);
    CHECK(payment_count(direct()) == 1);
}

TEST_CASE_FIXTURE(stack_fixture, "a client retry of a payment is answered by the gateway's replay")
{
    std::string id = create_order(direct(), 1000);
    const std::string path = "/api/v1/orders/" + id + "/payments";
    auto first = call(gw(), "POST", path, payment_body(1000, "ref-1"), {{"Idempotency-Key", "K1"}});
    auto retry = call(gw(), "POST", path, payment_body(1000, "ref-1"), {{"Idempotency-Key", "K1"}});
    REQUIRE(first.status == 201);
    CHECK(retry.status == 201);
    CHECK(retry.raw.header("idempotent-replayed") == "true");
    CHECK(retry.raw.body == first.raw.body);
    CHECK(executions(direct(), "pay") == 1); // the service saw it once
    CHECK(payment_count(direct()) == 1);
}

TEST_CASE_FIXTURE(stack_fixture,
                  "the same payment with a new Idempotency-Key passes the gateway and the guard stops it")
{
    std::string id = create_order(direct(), 1000);
    const std::string path = "/api/v1/orders/" + id + "/payments";
    REQUIRE(call(gw(), "POST", path, payment_body(1000, "ref-1"), {{"Idempotency-Key", "K1"}}).status == 201);
    auto again = call(gw(), "POST", path, payment_body(1000, "ref-1"), {{"Idempotency-Key", "K2"}});
    CHECK(again.status == 200);
    CHECK_FALSE(again.raw.has_header("idempotent-replayed")); // the gateway did not stop it...
    CHECK(member(again.body, "result") == "already_paid");    // ...the domain guard did
    CHECK(executions(direct(), "pay") == 2);
    CHECK(payment_count(direct()) == 1);
}

TEST_CASE_FIXTURE(stack_fixture, "a payment webhook that bypasses the gateway is stopped by the domain guard")
{
    std::string id = create_order(direct(), 1000);
    REQUIRE(call(gw(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1"),
                 {{"Idempotency-Key", "K1"}})
                .status == 201);
    auto hook = call(direct(), "POST", "/webhooks/payments",
                     R"({"order_id":")" + id + R"(","amount_cents":1000,"provider_ref":"ref-1"})");
    CHECK(hook.status == 200);
    CHECK(member(hook.body, "result") == "already_paid");
    CHECK(payment_count(direct()) == 1);
}

TEST_CASE_FIXTURE(stack_fixture, "stream events: a redelivery is skipped by the inbox, a new ID by the guard")
{
    std::string id = create_order(direct(), 1000);
    REQUIRE(call(gw(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1"),
                 {{"Idempotency-Key", "K1"}})
                .status == 201);

    // The provider's event for the same payment arrives on the stream: a new message, so the
    // inbox lets it through and the guard answers already_paid.
    INFO("order-service output:\n" << output(service.process()));
    std::string event =
        xadd(redis, "payments", {"order_id", id, "amount_cents", "1000", "provider_ref", "ref-1"});
    auto line = service.wait_for_message(event, "applied");
    REQUIRE(line);
    CHECK(line->find("\"result\":\"already_paid\"") != std::string::npos);
    CHECK(wait_pending(redis, "payments", "order-service", 0) == 0);

    // Redelivery of one message ID (a broker's at-least-once): a second event is applied and
    // acknowledged, then made pending again as if the broker had delivered it to a consumer that
    // died, and the service reclaims it.
    std::string again_id =
        xadd(redis, "payments", {"order_id", id, "amount_cents", "1000", "provider_ref", "ref-1"});
    auto applied = service.wait_for_message(again_id, "applied");
    REQUIRE(applied);
    // Wait for its XACK (it follows the log line), or the XCLAIM below could race it.
    REQUIRE(wait_pending(redis, "payments", "order-service", 0) == 0);
    // Put it back in the pending list under a consumer that never acknowledges, as a broker does
    // after a consumer crash: XCLAIM with FORCE re-creates the pending entry.
    std::string claimed =
        redis.command({"XCLAIM", "payments", "order-service", "ghost", "0", again_id, "FORCE"});
    REQUIRE(claimed.find(again_id) != std::string::npos);
    auto skipped = service.wait_for_message(again_id, "duplicate");
    REQUIRE(skipped);
    CHECK(skipped->find("\"delivery\":\"claimed\"") != std::string::npos);
    CHECK(wait_pending(redis, "payments", "order-service", 0) == 0);

    CHECK(payment_count(direct()) == 1);
    CHECK(executions(direct(), "inbox_applied") == 2);
    CHECK(executions(direct(), "inbox_duplicate") == 1);
}
