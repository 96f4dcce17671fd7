// SPDX-License-Identifier: Apache-2.0
// The in-process store (store.type: memory): reserve, complete, release, lookup and remove on
// record_shards (record_shards.hpp), settlement notifications for waiting duplicates and tenant
// quotas in process; one backend shared by every I/O thread, a session per thread.
#include "memory/memory_backend.hpp"
#include "memory/probe_book.hpp"
#include "memory/record_shards.hpp"
#include "memory/tenant_quotas.hpp"
#include "settle_notifier.hpp"

#include <algorithm>
#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>
#include <mutex>

namespace idemgate::store {

std::string scope_map_key(scope s)
{
    std::string k = std::to_string(s.tenant.size());
    k.reserve(k.size() + 1 + s.tenant.size() + s.key.size());
    k.push_back(':');
    k.append(s.tenant);
    k.append(s.key);
    return k;
}

std::size_t charged_bytes(std::string_view map_key, const record& r) noexcept
{
    std::size_t n = 160 + map_key.size() + r.fingerprint.size() + r.owner_token.size() +
                    r.response.reason.size() + r.response.body.size();
    for (const auto& h : r.response.headers)
        n += 64 + h.name.size() + h.value.size();
    return n;
}

namespace {

using clock = std::chrono::steady_clock;

std::size_t shard_of(std::string_view map_key) noexcept
{
    return std::hash<std::string_view>{}(map_key) % memory_store_shards;
}

// Expired entries a reservation reclaims from its own shard even when the store is not full
// (out of reclaim_budget), so expired records do not pile up until the bound is reached. Two
// per reservation keep up with a shard that takes one new key per reservation.
constexpr std::size_t reclaim_per_reserve = 2;

class memory_backend;

class memory_session final : public session {
public:
    explicit memory_session(std::shared_ptr<memory_backend> b) : backend_(std::move(b)) {}

    boost::asio::awaitable<reserve_result> reserve(scope s, const record& in_flight,
                                                   duration lock_ttl) override;
    boost::asio::awaitable<boost::system::error_code> complete(scope s, const record& completed,
                                                               duration record_ttl) override;
    boost::asio::awaitable<boost::system::error_code> release(scope s, std::string_view owner_token) override;
    boost::asio::awaitable<lookup_result> lookup(scope s) override;
    boost::asio::awaitable<boost::system::error_code> remove(scope s, bool& removed) override;
    boost::asio::awaitable<boost::system::error_code> bury(scope s, const record& tombstone,
                                                           duration ttl) override;
    boost::asio::awaitable<boost::system::error_code> extend(scope s, std::string_view owner_token,
                                                             duration lock_ttl) override;
    boost::asio::awaitable<tombstone_result> find_tombstone(scope s) override;
    boost::asio::awaitable<count_result> count_execution(scope s, duration ttl) override;
    boost::asio::awaitable<admit_result> admit(std::string_view tenant, std::string_view owner_token,
                                               const tenant_limits& limits, duration lock_ttl) override;
    boost::asio::awaitable<boost::system::error_code> leave(std::string_view tenant,
                                                            std::string_view owner_token) override;
    boost::asio::awaitable<wait_result> wait_settled(scope s, duration timeout) override;
    boost::asio::awaitable<boost::system::error_code> schedule_probe(std::string_view entry,
                                                                     std::int64_t due_unix_ms) override;
    boost::asio::awaitable<probe_claim> claim_probes(std::int64_t now_unix_ms, duration lease,
                                                     std::size_t limit) override;
    boost::asio::awaitable<boost::system::error_code> unschedule_probe(std::string_view entry) override;

private:
    std::shared_ptr<memory_backend> backend_;
};

class memory_backend final : public backend, public std::enable_shared_from_this<memory_backend> {
public:
    explicit memory_backend(memory_options o) : options_(std::move(o))
    {
        if (!options_.now)
            options_.now = [] { return clock::now(); };
        // With no budget nothing expired would ever leave a full store.
        options_.reclaim_budget = std::max<std::size_t>(options_.reclaim_budget, 1);
    }

    std::unique_ptr<session> open_session(boost::asio::any_io_executor) override
    {
        return std::make_unique<memory_session>(shared_from_this());
    }
    bool ready() const override { return true; }
    std::string_view kind() const noexcept override { return "memory"; }
    detail::probe_book probes;
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
            return {make_error_code(error::store_full), false, std::nullopt};
        }
        shards_.insert(sh, std::move(k), in_flight, now + ttl, charge);
        return {{}, true, std::nullopt};
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
    memory_options options_;
    detail::settle_notifier notifier_{false};
    detail::tenant_quotas quotas_;
    detail::record_shards shards_{options_}; // after options_, which it reads
};

boost::asio::awaitable<reserve_result> memory_session::reserve(scope s, const record& in_flight,
                                                               duration lock_ttl)
{
    co_return backend_->reserve(s, in_flight, lock_ttl);
}

boost::asio::awaitable<boost::system::error_code> memory_session::complete(scope s, const record& completed,
                                                                           duration record_ttl)
{
    co_return backend_->complete(s, completed, record_ttl);
}

boost::asio::awaitable<boost::system::error_code> memory_session::release(scope s,
                                                                          std::string_view owner_token)
{
    co_return backend_->release(s, owner_token);
}

boost::asio::awaitable<lookup_result> memory_session::lookup(scope s)
{
    co_return backend_->lookup(s);
}

boost::asio::awaitable<boost::system::error_code> memory_session::remove(scope s, bool& removed)
{
    removed = backend_->remove(s);
    co_return boost::system::error_code{};
}

boost::asio::awaitable<boost::system::error_code> memory_session::schedule_probe(std::string_view entry,
                                                                                 std::int64_t due_unix_ms)
{
    backend_->probes.schedule(entry, due_unix_ms);
    co_return boost::system::error_code{};
}

boost::asio::awaitable<probe_claim> memory_session::claim_probes(std::int64_t now_unix_ms, duration lease,
                                                                 std::size_t limit)
{
    probe_claim out;
    out.entries = backend_->probes.claim(now_unix_ms, lease.count(), limit);
    co_return out;
}

boost::asio::awaitable<boost::system::error_code> memory_session::unschedule_probe(std::string_view entry)
{
    backend_->probes.unschedule(entry);
    co_return boost::system::error_code{};
}

boost::asio::awaitable<boost::system::error_code> memory_session::bury(scope s, const record& tombstone,
                                                                       duration ttl)
{
    co_return backend_->bury(s, tombstone, ttl);
}

boost::asio::awaitable<boost::system::error_code>
memory_session::extend(scope s, std::string_view owner_token, duration lock_ttl)
{
    co_return backend_->extend(s, owner_token, lock_ttl);
}

boost::asio::awaitable<tombstone_result> memory_session::find_tombstone(scope s)
{
    tombstone_result out;
    out.tombstone = backend_->find_tombstone(s);
    co_return out;
}

boost::asio::awaitable<count_result> memory_session::count_execution(scope s, duration ttl)
{
    co_return backend_->count_execution(s, ttl);
}

boost::asio::awaitable<admit_result> memory_session::admit(std::string_view tenant,
                                                           std::string_view owner_token,
                                                           const tenant_limits& limits, duration lock_ttl)
{
    co_return backend_->admit(tenant, owner_token, limits, lock_ttl);
}

boost::asio::awaitable<boost::system::error_code> memory_session::leave(std::string_view tenant,
                                                                        std::string_view owner_token)
{
    backend_->leave(tenant, owner_token);
    co_return boost::system::error_code{};
}

boost::asio::awaitable<wait_result> memory_session::wait_settled(scope s, duration timeout)
{
    auto channel = scope_map_key(s);
    co_return co_await detail::wait_until_settled(backend_->notifier(), *this, s, channel, timeout);
}

} // namespace

std::shared_ptr<backend> make_memory_backend(memory_options options)
{
    return std::make_shared<memory_backend>(std::move(options));
}

std::shared_ptr<backend> detail::make_memory_store(const config::memory_config& cfg, const backend_settings&)
{
    memory_options options;
    options.max_entries = cfg.max_entries;
    options.max_bytes = cfg.max_bytes;
    return make_memory_backend(std::move(options));
}

std::size_t memory_store_shard(scope s)
{
    return shard_of(scope_map_key(s));
}

std::optional<memory_stats> memory_store_stats(const backend& b)
{
    if (auto* m = dynamic_cast<const memory_backend*>(&b))
        return m->stats();
    return std::nullopt;
}

} // namespace idemgate::store
