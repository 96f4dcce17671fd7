// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>
#include <functional>
#include <future>
#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>
#include <iterator>
#include <latch>
#include <set>
#include <thread>
#include <vector>

using namespace idemgate;
using namespace std::chrono_literals;

namespace {

// A manual clock so TTLs are tested without sleeping.
struct fake_clock {
    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point{} + 1h;
};

template<class Awaitable>
auto run(boost::asio::io_context& ioc, Awaitable a)
{
    auto f = boost::asio::co_spawn(ioc, std::move(a), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

store::record in_flight(std::string token, std::string fp = "fp")
{
    store::record r;
    r.state = store::record_state::in_flight;
    r.fingerprint = std::move(fp);
    r.owner_token = std::move(token);
    return r;
}

store::record completed(std::string token, std::string body)
{
    store::record r = in_flight(std::move(token));
    r.state = store::record_state::completed;
    r.response.status = 201;
    r.response.headers = {{"Content-Type", "application/json"}};
    r.response.body = std::move(body);
    return r;
}

struct fixture {
    fake_clock clock;
    boost::asio::io_context ioc;
    std::shared_ptr<store::backend> backend;
    std::unique_ptr<store::session> s;
    explicit fixture(std::size_t max_entries = 100, std::size_t max_bytes = 1 << 20,
                     std::function<void(store::memory_options&)> tweak = {})
    {
        store::memory_options o;
        o.max_entries = max_entries;
        o.max_bytes = max_bytes;
        o.now = [this] { return clock.now; };
        if (tweak)
            tweak(o);
        backend = store::make_memory_backend(o);
        s = backend->open_session(ioc.get_executor());
    }

    store::memory_stats stats() const { return store::memory_store_stats(*backend).value(); }

    // Reserves keys prefix0 .. prefix(count-1) in one coroutine; returns how many were acquired
    // and how many were refused with store_full.
    std::pair<std::size_t, std::size_t> reserve_many(std::string prefix, std::size_t count,
                                                     store::duration ttl)
    {
        return run(ioc, [&]() -> boost::asio::awaitable<std::pair<std::size_t, std::size_t>> {
            std::size_t acquired = 0;
            std::size_t full = 0;
            for (std::size_t i = 0; i < count; ++i) {
                auto key = prefix + std::to_string(i);
                auto r = co_await s->reserve({"", key}, in_flight("t-" + key), ttl);
                acquired += r.acquired ? 1 : 0;
                full += r.ec == make_error_code(error::store_full) ? 1 : 0;
            }
            co_return std::pair{acquired, full};
        }());
    }
};

} // namespace

TEST_CASE("memory store: reserve, duplicate sees in-flight, complete, duplicate sees the response")
{
    fixture f;
    store::scope sc{"", "k"};
    auto r1 = run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s));
    CHECK_FALSE(r1.ec);
    CHECK(r1.acquired);
    auto r2 = run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s));
    REQUIRE_FALSE(r2.acquired);
    REQUIRE(r2.existing);
    CHECK(r2.existing->state == store::record_state::in_flight);
    CHECK(r2.existing->owner_token == "t1");
    CHECK_FALSE(run(f.ioc, f.s->complete(sc, completed("t1", "body"), 24h)));
    auto r3 = run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s));
    REQUIRE(r3.existing);
    CHECK(r3.existing->state == store::record_state::completed);
    CHECK(r3.existing->response.body == "body");
    CHECK(r3.existing->response.status == 201);
    CHECK(f.backend->ready());
}

TEST_CASE("memory store: lock_ttl expiry frees the key and a late complete is refused")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    f.clock.now += 31s;
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    // The first owner's lock expired and t2 took the key: t1 must not overwrite it.
    CHECK(run(f.ioc, f.s->complete(sc, completed("t1", "late"), 24h)) == make_error_code(error::not_owner));
    auto r = run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s));
    REQUIRE(r.existing);
    CHECK(r.existing->owner_token == "t2");
    CHECK(r.existing->state == store::record_state::in_flight);
}

TEST_CASE("memory store: record_ttl expiry lets the key run again")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->complete(sc, completed("t1", "b"), 1h)));
    f.clock.now += 59min;
    CHECK_FALSE(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    f.clock.now += 2min;
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s)).acquired);
}

TEST_CASE("memory store: release only by the owner")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->release(sc, "other")) == make_error_code(error::not_owner));
    CHECK_FALSE(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->release(sc, "t1")));
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
}

TEST_CASE("memory store: tenants are separate scopes that cannot collide")
{
    fixture f;
    CHECK(run(f.ioc, f.s->reserve({"a", "k"}, in_flight("t1"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"b", "k"}, in_flight("t2"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "k"}, in_flight("t3"), 30s)).acquired);
    // "ab"+"c" and "a"+"bc" concatenate alike; the length prefix keeps them apart.
    CHECK(run(f.ioc, f.s->reserve({"ab", "c"}, in_flight("t4"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"a", "bc"}, in_flight("t5"), 30s)).acquired);
    CHECK(store::scope_map_key({"ab", "c"}) != store::scope_map_key({"a", "bc"}));
}

TEST_CASE("memory store: the bound refuses new keys but evicts expired ones first")
{
    fixture f(2);
    CHECK(run(f.ioc, f.s->reserve({"", "1"}, in_flight("t"), 10s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t"), 30s)).acquired);
    auto full = run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 30s));
    CHECK(full.ec == make_error_code(error::store_full));
    CHECK_FALSE(full.acquired);
    // Live records are never evicted to make room (that would let a duplicate run); expired ones are.
    f.clock.now += 11s;
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t"), 30s)).acquired);
}

TEST_CASE("memory store: full is a condition until room is found, and says when its oldest record expires")
{
    fixture f(2);
    CHECK(f.backend->status().conditions == 0);
    CHECK(f.backend->full_retry_after() == 1s); // empty: the floor
    CHECK(run(f.ioc, f.s->reserve({"", "1"}, in_flight("t"), 10s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t"), 30s)).acquired);
    CHECK(f.backend->status().conditions == 0); // full, but nothing refused yet
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 30s)).ec == make_error_code(error::store_full));
    auto status = f.backend->status();
    CHECK(status.conditions == static_cast<unsigned>(store::store_condition::full));
    REQUIRE(status.reasons.size() == 1);
    CHECK(status.reasons[0].find("the oldest record expires in 10s") != std::string::npos);
    CHECK(f.backend->full_retry_after() == 10s);
    f.clock.now += 7500ms;
    CHECK(f.backend->full_retry_after() == 2500ms);
    // The oldest record expired: the next reservation reclaims it, so no longer full.
    f.clock.now += 3s;
    CHECK(f.backend->status().conditions == 0);
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 2h)).acquired);
    // Retry-After is capped: a store full of long-lived records says 60 s.
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t"), 2h)).ec == make_error_code(error::store_full));
    f.clock.now += 30s; // key "2" expired, is reclaimed by the next reservation
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t"), 2h)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "5"}, in_flight("t"), 2h)).ec == make_error_code(error::store_full));
    CHECK(f.backend->full_retry_after() == store::full_retry_cap);
}

TEST_CASE(
    "memory store: the byte bound counts bodies, refuses new keys, and frees bytes on expiry and release")
{
    auto one_key = store::charged_bytes(store::scope_map_key({"", "1"}), in_flight("t1"));
    auto big = completed("t1", std::string(4000, 'b'));
    auto big_charge = store::charged_bytes(store::scope_map_key({"", "1"}), big);
    REQUIRE(big_charge > 4000);
    // Room for the big record plus one more in-flight key, not two.
    fixture f(100, big_charge + one_key + one_key / 2);
    CHECK(run(f.ioc, f.s->reserve({"", "1"}, in_flight("t1"), 10s)).acquired);
    // A finished response is always recorded, even though the entry grows.
    CHECK_FALSE(run(f.ioc, f.s->complete({"", "1"}, big, 10s)));
    CHECK(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t2"), 30s)).acquired);
    auto full = run(f.ioc, f.s->reserve({"", "3"}, in_flight("t3"), 30s));
    CHECK(full.ec == make_error_code(error::store_full));
    // Releasing key 2 gives its bytes back.
    CHECK_FALSE(run(f.ioc, f.s->release({"", "2"}, "t2")));
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t3"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t4"), 30s)).ec == make_error_code(error::store_full));
    // The big record expires: its bytes are swept and new keys fit again.
    f.clock.now += 11s;
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t4"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "5"}, in_flight("t5"), 30s)).acquired);
}

TEST_CASE("memory store: a full store refuses new keys without walking its entries")
{
    // Every refused key used to sweep the whole map under the one mutex,
    // 50 000 entries examined per refusal. The work is counted, not timed.
    constexpr std::size_t entries = 50000;
    fixture f(entries, std::size_t{1} << 30);
    CHECK(f.reserve_many("live-", entries, 1h) == std::pair<std::size_t, std::size_t>{entries, 0});
    auto before = f.stats();
    CHECK(before.entries == entries);
    CHECK(f.reserve_many("new-", 1000, 30s) == std::pair<std::size_t, std::size_t>{0, 1000});
    auto after = f.stats();
    CHECK(after.refused_full - before.refused_full == 1000);
    // Nothing has expired, so a refusal has nothing to look at: O(1) each, not O(entries).
    CHECK(after.examined - before.examined <= 1000);
    CHECK(after.reclaimed == before.reclaimed);
    CHECK(after.entries == entries);
    // Live records are still there and still answer.
    auto r = run(f.ioc, f.s->reserve({"", "live-123"}, in_flight("x"), 30s));
    REQUIRE(r.existing);
    CHECK(r.existing->owner_token == "t-live-123");
}

TEST_CASE("memory store: expired entries are reclaimed a bounded number per reservation and new keys get in")
{
    constexpr std::size_t entries = 50000;
    fixture f(entries, std::size_t{1} << 30);
    CHECK(f.reserve_many("old-", entries, 10s).first == entries);
    f.clock.now += 11s;
    auto before = f.stats();
    // One new key on a full store of expired entries: admitted, at the cost of a bounded
    // number of reclaimed entries, not a sweep of all 50 000.
    CHECK(run(f.ioc, f.s->reserve({"", "first"}, in_flight("t"), 30s)).acquired);
    auto one = f.stats();
    CHECK(one.reclaimed - before.reclaimed >= 1);
    CHECK(one.reclaimed - before.reclaimed <= store::memory_options{}.reclaim_budget);
    CHECK(one.examined - before.examined <=
          store::memory_options{}.reclaim_budget + store::memory_store_shards);
    // Every expired entry makes room for one new key.
    CHECK(f.reserve_many("new-", entries - 1, 30s) == std::pair<std::size_t, std::size_t>{entries - 1, 0});
    auto all = f.stats();
    CHECK(all.entries == entries);
    CHECK(all.reclaimed - before.reclaimed == entries);
    CHECK(f.reserve_many("more-", 10, 30s) == std::pair<std::size_t, std::size_t>{0, 10});
}

TEST_CASE("memory store: past the reclaim budget a reservation fails and the next ones reclaim further")
{
    // 40 small entries fill the bytes; the big record needs more than half of them to go.
    std::size_t small = 0;
    std::size_t filled = 0;
    for (std::size_t i = 0; i < 40; ++i) {
        auto key = std::string("s").append(std::to_string(i)); // "s" + ...: GCC 12 -Wrestrict false positive
        auto charge = store::charged_bytes(store::scope_map_key({"", key}), in_flight("t-" + key));
        small = std::max(small, charge);
        filled += charge;
    }
    auto big = completed("big", std::string(20 * small, 'b'));
    REQUIRE(store::charged_bytes(store::scope_map_key({"", "big"}), big) > 20 * small);
    fixture f(1000, filled, [](store::memory_options& o) { o.reclaim_budget = 4; });
    CHECK(f.reserve_many("s", 40, 10s).first == 40);
    CHECK(f.stats().bytes == filled);
    f.clock.now += 11s;
    big.state = store::record_state::in_flight;
    std::size_t attempts = 0;
    store::reserve_result r;
    std::uint64_t most_reclaimed = 0;
    do {
        auto before = f.stats().reclaimed;
        r = run(f.ioc, f.s->reserve({"", "big"}, big, 30s));
        most_reclaimed = std::max(most_reclaimed, f.stats().reclaimed - before);
        ++attempts;
    } while (!r.acquired && r.ec == make_error_code(error::store_full) && attempts < 40);
    CHECK(r.acquired);
    CHECK(most_reclaimed <= 4);
    CHECK(attempts >= 6); // at least 21 entries had to go, 4 per attempt
    CHECK(f.stats().bytes <= filled);
}

TEST_CASE("memory store: a replay on another shard is answered while a shard is reclaiming")
{
    // Set while_reclaiming's job once the store is ready; it runs with one shard's lock held.
    std::atomic<bool> armed{false};
    std::function<void(std::size_t)> job;
    // Full, so the new key below must reclaim.
    fixture f(store::memory_store_shards + 200, 1 << 20, [&](store::memory_options& o) {
        o.while_reclaiming = [&](std::size_t shard) {
            if (armed.exchange(false))
                job(shard);
        };
    });
    // One live key in every shard.
    std::vector<std::string> live(store::memory_store_shards);
    for (std::size_t i = 0, found = 0; found < live.size(); ++i) {
        auto key = "live-" + std::to_string(i);
        auto& slot = live[store::memory_store_shard({"", key})];
        if (slot.empty()) {
            slot = key;
            ++found;
            CHECK(run(f.ioc, f.s->reserve({"", key}, in_flight("t-" + key), 1h)).acquired);
        }
    }
    CHECK(f.reserve_many("old-", 200, 10s).first == 200);
    f.clock.now += 11s;

    std::thread replayer;
    std::size_t reclaiming_shard = store::memory_store_shards;
    bool answered = false;
    store::reserve_result replay;
    job = [&](std::size_t shard) {
        reclaiming_shard = shard;
        const auto& key = live[(shard + 1) % live.size()];
        std::promise<store::reserve_result> result;
        auto done = result.get_future();
        replayer = std::thread([&, key] {
            boost::asio::io_context ioc;
            auto s = f.backend->open_session(ioc.get_executor());
            result.set_value(run(ioc, s->reserve({"", key}, in_flight("dup"), 30s)));
        });
        // Not a timing assertion: a deadlock guard. With one lock for the whole store the
        // replay waits until this hook returns, so it is never ready here.
        answered = done.wait_for(30s) == std::future_status::ready;
        if (answered)
            replay = done.get();
    };
    armed = true;
    CHECK(f.reserve_many("new-", 1, 30s).first == 1);
    if (replayer.joinable())
        replayer.join();
    REQUIRE(reclaiming_shard < store::memory_store_shards);
    CHECK(answered);
    REQUIRE(replay.existing);
    CHECK(replay.existing->owner_token == "t-" + live[(reclaiming_shard + 1) % live.size()]);
}

TEST_CASE("memory store: two threads reserving on a full store keep the bound and give each key one owner")
{
    constexpr std::size_t max_entries = 4000;
    constexpr std::size_t expiring = 2000;
    constexpr std::size_t contested = 3000;
    fixture f(max_entries, std::size_t{1} << 30);
    CHECK(f.reserve_many("old-", expiring, 10s).first == expiring);
    CHECK(f.reserve_many("live-", max_entries - expiring, 1h).first == max_entries - expiring);
    f.clock.now += 11s; // before the threads start: the clock is not shared while they run

    struct outcome {
        std::set<std::string> acquired;
        std::size_t full = 0;
        std::size_t bad_replays = 0;
        std::size_t other_errors = 0;
    };
    std::latch start(2); // both threads begin together, so their reservations overlap
    auto worker = [&](bool forward, outcome& out) {
        boost::asio::io_context ioc;
        auto s = f.backend->open_session(ioc.get_executor());
        start.arrive_and_wait();
        run(ioc, [&]() -> boost::asio::awaitable<void> {
            for (std::size_t n = 0; n < contested; ++n) {
                std::size_t i = forward ? n : contested - 1 - n;
                auto key = "new-" + std::to_string(i);
                auto token = std::string(forward ? "a-" : "b-") + key;
                auto r = co_await s->reserve({"", key}, in_flight(token), 30s);
                if (r.acquired) {
                    out.acquired.insert(key);
                    if (i % 2 == 0 && co_await s->complete({"", key}, completed(token, key), 1h))
                        ++out.other_errors;
                } else if (r.ec == make_error_code(error::store_full)) {
                    ++out.full;
                } else if (r.ec || !r.existing) {
                    ++out.other_errors;
                }
                // A live key replays its own record whatever the other thread is doing.
                auto live = "live-" + std::to_string(i % (max_entries - expiring));
                auto replay = co_await s->reserve({"", live}, in_flight("dup"), 30s);
                if (!replay.existing || replay.existing->owner_token != "t-" + live)
                    ++out.bad_replays;
            }
        }());
    };
    outcome a;
    outcome b;
    std::thread ta([&] { worker(true, a); });
    std::thread tb([&] { worker(false, b); });
    ta.join();
    tb.join();

    std::vector<std::string> both;
    std::set_intersection(a.acquired.begin(), a.acquired.end(), b.acquired.begin(), b.acquired.end(),
                          std::back_inserter(both));
    CHECK_MESSAGE(both.empty(), both.size() << " keys acquired by both threads");
    CHECK(a.bad_replays + b.bad_replays == 0);
    CHECK(a.other_errors + b.other_errors == 0);
    auto st = f.stats();
    CHECK(st.entries <= max_entries);
    CHECK(a.acquired.size() + b.acquired.size() <= expiring);
    CHECK(a.acquired.size() + b.acquired.size() > 0);
    // A reservation may skip a shard another thread holds, so some room can be left; a quiet
    // pass fills it exactly to the bound, and the keys taken stay taken.
    auto rest = f.reserve_many("rest-", expiring, 30s);
    CHECK(a.acquired.size() + b.acquired.size() + rest.first == expiring);
    CHECK(f.stats().entries == max_entries);
    std::size_t wrong_owner = 0;
    for (const auto* out : {&a, &b}) {
        for (const auto& key : out->acquired) {
            auto r = run(f.ioc, f.s->reserve({"", key}, in_flight("late"), 30s));
            auto owner = std::string(out == &a ? "a-" : "b-") + key;
            wrong_owner += r.existing && r.existing->owner_token == owner ? 0 : 1;
        }
    }
    CHECK(wrong_owner == 0);
    // Once everything has expired, the store holds exactly the new keys and their bytes: no
    // entry or byte was counted twice or lost on the way.
    f.clock.now += 2h;
    CHECK(f.reserve_many("final-", max_entries, 30s).first == max_entries);
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < max_entries; ++i) {
        auto key = "final-" + std::to_string(i);
        bytes += store::charged_bytes(store::scope_map_key({"", key}), in_flight("t-" + key));
    }
    CHECK(f.stats().entries == max_entries);
    CHECK(f.stats().bytes == bytes);
}

TEST_CASE(
    "memory store: tenant max_in_flight counts admitted reservations until they leave or their lock expires")
{
    fixture f;
    store::tenant_limits limits;
    limits.max_in_flight = 2;
    auto admit = [&](std::string tenant, std::string token) {
        return run(f.ioc, f.s->quotas()->admit(tenant, token, limits, 10s));
    };
    CHECK(admit("acme", "a").verdict == store::admission::admitted);
    CHECK(admit("acme", "b").verdict == store::admission::admitted);
    auto third = admit("acme", "c");
    CHECK(third.verdict == store::admission::too_many_in_flight);
    CHECK(third.retry_after.count() > 0);
    CHECK(admit("globex", "g").verdict == store::admission::admitted); // tenants are separate
    CHECK_FALSE(run(f.ioc, f.s->quotas()->leave("acme", "a")));
    CHECK(admit("acme", "c").verdict == store::admission::admitted);
    CHECK(admit("acme", "d").verdict == store::admission::too_many_in_flight);
    // A reservation that never left (a crashed gateway) stops counting when its lock expires.
    f.clock.now += 11s;
    CHECK(admit("acme", "d").verdict == store::admission::admitted);
}

TEST_CASE("memory store: tenant new_keys_per_second is a token bucket with burst = rate")
{
    fixture f;
    store::tenant_limits limits;
    limits.new_keys_per_second = 4;
    int token = 0;
    auto admit = [&] {
        std::string owner = "t";
        owner += std::to_string(++token);
        return run(f.ioc, f.s->quotas()->admit("acme", owner, limits, 10s));
    };
    for (int i = 0; i < 4; ++i)
        CHECK(admit().verdict == store::admission::admitted);
    auto refused = admit();
    CHECK(refused.verdict == store::admission::rate_exceeded);
    CHECK(refused.retry_after.count() == 250); // one token at 4/s
    f.clock.now += 250ms;
    CHECK(admit().verdict == store::admission::admitted);
    CHECK(admit().verdict == store::admission::rate_exceeded);
    f.clock.now += 10s; // refills to the burst, not beyond
    for (int i = 0; i < 4; ++i)
        CHECK(admit().verdict == store::admission::admitted);
    CHECK(admit().verdict == store::admission::rate_exceeded);
}

TEST_CASE("memory store: wait_settled returns when the key completes or is released, or at the deadline")
{
    fixture f;
    store::scope sc{"", "w"};
    REQUIRE(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    // The waiter starts first; the owner completes from another coroutine on the same context.
    auto waited = boost::asio::co_spawn(f.ioc, f.s->waits()->wait_settled(sc, 5s), boost::asio::use_future);
    boost::asio::co_spawn(
        f.ioc,
        [&]() -> boost::asio::awaitable<void> {
            boost::asio::steady_timer t(f.ioc, 20ms);
            co_await t.async_wait(boost::asio::use_awaitable);
            co_await f.s->complete(sc, completed("t1", "done"), 1h);
        },
        boost::asio::detached);
    auto started = std::chrono::steady_clock::now();
    f.ioc.restart();
    f.ioc.run();
    auto r = waited.get();
    CHECK(std::chrono::steady_clock::now() - started < 2s);
    CHECK_FALSE(r.ec);
    CHECK_FALSE(r.timed_out);
    REQUIRE(r.existing);
    CHECK(r.existing->state == store::record_state::completed);
    CHECK(r.existing->response.body == "done");

    // Released: the waiter sees no record.
    store::scope sc2{"", "w2"};
    REQUIRE(run(f.ioc, f.s->reserve(sc2, in_flight("t2"), 30s)).acquired);
    auto waited2 = boost::asio::co_spawn(f.ioc, f.s->waits()->wait_settled(sc2, 5s), boost::asio::use_future);
    boost::asio::co_spawn(
        f.ioc, [&]() -> boost::asio::awaitable<void> { co_await f.s->release(sc2, "t2"); },
        boost::asio::detached);
    f.ioc.restart();
    f.ioc.run();
    auto r2 = waited2.get();
    CHECK_FALSE(r2.timed_out);
    CHECK_FALSE(r2.existing);

    // Nobody settles it: timed out, still in flight.
    store::scope sc3{"", "w3"};
    REQUIRE(run(f.ioc, f.s->reserve(sc3, in_flight("t3"), 30s)).acquired);
    auto r3 = run(f.ioc, f.s->waits()->wait_settled(sc3, 50ms));
    CHECK(r3.timed_out);
    REQUIRE(r3.existing);
    CHECK(r3.existing->state == store::record_state::in_flight);
}

TEST_CASE("extend restarts an owner's in-flight lock, never a completed record's TTL; tombstones and "
          "execution counts live beside the record")
{
    fixture f;
    store::scope sc{"t", "k"};
    auto token = std::string("tok");
    auto r = run(f.ioc, f.s->reserve(sc, in_flight(token), 1000ms));
    REQUIRE(r.acquired);
    f.clock.now += 900ms;
    CHECK(!run(f.ioc, f.s->extend(sc, token, 1000ms)));
    CHECK(run(f.ioc, f.s->extend(sc, "other", 1000ms)) == error::not_owner);
    f.clock.now += 900ms; // 1.8 s after the reservation: alive thanks to the extension
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("late"), 1000ms)).existing.has_value());
    REQUIRE(!run(f.ioc, f.s->complete(sc, completed(token, "body"), 60000ms)));
    CHECK(run(f.ioc, f.s->extend(sc, token, 10ms)) == error::not_owner); // completed: untouched
    f.clock.now += 30000ms;
    CHECK(run(f.ioc, f.s->lookup(sc)).existing.has_value());

    auto tomb = completed(token, "");
    tomb.state = store::record_state::tombstone;
    REQUIRE(!run(f.ioc, f.s->tombstones()->bury(sc, tomb, 120000ms)));
    CHECK(run(f.ioc, f.s->tombstones()->find_tombstone(sc)).tombstone == tomb);
    CHECK(run(f.ioc, f.s->attempts()->count_execution(sc, 5000ms)).count == 1);
    CHECK(run(f.ioc, f.s->attempts()->count_execution(sc, 5000ms)).count == 2);
    f.clock.now += 6000ms; // the count expired
    CHECK(run(f.ioc, f.s->attempts()->count_execution(sc, 5000ms)).count == 1);
    f.clock.now += 100000ms; // the record expired, the tombstone lives on
    CHECK_FALSE(run(f.ioc, f.s->lookup(sc)).existing.has_value());
    CHECK(run(f.ioc, f.s->tombstones()->find_tombstone(sc)).tombstone.has_value());
    bool removed = false;
    run(f.ioc, f.s->remove(sc, removed)); // an operator's remove takes the tombstone too
    CHECK_FALSE(run(f.ioc, f.s->tombstones()->find_tombstone(sc)).tombstone.has_value());
}
