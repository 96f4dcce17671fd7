// SPDX-License-Identifier: Apache-2.0
// --print-config: the effective configuration as YAML. It reads back as the same configuration,
// and it carries every key the shipped example (which shows every key) sets.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <set>
#include <yaml-cpp/yaml.h>

using namespace config_test;

namespace {

const char* every_secret(const char* name)
{
    static const std::string hex64(64, 'a');
    std::string n(name);
    if (n.find("KEY") != std::string::npos && n.find("SECRET") == std::string::npos)
        return hex64.c_str(); // record encryption keys: 64 hex digits
    return "a-secret-of-at-least-32-bytes-for-every-check";
}

// Key paths of a YAML tree; list items as [i], so routes[0].idempotency.methods.
void paths(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out)
{
    if (node.IsMap()) {
        for (const auto& e : node) {
            auto p = prefix.empty() ? e.first.Scalar() : prefix + "." + e.first.Scalar();
            out.insert(p);
            paths(e.second, p, out);
        }
    } else if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i)
            if (node[i].IsMap())
                paths(node[i], prefix + "[" + std::to_string(i) + "]", out);
    }
}

} // namespace

TEST_CASE("print_config reads back as the same configuration")
{
    auto example = cfg::read_file(IDEMGATE_SOURCE_DIR "/config/idemgate.example.yaml");
    auto first = cfg::print_config(cfg::parse(example, every_secret));
    auto second = cfg::print_config(cfg::parse(first, every_secret));
    CHECK(first == second);
    // A file of its own: tenants, TLS on an upstream, a duration with no larger exact unit.
    auto own = cfg::parse(minimal + R"(    idempotency:
      on_status: { "500": hold, "4xx": hold, "404": record }
      status_header: ""
      replay_drop_headers: []
tenants:
  acme: { max_in_flight: 5, new_keys_per_second: 2.5, record_ttl: 90m }
timeouts:
  idle: 1500ms
listen: "[::1]:8080"
)",
                          no_env);
    auto text = cfg::print_config(own);
    CHECK(text.find("new_keys_per_second: 2.5") != std::string::npos);
    CHECK(text.find("record_ttl: 90m") != std::string::npos);
    CHECK(text.find("idle: 1500ms") != std::string::npos);
    CHECK(text.find("listen: \"[::1]:8080\"") != std::string::npos);
    CHECK(text.find("\"4xx\": hold") != std::string::npos);
    CHECK(text.find("\"404\": record") != std::string::npos);
    CHECK(text.find("\"429\": release") != std::string::npos); // a default code beats the class
    CHECK(text.find("\"500\": hold") != std::string::npos);
    CHECK(text.find("\"501\"") == std::string::npos);            // as its class
    CHECK(text.find("consistency: async") == std::string::npos); // the memory store: no redis: section
    CHECK(cfg::print_config(cfg::parse(text, no_env)) == text);
}

TEST_CASE("print_config carries every key the example sets, and no secret's value")
{
    auto example_text = cfg::read_file(IDEMGATE_SOURCE_DIR "/config/idemgate.example.yaml");
    auto printed_text = cfg::print_config(cfg::parse(example_text, every_secret));
    std::set<std::string> example, printed;
    paths(YAML::Load(example_text), "", example);
    paths(YAML::Load(printed_text), "", printed);
    std::string missing;
    for (auto p : example) {
        // An upstream's `address:` is printed as the `addresses:` list it means.
        if (auto at = p.rfind(".address");
            at != std::string::npos && at + 8 == p.size() && p.rfind("upstreams.", 0) == 0)
            p += "es";
        if (!printed.count(p))
            missing += " " + p;
    }
    CHECK_MESSAGE(missing.empty(), "keys of the example that --print-config leaves out:" << missing);
    CHECK(printed_text.find("a-secret-of-at-least-32-bytes") == std::string::npos);
    CHECK(printed_text.find(std::string(64, 'a')) == std::string::npos);
}

TEST_CASE("describe_keys lists every key --print-config writes, and which need a restart")
{
    std::set<std::string> described, restart;
    for (const auto& k : cfg::describe_keys()) {
        CHECK_MESSAGE(described.insert(k.path).second, k.path << " is listed twice");
        if (k.restart_only && k.path.find('.') == std::string::npos)
            restart.insert(k.path);
    }
    auto example = cfg::read_file(IDEMGATE_SOURCE_DIR "/config/idemgate.example.yaml");
    std::set<std::string> printed;
    paths(YAML::Load(cfg::print_config(cfg::parse(example, every_secret))), "", printed);
    std::string missing;
    for (auto p : printed) {
        // The generic path: a name the operator chose as <name>, a list item as [].
        for (std::string_view map : {"upstreams.", "tenants."})
            if (p.starts_with(map)) {
                auto end = p.find('.', map.size());
                p = std::string(map) + "<name>" + (end == std::string::npos ? "" : p.substr(end));
            }
        if (auto at = p.find("on_status."); at != std::string::npos)
            p = p.substr(0, at) + "on_status.<status>";
        if (p.starts_with("routes["))
            p = "routes[]" + p.substr(p.find(']') + 1);
        if (!described.count(p))
            missing += " " + p;
    }
    CHECK_MESSAGE(missing.empty(), "printed but not described:" << missing);
    // restart_only::keep_in (gateway/src/state/process.cpp) keeps exactly these, and store.refusal
    // within store is applied.
    CHECK(restart == std::set<std::string>{"admin", "admin_listen", "listen", "store", "threads", "tracing"});
    for (const auto& k : cfg::describe_keys())
        if (k.path == "store.refusal" || k.path.starts_with("store.refusal."))
            CHECK_FALSE(k.restart_only);
}

TEST_CASE("print_config writes the chosen store's section, and another only when the file gives it")
{
    auto memory = cfg::print_config(cfg::parse(minimal + "store:\n  type: memory\n", no_env));
    CHECK(memory.find("type: memory") != std::string::npos);
    CHECK(memory.find("redis:") == std::string::npos); // no defaults of a backend nobody chose
    CHECK(cfg::print_config(cfg::parse(memory, no_env)) == memory);

    auto given = cfg::print_config(
        cfg::parse(minimal + "store:\n  type: memory\n  redis: { address: \"10.0.0.5:6380\" }\n", no_env));
    CHECK(given.find("redis:") != std::string::npos);
    CHECK(given.find("10.0.0.5:6380") != std::string::npos);

    auto redis = cfg::print_config(cfg::parse(minimal + "store:\n  type: redis\n", no_env));
    CHECK(redis.find("redis:") != std::string::npos);
    CHECK(redis.find("consistency: async") != std::string::npos); // the chosen section's defaults
    CHECK(redis.find("wait_timeout: 50ms") != std::string::npos);
    CHECK(redis.find("memory:") == std::string::npos);
}
