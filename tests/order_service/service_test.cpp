// SPDX-License-Identifier: Apache-2.0
// The order service over real sockets: its HTTP API and the domain guard behind every door.
#include "fixture.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::order_service_test;

namespace {

struct service_fixture {
    temp_dir dir;
    order_service_process service{{dir.path() + "/orders.db"}};
    std::uint16_t port() const { return service.port(); }
};

void check_problem(const json_reply& reply, int status)
{
    CHECK(reply.status == status);
    CHECK(reply.raw.header("content-type") == "application/problem+json");
    REQUIRE(reply.body.is_object());
    const auto& obj = reply.body.as_object();
    CHECK(obj.contains("type"));
    CHECK(obj.contains("title"));
    CHECK(obj.contains("detail"));
    CHECK(obj.at("status").as_int64() == status);
}

} // namespace

TEST_CASE_FIXTURE(service_fixture, "an order is created in INVENTORY_RESERVED and can be read back")
{
    auto created =
        call(port(), "POST", "/api/v1/orders",
             R"({"items":[{"sku":"a","qty":2,"price_cents":250},{"sku":"b","qty":1,"price_cents":500}]})");
    REQUIRE(created.status == 201);
    std::string id = member(created.body, "id");
    CHECK_FALSE(id.empty());
    CHECK(member(created.body, "status") == "INVENTORY_RESERVED");
    CHECK(created.body.as_object().at("total_cents").as_int64() == 1000);
    CHECK(created.raw.header("location") == "/api/v1/orders/" + id);

    auto read = call(port(), "GET", "/api/v1/orders/" + id);
    REQUIRE(read.status == 200);
    CHECK(member(read.body, "status") == "INVENTORY_RESERVED");
    CHECK(read.body.as_object().at("items").as_array().size() == 2);
    CHECK(executions(port(), "create_order") == 1);
}

TEST_CASE_FIXTURE(service_fixture, "bad requests get RFC 9457 problems")
{
    check_problem(call(port(), "POST", "/api/v1/orders", "{not json"), 400);
    check_problem(call(port(), "POST", "/api/v1/orders", R"({"items":[]})"), 400);
    check_problem(
        call(port(), "POST", "/api/v1/orders", R"({"items":[{"sku":"a","qty":0,"price_cents":1}]})"), 400);
    check_problem(call(port(), "POST", "/api/v1/orders",
                       R"({"items":[{"sku":"a","qty":1,"price_cents":100}],"total_cents":99})"),
                  422);
    check_problem(call(port(), "GET", "/api/v1/orders/ord_missing"), 404);
    check_problem(call(port(), "POST", "/api/v1/orders/ord_missing/payments", payment_body(1, "r")), 404);
    check_problem(call(port(), "POST", "/webhooks/payments",
                       R"({"order_id":"ord_missing","amount_cents":1,"provider_ref":"r"})"),
                  404);
    std::string id = create_order(port(), 1000);
    check_problem(call(port(), "POST", "/api/v1/orders/" + id + "/payments", "[1,2]"), 400);
    check_problem(call(port(), "POST", "/api/v1/orders/" + id + "/payments",
                       R"({"amount_cents":"1000","provider_ref":"r"})"),
                  400);
    check_problem(call(port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "r"),
                       {{"X-Provider-Delay-Ms", "10001"}}),
                  400);
    check_problem(call(port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "r"),
                       {{"X-Provider-Delay-Ms", "soon"}}),
                  400);
    check_problem(call(port(), "GET", "/no/such/path"), 404);
    CHECK(executions(port(), "create_order") == 1); // the invalid ones never reached the store
    CHECK(payment_count(port()) == 0);
}

TEST_CASE_FIXTURE(service_fixture, "an oversized body is refused with 413 before any handler runs")
{
    std::string huge(2 * 1024 * 1024, 'x');
    auto reply = call(port(), "POST", "/api/v1/orders", huge);
    CHECK(reply.status == 413);
    CHECK(executions(port(), "create_order") == 0);
}

// The seed's TestDomainGuardMakesPaymentIdempotent, through the service's HTTP API.
TEST_CASE_FIXTURE(service_fixture, "domain guard makes payment idempotent over HTTP")
{
    std::string id = create_order(port(), 1000);
    const std::string path = "/api/v1/orders/" + id + "/payments";

    auto first = call(port(), "POST", path, payment_body(1000, "ref-1"));
    REQUIRE(first.status == 201);
    CHECK(member(first.body, "result") == "paid");

    auto repeat = call(port(), "POST", path, payment_body(1000, "ref-1"));
    REQUIRE(repeat.status == 200);
    CHECK(member(repeat.body, "result") == "already_paid");
    CHECK(member(repeat.body.as_object().at("payment"), "provider_ref") == "ref-1");
    CHECK(payment_count(port()) == 1);

    auto other = call(port(), "POST", path, payment_body(1000, "ref-2"));
    check_problem(other, 409);

    auto order = call(port(), "GET", "/api/v1/orders/" + id);
    CHECK(member(order.body, "status") == "PAID");
    CHECK(order.body.as_object().at("payments").as_array().size() == 1);
}

TEST_CASE_FIXTURE(service_fixture, "a payment with the wrong amount gets 422 and the order stays unpaid")
{
    std::string id = create_order(port(), 1000);
    auto wrong = call(port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(900, "ref-1"));
    check_problem(wrong, 422);
    CHECK(member(call(port(), "GET", "/api/v1/orders/" + id).body, "status") == "INVENTORY_RESERVED");
    CHECK(payment_count(port()) == 0);
}

TEST_CASE_FIXTURE(service_fixture, "a cancelled order refuses payment with 409")
{
    std::string id = create_order(port(), 1000);
    REQUIRE(call(port(), "POST", "/api/v1/orders/" + id + "/cancel").status == 200);
    check_problem(call(port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1")),
                  409);
    CHECK(payment_count(port()) == 0);
}

TEST_CASE_FIXTURE(service_fixture, "32 concurrent identical payments make exactly one payment")
{
    std::string id = create_order(port(), 1000);
    constexpr int n = 32;
    std::atomic<int> created{0}, already{0}, other{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&] {
            while (!go.load())
                std::this_thread::yield();
            try {
                auto r = call(port(), "POST", "/api/v1/orders/" + id + "/payments",
                              payment_body(1000, "ref-race"));
                if (r.status == 201)
                    ++created;
                else if (r.status == 200 && member(r.body, "result") == "already_paid")
                    ++already;
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
    CHECK(created == 1);
    CHECK(already == n - 1);
    CHECK(other == 0);
    CHECK(payment_count(port()) == 1);
    CHECK(executions(port(), "pay") == n);
}

TEST_CASE_FIXTURE(service_fixture, "a webhook after the API payment is recognised as already paid")
{
    std::string id = create_order(port(), 1000);
    REQUIRE(call(port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1")).status ==
            201);
    auto hook = call(port(), "POST", "/webhooks/payments",
                     R"({"order_id":")" + id + R"(","amount_cents":1000,"provider_ref":"ref-1"})");
    CHECK(hook.status == 200);
    CHECK(member(hook.body, "result") == "already_paid");
    CHECK(member(hook.body.as_object().at("payment"), "source") == "api");
    CHECK(payment_count(port()) == 1);
    CHECK(executions(port(), "webhook") == 1);
}

TEST_CASE_FIXTURE(service_fixture, "X-Fail-Once fails the first request with a token and runs the next")
{
    auto failed = call(port(), "POST", "/api/v1/orders", R"({"items":[{"sku":"a","qty":1,"price_cents":1}]})",
                       {{"X-Fail-Once", "t-1"}});
    check_problem(failed, 500);
    auto ok = call(port(), "POST", "/api/v1/orders", R"({"items":[{"sku":"a","qty":1,"price_cents":1}]})",
                   {{"X-Fail-Once", "t-1"}});
    CHECK(ok.status == 201);
    CHECK(executions(port(), "create_order") == 2); // both ran; only the second had an effect
    CHECK(call(port(), "GET", "/stats").body.as_object().at("orders").as_int64() == 1);
}

TEST_CASE("the service keeps its data across a restart on the same database")
{
    temp_dir dir;
    std::string id;
    {
        order_service_process first({dir.path() + "/orders.db"});
        id = create_order(first.port(), 1000);
        REQUIRE(call(first.port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1"))
                    .status == 201);
        first.process().signal(SIGTERM);
        CHECK(first.process().wait_exit() == 0);
    }
    order_service_process second({dir.path() + "/orders.db"});
    auto repeat =
        call(second.port(), "POST", "/api/v1/orders/" + id + "/payments", payment_body(1000, "ref-1"));
    CHECK(repeat.status == 200);
    CHECK(member(repeat.body, "result") == "already_paid");
}
