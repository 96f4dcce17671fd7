// SPDX-License-Identifier: Apache-2.0
// The domain layer: the payment guard (the seed's MarkPaid) as a pure rule and against the
// SQLite store, including the race the seed says a unique constraint must back.
#include "idemgate/test/harness.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <idemgate/order_service/domain.hpp>
#include <idemgate/order_service/order_store.hpp>
#include <thread>
#include <vector>

using namespace idemgate::order_service;
using idemgate::test::temp_dir;

namespace {

order reserved_order(std::int64_t total)
{
    order o;
    o.id = "o-1";
    o.status = order_status::inventory_reserved;
    o.total_cents = total;
    return o;
}

std::string new_order(order_store& store, std::int64_t total)
{
    order created;
    REQUIRE_FALSE(store.create_order({{"sku-1", 1, total}}, total, "create_order", created));
    return created.id;
}

} // namespace

TEST_CASE("payment decision table")
{
    order o = reserved_order(1000);
    CHECK(decide_payment(o, {1000, "ref-1"}) == payment_decision::record_payment);
    CHECK(decide_payment(o, {999, "ref-1"}) == payment_decision::amount_mismatch);

    o.status = order_status::paid;
    o.payments.push_back({1, "o-1", 1000, "ref-1", "api", 0});
    CHECK(decide_payment(o, {1000, "ref-1"}) == payment_decision::already_paid);
    CHECK(decide_payment(o, {1000, "ref-2"}) == payment_decision::ref_conflict);
    // A repeat of the recorded payment is recognised even if its amount field differs: the
    // provider reference is the natural key of the business fact.
    CHECK(decide_payment(o, {5, "ref-1"}) == payment_decision::already_paid);

    o.status = order_status::cancelled;
    o.payments.clear();
    CHECK(decide_payment(o, {1000, "ref-1"}) == payment_decision::invalid_state);
}

// The seed's TestDomainGuardMakesPaymentIdempotent, against the real store.
TEST_CASE("domain guard makes payment idempotent")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    std::string id = new_order(store, 1000);
    payment_request p{1000, "ref-1"};

    auto first = store.mark_paid(id, p, payment_source::api, "pay");
    REQUIRE_FALSE(first.ec);
    CHECK(first.decision == payment_decision::record_payment); // not "already paid"

    auto repeat = store.mark_paid(id, p, payment_source::api, "pay");
    REQUIRE_FALSE(repeat.ec);
    CHECK(repeat.decision == payment_decision::already_paid);
    CHECK(repeat.current.payments.size() == 1);
    REQUIRE(repeat.recorded);
    CHECK(repeat.recorded->id == first.recorded->id);

    payment_request other = p;
    other.provider_ref = "ref-2";
    auto conflict = store.mark_paid(id, other, payment_source::api, "pay");
    REQUIRE_FALSE(conflict.ec);
    CHECK(conflict.decision == payment_decision::ref_conflict); // the seed's ErrInvalidState

    store_stats stats;
    REQUIRE_FALSE(store.stats(stats));
    CHECK(stats.payments == 1);
    CHECK(stats.executions["pay"] == 3);
}

TEST_CASE("a payment whose amount differs from the total is refused and changes nothing")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    std::string id = new_order(store, 1000);
    auto r = store.mark_paid(id, {999, "ref-1"}, payment_source::api, "pay");
    REQUIRE_FALSE(r.ec);
    CHECK(r.decision == payment_decision::amount_mismatch);
    CHECK(r.current.status == order_status::inventory_reserved);
    std::optional<order> after;
    REQUIRE_FALSE(store.find_order(id, after));
    REQUIRE(after);
    CHECK(after->payments.empty());
    // The right amount still goes through afterwards.
    CHECK(store.mark_paid(id, {1000, "ref-1"}, payment_source::api, "pay").decision ==
          payment_decision::record_payment);
}

TEST_CASE("a cancelled order refuses payment as an invalid state")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    std::string id = new_order(store, 1000);
    bool found = false;
    bool cancelled = false;
    REQUIRE_FALSE(store.cancel_order(id, found, cancelled));
    CHECK(found);
    CHECK(cancelled);
    auto r = store.mark_paid(id, {1000, "ref-1"}, payment_source::webhook, "webhook");
    CHECK(r.decision == payment_decision::invalid_state);
    CHECK_FALSE(r.recorded);
}

TEST_CASE("a provider reference already used on another order is a conflict (UNIQUE backs the guard)")
{
    temp_dir dir;
    order_store store(dir.path() + "/orders.db");
    std::string a = new_order(store, 1000);
    std::string b = new_order(store, 1000);
    CHECK(store.mark_paid(a, {1000, "ref-1"}, payment_source::api, "pay").decision ==
          payment_decision::record_payment);
    auto r = store.mark_paid(b, {1000, "ref-1"}, payment_source::api, "pay");
    REQUIRE_FALSE(r.ec);
    CHECK(r.decision == payment_decision::ref_conflict);
    std::optional<order> after;
    REQUIRE_FALSE(store.find_order(b, after));
    REQUIRE(after);
    CHECK(after->status == order_status::inventory_reserved); // the savepoint undid the attempt
    store_stats stats;
    REQUIRE_FALSE(store.stats(stats));
    CHECK(stats.payments == 1);
}

TEST_CASE("32 concurrent identical payments on separate connections record exactly one payment")
{
    temp_dir dir;
    const std::string path = dir.path() + "/orders.db";
    std::string id;
    {
        order_store setup(path);
        id = new_order(setup, 1000);
    }
    // One store (its own connections) per thread: as close to 32 processes as one test gets.
    constexpr int n = 32;
    std::vector<std::unique_ptr<order_store>> stores;
    for (int i = 0; i < n; ++i)
        stores.push_back(std::make_unique<order_store>(path, 1));
    std::atomic<int> paid{0}, already{0}, other{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            while (!go.load())
                std::this_thread::yield();
            auto r = stores[i]->mark_paid(id, {1000, "ref-race"}, payment_source::api, "pay");
            if (!r.ec && r.decision == payment_decision::record_payment)
                ++paid;
            else if (!r.ec && r.decision == payment_decision::already_paid)
                ++already;
            else
                ++other;
        });
    }
    go = true;
    for (auto& t : threads)
        t.join();
    CHECK(paid == 1);
    CHECK(already == n - 1);
    CHECK(other == 0);
    store_stats stats;
    REQUIRE_FALSE(stores[0]->stats(stats));
    CHECK(stats.payments == 1);
    CHECK(stats.executions["pay"] == n);
}
