// SPDX-License-Identifier: Apache-2.0
#include "gateway_fixture.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <doctest/doctest.h>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace idemgate::test {

namespace {

constexpr std::string_view store_skip_prefix = "needs IDEMGATE_TEST_STORE=";

} // namespace

store_under_test make_store(const gateway_options& options)
{
    store_under_test store;
    const std::string kind = store_kind();
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
    } else if (kind == "map") {
        // The test-only backend (IDEMGATE_TEST_BACKEND builds): in process, no section of its own.
    } else {
        throw std::runtime_error("IDEMGATE_TEST_STORE must be memory, redis, cluster or map, not " + kind);
    }
    return store;
}

std::string gateway_yaml(const store_under_test& store, std::uint16_t upstream_port, std::uint16_t dead_port,
                         const gateway_options& options)
{
    std::string y;
    // A test may give `listen` as a map in top_level (address: "${LISTEN}" and its other keys).
    if (options.top_level.rfind("listen:", 0) != 0 &&
        options.top_level.find("\nlisten:") == std::string::npos)
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

// "listening" means the sockets are bound; a remote store may still be connecting. Ready is the
// event tests need: poll /readyz (bounded) rather than sleep.
void wait_until_ready(gateway_process& gateway)
{
    int status = 0;
    const bool ready = poll_until(
        10s,
        [&] {
            try {
                status = http_request(gateway.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
            } catch (const std::exception&) {
                status = 0;
            }
            return status == 200;
        },
        10ms);
    if (!ready)
        throw std::runtime_error("idemgate /readyz did not answer 200 within 10 s (last status " +
                                 std::to_string(status) + "):\n" + gateway.process().output());
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

std::string store_kind()
{
    const char* choice = std::getenv("IDEMGATE_TEST_STORE");
    return choice && *choice ? choice : "memory";
}

bool redis_store_under_test()
{
    const auto kind = store_kind();
    return kind == "redis" || kind == "cluster";
}

needs_store::needs_store(const char* store, const char* or_store)
{
    const auto kind = store_kind();
    skip = kind != store && !(or_store && kind == or_store);
    // One copy of each reason for the life of the process: doctest keeps the pointer.
    static std::set<std::string> reasons;
    std::string text = std::string(store_skip_prefix) + store;
    if (or_store)
        text += std::string(" or ") + or_store;
    reason = reasons.insert(std::move(text)).first->c_str();
}

namespace {

// doctest's summary counts a skipped case with the cases its filters left out, and a ctest entry
// runs one suite: this listener names the cases needs_store skipped in the suites that ran, on
// stderr (stdout may be a reporter's XML).
class store_skip_listener : public doctest::IReporter {
public:
    explicit store_skip_listener(const doctest::ContextOptions&) {}
    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override
    {
        for (const auto* tc : skipped_)
            if (ran_.count(tc->m_test_suite))
                std::cerr << "[doctest] skipped with IDEMGATE_TEST_STORE=" << store_kind() << " ("
                          << tc->m_description << "): " << tc->m_name << "\n";
        std::cerr.flush();
    }
    void test_case_start(const doctest::TestCaseData& tc) override { ran_.insert(tc.m_test_suite); }
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void test_case_exception(const doctest::TestCaseException&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_assert(const doctest::AssertData&) override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData& tc) override
    {
        if (tc.m_skip && tc.m_description &&
            std::string_view(tc.m_description).starts_with(store_skip_prefix))
            skipped_.push_back(&tc);
    }

private:
    std::set<std::string> ran_;
    std::vector<const doctest::TestCaseData*> skipped_;
};

REGISTER_LISTENER("store_skips", 1, store_skip_listener);

} // namespace

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
    return poll_until(
        timeout, [&] { return upstream.executions() >= count; }, 5ms);
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

double metric_reaching(gateway_fixture& f, const std::string& series, double want)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    double value = metric(f.gateway->admin_port(), series);
    while (value < want && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        value = metric(f.gateway->admin_port(), series);
    }
    return value;
}

std::string unique_key(const std::string& stem)
{
    static std::atomic<int> counter{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

} // namespace idemgate::test
