#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>
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

class memory_backend;

class memory_session final : public session {
public:
    explicit memory_session(std::shared_ptr<memory_backend> b) : backend_(std::move(b)) {}

    boost::asio::awaitable<reserve_result> reserve(scope s, const record& in_flight,
                                                   duration lock_ttl) override;
    boost::asio::awaitable<boost::system::error_code> complete(scope s, const record& completed,
                                                               duration record_ttl) override;
    boost::asio::awaitable<boost::system::error_code> release(scope s, std::string_view owner_token) override;

private:
    std::shared_ptr<memory_backend> backend_;
};

class memory_backend final : public backend, public std::enable_shared_from_this<memory_backend> {
public:
    explicit memory_backend(memory_options o) : options_(std::move(o))
    {
        if (!options_.now)
            options_.now = [] { return clock::now(); };
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
        std::lock_guard lock(mutex_);
        auto it = entries_.find(k);
        if (it != entries_.end()) {
            if (it->second.expires > now)
                return {{}, false, it->second.rec};
            erase(it);
        }
        std::size_t charge = charged_bytes(k, in_flight);
        if (full(charge)) {
            sweep_expired(now);
            if (full(charge))
                return {make_error_code(error::store_full), false, std::nullopt};
        }
        bytes_ += charge;
        entries_.emplace(std::move(k), entry{in_flight, now + ttl, charge});
        return {{}, true, std::nullopt};
    }

    boost::system::error_code complete(scope s, const record& completed, duration ttl)
    {
        auto now = options_.now();
        std::lock_guard lock(mutex_);
        auto it = entries_.find(scope_map_key(s));
        if (it == entries_.end() || it->second.expires <= now ||
            it->second.rec.owner_token != completed.owner_token)
            return make_error_code(error::not_owner);
        // Always recorded, even past max_bytes: refusing would lose an answer the upstream gave;
        // the bound then holds back new reservations until records expire.
        std::size_t charge = charged_bytes(it->first, completed);
        bytes_ = bytes_ - it->second.charge + charge;
        it->second.charge = charge;
        it->second.rec = completed;
        it->second.expires = now + ttl;
        return {};
    }

    boost::system::error_code release(scope s, std::string_view owner_token)
    {
        auto now = options_.now();
        std::lock_guard lock(mutex_);
        auto it = entries_.find(scope_map_key(s));
        if (it == entries_.end() || it->second.expires <= now || it->second.rec.owner_token != owner_token)
            return make_error_code(error::not_owner);
        erase(it);
        return {};
    }

private:
    struct entry {
        record rec;
        clock::time_point expires;
        std::size_t charge = 0; // bytes counted against max_bytes
    };
    using map_type = std::unordered_map<std::string, entry>;

    bool full(std::size_t incoming) const
    {
        return entries_.size() >= options_.max_entries || bytes_ + incoming > options_.max_bytes;
    }

    void erase(map_type::iterator it)
    {
        bytes_ -= it->second.charge;
        entries_.erase(it);
    }

    void sweep_expired(clock::time_point now)
    {
        for (auto it = entries_.begin(); it != entries_.end();) {
            if (it->second.expires <= now) {
                bytes_ -= it->second.charge;
                it = entries_.erase(it);
            } else {
                ++it;
            }
        }
    }

    memory_options options_;
    std::mutex mutex_;
    map_type entries_;
    std::size_t bytes_ = 0;
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

} // namespace

std::shared_ptr<backend> make_memory_backend(memory_options options)
{
    return std::make_shared<memory_backend>(std::move(options));
}

} // namespace idemgate::store
