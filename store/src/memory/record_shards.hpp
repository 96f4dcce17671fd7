// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory store's records: memory_store_shards maps, each under its own mutex with an index
// of its entries by expiry, bounded together by max_entries and max_bytes (global counters, so
// the bounds are exact whatever each shard holds). Expired entries are reclaimed a few at a
// time, earliest first, by the reservations that need the room (memory_store.cpp).
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <idemgate/store/memory_store.hpp>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace idemgate::store::detail {

class record_shards {
public:
    using clock = std::chrono::steady_clock;

    // `options` (max_entries, max_bytes, the while_reclaiming hook) must outlive this.
    explicit record_shards(const memory_options& options) : options_(options) {}

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

    // An entry's record was replaced: its charge against max_bytes becomes `charge`.
    void recharge(entry& e, std::size_t charge) noexcept
    {
        if (charge >= e.charge)
            bytes_.fetch_add(charge - e.charge, std::memory_order_relaxed);
        else
            bytes_.fetch_sub(e.charge - charge, std::memory_order_relaxed);
        e.charge = charge;
    }

    shard& operator[](std::size_t index) noexcept { return shards_[index]; }

    // The earliest expiry of any entry (time_point::max() when empty), read without the locks.
    clock::time_point earliest_expiry() const noexcept
    {
        auto earliest = std::numeric_limits<clock::rep>::max();
        for (const auto& sh : shards_)
            earliest = std::min(earliest, sh.next_expiry.load(std::memory_order_relaxed));
        return clock::time_point(clock::duration(earliest));
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
    const memory_options& options_;
    std::array<shard, memory_store_shards> shards_;
    alignas(64) std::atomic<std::size_t> entries_{0};
    alignas(64) std::atomic<std::size_t> bytes_{0};
};

} // namespace idemgate::store::detail
