#pragma once
// What every part of the gateway shares: the configuration, the store backend, the metrics,
// the drain flag (process-wide), and one I/O thread's own resources (worker).
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/upstream_pool.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace idemgate::gateway::detail {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using request_type = http::request<http::string_body>;
using response_type = http::response<http::string_body>;

// Process-wide state, shared by every thread (fields are immutable or atomic).
struct gateway_context {
    config::config cfg;
    std::shared_ptr<store::backend> backend;
    metrics stats;
    std::atomic<bool> draining{false};
    // TLS termination on `listen` (config tls:), built at bind(); nullptr = plain HTTP.
    std::shared_ptr<boost::asio::ssl::context> listen_tls;

    bool ready() const { return !draining.load() && backend->ready(); }
};

// Everything one I/O thread owns; only touched from its io_context.
struct worker {
    boost::asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::unique_ptr<store::session> store;
    std::vector<std::unique_ptr<upstream_pool>> pools; // index = config upstream index
    std::mt19937_64 rng{std::random_device{}()};
    std::thread thread;

    // 128 random bits as 32 hex digits: the owner token of one reservation.
    std::string new_owner_token();
};

// The answer to one request plus what the access log says about it.
struct handled {
    response_type response;
    outcome result = outcome::pass_through;
    std::string tenant;
    std::string key;
    std::string principal; // credential scopes: the first 16 hex digits of the credentials' HMAC
    shadow_finding shadow = shadow_finding::none; // shadow-mode routes only
    bool request_sent = false;                    // the request was written upstream (set by forward)
    bool close_after = false;
};

// What the connection knows about the client, for X-Forwarded-* and the access log.
struct client_info {
    std::string ip;
    bool tls = false;
    // The subject (RFC 2253) of the client certificate verified against tls.client_ca_file; ""
    // without one. The seam for scopes keyed by client identity (a tenant_from: client_cert).
    std::string client_cert_subject;
};

} // namespace idemgate::gateway::detail
