// Config loading: the value parsers as tables, a full file, defaults, and one case per kind of
// problem checking the exact message and key path an operator sees (issue 2).
#include "idemgate/config/config.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace cfg = idemgate::config;
using namespace std::chrono_literals;

namespace {

// The smallest valid file; cases append the block they are about.
const std::string minimal = R"(
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
)";

const char* no_env(const char*)
{
    return nullptr;
}

const char* fake_env(const char* name)
{
    return std::string(name) == "REDIS_PASSWORD" ? "s3cret" : nullptr;
}

// The problems parse() reports for `yaml`; fails the test if it loads cleanly.
std::vector<std::string> problems_of(const std::string& yaml, const char* (*getenv_fn)(const char*) = no_env)
{
    try {
        cfg::parse(yaml, getenv_fn);
    } catch (const cfg::config_error& e) {
        return e.problems();
    }
    FAIL("config loaded although it should not have:\n" << yaml);
    return {};
}

std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& line : lines)
        out += (out.empty() ? "" : "\n") + line;
    return out;
}

// A file under the temp directory removed at scope exit.
struct temp_file {
    std::filesystem::path path;
    explicit temp_file(const std::string& text)
        : path(std::filesystem::temp_directory_path() /
               ("idemgate_config_test_" + std::to_string(::getpid()) + ".yaml"))
    {
        std::ofstream(path) << text;
    }
    ~temp_file() { std::filesystem::remove(path); }
};

} // namespace

TEST_CASE("parse_duration accepts an integer with ms, s, m or h")
{
    struct row {
        const char* text;
        cfg::duration expected;
    };
    const row rows[] = {
        {"0ms", 0ms},   {"250ms", 250ms},
        {"1s", 1000ms}, {"30s", 30s},
        {"5m", 5min},   {"24h", 24h},
        {"007s", 7s},   {"9223372036854775807ms", cfg::duration{9223372036854775807LL}},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_duration(r.text);
        REQUIRE(value.has_value());
        CHECK(*value == r.expected);
    }
}

TEST_CASE("parse_duration refuses malformed, negative, fractional and overflowing text")
{
    const char* rows[] = {"",
                          "s",
                          "30",
                          "-5s",
                          "+5s",
                          "1.5s",
                          "5 s",
                          " 5s",
                          "5s ",
                          "5S",
                          "5sec",
                          "5w",
                          "1h30m",
                          "0x10s",
                          "9223372036854775808ms",
                          "2562047788015216h",
                          "99999999999999999999999s"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_duration(text).has_value());
    }
}

TEST_CASE("parse_size accepts B, KiB, MiB, GiB and bare bytes")
{
    struct row {
        const char* text;
        std::size_t expected;
    };
    const row rows[] = {
        {"0", 0},
        {"512", 512},
        {"512B", 512},
        {"16KiB", 16 * 1024},
        {"1MiB", 1024 * 1024},
        {"8MiB", 8 * 1024 * 1024},
        {"1GiB", 1024ull * 1024 * 1024},
        {"18446744073709551615", 18446744073709551615ull},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_size(r.text);
        REQUIRE(value.has_value());
        CHECK(*value == r.expected);
    }
}

TEST_CASE("parse_size refuses other units, signs, fractions and overflow")
{
    const char* rows[] = {"",
                          "B",
                          "MiB",
                          "1MB",
                          "1KB",
                          "1k",
                          "1mib",
                          "1 MiB",
                          "-1",
                          "+1",
                          "1.5MiB",
                          "1TiB",
                          "0x10",
                          "18446744073709551616",
                          "17179869184GiB"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_size(text).has_value());
    }
}

TEST_CASE("parse_endpoint splits host and port")
{
    struct row {
        const char* text;
        const char* host;
        std::uint16_t port;
    };
    const row rows[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"localhost:0", "localhost", 0},
        {"redis.internal:65535", "redis.internal", 65535},
        {"[::1]:80", "::1", 80},
        {"my_host-1:6379", "my_host-1", 6379},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_endpoint(r.text);
        REQUIRE(value.has_value());
        CHECK(value->host == r.host);
        CHECK(value->port == r.port);
    }
}

TEST_CASE("parse_endpoint refuses a missing host or port, bad ports and bare IPv6")
{
    const char* rows[] = {"",           "localhost",  ":8080",    "localhost:",
                          "host:65536", "host:70000", "host:-1",  "host:+80",
                          "host:0x50",  "host:80a",   "::1:80",   "[::1]80",
                          "[::1]",      "[]:80",      "ho st:80", "host:99999999999999999999999",
                          "host/x:80"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_endpoint(text).has_value());
    }
}

TEST_CASE("a config with every key set loads every value")
{
    auto c = cfg::parse(R"(
listen: "0.0.0.0:18080"
admin_listen: "127.0.0.1:0"
threads: 4
access_log: false
store:
  type: redis
  on_failure: pass_through
  redis:
    address: "redis.internal:6380"
    password_env: REDIS_PASSWORD
    db: 3
    key_prefix: "gw-test"
    command_timeout: 100ms
    connect_timeout: 2s
    reconnect_backoff_max: 1m
  memory:
    max_entries: 42
    max_bytes: 64MiB
upstreams:
  orders: { address: "127.0.0.1:8081", max_idle_connections: 8 }
  billing:
    address: "billing:9000"
routes:
  - path_prefix: "/api/"
    upstream: orders
    idempotency:
      methods: [post, Put, DELETE]
      key_header: X-Request-Key
      required: true
      lock_ttl: 45s
      record_ttl: 2h
      tenant_header: X-Tenant-ID
      mismatch_status: 422
  - path_prefix: /billing/
    upstream: billing
limits:
  max_request_body: 2MiB
  max_response_body: 1GiB
  max_header_bytes: 8KiB
  max_connections: 500
timeouts:
  header_read: 5s
  body_read: 6s
  idle: 7s
  client_write: 8s
  upstream_connect: 900ms
  upstream_response: 10s
  drain: 0s
)",
                        fake_env);

    CHECK(c.listen.host == "0.0.0.0");
    CHECK(c.listen.port == 18080);
    CHECK(c.admin_listen.to_string() == "127.0.0.1:0");
    CHECK(c.threads == 4);
    CHECK(c.access_log == false);

    CHECK(c.store.type == cfg::store_type::redis);
    CHECK(c.store.on_failure == cfg::failure_mode::pass_through);
    CHECK(c.store.redis.address.to_string() == "redis.internal:6380");
    CHECK(c.store.redis.password_env == "REDIS_PASSWORD");
    CHECK(c.store.redis.password == "s3cret");
    CHECK(c.store.redis.db == 3);
    CHECK(c.store.redis.key_prefix == "gw-test");
    CHECK(c.store.redis.command_timeout == 100ms);
    CHECK(c.store.redis.connect_timeout == 2s);
    CHECK(c.store.redis.reconnect_backoff_max == 1min);
    CHECK(c.store.memory.max_entries == 42);
    CHECK(c.store.memory.max_bytes == 64u * 1024 * 1024);

    REQUIRE(c.upstreams.size() == 2);
    CHECK(c.upstreams[0].name == "orders");
    CHECK(c.upstreams[0].address.to_string() == "127.0.0.1:8081");
    CHECK(c.upstreams[0].max_idle_connections == 8);
    CHECK(c.upstreams[1].name == "billing");
    CHECK(c.upstreams[1].address.to_string() == "billing:9000");
    CHECK(c.upstreams[1].max_idle_connections == 64);

    REQUIRE(c.routes.size() == 2);
    const auto& api = c.routes[0];
    CHECK(api.path_prefix == "/api/");
    CHECK(api.upstream == "orders");
    CHECK(api.upstream_index == 0);
    CHECK(api.idempotency.enabled);
    CHECK(api.idempotency.methods == std::vector<std::string>{"POST", "PUT", "DELETE"});
    CHECK(api.idempotency.key_header == "X-Request-Key");
    CHECK(api.idempotency.required);
    CHECK(api.idempotency.lock_ttl == 45s);
    CHECK(api.idempotency.record_ttl == 2h);
    CHECK(api.idempotency.tenant_header == "X-Tenant-ID");
    CHECK(api.idempotency.mismatch_status == 422);
    const auto& billing = c.routes[1];
    CHECK(billing.path_prefix == "/billing/");
    CHECK(billing.upstream_index == 1);
    CHECK_FALSE(billing.idempotency.enabled);

    CHECK(c.limits.max_request_body == 2 * 1024 * 1024);
    CHECK(c.limits.max_response_body == 1024ull * 1024 * 1024);
    CHECK(c.limits.max_header_bytes == 8 * 1024);
    CHECK(c.limits.max_connections == 500);

    CHECK(c.timeouts.header_read == 5s);
    CHECK(c.timeouts.body_read == 6s);
    CHECK(c.timeouts.idle == 7s);
    CHECK(c.timeouts.client_write == 8s);
    CHECK(c.timeouts.upstream_connect == 900ms);
    CHECK(c.timeouts.upstream_response == 10s);
    CHECK(c.timeouts.drain == 0ms);
}

TEST_CASE("access_log takes a boolean or a map; request_id_header a header name or \"\"")
{
    auto d = cfg::parse(minimal, no_env);
    CHECK(d.access_log);
    CHECK(d.access_log_options.queue_lines == 65536);
    CHECK(d.access_log_options.batch_bytes == 64 * 1024);
    CHECK(d.access_log_options.flush_interval == 100ms);
    CHECK(d.request_id_header == "X-Request-Id");

    auto m = cfg::parse(minimal + "access_log:\n  enabled: false\n  queue_lines: 10\n  batch_bytes: 2KiB\n"
                                  "  flush_interval: 5ms\nrequest_id_header: \"\"\n",
                        no_env);
    CHECK_FALSE(m.access_log);
    CHECK(m.access_log_options.queue_lines == 10);
    CHECK(m.access_log_options.batch_bytes == 2048);
    CHECK(m.access_log_options.flush_interval == 5ms);
    CHECK(m.request_id_header.empty());

    auto partial =
        cfg::parse(minimal + "access_log:\n  queue_lines: 7\nrequest_id_header: X-Correlation-ID\n", no_env);
    CHECK(partial.access_log); // enabled unless said otherwise
    CHECK(partial.access_log_options.queue_lines == 7);
    CHECK(partial.request_id_header == "X-Correlation-ID");
}

TEST_CASE("absent keys take the documented defaults")
{
    auto c = cfg::parse(minimal, no_env);
    const cfg::config d;

    CHECK(c.listen.to_string() == "127.0.0.1:8080");
    CHECK(c.admin_listen.to_string() == "127.0.0.1:9090");
    CHECK(c.threads == 0);
    CHECK(c.access_log);
    CHECK(c.store.type == cfg::store_type::memory);
    CHECK(c.store.on_failure == cfg::failure_mode::reject);
    CHECK(c.store.redis.address.to_string() == "127.0.0.1:6379");
    CHECK(c.store.redis.password_env.empty());
    CHECK(c.store.redis.password.empty());
    CHECK(c.store.redis.db == 0);
    CHECK(c.store.redis.key_prefix == "idemgate");
    CHECK(c.store.redis.command_timeout == 250ms);
    CHECK(c.store.redis.connect_timeout == 1s);
    CHECK(c.store.redis.reconnect_backoff_max == 2s);
    CHECK(c.store.memory.max_entries == 100000);
    CHECK(c.store.memory.max_bytes == 256u * 1024 * 1024);
    REQUIRE(c.upstreams.size() == 1);
    CHECK(c.upstreams[0].max_idle_connections == 64);
    REQUIRE(c.routes.size() == 1);
    CHECK_FALSE(c.routes[0].idempotency.enabled);
    CHECK(c.limits.max_request_body == 1024 * 1024);
    CHECK(c.limits.max_response_body == 8 * 1024 * 1024);
    CHECK(c.limits.max_header_bytes == 16 * 1024);
    CHECK(c.limits.max_connections == 10000);
    CHECK(c.timeouts.header_read == d.timeouts.header_read);
    CHECK(c.timeouts.body_read == d.timeouts.body_read);
    CHECK(c.timeouts.idle == d.timeouts.idle);
    CHECK(c.timeouts.client_write == d.timeouts.client_write);
    CHECK(c.timeouts.upstream_connect == d.timeouts.upstream_connect);
    CHECK(c.timeouts.upstream_response == d.timeouts.upstream_response);
    CHECK(c.timeouts.drain == 30s);
}

TEST_CASE("an empty idempotency block turns idempotency on with the default settings")
{
    auto c = cfg::parse(R"(
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
    idempotency: {}
)",
                        no_env);
    const auto& idem = c.routes[0].idempotency;
    CHECK(idem.enabled);
    CHECK(idem.methods == std::vector<std::string>{"POST", "PATCH"});
    CHECK(idem.key_header == "Idempotency-Key");
    CHECK_FALSE(idem.required);
    CHECK(idem.lock_ttl == 30s);
    CHECK(idem.record_ttl == 24h);
    CHECK(idem.tenant_header.empty());
    CHECK(idem.mismatch_status == 409);
}

TEST_CASE("the shipped example file loads")
{
    auto c = cfg::load_file(IDEMGATE_SOURCE_DIR "/config/idemgate.example.yaml");
    CHECK(c.listen.to_string() == "127.0.0.1:8080");
    CHECK(c.admin_listen.to_string() == "127.0.0.1:9090");
    CHECK(c.store.type == cfg::store_type::redis);
    CHECK(c.store.redis.address.to_string() == "127.0.0.1:6379");
    REQUIRE(c.upstreams.size() == 1);
    CHECK(c.upstreams[0].name == "orders");
    CHECK(c.upstreams[0].address.to_string() == "127.0.0.1:8081");
    REQUIRE(c.routes.size() == 1);
    CHECK(c.routes[0].path_prefix == "/api/");
    CHECK(c.routes[0].idempotency.enabled);
    CHECK(c.routes[0].idempotency.methods == std::vector<std::string>{"POST", "PATCH"});
    CHECK(c.routes[0].idempotency.tenant_header == "X-Tenant-ID");
    CHECK(c.routes[0].idempotency.record_ttl == 24h);
    CHECK(c.limits.max_request_body == 1024 * 1024);
}

TEST_CASE("config_error's message is every problem, one per line")
{
    cfg::config_error e({"a: first", "b: second"});
    CHECK(std::string(e.what()) == "a: first\nb: second");
    CHECK(e.problems().size() == 2);
}

// One row per kind of problem: the YAML and the exact message the operator gets.
TEST_CASE("each kind of config problem names its key path")
{
    struct row {
        std::string name;
        std::string yaml;
        std::string problem;
    };
    const std::string route_head = R"(
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
)";
    const row rows[] = {
        {"unknown key at the top", minimal + "listne: \"127.0.0.1:1\"\n", "listne: unknown key"},
        {"unknown key nested", minimal + "store:\n  typo: 1\n", "store.typo: unknown key"},
        {"unknown key deep", minimal + "store:\n  redis:\n    adress: \"h:1\"\n",
         "store.redis.adress: unknown key"},
        {"unknown key in a route", route_head + "    idempotency:\n      record_tll: 1h\n",
         "routes[0].idempotency.record_tll: unknown key"},
        {"password in the file", minimal + "store:\n  redis:\n    password: hunter2\n",
         "store.redis.password: unknown key"},
        {"duplicate key", minimal + "threads: 1\nthreads: 2\n", "threads: duplicate key"},
        {"map where a scalar belongs", minimal + "listen: { host: a }\n",
         "listen: expected an endpoint (host:port), got a map"},
        {"list where a map belongs", minimal + "store: [memory]\n", "store: expected a map, got a list"},
        {"scalar where a list belongs", "upstreams:\n  orders: { address: \"h:1\" }\nroutes: /api/\n",
         "routes: expected a list, got a scalar"},
        {"list where a duration belongs", minimal + "timeouts:\n  idle: [1s]\n",
         "timeouts.idle: expected a duration, got a list"},
        {"empty value", minimal + "access_log:\n", "access_log: expected a boolean, got nothing"},
        {"bad duration", route_head + "    idempotency:\n      record_ttl: 24x\n",
         "routes[0].idempotency.record_ttl: \"24x\" is not a duration"},
        {"duration without a unit", minimal + "timeouts:\n  idle: 30\n",
         "timeouts.idle: \"30\" is not a duration"},
        {"zero ttl", route_head + "    idempotency:\n      lock_ttl: 0s\n",
         "routes[0].idempotency.lock_ttl: must be greater than 0"},
        {"zero timeout", minimal + "timeouts:\n  header_read: 0ms\n",
         "timeouts.header_read: must be greater than 0"},
        {"bad size", minimal + "limits:\n  max_request_body: 1MB\n",
         "limits.max_request_body: \"1MB\" is not a size (use B, KiB, MiB, GiB)"},
        {"zero header limit", minimal + "limits:\n  max_header_bytes: 0\n",
         "limits.max_header_bytes: must be greater than 0"},
        {"port out of range", minimal + "listen: \"127.0.0.1:70000\"\n",
         "listen: port 70000 out of range (0-65535)"},
        {"endpoint without a port", minimal + "admin_listen: localhost\n",
         "admin_listen: \"localhost\" is not an endpoint (use host:port)"},
        {"endpoint with a named port", minimal + "store:\n  redis:\n    address: \"h:redis\"\n",
         "store.redis.address: \"h:redis\" is not an endpoint (the port must be a decimal number)"},
        {"bare IPv6", minimal + "listen: \"::1:80\"\n",
         "listen: \"::1:80\" is not an endpoint (write an IPv6 address as [addr]:port)"},
        {"bad boolean", minimal + "access_log: yes\n",
         "access_log: \"yes\" is not a boolean (use true or false)"},
        {"threads out of range", minimal + "threads: 257\n", "threads: 257 out of range (0-256)"},
        {"access_log map: unknown key", minimal + "access_log:\n  queue: 5\n",
         "access_log.queue: unknown key"},
        {"access_log map: zero queue", minimal + "access_log:\n  queue_lines: 0\n",
         "access_log.queue_lines: 0 out of range (1-16777216)"},
        {"access_log map: zero batch", minimal + "access_log:\n  batch_bytes: 0\n",
         "access_log.batch_bytes: must be greater than 0"},
        {"access_log map: huge batch", minimal + "access_log:\n  batch_bytes: 1GiB\n",
         "access_log.batch_bytes: must be at most 16MiB"},
        {"access_log map: zero flush interval", minimal + "access_log:\n  flush_interval: 0ms\n",
         "access_log.flush_interval: must be greater than 0"},
        {"access_log list", minimal + "access_log: [true]\n", "access_log: expected a boolean, got a list"},
        {"request id header not a name", minimal + "request_id_header: \"X Request\"\n",
         "request_id_header: \"X Request\" is not a header name"},
        {"negative integer", minimal + "threads: -1\n", "threads: -1 out of range (0-256)"},
        {"not an integer", minimal + "threads: four\n", "threads: \"four\" is not an integer"},
        {"db out of range", minimal + "store:\n  redis:\n    db: 16\n",
         "store.redis.db: 16 out of range (0-15)"},
        {"zero max_entries", minimal + "store:\n  memory:\n    max_entries: 0\n",
         "store.memory.max_entries: 0 out of range (1-18446744073709551615)"},
        {"zero max_connections", minimal + "limits:\n  max_connections: 0\n",
         "limits.max_connections: 0 out of range (1-18446744073709551615)"},
        {"unknown store type", minimal + "store:\n  type: mysql\n",
         "store.type: \"mysql\" is not a store type (use memory or redis)"},
        {"unknown failure mode", minimal + "store:\n  on_failure: retry\n",
         "store.on_failure: \"retry\" is not a failure mode (use reject or pass_through)"},
        {"empty key prefix", minimal + "store:\n  redis:\n    key_prefix: \"\"\n",
         "store.redis.key_prefix: must not be empty"},
        {"key prefix with a space", minimal + "store:\n  redis:\n    key_prefix: \"a b\"\n",
         "store.redis.key_prefix: \"a b\" must not contain whitespace"},
        {"unknown upstream",
         "upstreams:\n  orders: { address: \"h:1\" }\nroutes:\n  - { path_prefix: /a/, upstream: orders }\n"
         "  - { path_prefix: /b/, upstream: billing }\n",
         "routes[1].upstream: unknown upstream \"billing\""},
        {"bad mismatch_status", route_head + "    idempotency:\n      mismatch_status: 418\n",
         "routes[0].idempotency.mismatch_status: 418 is not allowed (use 409 or 422)"},
        {"path_prefix without a slash",
         "upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - { path_prefix: api, upstream: o }\n",
         "routes[0].path_prefix: \"api\" must start with '/'"},
        {"missing path_prefix", "upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - { upstream: o }\n",
         "routes[0].path_prefix: required key is missing"},
        {"missing route upstream", "upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - { path_prefix: / }\n",
         "routes[0].upstream: required key is missing"},
        {"missing upstream address",
         "upstreams:\n  o: { max_idle_connections: 1 }\nroutes:\n  - { path_prefix: /, upstream: o }\n",
         "upstreams.o.address: required key is missing (or addresses: a list of host:port)"},
        {"no routes", "upstreams:\n  o: { address: \"h:1\" }\n", "routes: at least one route is required"},
        {"empty methods", route_head + "    idempotency:\n      methods: []\n",
         "routes[0].idempotency.methods: must not be empty"},
        {"bad method", route_head + "    idempotency:\n      methods: [POST, \"PO ST\"]\n",
         "routes[0].idempotency.methods[1]: \"PO ST\" is not an HTTP method"},
        {"bad header name", route_head + "    idempotency:\n      key_header: \"Idempotency Key\"\n",
         "routes[0].idempotency.key_header: \"Idempotency Key\" is not a header name"},
        {"route that is not a map", "upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - /api/\n",
         "routes[0]: expected a map, got a scalar"},
        {"document that is not a map", "just text\n", "config: expected a map, got a scalar"},
        {"password env var unset", minimal + "store:\n  redis:\n    password_env: NO_SUCH_VAR\n",
         "store.redis.password_env: environment variable \"NO_SUCH_VAR\" is not set"},
    };
    for (const auto& r : rows) {
        INFO(r.name);
        // Joined, so a failure prints every problem reported; exactly one is expected.
        CHECK(joined(problems_of(r.yaml)) == r.problem);
    }
}

TEST_CASE("routes without any upstream report both the missing upstreams and the unknown name")
{
    auto problems = problems_of("routes:\n  - { path_prefix: /, upstream: orders }\n");
    CHECK(joined(problems) == "upstreams: at least one upstream is required\n"
                              "routes[0].upstream: unknown upstream \"orders\"");
}

TEST_CASE("every problem in a file is reported at once")
{
    auto problems = problems_of(R"(
listen: "127.0.0.1:70000"
threads: lots
store:
  typo: 1
  redis:
    password_env: MISSING_PASSWORD
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: billing
    idempotency:
      record_ttl: 24x
      mismatch_status: 500
limits:
  max_request_body: 1MB
)");
    const std::vector<std::string> expected = {
        "listen: port 70000 out of range (0-65535)",
        "threads: \"lots\" is not an integer",
        "store.typo: unknown key",
        "store.redis.password_env: environment variable \"MISSING_PASSWORD\" is not set",
        "routes[0].upstream: unknown upstream \"billing\"",
        "routes[0].idempotency.record_ttl: \"24x\" is not a duration",
        "routes[0].idempotency.mismatch_status: 500 is not allowed (use 409 or 422)",
        "limits.max_request_body: \"1MB\" is not a size (use B, KiB, MiB, GiB)",
    };
    CHECK(joined(problems) == joined(expected));

    try {
        cfg::parse("listen: \"h:70000\"\nthreads: lots\n", no_env);
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        CHECK(std::string(e.what()) == "listen: port 70000 out of range (0-65535)\n"
                                       "threads: \"lots\" is not an integer\n"
                                       "routes: at least one route is required");
    }
}

TEST_CASE("a missing file is a config_error naming the path")
{
    const std::string path = "/nonexistent/idemgate-config-test.yaml";
    try {
        cfg::load_file(path);
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        CHECK(joined(e.problems()) == path + ": cannot read file");
    }
}

TEST_CASE("a directory is not a readable config file")
{
    auto dir = std::filesystem::temp_directory_path().string();
    try {
        cfg::load_file(dir);
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        CHECK(joined(e.problems()) == dir + ": cannot read file");
    }
}

TEST_CASE("a YAML syntax error names the file, line and column")
{
    temp_file file("listen: \"127.0.0.1:8080\"\nroutes: [\n  - a\n");
    try {
        cfg::load_file(file.path.string());
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        REQUIRE(e.problems().size() == 1);
        CHECK(e.problems()[0].rfind(file.path.string() + ": YAML syntax error at line 3, column ", 0) == 0);
    }

    try {
        cfg::parse("threads: 1\n  bad: indent\n", no_env);
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        REQUIRE(e.problems().size() == 1);
        CHECK(e.problems()[0].rfind("config: YAML syntax error at line 2, column ", 0) == 0);
    }
}

TEST_CASE("a file that loads cleanly through load_file resolves the password from the environment")
{
    // load_file uses the real environment: set a variable only this process sees.
    ::setenv("IDEMGATE_CONFIG_TEST_PASSWORD", "from-env", 1);
    temp_file file(minimal +
                   "store:\n  type: redis\n  redis:\n    password_env: IDEMGATE_CONFIG_TEST_PASSWORD\n");
    auto c = cfg::load_file(file.path.string());
    ::unsetenv("IDEMGATE_CONFIG_TEST_PASSWORD");
    CHECK(c.store.type == cfg::store_type::redis);
    CHECK(c.store.redis.password == "from-env");
}

TEST_CASE("warnings name every guarded route whose lock_ttl does not outlast the upstream deadlines")
{
    auto base = std::string(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
timeouts:
  upstream_connect: 2s
  upstream_response: 10s
routes:
  - path_prefix: "/a/"
    upstream: orders
    idempotency: { lock_ttl: 15s }
  - path_prefix: "/b/"
    upstream: orders
    idempotency: { lock_ttl: 14s }
  - path_prefix: "/c/"
    upstream: orders
)");
    auto c = idemgate::config::parse(base);
    auto w = idemgate::config::warnings(c);
    REQUIRE(w.size() == 1);
    CHECK(w[0].starts_with("routes[1].idempotency.lock_ttl: 14000ms"));
    // The defaults are consistent with each other.
    auto defaults = idemgate::config::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency: {}
)");
    CHECK(idemgate::config::warnings(defaults).empty());
}

TEST_CASE("scope and fingerprint options parse, and their errors name the key path")
{
    static const char* secret_env = "IDEMGATE_UNIT_SECRET";
    auto getenv_fn = [](const char* name) -> const char* {
        if (std::string_view(name) == "IDEMGATE_UNIT_SECRET")
            return "0123456789abcdef0123456789abcdef";
        if (std::string_view(name) == "IDEMGATE_SHORT_SECRET")
            return "short";
        return nullptr;
    };
    (void)secret_env;
    auto c = idemgate::config::parse(R"(store:
  key_secret_env: IDEMGATE_UNIT_SECRET
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      record_ttl: 7d
      credential_headers: [Authorization, X-Api-Key]
      mode: shadow
      expose_expiry: true
      fingerprint:
        query: false
        headers: [Content-Type]
        ignore_json_fields: ["/client_sent_at", "/a~1b"]
)",
                                     getenv_fn);
    const auto& idem = c.routes[0].idempotency;
    CHECK(c.store.key_secret == "0123456789abcdef0123456789abcdef");
    CHECK(idem.record_ttl == std::chrono::hours(7 * 24));
    CHECK(idem.credential_headers == std::vector<std::string>{"Authorization", "X-Api-Key"});
    CHECK(idem.mode == idemgate::config::route_mode::shadow);
    CHECK(idem.expose_expiry);
    CHECK_FALSE(idem.fingerprint.query);
    CHECK(idem.fingerprint.headers == std::vector<std::string>{"Content-Type"});
    CHECK(idem.fingerprint.json == idemgate::config::json_mode::canonical); // implied by ignore_json_fields
    CHECK(idem.fingerprint.ignore_json_fields.size() == 2);

    auto problems_of = [&](const std::string& yaml) {
        try {
            idemgate::config::parse(yaml, getenv_fn);
        } catch (const idemgate::config::config_error& e) {
            std::string all;
            for (const auto& p : e.problems())
                all += p + "\n";
            return all;
        }
        return std::string();
    };
    auto bad = problems_of(R"(store:
  key_secret_env: IDEMGATE_SHORT_SECRET
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      credential_headers: [Authorization, authorization, "bad header"]
      mode: loud
      fingerprint: { json: pretty, ignore_json_fields: ["client_sent_at", "/x~2"], headers: notalist }
)");
    CHECK(bad.find("store.key_secret_env: environment variable \"IDEMGATE_SHORT_SECRET\" must hold at least "
                   "32 bytes") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.credential_headers[1]: \"authorization\" is listed twice") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.credential_headers[2]: \"bad header\" is not a header name") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.mode: \"loud\" is not a mode") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.json: \"pretty\" is not a JSON mode") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.ignore_json_fields[0]: \"client_sent_at\" is not a "
                   "JSON Pointer") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.ignore_json_fields[1]") != std::string::npos);
    CHECK(bad.find("routes[0].idempotency.fingerprint.headers: expected a list") != std::string::npos);

    auto no_secret = problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency: { credential_headers: [Authorization] }
)");
    CHECK(no_secret.find("routes[0].idempotency.credential_headers: needs store.key_secret_env") !=
          std::string::npos);
    CHECK(idemgate::config::parse_duration("2d") == std::chrono::hours(48));
}

TEST_CASE("tenant_from: client_cert parses and needs a listener that asks for client certificates")
{
    auto problems_of = [](const std::string& yaml) {
        try {
            idemgate::config::parse(yaml);
        } catch (const idemgate::config::config_error& e) {
            std::string all;
            for (const auto& p : e.problems())
                all += p + "\n";
            return all;
        }
        return std::string();
    };
    // The TLS files are only checked to be readable and non-empty here (--check loads them).
    temp_file pem("-----BEGIN CERTIFICATE-----\n");
    const std::string tls_files = "  cert_file: " + pem.path.string() + "\n  key_file: " + pem.path.string() +
                                  "\n  client_ca_file: " + pem.path.string() + "\n";
    const std::string upstream_and_route = R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
)";
    auto c = idemgate::config::parse("tls:\n" + tls_files + "  client_auth: optional\n" + upstream_and_route +
                                     "      tenant_from: client_cert\n");
    CHECK(c.routes[0].idempotency.tenant_from == idemgate::config::tenant_source::client_cert);
    CHECK(c.routes[0].idempotency.tenant_scoped());
    CHECK(c.routes[0].idempotency.tenant_header.empty());

    auto plain = problems_of(upstream_and_route + "      tenant_from: client_cert\n");
    CHECK(
        plain.find("routes[0].idempotency.tenant_from: client_cert needs a TLS listener that asks for client "
                   "certificates") != std::string::npos);
    auto both = problems_of("tls:\n" + tls_files + "  client_auth: required\n" + upstream_and_route +
                            "      tenant_header: X-Tenant-ID\n      tenant_from: client_cert\n");
    CHECK(both.find("routes[0].idempotency.tenant_from: client_cert takes the tenant from the client "
                    "certificate; remove tenant_header") != std::string::npos);
    auto unknown = problems_of(upstream_and_route + "      tenant_from: cookie\n");
    CHECK(unknown.find("routes[0].idempotency.tenant_from: \"cookie\" is not allowed (use header or "
                       "client_cert)") != std::string::npos);
    auto header = idemgate::config::parse(upstream_and_route + "      tenant_from: header\n");
    CHECK_FALSE(header.routes[0].idempotency.tenant_scoped());
}

TEST_CASE("tenants, wait mode and max_waiting parse, and their errors name the key path")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      tenant_header: X-Tenant-ID
      on_in_flight: wait
      wait_timeout: 2s
limits:
  max_waiting: 50
tenants:
  default: { max_in_flight: 0, new_keys_per_second: 0 }
  acme: { max_in_flight: 50, new_keys_per_second: 0.5, record_ttl: 7d, lock_ttl: 40s }
)",
                        no_env);
    const auto& idem = c.routes[0].idempotency;
    CHECK(idem.on_in_flight == cfg::in_flight_mode::wait);
    CHECK(idem.wait_timeout == std::chrono::seconds(2));
    CHECK(c.limits.max_waiting == 50);
    REQUIRE(c.tenants.size() == 2);
    const auto* acme = c.find_tenant("acme");
    REQUIRE(acme != nullptr);
    CHECK(acme->max_in_flight == 50);
    CHECK(acme->new_keys_per_second == 0.5);
    CHECK(acme->record_ttl == std::chrono::hours(7 * 24));
    CHECK(acme->lock_ttl == std::chrono::seconds(40));
    const auto* other = c.find_tenant("globex");
    REQUIRE(other != nullptr);
    CHECK(other == c.find_tenant("default"));
    CHECK_FALSE(other->limited());

    auto defaults = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)",
                               no_env);
    CHECK(defaults.find_tenant("acme") == nullptr);
    CHECK(defaults.limits.max_waiting == 10000);

    auto bad = joined(problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: "/"
    upstream: orders
    idempotency:
      on_in_flight: queue
      wait_timeout: 0s
limits:
  max_waiting: -3
tenants:
  acme: { max_in_flight: lots, new_keys_per_second: -1, record_ttl: forever, burst: 3 }
  "bad\ttenant": {}
  "Acme Payments GmbH": {}
  globex: 7
)"));
    CHECK(bad.find("routes[0].idempotency.on_in_flight: \"queue\" is not allowed (use reject or wait)") !=
          std::string::npos);
    CHECK(bad.find("routes[0].idempotency.wait_timeout: must be greater than 0") != std::string::npos);
    CHECK(bad.find("limits.max_waiting: -3 out of range") != std::string::npos);
    CHECK(bad.find("tenants.acme.max_in_flight: \"lots\" is not an integer") != std::string::npos);
    CHECK(bad.find("tenants.acme.new_keys_per_second: \"-1\" is not a rate") != std::string::npos);
    CHECK(bad.find("tenants.acme.record_ttl: \"forever\" is not a duration") != std::string::npos);
    CHECK(bad.find("tenants.acme.burst: unknown key") != std::string::npos);
    CHECK(bad.find("tenants.bad\ttenant: a tenant is 1 to 255 characters without control characters") !=
          std::string::npos);
    CHECK(bad.find("Acme Payments GmbH") == std::string::npos); // a certificate's name may have spaces
    CHECK(bad.find("tenants.globex: expected a map") != std::string::npos);
}

TEST_CASE("warnings name a tenant whose lock_ttl does not outlast the upstream deadlines")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
tenants:
  acme: { lock_ttl: 5s }
  globex: { lock_ttl: 60s }
)",
                        no_env);
    auto w = joined(cfg::warnings(c));
    CHECK(w.find("tenants.acme.lock_ttl: 5000ms is not above") != std::string::npos);
    CHECK(w.find("tenants.globex") == std::string::npos);
}

TEST_CASE("redis modes: cluster and sentinel keys parse, and their errors name the key path")
{
    auto c = cfg::parse(R"(store:
  type: redis
  redis:
    mode: cluster
    nodes: ["127.0.0.1:7000", "127.0.0.1:7001"]
    topology_refresh: 5s
    min_replicas_ack: 1
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)",
                        no_env);
    CHECK(c.store.redis.mode == cfg::redis_mode::cluster);
    REQUIRE(c.store.redis.nodes.size() == 2);
    CHECK(c.store.redis.nodes[1].port == 7001);
    CHECK(c.store.redis.topology_refresh == std::chrono::seconds(5));
    CHECK(c.store.redis.min_replicas_ack == 1);

    auto s = cfg::parse(R"(store:
  type: redis
  redis:
    mode: sentinel
    nodes: ["127.0.0.1:26379"]
    sentinel: { master_name: orders-primary }
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)",
                        no_env);
    CHECK(s.store.redis.mode == cfg::redis_mode::sentinel);
    CHECK(s.store.redis.sentinel_master_name == "orders-primary");

    auto bad = joined(problems_of(R"(store:
  type: redis
  redis:
    mode: cluster
    address: "127.0.0.1:6379"
    db: 2
    nodes: ["nohost", 7]
    min_replicas_ack: -1
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)"));
    CHECK(bad.find("store.redis.address: not used in cluster mode") != std::string::npos);
    CHECK(bad.find("store.redis.db: Redis Cluster has only database 0") != std::string::npos);
    CHECK(bad.find("store.redis.nodes[0]:") != std::string::npos);
    CHECK(bad.find("store.redis.nodes[1]:") != std::string::npos);
    CHECK(bad.find("store.redis.min_replicas_ack: -1 out of range") != std::string::npos);

    auto bad_sentinel = joined(problems_of(R"(store:
  type: redis
  redis:
    mode: sentinel
    sentinel: { master_name: "", password_env: NOPE }
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)"));
    CHECK(bad_sentinel.find("store.redis.nodes: sentinel mode needs the sentinels") != std::string::npos);
    CHECK(bad_sentinel.find("store.redis.sentinel.master_name: must not be empty") != std::string::npos);
    CHECK(bad_sentinel.find("store.redis.sentinel.password_env: environment variable \"NOPE\" is not set") !=
          std::string::npos);
    auto bad_mode = joined(problems_of(R"(store:
  redis: { mode: replicated }
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - { path_prefix: "/", upstream: orders }
)"));
    CHECK(bad_mode.find("store.redis.mode: \"replicated\" is not a mode") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Issue 9: hashed keys, records encrypted at rest, the Redis ACL user.

namespace {

const char* crypto_env(const char* name)
{
    static const std::string key_a(64, 'a');
    static const std::string key_b = "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff";
    static const std::string secret(32, 's');
    std::string_view n(name);
    if (n == "KEY_A")
        return key_a.c_str();
    if (n == "KEY_B")
        return key_b.c_str();
    if (n == "SHORT_KEY")
        return "abcdef";
    if (n == "NOT_HEX_KEY")
        return "zz0000000000000000000000000000000000000000000000000000000000000z"; // 64 chars
    if (n == "KEY_SECRET")
        return secret.c_str();
    if (n == "REDIS_PASSWORD")
        return "s3cret";
    if (n == "EMPTY")
        return "";
    return nullptr;
}

std::string problems_text(const std::string& yaml)
{
    return joined(problems_of(yaml, crypto_env));
}

} // namespace

TEST_CASE("hash_keys, encryption keys and the ACL username load from the environment")
{
    auto c = cfg::parse(minimal + R"(store:
  type: redis
  key_secret_env: KEY_SECRET
  hash_keys: true
  encryption:
    key_env: KEY_B
    previous_key_env: KEY_A
  redis:
    username: idem
    password_env: REDIS_PASSWORD
)",
                        crypto_env);
    CHECK(c.store.hash_keys);
    CHECK(c.store.encryption.key_env == "KEY_B");
    REQUIRE(c.store.encryption.key.size() == 32);
    CHECK(static_cast<unsigned char>(c.store.encryption.key[0]) == 0x00);
    CHECK(static_cast<unsigned char>(c.store.encryption.key[10]) == 0xaa); // upper-case hex accepted
    CHECK(static_cast<unsigned char>(c.store.encryption.key[31]) == 0xff);
    CHECK(c.store.encryption.previous_key == std::string(32, '\xaa'));
    CHECK(c.store.encryption.enabled());
    CHECK(c.store.redis.username == "idem");
    CHECK(c.store.redis.password == "s3cret");
    CHECK(cfg::warnings(c).empty());

    auto defaults = cfg::parse(minimal, crypto_env);
    CHECK_FALSE(defaults.store.hash_keys);
    CHECK_FALSE(defaults.store.encryption.enabled());
    CHECK(defaults.store.redis.username.empty());
}

TEST_CASE("hash_keys, encryption and username problems name their key paths")
{
    const std::string must_hold = " must hold 64 hex digits (a 32-byte AES-256 key), it holds ";
    const std::pair<std::string, std::string> rows[] = {
        {"store:\n  hash_keys: true\n",
         "store.hash_keys: needs store.key_secret_env (keys are stored as HMACs under that secret)"},
        {"store:\n  hash_keys: yes\n", "store.hash_keys: \"yes\" is not a boolean (use true or false)"},
        {"store:\n  encryption:\n    key_env: MISSING\n",
         "store.encryption.key_env: environment variable \"MISSING\" is not set"},
        {"store:\n  encryption:\n    key_env: EMPTY\n",
         "store.encryption.key_env: environment variable \"EMPTY\" is not set"},
        {"store:\n  encryption:\n    key_env: SHORT_KEY\n",
         "store.encryption.key_env: environment variable \"SHORT_KEY\"" + must_hold + "6 characters"},
        {"store:\n  encryption:\n    key_env: NOT_HEX_KEY\n",
         "store.encryption.key_env: environment variable \"NOT_HEX_KEY\"" + must_hold +
             "64 characters that are not all hex digits"},
        {"store:\n  encryption:\n    key_env: KEY_A\n    previous_key_env: SHORT_KEY\n",
         "store.encryption.previous_key_env: environment variable \"SHORT_KEY\"" + must_hold +
             "6 characters"},
        {"store:\n  encryption:\n    previous_key_env: MISSING\n",
         "store.encryption.previous_key_env: environment variable \"MISSING\" is not set"},
        {"store:\n  encryption:\n    key: KEY_A\n", "store.encryption.key: unknown key"},
        {"store:\n  redis:\n    username: idem\n",
         "store.redis.username: needs store.redis.password_env (an ACL user logs in with AUTH username "
         "password)"},
    };
    for (const auto& [yaml, problem] : rows) {
        CAPTURE(yaml);
        CHECK(problems_text(minimal + yaml) == problem);
    }
    // The key itself never appears in a message.
    CHECK(problems_text(minimal + "store:\n  encryption:\n    key_env: NOT_HEX_KEY\n").find("zz00") ==
          std::string::npos);
}

TEST_CASE("the memory store warns that it neither encrypts nor hashes")
{
    auto c = cfg::parse(minimal + R"(store:
  type: memory
  key_secret_env: KEY_SECRET
  hash_keys: true
  encryption: { key_env: KEY_A }
)",
                        crypto_env);
    auto w = cfg::warnings(c);
    REQUIRE(w.size() == 2);
    CHECK(w[0].starts_with("store.encryption: the memory store does not encrypt records"));
    CHECK(w[1].starts_with("store.hash_keys: the memory store does not hash keys"));
}

TEST_CASE("upstream fleets: addresses, balance, re-resolution and ejection parse with their defaults")
{
    auto c = cfg::parse(minimal, no_env);
    REQUIRE(c.upstreams.size() == 1);
    const auto& one = c.upstreams[0];
    REQUIRE(one.addresses.size() == 1);
    CHECK(one.addresses[0].to_string() == "127.0.0.1:8081");
    CHECK(one.address.to_string() == "127.0.0.1:8081");
    CHECK(one.balance == cfg::balance_mode::round_robin);
    CHECK(one.resolve_every == 0ms);
    CHECK(one.eject_after_failures == 3);
    CHECK(one.eject_for == 10s);

    auto f = cfg::parse(R"(
upstreams:
  orders:
    addresses: ["10.0.0.5:8443", "orders.internal:8443", "[::1]:8443"]
    balance: least_pending
    resolve_every: 30s
    eject_after_failures: 0
    eject_for: 1m
  billing:
    address: "billing:9000"
    resolve_every: 0
routes:
  - { path_prefix: /, upstream: orders }
)",
                        no_env);
    REQUIRE(f.upstreams.size() == 2);
    const auto& fleet = f.upstreams[0];
    REQUIRE(fleet.addresses.size() == 3);
    CHECK(fleet.addresses[0].to_string() == "10.0.0.5:8443");
    CHECK(fleet.addresses[1].to_string() == "orders.internal:8443");
    CHECK(fleet.addresses[2].host == "::1");
    CHECK(fleet.address.to_string() == "10.0.0.5:8443");
    CHECK(fleet.balance == cfg::balance_mode::least_pending);
    CHECK(fleet.resolve_every == 30s);
    CHECK(fleet.eject_after_failures == 0);
    CHECK(fleet.eject_for == 1min);
    CHECK(f.upstreams[1].resolve_every == 0ms);
}

TEST_CASE("upstream fleet problems name their key paths")
{
    const std::string routes = "routes:\n  - { path_prefix: /, upstream: o }\n";
    struct row {
        const char* name;
        std::string yaml;
        std::string problem;
    };
    std::vector<row> rows{
        {"both address and addresses",
         "upstreams:\n  o: { address: \"h:1\", addresses: [\"h:2\"] }\n" + routes,
         "upstreams.o.addresses: set together with upstreams.o.address (use one of them)"},
        {"empty addresses", "upstreams:\n  o: { addresses: [] }\n" + routes,
         "upstreams.o.addresses: must list at least one address (host:port)"},
        {"addresses not a list", "upstreams:\n  o: { addresses: \"h:1\" }\n" + routes,
         "upstreams.o.addresses: expected a list of host:port, got a scalar"},
        {"bad second address", "upstreams:\n  o: { addresses: [\"h:1\", \"h\"] }\n" + routes,
         "upstreams.o.addresses[1]: \"h\" is not an endpoint (use host:port)"},
        {"port out of range", "upstreams:\n  o: { addresses: [\"h:1\", \"h:2\", \"h:70000\"] }\n" + routes,
         "upstreams.o.addresses[2]: port 70000 out of range (0-65535)"},
        {"address listed twice", "upstreams:\n  o: { addresses: [\"h:1\", \"h:1\"] }\n" + routes,
         "upstreams.o.addresses[1]: \"h:1\" is listed twice"},
        {"address in the list not a scalar", "upstreams:\n  o: { addresses: [{ a: 1 }] }\n" + routes,
         "upstreams.o.addresses[0]: expected an endpoint (host:port), got a map"},
        {"bad balance", "upstreams:\n  o: { address: \"h:1\", balance: random }\n" + routes,
         "upstreams.o.balance: \"random\" is not allowed (use round_robin or least_pending)"},
        {"negative resolve_every", "upstreams:\n  o: { address: \"h:1\", resolve_every: -5s }\n" + routes,
         "upstreams.o.resolve_every: \"-5s\" is negative (a duration is 0 or more, e.g. 30s)"},
        {"bad resolve_every", "upstreams:\n  o: { address: \"h:1\", resolve_every: often }\n" + routes,
         "upstreams.o.resolve_every: \"often\" is not a duration"},
        {"negative eject_for", "upstreams:\n  o: { address: \"h:1\", eject_for: -1s }\n" + routes,
         "upstreams.o.eject_for: \"-1s\" is negative (a duration is 0 or more, e.g. 30s)"},
        {"zero eject_for", "upstreams:\n  o: { address: \"h:1\", eject_for: 0s }\n" + routes,
         "upstreams.o.eject_for: must be greater than 0"},
        {"negative eject_after_failures",
         "upstreams:\n  o: { address: \"h:1\", eject_after_failures: -1 }\n" + routes,
         "upstreams.o.eject_after_failures: -1 out of range (0-1000)"},
        {"unknown fleet key", "upstreams:\n  o: { address: \"h:1\", balancing: round_robin }\n" + routes,
         "upstreams.o.balancing: unknown key"},
    };
    for (const auto& r : rows) {
        INFO(r.name);
        CHECK(joined(problems_of(r.yaml)) == r.problem);
    }

    std::string many = "upstreams:\n  o:\n    addresses:\n";
    for (int i = 0; i < 65; ++i)
        many += "      - \"h" + std::to_string(i) + ":1\"\n";
    CHECK(joined(problems_of(many + routes)) ==
          "upstreams.o.addresses: 65 addresses; at most 64 are allowed");
}
