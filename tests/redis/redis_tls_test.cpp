// TLS to Redis (issue 9): the store and the real idemgate binary against a TLS-only
// redis-server, with certificates made by the openssl CLI for each test. Verification failures
// (wrong CA, wrong name, a plain server, a missing client certificate) must leave the gateway
// up, retrying, answering 503, and saying why in its log.
#include "redis_test_support.hpp"

#include <atomic>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>
#include <idemgate/store/redis_store.hpp>
#include <idemgate/test/harness.hpp>
#include <idemgate/test/tls.hpp>
#include <string>
#include <thread>
#include <unistd.h>

using namespace idemgate;
using namespace idemgate::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// The store.redis.tls block (indented for store.redis) with the given extra keys.
std::string tls_block(const std::string& keys)
{
    return "    tls:\n      enabled: true\n" + keys;
}

std::string tls_gateway_yaml(const std::string& redis_address, const test_upstream_process& upstream,
                             const std::string& tls, const std::string& idempotency_extra = "")
{
    return "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 2\n"
           "access_log: false\n"
           "store:\n"
           "  type: redis\n"
           "  redis:\n"
           "    address: \"" +
           redis_address +
           "\"\n"
           "    key_prefix: gw\n"
           "    command_timeout: 250ms\n"
           "    connect_timeout: 500ms\n"
           "    reconnect_backoff_max: 200ms\n" +
           tls +
           "upstreams:\n"
           "  orders:\n"
           "    address: \"" +
           upstream.address() +
           "\"\n"
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      lock_ttl: 30s\n"
           "      record_ttl: 1h\n" +
           idempotency_extra;
}

std::string ca_only(const test_certificates& certs)
{
    return tls_block("      ca_file: \"" + certs.ca_cert + "\"\n");
}

std::string mutual(const test_certificates& certs)
{
    return tls_block("      ca_file: \"" + certs.ca_cert + "\"\n      cert_file: \"" + certs.client_cert +
                     "\"\n      key_file: \"" + certs.client_key + "\"\n");
}

int readyz(const gateway_process& gw)
{
    try {
        return http_request(gw.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
    } catch (const std::exception&) {
        return 0;
    }
}

std::unique_ptr<gateway_process> start_ready_gateway(const std::string& yaml)
{
    auto gw = std::make_unique<gateway_process>(yaml);
    REQUIRE_MESSAGE(eventually([&] { return readyz(*gw) == 200; }, 10s), gw->process().output());
    return gw;
}

http_response post(const gateway_process& gw, const std::string& key, const std::string& body,
                   std::vector<std::pair<std::string, std::string>> headers = {})
{
    headers.emplace_back("Idempotency-Key", key);
    headers.emplace_back("Content-Type", "application/json");
    return http_request(gw.port(), "POST", "/api/orders", headers, body, 5s);
}

std::string unique_key(const std::string& stem)
{
    static std::atomic<int> n{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// The value of an unlabelled sample in /metrics, or -1.
double metric(const gateway_process& gw, const std::string& name)
{
    auto text = http_request(gw.admin_port(), "GET", "/metrics", {}, {}, 5s).body;
    auto pos = text.find("\n" + name + " ");
    if (pos == std::string::npos)
        return -1;
    return std::stod(text.substr(pos + name.size() + 2));
}

std::size_t lines_containing(const gateway_process& gw, const std::string& text)
{
    std::size_t n = 0;
    for (const auto& line : const_cast<gateway_process&>(gw).process().lines())
        n += line.find(text) != std::string::npos;
    return n;
}

// A gateway that cannot use its Redis: it stays up, /readyz says 503, a request gets a prompt
// 503 problem+json without reaching the upstream, it keeps retrying, and it logs the failure
// streak once per connection with `why` in the line.
void check_refused_but_alive(gateway_process& gw, test_upstream_process& upstream, const std::string& why)
{
    auto line = gw.process().wait_for_line(
        [](const std::string& l) {
            return l.find("redis unreachable; retrying with backoff") != std::string::npos;
        },
        10s);
    REQUIRE_MESSAGE(line, gw.process().output());
    CHECK_MESSAGE(line->find(why) != std::string::npos, *line);
    CHECK(readyz(gw) == 503);

    auto started = std::chrono::steady_clock::now();
    auto res = post(gw, unique_key("refused"), "{}");
    CHECK(std::chrono::steady_clock::now() - started < 3s); // never a hang
    CHECK(res.status == 503);
    CHECK(res.header("content-type") == "application/problem+json");
    CHECK(upstream.executions() == 0);

    // Still retrying (attempts grow), still one line per connection for the whole streak.
    auto attempts = metric(gw, "idemgate_redis_reconnect_attempts_total");
    CHECK(eventually([&] { return metric(gw, "idemgate_redis_reconnect_attempts_total") >= attempts + 4; },
                     10s));
    CHECK(gw.process().running());
    CHECK(readyz(gw) == 503);
    CHECK(lines_containing(gw, "redis unreachable; retrying with backoff") <= 2); // threads: 2
}

// The store (no gateway) with a TLS config, one session on its own I/O thread.
struct tls_store {
    explicit tls_store(const config::redis_config& cfg)
        : backend(store::make_redis_backend(cfg)), session(backend->open_session(io.executor()))
    {
    }
    ~tls_store()
    {
        session.reset();
        CHECK_MESSAGE(io.finish(), "a connection coroutine outlived its session");
    }
    io_thread io;
    std::shared_ptr<store::redis_backend> backend;
    std::unique_ptr<store::session> session;
};

} // namespace

TEST_SUITE("redis over TLS")
{

    TEST_CASE("the store reserves, completes and replays over TLS verified against the CA")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        auto cfg = redis_config_for(redis.port());
        cfg.tls.enabled = true;
        cfg.tls.ca_file = certs.ca_cert;
        tls_store s(cfg);
        REQUIRE(eventually([&] { return s.backend->ready(); }));

        store::scope scope{"t", unique_key("store")};
        auto first = s.io.run([&]() -> asio::awaitable<store::reserve_result> {
            co_return co_await s.session->reserve(scope, in_flight_record("owner-a"), 30s);
        });
        REQUIRE_FALSE(first.ec);
        CHECK(first.acquired);
        auto done = completed_record("owner-a", R"({"id":7})");
        auto ec = s.io.run([&]() -> asio::awaitable<boost::system::error_code> {
            co_return co_await s.session->complete(scope, done, 60s);
        });
        REQUIRE_FALSE(ec);
        auto again = s.io.run([&]() -> asio::awaitable<store::reserve_result> {
            co_return co_await s.session->reserve(scope, in_flight_record("owner-b"), 30s);
        });
        REQUIRE_FALSE(again.ec);
        CHECK_FALSE(again.acquired);
        REQUIRE(again.existing);
        CHECK(*again.existing == done);
        // The record is really in that server (read back over redis-cli --tls).
        CHECK(redis.cli({"EXISTS", store::redis_key("test", scope)}) == "1");
    }

    TEST_CASE("the store never becomes ready against a TLS server it does not trust")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        auto cfg = redis_config_for(redis.port());
        cfg.tls.enabled = true;
        cfg.tls.ca_file = certs.other_ca_cert;
        tls_store s(cfg);
        // Several attempts, each refused by verification, and never up.
        REQUIRE(eventually([&] { return s.backend->stats().reconnect_attempts.load() >= 3; }));
        CHECK_FALSE(s.backend->ready());
        CHECK(s.backend->stats().connects.load() == 0);
    }

    TEST_CASE("gateway over TLS: first execution 201, the duplicate replayed byte for byte")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto gw = start_ready_gateway(tls_gateway_yaml(redis.address(), upstream, ca_only(certs)));

        auto key = unique_key("tls");
        auto first = post(*gw, key, R"({"item":"book"})");
        REQUIRE(first.status == 201);
        auto replay = post(*gw, key, R"({"item":"book"})");
        CHECK(replay.status == 201);
        CHECK(replay.body == first.body);
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(replay.header("x-upstream-execution") == first.header("x-upstream-execution"));
        CHECK(upstream.executions() == 1);
        CHECK(lines_containing(*gw, "redis unreachable") == 0);
    }

    TEST_CASE("server_name: localhost is verified against the DNS SAN while connecting to 127.0.0.1")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto tls = tls_block("      ca_file: \"" + certs.ca_cert + "\"\n      server_name: localhost\n");
        auto gw = start_ready_gateway(tls_gateway_yaml(redis.address(), upstream, tls));
        CHECK(post(*gw, unique_key("sni"), "{}").status == 201);
    }

    TEST_CASE("mutual TLS: the gateway serves with its client certificate")
    {
        test_certificates certs;
        tls_redis_server redis(certs, true);
        test_upstream_process upstream;
        auto gw = start_ready_gateway(tls_gateway_yaml(redis.address(), upstream, mutual(certs)));
        auto key = unique_key("mtls");
        auto first = post(*gw, key, "{}");
        CHECK(first.status == 201);
        auto replay = post(*gw, key, "{}");
        CHECK(replay.status == 201);
        CHECK(replay.body == first.body);
        CHECK(upstream.executions() == 1);
    }

    TEST_CASE("mutual TLS without a client certificate: never ready, 503, the log names the TLS alert")
    {
        test_certificates certs;
        tls_redis_server redis(certs, true);
        test_upstream_process upstream;
        gateway_process gw(tls_gateway_yaml(redis.address(), upstream, ca_only(certs)));
        check_refused_but_alive(gw, upstream, "certificate required");
    }

    TEST_CASE("a CA that did not sign the server's certificate: 503, retrying, the log names the problem")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto tls = tls_block("      ca_file: \"" + certs.other_ca_cert + "\"\n");
        gateway_process gw(tls_gateway_yaml(redis.address(), upstream, tls));
        // redis-server sends its CA with its certificate, so OpenSSL meets an untrusted root.
        check_refused_but_alive(gw, upstream,
                                "certificate verify failed: self-signed certificate in certificate chain");
    }

    TEST_CASE("a server_name the certificate does not name: 503, retrying, the log names the mismatch")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto tls =
            tls_block("      ca_file: \"" + certs.ca_cert + "\"\n      server_name: redis.example.com\n");
        gateway_process gw(tls_gateway_yaml(redis.address(), upstream, tls));
        check_refused_but_alive(gw, upstream, "certificate verify failed: hostname mismatch");
    }

    TEST_CASE("an IP address the certificate does not name is an IP address mismatch")
    {
        // The certificate names 127.0.0.1 only; 127.0.0.2 reaches the same loopback server.
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto tls = tls_block("      ca_file: \"" + certs.ca_cert + "\"\n      server_name: 127.0.0.2\n");
        gateway_process gw(tls_gateway_yaml(redis.address(), upstream, tls));
        check_refused_but_alive(gw, upstream, "certificate verify failed: IP address mismatch");
    }

    TEST_CASE("TLS to a plain-TCP Redis: 503, retrying, the log says the handshake failed")
    {
        redis_server plain;
        test_certificates certs;
        test_upstream_process upstream;
        gateway_process gw(tls_gateway_yaml(plain.address(), upstream, ca_only(certs)));
        check_refused_but_alive(gw, upstream, "TLS handshake");
    }

    TEST_CASE("verify: false serves despite an untrusted certificate, and warns at start")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto tls = tls_block("      ca_file: \"" + certs.other_ca_cert + "\"\n      verify: false\n");
        auto gw = start_ready_gateway(tls_gateway_yaml(redis.address(), upstream, tls));
        CHECK(post(*gw, unique_key("noverify"), "{}").status == 201);
        CHECK(lines_containing(*gw, "store.redis.tls.verify: false") == 1);
    }

    TEST_CASE("wait mode over TLS: the subscriber connection uses TLS and the duplicate gets the replay")
    {
        test_certificates certs;
        tls_redis_server redis(certs);
        test_upstream_process upstream;
        auto gw =
            start_ready_gateway(tls_gateway_yaml(redis.address(), upstream, ca_only(certs),
                                                 "      on_in_flight: wait\n      wait_timeout: 10s\n"));
        auto key = unique_key("wait");
        http_response first;
        std::thread lead([&] { first = post(*gw, key, R"({"n":1})", {{"X-Test-Delay-Ms", "400"}}); });
        REQUIRE(eventually([&] { return upstream.executions() == 1; }));
        auto dup = post(*gw, key, R"({"n":1})");
        lead.join();
        REQUIRE(first.status == 201);
        CHECK(dup.status == 201);
        CHECK(dup.body == first.body);
        CHECK(dup.header("idempotent-replayed") == "true");
        CHECK(upstream.executions() == 1);
        // Woken by the subscriber's message over TLS, not by running into wait_timeout.
        auto text = http_request(gw->admin_port(), "GET", "/metrics", {}, {}, 5s).body;
        CHECK(text.find("idemgate_waits_total{result=\"settled\"} 1") != std::string::npos);
    }

    TEST_CASE("--check names the TLS key path of each file problem")
    {
        test_certificates certs;
        temp_dir dir;
        auto check = [&](const std::string& tls) {
            auto yaml =
                "upstreams:\n  orders: { address: \"127.0.0.1:8081\" }\nroutes:\n  - path_prefix: /api/\n"
                "    upstream: orders\nstore:\n  type: redis\n  redis:\n" +
                tls;
            auto path = dir.write_file("check.yaml", yaml);
            child_process proc(bin_dir() + "/idemgate", {"--config", path, "--check"});
            auto status = proc.wait_exit(10s);
            return std::pair{status.value_or(-1), proc.output()};
        };
        auto [ok, ok_out] = check(mutual(certs));
        CHECK_MESSAGE(ok == 0, ok_out);

        auto [mismatch, mismatch_out] = check(tls_block("      cert_file: \"" + certs.client_cert +
                                                        "\"\n      key_file: \"" + certs.stray_key + "\"\n"));
        CHECK(mismatch == 1);
        CHECK_MESSAGE(mismatch_out.find("store.redis.tls.key_file:") != std::string::npos, mismatch_out);
        CHECK_MESSAGE(mismatch_out.find("mismatch") != std::string::npos, mismatch_out);

        auto [lonely, lonely_out] = check(tls_block("      cert_file: \"" + certs.client_cert + "\"\n"));
        CHECK(lonely == 1);
        CHECK_MESSAGE(lonely_out.find("store.redis.tls.cert_file: needs store.redis.tls.key_file") !=
                          std::string::npos,
                      lonely_out);

        auto [missing, missing_out] =
            check(tls_block("      ca_file: \"" + dir.path() + "/no-such-ca.pem\"\n"));
        CHECK(missing == 1);
        CHECK_MESSAGE(missing_out.find("store.redis.tls.ca_file: cannot read") != std::string::npos,
                      missing_out);

        auto [not_pem, not_pem_out] =
            check(tls_block("      ca_file: \"" + dir.write_file("junk.pem", "junk\n") + "\"\n"));
        CHECK(not_pem == 1);
        CHECK_MESSAGE(not_pem_out.find("store.redis.tls.ca_file: no CA certificate could be loaded") !=
                          std::string::npos,
                      not_pem_out);

        auto [disabled, disabled_out] = check("    tls:\n      ca_file: \"" + certs.ca_cert + "\"\n");
        CHECK(disabled == 1);
        CHECK_MESSAGE(
            disabled_out.find("store.redis.tls.ca_file: set while store.redis.tls.enabled is false") !=
                std::string::npos,
            disabled_out);

        auto [unverified, unverified_out] = check(tls_block("      verify: false\n"));
        CHECK(unverified == 0);
        CHECK_MESSAGE(unverified_out.find("warning: store.redis.tls.verify: false") != std::string::npos,
                      unverified_out);
    }
}
