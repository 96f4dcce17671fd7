// SPDX-License-Identifier: Apache-2.0
// What --check finds is what start-up and a reload refuse, said the same way (FILE:LINE:COLUMN:
// key path: problem): upstream names that do not resolve (resolve: start), listen on the admin
// port, a route no request can reach; risky methods are warnings. --env-file, relative paths,
// resolve: runtime (not ready until the names resolve) and the reload gauges. Nothing here
// depends on the store: memory only.
#include "reload_support.hpp"

#include <csignal>
#include <doctest/doctest.h>
#include <filesystem>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

struct run_result {
    int status = -1;
    std::string output;
};

run_result run_idemgate(std::vector<std::string> args,
                        std::vector<std::pair<std::string, std::string>> env = {})
{
    child_process proc(gateway_bin(), std::move(args), std::move(env));
    run_result result;
    result.status = proc.wait_exit(20s).value_or(-1);
    for (auto& line : proc.lines())
        result.output += line + "\n";
    return result;
}

// A valid file whose orders upstream is `address` (with `upstream_extra`: more keys, 4 spaces).
std::string yaml_with(const std::string& address, const std::string& upstream_extra = {},
                      const std::string& routes_extra = {})
{
    return "listen: \"127.0.0.1:0\"\n"
           "admin_listen: \"127.0.0.1:0\"\n"
           "store: { type: memory }\n"
           "upstreams:\n"
           "  orders:\n"
           "    address: \"" +
           address + "\"\n" + upstream_extra +
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      methods: [POST]\n" +
           routes_extra;
}

bool has(const std::string& text, const std::string& part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_SUITE_BEGIN("config check");

TEST_CASE("--check looks upstream names up as start-up does; resolve: runtime leaves them to the running "
          "gateway" *
          needs_store("memory"))
{
    temp_dir dir;
    // RFC 6761 6.4: a name under .invalid never resolves.
    auto never = dir.write_file("never.yaml", yaml_with("orders.invalid:8081"));
    auto checked = run_idemgate({"--config", never, "--check"});
    INFO("--check output:\n", checked.output);
    CHECK(checked.status == 1);
    // Line 6, column 5: the address key of upstreams.orders.
    CHECK(has(checked.output,
              "  " + never + ":6:5: upstreams.orders.address: cannot resolve orders.invalid:8081"));
    // Start-up refuses the same file with the same line.
    auto started = run_idemgate({"--config", never});
    INFO("start output:\n", started.output);
    CHECK(started.status == 1);
    CHECK(has(started.output, "  " + never + ":6:5: upstreams.orders.address: cannot resolve"));
    CHECK_FALSE(has(started.output, "\"msg\":\"listening\""));

    // Every problem has its own line, the second as the first.
    auto two = dir.write_file(
        "two.yaml", yaml_with("orders.invalid:8081", "  billing:\n    address: \"billing.invalid:8082\"\n"));
    auto both = run_idemgate({"--config", two, "--check"});
    INFO("two upstreams:\n", both.output);
    CHECK(has(both.output, "  " + two + ":6:5: upstreams.orders.address: cannot resolve"));
    CHECK(has(both.output, "  " + two + ":8:5: upstreams.billing.address: cannot resolve"));

    auto local =
        run_idemgate({"--config", dir.write_file("local.yaml", yaml_with("localhost:8081")), "--check"});
    INFO("localhost:\n", local.output);
    CHECK(local.status == 0);
    auto later = run_idemgate(
        {"--config", dir.write_file("later.yaml", yaml_with("orders.invalid:8081", "    resolve: runtime\n")),
         "--check"});
    INFO("resolve: runtime:\n", later.output);
    CHECK(later.status == 0);
}

TEST_CASE("--check refuses listen on the admin port and a route an earlier one hides; risky methods are "
          "warnings" *
          needs_store("memory"))
{
    temp_dir dir;
    auto same_port = dir.write_file(
        "ports.yaml", replaced(replaced(yaml_with("127.0.0.1:8081"), "listen: \"127.0.0.1:0\"",
                                        "listen: \"0.0.0.0:18080\""),
                               "admin_listen: \"127.0.0.1:0\"", "admin_listen: \"127.0.0.1:18080\""));
    auto ports = run_idemgate({"--config", same_port, "--check"});
    INFO(ports.output);
    CHECK(ports.status == 1);
    CHECK(has(ports.output, same_port +
                                ":2:1: admin_listen: \"127.0.0.1:18080\" takes the same port as listen "
                                "\"0.0.0.0:18080\""));

    auto hidden = dir.write_file("hidden.yaml", yaml_with("127.0.0.1:8081", {},
                                                          "  - path_prefix: \"/api/orders/\"\n"
                                                          "    upstream: orders\n"));
    auto routes = run_idemgate({"--config", hidden, "--check"});
    INFO(routes.output);
    CHECK(routes.status == 1);
    CHECK(has(routes.output, hidden + ":12:5: routes[1].path_prefix: \"/api/orders/\" is never reached: "
                                      "routes[0].path_prefix \"/api/\" comes first"));
    // The longer prefix first: both are reached.
    auto ordered = run_idemgate(
        {"--config",
         dir.write_file(
             "ordered.yaml",
             replaced(yaml_with("127.0.0.1:8081", {}, "  - path_prefix: \"/api/\"\n    upstream: orders\n"),
                      "  - path_prefix: \"/api/\"\n", "  - path_prefix: \"/api/orders/\"\n")),
         "--check"});
    INFO(ordered.output);
    CHECK(ordered.status == 0);

    auto methods =
        run_idemgate({"--config",
                      dir.write_file("methods.yaml", replaced(yaml_with("127.0.0.1:8081"), "methods: [POST]",
                                                              "methods: [POST, GET, PURGE]")),
                      "--check"});
    INFO(methods.output);
    CHECK(methods.status == 0);
    CHECK(has(methods.output, "idemgate: warning: routes[0].idempotency.methods: GET is a safe method"));
    CHECK(has(methods.output,
              "idemgate: warning: routes[0].idempotency.methods: \"PURGE\" is not a method of RFC "
              "9110 or RFC 5789"));
    CHECK_FALSE(has(methods.output, "methods: POST"));
}

TEST_CASE("--env-file sets its variables before the file is read; relative paths are the file's folder's" *
          needs_store("memory"))
{
    temp_dir dir;
    std::filesystem::create_directories(dir.path() + "/etc");
    // A hosts file named relative to the configuration: found from any working directory.
    dir.write_file("etc/hosts", "127.0.0.1 orders.test\n");
    auto yaml = yaml_with("orders.test:8081", "    hosts_file: hosts\n") +
                "admin:\n  token_env: IDEMGATE_CHECK_TOKEN\n";
    auto path = dir.write_file("etc/idemgate.yaml", yaml);
    auto bare = run_idemgate({"--config", path, "--check"});
    INFO(bare.output);
    CHECK(bare.status == 1);
    CHECK(has(bare.output, "admin.token_env: environment variable \"IDEMGATE_CHECK_TOKEN\" is not set"));

    auto env = dir.write_file("etc/idemgate.env", "# secrets\n\n; also a comment\n"
                                                  "IDEMGATE_CHECK_TOKEN=\"a token of 16+ bytes, quoted\"\n"
                                                  "OTHER='single # quoted'\n");
    auto with_env = run_idemgate({"--check", "--env-file", env, "--config", path});
    INFO(with_env.output);
    CHECK(with_env.status == 0);

    auto broken_env = dir.write_file("etc/broken.env", "# fine\nNOT A LINE\n");
    auto broken = run_idemgate({"--check", "--env-file", broken_env, "--config", path});
    INFO(broken.output);
    CHECK(broken.status == 1);
    CHECK(has(broken.output, broken_env + ":2: expected NAME=value"));

    // The hosts file as written in the configuration, from the working directory: not found there.
    dir.write_file("etc/hosts", "127.0.0.1 elsewhere.test\n");
    auto moved = run_idemgate({"--check", "--env-file", env, "--config", path});
    INFO(moved.output);
    CHECK(moved.status == 1);
    CHECK(has(moved.output, "\"orders.test\" is not in hosts_file " + dir.path() + "/etc/hosts"));
}

TEST_CASE("resolve: runtime: the gateway starts not ready and serves once the name resolves" *
          needs_store("memory"))
{
    test_upstream_process upstream;
    temp_dir dir;
    auto hosts = dir.write_file("hosts", "# nothing yet\n");
    gateway_process g(yaml_with("orders.test:" + std::to_string(upstream.port()),
                                "    resolve: runtime\n    hosts_file: " + hosts + "\n"));
    auto not_ready = http_request(g.admin_port(), "GET", "/readyz");
    CHECK(not_ready.status == 503);
    CHECK(has(not_ready.body, "upstream orders waiting for its names to resolve (resolve: runtime)"));
    CHECK(has(not_ready.body, "\"orders.test\" is not in hosts_file"));

    write_text(hosts, "127.0.0.1 orders.test\n");
    wait_until("/readyz answers 200 once orders.test resolves", 10s,
               [&] { return http_request(g.admin_port(), "GET", "/readyz").status == 200; });
    auto res =
        gateway_request(g.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("runtime")}}, "{}");
    CHECK(res.status == 201);
    CHECK(upstream.executions() == 1);
}

TEST_CASE("a refused reload: last_reload_successful is 0 until one is applied; every problem has its line, "
          "as --check says" *
          needs_store("memory"))
{
    const std::string token = "check-admin-token-0123456789";
    gateway_options options;
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", token);
    gateway_fixture f(options);
    auto admin = f.gateway->admin_port();
    auto now = static_cast<double>(
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
    CHECK(metric(admin, "idemgate_config_last_reload_successful") == 1);
    auto started_at = metric(admin, "idemgate_config_last_reload_success_timestamp_seconds");
    CHECK(started_at > now - 60);
    CHECK(started_at <= now + 1);

    const auto path = f.gateway->config_path();
    const auto good = read_text(path);
    write_text(path, replaced(good, "record_ttl: 24h", "record_ttl: 24x"));
    auto checked = run_idemgate({"--config", path, "--check"}, {{"IDEMGATE_TEST_ADMIN_TOKEN", token}});
    CHECK(checked.status == 1);
    auto at = checked.output.find("  " + path + ":");
    REQUIRE_MESSAGE(at != std::string::npos, checked.output);
    at += 2;
    // The line --check prints: FILE:LINE:COLUMN: routes[0].idempotency.record_ttl: ...
    auto line = checked.output.substr(at, checked.output.find('\n', at) - at);
    CHECK(has(line, ": routes[0].idempotency.record_ttl: \"24x\" is not a duration"));

    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "configuration reload failed"));
    wait_until("the reload gauge says 0", 5s,
               [&] { return metric(admin, "idemgate_config_last_reload_successful") == 0; });
    // The log line has the same text (JSON-escaped quotes).
    std::string escaped;
    for (char c : line)
        escaped += c == '"' ? std::string("\\\"") : std::string(1, c);
    CHECK(logged(*f.gateway, escaped));
    auto refused =
        http_request(admin, "POST", "/admin/v1/reload", {{"Authorization", "Bearer " + token}}, {});
    CHECK(is_problem(refused, 422));
    auto problems = parse_object(refused.body)["problems"];
    REQUIRE(problems.is_array());
    REQUIRE(problems.as_array().size() == 1);
    CHECK(problems.as_array()[0].as_string() == line);
    CHECK(metric(admin, "idemgate_config_last_reload_successful") == 0);
    CHECK(metric(admin, "idemgate_config_last_reload_success_timestamp_seconds") == started_at);

    write_text(path, good);
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\""));
    wait_until("the reload gauge says 1", 5s,
               [&] { return metric(admin, "idemgate_config_last_reload_successful") == 1; });
    CHECK(metric(admin, "idemgate_config_last_reload_success_timestamp_seconds") >= started_at);
}

TEST_SUITE_END();
