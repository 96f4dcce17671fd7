// SPDX-License-Identifier: Apache-2.0
// Upstream fleets: several addresses per upstream (and every address a name resolves
// to), round_robin and least_pending, passive ejection after consecutive connect failures, the
// panic rule when every address is ejected, re-resolution on a timer, TLS names per address,
// and reload. The exactly-once rule is unchanged: a POST written to one address is never resent
// to another. Real gateway, real test upstreams (X-Upstream-Name says which one answered); the
// only stand-in is a hosts file (upstreams.<name>.hosts_file), since a test cannot change DNS.
// Runs over every store.
#include "gateway_fixture.hpp"
#include "reload_support.hpp"

#include <csignal>
#include <cstdio>
#include <doctest/doctest.h>
#include <fstream>
#include <future>
#include <idemgate/test/tls.hpp>
#include <map>
#include <sstream>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// A test upstream that names itself in X-Upstream-Name.
std::unique_ptr<test_upstream_process> member(const std::string& name, std::vector<std::string> extra = {})
{
    std::vector<std::string> args{"--name", name};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<test_upstream_process>(args);
}

// A gateway whose upstream "orders" is `upstream_block` (the keys under upstreams.orders, 4-space
// indent); route /api/ guards POST.
struct fleet_gateway {
    fleet_gateway(const std::string& upstream_block,
                  std::vector<std::pair<std::string, std::string>> env = {}, unsigned threads = 2)
        : store(make_store())
    {
        std::string y;
        y += "listen: \"${LISTEN}\"\nadmin_listen: \"${ADMIN}\"\n";
        y += "threads: " + std::to_string(threads) + "\naccess_log: false\n";
        y += store.yaml;
        y += "upstreams:\n  orders:\n" + upstream_block;
        y += "routes:\n  - path_prefix: \"/api/\"\n    upstream: orders\n    idempotency:\n      methods: "
             "[POST]\n";
        y += "timeouts:\n  upstream_connect: 1s\n  upstream_response: 10s\n";
        gateway = std::make_unique<gateway_process>(y, std::move(env));
        wait_until_ready(*gateway);
    }

    http_response post(const std::string& key, std::vector<std::pair<std::string, std::string>> headers = {})
    {
        headers.emplace_back("Idempotency-Key", key);
        headers.emplace_back("Content-Type", "application/json");
        return http_request(gateway->port(), "POST", "/api/orders", headers, "{\"key\":\"" + key + "\"}", 8s);
    }
    double admin_metric(const std::string& series) { return metric(gateway->admin_port(), series); }
    // Waits (bounded) until the metric reaches `at_least`.
    bool metric_reaches(const std::string& series, double at_least)
    {
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (admin_metric(series) >= at_least)
                return true;
            std::this_thread::sleep_for(20ms);
        }
        return false;
    }
    std::size_t log_count(const std::string& needle)
    {
        std::size_t n = 0;
        for (const auto& l : gateway->process().lines())
            n += l.find(needle) != std::string::npos;
        return n;
    }
    // Waits (bounded) until `needle` has been logged `count` times.
    bool logged(const std::string& needle, std::size_t count = 1)
    {
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (log_count(needle) >= count)
                return true;
            std::this_thread::sleep_for(20ms); // polling the process's own log
        }
        return false;
    }

    store_under_test store;
    std::unique_ptr<gateway_process> gateway;
};

std::string addresses_of(const std::vector<std::unique_ptr<test_upstream_process>>& members)
{
    std::string list;
    for (const auto& m : members)
        list += (list.empty() ? "\"" : ", \"") + m->address() + "\"";
    return "    addresses: [" + list + "]\n";
}

long total_executions(const std::vector<std::unique_ptr<test_upstream_process>>& members)
{
    long n = 0;
    for (const auto& m : members)
        n += m->executions();
    return n;
}

// TCP connections in state ESTABLISHED whose remote end is 127.0.0.<last>:port, from
// /proc/net/tcp (every process on the host: the gateway's pooled connections to a member).
int established_to(int last_octet, std::uint16_t port)
{
    char remote[32];
    std::snprintf(remote, sizeof remote, "%02X00007F:%04X", last_octet, port);
    std::ifstream in("/proc/net/tcp");
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string slot, local, rem, state;
        if (fields >> slot >> local >> rem >> state && rem == remote && state == "01")
            ++n;
    }
    return n;
}

} // namespace

TEST_SUITE_BEGIN("upstream fleet");

TEST_CASE("round_robin spreads requests over every address of the fleet")
{
    std::vector<std::unique_ptr<test_upstream_process>> members;
    for (const char* name : {"a", "b", "c"})
        members.push_back(member(name));
    fleet_gateway g(addresses_of(members) + "    balance: round_robin\n");

    std::map<std::string, int> answered_by;
    for (int i = 0; i < 30; ++i) {
        auto res = g.post(unique_key("rr"));
        REQUIRE(res.status == 201);
        ++answered_by[res.header("x-upstream-name")];
    }
    CHECK(answered_by["a"] > 0);
    CHECK(answered_by["b"] > 0);
    CHECK(answered_by["c"] > 0);
    CHECK(answered_by["a"] + answered_by["b"] + answered_by["c"] == 30);
    CHECK(total_executions(members) == 30);
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 3);
}

TEST_CASE("a killed member is ejected: every request is answered and no POST runs twice")
{
    std::vector<std::unique_ptr<test_upstream_process>> members;
    for (const char* name : {"a", "b", "c"})
        members.push_back(member(name));
    fleet_gateway g(addresses_of(members) + "    eject_after_failures: 2\n    eject_for: 60s\n");
    for (int i = 0; i < 6; ++i)
        REQUIRE(g.post(unique_key("warm")).status == 201);
    const auto dead_address = members[2]->address();
    long before = members[0]->executions() + members[1]->executions();

    members[2]->kill();
    const int n = 30;
    for (int i = 0; i < n; ++i) {
        auto res = g.post(unique_key("after-kill"));
        REQUIRE_MESSAGE(res.status == 201, res.raw);
        CHECK(res.header("idempotent-replayed") != "true");
        CHECK(res.header("x-upstream-name") != "c");
    }
    // Each POST ran exactly once, on a member that lives: none lost, none sent twice.
    CHECK(members[0]->executions() + members[1]->executions() == before + n);
    CHECK(g.admin_metric("idemgate_upstream_ejections_total{upstream=\"orders\"}") == 1);
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 2);
    CHECK(g.admin_metric("idemgate_upstream_address_healthy{upstream=\"orders\",address=\"" + dead_address +
                         "\"}") == 0);
    CHECK(g.logged("upstream address ejected"));

    // A POST that was written and got no answer (the member closes without one) is not resent
    // to another member: 502, executed once.
    before = members[0]->executions() + members[1]->executions();
    auto lost = g.post(unique_key("abort"), {{"X-Test-Abort", "1"}});
    CHECK(is_problem(lost, 502));
    CHECK(members[0]->executions() + members[1]->executions() == before + 1);
    // An answer-less POST is not a connect failure: nobody else is ejected.
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 2);
}

TEST_CASE("least_pending sends nothing to the member busy with a slow request")
{
    std::vector<std::unique_ptr<test_upstream_process>> members;
    for (const char* name : {"a", "b", "c"})
        members.push_back(member(name));
    fleet_gateway g(addresses_of(members) + "    balance: least_pending\n");

    auto slow = std::async(std::launch::async, [&] {
        return g.post(unique_key("slow"), {{"X-Test-Delay-Ms", "4000"}});
    });
    // The slow request has reached a member (counted when it arrives, answered 4 s later).
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (total_executions(members) < 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    std::string busy;
    for (const auto& m : members)
        if (m->executions() == 1)
            busy = m.get() == members[0].get() ? "a" : m.get() == members[1].get() ? "b" : "c";
    REQUIRE_FALSE(busy.empty());

    std::map<std::string, int> answered_by;
    for (int i = 0; i < 12; ++i) {
        auto res = g.post(unique_key("quick"));
        REQUIRE(res.status == 201);
        ++answered_by[res.header("x-upstream-name")];
    }
    // Precondition (not a timing assertion): the slow request was in flight the whole time.
    REQUIRE(slow.wait_for(0s) == std::future_status::timeout);
    CHECK(answered_by[busy] == 0);
    for (const char* name : {"a", "b", "c"})
        if (busy != name)
            CHECK(answered_by[name] > 0); // the idle ones share the rest (ties go round robin)
    auto slow_answer = slow.get();
    CHECK(slow_answer.status == 201);
    CHECK(slow_answer.header("x-upstream-name") == busy);
}

TEST_CASE("every member ejected: the least recently ejected one is still tried")
{
    std::vector<std::unique_ptr<test_upstream_process>> members;
    for (const char* name : {"a", "b"})
        members.push_back(member(name));
    std::vector<std::uint16_t> ports{members[0]->port(), members[1]->port()};
    fleet_gateway g(addresses_of(members) + "    eject_after_failures: 1\n    eject_for: 60s\n", {}, 1);
    REQUIRE(g.post(unique_key("warm")).status == 201);

    for (auto& m : members) {
        m->kill();
    }
    CHECK(is_problem(g.post(unique_key("none-left")), 502));
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 0);
    CHECK(g.admin_metric("idemgate_upstream_ejections_total{upstream=\"orders\"}") == 2);

    // Both come back on their ports while still ejected for a minute: without the panic rule
    // every request would fail until then.
    members[0] = member("a", {"--port", std::to_string(ports[0])});
    members[1] = member("b", {"--port", std::to_string(ports[1])});
    auto res = g.post(unique_key("panic"));
    CHECK(res.status == 201);
    // The member that answered is back in the rotation at once.
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 1);
    CHECK(g.logged("ejection ended"));
}

TEST_CASE("re-resolution follows a changed address, keeps pooled connections that remain, and survives "
          "a failed lookup")
{
    // Two members on one port at two loopback addresses: the name's address changes, not its port.
    auto a = member("a", {"--host", "127.0.0.2"});
    std::unique_ptr<test_upstream_process> b;
    for (int attempt = 0; attempt < 5 && !b; ++attempt) {
        try {
            b = member("b", {"--host", "127.0.0.3", "--port", std::to_string(a->port())});
        } catch (const std::exception&) {
            a = member("a", {"--host", "127.0.0.2"}); // that port was taken on 127.0.0.3
        }
    }
    REQUIRE(b);
    temp_dir dir;
    auto hosts = dir.write_file("hosts", "127.0.0.2 fleet.test\n");
    fleet_gateway g("    address: \"fleet.test:" + std::to_string(a->port()) +
                        "\"\n    resolve_every: 100ms\n    hosts_file: \"" + hosts + "\"\n",
                    {}, 1);
    const std::string opened = "idemgate_upstream_connections_total{kind=\"opened\"}";

    for (int i = 0; i < 3; ++i)
        CHECK(g.post(unique_key("first")).header("x-upstream-name") == "a");
    CHECK(g.admin_metric(opened) == 1);

    // The new addresses reach each I/O thread's pool through its executor, after the fleet logs
    // the change: a request may still find the old set for a moment.
    auto reaches = [&](const std::string& name, const std::string& key) {
        for (int i = 0; i < 50; ++i)
            if (g.post(unique_key(key)).header("x-upstream-name") == name)
                return true;
        return false;
    };

    // The name gains an address: the pooled connection to the one that remains is kept.
    write_text(hosts, "127.0.0.2 fleet.test\n127.0.0.3 fleet.test\n");
    REQUIRE(g.logged("upstream addresses changed", 1));
    REQUIRE(reaches("b", "gained"));
    std::map<std::string, int> answered_by;
    for (int i = 0; i < 4; ++i)
        ++answered_by[g.post(unique_key("both")).header("x-upstream-name")];
    CHECK(answered_by["a"] == 2);
    CHECK(answered_by["b"] == 2);
    CHECK(g.admin_metric(opened) == 2); // one new connection: to b

    // It moves entirely: the idle connection to the address that went is closed.
    CHECK(established_to(2, a->port()) == 1);
    write_text(hosts, "127.0.0.3 fleet.test\n");
    REQUIRE(g.logged("upstream addresses changed", 2));
    int in_a_row = 0; // once every pool has the change, only b answers
    for (int i = 0; i < 50 && in_a_row < 3; ++i)
        in_a_row = g.post(unique_key("moved")).header("x-upstream-name") == "b" ? in_a_row + 1 : 0;
    CHECK(in_a_row == 3);
    CHECK(g.admin_metric("idemgate_upstream_endpoints{upstream=\"orders\"}") == 1);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (established_to(2, a->port()) > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms); // the close reaches the kernel table asynchronously
    CHECK(established_to(2, a->port()) == 0);
    CHECK(established_to(3, a->port()) == 1); // b's pooled connection

    // The lookup fails: the previous address is kept, the failure logged once and counted.
    write_text(hosts, "# fleet.test is gone\n");
    CHECK(g.metric_reaches("idemgate_upstream_resolve_failures_total{upstream=\"orders\"}", 3));
    CHECK(g.post(unique_key("kept")).header("x-upstream-name") == "b");
    CHECK(g.log_count("upstream re-resolution failed") == 1);
    write_text(hosts, "127.0.0.3 fleet.test\n");
    CHECK(g.logged("upstream re-resolution works again"));
    CHECK(g.log_count("upstream addresses changed") == 2); // the same address: nothing changed

    // A clean stop with the re-resolution timer pending (ASan builds check for leaks at exit).
    g.gateway->process().signal(SIGTERM);
    auto status = g.gateway->process().wait_exit(10s);
    REQUIRE(status.has_value());
    CHECK(*status == 0);
}

TEST_CASE("a reload replaces the fleet's addresses")
{
    std::vector<std::unique_ptr<test_upstream_process>> members;
    for (const char* name : {"a", "b"})
        members.push_back(member(name));
    // resolve_every: the old generation's re-resolution stops at the reload, the new one runs.
    fleet_gateway g("    addresses: [\"" + members[0]->address() + "\"]\n    resolve_every: 50ms\n");
    CHECK(g.post(unique_key("before")).header("x-upstream-name") == "a");

    std::ifstream in(g.gateway->config_path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto at = text.find(members[0]->address());
    REQUIRE(at != std::string::npos);
    text.replace(at, members[0]->address().size(), members[1]->address());
    write_text(g.gateway->config_path(), text);
    g.gateway->process().signal(SIGHUP);
    REQUIRE(g.logged("configuration reloaded"));
    for (int i = 0; i < 4; ++i)
        CHECK(g.post(unique_key("after")).header("x-upstream-name") == "b");
    g.gateway->process().signal(SIGTERM);
    auto status = g.gateway->process().wait_exit(10s);
    REQUIRE(status.has_value());
    CHECK(*status == 0);
}

TEST_CASE("HTTPS fleet: each address is verified under its own host; a member failing TLS is skipped")
{
    test_certificates certs;
    auto by_ip = member("by-ip", {"--tls-cert", certs.server_cert, "--tls-key", certs.server_key});
    auto by_name = member("by-name", {"--tls-cert", certs.server_cert, "--tls-key", certs.server_key});
    auto wrong = member("wrong", {"--tls-cert", certs.wrong_name_cert, "--tls-key", certs.wrong_name_key});
    // The certificate names IP:127.0.0.1 and DNS:localhost: the first address is verified as the
    // IP, the second as "localhost" (and sent as SNI); the third member's certificate names
    // neither, so its handshakes fail - connect failures - and requests move on.
    std::string block = "    addresses: [\"127.0.0.1:" + std::to_string(by_ip->tls_port()) +
                        "\", \"localhost:" + std::to_string(by_name->tls_port()) +
                        "\", \"127.0.0.1:" + std::to_string(wrong->tls_port()) + "\"]\n";
    block += "    eject_after_failures: 1\n    eject_for: 60s\n";
    block += "    tls:\n      enabled: true\n      ca_file: \"" + certs.ca_cert + "\"\n";
    fleet_gateway g(block, {}, 1);

    std::map<std::string, int> answered_by;
    for (int i = 0; i < 9; ++i) {
        auto res = g.post(unique_key("https-fleet"));
        REQUIRE_MESSAGE(res.status == 201, res.raw);
        ++answered_by[res.header("x-upstream-name")];
    }
    CHECK(answered_by["by-ip"] > 0);
    CHECK(answered_by["by-name"] > 0);
    CHECK(answered_by["wrong"] == 0);
    CHECK(wrong->executions() == 0);
    CHECK(g.admin_metric("idemgate_upstream_tls_failures_total") == 1);
    CHECK(g.admin_metric("idemgate_upstream_address_healthy{upstream=\"orders\",address=\"127.0.0.1:" +
                         std::to_string(wrong->tls_port()) + "\"}") == 0);
    CHECK(g.logged("IP address mismatch"));
}

TEST_SUITE_END();
