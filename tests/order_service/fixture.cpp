// SPDX-License-Identifier: Apache-2.0
#include "fixture.hpp"

#include <stdexcept>
#include <thread>

namespace idemgate::order_service_test {

order_service_process::order_service_process(const service_flags& flags)
{
    std::vector<std::string> args{"--listen", "127.0.0.1:0", "--db", flags.db_path};
    if (!flags.redis.empty()) {
        for (const std::string& a :
             {std::string("--redis"), flags.redis, std::string("--consumer"), flags.consumer,
              std::string("--claim-idle-ms"), std::to_string(flags.claim_idle_ms)})
            args.push_back(a);
    }
    if (flags.crash_after_effect)
        args.push_back("--crash-after-effect");
    proc_ = std::make_unique<child_process>(bin_dir() + "/order-service", args);
    auto line = proc_->wait_for_line(
        [](const std::string& l) { return l.find("\"msg\":\"listening\"") != std::string::npos; }, 10s);
    if (!line)
        throw std::runtime_error("order-service did not log \"listening\"; output:\n" + proc_->output());
    auto pos = line->find("127.0.0.1:");
    port_ = static_cast<std::uint16_t>(std::stoul(line->substr(pos + 10)));
    if (!flags.redis.empty()) {
        auto ready = proc_->wait_for_line(
            [](const std::string& l) { return l.find("\"msg\":\"consumer_ready\"") != std::string::npos; },
            10s);
        if (!ready)
            throw std::runtime_error("order-service consumer did not get ready; output:\n" + proc_->output());
    }
}

std::optional<std::string> order_service_process::wait_for_message(const std::string& message_id,
                                                                   const std::string& outcome,
                                                                   milliseconds timeout)
{
    const std::string id_field = "\"id\":\"" + message_id + "\"";
    const std::string outcome_field = "\"outcome\":\"" + outcome + "\"";
    return proc_->wait_for_line(
        [&](const std::string& l) {
            return l.find("\"msg\":\"stream_message\"") != std::string::npos &&
                   l.find(id_field) != std::string::npos && l.find(outcome_field) != std::string::npos;
        },
        timeout);
}

json_reply call(std::uint16_t port, const std::string& method, const std::string& path,
                const std::string& body, const std::vector<std::pair<std::string, std::string>>& headers)
{
    auto all_headers = headers;
    if (!body.empty())
        all_headers.emplace_back("Content-Type", "application/json");
    json_reply reply;
    reply.raw = http_request(port, method, path, all_headers, body);
    reply.status = reply.raw.status;
    boost::system::error_code ec;
    auto parsed = boost::json::parse(reply.raw.body, ec);
    if (!ec)
        reply.body = std::move(parsed);
    return reply;
}

std::string create_order(std::uint16_t port, std::int64_t total_cents)
{
    boost::json::object body{{"items", boost::json::array{boost::json::object{
                                           {"sku", "sku-1"}, {"qty", 1}, {"price_cents", total_cents}}}}};
    auto reply = call(port, "POST", "/api/v1/orders", boost::json::serialize(body));
    if (reply.status != 201)
        throw std::runtime_error("create order answered " + reply.raw.raw);
    return member(reply.body, "id");
}

std::int64_t executions(std::uint16_t port, const std::string& name)
{
    auto reply = call(port, "GET", "/stats");
    if (reply.status != 200)
        throw std::runtime_error("/stats answered " + reply.raw.raw);
    const auto* value = reply.body.as_object().at("executions").as_object().if_contains(name);
    return value ? value->as_int64() : 0;
}

std::int64_t payment_count(std::uint16_t port)
{
    auto reply = call(port, "GET", "/stats");
    if (reply.status != 200)
        throw std::runtime_error("/stats answered " + reply.raw.raw);
    return reply.body.as_object().at("payments").as_int64();
}

std::string member(const boost::json::value& v, const std::string& name)
{
    const auto* obj = v.if_object();
    if (obj == nullptr)
        return {};
    const auto* m = obj->if_contains(name);
    if (m == nullptr || !m->is_string())
        return {};
    return std::string(m->as_string());
}

std::string payment_body(std::int64_t amount_cents, const std::string& provider_ref)
{
    return boost::json::serialize(
        boost::json::object{{"amount_cents", amount_cents}, {"provider_ref", provider_ref}});
}

std::string xadd(redis_server& redis, const std::string& stream, const std::vector<std::string>& fields)
{
    std::vector<std::string> args{"XADD", stream, "*"};
    args.insert(args.end(), fields.begin(), fields.end());
    std::string reply = redis.command(args);
    // Bulk string: $<len>\r\n<id>\r\n
    auto start = reply.find("\r\n");
    if (reply.empty() || reply[0] != '$' || start == std::string::npos)
        throw std::runtime_error("XADD answered " + reply);
    return reply.substr(start + 2, reply.size() - start - 4);
}

long pending_count(redis_server& redis, const std::string& stream, const std::string& group)
{
    std::string reply = redis.command({"XPENDING", stream, group});
    // *4\r\n:<count>\r\n...
    auto colon = reply.find(':');
    if (reply.rfind("*4\r\n", 0) != 0 || colon == std::string::npos)
        throw std::runtime_error("XPENDING answered " + reply);
    return std::stol(reply.substr(colon + 1));
}

long wait_pending(redis_server& redis, const std::string& stream, const std::string& group, long expected,
                  milliseconds timeout)
{
    // The acknowledgement follows the log line we waited for by a round trip; poll it briefly.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    long count = pending_count(redis, stream, group);
    while (count != expected && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
        count = pending_count(redis, stream, group);
    }
    return count;
}

} // namespace idemgate::order_service_test
