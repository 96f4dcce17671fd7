// SPDX-License-Identifier: Apache-2.0
// The store's keys (keys.hpp): store.* and the sections every backend shares; the Redis
// backend's own section is redis_keys.cpp.
#include "keys.hpp"

#include <boost/describe/enum.hpp>
#include <boost/mp11/algorithm.hpp>
#include <charconv>
#include <string>
#include <utility>
#include <variant>

namespace idemgate::config::detail {

namespace {

// store.type accepts the test-only backend without offering it: a problem's message names the
// shipped types only, and a build without the backend refuses it in the store's check.
constexpr const char* unlisted_store_type = "map";

static_assert(std::variant_size_v<backend_config> ==
                  boost::mp11::mp_size<boost::describe::describe_enumerators<store_type>>::value,
              "one section alternative per store_type (in its order: memory, redis, map)");

// store.type: choosing a backend holds its section (at its defaults until its own key is read).
struct a_store_type {
    void read(loader& l, const map_view& m, std::string_view k, store_config& store) const
    {
        auto type = store.type();
        a_choice{"a store type", unlisted_store_type}.read(l, m, k, type);
        if (type != store.type())
            store.choose(type);
    }
    void print(YAML::Emitter& out, const store_config& store) const { a_choice{}.print(out, store.type()); }
};

// store.<backend>: a backend's section, read by its key table. It fills store.type's section
// when store.type names that backend; another backend's section is checked alike and kept only
// for --print-config (store_config::unchosen), as it always was. --print-config writes the
// chosen backend's section and any other the file gave, not the defaults of a backend nobody
// chose (a memory store's effective configuration shows no redis: section).
template<class Section>
struct a_backend_section {
    const section<Section>& keys;
    void read(loader& l, const map_view& m, std::string_view k, store_config& store) const
    {
        if (auto* chosen = std::get_if<Section>(&store.backend)) {
            keys.read(l, loader::child(m, k), m.path_of(k), *chosen);
            return;
        }
        Section other;
        keys.read(l, loader::child(m, k), m.path_of(k), other);
        if (m.find(k))
            store.unchosen.emplace_back(std::move(other));
    }
    bool shown(const store_config& store) const
    {
        if (store.section<Section>())
            return true;
        for (const auto& other : store.unchosen)
            if (std::holds_alternative<Section>(other))
                return true;
        return false;
    }
    void print(YAML::Emitter& out, const store_config& store) const
    {
        keys.print(out, store.given<Section>());
    }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        keys.list(path, restart, out);
    }
};

// The 32 raw bytes of an AES-256 key held as 64 hex digits in the variable `name` names; ""
// when `name` is empty or the variable is unusable (then a problem at `key`).
std::string record_key(loader& l, const map_view& map, std::string_view key, const std::string& name)
{
    if (name.empty())
        return {};
    const char* value = l.env(name);
    if (!value || !*value) {
        l.problem(map.path_of(key), "environment variable " + quote(name) + " is not set");
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
        l.problem(map.path_of(key), "environment variable " + quote(name) +
                                        " must hold 64 hex digits (a 32-byte AES-256 key), it holds " +
                                        std::to_string(hex.size()) + " characters" +
                                        (hex.size() == 64 ? " that are not all hex digits" : ""));
        return {};
    }
    return bytes;
}

const section<encryption_config>& encryption_keys()
{
    using e = encryption_config;
    static const section<e> keys{{
                                     {"key_env", &e::key_env, a_string{}},
                                     {"previous_key_env", &e::previous_key_env, a_string{}},
                                 },
                                 [](loader& l, const map_view& map, e& encryption) {
                                     encryption.key = record_key(l, map, "key_env", encryption.key_env);
                                     encryption.previous_key =
                                         record_key(l, map, "previous_key_env", encryption.previous_key_env);
                                 }};
    return keys;
}

const section<memory_config>& memory_keys()
{
    static const section<memory_config> keys{
        {"max_entries", &memory_config::max_entries, an_int{.min = 1}},
        {"max_bytes", &memory_config::max_bytes, a_size{.zero = false}},
    };
    return keys;
}

const section<local_tier_config>& local_tier_keys()
{
    static const section<local_tier_config> keys{
        {"max_bytes", &local_tier_config::max_bytes, a_size{}},
        {"max_age", &local_tier_config::max_age, a_duration{}},
        {"admit", &local_tier_config::admit, a_choice{"an admission policy"}},
    };
    return keys;
}

const section<refusal_config>& refusal_keys()
{
    static const section<refusal_config> keys{
        {"errors", &refusal_config::errors, an_int{1, 1000000}},
        {"window", &refusal_config::window, a_duration{}},
    };
    return keys;
}

void resolve_key_secret(loader& l, const map_view& map, store_config& store)
{
    if (store.key_secret_env.empty())
        return;
    const char* value = l.env(store.key_secret_env);
    if (!value)
        l.problem(map.path_of("key_secret_env"),
                  "environment variable " + quote(store.key_secret_env) + " is not set");
    else if (std::string_view(value).size() < 32)
        l.problem(map.path_of("key_secret_env"),
                  "environment variable " + quote(store.key_secret_env) + " must hold at least 32 bytes");
    else
        store.key_secret = value;
}

} // namespace

// Every key of store but refusal needs a restart (the backend is made once).
const section<store_config>& store_keys()
{
    using s = store_config;
    static const section<s> keys{
        {"type", whole, a_store_type{}},
        {"key_secret_env", &s::key_secret_env, a_string{}, {.then = resolve_key_secret}},
        {"hash_keys",
         &s::hash_keys,
         a_bool{},
         {.then =
              [](loader& l, const map_view& map, s& store) {
                  if (store.hash_keys && store.key_secret_env.empty())
                      l.problem(map.path_of("hash_keys"),
                                "needs store.key_secret_env (keys are stored as HMACs under that secret)");
              }}},
        {"encryption", &s::encryption, nested{encryption_keys()}},
        {"on_failure", &s::on_failure, a_choice{"a failure mode"}},
        {"redis", whole, a_backend_section<redis_config>{redis_keys()}},
        {"memory", whole, a_backend_section<memory_config>{memory_keys()}},
        {"local_tier", &s::local_tier, nested{local_tier_keys()}},
        {"refusal", &s::refusal, nested{refusal_keys()}, {.when = reload::reloadable}},
    };
    return keys;
}

} // namespace idemgate::config::detail
