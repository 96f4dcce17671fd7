// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory store's engine: one backend shared by every I/O thread, its records in
// record_shards, the settlement notifier for waiting duplicates, tenant quotas and the probe
// schedule. memory_store.cpp makes it; memory_session.cpp is each thread's session over it.
#include "held_book.hpp"
#include "memory/memory_backend.hpp"
#include "memory/probe_book.hpp"
#include "memory/record_shards.hpp"
#include "memory/tenant_quotas.hpp"
#include "settle_notifier.hpp"
#include "shadow_book.hpp"

#include <algorithm>
#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>
#include <mutex>

namespace idemgate::store::detail {

using clock = std::chrono::steady_clock;

inline std::size_t shard_of(std::string_view map_key) noexcept
{
    return std::hash<std::string_view>{}(map_key) % memory_store_shards;
}

// Expired entries a reservation reclaims from its own shard even when the store is not full
// (out of reclaim_budget), so expired records do not pile up until the bound is reached. Two
// per reservation keep up with a shard that takes one new key per reservation.
constexpr std::size_t reclaim_per_reserve = 2;

class memory_backend final : public backend, public std::enable_shared_from_this<memory_backend> {
public:
    explicit memory_backend(memory_options o) : options_(std::move(o))
    {
        if (!options_.now)
            options_.now = [] { return clock::now(); };
        // With no budget nothing expired would ever leave a full store.
        options_.reclaim_budget = std::max<std::size_t>(options_.reclaim_budget, 1);
    }

    std::unique_ptr<session> open_session(boost::asio::any_io_executor) override; // memory_session.cpp
    bool ready() const override { return true; }
    std::string_view kind() const noexcept override { return "memory"; }
    detail::probe_book probes;
    detail::shadow_book shadows; // the shadow report, in process
    detail::held_book held;
    void render_metrics(std::string& out) const override { detail::render_memory_metrics(stats(), out); }

    reserve_result reserve(scope s, const record& in_flight, duration ttl)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        std::size_t index = shard_of(k);
        auto& sh = shards_[index];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it != sh.entries.end()) {
            if (it->second.expires > now)
                return {{}, false, it->second.rec};
            shards_.erase(sh, it);
            detail::record_shards::bump(sh.reclaimed, 1);
        }
        std::size_t budget = options_.reclaim_budget;
        budget -= shards_.reclaim(sh, index, now, std::min(reclaim_per_reserve, budget));
        std::size_t charge = charged_bytes(k, in_flight);
        if (!shards_.admit(charge) && !shards_.make_room(index, now, charge, budget)) {
            detail::record_shards::bump(sh.refused_full, 1);
            full_.store(true, std::memory_order_relaxed);
            return {make_error_code(error::store_full), false, std::nullopt};
        }
        shards_.insert(sh, std::move(k), in_flight, now + ttl, charge);
        if (full_.load(std::memory_order_relaxed)) // written only on a change: read by every thread
            full_.store(false, std::memory_order_relaxed);
        return {{}, true, std::nullopt};
    }

    // Full since a reservation found no room, until one finds room again or the oldest record
    // has expired (the next reservation reclaims it).
    store_status status() const override
    {
        store_status out;
        auto left = until_oldest_expires();
        if (full_.load(std::memory_order_relaxed) && left.count() > 0) {
            out.conditions |= static_cast<unsigned>(store_condition::full);
            out.reasons.push_back("full: no room for a new key (store.memory.max_entries " +
                                  std::to_string(options_.max_entries) + ", max_bytes " +
                                  std::to_string(options_.max_bytes) + "); the oldest record expires in " +
                                  std::to_string((left.count() + 999) / 1000) + "s");
        }
        return out;
    }

    duration full_retry_after() const override
    {
        return std::clamp(until_oldest_expires(), duration(1000), full_retry_cap);
    }

    boost::system::error_code complete(scope s, const record& completed, duration ttl)
    {
        auto k = scope_map_key(s);
        auto ec = complete_locked(k, completed, ttl);
        if (!ec)
            notifier_.notify(k);
        return ec;
    }

    boost::system::error_code release(scope s, std::string_view owner_token)
    {
        auto k = scope_map_key(s);
        auto ec = release_locked(k, owner_token);
        if (!ec)
            notifier_.notify(k);
        return ec;
    }

    // The key holds owner_token's outcome_unknown record: `resolved` replaces it (for `ttl`), or
    // with none it goes.
    boost::system::error_code resolve_held(scope s, std::string_view owner_token, const record* resolved,
                                           duration ttl)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        {
            auto& sh = shards_[shard_of(k)];
            std::lock_guard lock(sh.mutex);
            auto it = sh.entries.find(k);
            if (it == sh.entries.end() || it->second.expires <= now ||
                it->second.rec.owner_token != owner_token ||
                it->second.rec.state != record_state::outcome_unknown)
                return make_error_code(error::not_owner);
            if (resolved) {
                it->second.rec = *resolved;
                shards_.recharge(it->second, charged_bytes(it->first, *resolved));
                shards_.set_expiry(sh, it->second, now + ttl);
            } else {
                shards_.erase(sh, it);
            }
        }
        notifier_.notify(k);
        return {};
    }

    detail::settle_notifier& notifier() noexcept { return notifier_; }

    // What is kept beside a scope's record, under its map key + '\0' + a letter (a key is
    // visible ASCII, so no record's map key reads alike): 't' its tombstone, 'n' its execution
    // count (a record whose created_unix_ms is the count).
    static std::string side_key(scope s, char which)
    {
        auto k = scope_map_key(s);
        k.push_back('\0');
        k.push_back(which);
        return k;
    }

    boost::system::error_code extend(scope s, std::string_view owner_token, duration lock_ttl)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        auto& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now ||
            it->second.rec.owner_token != owner_token || it->second.rec.state != record_state::in_flight)
            return make_error_code(error::not_owner);
        shards_.set_expiry(sh, it->second, now + lock_ttl);
        return {};
    }

    boost::system::error_code bury(scope s, const record& tombstone, duration ttl)
    {
        auto now = options_.now();
        auto k = side_key(s, 't');
        std::size_t index = shard_of(k);
        auto& sh = shards_[index];
        std::lock_guard lock(sh.mutex);
        return put_side(sh, index, std::move(k), tombstone, now, now + ttl);
    }

    std::optional<record> find_tombstone(scope s)
    {
        auto now = options_.now();
        auto k = side_key(s, 't');
        auto& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now)
            return std::nullopt;
        return it->second.rec;
    }

    count_result count_execution(scope s, duration ttl)
    {
        auto now = options_.now();
        auto k = side_key(s, 'n');
        std::size_t index = shard_of(k);
        auto& sh = shards_[index];
        std::lock_guard lock(sh.mutex);
        record count;
        auto it = sh.entries.find(k);
        if (it != sh.entries.end() && it->second.expires > now)
            count.created_unix_ms = it->second.rec.created_unix_ms;
        ++count.created_unix_ms;
        count_result out;
        out.ec = put_side(sh, index, std::move(k), count, now, now + ttl);
        out.count = static_cast<std::uint64_t>(count.created_unix_ms);
        return out;
    }

    // Tenant quotas, in process (tenant_quotas.hpp).
    admit_result admit(std::string_view tenant, std::string_view owner_token, const tenant_limits& limits,
                       duration lock_ttl)
    {
        return quotas_.admit(tenant, owner_token, limits, lock_ttl, options_.now());
    }

    void leave(std::string_view tenant, std::string_view owner_token) { quotas_.leave(tenant, owner_token); }

private:
    // Stores `rec` under the side key `k` of shard `sh` (locked), replacing what it held.
    boost::system::error_code put_side(detail::record_shards::shard& sh, std::size_t index, std::string k,
                                       const record& rec, clock::time_point now, clock::time_point expires)
    {
        std::size_t charge = charged_bytes(k, rec);
        if (auto it = sh.entries.find(k); it != sh.entries.end()) {
            it->second.rec = rec;
            shards_.recharge(it->second, charge);
            shards_.set_expiry(sh, it->second, expires);
            return {};
        }
        if (!shards_.admit(charge) && !shards_.make_room(index, now, charge, options_.reclaim_budget)) {
            detail::record_shards::bump(sh.refused_full, 1);
            return make_error_code(error::store_full);
        }
        shards_.insert(sh, std::move(k), rec, expires, charge);
        return {};
    }

    boost::system::error_code complete_locked(const std::string& k, const record& completed, duration ttl)
    {
        auto now = options_.now();
        auto& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now ||
            it->second.rec.owner_token != completed.owner_token)
            return make_error_code(error::not_owner);
        // Always recorded, even past max_bytes: refusing would lose an answer the upstream gave;
        // the bound then holds back new reservations until records expire.
        std::size_t charge = charged_bytes(it->first, completed);
        it->second.rec = completed;
        shards_.recharge(it->second, charge);
        shards_.set_expiry(sh, it->second, now + ttl);
        return {};
    }

    boost::system::error_code release_locked(const std::string& k, std::string_view owner_token)
    {
        auto now = options_.now();
        auto& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now || it->second.rec.owner_token != owner_token)
            return make_error_code(error::not_owner);
        shards_.erase(sh, it);
        return {};
    }

public:
    lookup_result lookup(scope s)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        auto& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        lookup_result out;
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now)
            return out;
        out.existing = it->second.rec;
        out.expires_in_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(it->second.expires - now).count();
        return out;
    }

    bool remove(scope s)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        auto& sh = shards_[shard_of(k)];
        bool live = false;
        {
            std::lock_guard lock(sh.mutex);
            auto it = sh.entries.find(k);
            if (it == sh.entries.end())
                return false;
            live = it->second.expires > now;
            shards_.erase(sh, it);
        }
        // What is kept beside the record goes with it: an operator who removes a key frees it.
        for (char which : {'t', 'n'}) {
            auto side = side_key(s, which);
            auto& side_shard = shards_[shard_of(side)];
            std::lock_guard lock(side_shard.mutex);
            if (auto it = side_shard.entries.find(side); it != side_shard.entries.end())
                shards_.erase(side_shard, it);
        }
        removed(record_id(s)); // the gateway's local tier forgets it too
        return live;
    }

    memory_stats stats() const { return shards_.stats(); }

private:
    duration until_oldest_expires() const
    {
        auto earliest = shards_.earliest_expiry();
        if (earliest == clock::time_point::max())
            return duration(0);
        return std::max(duration(0), std::chrono::ceil<duration>(earliest - options_.now()));
    }

    memory_options options_;
    std::atomic<bool> full_{false};
    detail::settle_notifier notifier_{false};
    detail::tenant_quotas quotas_;
    detail::record_shards shards_{options_}; // after options_, which it reads
};

} // namespace idemgate::store::detail
