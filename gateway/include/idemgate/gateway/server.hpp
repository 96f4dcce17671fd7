// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway process: N I/O threads (one io_context each, SO_REUSEPORT listeners), an admin
// listener and signal handling on the control thread, graceful drain on SIGTERM/SIGINT.
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <string>

namespace idemgate::gateway {

// The host names of every upstream with resolve: start, looked up as start-up does (each lookup
// bounded to 2 s): one problem per upstream whose names do not resolve (idemgate --check).
std::vector<std::string> check_upstream_names(const config::config& cfg);

class server {
public:
    // `metrics_extra` appends backend-specific Prometheus lines to /metrics (may be empty).
    server(config::config cfg, std::shared_ptr<store::backend> backend,
           std::function<void(std::string&)> metrics_extra = {});
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // The file SIGHUP and POST /admin/v1/reload read again (before bind; none: reload refused).
    void set_config_path(std::string path);

    // Binds the listeners (throws std::system_error naming the address on failure).
    void bind();
    boost::asio::ip::tcp::endpoint listen_endpoint() const;
    boost::asio::ip::tcp::endpoint admin_endpoint() const;

    // Serves until SIGTERM/SIGINT (or request_stop), drains, returns the exit code (0).
    int run();

    // Begins the same drain a signal does (thread-safe).
    void request_stop();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace idemgate::gateway
