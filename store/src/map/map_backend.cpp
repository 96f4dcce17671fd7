// SPDX-License-Identifier: Apache-2.0
// The map store: every record in one std::map under one mutex, expired when read. Simple on
// purpose: it is what the gateway suites run over to show that they hold for any backend that
// keeps the interface's promises, not only for the two the gateway ships.
#include "map/map_backend.hpp"

#include "held_book.hpp"
#include "in_process_session.hpp"
#include "settle_notifier.hpp"
#include "shadow_book.hpp"

#include <chrono>
#include <idemgate/common/error.hpp>
#include <map>
#include <mutex>
#include <string>

namespace idemgate::store::detail {

namespace {

using clock = std::chrono::steady_clock;

struct entry {
    record rec;
    clock::time_point expires;
};

// A scope's map key: the tenant's length, ':', the tenant, the key. Beside it, its tombstone and
// execution count under the same + '\0' + 't' or 'n' (keys are visible ASCII: no clash).
std::string key_of(scope s)
{
    std::string k = std::to_string(s.tenant.size());
    k.push_back(':');
    k.append(s.tenant);
    k.append(s.key);
    return k;
}

std::string side_of(scope s, char which)
{
    auto k = key_of(s);
    k.push_back('\0');
    k.push_back(which);
    return k;
}

class map_backend final : public backend, public std::enable_shared_from_this<map_backend> {
public:
    std::unique_ptr<session> open_session(boost::asio::any_io_executor ex) override;
    bool ready() const override { return true; }
    std::string_view kind() const noexcept override { return "map"; }
    shadow_book shadows; // the shadow report, in process (thread-safe on its own)

    reserve_result reserve(scope s, const record& in_flight, duration ttl)
    {
        std::lock_guard lock(mutex_);
        auto now = clock::now();
        auto [it, added] = records_.try_emplace(key_of(s), entry{in_flight, now + ttl});
        if (added)
            return {{}, true, std::nullopt};
        if (it->second.expires > now)
            return {{}, false, it->second.rec};
        it->second = entry{in_flight, now + ttl};
        return {{}, true, std::nullopt};
    }

    boost::system::error_code complete(scope s, const record& completed, duration ttl)
    {
        auto k = key_of(s);
        {
            std::lock_guard lock(mutex_);
            auto* e = live(k, completed.owner_token);
            if (!e)
                return make_error_code(error::not_owner);
            *e = entry{completed, clock::now() + ttl};
        }
        notifier_.notify(k);
        return {};
    }

    boost::system::error_code release(scope s, std::string_view owner_token)
    {
        auto k = key_of(s);
        {
            std::lock_guard lock(mutex_);
            if (!live(k, owner_token))
                return make_error_code(error::not_owner);
            records_.erase(k);
        }
        notifier_.notify(k);
        return {};
    }

    boost::system::error_code extend(scope s, std::string_view owner_token, duration lock_ttl)
    {
        std::lock_guard lock(mutex_);
        auto* e = live(key_of(s), owner_token);
        if (!e || e->rec.state != record_state::in_flight)
            return make_error_code(error::not_owner);
        e->expires = clock::now() + lock_ttl;
        return {};
    }

    lookup_result lookup(scope s)
    {
        std::lock_guard lock(mutex_);
        lookup_result out;
        auto now = clock::now();
        auto it = records_.find(key_of(s));
        if (it == records_.end() || it->second.expires <= now)
            return out;
        out.existing = it->second.rec;
        out.expires_in_ms = std::chrono::duration_cast<duration>(it->second.expires - now).count();
        return out;
    }

    bool remove(scope s)
    {
        bool live_record = false;
        {
            std::lock_guard lock(mutex_);
            auto it = records_.find(key_of(s));
            if (it == records_.end())
                return false;
            live_record = it->second.expires > clock::now();
            records_.erase(it);
            // What is kept beside the record goes with it: an operator who removes a key frees it.
            records_.erase(side_of(s, 't'));
            records_.erase(side_of(s, 'n'));
        }
        removed(record_id(s));
        return live_record;
    }

    void bury(scope s, const record& tombstone, duration ttl)
    {
        std::lock_guard lock(mutex_);
        records_[side_of(s, 't')] = entry{tombstone, clock::now() + ttl};
    }

    std::optional<record> find_tombstone(scope s)
    {
        std::lock_guard lock(mutex_);
        auto it = records_.find(side_of(s, 't'));
        if (it == records_.end() || it->second.expires <= clock::now())
            return std::nullopt;
        return it->second.rec;
    }

    // The count is kept as a record whose created_unix_ms is the count.
    std::uint64_t count_execution(scope s, duration ttl)
    {
        std::lock_guard lock(mutex_);
        auto now = clock::now();
        auto& e = records_[side_of(s, 'n')];
        if (e.expires <= now)
            e.rec.created_unix_ms = 0;
        ++e.rec.created_unix_ms;
        e.expires = now + ttl;
        return static_cast<std::uint64_t>(e.rec.created_unix_ms);
    }

    void schedule_probe(std::string_view entry_text, std::int64_t due)
    {
        std::lock_guard lock(mutex_);
        probes_[std::string(entry_text)] = due;
    }

    std::vector<std::string> claim_probes(std::int64_t now, std::int64_t lease, std::size_t limit)
    {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        for (auto& [text, due] : probes_) {
            if (out.size() == limit)
                break;
            if (due <= now) {
                out.push_back(text);
                due = now + lease;
            }
        }
        return out;
    }

    void unschedule_probe(std::string_view entry_text)
    {
        std::lock_guard lock(mutex_);
        probes_.erase(std::string(entry_text));
    }

    boost::system::error_code resolve_held(scope s, std::string_view owner_token, const record* resolved,
                                           duration ttl)
    {
        auto k = key_of(s);
        {
            std::lock_guard lock(mutex_);
            auto* e = live(k, owner_token);
            if (!e || e->rec.state != record_state::outcome_unknown)
                return make_error_code(error::not_owner);
            if (resolved)
                *e = entry{*resolved, clock::now() + ttl};
            else
                records_.erase(k);
        }
        notifier_.notify(k);
        return {};
    }

    settle_notifier& notifier() noexcept { return notifier_; }
    held_book held; // the index of held keys, beside the records

private:
    // The live entry under `k` that `owner_token` owns, else nullptr. Under mutex_.
    entry* live(const std::string& k, std::string_view owner_token)
    {
        auto it = records_.find(k);
        if (it == records_.end() || it->second.expires <= clock::now() ||
            it->second.rec.owner_token != owner_token)
            return nullptr;
        return &it->second;
    }

    std::mutex mutex_;
    std::map<std::string, entry> records_;
    std::map<std::string, std::int64_t> probes_; // a probe's entry and when it is due
    settle_notifier notifier_{false};            // in process: every channel is active at once
};

// Every call completes at once on the shared map, except waiting for a settlement.
class map_session final : public in_process_session<map_backend>,
                          public settle_wait,
                          public tombstone_keeper,
                          public attempt_counter,
                          public probe_schedule {
public:
    explicit map_session(std::shared_ptr<map_backend> b) : in_process_session(std::move(b)) {}

    boost::asio::awaitable<reserve_result> reserve(scope s, const record& in_flight,
                                                   duration lock_ttl) override
    {
        co_return backend_->reserve(s, in_flight, lock_ttl);
    }
    boost::asio::awaitable<boost::system::error_code> complete(scope s, const record& completed,
                                                               duration record_ttl) override
    {
        co_return backend_->complete(s, completed, record_ttl);
    }
    boost::asio::awaitable<boost::system::error_code> release(scope s, std::string_view owner_token) override
    {
        co_return backend_->release(s, owner_token);
    }
    boost::asio::awaitable<boost::system::error_code> extend(scope s, std::string_view owner_token,
                                                             duration lock_ttl) override
    {
        co_return backend_->extend(s, owner_token, lock_ttl);
    }
    boost::asio::awaitable<lookup_result> lookup(scope s) override { co_return backend_->lookup(s); }
    boost::asio::awaitable<boost::system::error_code> remove(scope s, bool& removed) override
    {
        removed = backend_->remove(s);
        co_return boost::system::error_code{};
    }

    boost::asio::awaitable<wait_result> wait_settled(scope s, duration timeout) override
    {
        auto channel = key_of(s);
        co_return co_await wait_until_settled(backend_->notifier(), *this, s, channel, timeout);
    }
    boost::asio::awaitable<boost::system::error_code> bury(scope s, const record& tombstone,
                                                           duration ttl) override
    {
        backend_->bury(s, tombstone, ttl);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<tombstone_result> find_tombstone(scope s) override
    {
        tombstone_result out;
        out.tombstone = backend_->find_tombstone(s);
        co_return out;
    }
    boost::asio::awaitable<count_result> count_execution(scope s, duration ttl) override
    {
        count_result out;
        out.count = backend_->count_execution(s, ttl);
        co_return out;
    }
    boost::asio::awaitable<boost::system::error_code> schedule_probe(std::string_view entry_text,
                                                                     std::int64_t due_unix_ms) override
    {
        backend_->schedule_probe(entry_text, due_unix_ms);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<probe_claim> claim_probes(std::int64_t now_unix_ms, duration lease,
                                                     std::size_t limit) override
    {
        probe_claim out;
        out.entries = backend_->claim_probes(now_unix_ms, lease.count(), limit);
        co_return out;
    }
    boost::asio::awaitable<boost::system::error_code> unschedule_probe(std::string_view entry_text) override
    {
        backend_->unschedule_probe(entry_text);
        co_return boost::system::error_code{};
    }

    settle_wait* waits() noexcept override { return this; }
    tombstone_keeper* tombstones() noexcept override { return this; }
    attempt_counter* attempts() noexcept override { return this; }
    probe_schedule* probes() noexcept override { return this; }
};

std::unique_ptr<session> map_backend::open_session(boost::asio::any_io_executor)
{
    return std::make_unique<map_session>(shared_from_this());
}

} // namespace

std::shared_ptr<backend> make_map_store(const backend_settings&)
{
    return std::make_shared<map_backend>();
}

} // namespace idemgate::store::detail
