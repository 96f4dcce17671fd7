// SPDX-License-Identifier: Apache-2.0
// Config problems: one case per kind, checking the exact message and key path an operator
// sees; every problem at once; missing, unreadable and malformed files.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

// One row per kind of problem: the YAML and the exact message the operator gets.
TEST_CASE("each kind of config problem names its key path")
{
    struct row {
        std::string name;
        std::string yaml;
        std::string problem;
    };
    // `minimal` ends in its route, so the lines a case appends extend that route.
    const std::string& route_head = minimal;
    auto prefix_route = [](const char* prefix) {
        return "upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - { path_prefix: \"" + std::string(prefix) +
               "\", upstream: o }\n";
    };
    const std::string not_normal =
        " is not in normal form, and requests are matched on the normal form of their "
        "path (RFC 3986 6.2.2, runs of '/' as one): write ";
    const row rows[] = {
        {"unknown key at the top", minimal + "listne: \"127.0.0.1:1\"\n",
         "listne: unknown key (did you mean \"listen\"?)"},
        {"unknown key nested", minimal + "store:\n  typo: 1\n",
         "store.typo: unknown key (did you mean \"type\"?)"},
        {"unknown key, nothing close", minimal + "store:\n  flavour: 1\n", "store.flavour: unknown key"},
        {"unknown key deep", minimal + "store:\n  redis:\n    adress: \"h:1\"\n",
         "store.redis.adress: unknown key (did you mean \"address\"?)"},
        {"unknown key in a route", route_head + "    idempotency:\n      record_tll: 1h\n",
         "routes[0].idempotency.record_tll: unknown key (did you mean \"record_ttl\"?)"},
        {"password in the file", minimal + "store:\n  redis:\n    password: hunter2\n",
         "store.redis.password: unknown key"},
        {"unknown log level", minimal + "log_level: loud\n",
         "log_level: \"loud\" is not a log level (use debug, info, warn or error)"},
        {"duplicate key", minimal + "threads: 1\nthreads: 2\n", "threads: duplicate key"},
        {"list where a scalar belongs", minimal + "listen: [a]\n",
         "listen: expected an endpoint (host:port), got a list"},
        {"unknown key of listen's map", minimal + "listen: { host: a }\n", "listen.host: unknown key"},
        {"bad network", minimal + "listen:\n  trusted_proxies: [10.0.0.0/8, 10.0.0.1/8]\n",
         "listen.trusted_proxies[1]: \"10.0.0.1/8\" has bits set past its prefix length (did you "
         "mean 10.0.0.0/8?)"},
        {"proxy_protocol alone", minimal + "listen:\n  proxy_protocol: true\n",
         "listen.proxy_protocol: needs listen.trusted_proxies (the balancers whose PROXY header is "
         "believed; a connection from any other peer is closed)"},
        {"admin_listen behind a balancer", minimal + "admin_listen: { trusted_proxies: [10.0.0.0/8] }\n",
         "admin_listen: takes host:port only (trusted_proxies and proxy_protocol are keys of listen, the "
         "client listener)"},
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
        {"unknown tier admission", minimal + "store:\n  local_tier: { max_bytes: 1MiB, admit: always }\n",
         "store.local_tier.admit: \"always\" is not an admission policy (use replay or complete)"},
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
        {"path_prefix with a run of slashes", prefix_route("/api//orders"),
         "routes[0].path_prefix: \"/api//orders\"" + not_normal + "\"/api/orders\""},
        {"path_prefix with an escaped unreserved character", prefix_route("/%7euser/./"),
         "routes[0].path_prefix: \"/%7euser/./\"" + not_normal + "\"/~user/\""},
        {"path_prefix with a bad escape", prefix_route("/api/%zz"),
         "routes[0].path_prefix: \"/api/%zz\" has no normal form: the path has a '%' not followed by two "
         "hexadecimal digits at position 6"},
        {"path_prefix above the root", prefix_route("/../api"),
         "routes[0].path_prefix: \"/../api\" has no normal form: the path's \"..\" segment at position 2 "
         "climbs above the root"},
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
        {"http2 unknown key", minimal + "http2:\n  max_streams: 10\n", "http2.max_streams: unknown key"},
        {"http2 streams out of range", minimal + "http2:\n  max_concurrent_streams: 0\n",
         "http2.max_concurrent_streams: 0 out of range (1-100000)"},
        {"http2 frame size below the protocol's minimum", minimal + "http2:\n  max_frame_size: 1KiB\n",
         "http2.max_frame_size: must be within 16KiB-16MiB (2^24-1 bytes)"},
        {"http2 window not a size", minimal + "http2:\n  initial_window_size: big\n",
         "http2.initial_window_size: \"big\" is not a size (use B, KiB, MiB, GiB)"},
        {"http2 cleartext while off", minimal + "http2:\n  enabled: false\n  cleartext: true\n",
         "http2.cleartext: set while http2.enabled is false (HTTP/2 is off)"},
        {"http2 idle_timeout zero", minimal + "http2:\n  idle_timeout: 0s\n",
         "http2.idle_timeout: must be greater than 0"},
    };
    for (const auto& r : rows) {
        INFO(r.name);
        // Joined, so a failure prints every problem reported; exactly one is expected.
        CHECK(joined(problems_of(r.yaml)) == r.problem);
    }
}

TEST_CASE("a path_prefix in normal form loads, also when it ends inside a segment or an escape")
{
    for (const char* prefix : {"/", "/api/", "/api/ord", "/api/orders%2F", "/a%20b/", "/a/%2", "/a/%", "/a/.",
                               "/a/.well", "/a|b"}) {
        CAPTURE(prefix);
        auto c = cfg::parse("upstreams:\n  o: { address: \"h:1\" }\nroutes:\n  - { path_prefix: \"" +
                            std::string(prefix) + "\", upstream: o }\n");
        CHECK(c.routes.at(0).path_prefix == prefix);
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
        "store.typo: unknown key (did you mean \"type\"?)",
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

TEST_CASE("each problem carries the line and column of its key, or of the nearest key above it")
{
    try {
        cfg::parse(R"(listen: "127.0.0.1:70000"
threads: lots
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: billing
    idempotency:
      recrod_ttl: 1h
)",
                   no_env);
        FAIL("expected a config_error");
    } catch (const cfg::config_error& e) {
        REQUIRE(e.problems().size() == 4);
        REQUIRE(e.positions().size() == 4);
        auto at = [&](std::size_t i) {
            return std::to_string(e.positions()[i].line) + ":" + std::to_string(e.positions()[i].column);
        };
        CHECK(e.problems()[0].rfind("listen:", 0) == 0);
        CHECK(at(0) == "1:1");
        CHECK(e.problems()[1].rfind("threads:", 0) == 0);
        CHECK(at(1) == "2:1");
        CHECK(e.problems()[2] == "routes[0].upstream: unknown upstream \"billing\"");
        CHECK(at(2) == "7:5");
        CHECK(e.problems()[3] ==
              "routes[0].idempotency.recrod_ttl: unknown key (did you mean \"record_ttl\"?)");
        CHECK(at(3) == "9:7");
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
    CHECK(c.store.type() == cfg::store_type::redis);
    CHECK(c.store.given<cfg::redis_config>().password == "from-env");
}
