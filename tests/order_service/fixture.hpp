// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared pieces of the order service tests: the real order-service process, JSON calls over
// real sockets, and small readers for /stats.
#include "idemgate/test/harness.hpp"

#include <boost/json.hpp>
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idemgate::order_service_test {

using namespace idemgate::test;

// build/bin/order-service with the given extra flags, listening on a free port. When `redis`
// is non-empty the stream consumer is on and the constructor also waits for "consumer_ready".
struct service_flags {
    std::string db_path;
    std::string redis; // host:port, "" = no consumer
    std::string consumer = "c1";
    long claim_idle_ms = 30000;
    bool crash_after_effect = false;
};

class order_service_process {
public:
    explicit order_service_process(const service_flags& flags);
    std::uint16_t port() const { return port_; }
    child_process& process() { return *proc_; }
    // Waits for the stream_message log line of `message_id` whose outcome is `outcome`.
    std::optional<std::string> wait_for_message(const std::string& message_id, const std::string& outcome,
                                                milliseconds timeout = 10s);

private:
    std::unique_ptr<child_process> proc_;
    std::uint16_t port_ = 0;
};

struct json_reply {
    int status = 0;
    boost::json::value body; // null when the body is not JSON
    http_response raw;
};

json_reply call(std::uint16_t port, const std::string& method, const std::string& path,
                const std::string& body = {},
                const std::vector<std::pair<std::string, std::string>>& headers = {});

// Creates an order of `total_cents` (one item) through `port`; returns its id.
std::string create_order(std::uint16_t port, std::int64_t total_cents);

// GET /stats: executions[name] (0 when absent), and the payment count.
std::int64_t executions(std::uint16_t port, const std::string& name);
std::int64_t payment_count(std::uint16_t port);

// String member of a JSON object, "" when absent.
std::string member(const boost::json::value& v, const std::string& name);

std::string payment_body(std::int64_t amount_cents, const std::string& provider_ref);

// XADD to a stream; returns the new entry ID.
std::string xadd(redis_server& redis, const std::string& stream, const std::vector<std::string>& fields);

// Number of entries pending (delivered, not acknowledged) in `group` (XPENDING summary).
long pending_count(redis_server& redis, const std::string& stream, const std::string& group);

// Polls `pending_count` (bounded: up to `timeout`) until it is `expected`; returns the last value.
long wait_pending(redis_server& redis, const std::string& stream, const std::string& group, long expected,
                  milliseconds timeout = 5s);

} // namespace idemgate::order_service_test
