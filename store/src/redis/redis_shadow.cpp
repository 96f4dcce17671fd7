// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_shadow.hpp"

#include "redis/redis_keys.hpp"
#include "redis/redis_scripts.hpp"

#include <algorithm>
#include <array>
#include <boost/describe/enum_to_string.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <vector>

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
        co_await add_to(router, shared, bucket, window, milliseconds(bucket_ms * (shadow_buckets_kept + 1)));
    co_return totals_ec ? totals_ec : window_ec;
}

asio::awaitable<shadow_totals> read_shadow_counts(command_router& router, redis_shared& shared,
                                                  std::string_view route, shadow_window_at at)
{
    const auto& prefix = shared.cfg.key_prefix;
    const auto index = at.now_unix_ms / bucket_ms;
    const auto buckets = std::clamp<std::int64_t>(at.buckets, 1, shadow_buckets_kept);
    std::vector<std::string> keys;
    keys.reserve(static_cast<std::size_t>(buckets) + 1);
    keys.push_back(shadow_key(prefix, route, "all"));
    for (std::int64_t i = 0; i < buckets; ++i)
        keys.push_back(shadow_key(prefix, route, std::to_string(index - i)));
    const auto& script = shadow_read_lua();
    const auto key_count = std::to_string(keys.size());
    std::vector<std::string_view> args{"EVALSHA", script.sha, key_count};
    args.reserve(3 + keys.size() + shadow_figure_count);
    args.insert(args.end(), keys.begin(), keys.end());
    for (std::size_t f = 0; f < shadow_figure_count; ++f)
        args.push_back(figure_name(f));
    // One hash tag: every key is in the first one's slot.
    auto r = co_await router.execute(keys.front(), args);
    if (is_noscript(r)) {
        args[0] = "EVAL";
        args[1] = script.text;
        r = co_await router.execute(keys.front(), args);
    }
    shadow_totals out;
    if (r.ec) {
        if (r.ec == error::store_error_reply)
            shared.log_error_reply("read_shadow_counts", "EVALSHA", r);
        out.ec = r.ec;
        co_return out;
    }
    // The totals' counts, then the window's sums.
    if (r.reply->type != REDIS_REPLY_ARRAY || r.reply->elements != 2 * shadow_figure_count) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        out.ec = make_error_code(error::store_protocol);
        co_return out;
    }
    for (std::size_t f = 0; f < shadow_figure_count; ++f) {
        const auto* total = r.reply->element[f];
        const auto* sum = r.reply->element[shadow_figure_count + f];
        out.since_start[f] =
            total->type == REDIS_REPLY_INTEGER ? static_cast<std::uint64_t>(total->integer) : 0;
        out.window[f] = sum->type == REDIS_REPLY_INTEGER ? static_cast<std::uint64_t>(sum->integer) : 0;
    }
    co_return out;
}

} // namespace idemgate::store::detail
