// SPDX-License-Identifier: Apache-2.0
// The message layer end to end: the real order-service consuming a real Redis Stream.
#include "fixture.hpp"

#include <doctest/doctest.h>

using namespace idemgate::order_service_test;

namespace {

const std::string stream = "payments";
const std::string group = "order-service";

std::vector<std::string> payment_fields(const std::string& order_id, const std::string& ref)
{
    return {"order_id", order_id, "amount_cents", "1000", "provider_ref", ref};
}

} // namespace

// The seed's TestInboxSkipsRedeliveryAndRetriesFailures with a real broker: the first handling
// fails (nothing marked, not acknowledged), the redelivery applies it, and it is applied once.
TEST_CASE("stream: a failed message is redelivered and applied once")
{
    redis_server redis;
    temp_dir dir;
    order_service_process service({dir.path() + "/orders.db", redis.address(), "c1", 200});
    std::string order_id = create_order(service.port(), 1000);

    auto fields = payment_fields(order_id, "ref-1");
    fields.insert(fields.end(), {"fail_once", "1"});
    std::string id = xadd(redis, stream, fields);

    REQUIRE(service.wait_for_message(id, "failed"));
    auto applied = service.wait_for_message(id, "applied");
    REQUIRE(applied);
    CHECK(applied->find("\"delivery\":\"claimed\"") != std::string::npos);
    CHECK(applied->find("\"result\":\"paid\"") != std::string::npos);
    CHECK(wait_pending(redis, stream, group, 0) == 0);
    CHECK(payment_count(service.port()) == 1);
    CHECK(executions(service.port(), "inbox_failed") == 1);
    CHECK(executions(service.port(), "inbox_applied") == 1);
    auto order = call(service.port(), "GET", "/api/v1/orders/" + order_id);
    CHECK(member(order.body, "status") == "PAID");
}

TEST_CASE("stream: a consumer killed after the effect but before XACK does not apply it twice")
{
    redis_server redis;
    temp_dir dir;
    const std::string db = dir.path() + "/orders.db";
    std::string order_id;
    std::string id;
    {
        service_flags crashing{db, redis.address(), "c1", 200};
        crashing.crash_after_effect = true;
        order_service_process first(crashing);
        order_id = create_order(first.port(), 1000);
        id = xadd(redis, stream, payment_fields(order_id, "ref-1"));
        REQUIRE(first.wait_for_message(id, "applied"));
        CHECK(first.process().wait_exit() == 1);
    }
    // The effect committed, the acknowledgement never happened: the entry is still pending on c1.
    CHECK(pending_count(redis, stream, group) == 1);

    order_service_process second({db, redis.address(), "c2", 200});
    auto redelivered = second.wait_for_message(id, "duplicate");
    REQUIRE(redelivered);
    CHECK(redelivered->find("\"delivery\":\"claimed\"") != std::string::npos);
    CHECK(redelivered->find("\"result\":\"paid\"") != std::string::npos); // the first result, not a new one
    CHECK(wait_pending(redis, stream, group, 0) == 0);
    CHECK(payment_count(second.port()) == 1);
    CHECK(executions(second.port(), "inbox_applied") == 1);
    CHECK(executions(second.port(), "inbox_duplicate") == 1);
}

TEST_CASE("stream: a new message ID with the same content is stopped by the domain guard")
{
    redis_server redis;
    temp_dir dir;
    order_service_process service({dir.path() + "/orders.db", redis.address(), "c1", 200});
    std::string order_id = create_order(service.port(), 1000);

    std::string first = xadd(redis, stream, payment_fields(order_id, "ref-1"));
    std::string second = xadd(redis, stream, payment_fields(order_id, "ref-1"));
    auto first_line = service.wait_for_message(first, "applied");
    auto second_line = service.wait_for_message(second, "applied");
    REQUIRE(first_line);
    REQUIRE(second_line);
    CHECK(first_line->find("\"result\":\"paid\"") != std::string::npos);
    CHECK(second_line->find("\"result\":\"already_paid\"") != std::string::npos);
    CHECK(payment_count(service.port()) == 1);
    CHECK(wait_pending(redis, stream, group, 0) == 0);
}

TEST_CASE("stream: a payment event for an order paid through the API is already paid")
{
    redis_server redis;
    temp_dir dir;
    order_service_process service({dir.path() + "/orders.db", redis.address(), "c1", 200});
    std::string order_id = create_order(service.port(), 1000);
    REQUIRE(
        call(service.port(), "POST", "/api/v1/orders/" + order_id + "/payments", payment_body(1000, "ref-1"))
            .status == 201);
    std::string id = xadd(redis, stream, payment_fields(order_id, "ref-1"));
    auto line = service.wait_for_message(id, "applied");
    REQUIRE(line);
    CHECK(line->find("\"result\":\"already_paid\"") != std::string::npos);
    CHECK(payment_count(service.port()) == 1);
}

TEST_CASE("stream: the consumer stops promptly on SIGTERM")
{
    redis_server redis;
    temp_dir dir;
    order_service_process service({dir.path() + "/orders.db", redis.address(), "c1", 30000});
    service.process().signal(SIGTERM);
    CHECK(service.process().wait_exit(5s) == 0);
}

TEST_CASE("stream: the consumer reconnects after Redis restarts and keeps applying events")
{
    redis_server redis;
    temp_dir dir;
    order_service_process service({dir.path() + "/orders.db", redis.address(), "c1", 200});
    std::string order_id = create_order(service.port(), 1000);

    redis.stop(true);
    // Wait for the consumer to notice (its blocking read fails), so the restart is really a reconnect.
    REQUIRE(service.process().wait_for_line([](const std::string& l) {
        return l.find("\"msg\":\"consumer_connection_lost\"") != std::string::npos;
    }));
    redis.start(); // same port, empty data: the consumer must re-create its group

    std::string id = xadd(redis, stream, payment_fields(order_id, "ref-1"));
    auto line = service.wait_for_message(id, "applied", 15s);
    REQUIRE(line);
    CHECK(line->find("\"result\":\"paid\"") != std::string::npos);
    CHECK(service.process().running());
    CHECK(payment_count(service.port()) == 1);
}
