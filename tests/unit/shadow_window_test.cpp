// SPDX-License-Identifier: Apache-2.0
// The shadow report's sliding window in the memory store (store::shadow_tally): counts added at
// one time are summed by a window that still covers it and left out by one that no longer does,
// without waiting: the interface takes the time.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>
#include <idemgate/store/memory_store.hpp>

using namespace idemgate;

namespace {

constexpr std::int64_t minute_ms = 60 * 1000;

// Runs one call of `tally` on `ioc` to its end.
template<class Awaitable>
auto run_tally(boost::asio::io_context& ioc, Awaitable a)
{
    auto f = boost::asio::co_spawn(ioc, std::move(a), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

std::uint64_t keyed(const store::shadow_counts& counts)
{
    return counts[static_cast<std::size_t>(store::shadow_figure::keyed)];
}

} // namespace

TEST_CASE("memory store: the shadow report's window slides with the time it is read at")
{
    boost::asio::io_context ioc;
    auto backend = store::make_memory_backend({});
    auto session = backend->open_session(ioc.get_executor());
    auto* tally = session->shadows();
    REQUIRE(tally != nullptr);
    // A time inside a minute, so the buckets' boundaries do not line up with the reads.
    const std::int64_t t = 1'800'000'000'000 + 17'000;
    auto add = [&](std::int64_t at, std::uint64_t n) {
        store::shadow_counts since_start{};
        store::shadow_counts window{};
        since_start[0] = n;
        window[0] = n;
        auto ec = run_tally(ioc, tally->add_shadow_counts("/api/", since_start, window, at));
        CHECK_FALSE(ec);
        CHECK(window[0] == 0); // taken
    };
    auto read = [&](std::int64_t at, std::int64_t buckets) {
        auto totals = run_tally(ioc, tally->read_shadow_counts("/api/", at, buckets));
        CHECK_FALSE(totals.ec);
        return totals;
    };
    add(t, 3);
    add(t + 7 * minute_ms, 4);
    // At t: every window holds the first counts.
    CHECK(keyed(read(t, 5).window) == 3);
    CHECK(keyed(read(t, 1).window) == 3);
    // Ten minutes later a 5-minute window holds what came at t + 7 min only, a 60-minute one both.
    const auto later = t + 10 * minute_ms;
    CHECK(keyed(read(later, 5).window) == 4);
    CHECK(keyed(read(later, 60).window) == 7);
    CHECK(keyed(read(later, 60).since_start) == 7);
    // A window asked beyond what is kept is the longest one; below one bucket, one.
    CHECK(keyed(read(later, 100000).window) == 7);
    CHECK(keyed(read(later, 0).window) == 0);
    // 24 h after t the first counts have left the longest window, the second not yet; both
    // stay in the totals. A bucket reused by the ring (one day later) starts again from 0.
    const auto day = 24 * 60 * minute_ms;
    CHECK(keyed(read(t + day + 6 * minute_ms, store::shadow_buckets_kept).window) == 4);
    add(t + day + 7 * minute_ms, 1);
    CHECK(keyed(read(t + day + 7 * minute_ms, store::shadow_buckets_kept).window) == 1);
    CHECK(keyed(read(t + day + 7 * minute_ms, 1).window) == 1);
    CHECK(keyed(read(t + day + 7 * minute_ms, 1).since_start) == 8);
    // Another route has its own counts.
    CHECK(keyed(run_tally(ioc, tally->read_shadow_counts("/other/", later, 60)).window) == 0);
}
