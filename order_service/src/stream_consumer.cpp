// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <charconv>
#include <hiredis/hiredis.h>
#include <idemgate/common/log.hpp>
#include <idemgate/order_service/stream_consumer.hpp>
#include <memory>
#include <unistd.h>
#include <vector>

namespace idemgate::order_service {
namespace {

using namespace std::chrono_literals;

struct reply_deleter {
    void operator()(redisReply* r) const { freeReplyObject(r); }
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

struct context_deleter {
    void operator()(redisContext* c) const { redisFree(c); }
};
using context_ptr = std::unique_ptr<redisContext, context_deleter>;

reply_ptr command(redisContext* ctx, const std::vector<std::string>& args)
{
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
        argv.push_back(a.data());
        lens.push_back(a.size());
    }
    return reply_ptr(static_cast<redisReply*>(
        redisCommandArgv(ctx, static_cast<int>(argv.size()), argv.data(), lens.data())));
}

timeval to_timeval(std::chrono::milliseconds ms)
{
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
    return tv;
}

std::string text(const redisReply* r)
{
    if (r == nullptr ||
        (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS && r->type != REDIS_REPLY_ERROR))
        return {};
    return std::string(r->str, r->len);
}

// Appends the entries of a [[id, [field, value, ...]], ...] array. An entry whose fields are
// nil was deleted from the stream while pending; it is returned with no fields.
void collect_entries(const redisReply* entries, std::vector<stream_message>& out)
{
    if (entries == nullptr || entries->type != REDIS_REPLY_ARRAY)
        return;
    for (std::size_t i = 0; i < entries->elements; ++i) {
        const redisReply* entry = entries->element[i];
        if (entry == nullptr || entry->type != REDIS_REPLY_ARRAY || entry->elements < 1)
            continue;
        stream_message msg;
        msg.id = text(entry->element[0]);
        if (entry->elements >= 2 && entry->element[1]->type == REDIS_REPLY_ARRAY) {
            const redisReply* kv = entry->element[1];
            for (std::size_t j = 0; j + 1 < kv->elements; j += 2)
                msg.fields[text(kv->element[j])] = text(kv->element[j + 1]);
        }
        if (!msg.id.empty())
            out.push_back(std::move(msg));
    }
}

bool parse_int64(const std::string& s, std::int64_t& out)
{
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

// Message IDs this process has already failed on purpose (the `fail_once` test flag).
std::mutex failed_once_mutex;
std::set<std::string> failed_once;

bool fail_this_time(const stream_message& message)
{
    auto it = message.fields.find("fail_once");
    if (it == message.fields.end() || it->second.empty() || it->second == "0")
        return false;
    std::lock_guard lock(failed_once_mutex);
    return failed_once.insert(message.id).second;
}

} // namespace

inbox_result apply_payment_event(order_store& store, const stream_message& message)
{
    return store.handle_once(
        message.id, [&](connection& conn, std::string& result) -> boost::system::error_code {
            if (fail_this_time(message))
                return make_error_code(boost::system::errc::resource_unavailable_try_again);
            auto field = [&](const char* name) -> std::string {
                auto it = message.fields.find(name);
                return it == message.fields.end() ? std::string() : it->second;
            };
            payment_request request;
            std::string order_id = field("order_id");
            request.provider_ref = field("provider_ref");
            if (order_id.empty() || request.provider_ref.empty() ||
                !parse_int64(field("amount_cents"), request.amount_cents)) {
                // A malformed event will never succeed: mark it (so it is not redelivered forever) and log.
                result = "rejected_malformed";
                return {};
            }
            auto paid = order_store::mark_paid_in(conn, order_id, request, payment_source::stream);
            if (paid.ec)
                return paid.ec;
            result = paid.order_found ? std::string(to_string(paid.decision)) : "order_not_found";
            return {};
        });
}

stream_consumer::stream_consumer(order_store& store, consumer_options options)
    : store_(store), options_(std::move(options))
{
}

stream_consumer::~stream_consumer()
{
    stop();
}

void stream_consumer::start()
{
    thread_ = std::thread([this] { run(); });
}

void stream_consumer::stop()
{
    stopping_ = true;
    if (thread_.joinable())
        thread_.join();
}

void stream_consumer::run()
{
    const auto claim_interval =
        std::clamp<std::chrono::milliseconds>(options_.claim_min_idle / 2, 50ms, 1000ms);
    const auto block = std::min(options_.block, claim_interval);
    const std::string block_ms = std::to_string(block.count());
    const std::string count = std::to_string(options_.batch);
    bool announced = false;
    auto backoff = 100ms;

    // Sleeps in small steps so stop() is not delayed by a reconnect backoff.
    auto pause = [this](std::chrono::milliseconds total) {
        for (auto slept = 0ms; slept < total && !stopping_; slept += 50ms)
            std::this_thread::sleep_for(50ms);
    };

    while (!stopping_) {
        context_ptr ctx(redisConnectWithTimeout(options_.redis_host.c_str(), options_.redis_port,
                                                to_timeval(options_.connect_timeout)));
        if (!ctx || ctx->err) {
            log::warn("consumer_connect_failed", {{"error", ctx ? ctx->errstr : "out of memory"}});
            pause(backoff);
            backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
            continue;
        }
        // Every command, including the blocking read, has a deadline.
        redisSetTimeout(ctx.get(), to_timeval(block + 2000ms));

        // ID 0: entries added before the group existed are delivered too.
        auto created =
            command(ctx.get(), {"XGROUP", "CREATE", options_.stream, options_.group, "0", "MKSTREAM"});
        if (!created) {
            log::warn("consumer_connection_lost", {{"error", ctx->errstr}});
            pause(backoff);
            continue;
        }
        if (created->type == REDIS_REPLY_ERROR && text(created.get()).rfind("BUSYGROUP", 0) != 0) {
            log::error("consumer_group_failed", {{"error", text(created.get())}});
            pause(backoff);
            continue;
        }
        backoff = 100ms;
        if (!announced) {
            log::info("consumer_ready", {{"stream", options_.stream},
                                         {"group", options_.group},
                                         {"consumer", options_.consumer},
                                         {"claim_min_idle_ms", options_.claim_min_idle.count()}});
            announced = true;
        }

        // Processes a batch; false when the connection failed.
        auto process = [&](std::vector<stream_message>& batch, std::string_view delivery) -> bool {
            for (const auto& message : batch) {
                inbox_result r;
                if (message.fields.empty())
                    r.outcome = inbox_outcome::duplicate; // deleted while pending: nothing to apply
                else
                    r = apply_payment_event(store_, message);
                boost::json::object fields{{"id", message.id},
                                           {"delivery", delivery},
                                           {"consumer", options_.consumer},
                                           {"outcome", to_string(r.outcome)},
                                           {"result", r.result}};
                if (r.outcome == inbox_outcome::failed) {
                    // Not acknowledged: it stays pending and XAUTOCLAIM redelivers it.
                    fields["error"] = r.ec.message();
                    log::warn("stream_message", std::move(fields));
                    continue;
                }
                log::info("stream_message", std::move(fields));
                if (options_.crash_after_effect && r.outcome == inbox_outcome::applied) {
                    log::warn("crash_after_effect", {{"id", message.id}});
                    ::_exit(1);
                }
                // Acknowledge only after the effect and the inbox mark have committed.
                auto ack = command(ctx.get(), {"XACK", options_.stream, options_.group, message.id});
                if (!ack)
                    return false;
            }
            return true;
        };

        auto last_claim = std::chrono::steady_clock::now() - claim_interval;
        bool healthy = true;
        while (healthy && !stopping_) {
            if (std::chrono::steady_clock::now() - last_claim >= claim_interval) {
                last_claim = std::chrono::steady_clock::now();
                // Take over entries pending longer than min-idle (a crashed consumer's, or our own
                // failed ones). Bounded rounds per pass.
                std::string cursor = "0-0";
                for (int round = 0; round < 16 && healthy && !stopping_; ++round) {
                    auto claimed = command(
                        ctx.get(), {"XAUTOCLAIM", options_.stream, options_.group, options_.consumer,
                                    std::to_string(options_.claim_min_idle.count()), cursor, "COUNT", count});
                    if (!claimed) {
                        healthy = false;
                        break;
                    }
                    if (claimed->type != REDIS_REPLY_ARRAY || claimed->elements < 2) {
                        log::warn("xautoclaim_failed", {{"error", text(claimed.get())}});
                        break;
                    }
                    std::vector<stream_message> batch;
                    collect_entries(claimed->element[1], batch);
                    healthy = process(batch, "claimed");
                    cursor = text(claimed->element[0]);
                    if (cursor == "0-0" || cursor.empty())
                        break;
                }
                if (!healthy)
                    break;
            }

            auto read = command(ctx.get(), {"XREADGROUP", "GROUP", options_.group, options_.consumer, "COUNT",
                                            count, "BLOCK", block_ms, "STREAMS", options_.stream, ">"});
            if (!read) {
                healthy = false;
                break;
            }
            if (read->type == REDIS_REPLY_ERROR) {
                // NOGROUP (the stream was deleted): reconnect, which re-creates the group.
                log::warn("xreadgroup_failed", {{"error", text(read.get())}});
                break;
            }
            if (read->type != REDIS_REPLY_ARRAY)
                continue; // nil: BLOCK timed out with nothing new
            std::vector<stream_message> batch;
            for (std::size_t i = 0; i < read->elements; ++i) {
                const redisReply* stream = read->element[i];
                if (stream->type == REDIS_REPLY_ARRAY && stream->elements >= 2)
                    collect_entries(stream->element[1], batch);
            }
            healthy = process(batch, "new");
        }
        if (!healthy && !stopping_) {
            log::warn("consumer_connection_lost", {{"error", ctx->errstr}});
            pause(backoff);
        }
    }
}

} // namespace idemgate::order_service
