// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the binary tests share: the gateway (memory store) in front of the test upstream, and a
// run of the real idemgate-loadtest binary with its --json summary parsed.
#include <boost/json.hpp>
#include <doctest/doctest.h>
#include <fstream>
#include <idemgate/test/harness.hpp>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

namespace loadtest_harness {

using namespace idemgate::test;
namespace json = boost::json;

// The gateway with its memory store: /api/ guarded (POST), /tenant/ guarded per X-Tenant-ID,
// /plain/ not guarded.
inline std::string gateway_config(std::uint16_t upstream_port, const std::string& top_level = "")
{
    return top_level +
           "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 2\n"
           "access_log: false\n"
           "store:\n"
           "  type: memory\n"
           "  memory:\n"
           "    max_entries: 100000\n"
           "upstreams:\n"
           "  orders:\n"
           "    address: \"127.0.0.1:" +
           std::to_string(upstream_port) +
           "\"\n"
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      methods: [POST]\n"
           "  - path_prefix: \"/tenant/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      methods: [POST]\n"
           "      tenant_header: X-Tenant-ID\n"
           "  - path_prefix: \"/plain/\"\n"
           "    upstream: orders\n"
           "tenants:\n"
           "  slow:\n"
           "    new_keys_per_second: 2\n";
}

struct loadtest_setup {
    test_upstream_process upstream;
    std::unique_ptr<gateway_process> gateway;

    explicit loadtest_setup(const std::string& top_level = "")
        : gateway(std::make_unique<gateway_process>(gateway_config(upstream.port(), top_level)))
    {
        // Ready is the event, not a sleep: /readyz answers 200 once the store is usable.
        wait_until(
            "idemgate's /readyz answers 200", 10s,
            [&] {
                try {
                    return http_request(gateway->admin_port(), "GET", "/readyz", {}, {}, 1s).status == 200;
                } catch (const std::exception&) {
                    return false;
                }
            },
            10ms);
    }
    std::string url(const std::string& path, const char* scheme = "http") const
    {
        return std::string(scheme) + "://127.0.0.1:" + std::to_string(gateway->port()) + path;
    }
    std::string metrics_url() const
    {
        return "http://127.0.0.1:" + std::to_string(gateway->admin_port()) + "/metrics";
    }
};

struct loadtest_result {
    int exit_status = -1;
    std::string output;   // stdout and stderr, for messages
    json::object summary; // the --json line, when there is one
};

inline loadtest_result run_loadtest(std::vector<std::string> args)
{
    child_process p(bin_dir() + "/idemgate-loadtest", std::move(args));
    auto status = p.wait_exit(120s);
    loadtest_result r;
    r.output = p.output();
    REQUIRE_MESSAGE(status.has_value(), "idemgate-loadtest did not exit within 120 s:\n" << r.output);
    r.exit_status = *status;
    for (const auto& line : p.lines()) {
        if (line.empty() || line.front() != '{')
            continue;
        boost::system::error_code ec;
        auto v = json::parse(line, ec);
        if (!ec && v.is_object())
            r.summary = v.as_object();
    }
    return r;
}

inline std::int64_t int_at(const json::object& o, std::initializer_list<const char*> path)
{
    const json::value* v = nullptr;
    const json::object* at = &o;
    for (auto name : path) {
        v = at->if_contains(name);
        if (!v)
            return -1;
        if (v->is_object())
            at = &v->as_object();
    }
    if (v->is_int64())
        return v->as_int64();
    if (v->is_uint64())
        return static_cast<std::int64_t>(v->as_uint64());
    if (v->is_double())
        return static_cast<std::int64_t>(v->as_double());
    return -1;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

inline bool contains(const std::string& text, std::string_view part)
{
    return text.find(part) != std::string::npos;
}

} // namespace loadtest_harness
