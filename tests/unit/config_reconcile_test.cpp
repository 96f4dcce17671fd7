// SPDX-License-Identifier: Apache-2.0
// Config of reconciliation (routes[].idempotency.reconcile): defaults, parsing, and --check's
// problems naming the key path.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

namespace {

const std::string holding = minimal + "    idempotency:\n      on_status: { \"500\": hold }\n";

} // namespace

TEST_CASE("reconcile: off by default; every key parses")
{
    auto defaults =
        idemgate::config::parse(minimal + "    idempotency: {}\n").routes[0].idempotency.reconcile;
    CHECK_FALSE(defaults.enabled());
    CHECK(defaults.method == "GET");
    CHECK(defaults.after == 2s);
    CHECK(defaults.every == 10s);
    CHECK(defaults.give_up_after == 10min);
    CHECK(defaults.found == std::vector<unsigned>{200});
    CHECK(defaults.not_found == std::vector<unsigned>{404});

    auto c = idemgate::config::parse(
                 holding + "      reconcile:\n"
                           "        path: \"/orders/by-ref/{json:/client_ref}?k={key}&t={tenant}\"\n"
                           "        method: HEAD\n        after: 0s\n        every: 5s\n"
                           "        give_up_after: 1h\n        found: [200, 203]\n"
                           "        not_found: [404, 410]\n")
                 .routes[0]
                 .idempotency.reconcile;
    CHECK(c.enabled());
    CHECK(c.path == "/orders/by-ref/{json:/client_ref}?k={key}&t={tenant}");
    CHECK(c.method == "HEAD");
    CHECK(c.after.count() == 0);
    CHECK(c.every == 5s);
    CHECK(c.give_up_after == 1h);
    CHECK(c.found == std::vector<unsigned>{200, 203});
    CHECK(c.not_found == std::vector<unsigned>{404, 410});
    // on_unknown_outcome: hold is enough to hold a key.
    CHECK(idemgate::config::parse(minimal + "    idempotency:\n      on_unknown_outcome: hold\n"
                                            "      reconcile: { path: \"/o/{key}\" }\n")
              .routes[0]
              .idempotency.reconcile.enabled());
}

TEST_CASE("reconcile: --check names the key path of each problem")
{
    auto problem = [](const std::string& yaml) { return joined(problems_of(yaml)); };
    const std::string at = "routes[0].idempotency.reconcile.";
    CHECK(problem(holding + "      reconcile: { path: \"/orders/all\" }\n")
              .find(at + "path: \"/orders/all\" has no placeholder") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{id}\" }\n")
              .find(at + "path: \"/o/{id}\" unknown placeholder {id}") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key\" }\n")
              .find("has a '{' that is never closed") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/key}\" }\n")
              .find("has a '}' that closes no placeholder") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{json:ref}\" }\n")
              .find("placeholder {json:ref} does not name a JSON Pointer") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"o/{key}\" }\n")
              .find(at + "path: \"o/{key}\" must start with '/'") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", found: [200, 404] }\n")
              .find(at + "not_found: 404 is also in found") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", found: [200, 200] }\n")
              .find(at + "found[1]: \"200\" is listed twice") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", found: [2xx] }\n")
              .find(at + "found[0]: \"2xx\" is not a status code") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", every: 0s, method: \"G T\" }\n")
              .find(at + "every: must be greater than 0") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", method: \"G T\" }\n")
              .find(at + "method: \"G T\" is not an HTTP method") != std::string::npos);
    CHECK(problem(holding + "      reconcile: { path: \"/o/{key}\", every_s: 1 }\n")
              .find(at + "every_s: unknown key") != std::string::npos);
    CHECK(problem(minimal + "    idempotency:\n      on_unknown_outcome: release\n"
                            "      reconcile: { path: \"/o/{key}\" }\n")
              .find(at + "path: nothing on this route holds a key") != std::string::npos);
    // The default on_unknown_outcome (hold) holds keys: reconcile has something to resolve.
    CHECK_NOTHROW(
        idemgate::config::parse(minimal + "    idempotency:\n      reconcile: { path: \"/o/{key}\" }\n"));
    // Off: nothing else is checked.
    CHECK_NOTHROW(idemgate::config::parse(minimal + "    idempotency:\n      reconcile: { path: \"\" }\n"));
}
