// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_shadow.hpp"

#include "redis/redis_keys.hpp"
#include "redis/redis_scripts.hpp"

#include <array>
#include <boost/describe/enum_to_string.hpp>
#include <charconv>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using std::chrono::milliseconds;

namespace {

constexpr std::int64_t bucket_ms = std::chrono::duration_cast<milliseconds>(shadow_bucket).count();

std::string_view figure_name(std::size_t f)
{
    return boost::describe::enum_to_string(static_cast<shadow_figure>(f), "");
}

// HINCRBY of every count not 0, then PEXPIRE `ttl` when one was added. Each added is set to 0.
asio::awaitable<error_code> add_to(command_router& router, redis_shared& shared, const std::string& key,
                                   shadow_counts& counts, milliseconds ttl)
{
    error_code failed;
    bool added = false;
    for (std::size_t f = 0; f < shadow_figure_count; ++f) {
        if (counts[f] == 0)
            continue;
        auto n = std::to_string(counts[f]);
        std::array<std::string_view, 4> args{"HINCRBY", key, figure_name(f), n};
        auto r = co_await router.execute(key, args);
        if (r.ec) {
            if (r.ec == error::store_error_reply)
                shared.log_error_reply("add_shadow_counts", "HINCRBY", r);
            failed = r.ec;
            continue;
        }
        counts[f] = 0;
        added = true;
    }
    if (added) {
        auto px = ttl_ms(ttl);
        std::array<std::string_view, 3> expire{"PEXPIRE", key, px};
        auto r = co_await router.execute(key, expire);
        if (r.ec == error::store_error_reply)
            shared.log_error_reply("add_shadow_counts", "PEXPIRE", r);
        if (r.ec && !failed)
            failed = r.ec;
    }
    co_return failed;
}

// HGETALL `key` added into `out`; a field that names no figure is left alone.
asio::awaitable<error_code> add_from(command_router& router, redis_shared& shared, const std::string& key,
                                     shadow_counts& out)
{
    std::array<std::string_view, 2> args{"HGETALL", key};
    auto r = co_await router.execute(key, args);
    if (r.ec) {
        if (r.ec == error::store_error_reply)
            shared.log_error_reply("read_shadow_counts", "HGETALL", r);
        co_return r.ec;
    }
    // An array of name, value.
    if (r.reply->type != REDIS_REPLY_ARRAY) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        co_return make_error_code(error::store_protocol);
    }
    for (std::size_t i = 0; i + 1 < r.reply->elements; i += 2) {
        const auto* name = r.reply->element[i];
        const auto* value = r.reply->element[i + 1];
        if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING)
            continue;
        std::string_view field(name->str, name->len);
        std::uint64_t n = 0;
        std::from_chars(value->str, value->str + value->len, n);
        for (std::size_t f = 0; f < shadow_figure_count; ++f)
            if (field == figure_name(f))
                out[f] += n;
    }
    co_return error_code{};
}

} // namespace

asio::awaitable<error_code> add_shadow_counts(command_router& router, redis_shared& shared,
                                              std::string_view route, shadow_counts& since_start,
                                              shadow_counts& window, std::int64_t now_unix_ms)
{
    const auto& prefix = shared.cfg.key_prefix;
    auto totals_ec = co_await add_to(router, shared, shadow_key(prefix, route, "all"), since_start,
                                     std::chrono::duration_cast<milliseconds>(shadow_keep));
    auto bucket = shadow_key(prefix, route, std::to_string(now_unix_ms / bucket_ms));
    auto window_ec =
        co_await add_to(router, shared, bucket, window, milliseconds(bucket_ms * (shadow_buckets + 1)));
    co_return totals_ec ? totals_ec : window_ec;
}

asio::awaitable<shadow_totals> read_shadow_counts(command_router& router, redis_shared& shared,
                                                  std::string_view route, std::int64_t now_unix_ms)
{
    const auto& prefix = shared.cfg.key_prefix;
    shadow_totals out;
    out.ec = co_await add_from(router, shared, shadow_key(prefix, route, "all"), out.since_start);
    const auto index = now_unix_ms / bucket_ms;
    for (std::int64_t i = 0; i < shadow_buckets && !out.ec; ++i)
        out.ec = co_await add_from(router, shared, shadow_key(prefix, route, std::to_string(index - i)),
                                   out.window);
    co_return out;
}

} // namespace idemgate::store::detail
