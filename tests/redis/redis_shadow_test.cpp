// SPDX-License-Identifier: Apache-2.0
// The Redis store's shadow report against a real redis-server: the window slides with the time
// it is read at (the interface takes the time, so nothing waits), a day's window is one script
// call, and each minute's hash outlives the longest window by one bucket.
#include "redis/redis_keys.hpp"
#include "redis_store_fixture.hpp"

#include <idemgate/store/store.hpp>

using namespace idemgate;
using namespace idemgate::test;

namespace {

constexpr std::int64_t shadow_minute_ms = 60 * 1000;

std::uint64_t keyed_of(const store::shadow_counts& counts)
{
    return counts[static_cast<std::size_t>(store::shadow_figure::keyed)];
}

} // namespace

TEST_CASE("redis store: the shadow report's window slides with the time it is read at")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    auto* tally = f.session->shadows();
    REQUIRE(tally != nullptr);
    const std::int64_t t = 1'800'000'000'000 + 17'000;
    auto add = [&](std::int64_t at, std::uint64_t n) {
        return f.io.run([&]() -> boost::asio::awaitable<boost::system::error_code> {
            store::shadow_counts since_start{};
            store::shadow_counts window{};
            since_start[static_cast<std::size_t>(store::shadow_figure::keyed)] = n;
            window[static_cast<std::size_t>(store::shadow_figure::keyed)] = n;
            window[static_cast<std::size_t>(store::shadow_figure::reuse)] = 1;
            co_return co_await tally->add_shadow_counts("/api/", since_start, window, at);
        });
    };
    auto read = [&](std::int64_t at, std::int64_t buckets) {
        auto totals = f.io.run([&]() -> boost::asio::awaitable<store::shadow_totals> {
            co_return co_await tally->read_shadow_counts("/api/", at, buckets);
        });
        CHECK_FALSE(totals.ec);
        return totals;
    };
    CHECK_FALSE(add(t, 3));
    CHECK_FALSE(add(t + 7 * shadow_minute_ms, 4));
    const auto later = t + 10 * shadow_minute_ms;
    CHECK(keyed_of(read(later, 5).window) == 4);
    auto hour = read(later, 60);
    CHECK(keyed_of(hour.window) == 7);
    CHECK(hour.window[static_cast<std::size_t>(store::shadow_figure::reuse)] == 2);
    CHECK(keyed_of(hour.since_start) == 7);
    CHECK(hour.since_start[static_cast<std::size_t>(store::shadow_figure::reuse)] == 0);
    // The longest window, after the server lost its scripts (EVAL once, then EVALSHA again).
    CHECK(redis.command({"SCRIPT", "FLUSH"}) == "+OK\r\n");
    CHECK(keyed_of(read(later, store::shadow_buckets_kept).window) == 7);
    CHECK(keyed_of(read(t + 24 * 60 * shadow_minute_ms + 6 * shadow_minute_ms, store::shadow_buckets_kept)
                       .window) == 4);
    CHECK(f.stats().errors_reply.load() == 0);
    // A minute's hash outlives the longest window (24 h) by one bucket.
    const auto bucket = store::detail::shadow_key("test", "/api/", std::to_string(t / shadow_minute_ms));
    auto pttl = resp_integer(redis.command({"PTTL", bucket}));
    CHECK(pttl > 24 * 60 * shadow_minute_ms);
    CHECK(pttl <= 24 * 60 * shadow_minute_ms + shadow_minute_ms);
    // Another route has its own counts.
    auto other = f.io.run([&]() -> boost::asio::awaitable<store::shadow_totals> {
        co_return co_await tally->read_shadow_counts("/other/", later, 60);
    });
    CHECK_FALSE(other.ec);
    CHECK(keyed_of(other.window) == 0);
}
