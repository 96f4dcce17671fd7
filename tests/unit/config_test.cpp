// SPDX-License-Identifier: Apache-2.0
// Config loading: a full file, the documented defaults, the shipped example.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

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

    CHECK(c.store.type() == cfg::store_type::redis);
    CHECK(c.store.on_failure == cfg::failure_mode::pass_through);
    CHECK(c.store.given<cfg::redis_config>().address.to_string() == "redis.internal:6380");
    CHECK(c.store.given<cfg::redis_config>().password_env == "REDIS_PASSWORD");
    CHECK(c.store.given<cfg::redis_config>().password == "s3cret");
    CHECK(c.store.given<cfg::redis_config>().db == 3);
    CHECK(c.store.given<cfg::redis_config>().key_prefix == "gw-test");
    CHECK(c.store.given<cfg::redis_config>().command_timeout == 100ms);
    CHECK(c.store.given<cfg::redis_config>().connect_timeout == 2s);
    CHECK(c.store.given<cfg::redis_config>().reconnect_backoff_max == 1min);
    CHECK(c.store.given<cfg::memory_config>().max_entries == 42);
    CHECK(c.store.given<cfg::memory_config>().max_bytes == 64u * 1024 * 1024);

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

TEST_CASE("http2 settings: defaults (on for TLS listeners, no cleartext) and every key read")
{
    auto d = cfg::parse(minimal, no_env);
    CHECK(d.http2.enabled);
    CHECK_FALSE(d.http2.cleartext);
    CHECK(d.http2.max_concurrent_streams == 128);
    CHECK(d.http2.initial_window_size == 256 * 1024);
    CHECK(d.http2.max_frame_size == 16 * 1024);
    CHECK(d.http2.max_header_list_size == 32 * 1024);
    CHECK(d.http2.idle_timeout == 60s);
    auto s = cfg::parse(minimal + "http2:\n  cleartext: true\n  max_concurrent_streams: 10\n"
                                  "  initial_window_size: 1MiB\n  max_frame_size: 32KiB\n"
                                  "  max_header_list_size: 8KiB\n  idle_timeout: 5s\n",
                        no_env);
    CHECK(s.http2.cleartext);
    CHECK(s.http2.max_concurrent_streams == 10);
    CHECK(s.http2.initial_window_size == 1024 * 1024);
    CHECK(s.http2.max_frame_size == 32 * 1024);
    CHECK(s.http2.max_header_list_size == 8 * 1024);
    CHECK(s.http2.idle_timeout == 5s);
}

TEST_CASE("absent keys take the documented defaults")
{
    auto c = cfg::parse(minimal, no_env);
    const cfg::config d;

    CHECK(c.listen.to_string() == "127.0.0.1:8080");
    CHECK(c.admin_listen.to_string() == "127.0.0.1:8079");
    CHECK(c.threads == 0);
    CHECK(c.access_log);
    CHECK(c.store.type() == cfg::store_type::memory);
    CHECK(c.store.on_failure == cfg::failure_mode::reject);
    CHECK(c.store.given<cfg::redis_config>().address.to_string() == "127.0.0.1:6379");
    CHECK(c.store.given<cfg::redis_config>().password_env.empty());
    CHECK(c.store.given<cfg::redis_config>().password.empty());
    CHECK(c.store.given<cfg::redis_config>().db == 0);
    CHECK(c.store.given<cfg::redis_config>().key_prefix == "idemgate");
    CHECK(c.store.given<cfg::redis_config>().command_timeout == 250ms);
    CHECK(c.store.given<cfg::redis_config>().connect_timeout == 1s);
    CHECK(c.store.given<cfg::redis_config>().reconnect_backoff_max == 2s);
    CHECK(c.store.given<cfg::memory_config>().max_entries == 100000);
    CHECK(c.store.given<cfg::memory_config>().max_bytes == 256u * 1024 * 1024);
    REQUIRE(c.upstreams.size() == 1);
    CHECK(c.upstreams[0].max_idle_connections == 64);
    REQUIRE(c.routes.size() == 1);
    CHECK_FALSE(c.routes[0].idempotency.enabled);
    CHECK(c.limits.max_request_body == 1024 * 1024);
    CHECK(c.limits.max_record_body == 8 * 1024 * 1024);
    CHECK(c.limits.max_response_body == std::size_t{1024} * 1024 * 1024);
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
    CHECK(c.admin_listen.to_string() == "127.0.0.1:8079");
    CHECK(c.store.type() == cfg::store_type::redis);
    CHECK(c.store.given<cfg::redis_config>().address.to_string() == "127.0.0.1:6379");
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
