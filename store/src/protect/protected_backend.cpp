// SPDX-License-Identifier: Apache-2.0
// The protection decorator (protected_backend.hpp): hashes scopes and tenants (store.hash_keys)
// and seals and opens records' response parts (store.encryption) around any backend's sessions.
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/held_index.hpp>
#include <idemgate/store/protected_backend.hpp>
#include <idemgate/store/record_codec.hpp>

namespace idemgate::store {

namespace asio = boost::asio;
using boost::system::error_code;

std::string scope_digest(std::string_view secret, scope s)
{
    std::string message;
    message.reserve(s.tenant.size() + 1 + s.key.size());
    message.append(s.tenant);
    message.push_back('\0');
    message.append(s.key);
    return hmac_sha256_hex(secret, message);
}

std::string tenant_tag(std::string_view secret, std::string_view tenant)
{
    return hmac_sha256_hex(secret, tenant);
}

namespace {

// What every session of one decorated backend shares.
struct protection_state {
    std::shared_ptr<backend> inner;
    record_protection protection;

    // The digest of `s` with hash_keys, else "" (the scope goes down as it is).
    std::string digest(scope s) const
    {
        return protection.key_secret.empty() ? std::string() : scope_digest(protection.key_secret, s);
    }
    // The scope the inner backend sees: hashed over `digest` when there is one.
    static scope inner_scope(scope s, const std::string& digest)
    {
        if (digest.empty())
            return s;
        return scope{{}, digest, true};
    }
    std::string tenant(std::string_view t) const
    {
        return protection.key_secret.empty() ? std::string(t) : tenant_tag(protection.key_secret, t);
    }

    // What a sealed record is bound to: the inner backend's name of it (the Redis key), with ":t"
    // for a tombstone (the Redis key it is kept under).
    std::string binding(scope in, bool tombstone) const
    {
        auto id = inner->record_id(in);
        if (tombstone)
            id += ":t";
        return id;
    }

    // Seals `r`'s response part into a copy bound to `in`'s record (encryption on).
    error_code seal(scope in, const record& r, bool tombstone, record& out) const
    {
        out = r;
        auto where = binding(in, tombstone);
        auto ec = seal_record(out, protection.cipher, where);
        if (ec)
            log::error(tombstone ? "could not encrypt a tombstone; not stored"
                                 : "could not encrypt an idempotency record; not stored",
                       {{"store", inner->kind()}, {"record", where}});
        return ec;
    }

    // Opens a record the inner backend handed up; one that does not open is dropped and `ec`
    // says record_corrupt, as the Redis store answered when it opened records itself.
    void open(scope in, std::optional<record>& found, error_code& ec, bool tombstone) const
    {
        if (!found || found->sealed_response.empty())
            return;
        auto where = binding(in, tombstone);
        seal_fault fault = seal_fault::none;
        if (!open_record(*found, protection.cipher, where, &fault))
            return;
        std::string stored;
        encode_record(*found, stored);
        inner->record_unreadable(where, stored.size(), to_string(fault));
        found.reset();
        ec = make_error_code(error::record_corrupt);
    }
};

// One inner session, protected. Offers the capabilities the inner session offers.
class protected_session final : public session,
                                public settle_wait,
                                public tombstone_keeper,
                                public attempt_counter,
                                public probe_schedule,
                                public quota_keeper,
                                public held_index {
public:
    protected_session(std::unique_ptr<session> inner, std::shared_ptr<const protection_state> state)
        : inner_(std::move(inner)), state_(std::move(state)), waits_(inner_->waits()),
          tombstones_(inner_->tombstones()), attempts_(inner_->attempts()), probes_(inner_->probes()),
          quotas_(inner_->quotas()), held_(inner_->held())
    {
    }

    asio::awaitable<reserve_result> reserve(scope s, const record& in_flight, duration lock_ttl) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        auto r = co_await inner_->reserve(in, in_flight, lock_ttl);
        state_->open(in, r.existing, r.ec, false);
        co_return r;
    }

    asio::awaitable<error_code> complete(scope s, const record& completed, duration record_ttl) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        if (!state_->protection.cipher.seals())
            co_return co_await inner_->complete(in, completed, record_ttl);
        record sealed;
        if (auto ec = state_->seal(in, completed, false, sealed))
            co_return ec;
        co_return co_await inner_->complete(in, sealed, record_ttl);
    }

    asio::awaitable<error_code> release(scope s, std::string_view owner_token) override
    {
        auto digest = state_->digest(s);
        co_return co_await inner_->release(protection_state::inner_scope(s, digest), owner_token);
    }

    asio::awaitable<error_code> extend(scope s, std::string_view owner_token, duration lock_ttl) override
    {
        auto digest = state_->digest(s);
        co_return co_await inner_->extend(protection_state::inner_scope(s, digest), owner_token, lock_ttl);
    }

    asio::awaitable<lookup_result> lookup(scope s) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        auto r = co_await inner_->lookup(in);
        state_->open(in, r.existing, r.ec, false);
        if (r.ec)
            r.expires_in_ms = 0;
        co_return r;
    }

    asio::awaitable<error_code> remove(scope s, bool& removed) override
    {
        auto digest = state_->digest(s);
        co_return co_await inner_->remove(protection_state::inner_scope(s, digest), removed);
    }

    settle_wait* waits() noexcept override { return waits_ ? this : nullptr; }
    tombstone_keeper* tombstones() noexcept override { return tombstones_ ? this : nullptr; }
    attempt_counter* attempts() noexcept override { return attempts_ ? this : nullptr; }
    probe_schedule* probes() noexcept override { return probes_ ? this : nullptr; }
    quota_keeper* quotas() noexcept override { return quotas_ ? this : nullptr; }
    // A route's path_prefix is configuration, not a client's key: the report passes through.
    shadow_tally* shadows() noexcept override { return inner_->shadows(); }
    held_index* held() noexcept override { return held_ ? this : nullptr; }

    asio::awaitable<wait_result> wait_settled(scope s, duration timeout) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        auto r = co_await waits_->wait_settled(in, timeout);
        state_->open(in, r.existing, r.ec, false);
        co_return r;
    }

    asio::awaitable<error_code> bury(scope s, const record& tombstone, duration ttl) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        if (!state_->protection.cipher.seals())
            co_return co_await tombstones_->bury(in, tombstone, ttl);
        record sealed;
        if (auto ec = state_->seal(in, tombstone, true, sealed))
            co_return ec;
        co_return co_await tombstones_->bury(in, sealed, ttl);
    }

    asio::awaitable<tombstone_result> find_tombstone(scope s) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        auto r = co_await tombstones_->find_tombstone(in);
        state_->open(in, r.tombstone, r.ec, true);
        co_return r;
    }

    asio::awaitable<count_result> count_execution(scope s, duration ttl) override
    {
        auto digest = state_->digest(s);
        co_return co_await attempts_->count_execution(protection_state::inner_scope(s, digest), ttl);
    }

    // Probe entries are the gateway's own opaque text: they pass as they are (config::warnings
    // says a held key's probe keeps its key and tenant unhashed).
    asio::awaitable<error_code> schedule_probe(std::string_view entry, std::int64_t due_unix_ms) override
    {
        co_return co_await probes_->schedule_probe(entry, due_unix_ms);
    }
    asio::awaitable<probe_claim> claim_probes(std::int64_t now_unix_ms, duration lease,
                                              std::size_t limit) override
    {
        co_return co_await probes_->claim_probes(now_unix_ms, lease, limit);
    }
    asio::awaitable<error_code> unschedule_probe(std::string_view entry) override
    {
        co_return co_await probes_->unschedule_probe(entry);
    }

    asio::awaitable<admit_result> admit(std::string_view tenant, std::string_view owner_token,
                                        const tenant_limits& limits, duration lock_ttl) override
    {
        auto tag = state_->tenant(tenant);
        co_return co_await quotas_->admit(tag, owner_token, limits, lock_ttl);
    }
    asio::awaitable<error_code> leave(std::string_view tenant, std::string_view owner_token) override
    {
        auto tag = state_->tenant(tenant);
        co_return co_await quotas_->leave(tag, owner_token);
    }

    // Held keys: the scope hashed as for its record, the label (a tenant) as a quota's tenant is;
    // the gateway's texts pass as they are (with hash_keys it leaves the key and tenant out).
    asio::awaitable<error_code> list_held(scope s, const held_text& entry) override
    {
        auto digest = state_->digest(s);
        auto tag = state_->tenant(entry.label);
        held_text inner = entry;
        inner.label = tag;
        co_return co_await held_->list_held(protection_state::inner_scope(s, digest), inner);
    }
    asio::awaitable<error_code> note_held(scope s, const held_text& seen) override
    {
        auto digest = state_->digest(s);
        auto tag = state_->tenant(seen.label);
        held_text inner = seen;
        inner.label = tag;
        co_return co_await held_->note_held(protection_state::inner_scope(s, digest), inner);
    }
    asio::awaitable<error_code> unlist_held(scope s, std::string_view label) override
    {
        auto digest = state_->digest(s);
        auto tag = state_->tenant(label);
        co_return co_await held_->unlist_held(protection_state::inner_scope(s, digest), tag);
    }
    // The keys come back as the inner backend keeps them (hashed with hash_keys); a held record
    // has no response part to open.
    asio::awaitable<held_page> held_keys(std::string_view label, bool by_label, std::string_view after,
                                         std::size_t limit) override
    {
        auto tag = state_->tenant(label);
        co_return co_await held_->held_keys(tag, by_label, after, limit);
    }
    asio::awaitable<error_code> resolve_held(scope s, std::string_view owner_token, const record* resolved,
                                             duration ttl) override
    {
        auto digest = state_->digest(s);
        auto in = protection_state::inner_scope(s, digest);
        if (!resolved || !state_->protection.cipher.seals())
            co_return co_await held_->resolve_held(in, owner_token, resolved, ttl);
        record sealed;
        if (auto ec = state_->seal(in, *resolved, false, sealed))
            co_return ec;
        co_return co_await held_->resolve_held(in, owner_token, &sealed, ttl);
    }

private:
    std::unique_ptr<session> inner_;
    std::shared_ptr<const protection_state> state_;
    // The inner session's capabilities (nullptr: not offered), read once.
    settle_wait* waits_;
    tombstone_keeper* tombstones_;
    attempt_counter* attempts_;
    probe_schedule* probes_;
    quota_keeper* quotas_;
    held_index* held_;
};

// The backend: everything but the sessions and record_id passes to the inner one; its refusing()
// reads the inner backend's flag.
class protected_backend final : public backend {
public:
    explicit protected_backend(std::shared_ptr<const protection_state> state)
        : backend(refusal_flag(*state->inner)), state_(std::move(state))
    {
        // Removals the inner backend hears of (its own, or another gateway's) reach this one's listener.
        state_->inner->on_removed([this](std::string_view id) { removed(id); });
    }

    std::unique_ptr<session> open_session(asio::any_io_executor ex) override
    {
        return std::make_unique<protected_session>(state_->inner->open_session(std::move(ex)), state_);
    }
    bool ready() const override { return state_->inner->ready(); }
    std::string_view kind() const noexcept override { return state_->inner->kind(); }
    store_status status() const override { return state_->inner->status(); }
    void set_refusal_policy(const refusal_policy& policy) override
    {
        state_->inner->set_refusal_policy(policy);
    }
    duration full_retry_after() const override { return state_->inner->full_retry_after(); }
    std::string record_id(scope s) const override
    {
        auto digest = state_->digest(s);
        return state_->inner->record_id(protection_state::inner_scope(s, digest));
    }
    void record_unreadable(std::string_view id, std::size_t bytes, std::string_view why) const override
    {
        state_->inner->record_unreadable(id, bytes, why);
    }
    void render_metrics(std::string& out) const override { state_->inner->render_metrics(out); }

private:
    std::shared_ptr<const protection_state> state_;
};

} // namespace

std::shared_ptr<backend> protect_backend(std::shared_ptr<backend> inner, record_protection protection)
{
    auto state = std::make_shared<protection_state>();
    state->inner = std::move(inner);
    state->protection = std::move(protection);
    return std::make_shared<protected_backend>(std::move(state));
}

} // namespace idemgate::store
