// SPDX-License-Identifier: Apache-2.0
#include "admin/admin.hpp"

#include "admin/console.hpp"
#include "admin/held_api.hpp"
#include "admin/records_api.hpp"
#include "admin/shadow_api.hpp"
#include "core/http_date.hpp"
#include "core/problem.hpp"
#include "transport/lingering_close.hpp"
#include "transport/wire.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/percent_coding.hpp>
#include <idemgate/common/prometheus.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <optional>
#include <vector>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

admin::admin(gateway_context& ctx, asio::io_context& control, std::function<void(std::string&)> metrics_extra)
    : ctx_(ctx), control_(control), metrics_extra_(std::move(metrics_extra)), acceptor_(control)
{
    // store.redis.tls is restart-only: its certificate is the one read at start.
    if (const auto* redis = ctx_.boot.store.redis();
        redis && redis->tls.enabled && !redis->tls.cert_file.empty())
        redis_certificate_expiry_ = certificate_file_expiry(redis->tls.cert_file);
}

void admin::bind(const tcp::endpoint& ep)
{
    open_listener(acceptor_, ep, false, "admin_listen");
    endpoint_ = acceptor_.local_endpoint();
}

void admin::start()
{
    if (!ctx_.boot.admin.token.empty())
        store_ = ctx_.backend->open_session(control_.get_executor());
    accepting_ = true;
    asio::co_spawn(control_, accept_loop(), asio::detached);
    asio::co_spawn(control_, watch_store(), asio::detached);
}

void admin::stop()
{
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
}

asio::awaitable<void> admin::accept_loop()
{
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) {
            accepting_ = false;
            co_return;
        }
        asio::co_spawn(control_, session(std::move(socket)), asio::detached);
    }
}

response_type admin::answer(const admin_request& req)
{
    response_type res{http::status::ok, req.version()};
    auto generation = ctx_.live();
    auto base = generation ? generation->cfg.problems.type_base() : config::default_problem_base;
    auto path = req.target().substr(0, req.target().find('?'));
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res = make_problem(base, {problems::method_not_allowed, "the admin port answers GET only"},
                           req.version(), true);
        res.set(http::field::allow, "GET, HEAD");
    } else if (path == "/healthz") {
        res.body() = "ok\n";
    } else if (path == "/readyz") {
        answer_readyz(ctx_, res);
    } else if (path == "/metrics") {
        const auto format = prometheus::negotiate(req[http::field::accept]);
        const bool openmetrics = format == prometheus::exposition::openmetrics;
        res.set(http::field::content_type, prometheus::content_type(format));
        ctx_.refresh_store_gauges();
        res.body() = ctx_.stats.render(ctx_.ready(), metrics_extra_, openmetrics);
        auto live = ctx_.live();
        render_certificate_expiry(live.get(), redis_certificate_expiry_, res.body());
        if (live) {
            // Which file is live: its hash as an info line, and the reload generation.
            prometheus::header(res.body(), "idemgate_config_info", "gauge",
                               "The live configuration: sha256 of the file it was loaded from.");
            prometheus::sample(res.body(), "idemgate_config_info", "sha256=\"" + live->sha256 + "\"", 1.0);
            prometheus::header(res.body(), "idemgate_config_generation", "gauge",
                               "1 at start, +1 per applied reload.");
            prometheus::sample(res.body(), "idemgate_config_generation", "", double(live->generation));
            render_fleet_metrics(live->fleets, ctx_.fleet_stats, res.body());
        }
        ctx_.route_stats.render(res.body(), openmetrics);
        if (openmetrics)
            res.body() = prometheus::to_openmetrics(res.body());
    } else if (path == "/admin" && !ctx_.boot.admin.token.empty() && store_) {
        // The console lives at /admin/ (its script and calls are relative to it). Relative, so
        // that it still leads there behind a proxy that serves the admin listener under a prefix.
        res.result(http::status::permanent_redirect);
        res.set(http::field::location, "admin/" + std::string(req.target().substr(path.size())));
        res.body() = "the console is at /admin/\n";
    } else {
        res = make_problem(base, {problems::no_route, "admin paths: /healthz, /readyz, /metrics"},
                           req.version(), true);
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
}

asio::awaitable<void> admin::session(tcp::socket socket)
{
    error_code peer_ec;
    auto peer = socket.remote_endpoint(peer_ec);
    const std::string client = peer_ec ? std::string("unknown") : peer.address().to_string();
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    std::string scratch;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.header_limit(8 * 1024);
        parser.body_limit(admin_body_limit);
        stream.expires_after(std::chrono::seconds(10));
        auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
        if (ec == http::error::body_limit) {
            // The rest of the body is never read: answered, then closed.
            auto generation = ctx_.live();
            auto base = generation ? generation->cfg.problems.type_base() : config::default_problem_base;
            auto res =
                make_problem(base, {problems::body_too_large, "an admin request's body is at most 16 KiB"},
                             parser.get().version(), false);
            res.set(http::field::date, http_date_now());
            res.prepare_payload();
            co_await write_message(stream, res, scratch, std::chrono::milliseconds(10000));
            co_await lingering_close(stream);
            co_return;
        }
        if (ec)
            break;
        const auto& req = parser.get();
        response_type res;
        if (req.target().starts_with("/admin/"))
            res = co_await answer_api(req, client);
        else
            res = answer(req);
        res.keep_alive(req.keep_alive());
        res.set(http::field::date, http_date_now());
        res.prepare_payload();
        if (req.method() == http::verb::head)
            res.body().clear(); // the head says the length of the GET's body; none is sent
        auto wec = co_await write_message(stream, res, scratch, std::chrono::milliseconds(10000));
        if (wec || !req.keep_alive())
            break;
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

// application/x-www-form-urlencoded query parameters, in order (names may repeat).
std::optional<std::vector<std::pair<std::string, std::string>>> query_params(std::string_view target)
{
    std::vector<std::pair<std::string, std::string>> out;
    auto q = target.find('?');
    if (q == std::string_view::npos)
        return out;
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        auto amp = rest.find('&');
        auto pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
        if (pair.empty())
            continue;
        auto eq = pair.find('=');
        std::string name, value;
        if (!form_decode(pair.substr(0, eq), name) ||
            !form_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), value))
            return std::nullopt;
        out.emplace_back(std::move(name), std::move(value));
    }
    return out;
}

namespace {

// Constant-time comparison of a presented bearer token with the configured one: both are
// hashed first, so neither the content nor the length leaks through timing.
bool token_matches(std::string_view presented, const std::string& expected)
{
    auto a = sha256(presented);
    auto b = sha256(expected);
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace

response_type json_answer(const boost::json::object& body, unsigned version)
{
    response_type res{http::status::ok, version};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.body() = boost::json::serialize(body);
    return res;
}

std::string_view state_name(store::record_state s)
{
    switch (s) {
    case store::record_state::in_flight: return "in_flight";
    case store::record_state::completed: return "completed";
    case store::record_state::outcome_unknown: return "outcome_unknown";
    case store::record_state::status_only: return "status_only";
    case store::record_state::tombstone: return "tombstone";
    }
    return "unknown";
}

asio::awaitable<response_type> admin::answer_api(const admin_request& req, const std::string& client)
{
    unsigned version = req.version();
    auto generation = ctx_.live();
    auto base = generation ? generation->cfg.problems.type_base() : config::default_problem_base;
    if (ctx_.boot.admin.token.empty() || !store_)
        co_return make_problem(base, {problems::no_route, "the admin API is off (set admin.token_env)"},
                               version, true);
    auto path = req.target().substr(0, req.target().find('?'));
    // The console's page, script and style need no token: they carry no data.
    if (auto file = answer_console_file(path, req.method(), version, base))
        co_return std::move(*file);
    auto auth = req[http::field::authorization];
    constexpr std::string_view bearer = "Bearer ";
    if (auth.size() <= bearer.size() || !beast::iequals(auth.substr(0, bearer.size()), bearer) ||
        !token_matches(auth.substr(bearer.size()), ctx_.boot.admin.token)) {
        auto res = make_problem(base, {problems::unauthorized, "a valid admin bearer token is required"},
                                version, true);
        res.set(http::field::www_authenticate, "Bearer realm=\"idemgate-admin\"");
        co_return res;
    }
    if (auto data = answer_console_data(ctx_, path, req.method(), version, base))
        co_return std::move(*data);
    if (path == "/admin/v1/reload") {
        if (req.method() != http::verb::post) {
            auto res = make_problem(base, {problems::method_not_allowed, "/admin/v1/reload answers POST"},
                                    version, true);
            res.set(http::field::allow, "POST");
            co_return res;
        }
        std::vector<std::string> problems_found;
        if (!reload_ || !reload_(problems_found)) {
            // 422 with every problem, each naming its key path: the old configuration is live.
            auto res =
                make_problem(base,
                             {problems::invalid_configuration,
                              "the configuration file has problems; the running configuration is kept"},
                             version, true);
            auto body = boost::json::parse(res.body()).as_object();
            boost::json::array list;
            for (const auto& p : problems_found)
                list.emplace_back(p);
            body["problems"] = std::move(list); // an RFC 9457 extension member
            res.body() = boost::json::serialize(body);
            co_return res;
        }
        response_type res{http::status::ok, version};
        res.set(http::field::content_type, "application/json");
        boost::json::object body;
        body["reloaded"] = true;
        body["generation"] = ctx_.live()->generation;
        body["sha256"] = ctx_.live()->sha256;
        res.body() = boost::json::serialize(body);
        co_return res;
    }
    if (path == "/admin/v1/shadow")
        co_return co_await answer_shadow(ctx_, *store_, req);
    if (path == "/admin/v1/held")
        co_return co_await answer_held(ctx_, *store_, req, std::string(base));
    if (path == "/admin/v1/records/resolve")
        co_return co_await answer_resolve(ctx_, *store_, req, std::string(base), client);
    if (path != "/admin/v1/records")
        co_return make_problem(
            base,
            {problems::no_route,
             "admin API paths: /admin/v1/records, /admin/v1/records/resolve, /admin/v1/held, "
             "/admin/v1/shadow, /admin/v1/config, /admin/v1/reloads, /admin/v1/upstreams, "
             "/admin/v1/reload"},
            version, true);
    co_return co_await answer_records(ctx_, *store_, req, std::string(base));
}

// Logs every change of the store's readiness (first connection, loss, recovery), so an
// operator sees "store unavailable" in the log and not only on /readyz.
asio::awaitable<void> admin::watch_store()
{
    asio::steady_timer timer(control_);
    bool was_ready = false;
    bool first = true;
    unsigned was_conditions = 0;
    for (;;) {
        bool now_ready = ctx_.backend->ready();
        if (now_ready != was_ready || first) {
            if (now_ready)
                log::info("store ready", {{"store", ctx_.backend->kind()}});
            else if (!first)
                log::error("store unavailable: guarded requests follow store.on_failure",
                           {{"store", ctx_.backend->kind()}});
            was_ready = now_ready;
            first = false;
        }
        // The other conditions (refusing, evicting, full, a command refused), as /readyz says them.
        unsigned conditions = 0;
        auto lines = ctx_.store_lines(conditions);
        conditions &= ~store_unreachable_bit;
        if (conditions != was_conditions) {
            boost::json::array said(lines.begin(), lines.end());
            if (conditions != 0)
                log::warn("store condition: /readyz names it",
                          {{"store", ctx_.backend->kind()}, {"readyz", said}});
            else
                log::info("store conditions cleared", {{"store", ctx_.backend->kind()}});
            was_conditions = conditions;
        }
        timer.expires_after(std::chrono::milliseconds(now_ready ? 250 : 20));
        auto [ec] = co_await timer.async_wait(use_tuple);
        if (ec || stopped_)
            co_return;
    }
}

} // namespace idemgate::gateway::detail
