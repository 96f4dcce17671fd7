// SPDX-License-Identifier: Apache-2.0
#pragma once
// The backends make_backend can build, as rows of one table (backend_factory.cpp), and what each
// backend's factory receives. Private to the store library.
//
// A backend lives in its own folder under store/src and offers a factory and, when config::load
// cannot check all of its section, a check; both take the backend's own section of
// config::store_config. Adding a backend is its folder plus its row in the table.
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
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

// One row: the store.type value that selects the backend, the capabilities its sessions offer
// (store::capability bits: what check_store_capabilities matches the routes and tenants
// against), its factory, and its check (the problems config::load cannot see, one line each
// naming the key path; empty when none).
struct backend_entry {
    config::store_type type;
    std::string_view name;
    unsigned capabilities;
    std::shared_ptr<backend> (*make)(const config::store_config& store, const backend_settings& settings);
    std::vector<std::string> (*check)(const config::store_config& store);
};

// The row of a backend configured by the section `Section` (a pointer to a member of
// config::store_config, or nullptr for a backend with no section of its own: then
// `Make(settings)`): `Make(section, settings)` builds it, `Check(section)` checks the
// section (nullptr: config::load checks all of it). Its sessions offer `capabilities` and no
// other: a session's accessor of a capability outside them returns nullptr.
template<auto Section, auto Make, auto Check = nullptr>
constexpr backend_entry backend_row(config::store_type type, std::string_view name, unsigned capabilities)
{
    backend_entry row{type, name, capabilities, nullptr, nullptr};
    if constexpr (std::is_null_pointer_v<decltype(Section)>) // a backend without a section
        row.make = [](const config::store_config&, const backend_settings& settings) {
            return std::shared_ptr<backend>(Make(settings));
        };
    else
        row.make = [](const config::store_config& store, const backend_settings& settings) {
            return std::shared_ptr<backend>(Make(store.*Section, settings));
        };
    if constexpr (std::is_null_pointer_v<decltype(Check)>)
        row.check = [](const config::store_config&) { return std::vector<std::string>{}; };
    else
        row.check = [](const config::store_config& store) { return Check(store.*Section); };
    return row;
}

// The row of a backend this build leaves out (the test-only one outside the tests' builds): its
// check refuses store.type naming it, so the gateway never starts on it (its factory makes
// nothing).
constexpr backend_entry absent_row(config::store_type type, std::string_view name)
{
    backend_entry row{type, name, 0, nullptr, nullptr};
    row.make = [](const config::store_config&, const backend_settings&) {
        return std::shared_ptr<backend>();
    };
    row.check = [](const config::store_config&) {
        return std::vector<std::string>{"store.type: this build has no test-only store backend (built with "
                                        "-DIDEMGATE_TEST_BACKEND=ON only)"};
    };
    return row;
}

} // namespace idemgate::store::detail
