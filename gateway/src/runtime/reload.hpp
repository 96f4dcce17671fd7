// SPDX-License-Identifier: Apache-2.0
#pragma once
// Configuration generations: the first one, made from the boot configuration, and every one a
// reload (SIGHUP, POST /admin/v1/reload) makes from the file. Control thread only.
#include "state/process.hpp"

#include <boost/asio/io_context.hpp>
#include <idemgate/config/config.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway::detail {

// A failed lookup of an upstream's names, under the key of its addresses (start, reload, --check).
std::string upstream_problem(const config::upstream_config& up, const std::string& error);

class reloader {
public:
    reloader(gateway_context& ctx, boost::asio::io_context& control) : ctx_(ctx), control_(control) {}

    // Publishes generation 1 from the boot configuration: upstream fleets resolved, TLS contexts
    // built. Throws std::runtime_error (a name that does not resolve) or config::config_error
    // (a TLS file OpenSSL refuses).
    void publish_first(const config::config& boot);

    // Reads ctx.config_path again and, if it is valid, publishes it as the next generation for
    // new requests; the restart_only settings keep their running values, with a warning naming
    // each changed key. On a problem nothing changes, and every problem is logged and returned.
    bool reload(std::string_view trigger, std::vector<std::string>& problems);

private:
    // idemgate_config_last_reload_successful and, when applied, its timestamp.
    void loaded(bool applied);

    gateway_context& ctx_;
    boost::asio::io_context& control_;
    std::string boot_text_; // the file as started: restart-only settings are compared with it
};

} // namespace idemgate::gateway::detail
