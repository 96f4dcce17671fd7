#include "settle_notifier.hpp"
#include "tenant_quotas.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

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
    boost::asio::awaitable<admit_result> admit(std::string_view tenant, std::string_view owner_token,
                                               const tenant_limits& limits, duration lock_ttl) override;
    boost::asio::awaitable<boost::system::error_code> leave(std::string_view tenant,
                                                            std::string_view owner_token) override;
    boost::asio::awaitable<wait_result> wait_settled(scope s, duration timeout) override;

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

    reserve_result reserve(scope s, const record& in_flight, duration ttl)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        std::size_t index = shard_of(k);
        shard& sh = shards_[index];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it != sh.entries.end()) {
            if (it->second.expires > now)
                return {{}, false, it->second.rec};
            erase(sh, it);
            bump(sh.reclaimed, 1);
        }
        std::size_t budget = options_.reclaim_budget;
        budget -= reclaim(sh, index, now, std::min(reclaim_per_reserve, budget));
        std::size_t charge = charged_bytes(k, in_flight);
        if (!admit(charge) && !make_room(index, now, charge, budget)) {
            bump(sh.refused_full, 1);
            return {make_error_code(error::store_full), false, std::nullopt};
        }
        insert(sh, std::move(k), in_flight, now + ttl, charge);
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

    // Tenant quotas, in process (tenant_quotas.hpp).
    admit_result admit(std::string_view tenant, std::string_view owner_token, const tenant_limits& limits,
                       duration lock_ttl)
    {
        return quotas_.admit(tenant, owner_token, limits, lock_ttl, options_.now());
    }

    void leave(std::string_view tenant, std::string_view owner_token) { quotas_.leave(tenant, owner_token); }

private:
    boost::system::error_code complete_locked(const std::string& k, const record& completed, duration ttl)
    {
        auto now = options_.now();
        shard& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now ||
            it->second.rec.owner_token != completed.owner_token)
            return make_error_code(error::not_owner);
        // Always recorded, even past max_bytes: refusing would lose an answer the upstream gave;
        // the bound then holds back new reservations until records expire.
        std::size_t charge = charged_bytes(it->first, completed);
        it->second.rec = completed;
        if (charge >= it->second.charge)
            bytes_.fetch_add(charge - it->second.charge, std::memory_order_relaxed);
        else
            bytes_.fetch_sub(it->second.charge - charge, std::memory_order_relaxed);
        it->second.charge = charge;
        set_expiry(sh, it->second, now + ttl);
        return {};
    }

    boost::system::error_code release_locked(const std::string& k, std::string_view owner_token)
    {
        auto now = options_.now();
        shard& sh = shards_[shard_of(k)];
        std::lock_guard lock(sh.mutex);
        auto it = sh.entries.find(k);
        if (it == sh.entries.end() || it->second.expires <= now || it->second.rec.owner_token != owner_token)
            return make_error_code(error::not_owner);
        erase(sh, it);
        return {};
    }

public:
    lookup_result lookup(scope s)
    {
        auto now = options_.now();
        auto k = scope_map_key(s);
        shard& sh = shards_[shard_of(k)];
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
        shard& sh = shards_[shard_of(k)];
        bool live = false;
        {
            std::lock_guard lock(sh.mutex);
            auto it = sh.entries.find(k);
            if (it == sh.entries.end())
                return false;
            live = it->second.expires > now;
            erase(sh, it);
        }
        removed(record_id(s)); // the gateway's local tier forgets it too
        return live;
    }

    memory_stats stats() const
    {
        memory_stats st;
        st.entries = entries_.load(std::memory_order_relaxed);
        st.bytes = bytes_.load(std::memory_order_relaxed);
        for (const auto& sh : shards_) {
            st.examined += sh.examined.load(std::memory_order_relaxed);
            st.reclaimed += sh.reclaimed.load(std::memory_order_relaxed);
            st.refused_full += sh.refused_full.load(std::memory_order_relaxed);
        }
        return st;
    }

private:
    struct entry;
    // Map nodes never move (rehashing relinks them), so the expiry index can point at them.
    using node = std::pair<const std::string, entry>;
    // Entries by expiry, earliest first: expiry costs what expired, not the size of the store.
    using expiry_index = std::multimap<clock::time_point, node*>;

    struct entry {
        record rec;
        clock::time_point expires;
        std::size_t charge = 0;           // bytes counted against max_bytes
        expiry_index::iterator expiry_at; // this entry's node in its shard's expiry index
    };

    struct alignas(64) shard {
        std::mutex mutex;
        std::unordered_map<std::string, entry> entries;
        expiry_index by_expiry;
        // Earliest expiry in by_expiry (max when empty). Written under the mutex, read without
        // it, so a full store refuses a key without touching shards where nothing has expired.
        std::atomic<clock::rep> next_expiry{std::numeric_limits<clock::rep>::max()};
        // Only written under the mutex; atomic so stats() can read them at any time.
        std::atomic<std::uint64_t> examined{0};
        std::atomic<std::uint64_t> reclaimed{0};
        std::atomic<std::uint64_t> refused_full{0};
    };
    using entry_iterator = std::unordered_map<std::string, entry>::iterator;

    static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept
    {
        counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    static void update_next_expiry(shard& sh) noexcept
    {
        sh.next_expiry.store(sh.by_expiry.empty() ? std::numeric_limits<clock::rep>::max()
                                                  : sh.by_expiry.begin()->first.time_since_epoch().count(),
                             std::memory_order_relaxed);
    }

    static bool has_expired(const shard& sh, clock::time_point now) noexcept
    {
        return sh.next_expiry.load(std::memory_order_relaxed) <= now.time_since_epoch().count();
    }

    // Counts one more entry of `charge` bytes against the bounds, or changes nothing and
    // returns false when it does not fit. The counters are global, so the bounds are exact
    // whatever the shards hold.
    bool admit(std::size_t charge) noexcept
    {
        auto n = entries_.load(std::memory_order_relaxed);
        do {
            if (n >= options_.max_entries)
                return false;
        } while (!entries_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
        auto b = bytes_.load(std::memory_order_relaxed);
        do {
            // bytes_ may already exceed max_bytes (complete always records).
            if (charge > options_.max_bytes || b > options_.max_bytes - charge) {
                entries_.fetch_sub(1, std::memory_order_relaxed);
                return false;
            }
        } while (!bytes_.compare_exchange_weak(b, b + charge, std::memory_order_relaxed));
        return true;
    }

    void give_back(std::size_t charge) noexcept
    {
        entries_.fetch_sub(1, std::memory_order_relaxed);
        bytes_.fetch_sub(charge, std::memory_order_relaxed);
    }

    // Stores an admitted entry in `sh` (locked).
    void insert(shard& sh, std::string k, const record& rec, clock::time_point expires, std::size_t charge)
    {
        auto at = sh.by_expiry.end();
        try {
            at = sh.by_expiry.emplace_hint(sh.by_expiry.end(), expires, nullptr); // usually the latest
            auto it = sh.entries.try_emplace(std::move(k), entry{rec, expires, charge, at}).first;
            at->second = &*it;
        } catch (...) {
            if (at != sh.by_expiry.end())
                sh.by_expiry.erase(at);
            give_back(charge);
            throw;
        }
        update_next_expiry(sh);
    }

    void set_expiry(shard& sh, entry& e, clock::time_point expires) noexcept
    {
        e.expires = expires;
        auto handle = sh.by_expiry.extract(e.expiry_at); // re-keyed in place: no allocation
        handle.key() = expires;
        e.expiry_at = sh.by_expiry.insert(sh.by_expiry.end(), std::move(handle));
        update_next_expiry(sh);
    }

    void erase(shard& sh, entry_iterator it) noexcept
    {
        give_back(it->second.charge);
        sh.by_expiry.erase(it->second.expiry_at);
        sh.entries.erase(it);
        update_next_expiry(sh);
    }

    // Removes up to `budget` expired entries of `sh` (locked), earliest first; returns how many.
    std::size_t reclaim(shard& sh, std::size_t index, clock::time_point now, std::size_t budget)
    {
        if (budget == 0 || !has_expired(sh, now))
            return 0;
        if (options_.while_reclaiming)
            options_.while_reclaiming(index);
        std::size_t removed = 0;
        std::size_t looked = 0;
        while (removed < budget && !sh.by_expiry.empty()) {
            ++looked;
            const auto& [expires, n] = *sh.by_expiry.begin();
            if (expires > now)
                break;
            erase(sh, sh.entries.find(n->first));
            ++removed;
        }
        bump(sh.examined, looked);
        bump(sh.reclaimed, removed);
        return removed;
    }

    // The store is full for a new entry of `charge` bytes in shard `own` (locked): reclaims
    // expired entries, its own shard's first, then other shards', at most `budget` in all,
    // until the entry is admitted. Never waits for another shard's lock while holding its own
    // (that could deadlock, and would make this thread wait behind another's work): a busy
    // shard is skipped.
    bool make_room(std::size_t own, clock::time_point now, std::size_t charge, std::size_t budget)
    {
        budget -= reclaim(shards_[own], own, now, budget);
        if (admit(charge))
            return true;
        for (std::size_t step = 1; step < memory_store_shards && budget > 0; ++step) {
            std::size_t index = (own + step) % memory_store_shards;
            shard& other = shards_[index];
            if (!has_expired(other, now))
                continue;
            std::unique_lock lock(other.mutex, std::try_to_lock);
            if (!lock.owns_lock())
                continue;
            budget -= reclaim(other, index, now, budget);
            lock.unlock();
            if (admit(charge))
                return true;
        }
        return false;
    }

    memory_options options_;
    detail::settle_notifier notifier_{false};
    detail::tenant_quotas quotas_;
    std::array<shard, memory_store_shards> shards_;
    alignas(64) std::atomic<std::size_t> entries_{0};
    alignas(64) std::atomic<std::size_t> bytes_{0};
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
