// SPDX-License-Identifier: Apache-2.0
#include "loader.hpp"

#include <charconv>
#include <limits>
#include <string>
#include <utility>

namespace idemgate::config::detail {

void loader::load_store(const map_view& top, store_config& store)
{
    map_view map(*this, child(top, "store"), "store",
                 {"type", "on_failure", "redis", "memory", "key_secret_env", "hash_keys", "encryption",
                  "local_tier", "refusal"});
    read_string(map, "key_secret_env", store.key_secret_env);
    if (!store.key_secret_env.empty()) {
        const char* value = getenv_(store.key_secret_env.c_str());
        if (!value)
            problem(map.path_of("key_secret_env"),
                    "environment variable " + quote(store.key_secret_env) + " is not set");
        else if (std::string_view(value).size() < 32)
            problem(map.path_of("key_secret_env"),
                    "environment variable " + quote(store.key_secret_env) + " must hold at least 32 bytes");
        else
            store.key_secret = value;
    }
    read_choice(map, "type", "a store type", {{"memory", store_type::memory}, {"redis", store_type::redis}},
                store.type);
    read_choice(map, "on_failure", "a failure mode",
                {{"reject", failure_mode::reject}, {"pass_through", failure_mode::pass_through}},
                store.on_failure);
    read_bool(map, "hash_keys", store.hash_keys);
    if (store.hash_keys && store.key_secret_env.empty())
        problem(map.path_of("hash_keys"),
                "needs store.key_secret_env (keys are stored as HMACs under that secret)");
    load_encryption(map, store.encryption);
    load_redis(map, store.redis);
    load_memory(map, store.memory);
    load_local_tier(map, store.local_tier);
    load_refusal(map, store.refusal);
}

void loader::load_refusal(const map_view& store, refusal_config& refusal)
{
    map_view map(*this, child(store, "refusal"), "store.refusal", {"errors", "window"});
    read_int(map, "errors", refusal.errors, 1, 1000000);
    read_duration(map, "window", refusal.window);
}

void loader::load_memory(const map_view& store, memory_config& memory)
{
    map_view map(*this, child(store, "memory"), "store.memory", {"max_entries", "max_bytes"});
    read_int(map, "max_entries", memory.max_entries, 1, std::numeric_limits<std::size_t>::max());
    read_size(map, "max_bytes", memory.max_bytes, false);
}

void loader::load_local_tier(const map_view& store, local_tier_config& tier)
{
    map_view map(*this, child(store, "local_tier"), "store.local_tier", {"max_bytes", "max_age", "admit"});
    read_size(map, "max_bytes", tier.max_bytes);
    read_duration(map, "max_age", tier.max_age);
    read_choice(map, "admit", "an admission policy",
                {{"replay", tier_admission::replay}, {"complete", tier_admission::complete}}, tier.admit);
}

void loader::load_encryption(const map_view& store, encryption_config& encryption)
{
    map_view map(*this, child(store, "encryption"), "store.encryption", {"key_env", "previous_key_env"});
    read_string(map, "key_env", encryption.key_env);
    read_string(map, "previous_key_env", encryption.previous_key_env);
    encryption.key = record_key(map, "key_env", encryption.key_env);
    encryption.previous_key = record_key(map, "previous_key_env", encryption.previous_key_env);
}

// The 32 raw bytes of an AES-256 key held as 64 hex digits in the variable `name` names; ""
// when `name` is empty or the variable is unusable (then a problem at `key`).
std::string loader::record_key(const map_view& map, std::string_view key, const std::string& name)
{
    if (name.empty())
        return {};
    const char* value = getenv_(name.c_str());
    if (!value || !*value) {
        problem(map.path_of(key), "environment variable " + quote(name) + " is not set");
        return {};
    }
    std::string_view hex(value);
    std::string bytes;
    for (std::size_t i = 0; hex.size() == 64 && i < hex.size(); i += 2) {
        unsigned char byte = 0;
        auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
        if (ec != std::errc{} || end != hex.data() + i + 2)
            break;
        bytes.push_back(static_cast<char>(byte));
    }
    if (bytes.size() != 32) {
        // The value is a secret: say what is wrong with it, never what it is.
        problem(map.path_of(key), "environment variable " + quote(name) +
                                      " must hold 64 hex digits (a 32-byte AES-256 key), it holds " +
                                      std::to_string(hex.size()) + " characters" +
                                      (hex.size() == 64 ? " that are not all hex digits" : ""));
        return {};
    }
    return bytes;
}

} // namespace idemgate::config::detail
