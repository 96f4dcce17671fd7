// SPDX-License-Identifier: Apache-2.0
#pragma once
// The backends make_backend can build, as rows of one table (backend_factory.cpp), and what each
// backend's factory receives. Private to the store library.
//
// A backend lives in its own folder under store/src and offers a factory and, when it has them,
// a check, warnings and a consistency guarantee; each takes the backend's own section (its
// alternative of config::backend_config). Adding a backend is its folder plus its row in the
// table (and its section's alternative, config/include/idemgate/config/store_config.hpp).
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace idemgate::store::detail {

// The store-wide settings (store.* outside the backends' sections) a backend may apply.
struct backend_settings {
    // Some route waits for in-flight duplicates (on_in_flight: wait): settlements must reach the
    // waiters of every process sharing the store.
    bool publish_settled = false;
    // The gateway's local tier is on (store.local_tier): every process sharing the store must
    // hear of a record an operator removes.
    bool publish_removals = false;
    // store.hash_keys or store.encryption is on: make_backend wraps the backend in the protection
    // decorator (protected_backend.hpp), which hashes scopes and seals records above it. A backend
    // that decodes stored bytes hands a sealed record up unopened (record_codec.hpp's
    // decode_stored_record); off, it never meets one it could serve.
    bool protected_above = false;
};

// One row: the store.type value that selects the backend (its section's alternative of
// config::backend_config), the capabilities its sessions offer (store::capability bits: what
// check_store_capabilities matches the routes and tenants against), its factory, its check (the
// problems config::load cannot see, one line each naming the key path), its warnings (valid but
// risky settings, one line each naming the key path) and its consistency guarantee (one sentence
// for --check and the start-up log); a check, warnings or guarantee is empty when it has none.
// Each takes the whole store section; the row hands its backend only its own section.
struct backend_entry {
    config::store_type type;
    std::string_view name;
    unsigned capabilities;
    std::shared_ptr<backend> (*make)(const config::store_config& store, const backend_settings& settings);
    std::vector<std::string> (*check)(const config::store_config& store);
    std::vector<std::string> (*warnings)(const config::store_config& store);
    std::string (*guarantee)(const config::store_config& store);
};

// The type whose section is `Section` (config::backend_config's alternative).
template<class Section>
constexpr config::store_type type_of_section()
{
    constexpr auto count = std::variant_size_v<config::backend_config>;
    return [&]<std::size_t... I>(std::index_sequence<I...>)
    {
        std::size_t index = count;
        ((index = std::is_same_v<Section, std::variant_alternative_t<I, config::backend_config>> ? I : index),
         ...);
        return static_cast<config::store_type>(index);
    }
    (std::make_index_sequence<count>{});
}

// The row of the backend whose section is `Section` (store.type is its alternative's):
// `Make(section, settings)` builds it (`Make(settings)` for a backend whose section is empty, no
// keys), `Check(section)` checks the section (nullptr: config::load checks all of it),
// `Warnings(section, store)` says what is risky in it (`store`: the store-wide keys beside it),
// `Guarantee(section)` says what the backend guarantees across a failover (nullptr: nothing to
// say). Its sessions offer `capabilities` and no other: a session's accessor of a capability
// outside them returns nullptr.
template<class Section, auto Make, auto Check = nullptr, auto Warnings = nullptr, auto Guarantee = nullptr>
constexpr backend_entry backend_row(std::string_view name, unsigned capabilities)
{
    backend_entry row{type_of_section<Section>(), name, capabilities, nullptr, nullptr, nullptr, nullptr};
    if constexpr (std::is_empty_v<Section>) // a backend without keys
        row.make = [](const config::store_config&, const backend_settings& settings) {
            return std::shared_ptr<backend>(Make(settings));
        };
    else
        row.make = [](const config::store_config& store, const backend_settings& settings) {
            return std::shared_ptr<backend>(Make(std::get<Section>(store.backend), settings));
        };
    if constexpr (std::is_null_pointer_v<decltype(Check)>)
        row.check = [](const config::store_config&) { return std::vector<std::string>{}; };
    else
        row.check = [](const config::store_config& store) { return Check(std::get<Section>(store.backend)); };
    if constexpr (std::is_null_pointer_v<decltype(Warnings)>)
        row.warnings = [](const config::store_config&) { return std::vector<std::string>{}; };
    else
        row.warnings = [](const config::store_config& store) {
            return Warnings(std::get<Section>(store.backend), store);
        };
    if constexpr (std::is_null_pointer_v<decltype(Guarantee)>)
        row.guarantee = [](const config::store_config&) { return std::string(); };
    else
        row.guarantee = [](const config::store_config& store) {
            return Guarantee(std::get<Section>(store.backend));
        };
    return row;
}

// The row of a backend this build leaves out (the test-only one outside the tests' builds): its
// check refuses store.type naming it, so the gateway never starts on it (its factory makes
// nothing).
template<class Section>
constexpr backend_entry absent_row(std::string_view name)
{
    backend_entry row{type_of_section<Section>(), name, 0, nullptr, nullptr, nullptr, nullptr};
    row.make = [](const config::store_config&, const backend_settings&) {
        return std::shared_ptr<backend>();
    };
    row.check = [](const config::store_config&) {
        return std::vector<std::string>{"store.type: this build has no test-only store backend (built with "
                                        "-DIDEMGATE_TEST_BACKEND=ON only)"};
    };
    row.warnings = [](const config::store_config&) { return std::vector<std::string>{}; };
    row.guarantee = [](const config::store_config&) { return std::string(); };
    return row;
}

} // namespace idemgate::store::detail
