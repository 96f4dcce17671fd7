// SPDX-License-Identifier: Apache-2.0
// Config of the store: Redis modes (cluster, sentinel), hashed keys, records encrypted at rest,
// the ACL user, and that the memory store applies them without a warning.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <idemgate/store/backend_factory.hpp>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

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
    CHECK(c.store.given<cfg::redis_config>().mode == cfg::redis_mode::cluster);
    REQUIRE(c.store.given<cfg::redis_config>().nodes.size() == 2);
    CHECK(c.store.given<cfg::redis_config>().nodes[1].port == 7001);
    CHECK(c.store.given<cfg::redis_config>().topology_refresh == std::chrono::seconds(5));
    CHECK(c.store.given<cfg::redis_config>().min_replicas_ack == 1);

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
    CHECK(s.store.given<cfg::redis_config>().mode == cfg::redis_mode::sentinel);
    CHECK(s.store.given<cfg::redis_config>().sentinel_master_name == "orders-primary");

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
// Hashed keys, records encrypted at rest, the Redis ACL user.

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
    CHECK(c.store.given<cfg::redis_config>().username == "idem");
    CHECK(c.store.given<cfg::redis_config>().password == "s3cret");
    CHECK(cfg::warnings(c).empty());
    CHECK(idemgate::store::backend_warnings(c.store).empty());

    auto defaults = cfg::parse(minimal, crypto_env);
    CHECK_FALSE(defaults.store.hash_keys);
    CHECK_FALSE(defaults.store.encryption.enabled());
    CHECK(defaults.store.given<cfg::redis_config>().username.empty());
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

TEST_CASE("hash_keys and encryption over the memory store are applied, so nothing warns")
{
    auto c = cfg::parse(minimal + R"(store:
  type: memory
  key_secret_env: KEY_SECRET
  hash_keys: true
  encryption: { key_env: KEY_A }
)",
                        crypto_env);
    CHECK(cfg::warnings(c).empty());
    CHECK(idemgate::store::backend_warnings(c.store).empty()); // the decorator applies both
}

TEST_CASE("store health: store.refusal, store.redis.allow_eviction and readiness.store, with their problems")
{
    auto defaults = cfg::parse(minimal, no_env);
    CHECK(defaults.store.refusal.errors == 5);
    CHECK(defaults.store.refusal.window == 10s);
    CHECK_FALSE(defaults.store.given<cfg::redis_config>().allow_eviction);
    CHECK(defaults.readiness.store == cfg::store_readiness::required);

    auto c = cfg::parse(minimal + R"(store:
  refusal: { errors: 2, window: 30s }
  redis: { allow_eviction: true }
readiness:
  store: ignore
)",
                        no_env);
    CHECK(c.store.refusal.errors == 2);
    CHECK(c.store.refusal.window == 30s);
    CHECK(c.store.given<cfg::redis_config>().allow_eviction);
    CHECK(c.readiness.store == cfg::store_readiness::ignore);
    // --print-config writes them back.
    auto again = cfg::parse(cfg::print_config(c), no_env);
    CHECK(again.store.refusal.errors == 2);
    CHECK(again.store.refusal.window == 30s);
    CHECK(again.store.given<cfg::redis_config>().allow_eviction);
    CHECK(again.readiness.store == cfg::store_readiness::ignore);

    const std::pair<std::string, std::string> rows[] = {
        {"store:\n  refusal: { errors: 0 }\n", "store.refusal.errors: 0 out of range (1-1000000)"},
        {"store:\n  refusal: { window: 0s }\n", "store.refusal.window: must be greater than 0"},
        {"store:\n  refusal: { window: soon }\n", "store.refusal.window: \"soon\" is not a duration"},
        {"store:\n  refusal: { count: 3 }\n", "store.refusal.count: unknown key"},
        {"store:\n  redis: { allow_eviction: maybe }\n",
         "store.redis.allow_eviction: \"maybe\" is not a boolean (use true or false)"},
        {"readiness:\n  store: optional\n",
         "readiness.store: \"optional\" is not a readiness rule (use required or ignore)"},
        {"readiness:\n  upstream: required\n", "readiness.upstream: unknown key"},
    };
    for (const auto& [yaml, problem] : rows) {
        CAPTURE(yaml);
        CHECK(joined(problems_of(minimal + yaml)).starts_with(problem));
    }
}

TEST_CASE("a reload compares the restart-only sections without their reloadable parts")
{
    const std::string before = "store:\n  type: redis\n  refusal: { errors: 5 }\nthreads: 2\n";
    const std::string refusal_only = "store:\n  type: redis\n  refusal: { errors: 9 }\nthreads: 2\n";
    const std::string type_too = "store:\n  type: memory\n  refusal: { errors: 9 }\nthreads: 2\n";
    const std::vector<std::string> keys{"store", "threads"};
    const std::vector<std::string> parts{"store.refusal"};
    CHECK(cfg::changed_sections(before, refusal_only, keys, parts).empty());
    CHECK(cfg::changed_sections(before, refusal_only, keys) == std::vector<std::string>{"store"});
    CHECK(cfg::changed_sections(before, type_too, keys, parts) == std::vector<std::string>{"store"});
}
