// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_health.hpp"

#include "redis/client/redis_connection.hpp"

#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::store::detail {

namespace {

std::string seconds_text(std::chrono::milliseconds d)
{
    return std::to_string((d.count() + 999) / 1000) + "s";
}

} // namespace

std::string_view refusal_kind_name(std::size_t index) noexcept
{
    return boost::describe::enum_to_string(static_cast<refusal_kind>(index), "");
}

std::optional<refusal_kind> classify_refusal(std::string_view reply, bool sentinel_mode) noexcept
{
    for (std::string_view moving :
         {"MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN", "LOADING", "BUSY", "MASTERDOWN"})
        if (reply.starts_with(moving))
            return std::nullopt;
    if (reply.starts_with("NOPERM"))
        return refusal_kind::noperm;
    if (reply.starts_with("READONLY"))
        return sentinel_mode ? std::nullopt : std::optional(refusal_kind::readonly);
    if (reply.starts_with("OOM"))
        return refusal_kind::oom;
    if (reply.starts_with("NOSCRIPT"))
        return refusal_kind::noscript;
    return refusal_kind::other;
}

void redis_health::set_policy(const refusal_policy& policy)
{
    std::lock_guard lock(mutex_);
    policy_ = policy;
    policy_.errors = std::max<std::uint32_t>(policy_.errors, 1);
}

void redis_health::note_refusal(std::string_view operation, std::string_view command, std::string_view reply)
{
    auto kind = classify_refusal(reply, cfg_.mode == config::redis_mode::sentinel);
    if (!kind)
        return;
    stats_.refusals[static_cast<std::size_t>(*kind)].fetch_add(1, std::memory_order_relaxed);
    if (!enabled())
        return;
    const auto now = clock::now();
    std::lock_guard lock(mutex_);
    recent_.push_back(now);
    while (!recent_.empty() && now - recent_.front() > policy_.window)
        recent_.pop_front();
    while (recent_.size() > policy_.errors)
        recent_.pop_front();
    if (refusing_ || recent_.size() < policy_.errors)
        return;
    refusing_ = true;
    refusing_reason_ = std::to_string(policy_.errors) + " error replies to writes within " +
                       seconds_text(policy_.window) + ", the last to " + std::string(command) + " (" +
                       std::string(operation) + "): " + printable_text(reply);
    publish_locked();
    log::error("store refuses writes: new keys are answered 503 and the gateway is not ready until a "
               "probe write succeeds",
               {{"address", cfg_.address.to_string()},
                {"errors", policy_.errors},
                {"window_ms", policy_.window.count()},
                {"operation", operation},
                {"command", command},
                {"reply", printable_text(reply)},
                {"probe_key", cfg_.key_prefix + ":probe"}});
}

void redis_health::check_passed()
{
    std::lock_guard lock(mutex_);
    if (refusing_)
        log::info("store accepts writes again: a probe write succeeded",
                  {{"address", cfg_.address.to_string()}, {"probe_key", cfg_.key_prefix + ":probe"}});
    if (!refused_command_.empty())
        log::info("redis runs every command the store needs again",
                  {{"address", cfg_.address.to_string()}, {"previously_refused", refused_command_}});
    refusing_ = false;
    recent_.clear();
    refused_command_.clear();
    refused_reply_.clear();
    publish_locked();
}

void redis_health::check_refused(std::string_view command, std::string_view reply)
{
    std::lock_guard lock(mutex_);
    if (refused_command_ != command)
        log::error("redis refused a command the store needs: new keys are answered 503 and the gateway is "
                   "not ready until it runs",
                   {{"address", cfg_.address.to_string()},
                    {"command", command},
                    {"reply", printable_text(reply)},
                    {"key", cfg_.key_prefix + ":probe"}});
    refused_command_ = command;
    refused_reply_ = printable_text(reply);
    publish_locked();
}

bool redis_health::needs_probe() const
{
    std::lock_guard lock(mutex_);
    return refusing_ || !refused_command_.empty();
}

void redis_health::publish_locked()
{
    if (flag_)
        flag_->store(refusing_ || !refused_command_.empty(), std::memory_order_relaxed);
}

void redis_health::note_policy(std::optional<std::string_view> policy)
{
    std::lock_guard lock(mutex_);
    policy_text_ = policy ? std::optional<std::string>(printable_text(*policy)) : std::nullopt;
}

void redis_health::note_persistence(std::optional<bool> persists)
{
    stats_.persistence.store(persists ? (*persists ? 1 : 0) : -1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    if (persists != persists_ && persists && !*persists)
        log::warn("redis keeps no persistence (save \"\" and appendonly no): a restart empties it, and every "
                  "key recorded before may run again",
                  {{"address", cfg_.address.to_string()}});
    persists_ = persists;
}

void redis_health::note_emptied()
{
    stats_.emptied.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    emptied_at_ = clock::now();
    log::error("redis lost its data: the marker key is gone (a restart without persistence, a flush or an "
               "eviction); keys recorded before may run again",
               {{"address", cfg_.address.to_string()}, {"marker", cfg_.key_prefix + ":marker"}});
}

store_status redis_health::status() const
{
    store_status out;
    std::lock_guard lock(mutex_);
    if (refusing_) {
        out.conditions |= static_cast<unsigned>(store_condition::refusing);
        out.reasons.push_back("refusing writes: " + refusing_reason_ + "; a probe write on " +
                              cfg_.key_prefix + ":probe ends it");
    }
    if (!refused_command_.empty()) {
        out.conditions |= static_cast<unsigned>(store_condition::command_refused);
        out.reasons.push_back("command refused: " + refused_command_ + " answered " + refused_reply_);
    }
    if (policy_text_ && *policy_text_ != "noeviction") {
        auto what = "maxmemory-policy " + *policy_text_ +
                    " may evict records, and an evicted record lets "
                    "its key run again";
        if (cfg_.allow_eviction) {
            out.notes.push_back(what + " (allowed by store.redis.allow_eviction)");
        } else {
            out.conditions |= static_cast<unsigned>(store_condition::evicting);
            out.reasons.push_back("evicting: " + what +
                                  " (set it to noeviction, or store.redis.allow_eviction: true)");
        }
    }
    if (!policy_text_ && stats_.eviction_safe.load(std::memory_order_relaxed) == -1)
        out.notes.emplace_back("maxmemory-policy unknown (CONFIG GET refused, or not read yet)");
    if (!persists_)
        out.notes.emplace_back("persistence unknown (CONFIG GET refused, or not read yet)");
    else if (!*persists_)
        out.notes.emplace_back("no persistence (save \"\" and appendonly no): a restart of Redis empties it");
    if (emptied_at_ && clock::now() - *emptied_at_ < emptied_note_for)
        out.notes.push_back(
            "emptied " +
            seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - *emptied_at_)) +
            " ago: " + cfg_.key_prefix +
            ":marker was gone (a restart without persistence, a flush or an eviction); keys recorded "
            "before may run again");
    return out;
}

} // namespace idemgate::store::detail
