// SPDX-License-Identifier: Apache-2.0
#include <charconv>
#include <idemgate/order_service/options.hpp>
#include <string_view>
#include <unistd.h>

namespace idemgate::order_service {
namespace {

long long parse_number(std::string_view flag, std::string_view value, long long min, long long max)
{
    long long n = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || ptr != value.data() + value.size() || n < min || n > max)
        throw usage_error(std::string(flag) + ": \"" + std::string(value) + "\" is not a number in [" +
                          std::to_string(min) + ", " + std::to_string(max) + "]");
    return n;
}

void parse_host_port(std::string_view flag, std::string_view value, std::string& host, std::uint16_t& port)
{
    auto colon = value.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
        throw usage_error(std::string(flag) + ": \"" + std::string(value) + "\" is not host:port");
    host = std::string(value.substr(0, colon));
    port = static_cast<std::uint16_t>(parse_number(flag, value.substr(colon + 1), 0, 65535));
}

} // namespace

const char* usage()
{
    return "usage: order-service [options]\n"
           "  --listen HOST:PORT      HTTP listen address (default 127.0.0.1:8081; port 0 = any free port)\n"
           "  --db PATH               SQLite database file (default order-service.db)\n"
           "  --redis HOST:PORT       Redis for the payment event stream (omit: no stream consumer)\n"
           "  --stream NAME           stream key (default payments)\n"
           "  --group NAME            consumer group (default order-service)\n"
           "  --consumer NAME         consumer name (default order-service-<pid>)\n"
           "  --claim-idle-ms N       XAUTOCLAIM entries pending longer than N ms (default 30000)\n"
           "  --io-threads N          HTTP I/O threads (default 1)\n"
           "  --db-threads N          threads running handlers against SQLite (default 4)\n"
           "  --crash-after-effect    test hook: exit(1) after the first committed stream effect, before "
           "XACK\n"
           "  --help\n";
}

std::optional<service_options> parse_command_line(int argc, const char* const* argv)
{
    service_options o;
    o.consumer.consumer = "order-service-" + std::to_string(::getpid());
    for (int i = 1; i < argc; ++i) {
        std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h")
            return std::nullopt;
        if (flag == "--crash-after-effect") {
            o.consumer.crash_after_effect = true;
            continue;
        }
        if (i + 1 >= argc)
            throw usage_error(std::string(flag) + ": missing value (or unknown flag)");
        std::string_view value = argv[++i];
        if (flag == "--listen")
            parse_host_port(flag, value, o.listen_host, o.listen_port);
        else if (flag == "--db")
            o.db_path = std::string(value);
        else if (flag == "--redis") {
            parse_host_port(flag, value, o.consumer.redis_host, o.consumer.redis_port);
            o.consume = true;
        } else if (flag == "--stream")
            o.consumer.stream = std::string(value);
        else if (flag == "--group")
            o.consumer.group = std::string(value);
        else if (flag == "--consumer")
            o.consumer.consumer = std::string(value);
        else if (flag == "--claim-idle-ms")
            o.consumer.claim_min_idle = std::chrono::milliseconds(parse_number(flag, value, 1, 86400000));
        else if (flag == "--io-threads")
            o.io_threads = static_cast<unsigned>(parse_number(flag, value, 1, 64));
        else if (flag == "--db-threads")
            o.db_threads = static_cast<unsigned>(parse_number(flag, value, 1, 64));
        else
            throw usage_error("unknown flag " + std::string(flag));
        if (value.empty())
            throw usage_error(std::string(flag) + ": empty value");
    }
    return o;
}

} // namespace idemgate::order_service
