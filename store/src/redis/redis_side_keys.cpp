// SPDX-License-Identifier: Apache-2.0
// The Redis store's record lookup (admin API), and the tombstone, execution count and lock
// extension of a record key. Each uses single-key commands: no script spans two keys, which a
// Redis Cluster could place in two slots (record keys have no hash tag unless store.hash_keys).
#include "redis/redis_side_keys.hpp"

#include "redis/redis_keys.hpp"
#include "redis/redis_scripts.hpp"

#include <array>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/record_codec.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

void log_if_error_reply(redis_shared& shared, std::string_view operation, std::string_view command,
                        const command_result& r)
{
    if (r.ec == error::store_error_reply)
        shared.log_error_reply(operation, command, r);
}

} // namespace

error_code decode_logged(redis_shared& shared, std::string_view key, std::string_view bytes, record& out)
{
    seal_fault fault = seal_fault::none;
    // Sealed records go up to the protection decorator unopened; without it none would open.
    auto ec = shared.options.keep_sealed ? decode_stored_record(bytes, out)
                                         : decode_record(bytes, out, record_cipher{}, key, &fault);
    if (ec && shared.options.keep_sealed)
        fault = seal_fault::malformed;
    if (ec) {
        shared.stats.errors_corrupt.fetch_add(1, std::memory_order_relaxed);
        shared.log_corrupt_record(key, bytes.size(), to_string(fault));
    }
    return ec;
}

asio::awaitable<lookup_result> lookup_record(command_router& router, redis_shared& shared, scope s)
{
    auto key = redis_key_of(shared, s);
    lookup_result out;
    std::array<std::string_view, 2> get{"GET", key};
    auto r = co_await router.execute(key, get);
    if (r.ec) {
        log_if_error_reply(shared, "lookup", "GET", r);
        out.ec = r.ec;
        co_return out;
    }
    if (r.reply->type == REDIS_REPLY_NIL)
        co_return out;
    record existing;
    if (r.reply->type != REDIS_REPLY_STRING) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        out.ec = make_error_code(error::store_protocol);
        co_return out;
    }
    if (auto ec = decode_logged(shared, key, std::string_view(r.reply->str, r.reply->len), existing)) {
        out.ec = ec;
        co_return out;
    }
    std::array<std::string_view, 2> pttl{"PTTL", key};
    auto t = co_await router.execute(key, pttl);
    if (t.ec) {
        log_if_error_reply(shared, "lookup", "PTTL", t);
        out.ec = t.ec;
        co_return out;
    }
    if (t.reply->type != REDIS_REPLY_INTEGER || t.reply->integer < 0)
        co_return out; // expired between the two commands
    out.existing = std::move(existing);
    out.expires_in_ms = t.reply->integer;
    co_return out;
}

asio::awaitable<error_code> bury(command_router& router, redis_shared& shared, scope s,
                                 const record& tombstone, duration ttl)
{
    auto key = tombstone_key(redis_key_of(shared, s));
    std::string value;
    encode_record(tombstone, value); // sealed, if at all, by the protection decorator
    auto px = ttl_ms(ttl);
    std::array<std::string_view, 5> args{"SET", key, value, "PX", px};
    auto r = co_await router.execute(key, args);
    log_if_error_reply(shared, "bury", "SET", r);
    co_return r.ec;
}

asio::awaitable<tombstone_result> find_tombstone(command_router& router, redis_shared& shared, scope s)
{
    auto key = tombstone_key(redis_key_of(shared, s));
    tombstone_result out;
    std::array<std::string_view, 2> get{"GET", key};
    auto r = co_await router.execute(key, get);
    if (r.ec) {
        log_if_error_reply(shared, "find_tombstone", "GET", r);
        out.ec = r.ec;
        co_return out;
    }
    if (r.reply->type == REDIS_REPLY_NIL)
        co_return out;
    record tomb;
    if (r.reply->type != REDIS_REPLY_STRING) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        out.ec = make_error_code(error::store_protocol);
        co_return out;
    }
    if (auto ec = decode_logged(shared, key, std::string_view(r.reply->str, r.reply->len), tomb)) {
        out.ec = ec;
        co_return out;
    }
    if (tomb.state != record_state::tombstone) {
        out.ec = make_error_code(error::record_corrupt);
        co_return out;
    }
    out.tombstone = std::move(tomb);
    co_return out;
}

asio::awaitable<count_result> count_execution(command_router& router, redis_shared& shared, scope s,
                                              duration ttl)
{
    auto key = count_key(redis_key_of(shared, s));
    auto px = ttl_ms(ttl);
    // EVAL with the text: a short script, sent only when attempt_header is on.
    std::array<std::string_view, 5> eval{"EVAL", count_lua().text, "1", key, px};
    count_result out;
    auto r = co_await router.execute(key, eval);
    if (r.ec) {
        log_if_error_reply(shared, "count_execution", "EVAL", r);
        out.ec = r.ec;
        co_return out;
    }
    if (r.reply->type != REDIS_REPLY_INTEGER || r.reply->integer < 1) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        out.ec = make_error_code(error::store_protocol);
        co_return out;
    }
    out.count = static_cast<std::uint64_t>(r.reply->integer);
    co_return out;
}

asio::awaitable<error_code> extend_lock(command_router& router, redis_shared& shared, scope s,
                                        std::string_view owner_token, duration lock_ttl)
{
    auto key = redis_key_of(shared, s);
    // The token sits right after the version byte and the state right after the token: the
    // prefix of this owner's in-flight record, and of nothing it completed.
    auto prefix = owner_prefix(owner_token);
    prefix.push_back(static_cast<char>(record_state::in_flight));
    auto px = ttl_ms(lock_ttl);
    std::array<std::string_view, 6> eval{"EVAL", extend_lua().text, "1", key, prefix, px};
    auto r = co_await router.execute(key, eval);
    if (r.ec) {
        log_if_error_reply(shared, "extend", "EVAL", r);
        co_return r.ec;
    }
    if (r.reply->type != REDIS_REPLY_INTEGER) {
        shared.stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        co_return make_error_code(error::store_protocol);
    }
    co_return r.reply->integer == 1 ? error_code{} : make_error_code(error::not_owner);
}

asio::awaitable<void> remove_side_keys(command_router& router, redis_shared& shared,
                                       std::string_view record_key)
{
    std::array<std::string, 2> sides{tombstone_key(record_key), count_key(record_key)};
    for (const auto& side : sides) {
        std::array<std::string_view, 2> del{"DEL", side};
        auto r = co_await router.execute(side, del);
        log_if_error_reply(shared, "remove", "DEL", r);
    }
}

} // namespace idemgate::store::detail
