// SPDX-License-Identifier: Apache-2.0
// A store backend's section is one alternative of config::backend_config, chosen by store.type;
// its row (store/src/backend_factory.cpp) says its warnings and consistency guarantee. What
// --print-config writes of the store did not change with it: every backend's section, the chosen
// one's values and, for another backend, what the file gives (checked, never used) or its
// defaults.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <idemgate/store/backend_factory.hpp>
#include <string>
#include <variant>
#include <yaml-cpp/yaml.h>

using namespace config_test;

namespace {

cfg::config with_store(const std::string& store_block, const char* (*env)(const char*) = no_env)
{
    return cfg::parse(minimal + "store:\n" + store_block, env);
}

// The store map --print-config writes for `c`, read back as YAML.
YAML::Node printed_store(const cfg::config& c)
{
    return YAML::Load(cfg::print_config(c))["store"];
}

} // namespace

TEST_CASE("store.type chooses its backend's section, and --print-config writes that one")
{
    auto memory = with_store("  type: memory\n  memory: { max_entries: 7 }\n");
    CHECK(memory.store.type() == cfg::store_type::memory);
    CHECK(std::holds_alternative<cfg::backend_config_of<cfg::store_type::memory>>(memory.store.backend));
    REQUIRE(memory.store.memory());
    CHECK(memory.store.memory()->max_entries == 7);
    CHECK(memory.store.redis() == nullptr);
    CHECK(memory.store.unchosen.empty());

    auto redis = with_store("  type: redis\n  redis: { db: 4 }\n");
    CHECK(redis.store.type() == cfg::store_type::redis);
    CHECK(std::holds_alternative<cfg::backend_config_of<cfg::store_type::redis>>(redis.store.backend));
    REQUIRE(redis.store.redis());
    CHECK(redis.store.redis()->db == 4);
    CHECK(redis.store.memory() == nullptr);

    auto map = with_store("  type: map\n");
    CHECK(map.store.type() == cfg::store_type::map);
    CHECK(std::holds_alternative<cfg::map_config>(map.store.backend));
    CHECK(map.store.redis() == nullptr);
    CHECK(map.store.memory() == nullptr);

    // No store map at all: the memory store at its defaults.
    auto absent = cfg::parse(minimal, no_env);
    REQUIRE(absent.store.memory());
    CHECK(absent.store.memory()->max_entries == cfg::memory_config{}.max_entries);

    // Printed: store.type and the chosen section's values, not the defaults of a backend the file
    // did not choose or give; read back, the same alternative with the same values.
    auto m = printed_store(memory);
    CHECK(m["type"].as<std::string>() == "memory");
    CHECK(m["memory"]["max_entries"].as<std::size_t>() == 7);
    CHECK_FALSE(m["redis"]);
    auto r = printed_store(redis);
    CHECK(r["type"].as<std::string>() == "redis");
    CHECK(r["redis"]["db"].as<int>() == 4);
    CHECK_FALSE(r["memory"]);
    auto p = printed_store(map);
    CHECK(p["type"].as<std::string>() == "map");
    CHECK_FALSE(p["redis"]);
    CHECK_FALSE(p["memory"]);
    CHECK_FALSE(p["map"]); // a backend without keys has no section to print
    for (const auto* c : {&memory, &redis, &map}) {
        auto again = cfg::parse(cfg::print_config(*c), no_env);
        CHECK(again.store.backend.index() == c->store.backend.index());
        CHECK(cfg::print_config(again) == cfg::print_config(*c));
    }
}

TEST_CASE("a section given for a backend store.type does not name is checked, printed back and unused")
{
    // Refused with its key path like the chosen one's...
    CHECK(joined(problems_of(minimal + "store:\n  type: memory\n  redis: { db: 99 }\n")) ==
          "store.redis.db: 99 out of range (0-15)");
    CHECK(joined(problems_of(minimal + "store:\n  type: redis\n  memory: { max_entries: 0 }\n")) ==
          "store.memory.max_entries: 0 out of range (1-18446744073709551615)");
    // ...and, when valid, kept for --print-config only: the store made is store.type's.
    auto c = with_store("  type: memory\n  redis: { db: 3, key_prefix: other }\n");
    CHECK(c.store.redis() == nullptr);
    REQUIRE(c.store.unchosen.size() == 1);
    CHECK(c.store.given<cfg::redis_config>().db == 3);
    CHECK(printed_store(c)["redis"]["db"].as<int>() == 3);
    CHECK(printed_store(c)["redis"]["key_prefix"].as<std::string>() == "other");
    CHECK(idemgate::store::make_backend(c.store)->kind() == "memory");
}

TEST_CASE("each backend's row says its own warnings and consistency guarantee")
{
    auto key_env = [](const char* name) -> const char* {
        static const std::string key(64, 'a'), secret(32, 's');
        std::string_view n(name);
        return n == "KEY_A" ? key.c_str() : n == "KEY_SECRET" ? secret.c_str() : nullptr;
    };
    const std::string store_wide =
        "  key_secret_env: KEY_SECRET\n  hash_keys: true\n  encryption: { key_env: KEY_A }\n";
    // The protection decorator applies hash_keys and encryption over every backend: the memory
    // store's row has nothing to warn about, nor a guarantee across failovers to state.
    auto memory = with_store("  type: memory\n" + store_wide, key_env);
    auto w = idemgate::store::backend_warnings(memory.store);
    CHECK(w.empty());
    CHECK(idemgate::store::consistency_guarantee(memory.store).empty());

    // The Redis store warns about an unverified server.
    auto redis = with_store(
        "  type: redis\n" + store_wide + "  redis:\n    tls: { enabled: true, verify: false }\n", key_env);
    w = idemgate::store::backend_warnings(redis.store);
    REQUIRE(w.size() == 1);
    CHECK(w[0].starts_with("store.redis.tls.verify: false: "));
    CHECK(idemgate::store::consistency_guarantee(redis.store).starts_with("store.redis.consistency async: "));

    // Another backend's section warns about nothing: it is not used.
    auto unused = with_store("  type: memory\n  redis:\n    tls: { enabled: true, verify: false }\n");
    CHECK(idemgate::store::backend_warnings(unused.store).empty());
    CHECK(idemgate::store::consistency_guarantee(unused.store).empty());
}
