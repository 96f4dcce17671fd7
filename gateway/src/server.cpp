#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/fingerprint.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/problem.hpp>
#include <idemgate/gateway/server.hpp>
#include <idemgate/gateway/upstream_pool.hpp>
#include <idemgate/gateway/wire.hpp>
#include <iterator>
#include <random>
#include <sstream>
#include <system_error>
#include <thread>

namespace idemgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// Everything one I/O thread owns; only touched from its io_context.
struct worker {
    asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::unique_ptr<store::session> store;
    std::vector<std::unique_ptr<upstream_pool>> pools; // index = config upstream index
    std::mt19937_64 rng{std::random_device{}()};
    std::thread thread;

    std::string new_owner_token()
    {
        static constexpr char hex[] = "0123456789abcdef";
        std::string token(32, '0');
        for (int half = 0; half < 2; ++half) {
            auto v = rng();
            for (int i = 0; i < 16; ++i)
                token[half * 16 + i] = hex[(v >> (i * 4)) & 0xf];
        }
        return token;
    }
};

// Counts a request as in flight from header read to response written (drain waits on it).
struct in_flight_guard {
    metrics& m;
    explicit in_flight_guard(metrics& mm) : m(mm) { m.requests_in_flight.fetch_add(1); }
    ~in_flight_guard() { m.requests_in_flight.fetch_sub(1); }
};

struct connection_guard {
    metrics& m;
    explicit connection_guard(metrics& mm) : m(mm) { m.connections_active.fetch_add(1); }
    ~connection_guard() { m.connections_active.fetch_sub(1); }
};

using request_type = http::request<http::string_body>;
using response_type = http::response<http::string_body>;

// The answer to one request plus what the access log says about it.
struct handled {
    response_type response;
    outcome result = outcome::pass_through;
    std::string tenant;
    std::string key;
    bool close_after = false;
};

bool is_bodyless_status(unsigned status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

// Sets Content-Length to the body (the gateway always re-frames; RFC 9112 6.3).
void reframe(response_type& res, bool head_request)
{
    if (is_bodyless_status(res.result_int())) {
        res.erase(http::field::content_length);
        res.body().clear();
        return;
    }
    if (head_request)
        return; // keep the upstream's Content-Length: the body was not sent
    res.content_length(res.body().size());
}

response_type replay_response(store::stored_response&& stored, unsigned version)
{
    response_type res{http::int_to_status(stored.status), version};
    if (!stored.reason.empty())
        res.reason(stored.reason);
    for (auto& h : stored.headers)
        res.insert(h.name, h.value);
    res.set("Idempotent-Replayed", "true");
    res.body() = std::move(stored.body);
    reframe(res, false);
    return res;
}

} // namespace

struct server::impl {
    config::config cfg;
    std::shared_ptr<store::backend> backend;
    std::function<void(std::string&)> metrics_extra;
    metrics stats;
    std::vector<std::vector<tcp::endpoint>> upstream_endpoints;
    std::vector<std::unique_ptr<worker>> workers;
    asio::io_context control{1};
    tcp::acceptor admin_acceptor{control};
    tcp::endpoint listen_ep;
    tcp::endpoint admin_ep;
    std::atomic<bool> draining{false};
    std::atomic<bool> drain_started{false};

    impl(config::config c, std::shared_ptr<store::backend> b, std::function<void(std::string&)> extra)
        : cfg(std::move(c)), backend(std::move(b)), metrics_extra(std::move(extra))
    {
    }

    // ---- start-up -------------------------------------------------------------------------

    static tcp::endpoint resolve_one(asio::io_context& ioc, const config::endpoint& ep, const char* what)
    {
        tcp::resolver resolver(ioc);
        error_code ec;
        auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
        if (ec || results.empty())
            throw std::system_error(ec, std::string(what) + ": cannot resolve " + ep.to_string());
        return results.begin()->endpoint();
    }

    static void open_listener(tcp::acceptor& acc, const tcp::endpoint& ep, bool reuse_port, const char* what)
    {
        error_code ec;
        acc.open(ep.protocol(), ec);
        if (!ec)
            acc.set_option(asio::socket_base::reuse_address(true), ec);
        if (!ec && reuse_port) {
            int one = 1;
            if (::setsockopt(acc.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
                ec = error_code(errno, boost::system::system_category());
        }
        if (!ec)
            acc.bind(ep, ec);
        if (!ec)
            acc.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) {
            std::ostringstream os;
            os << what << ": cannot listen on " << ep << ": " << ec.message();
            throw std::system_error(ec, os.str());
        }
    }

    void bind()
    {
        for (const auto& up : cfg.upstreams) {
            tcp::resolver resolver(control);
            error_code ec;
            auto results = resolver.resolve(up.address.host, std::to_string(up.address.port), ec);
            if (ec || results.empty())
                throw std::system_error(ec, "upstreams." + up.name + ".address: cannot resolve " +
                                                up.address.to_string());
            std::vector<tcp::endpoint> eps;
            for (const auto& r : results)
                eps.push_back(r.endpoint());
            upstream_endpoints.push_back(std::move(eps));
        }

        unsigned n = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
        tcp::endpoint ep = resolve_one(control, cfg.listen, "listen");
        for (unsigned i = 0; i < n; ++i) {
            auto w = std::make_unique<worker>();
            // The first listener may bind port 0; the others join the port it got.
            open_listener(w->acceptor, ep, true, "listen");
            if (i == 0)
                ep = w->acceptor.local_endpoint();
            w->store = backend->open_session(w->ioc.get_executor());
            for (std::size_t u = 0; u < cfg.upstreams.size(); ++u)
                w->pools.push_back(
                    std::make_unique<upstream_pool>(w->ioc.get_executor(), upstream_endpoints[u],
                                                    cfg.upstreams[u].max_idle_connections, cfg, stats));
            workers.push_back(std::move(w));
        }
        listen_ep = ep;
        open_listener(admin_acceptor, resolve_one(control, cfg.admin_listen, "admin_listen"), false,
                      "admin_listen");
        admin_ep = admin_acceptor.local_endpoint();
    }

    // ---- client connections ---------------------------------------------------------------

    asio::awaitable<void> accept_loop(worker& w)
    {
        for (;;) {
            auto [ec, socket] = co_await w.acceptor.async_accept(use_tuple);
            if (ec) {
                if (ec == asio::error::operation_aborted || !w.acceptor.is_open())
                    co_return;
                // EMFILE and friends: log, back off briefly instead of spinning.
                log::warn("accept failed", {{"error", ec.message()}});
                asio::steady_timer t(w.ioc, std::chrono::milliseconds(50));
                co_await t.async_wait(use_tuple);
                continue;
            }
            if (stats.connections_active.load() >= static_cast<std::int64_t>(cfg.limits.max_connections)) {
                stats.connections_refused.fetch_add(1);
                error_code ignored;
                socket.close(ignored);
                continue;
            }
            asio::co_spawn(w.ioc, serve_connection(w, std::move(socket)), asio::detached);
        }
    }

    // Answers a request the gateway could not read, then the connection closes.
    asio::awaitable<void> answer_and_close(beast::tcp_stream& stream, const problem& p,
                                           std::string_view detail, unsigned version)
    {
        auto res = make_problem(p, detail, version ? version : 11, false);
        std::string scratch;
        co_await write_message(stream, res, scratch, cfg.timeouts.client_write);
        stats.count(outcome::rejected);
        if (cfg.access_log) {
            boost::json::object line;
            line["ts"] = log::now_unix_ms();
            line["msg"] = "access";
            line["status"] = res.result_int();
            line["outcome"] = "rejected";
            line["detail"] = detail;
            log::write_raw_line(boost::json::serialize(line));
        }
    }

    asio::awaitable<void> serve_connection(worker& w, tcp::socket socket)
    {
        connection_guard conn(stats);
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::string client_ip;
        {
            auto remote = socket.remote_endpoint(ignored);
            if (!ignored)
                client_ip = remote.address().to_string();
        }
        beast::tcp_stream stream(std::move(socket));
        beast::flat_buffer buffer;
        std::string scratch; // rendered message heads, reused for every message on this connection

        for (;;) {
            // Wait for the first byte of the next request under the idle timeout; the header
            // timeout starts only once a request has begun.
            if (buffer.size() == 0) {
                stream.expires_after(cfg.timeouts.idle);
                auto [ec, n] = co_await stream.async_read_some(buffer.prepare(16 * 1024), use_tuple);
                if (ec)
                    break;
                buffer.commit(n);
            }

            http::request_parser<http::string_body> parser;
            parser.header_limit(static_cast<std::uint32_t>(cfg.limits.max_header_bytes));
            parser.body_limit(cfg.limits.max_request_body);
            stream.expires_after(cfg.timeouts.header_read);
            auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
            if (hec) {
                if (hec == http::error::header_limit)
                    co_await answer_and_close(stream, problems::header_too_large,
                                              "the request header exceeds limits.max_header_bytes", 11);
                else if (hec == http::error::body_limit)
                    co_await answer_and_close(stream, problems::body_too_large,
                                              "the request body exceeds limits.max_request_body", 11);
                else if (hec == beast::error::timeout)
                    co_await answer_and_close(stream, problems::request_timeout,
                                              "the request header did not arrive within timeouts.header_read",
                                              11);
                else if (hec != http::error::end_of_stream && hec != asio::error::eof &&
                         hec != asio::error::connection_reset)
                    co_await answer_and_close(stream, problems::bad_request, hec.message(), 11);
                break;
            }
            in_flight_guard guard(stats);
            auto started = clock_type::now();
            auto& header = parser.get();
            unsigned version = header.version();

            auto violation = check_request_framing(header, version, header.target());
            if (violation != framing_violation::none) {
                co_await answer_and_close(stream, problems::bad_framing, describe(violation), version);
                break;
            }
            if (!parser.is_done() && version >= 11) {
                auto expect = find_header(header, "Expect");
                if (expect.count > 0 && beast::iequals(expect.value, "100-continue")) {
                    static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
                    stream.expires_after(cfg.timeouts.client_write);
                    auto [cec, cn] =
                        co_await asio::async_write(stream, asio::buffer(cont.data(), cont.size()), use_tuple);
                    if (cec)
                        break;
                }
            }
            auto fields_before_body = std::distance(header.begin(), header.end());
            if (!parser.is_done()) {
                stream.expires_after(cfg.timeouts.body_read);
                auto [bec, bn] = co_await http::async_read(stream, buffer, parser, use_tuple);
                if (bec) {
                    if (bec == http::error::body_limit)
                        co_await answer_and_close(stream, problems::body_too_large,
                                                  "the request body exceeds limits.max_request_body",
                                                  version);
                    else if (bec == beast::error::timeout)
                        co_await answer_and_close(stream, problems::request_timeout,
                                                  "the request body did not arrive within timeouts.body_read",
                                                  version);
                    else if (bec != http::error::partial_message && bec != asio::error::eof &&
                             bec != asio::error::connection_reset)
                        co_await answer_and_close(stream, problems::bad_request, bec.message(), version);
                    break;
                }
            }
            // Beast 1.81 merges chunked trailer fields into the header: a trailer could change the
            // key, the tenant or credentials after the checks above, so any trailer is refused.
            if (std::distance(parser.get().begin(), parser.get().end()) != fields_before_body) {
                co_await answer_and_close(stream, problems::bad_framing,
                                          "chunked trailer fields are not accepted", version);
                break;
            }

            request_type req = parser.release();
            bool keep_alive = req.keep_alive() && !draining.load(std::memory_order_relaxed);
            handled h = co_await handle_request(w, req, client_ip, scratch);
            if (h.close_after)
                keep_alive = false;
            h.response.keep_alive(keep_alive);
            auto wec = co_await write_message(stream, h.response, scratch, cfg.timeouts.client_write);
            auto elapsed = clock_type::now() - started;
            stats.request_latency.observe(elapsed);
            stats.count(h.result);
            if (cfg.access_log)
                access_log(req, h, client_ip, elapsed, wec);
            if (wec || !keep_alive)
                break;
        }
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        stream.socket().close(ignored);
    }

    void access_log(const request_type& req, const handled& h, const std::string& client_ip,
                    clock_type::duration elapsed, error_code write_ec)
    {
        boost::json::object line;
        line["ts"] = log::now_unix_ms();
        line["msg"] = "access";
        line["client"] = client_ip;
        line["method"] = req.method_string();
        line["target"] = req.target();
        line["status"] = h.response.result_int();
        line["outcome"] = to_string(h.result);
        if (!h.key.empty()) {
            line["tenant"] = h.tenant;
            line["key"] = h.key;
        }
        line["latency_us"] = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
        if (write_ec)
            line["client_write_error"] = write_ec.message();
        log::write_raw_line(boost::json::serialize(line));
    }

    const config::route_config* match_route(std::string_view target) const
    {
        auto path = target.substr(0, target.find('?'));
        for (const auto& r : cfg.routes)
            if (path.substr(0, r.path_prefix.size()) == r.path_prefix)
                return &r;
        return nullptr;
    }

    // ---- one request ----------------------------------------------------------------------

    // A request the gateway answers itself with a 4xx before touching the store.
    static handled rejected(const problem& p, std::string_view detail, unsigned version)
    {
        handled h;
        h.response = make_problem(p, detail, version, true);
        h.result = outcome::rejected;
        return h;
    }

    asio::awaitable<handled> handle_request(worker& w, request_type& req, const std::string& client_ip,
                                            std::string& scratch)
    {
        handled h;
        unsigned version = req.version();
        const auto* route = match_route(req.target());
        if (!route)
            co_return rejected(problems::no_route, "no route matches this path", version);
        const auto& policy = route->idempotency;
        request_facts facts;
        facts.method = req.method_string();
        if (policy.enabled) {
            auto key = find_header(req, policy.key_header);
            facts.key_count = key.count;
            facts.key = key.value;
            if (!policy.tenant_header.empty()) {
                auto tenant = find_header(req, policy.tenant_header);
                facts.tenant_count = tenant.count;
                facts.tenant = tenant.value;
            }
        }
        switch (classify(policy, facts)) {
        case request_verdict::pass_through: {
            h.result = outcome::pass_through;
            co_await forward(w, *route, req, client_ip, h, scratch);
            co_return h;
        }
        case request_verdict::reject_missing_key:
            co_return rejected(problems::missing_key,
                               "this route requires the " + policy.key_header + " header on " +
                                   std::string(facts.method) + " requests",
                               version);
        case request_verdict::reject_invalid_key:
            co_return rejected(
                problems::invalid_key,
                policy.key_header + " must appear once, with 1 to 255 visible ASCII characters", version);
        case request_verdict::reject_missing_tenant:
            co_return rejected(problems::missing_tenant,
                               "a request with " + policy.key_header + " must carry " + policy.tenant_header,
                               version);
        case request_verdict::reject_invalid_tenant:
            co_return rejected(
                problems::invalid_tenant,
                policy.tenant_header + " must appear once, with 1 to 255 visible ASCII characters", version);
        case request_verdict::guard: break;
        }

        // Copies: forwarding may erase header lines these views point into (Connection: <name>).
        h.key = std::string(facts.key);
        h.tenant = std::string(facts.tenant);
        store::scope scope{h.tenant, h.key};
        store::record in_flight;
        in_flight.state = store::record_state::in_flight;
        in_flight.fingerprint = fingerprint(req.method_string(), req.target(), req.body());
        in_flight.owner_token = w.new_owner_token();
        in_flight.created_unix_ms = log::now_unix_ms();

        auto t0 = clock_type::now();
        store::reserve_result reserved = co_await w.store->reserve(scope, in_flight, policy.lock_ttl);
        stats.store_latency[static_cast<int>(store_op::reserve)].observe(clock_type::now() - t0);
        if (reserved.ec) {
            stats.store_errors[static_cast<int>(store_op::reserve)].fetch_add(1, std::memory_order_relaxed);
            log::warn("store reserve failed",
                      {{"error", reserved.ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
        }

        switch (decide_after_reserve(reserved, in_flight.fingerprint, cfg.store.on_failure)) {
        case reserve_action::replay:
            h.response = replay_response(std::move(reserved.existing->response), version);
            h.result = outcome::replayed;
            co_return h;
        case reserve_action::in_flight_conflict:
            h.response =
                make_problem(problems::in_flight,
                             "the first request with this key has not finished; retry later", version, true);
            h.response.set(http::field::retry_after, "1");
            h.result = outcome::conflict;
            co_return h;
        case reserve_action::fingerprint_mismatch:
            h.response =
                make_problem(problems::mismatch, "this key was first used with another method, path or body",
                             version, true, {}, policy.mismatch_status);
            h.result = outcome::mismatch;
            co_return h;
        case reserve_action::reject_store_failure:
            h.response = make_problem(problems::store_unavailable,
                                      "the request was not forwarded because its key cannot be reserved",
                                      version, true);
            h.response.set(http::field::retry_after, "1");
            h.result = outcome::store_error;
            co_return h;
        case reserve_action::pass_through_store_failure:
            stats.store_bypassed.fetch_add(1, std::memory_order_relaxed);
            h.result = outcome::pass_through;
            co_await forward(w, *route, req, client_ip, h, scratch);
            co_return h;
        case reserve_action::forward_and_record: break;
        }

        h.result = outcome::executed;
        bool answered = co_await forward(w, *route, req, client_ip, h, scratch);
        if (decide_after_upstream(answered, h.response.result_int()) == completion_action::record) {
            store::record done;
            done.state = store::record_state::completed;
            done.fingerprint = std::move(in_flight.fingerprint);
            done.owner_token = std::move(in_flight.owner_token);
            done.created_unix_ms = in_flight.created_unix_ms;
            done.response.status = h.response.result_int();
            done.response.reason = std::string(h.response.reason());
            for (const auto& f : h.response)
                if (!excluded_from_record(f.name_string()))
                    done.response.headers.push_back({std::string(f.name_string()), std::string(f.value())});
            // Move the body into the record and back: no copy of the body on the hot path.
            done.response.body = std::move(h.response.body());
            auto t1 = clock_type::now();
            auto ec = co_await w.store->complete(scope, done, policy.record_ttl);
            stats.store_latency[static_cast<int>(store_op::complete)].observe(clock_type::now() - t1);
            h.response.body() = std::move(done.response.body);
            if (ec) {
                stats.store_errors[static_cast<int>(store_op::complete)].fetch_add(1,
                                                                                   std::memory_order_relaxed);
                stats.records_lost.fetch_add(1, std::memory_order_relaxed);
                log::warn("store complete failed; the response was sent but not recorded",
                          {{"error", ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
            }
        } else {
            h.result = outcome::upstream_error;
            auto t1 = clock_type::now();
            auto ec = co_await w.store->release(scope, in_flight.owner_token);
            stats.store_latency[static_cast<int>(store_op::release)].observe(clock_type::now() - t1);
            if (ec) {
                stats.store_errors[static_cast<int>(store_op::release)].fetch_add(1,
                                                                                  std::memory_order_relaxed);
                log::warn("store release failed; the key stays locked until lock_ttl",
                          {{"error", ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
            }
        }
        co_return h;
    }

    // Forwards to the route's upstream; fills h.response. Returns true when the upstream
    // answered (any status), false when the gateway answered 502/504 itself.
    asio::awaitable<bool> forward(worker& w, const config::route_config& route, request_type& req,
                                  const std::string& client_ip, handled& h, std::string& scratch)
    {
        unsigned client_version = req.version();
        bool head = req.method() == http::verb::head;
        strip_hop_by_hop(req, true);
        auto xff = find_header(req, "X-Forwarded-For");
        if (xff.count > 0) {
            std::string joined = std::string(xff.value) + ", " + client_ip;
            req.set("X-Forwarded-For", joined);
        } else {
            req.set("X-Forwarded-For", client_ip);
        }
        req.set("X-Forwarded-Proto", "http");
        auto host = find_header(req, "Host");
        if (host.count > 0)
            req.set("X-Forwarded-Host", std::string(host.value));
        req.version(11);
        if (!req.body().empty() || req.method() == http::verb::post || req.method() == http::verb::put ||
            req.method() == http::verb::patch)
            req.content_length(req.body().size());

        upstream_result result = co_await w.pools[route.upstream_index]->exchange(req, head, scratch);
        if (result.ec) {
            bool timed_out = result.ec == make_error_code(error::upstream_timeout);
            h.response = make_problem(timed_out ? problems::gateway_timeout : problems::bad_gateway,
                                      "upstream \"" + route.upstream + "\": " + result.ec.message(),
                                      client_version, true);
            co_return false;
        }
        if (result.response.result_int() >= 500)
            stats.upstream_5xx.fetch_add(1, std::memory_order_relaxed);
        h.response = std::move(result.response);
        strip_hop_by_hop(h.response);
        h.response.version(client_version);
        reframe(h.response, head);
        co_return true;
    }

    // ---- admin ----------------------------------------------------------------------------

    bool ready() const { return !draining.load() && backend->ready(); }

    asio::awaitable<void> admin_accept_loop()
    {
        for (;;) {
            auto [ec, socket] = co_await admin_acceptor.async_accept(use_tuple);
            if (ec)
                co_return;
            asio::co_spawn(control, admin_session(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> admin_session(tcp::socket socket)
    {
        beast::tcp_stream stream(std::move(socket));
        beast::flat_buffer buffer;
        std::string scratch;
        for (;;) {
            http::request_parser<http::empty_body> parser;
            parser.header_limit(8 * 1024);
            stream.expires_after(std::chrono::seconds(10));
            auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
            if (ec)
                break;
            const auto& req = parser.get();
            response_type res{http::status::ok, req.version()};
            auto path = req.target().substr(0, req.target().find('?'));
            res.set(http::field::content_type, "text/plain; charset=utf-8");
            if (req.method() != http::verb::get && req.method() != http::verb::head) {
                res = make_problem(problems::bad_request, "the admin port answers GET only", req.version(),
                                   true);
                res.result(http::status::method_not_allowed);
                res.set(http::field::allow, "GET, HEAD");
            } else if (path == "/healthz") {
                res.body() = "ok\n";
            } else if (path == "/readyz") {
                bool ok = ready();
                res.result(ok ? http::status::ok : http::status::service_unavailable);
                res.body() =
                    ok ? "ready\n"
                       : (draining.load() ? "draining\n"
                                          : "store " + std::string(backend->kind()) + " unavailable\n");
            } else if (path == "/metrics") {
                res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
                res.body() = stats.render(ready(), metrics_extra);
            } else {
                res = make_problem(problems::no_route, "admin paths: /healthz, /readyz, /metrics",
                                   req.version(), true);
            }
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            auto wec = co_await write_message(stream, res, scratch, std::chrono::milliseconds(10000),
                                              req.method() != http::verb::head);
            if (wec || !req.keep_alive())
                break;
        }
        error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    }

    // Logs every change of the store's readiness (first connection, loss, recovery), so an
    // operator sees "store unavailable" in the log and not only on /readyz.
    asio::awaitable<void> watch_store()
    {
        asio::steady_timer timer(control);
        bool was_ready = false;
        bool first = true;
        for (;;) {
            bool now_ready = backend->ready();
            if (now_ready != was_ready || first) {
                if (now_ready)
                    log::info("store ready", {{"store", backend->kind()}});
                else if (!first)
                    log::error("store unavailable: guarded requests follow store.on_failure",
                               {{"store", backend->kind()}});
                was_ready = now_ready;
                first = false;
            }
            timer.expires_after(std::chrono::milliseconds(now_ready ? 250 : 20));
            auto [ec] = co_await timer.async_wait(use_tuple);
            if (ec || drain_started.load())
                co_return;
        }
    }

    // ---- drain ----------------------------------------------------------------------------

    void begin_drain(const char* why)
    {
        if (drain_started.exchange(true))
            return;
        draining.store(true);
        log::info("draining", {{"reason", why},
                               {"in_flight", stats.requests_in_flight.load()},
                               {"drain_timeout_ms", static_cast<std::int64_t>(cfg.timeouts.drain.count())}});
        for (auto& w : workers) {
            asio::post(w->ioc, [wp = w.get()] {
                error_code ignored;
                wp->acceptor.close(ignored);
            });
        }
        asio::co_spawn(control, wait_for_drain(), asio::detached);
    }

    asio::awaitable<void> wait_for_drain()
    {
        auto deadline = clock_type::now() + cfg.timeouts.drain;
        asio::steady_timer timer(control);
        while (stats.requests_in_flight.load() > 0 && clock_type::now() < deadline) {
            timer.expires_after(std::chrono::milliseconds(10));
            co_await timer.async_wait(use_tuple);
        }
        auto left = stats.requests_in_flight.load();
        if (left > 0)
            log::warn("drain timeout: abandoning in-flight requests (their locks expire by lock_ttl)",
                      {{"in_flight", left}});
        for (auto& w : workers)
            w->ioc.stop();
        error_code ignored;
        admin_acceptor.close(ignored);
        control.stop();
    }

    int run()
    {
        std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
        for (auto& w : workers) {
            guards.push_back(asio::make_work_guard(w->ioc));
            asio::co_spawn(w->ioc, accept_loop(*w), asio::detached);
        }
        asio::co_spawn(control, admin_accept_loop(), asio::detached);
        asio::co_spawn(control, watch_store(), asio::detached);
        asio::signal_set signals(control, SIGINT, SIGTERM);
        signals.async_wait([this](const error_code& ec, int sig) {
            if (!ec)
                begin_drain(sig == SIGINT ? "SIGINT" : "SIGTERM");
        });
        auto control_guard = asio::make_work_guard(control);
        for (auto& w : workers)
            w->thread = std::thread([wp = w.get()] { wp->ioc.run(); });

        log::info("listening", {{"listen", endpoint_string(listen_ep)},
                                {"admin_listen", endpoint_string(admin_ep)},
                                {"threads", static_cast<std::int64_t>(workers.size())},
                                {"store", backend->kind()},
                                {"version", IDEMGATE_VERSION}});
        control.run();
        for (auto& w : workers) {
            w->ioc.stop();
            if (w->thread.joinable())
                w->thread.join();
        }
        log::info("stopped", {{"in_flight", stats.requests_in_flight.load()}});
        return 0;
    }

    static std::string endpoint_string(const tcp::endpoint& ep)
    {
        return ep.address().to_string() + ":" + std::to_string(ep.port());
    }
};

server::server(config::config cfg, std::shared_ptr<store::backend> backend,
               std::function<void(std::string&)> metrics_extra)
    : impl_(std::make_unique<impl>(std::move(cfg), std::move(backend), std::move(metrics_extra)))
{
}

server::~server()
{
    for (auto& w : impl_->workers) {
        w->ioc.stop();
        if (w->thread.joinable())
            w->thread.join();
    }
}

void server::bind()
{
    impl_->bind();
}
tcp::endpoint server::listen_endpoint() const
{
    return impl_->listen_ep;
}
tcp::endpoint server::admin_endpoint() const
{
    return impl_->admin_ep;
}
int server::run()
{
    return impl_->run();
}

void server::request_stop()
{
    asio::post(impl_->control, [i = impl_.get()] { i->begin_drain("request_stop"); });
}

} // namespace idemgate::gateway
