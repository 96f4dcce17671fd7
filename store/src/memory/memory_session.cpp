// SPDX-License-Identifier: Apache-2.0
// One I/O thread's session over the memory store: every call runs at once on the shared engine
// (memory_engine.hpp) and completes without suspending, except waiting for a settlement.
#include "in_process_session.hpp"
#include "memory/memory_engine.hpp"

namespace idemgate::store::detail {

// Offers every capability.
class memory_session final : public in_process_session<memory_backend>,
                             public settle_wait,
                             public tombstone_keeper,
                             public attempt_counter,
                             public probe_schedule,
                             public quota_keeper {
public:
    explicit memory_session(std::shared_ptr<memory_backend> b) : in_process_session(std::move(b)) {}

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

    settle_wait* waits() noexcept override { return this; }
    tombstone_keeper* tombstones() noexcept override { return this; }
    attempt_counter* attempts() noexcept override { return this; }
    probe_schedule* probes() noexcept override { return this; }
    quota_keeper* quotas() noexcept override { return this; }
};

std::unique_ptr<session> memory_backend::open_session(boost::asio::any_io_executor)
{
    return std::make_unique<memory_session>(shared_from_this());
}

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
    co_return co_await wait_until_settled(backend_->notifier(), *this, s, channel, timeout);
}

} // namespace idemgate::store::detail
