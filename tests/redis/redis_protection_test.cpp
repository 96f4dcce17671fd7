// SPDX-License-Identifier: Apache-2.0
// Record protection against a real redis-server: records encrypted at rest, hashed keys, key rotation,
// and an ACL user, first through the store, then through the real idemgate binary.
#include "redis_test_support.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/protected_backend.hpp>
#include <idemgate/store/record_cipher.hpp>
#include <idemgate/store/record_codec.hpp>
#include <idemgate/store/redis_store.hpp>
#include <idemgate/test/harness.hpp>
#include <idemgate/test/secrets.hpp>
#include <regex>
#include <unistd.h>

using namespace idemgate;
using namespace idemgate::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;

using idemgate::test::card;
using idemgate::test::key_a;
using idemgate::test::key_b;

namespace {

const std::string hash_secret(32, 's');

std::string hex_of(const std::string& bytes)
{
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 0xf]);
    }
    return out;
}

// One store session on its own I/O thread; `op` runs a coroutine on it and waits.
struct protected_store {
    // The Redis store under the protection decorator, as make_backend builds it with hash_keys or
    // encryption on (`backend` is the Redis store itself, for its counters).
    protected_store(const config::redis_config& cfg, store::record_protection protection,
                    bool wait_ready = true)
        : backend(store::make_redis_backend(cfg, redis_options_for(protection))),
          guarded(protection.enabled() ? store::protect_backend(backend, std::move(protection)) : backend),
          session(guarded->open_session(io.executor()))
    {
        if (wait_ready)
            REQUIRE(eventually([&] { return backend->ready(); }));
    }
    ~protected_store()
    {
        session.reset();
        CHECK(io.finish());
    }

    template<class F>
    auto op(F f)
    {
        return io.run([&]() -> decltype(f(*session)) { co_return co_await f(*session); });
    }

    // reserve, then complete with `body`: a recorded answer. (Records are locals: the session's
    // coroutines keep references to their arguments.)
    void record(store::scope s, const std::string& token, const std::string& body)
    {
        auto in_flight = in_flight_record(token);
        auto r = op([&](store::session& ss) { return ss.reserve(s, in_flight, 30s); });
        REQUIRE_FALSE(r.ec);
        REQUIRE(r.acquired);
        auto done = completed_record(token, body);
        REQUIRE_FALSE(op([&](store::session& ss) { return ss.complete(s, done, 60s); }));
    }

    // What a new request for `s` finds (reserve acquires a free key, reports a held one).
    store::reserve_result lookup_by_reserve(store::scope s)
    {
        auto in_flight = in_flight_record("f0f0f0f0f0f0f0f0");
        return op([&](store::session& ss) { return ss.reserve(s, in_flight, 30s); });
    }

    static store::redis_options redis_options_for(const store::record_protection& protection)
    {
        store::redis_options o;
        o.keep_sealed = protection.enabled();
        return o;
    }

    io_thread io;
    std::shared_ptr<store::redis_backend> backend;
    std::shared_ptr<store::backend> guarded;
    std::unique_ptr<store::session> session;
};

store::record_protection protection(std::string current, std::string previous = {}, bool hash = true)
{
    store::record_protection o;
    o.key_secret = hash ? hash_secret : std::string();
    o.cipher = store::record_cipher(current, previous);
    return o;
}

// The bulk string of a RESP reply, or "" for anything else.
std::string resp_string(const std::string& reply)
{
    if (!reply.starts_with("$") || reply == "$-1\r\n")
        return {};
    auto start = reply.find("\r\n") + 2;
    return reply.substr(start, reply.size() - start - 2);
}

} // namespace

TEST_SUITE("redis protection: store")
{

    TEST_CASE("with hash_keys and encryption Redis holds neither the key, the tenant nor the body")
    {
        redis_server redis;
        protected_store s(redis_config_for(redis.port()), protection(key_a));
        store::scope scope{"acme-tenant", "order-key-77"};
        s.record(scope, "0123456789abcdef", "{\"card\":\"" + card + "\"}");

        auto keys = redis.command({"KEYS", "*"});
        auto expected = store::hashed_redis_key("test", scope, hash_secret);
        CHECK(keys == "*1\r\n$" + std::to_string(expected.size()) + "\r\n" + expected + "\r\n");
        CHECK(keys.find("acme-tenant") == std::string::npos);
        CHECK(keys.find("order-key-77") == std::string::npos);
        auto value = resp_string(redis.command({"GET", expected}));
        REQUIRE_FALSE(value.empty());
        CHECK(value.find(card) == std::string::npos);
        CHECK(value.find("application/json") == std::string::npos);
        CHECK(value[0] == '\x02');

        auto replay = s.lookup_by_reserve(scope);
        REQUIRE_FALSE(replay.ec);
        REQUIRE(replay.existing);
        CHECK(*replay.existing == completed_record("0123456789abcdef", "{\"card\":\"" + card + "\"}"));

        // The admin operations find the same hashed key.
        auto found = s.op([&](store::session& ss) { return ss.lookup(scope); });
        REQUIRE_FALSE(found.ec);
        REQUIRE(found.existing);
        CHECK(found.existing->response.body.find(card) != std::string::npos);
    }

    TEST_CASE("a store with another key answers record_corrupt and counts it; rotation keeps old records")
    {
        redis_server redis;
        store::scope old_scope{"", "written-under-a"};
        store::scope new_scope{"", "written-under-b"};
        {
            protected_store a(redis_config_for(redis.port()), protection(key_a));
            a.record(old_scope, "aaaa0000aaaa0000", "old body");
        }
        {
            protected_store wrong(redis_config_for(redis.port()), protection(key_b));
            auto r = wrong.lookup_by_reserve(old_scope);
            CHECK(r.ec == error::record_corrupt);
            CHECK_FALSE(r.acquired);
            CHECK_FALSE(r.existing);
            CHECK(wrong.backend->stats().errors_corrupt.load() == 1);
            auto looked = wrong.op([&](store::session& ss) { return ss.lookup(old_scope); });
            CHECK(looked.ec == error::record_corrupt);
            CHECK(wrong.backend->stats().errors_corrupt.load() == 2);
        }
        {
            protected_store rotated(redis_config_for(redis.port()), protection(key_b, key_a));
            auto r = rotated.lookup_by_reserve(old_scope);
            REQUIRE_FALSE(r.ec);
            REQUIRE(r.existing);
            CHECK(r.existing->response.body == "old body");
            rotated.record(new_scope, "bbbb0000bbbb0000", "new body");
        }
        {
            // After the old records expired the previous key is dropped: records under B still open.
            protected_store b_only(redis_config_for(redis.port()), protection(key_b));
            auto r = b_only.lookup_by_reserve(new_scope);
            REQUIRE_FALSE(r.ec);
            REQUIRE(r.existing);
            CHECK(r.existing->response.body == "new body");
            CHECK(b_only.lookup_by_reserve(old_scope).ec == error::record_corrupt);
        }
    }

    TEST_CASE("a sealed record copied under another key is record_corrupt")
    {
        redis_server redis;
        protected_store s(redis_config_for(redis.port()), protection(key_a));
        store::scope alice{"alice", "k"};
        store::scope mallory{"mallory", "k"};
        s.record(alice, "0123456789abcdef", "alice's answer");
        auto from = store::hashed_redis_key("test", alice, hash_secret);
        auto to = store::hashed_redis_key("test", mallory, hash_secret);
        REQUIRE(redis.command({"COPY", from, to}) == ":1\r\n");
        CHECK(s.lookup_by_reserve(mallory).ec == error::record_corrupt);
        CHECK_FALSE(s.lookup_by_reserve(alice).ec);
    }

    TEST_CASE("a record the previous release stored (sealed by the Redis store itself) replays through the "
              "decorator")
    {
        redis_server redis;
        store::scope scope{"acme-tenant", "upgraded-key"};
        // The bytes and the key the previous release wrote: the Redis store hashed and sealed them.
        auto key = store::hashed_redis_key("test", scope, hash_secret);
        auto done = completed_record("0123456789abcdef", "{\"card\":\"" + card + "\"}");
        std::string old_bytes;
        REQUIRE_FALSE(store::encode_record(done, old_bytes, store::record_cipher(key_a), key));
        REQUIRE(redis.command({"SET", key, old_bytes}) == "+OK\r\n");

        protected_store s(redis_config_for(redis.port()), protection(key_b, key_a));
        auto replay = s.lookup_by_reserve(scope);
        REQUIRE_FALSE(replay.ec);
        REQUIRE(replay.existing);
        CHECK(*replay.existing == done);
        CHECK(resp_string(redis.command({"GET", key})) == old_bytes); // only read

        // The quota keys keep their tag: {<hex HMAC of the tenant>}.
        store::tenant_limits limits{1, 0};
        auto admitted = s.op([&](store::session& ss) {
            return ss.quotas()->admit("acme-tenant", "0123456789abcdef", limits, 30s);
        });
        REQUIRE_FALSE(admitted.ec);
        CHECK(admitted.verdict == store::admission::admitted);
        auto quota = store::redis_quota_keys("test", "acme-tenant", hash_secret);
        CHECK(redis.command({"EXISTS", quota[0]}) == ":1\r\n");
        CHECK(redis.command({"KEYS", "*acme*"}) == "*0\r\n");
    }

    TEST_CASE("an ACL user logs in with AUTH username password; a wrong password never becomes ready")
    {
        redis_server redis;
        REQUIRE(redis.command({"ACL", "SETUSER", "idem", "on", ">pw", "~test:*", "resetchannels", "-@all",
                               "+get", "+set", "+del", "+pttl", "+evalsha", "+eval", "+ping"}) == "+OK\r\n");
        REQUIRE(redis.command({"ACL", "SETUSER", "default", "off"}) == "+OK\r\n"); // last plain command

        auto cfg = redis_config_for(redis.port());
        cfg.username = "idem";
        cfg.password = "pw";
        {
            protected_store s(cfg, protection(key_a, {}, false));
            store::scope scope{"t", "acl-key"};
            s.record(scope, "0123456789abcdef", "acl body");
            auto r = s.lookup_by_reserve(scope);
            REQUIRE_FALSE(r.ec);
            REQUIRE(r.existing);
            CHECK(r.existing->response.body == "acl body");
            auto found = s.op([&](store::session& ss) { return ss.lookup(scope); });
            CHECK_FALSE(found.ec);
            bool removed = false;
            CHECK_FALSE(s.op([&](store::session& ss) { return ss.remove(scope, removed); }));
            CHECK(removed);
        }
        cfg.password = "wrong";
        protected_store refused(cfg, {}, false);
        CHECK_FALSE(eventually([&] { return refused.backend->ready(); }, 1500ms));
        CHECK(refused.backend->stats().connects.load() == 0);
    }

} // TEST_SUITE

// ---------------------------------------------------------------------------------------------

namespace {

struct protected_gateway_options {
    std::string encryption;  // lines under store.encryption (4-space indent)
    std::string store_extra; // lines under store (2-space indent)
    std::string redis_extra; // lines under store.redis (4-space indent)
    std::string on_failure = "reject";
    std::string idempotency_extra; // lines under the route's idempotency (6-space indent)
};

std::string protected_yaml(const redis_server& redis, const test_upstream_process& upstream,
                           const protected_gateway_options& o)
{
    std::string yaml = "listen: \"${LISTEN}\"\n"
                       "admin_listen: \"${ADMIN}\"\n"
                       "threads: 2\n"
                       "access_log: false\n"
                       "admin:\n"
                       "  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n"
                       "store:\n"
                       "  type: redis\n"
                       "  on_failure: " +
                       o.on_failure + "\n" + o.store_extra;
    if (!o.encryption.empty())
        yaml += "  encryption:\n" + o.encryption;
    yaml += "  redis:\n"
            "    address: \"" +
            redis.address() +
            "\"\n"
            "    key_prefix: gw\n"
            "    command_timeout: 250ms\n"
            "    reconnect_backoff_max: 200ms\n" +
            o.redis_extra +
            "upstreams:\n"
            "  orders:\n"
            "    address: \"" +
            upstream.address() +
            "\"\n"
            "routes:\n"
            "  - path_prefix: \"/api/\"\n"
            "    upstream: orders\n"
            "    idempotency:\n"
            "      tenant_header: X-Tenant-ID\n"
            "      record_ttl: 1h\n"
            "      on_status:\n"
            "        \"500\": hold\n" +
            o.idempotency_extra;
    return yaml;
}

using env_list = std::vector<std::pair<std::string, std::string>>;

env_list gateway_env(env_list extra = {})
{
    extra.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", "admin-token-0123456789");
    extra.emplace_back("IDEMGATE_TEST_KEY_SECRET", hash_secret);
    extra.emplace_back("IDEMGATE_TEST_KEY_A", hex_of(key_a));
    extra.emplace_back("IDEMGATE_TEST_KEY_B", hex_of(key_b));
    return extra;
}

int readyz_status(const gateway_process& gw)
{
    try {
        return http_request(gw.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
    } catch (const std::exception&) {
        return 0;
    }
}

std::unique_ptr<gateway_process> ready_gateway(const std::string& yaml, env_list env = gateway_env())
{
    auto gw = std::make_unique<gateway_process>(yaml, std::move(env));
    REQUIRE_MESSAGE(eventually([&] { return readyz_status(*gw) == 200; }, 10s), gw->process().output());
    return gw;
}

http_response order(const gateway_process& gw, const std::string& tenant, const std::string& key)
{
    return http_request(
        gw.port(), "POST", "/api/orders",
        {{"Idempotency-Key", key}, {"X-Tenant-ID", tenant}, {"Content-Type", "application/json"}},
        "{\"card\":\"" + card + "\"}", 5s);
}

std::string fresh_key(const std::string& stem)
{
    static int n = 0;
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

// Removes the X-Request-Id line (each answer carries its own request's ID).
std::string without_request_id(std::string raw)
{
    auto at = raw.find("X-Request-Id: ");
    REQUIRE(at != std::string::npos);
    raw.erase(at, raw.find("\r\n", at) + 2 - at);
    return raw;
}

// Removes the line of field `name` (its first occurrence), which must be there.
std::string without_field(std::string raw, const std::string& name)
{
    auto at = raw.find("\r\n" + name + ": ");
    REQUIRE_MESSAGE(at != std::string::npos, name);
    raw.erase(at + 2, raw.find("\r\n", at + 2) + 2 - (at + 2));
    return raw;
}

// The replay is the first answer byte for byte, plus the Idempotent-Replayed line, with its own
// request ID, its own Date and its own Idempotency-Status (replayed, where the first said
// executed): the fields every answer gets as it is written.
void check_byte_identical_replay(const http_response& first, const http_response& replay)
{
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("x-request-id") != first.header("x-request-id"));
    CHECK(first.header("idempotency-status") == "executed");
    CHECK(replay.header("idempotency-status") == "replayed");
    auto per_answer = [](std::string raw) {
        return without_field(without_field(without_request_id(std::move(raw)), "Idempotency-Status"), "Date");
    };
    auto raw = per_answer(replay.raw);
    const std::string marker = "Idempotent-Replayed: true\r\n";
    auto at = raw.find(marker);
    REQUIRE(at != std::string::npos);
    raw.erase(at, marker.size());
    CHECK(raw == per_answer(first.raw));
}

const std::string encrypt_with_a = "    key_env: IDEMGATE_TEST_KEY_A\n";
const std::string hashed_keys = "  key_secret_env: IDEMGATE_TEST_KEY_SECRET\n  hash_keys: true\n";

} // namespace

TEST_SUITE("redis protection: gateway")
{

    TEST_CASE("the gateway stores encrypted records under hashed keys and replays them byte for byte")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto gw = ready_gateway(protected_yaml(redis, upstream, {encrypt_with_a, hashed_keys}));
        auto key = fresh_key("card-order");
        auto first = order(*gw, "acme-corp", key);
        REQUIRE(first.status == 201);
        REQUIRE(first.body.find(card) != std::string::npos); // the upstream echoes the body

        auto keys = redis.command({"KEYS", "*"});
        CHECK(keys.find(key) == std::string::npos);
        CHECK(keys.find("acme-corp") == std::string::npos);
        std::smatch m;
        REQUIRE_MESSAGE(std::regex_search(keys, m, std::regex("gw:\\{[0-9a-f]{64}\\}")), keys);
        auto value = resp_string(redis.command({"GET", m.str()}));
        REQUIRE_FALSE(value.empty());
        CHECK(value.find(card) == std::string::npos);
        CHECK(value.find(key) == std::string::npos); // the echo holds the key header too
        CHECK(value.find("acme-corp") == std::string::npos);

        auto replay = order(*gw, "acme-corp", key);
        check_byte_identical_replay(first, replay);
        CHECK(upstream.executions() == 1);

        // The admin API reads the same record.
        auto admin = http_request(gw->admin_port(), "GET", "/admin/v1/records?tenant=acme-corp&key=" + key,
                                  {{"Authorization", "Bearer admin-token-0123456789"}}, {}, 2s);
        CHECK(admin.status == 200);
        CHECK(admin.body.find("\"state\":\"completed\"") != std::string::npos);
    }

    TEST_CASE("a gateway with the wrong key answers 503 and logs a corrupt record, never a wrong answer")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto key = fresh_key("wrong-key");
        {
            auto writer = ready_gateway(protected_yaml(redis, upstream, {encrypt_with_a, hashed_keys}));
            REQUIRE(order(*writer, "acme", key).status == 201);
        }
        auto reader = ready_gateway(
            protected_yaml(redis, upstream, {"    key_env: IDEMGATE_TEST_KEY_B\n", hashed_keys}));
        for (int i = 0; i < 3; ++i) {
            auto res = order(*reader, "acme", key);
            CHECK(res.status == 503);
            CHECK(res.header("content-type").find("problem+json") != std::string::npos);
            CHECK(res.body.find(card) == std::string::npos);
        }
        CHECK(upstream.executions() == 1);
        auto logged = reader->process().wait_for_line(
            [](const std::string& line) {
                return line.find("stored idempotency record does not decode; not served") !=
                           std::string::npos &&
                       line.find("neither the current nor the previous key") != std::string::npos;
            },
            5s);
        CHECK_MESSAGE(logged, reader->process().output());
        auto metrics = http_request(reader->admin_port(), "GET", "/metrics", {}, {}, 2s);
        CHECK(metrics.body.find("idemgate_redis_errors_total{kind=\"corrupt_record\"} 3") !=
              std::string::npos);
    }

    TEST_CASE("rotation: records written under key A replay when A is the previous key and B the current")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto old_key = fresh_key("under-a");
        auto new_key = fresh_key("under-b");
        http_response old_first;
        {
            auto gw = ready_gateway(protected_yaml(redis, upstream, {encrypt_with_a, hashed_keys}));
            old_first = order(*gw, "acme", old_key);
            REQUIRE(old_first.status == 201);
        }
        http_response new_first;
        {
            auto gw = ready_gateway(protected_yaml(
                redis, upstream,
                {"    key_env: IDEMGATE_TEST_KEY_B\n    previous_key_env: IDEMGATE_TEST_KEY_A\n",
                 hashed_keys}));
            check_byte_identical_replay(old_first, order(*gw, "acme", old_key));
            new_first = order(*gw, "acme", new_key);
            REQUIRE(new_first.status == 201);
        }
        auto gw = ready_gateway(
            protected_yaml(redis, upstream, {"    key_env: IDEMGATE_TEST_KEY_B\n", hashed_keys}));
        check_byte_identical_replay(new_first, order(*gw, "acme", new_key));
        CHECK(order(*gw, "acme", old_key).status == 503); // A is gone: its records are never served
        CHECK(upstream.executions() == 2);
    }

    TEST_CASE("the smallest ACL in the README serves the gateway; a wrong password keeps it unready")
    {
        redis_server redis;
        test_upstream_process upstream;
        // docs/operations/redis.md, "Redis: encryption, hashed keys, ACL user": the commands the store sends.
        REQUIRE(redis.command({"ACL", "SETUSER", "idemgate", "on", ">gw-password", "~gw:*", "resetchannels",
                               "-@all", "+get", "+set", "+del", "+pttl", "+evalsha", "+eval", "+ping",
                               "+zadd", "+zrem", "+zrangebylex"}) == "+OK\r\n");
        REQUIRE(redis.command({"ACL", "SETUSER", "default", "off"}) == "+OK\r\n");
        protected_gateway_options o;
        o.redis_extra = "    username: idemgate\n    password_env: IDEMGATE_TEST_REDIS_PASSWORD\n";
        {
            auto gw = ready_gateway(protected_yaml(redis, upstream, o),
                                    gateway_env({{"IDEMGATE_TEST_REDIS_PASSWORD", "gw-password"}}));
            auto key = fresh_key("acl");
            auto first = order(*gw, "acme", key);
            REQUIRE(first.status == 201);
            check_byte_identical_replay(first, order(*gw, "acme", key));
            auto admin_headers = std::vector<std::pair<std::string, std::string>>{
                {"Authorization", "Bearer admin-token-0123456789"}};
            auto target = "/admin/v1/records?tenant=acme&key=" + key;
            CHECK(http_request(gw->admin_port(), "GET", target, admin_headers, {}, 2s).status == 200);
            CHECK(http_request(gw->admin_port(), "DELETE", target, admin_headers, {}, 2s).status == 204);
            CHECK(order(*gw, "acme", key).status == 201); // deleted: runs again
            CHECK(upstream.executions() == 2);
            // A held key: listed on the index of held keys, resolved, and off the index again.
            auto held_key = fresh_key("acl-held");
            auto crashed = http_request(gw->port(), "POST", "/api/orders",
                                        {{"Idempotency-Key", held_key},
                                         {"X-Tenant-ID", "acme"},
                                         {"X-Test-Status", "500"},
                                         {"Content-Type", "application/json"}},
                                        "{}", 5s);
            REQUIRE(crashed.header("idempotency-status") == "held");
            auto listed =
                http_request(gw->admin_port(), "GET", "/admin/v1/held?tenant=acme", admin_headers, {}, 2s);
            CHECK(listed.status == 200);
            CHECK(listed.body.find("\"record_id\"") != std::string::npos);
            auto resolved = http_request(gw->admin_port(), "POST", "/admin/v1/records/resolve", admin_headers,
                                         R"({"tenant":"acme","key":")" + held_key +
                                             R"(","resolution":"executed","status":201,"reason":"acl"})",
                                         2s);
            CHECK(resolved.status == 200);
            listed =
                http_request(gw->admin_port(), "GET", "/admin/v1/held?tenant=acme", admin_headers, {}, 2s);
            CHECK(listed.body.find("\"held\":[]") != std::string::npos);
            CHECK(upstream.executions() == 3);
            // CONFIG is not granted: the eviction check says so and the gateway keeps serving.
            CHECK(gw->process().wait_for_line(
                [](const std::string& line) {
                    return line.find("could not read redis maxmemory-policy") != std::string::npos;
                },
                5s));
        }
        auto refused = std::make_unique<gateway_process>(
            protected_yaml(redis, upstream, o), gateway_env({{"IDEMGATE_TEST_REDIS_PASSWORD", "nope"}}));
        auto why = refused->process().wait_for_line(
            [](const std::string& line) { return line.find("redis unreachable") != std::string::npos; }, 5s);
        REQUIRE_MESSAGE(why, refused->process().output());
        CHECK(why->find("AUTH (user idemgate)") != std::string::npos);
        CHECK(why->find("WRONGPASS") != std::string::npos);
        CHECK(why->find("nope") == std::string::npos);
        CHECK(readyz_status(*refused) == 503);
        CHECK(order(*refused, "acme", fresh_key("refused")).status == 503);
        CHECK(upstream.executions() == 3);
    }

    TEST_CASE("a shadow route's report needs HINCRBY, PEXPIRE and HGETALL; refused, no answer changes")
    {
        redis_server redis;
        test_upstream_process upstream;
        // docs/operations/redis.md: the smallest ACL plus what a shadow route adds.
        REQUIRE(redis.command({"ACL", "SETUSER", "idemgate", "on", ">gw-password", "~gw:*", "resetchannels",
                               "-@all", "+get", "+set", "+del", "+pttl", "+evalsha", "+eval", "+ping",
                               "+hincrby", "+pexpire", "+hgetall"}) == "+OK\r\n");
        // The default user stays on: the test takes HINCRBY away from the gateway's user below.
        protected_gateway_options o;
        o.redis_extra = "    username: idemgate\n    password_env: IDEMGATE_TEST_REDIS_PASSWORD\n";
        o.idempotency_extra = "      mode: shadow\n";
        auto gw = ready_gateway(protected_yaml(redis, upstream, o),
                                gateway_env({{"IDEMGATE_TEST_REDIS_PASSWORD", "gw-password"}}));
        auto key = fresh_key("shadow");
        CHECK(order(*gw, "acme", key).status == 201);
        CHECK(order(*gw, "acme", key).status == 201); // shadow mode: executed again
        const std::vector<std::pair<std::string, std::string>> admin_headers{
            {"Authorization", "Bearer admin-token-0123456789"}};
        auto report = http_request(gw->admin_port(), "GET", "/admin/v1/shadow", admin_headers, {}, 2s);
        REQUIRE(report.status == 200);
        CHECK(report.body.find(R"("since_start":{"keyed":2,"duplicates_executed":1,)") != std::string::npos);
        // Without HINCRBY the counts stay in the process and the client sees nothing of it.
        REQUIRE(redis.command({"ACL", "SETUSER", "idemgate", "-hincrby"}) == "+OK\r\n");
        CHECK(order(*gw, "acme", key).status == 201);
        CHECK(http_request(gw->admin_port(), "GET", "/admin/v1/shadow", admin_headers, {}, 2s).status == 200);
        CHECK(gw->process().wait_for_line(
            [](const std::string& line) {
                return line.find("store could not add to the shadow report") != std::string::npos;
            },
            5s));
        CHECK(upstream.executions() == 3);
        // The report is read by a script calling HGETALL, which Redis checks against the user.
        REQUIRE(redis.command({"ACL", "SETUSER", "idemgate", "-hgetall"}) == "+OK\r\n");
        CHECK(http_request(gw->admin_port(), "GET", "/admin/v1/shadow", admin_headers, {}, 2s).status == 503);
    }

} // TEST_SUITE
