// SPDX-License-Identifier: Apache-2.0
// redis_shared's logging (error replies, unreplicated records, corrupt records, the eviction
// policy), throttled so a failing server logs one line per interval; and the text helpers every
// Redis source uses to quote a reply in a log line.
#include "redis/client/redis_connection.hpp"

#include <algorithm>
#include <boost/json/object.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/log.hpp>
#include <mutex>

namespace idemgate::store::detail {

using clock = std::chrono::steady_clock;

std::string printable_text(std::string_view text)
{
    constexpr std::size_t max_bytes = 200;
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + 3);
    for (char ch : text.substr(0, max_bytes)) {
        auto c = static_cast<unsigned char>(ch);
        out.push_back(c >= 0x20 && c < 0x7f ? ch : '?'); // log lines stay ASCII
    }
    if (text.size() > max_bytes)
        out.append("...");
    return out;
}

std::string reply_text(const command_result& r)
{
    if (r.reply && r.reply->str)
        return printable_text(std::string_view(r.reply->str, r.reply->len));
    return r.ec.message();
}

void redis_shared::note_eviction_policy(std::optional<std::string_view> policy, std::string_view why)
{
    std::string now(policy.value_or(std::string_view{}));
    health.note_policy(policy);
    std::lock_guard lock(policy_mutex_);
    if (policy_read_ && now == last_policy_)
        return; // every connection checks; only a change is logged
    const bool first = !policy_read_;
    auto before = std::move(last_policy_);
    policy_read_ = true;
    last_policy_ = now;
    auto address = cfg.address.to_string();
    if (!policy) {
        stats.eviction_safe.store(-1, std::memory_order_relaxed);
        // CONFIG may be renamed or disabled (managed Redis): say so, it is not fatal.
        log::warn("could not read redis maxmemory-policy; make sure it is noeviction",
                  {{"address", address}, {"error", why}});
    } else if (now == "noeviction") {
        stats.eviction_safe.store(1, std::memory_order_relaxed);
        if (!first)
            log::info("redis maxmemory-policy is noeviction again; records are no longer evicted",
                      {{"address", address},
                       {"previous_policy", before.empty() ? "unknown" : printable_text(before)}});
    } else {
        stats.eviction_safe.store(0, std::memory_order_relaxed);
        // Every record has a TTL, so volatile-* policies evict them as readily as allkeys-*.
        if (cfg.allow_eviction)
            log::warn("redis may evict idempotency records: maxmemory-policy is not noeviction (allowed by "
                      "store.redis.allow_eviction); an evicted record lets a duplicate request run again",
                      {{"address", address}, {"maxmemory_policy", printable_text(now)}});
        else
            log::error("REDIS MAY EVICT IDEMPOTENCY RECORDS: maxmemory-policy is not noeviction; an evicted "
                       "record lets a duplicate request run again. The gateway is not ready until it is "
                       "noeviction (or store.redis.allow_eviction is true)",
                       {{"address", address},
                        {"maxmemory_policy", printable_text(now)},
                        {"fix", "CONFIG SET maxmemory-policy noeviction"}});
    }
}

bool log_throttle::allow(std::chrono::milliseconds interval, std::uint64_t& not_logged) noexcept
{
    // An OOM or READONLY server answers every command with an error: one line per interval, not
    // one per request.
    const std::int64_t now = clock::now().time_since_epoch().count();
    auto next = next_.load(std::memory_order_relaxed);
    const std::int64_t ticks = std::chrono::duration_cast<clock::duration>(interval).count();
    if (now < next || !next_.compare_exchange_strong(next, now + ticks, std::memory_order_relaxed)) {
        held_back_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    not_logged = held_back_.exchange(0, std::memory_order_relaxed);
    return true;
}

void redis_shared::log_error_reply(std::string_view operation, std::string_view command,
                                   const command_result& r)
{
    std::uint64_t unlogged = 0;
    if (!error_reply_log_.allow(options.error_log_interval, unlogged))
        return;
    boost::json::object fields{{"address", r.node.empty() ? cfg.address.to_string() : r.node},
                               {"operation", operation},
                               {"command", command},
                               {"reply", reply_text(r)}};
    if (unlogged)
        fields["error_replies_not_logged"] = unlogged;
    log::warn("redis answered with an error", std::move(fields));
}

void redis_shared::log_unreplicated(std::string_view key, long long acked, const command_result& r)
{
    std::uint64_t unlogged = 0;
    if (!unreplicated_log_.allow(options.error_log_interval, unlogged))
        return;
    boost::json::object fields{{"key", printable_text(key)},
                               {"min_replicas_ack", cfg.min_replicas_ack},
                               {"replicas_acknowledged", acked}};
    if (acked < 0)
        fields["error"] = reply_text(r);
    if (unlogged)
        fields["unreplicated_records_not_logged"] = unlogged;
    log::warn("record acknowledged by fewer replicas than min_replicas_ack; a failover now could lose it "
              "(idemgate_records_unreplicated_total counts them all)",
              std::move(fields));
}

void redis_shared::log_corrupt_record(std::string_view key, std::size_t bytes, std::string_view why)
{
    std::uint64_t unlogged = 0;
    if (!corrupt_record_log_.allow(options.error_log_interval, unlogged))
        return;
    boost::json::object fields{{"key", printable_text(key)}, {"bytes", bytes}, {"why", why}};
    if (unlogged)
        fields["corrupt_records_not_logged"] = unlogged;
    log::error("stored idempotency record does not decode; not served", std::move(fields));
}

} // namespace idemgate::store::detail
