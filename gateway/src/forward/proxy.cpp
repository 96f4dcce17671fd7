// SPDX-License-Identifier: Apache-2.0
#include "forward/proxy.hpp"

#include "core/problem.hpp"
#include "forward/big_answer.hpp"
#include "transport/wire.hpp"

#include <array>
#include <boost/beast/core/string.hpp>
#include <charconv>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/record_headers.hpp>
#include <idemgate/gateway/head_splice.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <iterator>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

namespace {

bool is_bodyless_status(unsigned status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

} // namespace

std::string upstream_authority(const config::upstream_config& upstream)
{
    const auto& u = upstream.tls;
    const std::string& host = u.enabled && !u.server_name.empty() ? u.server_name : upstream.address.host;
    std::string out = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    if (upstream.address.port != (u.enabled ? 443 : 80))
        out.append(":").append(std::to_string(upstream.address.port));
    return out;
}

namespace {

// The client's request as the upstream gets it, in the order the client sent it: hop-by-hop
// lines out, X-Forwarded-* replaced, HTTP/1.1 with a Host, Content-Length framing, the request
// ID the gateway made for it, and with tracing on the exchange's traceparent. Lines that stay
// are written from `received` where it holds them (head_splice); the replaced and new lines
// follow them.
// The head is written in the exchange's scratch.
request_buffers splice_request(const request_exchange& ex, const config::upstream_config& upstream,
                               std::string_view traceparent)
{
    const request_type& req = *ex.req;
    const received_head& received = ex.received;
    const std::string_view request_id_header = ex.env->cfg().request_id_header;
    const client_info& client = *ex.client;
    head_splice out(received.bytes, *ex.scratch);
    out.request_line(req.method_string(), req.target());
    const hop_by_hop_filter hop_by_hop(req, true);
    bool has_host = false; // usually the first line: cheaper than the index's lookup
    for (const auto& f : req)
        if (f.name() == http::field::host) {
            has_host = true;
            break;
        }
    const bool framed = !req.body().empty() || req.method() == http::verb::post ||
                        req.method() == http::verb::put || req.method() == http::verb::patch;
    char length_digits[24];
    auto length_end =
        std::to_chars(length_digits, length_digits + sizeof length_digits, req.body().size()).ptr;
    const std::string_view length(length_digits, static_cast<std::size_t>(length_end - length_digits));
    bool length_kept = false;
    bool forwarded_for_seen = false;
    std::string_view forwarded_for;   // the X-Forwarded-For values
    std::string forwarded_for_joined; // of several fields (rare: no allocation otherwise)
    std::string_view host;
    for (const auto& f : req) {
        const auto name = f.name_string();
        const auto value = f.value();
        bool drop = hop_by_hop.drops(f.name(), name);
        if (!drop) {
            switch (f.name()) {
            case http::field::host:
                if (host.data() == nullptr)
                    host = value;
                break;
            case http::field::content_length:
                // Kept in its place when it already says the body's length.
                if (framed) {
                    drop = length_kept || value != length;
                    length_kept = !drop;
                }
                break;
            case http::field::unknown:
                if (same_field_name(name, "X-Forwarded-For")) {
                    // Several fields are one list, in order (RFC 9110 5.3): joined, none lost.
                    if (forwarded_for_seen) {
                        if (forwarded_for_joined.empty())
                            forwarded_for_joined = forwarded_for;
                        forwarded_for_joined.append(", ").append(value);
                        forwarded_for = forwarded_for_joined;
                    } else {
                        forwarded_for = value;
                    }
                    forwarded_for_seen = true;
                    drop = true;
                } else {
                    drop = same_field_name(name, "X-Forwarded-Proto") ||
                           (has_host && same_field_name(name, "X-Forwarded-Host")) ||
                           (!traceparent.empty() && same_field_name(name, "traceparent"));
                }
                break;
            default: break;
            }
        }
        if (drop)
            out.skip(name, value);
        else
            out.keep(name, value);
    }
    // The new lines, copied in one go.
    std::array<std::string_view, 20> added;
    std::size_t n = 0;
    if (!received.added_request_id.empty() && !request_id_header.empty()) {
        added[n++] = request_id_header;
        added[n++] = ": ";
        added[n++] = received.added_request_id;
        added[n++] = "\r\n";
    }
    // As nginx's $proxy_add_x_forwarded_for: the hops received, then the connection's client
    // (the peer, or the source its trusted balancer's PROXY header named).
    added[n++] = "X-Forwarded-For: ";
    if (forwarded_for_seen) {
        added[n++] = forwarded_for;
        added[n++] = ", ";
    }
    added[n++] = client.ip;
    added[n++] = client.tls ? "\r\nX-Forwarded-Proto: https\r\n" : "\r\nX-Forwarded-Proto: http\r\n";
    std::string authority;
    if (has_host) {
        added[n++] = "X-Forwarded-Host: ";
        added[n++] = host;
    } else {
        authority = upstream_authority(upstream);
        added[n++] = "Host: ";
        added[n++] = authority;
    }
    added[n++] = "\r\n";
    if (framed && !length_kept) {
        added[n++] = "Content-Length: ";
        added[n++] = length;
        added[n++] = "\r\n";
    }
    if (!traceparent.empty()) {
        added[n++] = "traceparent: ";
        added[n++] = traceparent;
        added[n++] = "\r\n";
    }
    out.add(std::span(added.data(), n));
    auto head = out.finish();
    return {asio::buffer(head.data(), head.size()), asio::buffer(req.body().data(), req.body().size())};
}

// The access log's word for why an exchange failed.
std::string_view upstream_error_kind(boost::system::error_code ec)
{
    if (ec == make_error_code(error::upstream_timeout))
        return "timeout";
    if (ec == make_error_code(error::upstream_connect))
        return "connect";
    if (ec == make_error_code(error::upstream_too_large))
        return "too_large";
    if (ec == make_error_code(error::upstream_protocol))
        return "protocol";
    return "other";
}

// One error line per failed exchange, at most 10 a second per thread (the rest are counted in
// the next line), so an upstream outage cannot flood the log; the access line has the details
// of every request.
void log_upstream_failure(const config::route_config& route, const handled& h, bool sent,
                          std::string_view request_id)
{
    thread_local std::int64_t window = 0;
    thread_local int in_window = 0, suppressed = 0;
    auto now = log::now_unix_ms() / 1000;
    if (now != window) {
        window = now;
        in_window = 0;
    }
    if (++in_window > 10) {
        ++suppressed;
        return;
    }
    boost::json::object fields{{"upstream", route.upstream},
                               {"address", h.upstream_address},
                               {"error", h.upstream_error},
                               {"request_sent", sent},
                               {"upstream_ms", static_cast<double>(h.upstream_us) / 1000.0}};
    if (!request_id.empty())
        fields["request_id"] = request_id;
    if (suppressed) {
        fields["suppressed_before"] = suppressed;
        suppressed = 0;
    }
    log::error("upstream request failed", std::move(fields));
}

} // namespace

store::stored_response recordable_head(const response_type& res, std::string_view request_id_header,
                                       std::string_view status_header)
{
    store::stored_response out;
    out.status = res.result_int();
    out.reason = std::string(res.reason());
    out.headers.reserve(static_cast<std::size_t>(std::distance(res.begin(), res.end())));
    for (const auto& f : res)
        if (!excluded_from_record(f.name(), f.name_string()) &&
            (request_id_header.empty() || !boost::beast::iequals(f.name_string(), request_id_header)) &&
            (status_header.empty() || !boost::beast::iequals(f.name_string(), status_header)) &&
            !boost::beast::iequals(f.name_string(), reconciled_field))
            out.headers.push_back({std::string(f.name_string()), std::string(f.value())});
    return out;
}

void reframe(response_type& res, bool head_request)
{
    if (is_bodyless_status(res.result_int())) {
        res.erase(http::field::content_length);
        res.body().clear();
        return;
    }
    if (head_request)
        return; // keep the upstream's Content-Length: the body was not sent
    // Usually the upstream's one Content-Length line already says it: kept as it is (set()
    // looks the name up in the ordered index, erases and inserts).
    char digits[24];
    auto size = res.body().size();
    auto end = std::to_chars(digits, digits + sizeof digits, size).ptr;
    std::string_view wanted(digits, static_cast<std::size_t>(end - digits));
    int lines = 0;
    bool same = false;
    for (const auto& f : res)
        if (f.name() == http::field::content_length && ++lines == 1)
            same = f.value() == wanted;
    if (lines != 1 || !same)
        res.content_length(size);
}

upstream_pool& begin_forward(request_exchange& ex, const config::route_config& route, forwarding& f)
{
    const auto& env = *ex.env;
    const auto* trace = ex.trace_or_null();
    // The upstream continues the trace from the exchange's own span (W3C Trace Context: a
    // participant forwards its span ID, not its caller's); tracestate passes on unchanged.
    f.started = std::chrono::steady_clock::now();
    if (trace) {
        f.exchange_span = tracing::new_span_id();
        f.traceparent = tracing::format_traceparent(trace->trace, f.exchange_span, trace->sampled);
    }
    f.buffers = splice_request(ex, env.cfg().upstreams[route.upstream_index], f.traceparent);
    return *env.pools[route.upstream_index];
}

bool end_forward(gateway_context& ctx, request_exchange& ex, const config::route_config& route, forwarding& f)
{
    const auto& env = *ex.env;
    const auto& req = *ex.req;
    auto& h = ex.answer;
    auto* trace = ex.trace_or_null();
    auto& result = f.result;
    const unsigned client_version = req.version();
    const bool head = req.method() == http::verb::head;
    h.request_sent = result.sent;
    h.upstream_address = std::move(result.address);
    auto took = std::chrono::steady_clock::now() - f.started;
    env.pools[route.upstream_index]->observe_exchange(took);
    h.upstream_us = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
    if (trace && trace->sampled) {
        tracing::span child;
        child.id = f.exchange_span;
        child.name = "upstream " + route.upstream;
        child.kind = tracing::span_kind::client;
        child.error = result.ec || result.response.result_int() >= 500;
        child.attributes = {{"server.address", route.upstream},
                            {"http.request.method", std::string(req.method_string())}};
        if (!result.ec)
            child.attributes.push_back(
                {"http.response.status_code", std::int64_t{result.response.result_int()}});
        else
            child.attributes.push_back({"error.type", result.ec.message()});
        trace->add_child(std::move(child), f.started);
    }
    const auto& status_header = route.idempotency.status_header;
    const auto& request_id_header = env.cfg().request_id_header;
    if (result.ec && result.head_only) {
        // The upstream ran and answered, over limits.max_response_body: nothing of it reaches the
        // client, and the key keeps what is known (settle).
        h.upstream_error = upstream_error_kind(result.ec);
        auto big = std::make_shared<big_answer>();
        big->head = recordable_head(result.response, request_id_header, status_header);
        big->length = result.length;
        h.big = std::move(big);
        log::warn("upstream answer over limits.max_response_body: answered 502",
                  {{"upstream", route.upstream},
                   {"status", static_cast<std::int64_t>(result.response.result_int())},
                   {"content_length", result.length ? static_cast<std::int64_t>(*result.length) : -1}});
        h.response = make_problem(
            env.cfg().problems.type_base(),
            {problems::bad_gateway,
             "upstream \"" + route.upstream + "\": the answer's body is over limits.max_response_body"},
            client_version, false);
        return true;
    }
    if (result.ec && result.began_status) {
        // The answer began (its status line arrived) and cannot be read to its end: the upstream
        // ran the request and answered with that status, so the key goes by it (on_status; a
        // status-only record under record), while the client gets the gateway's 502 at once.
        h.upstream_error = upstream_error_kind(result.ec);
        auto big = std::make_shared<big_answer>();
        big->head.status = result.began_status;
        big->length = 0;
        h.big = std::move(big);
        log::warn("upstream answer began and could not be read: answered 502, the key goes by its status",
                  {{"upstream", route.upstream},
                   {"status", static_cast<std::int64_t>(result.began_status)},
                   {"error", result.ec.message()}});
        h.response =
            make_problem(env.cfg().problems.type_base(),
                         {problems::bad_gateway,
                          "upstream \"" + route.upstream + "\": " + result.ec.message() +
                              " after its status line (" + std::to_string(result.began_status) + ")"},
                         client_version, true);
        return true;
    }
    if (result.ec) {
        h.upstream_error = upstream_error_kind(result.ec);
        std::string_view request_id = ex.received.added_request_id;
        if (request_id.empty() && !request_id_header.empty())
            request_id = req[request_id_header];
        log_upstream_failure(route, h, result.sent, request_id);
        bool timed_out = result.ec == make_error_code(error::upstream_timeout);
        h.response = make_problem(env.cfg().problems.type_base(),
                                  {timed_out ? problems::gateway_timeout : problems::bad_gateway,
                                   "upstream \"" + route.upstream + "\": " + result.ec.message()},
                                  client_version, true);
        return false;
    }
    if (result.response.result_int() >= 500)
        ctx.stats.upstream_5xx.fetch_add(1, std::memory_order_relaxed);
    h.response = std::move(result.response);
    strip_hop_by_hop(h.response);
    h.response.version(client_version);
    if (result.rest) {
        // Too large to record: passed on as it arrives (pass_on), framed as the upstream framed it.
        auto big = std::make_shared<big_answer>();
        big->head = recordable_head(h.response, request_id_header, status_header);
        big->rest = std::move(result.rest);
        big->length = result.length;
        h.big = std::move(big);
        return true;
    }
    reframe(h.response, head);
    return true;
}

boost::asio::awaitable<void> forward_other(const request_env& env, const config::route_config& route,
                                           request_type& req, upstream_result& result)
{
    if (req.find(http::field::host) == req.end())
        req.set(http::field::host, upstream_authority(env.cfg().upstreams[route.upstream_index]));
    std::string scratch;
    const auto buffers = message_buffers(req, scratch);
    const upstream_call call{req, buffers, false, resend_policy::idempotent_methods,
                             route.effective_timeouts};
    co_await env.pools[route.upstream_index]->exchange(call, result);
}

} // namespace idemgate::gateway::detail
