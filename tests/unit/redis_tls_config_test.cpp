// SPDX-License-Identifier: Apache-2.0
// store.redis.tls: defaults, what loads, and each problem with its key path. That the
// files hold certificates and a matching key is checked by OpenSSL in the store (redis_tls_test).
#include "idemgate/config/config.hpp"
#include "idemgate/store/backend_factory.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace cfg = idemgate::config;

namespace {

const std::string minimal = R"(
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
store:
  type: redis
  redis:
)";

std::string problems_of(const std::string& yaml)
{
    try {
        cfg::parse(yaml);
    } catch (const cfg::config_error& e) {
        return e.what();
    }
    FAIL("config loaded although it should not have:\n" << yaml);
    return {};
}

// A readable file under the temp directory, removed at scope exit.
struct pem_file {
    std::filesystem::path path;
    pem_file()
        : path(std::filesystem::temp_directory_path() / ("idemgate-tls-config-" + std::to_string(::getpid()) +
                                                         "-" + std::to_string(counter++) + ".pem"))
    {
        std::ofstream(path) << "-----BEGIN CERTIFICATE-----\n";
    }
    ~pem_file() { std::filesystem::remove(path); }
    static inline int counter = 0;
};

} // namespace

TEST_CASE("store.redis.tls is off by default, verifying, with no files")
{
    auto c = cfg::parse(minimal);
    const auto& tls = c.store.given<cfg::redis_config>().tls;
    CHECK_FALSE(tls.enabled);
    CHECK(tls.verify);
    CHECK(tls.ca_file.empty());
    CHECK(tls.cert_file.empty());
    CHECK(tls.key_file.empty());
    CHECK(tls.server_name.empty());
    CHECK(cfg::warnings(c).empty());
}

TEST_CASE("store.redis.tls loads every key")
{
    pem_file ca, cert, key;
    auto c =
        cfg::parse(minimal + "    tls:\n      enabled: true\n      ca_file: " + ca.path.string() +
                   "\n      cert_file: " + cert.path.string() + "\n      key_file: " + key.path.string() +
                   "\n      server_name: redis.internal\n      verify: true\n");
    const auto& tls = c.store.given<cfg::redis_config>().tls;
    CHECK(tls.enabled);
    CHECK(tls.ca_file == ca.path.string());
    CHECK(tls.cert_file == cert.path.string());
    CHECK(tls.key_file == key.path.string());
    CHECK(tls.server_name == "redis.internal");
}

TEST_CASE("store.redis.tls problems name their key path")
{
    pem_file cert;
    CHECK(
        problems_of(minimal + "    tls:\n      enabled: true\n      cert_file: " + cert.path.string() +
                    "\n") ==
        "store.redis.tls.cert_file: needs store.redis.tls.key_file (a client certificate is useless without "
        "its private key)");
    CHECK(problems_of(minimal + "    tls:\n      enabled: true\n      key_file: " + cert.path.string() +
                      "\n") == "store.redis.tls.key_file: needs store.redis.tls.cert_file (the client "
                               "certificate of this private key)");
    CHECK(problems_of(minimal + "    tls:\n      enabled: true\n      ca_file: /no/such/ca.pem\n") ==
          "store.redis.tls.ca_file: cannot read \"/no/such/ca.pem\": No such file or directory");
    CHECK(problems_of(minimal + "    tls:\n      enabled: yes please\n") ==
          "store.redis.tls.enabled: \"yes please\" is not a boolean (use true or false)");
    CHECK(problems_of(minimal + "    tls:\n      enabled: true\n      server_name: \"bad name\"\n") ==
          "store.redis.tls.server_name: \"bad name\" is not a host name or IP address");
    CHECK(problems_of(minimal + "    tls:\n      enabled: true\n      ciphers: all\n") ==
          "store.redis.tls.ciphers: unknown key");
}

TEST_CASE("store.redis.tls options while enabled is false are an error, not silently plain TCP")
{
    auto text = problems_of(minimal + "    tls:\n      server_name: redis.internal\n      verify: false\n");
    CHECK(text ==
          "store.redis.tls.server_name: set while store.redis.tls.enabled is false (the connection would be "
          "plain TCP); set enabled: true or remove it\n"
          "store.redis.tls.verify: set while store.redis.tls.enabled is false (the connection would be "
          "plain TCP); set enabled: true or remove it");
    // The defaults written out (as in the example file) are fine.
    CHECK_NOTHROW(
        cfg::parse(minimal + "    tls:\n      enabled: false\n      ca_file: \"\"\n      verify: true\n"));
}

TEST_CASE("verify: false is a warning naming the key")
{
    auto c = cfg::parse(minimal + "    tls:\n      enabled: true\n      verify: false\n");
    CHECK(cfg::warnings(c).empty());
    auto w = idemgate::store::backend_warnings(c.store); // the Redis store's row says it
    REQUIRE(w.size() == 1);
    CHECK(w[0].starts_with("store.redis.tls.verify: false: "));
}
