// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_probes.hpp"

#include <array>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

void log_if_error_reply(redis_shared& shared, std::string_view command, const command_result& r)
{
    if (r.ec == error::store_error_reply)
        shared.log_error_reply("reconcile", command, r);
}

error_code protocol_error(redis_shared& shared)
{
    shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
    return make_error_code(error::store_protocol);
}

} // namespace

std::string probe_schedule_key(std::string_view key_prefix)
{
    std::string out(key_prefix);
    out += ":p:{reconcile}:due";
    return out;
}

asio::awaitable<error_code> schedule_probe(command_router& router, redis_shared& shared,
                                           std::string_view entry, std::int64_t due_unix_ms)
{
    auto key = probe_schedule_key(shared.cfg.key_prefix);
    auto due = std::to_string(due_unix_ms);
    std::array<std::string_view, 4> zadd{"ZADD", key, due, entry};
    auto r = co_await router.execute(key, zadd);
    log_if_error_reply(shared, "ZADD", r);
    co_return r.ec;
}

asio::awaitable<probe_claim> claim_probes(command_router& router, redis_shared& shared,
                                          std::int64_t now_unix_ms, duration lease, std::size_t limit)
{
    auto key = probe_schedule_key(shared.cfg.key_prefix);
    auto now = std::to_string(now_unix_ms);
    auto count = std::to_string(limit);
    probe_claim out;
    std::array<std::string_view, 7> range{"ZRANGEBYSCORE", key, "-inf", now, "LIMIT", "0", count};
    auto r = co_await router.execute(key, range);
    if (r.ec) {
        log_if_error_reply(shared, "ZRANGEBYSCORE", r);
        out.ec = r.ec;
        co_return out;
    }
    if (r.reply->type != REDIS_REPLY_ARRAY) {
        out.ec = protocol_error(shared);
        co_return out;
    }
    std::vector<std::string> due;
    for (std::size_t i = 0; i < r.reply->elements; ++i) {
        const auto* e = r.reply->element[i];
        if (e->type != REDIS_REPLY_STRING) {
            out.ec = protocol_error(shared);
            co_return out;
        }
        due.emplace_back(e->str, e->len);
    }
    auto again = std::to_string(now_unix_ms + lease.count());
    for (auto& entry : due) {
        std::array<std::string_view, 3> zrem{"ZREM", key, entry};
        auto removed = co_await router.execute(key, zrem);
        if (removed.ec) {
            log_if_error_reply(shared, "ZREM", removed);
            out.ec = removed.ec;
            co_return out;
        }
        if (removed.reply->type != REDIS_REPLY_INTEGER || removed.reply->integer != 1)
            continue; // another gateway claimed it first
        std::array<std::string_view, 4> zadd{"ZADD", key, again, entry};
        auto added = co_await router.execute(key, zadd);
        log_if_error_reply(shared, "ZADD", added);
        out.entries.push_back(std::move(entry));
    }
    co_return out;
}

asio::awaitable<error_code> unschedule_probe(command_router& router, redis_shared& shared,
                                             std::string_view entry)
{
    auto key = probe_schedule_key(shared.cfg.key_prefix);
    std::array<std::string_view, 3> zrem{"ZREM", key, entry};
    auto r = co_await router.execute(key, zrem);
    log_if_error_reply(shared, "ZREM", r);
    co_return r.ec;
}

} // namespace idemgate::store::detail
