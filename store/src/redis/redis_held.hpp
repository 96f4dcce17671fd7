// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's index of held keys (store::held_index): one sorted set of entry names, all
// at score 0 and read in lexical order (held_book.hpp names the entries), and beside each record
// key its hold's note (":h") and what the prober last saw (":s"), each kept with the record's
// TTL and tagged with the owner token they are about. Each command touches one key: the index,
// the record and its side keys are in different Cluster slots. Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/held_index.hpp>
#include <memory>

namespace idemgate::store::detail {

// The sorted set's key: "<prefix>:h:{held}:keys" (one hash tag: one slot; like the probe
// schedule's key, no record key reads alike).
std::string held_index_key(std::string_view key_prefix);

class redis_held final : public held_index {
public:
    redis_held(std::shared_ptr<command_router> router, std::shared_ptr<redis_shared> shared)
        : router_(std::move(router)), shared_(std::move(shared))
    {
    }

    // SET <record key>:h (PX ttl), then ZADD the entry.
    boost::asio::awaitable<boost::system::error_code> list_held(scope s, const held_text& entry) override;
    // SET <record key>:s (PX ttl).
    boost::asio::awaitable<boost::system::error_code> note_held(scope s, const held_text& seen) override;
    // ZREM the entry (the side keys expire with the record).
    boost::asio::awaitable<boost::system::error_code> unlist_held(scope s, std::string_view label) override;
    // ZRANGEBYLEX, then per entry GET and PTTL of the record and GET of its side keys; ZREM of an
    // entry whose key no longer holds an outcome_unknown record.
    boost::asio::awaitable<held_page> held_keys(std::string_view label, bool by_label, std::string_view after,
                                                std::size_t limit) override;
    // EVAL: GET the record, and SET or DEL it while it starts with the owner's prefix and the
    // outcome_unknown state byte.
    boost::asio::awaitable<boost::system::error_code>
    resolve_held(scope s, std::string_view owner_token, const record* resolved, duration ttl) override;

private:
    boost::asio::awaitable<command_result> run(std::string_view operation, std::string_view key,
                                               std::span<const std::string_view> args);

    std::shared_ptr<command_router> router_;
    std::shared_ptr<redis_shared> shared_;
};

} // namespace idemgate::store::detail
