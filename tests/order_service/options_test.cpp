// SPDX-License-Identifier: Apache-2.0
// The order-service command line.
#include <doctest/doctest.h>
#include <idemgate/order_service/options.hpp>
#include <vector>

using namespace idemgate::order_service;

namespace {

std::optional<service_options> parse(std::vector<const char*> args)
{
    args.insert(args.begin(), "order-service");
    return parse_command_line(static_cast<int>(args.size()), args.data());
}

} // namespace

TEST_CASE("command line: defaults, every flag, and errors that name the flag")
{
    auto defaults = parse({});
    REQUIRE(defaults);
    CHECK_FALSE(defaults->consume);
    CHECK(defaults->consumer.stream == "payments");
    CHECK(defaults->consumer.group == "order-service");
    CHECK(defaults->consumer.claim_min_idle == std::chrono::milliseconds(30000));

    auto all =
        parse({"--listen", "127.0.0.1:0", "--db", "/tmp/x.db", "--redis", "127.0.0.1:7000", "--stream", "s",
               "--group", "g", "--consumer", "c", "--claim-idle-ms", "250", "--crash-after-effect"});
    REQUIRE(all);
    CHECK(all->listen_port == 0);
    CHECK(all->db_path == "/tmp/x.db");
    CHECK(all->consume);
    CHECK(all->consumer.redis_port == 7000);
    CHECK(all->consumer.stream == "s");
    CHECK(all->consumer.group == "g");
    CHECK(all->consumer.consumer == "c");
    CHECK(all->consumer.claim_min_idle == std::chrono::milliseconds(250));
    CHECK(all->consumer.crash_after_effect);

    CHECK_FALSE(parse({"--help"}));
    CHECK_THROWS_WITH_AS(parse({"--listen", "127.0.0.1:70000"}), doctest::Contains("--listen"), usage_error);
    CHECK_THROWS_WITH_AS(parse({"--redis", "nohost"}), doctest::Contains("--redis"), usage_error);
    CHECK_THROWS_WITH_AS(parse({"--claim-idle-ms", "0"}), doctest::Contains("--claim-idle-ms"), usage_error);
    CHECK_THROWS_WITH_AS(parse({"--db"}), doctest::Contains("--db"), usage_error);
    CHECK_THROWS_WITH_AS(parse({"--bogus", "1"}), doctest::Contains("--bogus"), usage_error);
}
