// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admin listener (GET /healthz, /readyz, /metrics) and the store-readiness watcher. Runs
// on the control io_context, apart from the I/O threads. The admin API grows here.
#include "core/exchange.hpp"
#include "state/process.hpp"
#include "transport/listen_socket.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/fwd.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace idemgate::gateway::detail {

// A request to the admin listener: its body read whole, up to admin_body_limit (413 beyond).
using admin_request = http::request<http::string_body>;
inline constexpr std::size_t admin_body_limit = 16 * 1024;

// application/x-www-form-urlencoded query parameters of `target`, in order (names may repeat);
// nullopt when one is not valid percent-encoding.
std::optional<std::vector<std::pair<std::string, std::string>>> query_params(std::string_view target);
// A record state as the admin API names it ("in_flight", "completed", "outcome_unknown", ...).
std::string_view state_name(store::record_state s);
// 200 with `body` as application/json, not to be cached (every admin API read's answer).
response_type json_answer(const boost::json::object& body, unsigned version);

// GET /readyz: 200 "ready" or 503 ("draining", or "not ready"), then one line per store
// condition ("store redis refusing writes: ..."; under readiness.store: ignore the answer stays
// 200 and the lines are there all the same) and per store note (recent events, warnings).
void answer_readyz(const gateway_context& ctx, response_type& res);

// The notAfter (Unix time) of the first certificate in a PEM file; nullopt when unreadable.
std::optional<double> certificate_file_expiry(const std::string& path);
// idemgate_tls_certificate_expiry_timestamp_seconds{use,name}: the live generation's listener and
// upstream client certificates (`live` may be null), and the Redis client certificate's `redis`.
void render_certificate_expiry(const live_config* live, std::optional<double> redis, std::string& out);

class admin {
public:
    // `metrics_extra` appends backend-specific Prometheus lines to /metrics (may be empty).
    admin(gateway_context& ctx, boost::asio::io_context& control,
          std::function<void(std::string&)> metrics_extra);

    // Binds admin_listen (throws std::system_error naming the address on failure).
    void bind(const tcp::endpoint& ep);
    tcp::endpoint endpoint() const { return endpoint_; }

    // POST /admin/v1/reload calls this (on the control thread); false with the problems found.
    void on_reload(std::function<bool(std::vector<std::string>&)> reload) { reload_ = std::move(reload); }

    // Starts accepting and watching the store on the control context.
    void start();
    void stop();
    // True until the accept loop has returned (after stop(), once the close reached it).
    bool accepting() const noexcept { return accepting_; }

private:
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> session(tcp::socket socket);
    boost::asio::awaitable<void> watch_store();
    response_type answer(const admin_request& req);
    // The admin API (/admin/v1/...): the console's files, the bearer token, then each endpoint's
    // answer. `client`: the admin client's address, for the log of what it changed.
    boost::asio::awaitable<response_type> answer_api(const admin_request& req, const std::string& client);

    gateway_context& ctx_;
    boost::asio::io_context& control_;
    std::function<void(std::string&)> metrics_extra_;
    std::function<bool(std::vector<std::string>&)> reload_;
    tcp::acceptor acceptor_;
    tcp::endpoint endpoint_;
    std::unique_ptr<store::session> store_;          // the admin's own session, on the control thread
    std::optional<double> redis_certificate_expiry_; // store.redis.tls.cert_file's notAfter
    bool stopped_ = false;
    bool accepting_ = false;
};

} // namespace idemgate::gateway::detail
