// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the sessions of the in-process stores (memory, map) share: the shadow report and the index
// of held keys, kept in their backend's books (shadow_book, held_book) and answered at once.
// Private to the store library.
//
// Backend has `shadows` (a shadow_book), `held` (a held_book), lookup(scope), record_id(scope)
// and resolve_held(scope, owner_token, resolved, ttl).
#include "held_book.hpp"
#include "shadow_book.hpp"

#include <idemgate/store/held_index.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <utility>

namespace idemgate::store::detail {

template<class Backend>
class in_process_session : public session, public shadow_tally, public held_index {
public:
    shadow_tally* shadows() noexcept override { return this; }
    held_index* held() noexcept override { return this; }

    boost::asio::awaitable<boost::system::error_code> add_shadow_counts(std::string_view route,
                                                                        shadow_counts& since_start,
                                                                        shadow_counts& window,
                                                                        std::int64_t now_unix_ms) override
    {
        backend_->shadows.add(route, since_start, window, now_unix_ms);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<shadow_totals> read_shadow_counts(std::string_view route, std::int64_t now_unix_ms,
                                                             std::int64_t buckets) override
    {
        co_return backend_->shadows.read(route, now_unix_ms, buckets);
    }

    boost::asio::awaitable<boost::system::error_code> list_held(scope s, const held_text& entry) override
    {
        backend_->held.list(entry.label, s, entry.owner_token, entry.text);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<boost::system::error_code> note_held(scope s, const held_text& seen) override
    {
        backend_->held.note(seen.label, s, seen.owner_token, seen.text);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<boost::system::error_code> unlist_held(scope s, std::string_view label) override
    {
        backend_->held.unlist(label, s);
        co_return boost::system::error_code{};
    }
    boost::asio::awaitable<held_page> held_keys(std::string_view label, bool by_label, std::string_view after,
                                                std::size_t limit) override
    {
        auto& b = *backend_;
        co_return b.held.page(
            label, by_label, after, limit, [&](scope s) { return b.lookup(s); },
            [&](scope s) { return b.record_id(s); });
    }
    boost::asio::awaitable<boost::system::error_code>
    resolve_held(scope s, std::string_view owner_token, const record* resolved, duration ttl) override
    {
        co_return backend_->resolve_held(s, owner_token, resolved, ttl);
    }

protected:
    explicit in_process_session(std::shared_ptr<Backend> b) : backend_(std::move(b)) {}

    std::shared_ptr<Backend> backend_;
};

} // namespace idemgate::store::detail
