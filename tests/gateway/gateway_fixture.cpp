// SPDX-License-Identifier: Apache-2.0
#include "gateway_fixture.hpp"

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace idemgate::test {

store_under_test make_store(const gateway_options& options)
{
    store_under_test store;
    const char* choice = std::getenv("IDEMGATE_TEST_STORE");
    std::string kind = choice ? choice : "memory";
    std::string& y = store.yaml;
    y = "store:\n";
    y += "  type: " + kind + "\n";
    y += "  on_failure: " + options.on_failure + "\n";
    y += options.store_extra;
    if (kind == "redis") {
        store.redis = std::make_unique<redis_server>();
        y += "  redis:\n";
        y += "    address: \"" + store.redis->address() + "\"\n";
        y += "    key_prefix: idemgate-test\n";
        y += options.redis_extra;
    } else if (kind == "cluster") {
        static std::shared_ptr<redis_cluster> shared;
        if (options.breaks_store) {
            store.cluster = std::make_shared<redis_cluster>();
        } else {
            if (!shared)
                shared = std::make_shared<redis_cluster>();
            store.cluster = shared;
        }
        static int prefix_counter = 0;
        y.replace(y.find("  type: cluster"), 15, "  type: redis");
        y += "  redis:\n";
        y += "    mode: cluster\n";
        y += "    nodes:\n";
        for (const auto& a : store.cluster->addresses())
            y += "      - \"" + a + "\"\n";
        y += options.redis_extra;
        y += "    key_prefix: idemgate-test-" + std::to_string(::getpid()) + "-" +
             std::to_string(++prefix_counter) + "\n";
    } else if (kind == "memory") {
        y += "  memory:\n";
        y += "    max_entries: " + std::to_string(options.memory_max_entries) + "\n";
    } else {
        throw std::runtime_error("IDEMGATE_TEST_STORE must be memory, redis or cluster, not " + kind);
    }
    return store;
}

std::string gateway_yaml(const store_under_test& store, std::uint16_t upstream_port, std::uint16_t dead_port,
                         const gateway_options& options)
{
    std::string y;
    y += "listen: \"${LISTEN}\"\n";
    y += "admin_listen: \"${ADMIN}\"\n";
    y += "threads: 2\n";
    y += options.access_log;
    y += options.top_level;
    y += store.yaml;

    y += "upstreams:\n";
    y += "  orders:\n";
    y += "    address: \"127.0.0.1:" + std::to_string(upstream_port) + "\"\n";
    y += "  nowhere:\n";
    y += "    address: \"127.0.0.1:" + std::to_string(dead_port) + "\"\n";

    y += "routes:\n";
    y += "  - path_prefix: \"/api/\"\n";
    y += "    upstream: orders\n";
    y += "    idempotency:\n";
    y += "      methods: [POST, PATCH]\n";
    y += "      key_header: Idempotency-Key\n";
    y += "      lock_ttl: " + options.lock_ttl + "\n";
    y += "      record_ttl: " + options.record_ttl + "\n";
    y += options.idempotency_extra;
    y += "  - path_prefix: \"/tenant/\"\n";
    y += "    upstream: orders\n";
    y += "    idempotency:\n";
    y += "      methods: [POST]\n";
    y += "      tenant_header: X-Tenant-ID\n";
    y += "  - path_prefix: \"/strict/\"\n";
    y += "    upstream: orders\n";
    y += "    idempotency:\n";
    y += "      methods: [POST]\n";
    y += "      required: true\n";
    y += "  - path_prefix: \"/down/\"\n";
    y += "    upstream: nowhere\n";
    y += "    idempotency:\n";
    y += "      methods: [POST]\n";
    y += "  - path_prefix: \"/plain/\"\n";
    y += "    upstream: orders\n";
    y += options.extra_routes;

    if (!options.limits.empty())
        y += "limits:\n" + options.limits;
    if (!options.timeouts.empty())
        y += "timeouts:\n" + options.timeouts;
    return y;
}

gateway_fixture::gateway_fixture(gateway_options options) : store(make_store(options))
{
    options_breaks_store_ = options.breaks_store;
    env_ = options.env;
    // A port that was free a moment ago and that nothing here listens on: connect is refused.
    yaml_ = gateway_yaml(store, upstream.port(), free_port(), options);
    start_gateway();
}

namespace {

} // namespace

// "listening" means the sockets are bound; a remote store may still be connecting. Ready is the
// event tests need: poll /readyz (bounded) rather than sleep.
void wait_until_ready(gateway_process& gateway)
{
    auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
        int status = 0;
        try {
            status = http_request(gateway.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
        } catch (const std::exception&) {
        }
        if (status == 200)
            break;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("idemgate /readyz did not answer 200 within 10 s (last status " +
                                     std::to_string(status) + "):\n" + gateway.process().output());
        std::this_thread::sleep_for(10ms);
    }
}

void gateway_fixture::start_gateway()
{
    gateway = std::make_unique<gateway_process>(yaml_, env_);
    wait_until_ready(*gateway);
}

std::unique_ptr<gateway_process> gateway_fixture::start_another()
{
    auto another = std::make_unique<gateway_process>(yaml_, env_);
    wait_until_ready(*another);
    return another;
}

bool poll_until(milliseconds timeout, const std::function<bool()>& pred)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(20ms); // polling for an event the gateway shows on a port
    }
    return true;
}

bool redis_store_under_test()
{
    const char* choice = std::getenv("IDEMGATE_TEST_STORE");
    return choice && (std::string(choice) == "redis" || std::string(choice) == "cluster");
}

http_response gateway_fixture::post(const std::string& path, const std::string& key, const std::string& body,
                                    std::vector<std::pair<std::string, std::string>> headers)
{
    if (!key.empty())
        headers.emplace_back("Idempotency-Key", key);
    headers.emplace_back("Content-Type", "application/json");
    return gateway_request(port(), "POST", path, headers, body);
}

bool gateway_fixture::wait_for_executions(long count, milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (upstream.executions() >= count)
            return true;
        std::this_thread::sleep_for(5ms); // polling the upstream's counter for the event
    }
    return upstream.executions() >= count;
}

http_response gateway_request(std::uint16_t port, const std::string& method, const std::string& path,
                              const std::vector<std::pair<std::string, std::string>>& headers,
                              const std::string& body)
{
    return http_request(port, method, path, headers, body, io_timeout);
}

std::string gateway_fixture::break_store()
{
    if (store.redis) {
        store.redis->stop(true);
        return "redis-server killed";
    }
    if (store.cluster) {
        if (!options_breaks_store_)
            throw std::runtime_error("break_store on the shared cluster: set gateway_options::breaks_store");
        store.cluster->stop_all();
        return "every cluster node killed";
    }
    auto filler = post("/api/orders", unique_key("filler"), "{}");
    if (filler.status != 201)
        throw std::runtime_error("break_store: filling the memory store answered " + filler.raw);
    return "memory store full (max_entries 1)";
}

boost::json::object parse_object(const std::string& text)
{
    boost::system::error_code ec;
    auto value = boost::json::parse(text, ec);
    if (ec || !value.is_object())
        return {};
    return value.as_object();
}

std::string without_fields(std::string raw, std::initializer_list<std::string_view> names)
{
    auto head_end = raw.find("\r\n\r\n");
    for (auto name : names) {
        auto at = raw.find("\r\n" + std::string(name) + ": ");
        if (at == std::string::npos || at >= head_end)
            continue;
        auto end = raw.find("\r\n", at + 2);
        raw.erase(at, end - at);
        head_end = raw.find("\r\n\r\n");
    }
    return raw;
}

bool is_problem(const http_response& res, int status)
{
    if (res.status != status || res.header("content-type").rfind("application/problem+json", 0) != 0)
        return false;
    auto problem = parse_object(res.body);
    auto* type = problem.if_contains("type");
    auto* title = problem.if_contains("title");
    auto* code = problem.if_contains("status");
    auto* detail = problem.if_contains("detail");
    return type && type->is_string() && !type->as_string().empty() && title && title->is_string() && code &&
           code->is_int64() && code->as_int64() == status && detail && detail->is_string();
}

double metric(std::uint16_t admin_port, const std::string& series)
{
    auto text = http_request(admin_port, "GET", "/metrics").body;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0)
            return std::stod(line.substr(series.size() + 1));
    return -1;
}

std::string unique_key(const std::string& stem)
{
    static std::atomic<int> counter{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

} // namespace idemgate::test
