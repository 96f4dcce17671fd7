// SPDX-License-Identifier: Apache-2.0
// A redis_connection's two I/O loops for one connection (generation `gen`): the reader hands
// each reply to the oldest pending command (or to the subscriber hooks, for a push) and the
// writer sends whatever commands piled up as one batch; and the commands' wire format.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/write.hpp>
#include <charconv>
#include <cstring>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/ready_read.hpp>
#include <idemgate/common/send_now.hpp>
#include <tuple>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using asio::as_tuple;
using boost::system::error_code;
using clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t read_chunk = 64 * 1024; // one read takes a whole pipelined batch of replies

struct reader_deleter {
    void operator()(redisReader* r) const noexcept { redisReaderFree(r); }
};

// A pub/sub message in RESP2: ["message", channel, payload], or a sharded one (Redis Cluster):
// ["smessage", channel, payload].
bool is_message(const redisReply& r) noexcept
{
    if (r.type != REDIS_REPLY_ARRAY || r.elements != 3)
        return false;
    for (std::size_t i = 0; i < 3; ++i)
        if (r.element[i]->type != REDIS_REPLY_STRING)
            return false;
    std::string_view kind(r.element[0]->str, r.element[0]->len);
    return kind == "message" || kind == "smessage";
}

// ["sunsubscribe", channel, count]: the answer to a SUNSUBSCRIBE, or the server dropping a
// sharded subscription by itself (its slot moved away, the node lost it). The two look alike,
// so both are pushes here (see redis_connection::send_unanswered).
bool is_shard_unsubscribe(const redisReply& r) noexcept
{
    return r.type == REDIS_REPLY_ARRAY && r.elements == 3 && r.element[0]->type == REDIS_REPLY_STRING &&
           r.element[1]->type == REDIS_REPLY_STRING &&
           std::string_view(r.element[0]->str, r.element[0]->len) == "sunsubscribe";
}

} // namespace

// RESP written here rather than by hiredis' redisFormatCommandArgv, which costs a malloc and a
// sprintf per command and showed up in the replay profile; hiredis still parses every reply.
void append_command(std::string& out, std::span<const std::string_view> args)
{
    // Sized once, then written in place: every command of every request goes through here.
    auto digits = [](std::size_t n) {
        std::size_t d = 1;
        while (n >= 10) {
            n /= 10;
            ++d;
        }
        return d;
    };
    std::size_t size = 1 + digits(args.size()) + 2;
    for (auto arg : args)
        size += 1 + digits(arg.size()) + 2 + arg.size() + 2;
    const auto start = out.size();
    out.resize(start + size);
    char* p = out.data() + start;
    char* const end = p + size;
    auto put_header = [&p, end](char tag, std::size_t n) {
        *p++ = tag;
        p = std::to_chars(p, end, n).ptr;
        *p++ = '\r';
        *p++ = '\n';
    };
    put_header('*', args.size());
    for (auto arg : args) {
        put_header('$', arg.size());
        if (!arg.empty())
            std::memcpy(p, arg.data(), arg.size());
        p += arg.size();
        *p++ = '\r';
        *p++ = '\n';
    }
}

asio::awaitable<void> redis_connection::read_loop(std::shared_ptr<redis_connection>, std::uint64_t gen)
{
    std::unique_ptr<redisReader, reader_deleter> parser(redisReaderCreate());
    std::vector<char> buf(read_chunk);
    auto& stats = shared_->stats;
    for (;;) {
        error_code ec;
        std::size_t n = 0;
        if (auto* plain = transport_.plain_socket())
            std::tie(ec, n) = co_await ready_read_some(*plain, asio::buffer(buf), as_tuple(asio::deferred));
        else
            std::tie(ec, n) = co_await transport_.async_read_some(asio::buffer(buf));
        if (gen != generation_ || !connected_)
            co_return;
        if (ec) {
            on_lost(gen, "read", ec);
            co_return;
        }
        if (redisReaderFeed(parser.get(), buf.data(), n) != REDIS_OK) {
            bump(stats.errors_protocol);
            fail_pending(make_error_code(error::store_protocol));
            on_lost(gen, "parser", {});
            co_return;
        }
        for (;;) {
            void* raw = nullptr;
            if (redisReaderGetReply(parser.get(), &raw) != REDIS_OK) {
                bump(stats.errors_protocol);
                log::warn("unparsable reply from redis; reconnecting",
                          {{"address", address_.to_string()}, {"error", parser->errstr}});
                fail_pending(make_error_code(error::store_protocol));
                on_lost(gen, "protocol", {});
                co_return;
            }
            if (!raw)
                break;
            reply_ptr reply(static_cast<redisReply*>(raw));
            if (subscriber_ && is_message(*reply)) {
                if (subscriber_->on_message)
                    subscriber_->on_message(std::string_view(reply->element[1]->str, reply->element[1]->len),
                                            std::string_view(reply->element[2]->str, reply->element[2]->len));
                continue;
            }
            if (subscriber_ && subscriber_->on_shard_unsubscribe && is_shard_unsubscribe(*reply)) {
                subscriber_->on_shard_unsubscribe(
                    std::string_view(reply->element[1]->str, reply->element[1]->len));
                continue;
            }
            if (pending_.empty()) {
                bump(stats.errors_protocol);
                log::warn("unexpected reply from redis; reconnecting", {{"address", address_.to_string()}});
                on_lost(gen, "protocol", {});
                co_return;
            }
            auto cmd = std::move(pending_.front());
            pending_.pop_front();
            if (cmd->abandoned)
                continue;
            bool demoted = false;
            if (reply->type == REDIS_REPLY_ERROR) {
                // NOSCRIPT is the expected first answer of a node that lacks a script (the
                // store sends its text at once): counted apart, so a healthy start shows no error.
                if (std::string_view(reply->str, reply->len).starts_with("NOSCRIPT"))
                    bump(stats.script_loads);
                else
                    bump(stats.errors_reply);
                cmd->ec = make_error_code(error::store_error_reply);
                cmd->node = address_.to_string();
                // Sentinel mode: the primary became a replica under us. Drop the connection and
                // let the monitor find the new primary.
                demoted = shared_->cfg.mode == config::redis_mode::sentinel &&
                          std::string_view(reply->str, reply->len).starts_with("READONLY");
            }
            bump(stats.replies);
            cmd->reply = std::move(reply);
            cmd->done = true;
            cmd->event.cancel();
            if (demoted) {
                log::warn("redis answered READONLY: the primary was demoted; asking the sentinels again",
                          {{"address", address_.to_string()}});
                if (shared_->on_primary_suspect)
                    shared_->on_primary_suspect();
                fail_pending(make_error_code(error::store_unavailable));
                on_lost(gen, "readonly", {});
                co_return;
            }
        }
    }
}

asio::awaitable<void> redis_connection::write_loop(std::shared_ptr<redis_connection>, std::uint64_t gen)
{
    for (;;) {
        while (out_.empty()) {
            wake_writer_.expires_at(clock::time_point::max());
            writer_idle_ = true;
            co_await wake_writer_.async_wait(as_tuple(asio::deferred));
            if (gen != generation_ || !connected_)
                co_return;
            writer_idle_ = false;
        }
        writing_.clear();    // a stale batch of a lost connection is dropped
        writing_.swap(out_); // one write for everything queued so far
        error_code ec;
        // On plain TCP the batch goes in one non-blocking send when the socket takes it all
        // (send_first); the rest, if any, is written asynchronously.
        std::array<asio::const_buffer, 1> rest{asio::buffer(writing_)};
        auto* plain = transport_.plain_socket();
        if (!plain)
            std::tie(ec, std::ignore) = co_await transport_.async_write(asio::buffer(writing_));
        else if (!send_first(*plain, rest, ec))
            std::tie(ec, std::ignore) = co_await asio::async_write(*plain, rest, as_tuple(asio::deferred));
        if (gen != generation_ || !connected_)
            co_return;
        writing_.clear();
        if (ec) {
            on_lost(gen, "write", ec);
            co_return;
        }
    }
}

asio::awaitable<std::pair<command_result, command_result>>
redis_connection::execute_pair(std::span<const std::string_view> first,
                               std::span<const std::string_view> second)
{
    auto self = shared_from_this();
    std::pair<command_result, command_result> out;
    // On a connection that is up, or that is connecting (as every command waits for a connect
    // under way; a strict reservation right after start-up would otherwise be refused while this
    // connection's first attempt runs): both go out in the same batch, in order, or neither
    // (send_waiting() sends what waited in order, in one batch).
    if (!(connected_ && up_) && !connecting_) {
        bump(shared_->stats.errors_unavailable);
        out.first.ec = out.second.ec = make_error_code(error::store_unavailable);
        co_return out;
    }
    auto a = submit(first, false, false);
    auto b = a ? submit(second, false, false) : nullptr;
    if (!b) {
        if (a)
            a->abandoned = true; // its reply is read and dropped
        out.first.ec = out.second.ec = make_error_code(error::store_unavailable);
        co_return out;
    }
    out.first = co_await finish(std::move(a));
    out.second = co_await finish(std::move(b));
    co_return out;
}

} // namespace idemgate::store::detail
