// SPDX-License-Identifier: Apache-2.0
// The Redis store's index of held keys (redis_held.hpp).
#include "redis/redis_held.hpp"

#include "held_book.hpp"
#include "redis/redis_keys.hpp"
#include "redis/redis_scripts.hpp"
#include "redis/redis_side_keys.hpp"

#include <array>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// KEYS[1] record key, ARGV[1] the owner prefix followed by the outcome_unknown state byte,
// ARGV[2] the resolved record ("" = remove the key), ARGV[3] its TTL in ms. Sent as EVAL with its
// text: an operator's rare decision.
constexpr std::string_view resolve_script = "local v = redis.call('GET', KEYS[1])\n"
                                            "if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                            "  if ARGV[2] == '' then redis.call('DEL', KEYS[1])\n"
                                            "  else redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end\n"
                                            "  return 1\n"
                                            "end\n"
                                            "return 0\n";

std::string held_side_key(std::string_view record_key, std::string_view which)
{
    std::string out(record_key);
    out += which;
    return out;
}

} // namespace

std::string held_index_key(std::string_view key_prefix)
{
    std::string out(key_prefix);
    out += ":h:{held}:keys";
    return out;
}

asio::awaitable<command_result> redis_held::run(std::string_view operation, std::string_view key,
                                                std::span<const std::string_view> args)
{
    auto r = co_await router_->execute(key, args);
    if (r.ec == error::store_error_reply)
        shared_->log_error_reply(operation, args[0], r);
    co_return r;
}

asio::awaitable<error_code> redis_held::list_held(scope s, const held_text& entry)
{
    auto note_key = held_side_key(redis_key_of(*shared_, s), ":h");
    auto value = held_tagged(entry.owner_token, entry.text);
    auto px = ttl_ms(entry.ttl);
    std::array<std::string_view, 5> set{"SET", note_key, value, "PX", px};
    auto r = co_await run("list_held", note_key, set);
    if (r.ec)
        co_return r.ec;
    auto index = held_index_key(shared_->cfg.key_prefix);
    auto name = held_entry_name(entry.label, s);
    std::array<std::string_view, 4> zadd{"ZADD", index, "0", name};
    auto added = co_await run("list_held", index, zadd);
    co_return added.ec;
}

asio::awaitable<error_code> redis_held::note_held(scope s, const held_text& seen)
{
    auto seen_key = held_side_key(redis_key_of(*shared_, s), ":s");
    auto value = held_tagged(seen.owner_token, seen.text);
    auto px = ttl_ms(seen.ttl);
    std::array<std::string_view, 5> set{"SET", seen_key, value, "PX", px};
    auto r = co_await run("note_held", seen_key, set);
    co_return r.ec;
}

asio::awaitable<error_code> redis_held::unlist_held(scope s, std::string_view label)
{
    auto index = held_index_key(shared_->cfg.key_prefix);
    auto name = held_entry_name(label, s);
    std::array<std::string_view, 3> zrem{"ZREM", index, name};
    auto r = co_await run("unlist_held", index, zrem);
    co_return r.ec;
}

asio::awaitable<held_page> redis_held::held_keys(std::string_view label, bool by_label,
                                                 std::string_view after, std::size_t limit)
{
    held_page out;
    auto index = held_index_key(shared_->cfg.key_prefix);
    std::string min = after.empty() ? (by_label ? "[" + std::string(label) + '\0' : std::string("-"))
                                    : "(" + std::string(after);
    std::string max = by_label ? "(" + std::string(label) + '\x01' : std::string("+");
    const std::size_t scan = limit * held_scan_factor;
    auto count = std::to_string(scan + 1); // one more: whether the index goes on
    std::array<std::string_view, 7> range{"ZRANGEBYLEX", index, min, max, "LIMIT", "0", count};
    auto r = co_await run("held_keys", index, range);
    if (r.ec) {
        out.ec = r.ec;
        co_return out;
    }
    if (r.reply->type != REDIS_REPLY_ARRAY) {
        shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        out.ec = make_error_code(error::store_protocol);
        co_return out;
    }
    std::vector<std::string> names;
    for (std::size_t i = 0; i < r.reply->elements; ++i)
        if (const auto* e = r.reply->element[i]; e->type == REDIS_REPLY_STRING)
            names.emplace_back(e->str, e->len);
    bool more = names.size() > scan;
    if (more)
        names.pop_back();
    std::size_t used = 0;
    for (const auto& name : names) {
        ++used;
        auto parts = held_entry_of(name);
        lookup_result found;
        if (parts) {
            found = co_await lookup_record(*router_, *shared_, parts->where);
            if (found.ec) {
                out.ec = found.ec;
                co_return out;
            }
        }
        if (!found.existing || found.existing->state != record_state::outcome_unknown) {
            std::array<std::string_view, 3> zrem{"ZREM", index, name};
            co_await run("held_keys", index, zrem);
            continue;
        }
        auto record_key = redis_key_of(*shared_, parts->where);
        const std::string token = found.existing->owner_token; // the record moves into k
        held_key k{std::string(parts->label),
                   std::string(parts->where.tenant),
                   std::string(parts->where.key),
                   parts->where.hashed,
                   record_key,
                   {},
                   {},
                   std::move(*found.existing),
                   found.expires_in_ms};
        const std::array<std::pair<std::string_view, std::string*>, 2> sides{
            std::pair<std::string_view, std::string*>{":h", &k.note}, {":s", &k.seen}};
        for (const auto& [which, text] : sides) {
            auto key = held_side_key(record_key, which);
            std::array<std::string_view, 2> get{"GET", key};
            auto g = co_await run("held_keys", key, get);
            if (g.ec) {
                out.ec = g.ec;
                co_return out;
            }
            if (g.reply->type == REDIS_REPLY_STRING)
                *text = held_text_for(std::string_view(g.reply->str, g.reply->len), token);
        }
        out.keys.push_back(std::move(k));
        if (out.keys.size() == limit)
            break;
    }
    if (used < names.size() || (more && !names.empty()))
        out.next = names[used - 1];
    co_return out;
}

asio::awaitable<error_code> redis_held::resolve_held(scope s, std::string_view owner_token,
                                                     const record* resolved, duration ttl)
{
    auto key = redis_key_of(*shared_, s);
    auto prefix = owner_prefix(owner_token);
    prefix.push_back(static_cast<char>(record_state::outcome_unknown));
    std::string value;
    if (resolved)
        encode_record(*resolved, value); // sealed, if at all, by the protection decorator
    auto px = ttl_ms(ttl);
    std::array<std::string_view, 7> eval{"EVAL", resolve_script, "1", key, prefix, value, px};
    auto r = co_await run("resolve_held", key, eval);
    if (r.ec)
        co_return r.ec;
    if (r.reply->type != REDIS_REPLY_INTEGER) {
        shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
        co_return make_error_code(error::store_protocol);
    }
    co_return r.reply->integer == 1 ? error_code{} : make_error_code(error::not_owner);
}

} // namespace idemgate::store::detail
