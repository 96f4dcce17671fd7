// SPDX-License-Identifier: Apache-2.0
// TLS to Redis: the store and the real idemgate binary against a TLS-only
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
    CHECK_MESSAGE(line, gw.process().output()); // not REQUIRE: the other rows of a table still run
    if (!line)
        return;
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

// What every gateway test here runs: fresh certificates, a TLS-only Redis (requiring client
// certificates when `auth_clients`), and the test upstream.
struct tls_fixture {
    explicit tls_fixture(bool auth_clients = false) : redis(certs, auth_clients) {}

    // The gateway config with this store.redis.tls block (see tls_block) and route options.
    std::string yaml(const std::string& tls, const std::string& idempotency_extra = "") const
    {
        return tls_gateway_yaml(redis.address(), upstream, tls, idempotency_extra);
    }
    // tls_block with ca_file set to the CA that signed the server, plus `keys`.
    std::string trusting(const std::string& keys = "") const
    {
        return tls_block("      ca_file: \"" + certs.ca_cert + "\"\n" + keys);
    }

    test_certificates certs;
    tls_redis_server redis;
    test_upstream_process upstream;
};

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

        const auto key = unique_key("store"); // scope holds views: the key must outlive it
        store::scope scope{"t", key};
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
        tls_fixture f;
        auto gw = start_gateway(f.yaml(f.trusting()));
        auto key = unique_key("tls");
        auto first = post(*gw, key, R"({"item":"book"})");
        REQUIRE(first.status == 201);
        auto replay = post(*gw, key, R"({"item":"book"})");
        CHECK(replay.status == 201);
        CHECK(replay.body == first.body);
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(replay.header("x-upstream-execution") == first.header("x-upstream-execution"));
        CHECK(f.upstream.executions() == 1);
        CHECK(lines_containing(*gw, "redis unreachable") == 0);
    }

    TEST_CASE("server_name: localhost is verified against the DNS SAN while connecting to 127.0.0.1")
    {
        tls_fixture f;
        auto gw = start_gateway(f.yaml(f.trusting("      server_name: localhost\n")));
        CHECK(post(*gw, unique_key("sni"), "{}").status == 201);
    }

    TEST_CASE("mutual TLS: the gateway serves with its client certificate")
    {
        tls_fixture f(true);
        auto gw = start_gateway(f.yaml(f.trusting("      cert_file: \"" + f.certs.client_cert +
                                                  "\"\n      key_file: \"" + f.certs.client_key + "\"\n")));
        auto key = unique_key("mtls");
        auto first = post(*gw, key, "{}");
        CHECK(first.status == 201);
        auto replay = post(*gw, key, "{}");
        CHECK(replay.status == 201);
        CHECK(replay.body == first.body);
        CHECK(f.upstream.executions() == 1);
    }

    // Each row: a TLS setting the server refuses or cannot satisfy, and what the log must say.
    TEST_CASE("a TLS failure keeps the gateway up and retrying, answering 503, with the reason logged")
    {
        struct row {
            const char* name;
            bool auth_clients;
            std::string (*tls)(const tls_fixture&);
            const char* why;
        };
        const row rows[] = {
            {"mutual TLS without a client certificate", true,
             [](const tls_fixture& f) { return f.trusting(); },
             "TLS: the server asked for a client certificate and store.redis.tls.cert_file is not set"},
            // redis-server sends its CA with its certificate, so OpenSSL meets an untrusted root.
            {"a CA that did not sign the server's certificate", false,
             [](const tls_fixture& f) {
                 return tls_block("      ca_file: \"" + f.certs.other_ca_cert + "\"\n");
             },
             "certificate verify failed: self-signed certificate in certificate chain"},
            {"a server_name the certificate does not name", false,
             [](const tls_fixture& f) { return f.trusting("      server_name: redis.example.com\n"); },
             "certificate verify failed: hostname mismatch"},
            // The certificate names 127.0.0.1 only; as server_name, 127.0.0.2 must be refused.
            {"an IP address the certificate does not name", false,
             [](const tls_fixture& f) { return f.trusting("      server_name: 127.0.0.2\n"); },
             "certificate verify failed: IP address mismatch"},
        };
        for (const auto& r : rows) {
            SUBCASE(r.name)
            {
                tls_fixture f(r.auth_clients);
                gateway_process gw(f.yaml(r.tls(f)));
                check_refused_but_alive(gw, f.upstream, r.why);
            }
        }
    }

    TEST_CASE("TLS to a plain-TCP Redis: 503, retrying, the log says the handshake timed out")
    {
        redis_server plain;
        test_certificates certs;
        test_upstream_process upstream;
        gateway_process gw(tls_gateway_yaml(plain.address(), upstream, ca_only(certs)));
        // Redis waits for the end of a line that a ClientHello does not have: connect_timeout.
        check_refused_but_alive(gw, upstream, "TLS handshake timed out");
    }

    TEST_CASE("verify: false serves despite an untrusted certificate, and warns at start")
    {
        tls_fixture f;
        auto tls = tls_block("      ca_file: \"" + f.certs.other_ca_cert + "\"\n      verify: false\n");
        auto gw = start_gateway(f.yaml(tls));
        CHECK(post(*gw, unique_key("noverify"), "{}").status == 201);
        CHECK(lines_containing(*gw, "store.redis.tls.verify: false") == 1);
    }

    TEST_CASE("wait mode over TLS: the subscriber connection uses TLS and the duplicate gets the replay")
    {
        tls_fixture f;
        auto gw = start_gateway(f.yaml(f.trusting(), "      on_in_flight: wait\n      wait_timeout: 3s\n"));
        auto key = unique_key("wait");
        http_response first;
        std::jthread lead([&] { first = post(*gw, key, R"({"n":1})", {{"X-Test-Delay-Ms", "400"}}); });
        REQUIRE(eventually([&] { return f.upstream.executions() == 1; }));
        auto dup = post(*gw, key, R"({"n":1})");
        lead.join();
        REQUIRE(first.status == 201);
        CHECK(dup.status == 201);
        CHECK(dup.body == first.body);
        CHECK(dup.header("idempotent-replayed") == "true");
        CHECK(f.upstream.executions() == 1);
        // Woken by the subscriber's message over TLS (without it the waiter would time out).
        auto text = http_request(gw->admin_port(), "GET", "/metrics", {}, {}, 5s).body;
        CHECK(text.find("idemgate_waits_total{result=\"settled\"} 1") != std::string::npos);
    }

    TEST_CASE("cluster mode over TLS: every primary on its TLS port, a MOVED followed to a TLS port")
    {
        test_certificates certs;
        tls_redis_cluster cluster(certs);
        test_upstream_process upstream;
        auto yaml = tls_gateway_yaml(cluster.node(0).address(), upstream,
                                     tls_block("      ca_file: \"" + certs.ca_cert + "\"\n"));
        std::string nodes = "    mode: cluster\n    nodes:\n";
        for (const auto& a : cluster.addresses())
            nodes += "      - \"" + a + "\"\n";
        auto at = yaml.find("    address: ");
        REQUIRE(at != std::string::npos);
        yaml.replace(at, yaml.find('\n', at) + 1 - at, nodes);
        auto gw = start_gateway(yaml);

        // Keys on every slot range: each primary is reached (on the TLS port CLUSTER SHARDS
        // lists), and each retry replays.
        std::vector<std::string> keys;
        for (int i = 0; i < 24; ++i)
            keys.push_back(unique_key("tls-cluster-" + std::to_string(i)));
        for (const auto& k : keys)
            CHECK(post(*gw, k, "{}").status == 201);
        for (const auto& k : keys)
            CHECK(post(*gw, k, "{}").header("idempotent-replayed") == "true");
        CHECK(upstream.executions() == keys.size());
        for (std::size_t i = 0; i < cluster.size(); ++i)
            CHECK(std::stoi(cluster.node(i).cli({"DBSIZE"})) > 0);

        // Move an empty slot to another primary behind the gateway's back: the old owner answers
        // MOVED with an address the gateway must reach over TLS.
        // The key is its own hash tag, so the slot of the Redis key (prefix:tenant:key) is its own.
        std::string key = unique_key("tls-moved");
        key.insert(key.begin(), '{');
        key.push_back('}');
        auto slot = cluster.node(0).cli({"CLUSTER", "KEYSLOT", key});
        std::size_t owner = cluster.size();
        for (std::size_t i = 0; i < cluster.size(); ++i)
            if (cluster.node(i).cli({"GET", key}).find("MOVED") == std::string::npos)
                owner = i;
        REQUIRE(owner < cluster.size());
        auto target = (owner + 1) % cluster.size();
        auto target_id = cluster.node(target).cli({"CLUSTER", "MYID"});
        auto owner_id = cluster.node(owner).cli({"CLUSTER", "MYID"});
        // Redis's own procedure: importing on the target and migrating on the owner first, so that
        // the target's SETSLOT NODE bumps its config epoch. Without that, the owner's heartbeat,
        // still claiming the slot at a higher epoch before it is told, could take the slot back in
        // the target's view: each node would then send MOVED to the other.
        CHECK(cluster.node(target).cli({"CLUSTER", "SETSLOT", slot, "IMPORTING", owner_id}) == "OK");
        CHECK(cluster.node(owner).cli({"CLUSTER", "SETSLOT", slot, "MIGRATING", target_id}) == "OK");
        CHECK(cluster.node(target).cli({"CLUSTER", "SETSLOT", slot, "NODE", target_id}) == "OK");
        for (std::size_t i = 0; i < cluster.size(); ++i)
            if (i != target)
                CHECK(cluster.node(i).cli({"CLUSTER", "SETSLOT", slot, "NODE", target_id}) == "OK");
        auto moved = post(*gw, key, "{}");
        CHECK(moved.status == 201);
        CHECK(post(*gw, key, "{}").header("idempotent-replayed") == "true");
        CHECK(std::stoi(cluster.node(target).cli({"CLUSTER", "COUNTKEYSINSLOT", slot})) == 1);
        auto text = http_request(gw->admin_port(), "GET", "/metrics", {}, {}, 5s).body;
        CHECK(text.find("idemgate_redis_cluster_redirects_total{kind=\"moved\"} 0") == std::string::npos);
        CHECK(upstream.executions() == keys.size() + 1);
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
            child_process proc(gateway_bin(), {"--config", path, "--check"});
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
