// SPDX-License-Identifier: Apache-2.0
// Config of what the gateway publishes: client lookup paths, problems.base_uri, and the warnings
// for routes that cover the gateway's own paths.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;

TEST_CASE("client_lookup_path and problems.base_uri parse, and their errors name the key path")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
    idempotency: { client_lookup_path: "/api/idempotency-keys/" }
  - path_prefix: /b/
    upstream: orders
    idempotency: {}
problems:
  base_uri: "https://docs.example.com/problems/"
)",
                        no_env);
    CHECK(c.routes[0].idempotency.client_lookup_path == "/api/idempotency-keys/");
    CHECK(c.routes[1].idempotency.client_lookup_path.empty());
    CHECK(c.problems.type_base() == "https://docs.example.com/problems/");
    CHECK(cfg::parse(minimal, no_env).problems.type_base() == "/.well-known/idempotency/problems/");
    // What --print-config prints reads back the same.
    auto again = cfg::parse(cfg::print_config(c), no_env);
    CHECK(again.routes[0].idempotency.client_lookup_path == "/api/idempotency-keys/");
    CHECK(again.problems.base_uri == "https://docs.example.com/problems/");

    auto bad = joined(problems_of(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
    idempotency: { client_lookup_path: "/keys/" }
  - path_prefix: /b/
    upstream: orders
    idempotency: { client_lookup_path: "/b/" }
  - path_prefix: /c/
    upstream: orders
    idempotency: { client_lookup_path: "/c/k?x" }
  - path_prefix: /d/
    upstream: orders
    idempotency: { client_lookup_path: "/d/k/" }
  - path_prefix: /d/
    upstream: orders
    idempotency: { client_lookup_path: "/d/k/" }
  - path_prefix: /
    upstream: orders
    idempotency: { client_lookup_path: "/.well-known/idempotency/x/" }
problems:
  base_uri: "docs example"
)"));
    CHECK(
        bad.find(
            "routes[0].idempotency.client_lookup_path: \"/keys/\" must start with the route's path_prefix") !=
        std::string::npos);
    CHECK(
        bad.find("routes[1].idempotency.client_lookup_path: \"/b/\" must start with the route's path_prefix "
                 "\"/b/\" and go on past it") != std::string::npos);
    CHECK(bad.find("routes[2].idempotency.client_lookup_path: \"/c/k?x\" must be a plain path") !=
          std::string::npos);
    CHECK(bad.find("routes[4].idempotency.client_lookup_path: \"/d/k/\" is also routes[3]") !=
          std::string::npos);
    CHECK(bad.find("routes[5].idempotency.client_lookup_path: \"/.well-known/idempotency/x/\" is inside the "
                   "gateway's own") != std::string::npos);
    CHECK(bad.find("problems.base_uri: \"docs example\" is not a URI prefix") != std::string::npos);
    CHECK(joined(problems_of(minimal + "problems: { base_uri_typo: x }\n")).find("problems.base_uri_typo") !=
          std::string::npos);
}

TEST_CASE("warnings name a route that covers the contract, the problem pages or another route's lookup path")
{
    auto c = cfg::parse(R"(upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/keys/x
    upstream: orders
  - path_prefix: /api/
    upstream: orders
    idempotency: { client_lookup_path: "/api/keys/" }
  - path_prefix: /.well-known/idempotency/problems/
    upstream: orders
  - path_prefix: /
    upstream: orders
)",
                        no_env);
    auto w = joined(cfg::warnings(c));
    CHECK(w.find("routes[0].path_prefix: \"/api/keys/x\" covers routes[1].idempotency.client_lookup_path") !=
          std::string::npos);
    CHECK(w.find("routes[2].path_prefix: \"/.well-known/idempotency/problems/\" covers the gateway's own") !=
          std::string::npos);
    CHECK(w.find("routes[1].path_prefix") == std::string::npos); // its own lookup path
    CHECK(w.find("routes[3]") == std::string::npos);             // "/" is the catch-all
}
