// SPDX-License-Identifier: Apache-2.0
#pragma once
// The order-service command line.
#include <cstdint>
#include <idemgate/order_service/stream_consumer.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace idemgate::order_service {

struct service_options {
    std::string listen_host = "127.0.0.1";
    std::uint16_t listen_port = 8081; // 0 = any free port (the bound one is logged)
    std::string db_path = "order-service.db";
    bool consume = false; // true when --redis is given
    consumer_options consumer;
    unsigned io_threads = 1;
    unsigned db_threads = 4;
};

// Thrown for a bad command line; the message names the flag.
class usage_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Parses argv. Returns nullopt for --help (the caller prints usage()).
std::optional<service_options> parse_command_line(int argc, const char* const* argv);

const char* usage();

} // namespace idemgate::order_service
