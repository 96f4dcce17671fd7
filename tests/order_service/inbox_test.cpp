// SPDX-License-Identifier: Apache-2.0
// The message layer: the inbox dedupes by message ID, in the same transaction as the effect.
#include "idemgate/test/harness.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <idemgate/order_service/order_store.hpp>
#include <idemgate/order_service/stream_consumer.hpp>
#include <thread>
#include <vector>

using namespace idemgate::order_service;
using idemgate::test::temp_dir;

// The seed's TestInboxSkipsRedeliveryAndRetriesFailures, against the real store.
TEST_CASE("inbox skips redelivery and retries failures")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    std::atomic<int> calls{0};
    order_store::inbox_handler handle = [&](connection&, std::string& result) -> boost::system::error_code {
        if (calls.fetch_add(1) + 1 == 1)
            return make_error_code(boost::system::errc::io_error); // "handler failed"
        result = "done";
        return {};
    };

    auto failed = store.handle_once("m-1", handle);
    CHECK(failed.outcome == inbox_outcome::failed); // not delivered
    CHECK(failed.ec);

    auto retry = store.handle_once("m-1", handle);
    CHECK(retry.outcome == inbox_outcome::applied); // delivered
    CHECK_FALSE(retry.ec);

    auto redelivery = store.handle_once("m-1", handle);
    CHECK(redelivery.outcome == inbox_outcome::duplicate); // not delivered again
    CHECK(redelivery.result == "done");
    CHECK(calls == 2);
}

TEST_CASE("a failed handler leaves none of its writes behind")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    order created;
    REQUIRE_FALSE(store.create_order({{"sku-1", 1, 1000}}, 1000, "create_order", created));
    auto r =
        store.handle_once("m-1", [&](connection& conn, std::string& result) -> boost::system::error_code {
            auto paid = order_store::mark_paid_in(conn, created.id, {1000, "ref-1"}, payment_source::stream);
            REQUIRE(paid.decision == payment_decision::record_payment);
            result = "paid";
            return make_error_code(boost::system::errc::io_error); // fails after its effect
        });
    CHECK(r.outcome == inbox_outcome::failed);
    std::optional<order> after;
    REQUIRE_FALSE(store.find_order(created.id, after));
    REQUIRE(after);
    CHECK(after->status == order_status::inventory_reserved);
    CHECK(after->payments.empty());
    store_stats stats;
    REQUIRE_FALSE(store.stats(stats));
    CHECK(stats.inbox == 0);
    CHECK(stats.executions["inbox_failed"] == 1);
}

TEST_CASE("32 concurrent redeliveries of one message apply it once")
{
    temp_dir dir;
    const std::string path = dir.path() + "/orders.db";
    order created;
    {
        order_store setup(path);
        REQUIRE_FALSE(setup.create_order({{"sku-1", 2, 500}}, 1000, "create_order", created));
    }
    stream_message message{
        "1700000000000-0",
        {{"order_id", created.id}, {"amount_cents", "1000"}, {"provider_ref", "ref-stream"}}};

    constexpr int n = 32;
    std::vector<std::unique_ptr<order_store>> stores; // separate connections, like separate consumers
    for (int i = 0; i < n; ++i)
        stores.push_back(std::make_unique<order_store>(path, 1));
    std::atomic<int> applied{0}, duplicate{0}, failed{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            while (!go.load())
                std::this_thread::yield();
            auto r = apply_payment_event(*stores[i], message);
            if (r.outcome == inbox_outcome::applied)
                ++applied;
            else if (r.outcome == inbox_outcome::duplicate)
                ++duplicate;
            else
                ++failed;
        });
    }
    go = true;
    for (auto& t : threads)
        t.join();
    CHECK(applied == 1);
    CHECK(duplicate == n - 1);
    CHECK(failed == 0);
    store_stats stats;
    REQUIRE_FALSE(stores[0]->stats(stats));
    CHECK(stats.payments == 1);
    CHECK(stats.inbox == 1);
    CHECK(stats.executions["inbox_applied"] == 1);
    CHECK(stats.executions["inbox_duplicate"] == n - 1);
}

TEST_CASE("a new message ID with the same content is a new message that the domain guard stops")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    order created;
    REQUIRE_FALSE(store.create_order({{"sku-1", 1, 1000}}, 1000, "create_order", created));
    std::map<std::string, std::string> fields{
        {"order_id", created.id}, {"amount_cents", "1000"}, {"provider_ref", "ref-1"}};
    auto first = apply_payment_event(store, {"1-0", fields});
    auto second = apply_payment_event(store, {"2-0", fields});
    CHECK(first.outcome == inbox_outcome::applied);
    CHECK(first.result == "paid");
    CHECK(second.outcome == inbox_outcome::applied); // the inbox does not know it
    CHECK(second.result == "already_paid");          // the guard does
    store_stats stats;
    REQUIRE_FALSE(store.stats(stats));
    CHECK(stats.payments == 1);
    CHECK(stats.inbox == 2);
}

TEST_CASE("a malformed payment event is marked rejected instead of being redelivered forever")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    auto r = apply_payment_event(
        store, {"1-0", {{"order_id", "o"}, {"amount_cents", "ten"}, {"provider_ref", "r"}}});
    CHECK(r.outcome == inbox_outcome::applied);
    CHECK(r.result == "rejected_malformed");
    CHECK(apply_payment_event(store, {"1-0", {}}).outcome == inbox_outcome::duplicate);
}
