// SPDX-License-Identifier: Apache-2.0
// The deployment files against the gateway they deploy: every YAML and JSON file under
// deploy/ parses; the Kubernetes probes, ports, grace period and secrets match the ConfigMap's
// configuration, which `idemgate --check` accepts; the systemd unit outlasts the drain; and every
// metric the Grafana dashboard queries is one a running gateway exports.
#include "gateway_fixture.hpp"

#include <boost/json.hpp>
#include <cctype>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <idemgate/config/config.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <yaml-cpp/yaml.h>

using namespace idemgate::test;
namespace fs = std::filesystem;

namespace {

const fs::path deploy_dir = fs::path(IDEMGATE_SOURCE_DIR) / "deploy";

std::string read_text(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

bool is_yaml(const fs::path& p)
{
    return p.extension() == ".yaml" || p.extension() == ".yml";
}

// Every document of every manifest in deploy/kubernetes.
std::vector<YAML::Node> kubernetes_documents()
{
    std::vector<YAML::Node> docs;
    for (const auto& entry : fs::directory_iterator(deploy_dir / "kubernetes"))
        if (entry.is_regular_file() && is_yaml(entry.path()))
            for (auto& doc : YAML::LoadAllFromFile(entry.path().string()))
                if (doc.IsMap())
                    docs.push_back(doc);
    return docs;
}

YAML::Node find_object(const std::vector<YAML::Node>& docs, const std::string& kind, const std::string& name)
{
    for (const auto& d : docs)
        if (d["kind"] && d["kind"].as<std::string>() == kind &&
            d["metadata"]["name"].as<std::string>() == name)
            return d;
    FAIL("no " << kind << " named " << name << " in deploy/kubernetes");
    return {};
}

const char* fake_secrets(const char* name)
{
    return std::string_view(name).ends_with("PASSWORD") ? "password-for-the-test" : std::getenv(name);
}

// A container port by number or name, as probes and Services may give it.
int resolve_port(const YAML::Node& port, const std::map<std::string, int>& named)
{
    auto text = port.as<std::string>();
    if (auto it = named.find(text); it != named.end())
        return it->second;
    return port.as<int>();
}

// True when every label of `selector` is among `labels`.
bool selects(const YAML::Node& selector, const YAML::Node& labels)
{
    if (!selector || !selector.IsMap() || selector.size() == 0)
        return false;
    for (const auto& kv : selector)
        if (!labels[kv.first.as<std::string>()] ||
            labels[kv.first.as<std::string>()].as<std::string>() != kv.second.as<std::string>())
            return false;
    return true;
}

// Names of the samples and declared families in a Prometheus text exposition.
std::set<std::string> sample_names(const std::string& text)
{
    std::set<std::string> names;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        // A declared family counts even without samples (a Redis Cluster's per-node gauges over
        // a standalone Redis): the families' samples are checked by ctest prometheus_scrape.
        if (line.rfind("# TYPE ", 0) == 0) {
            auto name = line.substr(7);
            names.insert(name.substr(0, name.find(' ')));
            continue;
        }
        if (line.empty() || line[0] == '#')
            continue;
        names.insert(line.substr(0, line.find_first_of("{ ")));
    }
    return names;
}

// Every idemgate_* metric name in the dashboard's queries (panel targets and variables).
void collect_queries(const boost::json::value& v, std::set<std::string>& names)
{
    static const std::regex metric_name(R"(\bidemgate_[a-zA-Z0-9_:]+)");
    if (v.is_object()) {
        for (const auto& kv : v.as_object()) {
            if ((kv.key() == "expr" || kv.key() == "query" || kv.key() == "definition") &&
                kv.value().is_string()) {
                std::string text(kv.value().as_string());
                for (std::sregex_iterator it(text.begin(), text.end(), metric_name), end; it != end; ++it)
                    names.insert(it->str());
            }
            collect_queries(kv.value(), names);
        }
    } else if (v.is_array()) {
        for (const auto& e : v.as_array())
            collect_queries(e, names);
    }
}

std::vector<std::string> missing_from(const std::set<std::string>& wanted,
                                      const std::set<std::string>& exported)
{
    std::vector<std::string> missing;
    for (const auto& n : wanted)
        if (!exported.count(n))
            missing.push_back(n);
    return missing;
}

std::string minimal_gateway_yaml(const std::string& store_block)
{
    return "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 1\n" +
           store_block +
           "upstreams:\n"
           "  orders: { address: \"127.0.0.1:" +
           std::to_string(free_port()) +
           "\" }\n"
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency: { methods: [POST] }\n";
}

} // namespace

TEST_SUITE_BEGIN("deploy");

TEST_CASE("every YAML and JSON file under deploy/ parses")
{
    int files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(deploy_dir)) {
        if (!entry.is_regular_file())
            continue;
        const auto& p = entry.path();
        CAPTURE(p.string());
        if (is_yaml(p)) {
            ++files;
            std::vector<YAML::Node> docs;
            CHECK_NOTHROW(docs = YAML::LoadAllFromFile(p.string()));
            CHECK(!docs.empty());
        } else if (p.extension() == ".json") {
            ++files;
            boost::system::error_code ec;
            auto value = boost::json::parse(read_text(p), ec);
            CHECK_MESSAGE(!ec, ec.message());
            CHECK(value.is_object());
        }
    }
    CHECK(files >= 7); // 6 manifests and the dashboard at least
}

TEST_CASE("the Kubernetes Deployment's ports, probes, grace period and secrets match its ConfigMap")
{
    auto docs = kubernetes_documents();
    // kustomize generates the ConfigMap idemgate-config(-<hash>) from idemgate.yaml
    // (tests/deploy/check_kubernetes.py renders it and checks the Deployment mounts that name).
    auto kustomization = YAML::LoadFile((deploy_dir / "kubernetes" / "kustomization.yaml").string());
    bool generated = false;
    for (const auto& g : kustomization["configMapGenerator"])
        if (g["name"].as<std::string>() == "idemgate-config" && g["files"].size() == 1 &&
            g["files"][0].as<std::string>() == "idemgate.yaml")
            generated = true;
    REQUIRE(generated);
    auto config_text = read_text(deploy_dir / "kubernetes" / "idemgate.yaml");
    auto cfg = idemgate::config::parse(config_text, fake_secrets);
    // A shared Redis's outage must not take every replica out of the Service at once.
    CHECK(cfg.readiness.store == idemgate::config::store_readiness::ignore);
    REQUIRE(cfg.store.redis()); // store.type: redis

    // The real binary accepts it.
    {
        temp_dir dir;
        auto path = dir.write_file("idemgate.yaml", config_text);
        child_process check(gateway_bin(), {"--config", path, "--check"},
                            {{cfg.store.redis()->password_env, "password-for-the-test"}});
        CHECK_MESSAGE(check.wait_exit(10s) == 0, check.output());
    }
    // Probes from the kubelet and traffic from the Service arrive on the pod's address.
    CHECK(cfg.listen.host == "0.0.0.0");
    CHECK(cfg.admin_listen.host == "0.0.0.0");

    auto deployment = find_object(docs, "Deployment", "idemgate");
    auto pod = deployment["spec"]["template"];
    auto container = pod["spec"]["containers"][0];
    std::map<std::string, int> named;
    std::set<int> numbers;
    for (const auto& p : container["ports"]) {
        numbers.insert(p["containerPort"].as<int>());
        if (p["name"])
            named[p["name"].as<std::string>()] = p["containerPort"].as<int>();
    }
    CHECK(numbers.count(cfg.listen.port));
    CHECK(numbers.count(cfg.admin_listen.port));

    auto liveness = container["livenessProbe"]["httpGet"];
    auto readiness = container["readinessProbe"]["httpGet"];
    REQUIRE(liveness);
    REQUIRE(readiness);
    CHECK(liveness["path"].as<std::string>() == "/healthz");
    CHECK(resolve_port(liveness["port"], named) == cfg.admin_listen.port);
    CHECK(readiness["path"].as<std::string>() == "/readyz");
    CHECK(resolve_port(readiness["port"], named) == cfg.admin_listen.port);

    // The grace period covers the preStop pause and the whole drain.
    int grace = pod["spec"]["terminationGracePeriodSeconds"].as<int>();
    auto pre_stop = container["lifecycle"]["preStop"]["exec"]["command"];
    REQUIRE(pre_stop);
    REQUIRE(pre_stop[0].as<std::string>() == "sleep");
    int pause = pre_stop[1].as<int>();
    auto drain_s = std::chrono::duration_cast<std::chrono::seconds>(cfg.timeouts.drain).count();
    CHECK(grace > drain_s);
    CHECK(grace > pause + drain_s);
    // And the drain covers a request forwarded just before SIGTERM.
    CHECK(cfg.timeouts.upstream_connect + cfg.timeouts.upstream_response < cfg.timeouts.drain);

    // The container reads the ConfigMap's file.
    auto args = container["args"].as<std::vector<std::string>>();
    REQUIRE(args.size() == 2);
    CHECK(args[0] == "--config");
    bool mounted = false;
    for (const auto& m : container["volumeMounts"])
        for (const auto& v : pod["spec"]["volumes"])
            if (v["name"].as<std::string>() == m["name"].as<std::string>() && v["configMap"] &&
                v["configMap"]["name"].as<std::string>() == "idemgate-config" &&
                args[1] == m["mountPath"].as<std::string>() + "/idemgate.yaml")
                mounted = true;
    CHECK(mounted);

    // The Redis password reaches the variable the configuration names, from a Secret that exists.
    REQUIRE_FALSE(cfg.store.redis()->password_env.empty());
    bool password_wired = false;
    for (const auto& e : container["env"])
        if (e["name"].as<std::string>() == cfg.store.redis()->password_env) {
            auto ref = e["valueFrom"]["secretKeyRef"];
            REQUIRE(ref);
            auto secret = find_object(docs, "Secret", ref["name"].as<std::string>());
            CHECK(secret["stringData"][ref["key"].as<std::string>()]);
            password_wired = true;
        }
    CHECK(password_wired);

    // The Service sends traffic to the listen port of these pods.
    auto labels = pod["metadata"]["labels"];
    auto service = find_object(docs, "Service", "idemgate");
    CHECK(selects(service["spec"]["selector"], labels));
    CHECK(selects(deployment["spec"]["selector"]["matchLabels"], labels));
    REQUIRE(service["spec"]["ports"].size() >= 1);
    for (const auto& p : service["spec"]["ports"])
        CHECK(resolve_port(p["targetPort"], named) == cfg.listen.port);

    // The disruption budget covers the same pods and leaves room to evict one.
    auto pdb = find_object(docs, "PodDisruptionBudget", "idemgate");
    CHECK(selects(pdb["spec"]["selector"]["matchLabels"], labels));
    CHECK(pdb["spec"]["minAvailable"].as<int>() < deployment["spec"]["replicas"].as<int>());

    // The Redis the configuration names is the reference StatefulSet's Service.
    auto redis_service = find_object(docs, "Service", "idemgate-redis");
    CHECK(cfg.store.redis()->address.host == "idemgate-redis");
    CHECK(redis_service["spec"]["ports"][0]["port"].as<int>() == cfg.store.redis()->address.port);
    find_object(docs, "StatefulSet", "idemgate-redis");
}

TEST_CASE("the systemd unit is sandboxed, reloads with SIGHUP and waits longer than the drain")
{
    std::map<std::string, std::vector<std::string>> service;
    std::string section;
    std::istringstream in(read_text(deploy_dir / "systemd" / "idemgate.service"));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        if (line[0] == '[') {
            section = line;
            continue;
        }
        auto eq = line.find('=');
        REQUIRE_MESSAGE(eq != std::string::npos, line);
        if (section == "[Service]")
            service[line.substr(0, eq)].push_back(line.substr(eq + 1));
    }
    auto one = [&](const std::string& key) {
        auto it = service.find(key);
        return it == service.end() || it->second.empty() ? std::string("<absent>") : it->second.front();
    };
    // Reload validates before it signals: a broken file fails `systemctl reload` itself.
    REQUIRE(service["ExecReload"].size() == 2);
    CHECK(service["ExecReload"][0] == "/usr/local/bin/idemgate --config /etc/idemgate/idemgate.yaml --check");
    CHECK(service["ExecReload"][1] == "/bin/kill -HUP $MAINPID");
    {
        // The unit's own validating command, on this build's binary: a broken file fails it (so
        // systemd never sends the SIGHUP), naming the key path; a good one passes.
        temp_dir dir;
        auto command = service["ExecReload"][0];
        command.replace(command.find("/usr/local/bin/idemgate"),
                        std::string("/usr/local/bin/idemgate").size(), gateway_bin());
        const std::string good =
            "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\nstore: { type: memory }\n"
            "upstreams:\n  orders: { address: \"127.0.0.1:9\" }\n"
            "routes:\n  - path_prefix: \"/\"\n    upstream: orders\n";
        auto reload_with = [&](const std::string& yaml) {
            auto path = dir.write_file("idemgate.yaml", yaml);
            auto cmd = command;
            cmd.replace(cmd.find("/etc/idemgate/idemgate.yaml"),
                        std::string("/etc/idemgate/idemgate.yaml").size(), path);
            child_process run("/bin/sh", {"-c", cmd});
            int status = run.wait_exit(30s).value_or(-1);
            return std::make_pair(status, run.output());
        };
        auto ok = reload_with(good);
        CHECK_MESSAGE(ok.first == 0, ok.second);
        auto broken = reload_with(good + "timeouts: { idle: 5x }\n");
        CHECK(broken.first != 0);
        CHECK_MESSAGE(broken.second.find("timeouts.idle") != std::string::npos, broken.second);
    }
    CHECK(one("Type") == "notify"); // READY=1, RELOADING=1, STOPPING=1, WATCHDOG=1 (sd_notify)
    CHECK(one("NotifyAccess") == "main");
    CHECK(one("WatchdogSec") != "<absent>");
    CHECK(one("DynamicUser") == "yes");
    CHECK(one("ProtectSystem") == "strict");
    CHECK(one("NoNewPrivileges") == "yes");
    CHECK(one("PrivateTmp") == "yes");
    CHECK(one("ProtectHome") == "yes");
    CHECK(one("CapabilityBoundingSet").empty());
    CHECK(one("SystemCallFilter") == "@system-service");
    CHECK(one("RestrictAddressFamilies").find("AF_INET") != std::string::npos);
    CHECK(std::stoi(one("LimitNOFILE")) >= 4096);
    CHECK(one("KillSignal") == "SIGTERM");
    // The journal does not drop a busy gateway's lines; the access log's file has a writable home.
    CHECK(one("LogRateLimitIntervalSec") == "0");
    CHECK(one("LogsDirectory") == "idemgate");
    // logrotate (packaged as /etc/logrotate.d/idemgate) rotates that directory: rename, then
    // SIGUSR1 to the gateway (its main process only), which reopens the file; never a copy.
    auto rotate = read_text(deploy_dir / "logrotate" / "idemgate");
    CHECK(rotate.find("/var/log/idemgate/*.log {") != std::string::npos);
    CHECK(rotate.find("systemctl kill --kill-whom=main --signal=SIGUSR1 idemgate.service") !=
          std::string::npos);
    CHECK(rotate.find("\n    copytruncate") == std::string::npos);

    // It runs the example configuration's path; the stop timeout outlasts that file's drain.
    auto exec_start = one("ExecStart");
    CHECK(exec_start.find("--config /etc/idemgate/idemgate.yaml") != std::string::npos);
    auto example = idemgate::config::parse(
        read_text(fs::path(IDEMGATE_SOURCE_DIR) / "config" / "idemgate.example.yaml"), fake_secrets);
    auto timeout = one("TimeoutStopSec");
    REQUIRE(timeout.ends_with("s"));
    auto stop_s = std::stoi(timeout.substr(0, timeout.size() - 1));
    CHECK(stop_s > std::chrono::duration_cast<std::chrono::seconds>(example.timeouts.drain).count());

    // systemd's own parser, where it is installed, on a copy that runs the built binary.
    if (fs::exists("/usr/bin/systemd-analyze")) {
        temp_dir dir;
        auto unit = read_text(deploy_dir / "systemd" / "idemgate.service");
        for (auto at = unit.find("/usr/local/bin/idemgate"); at != std::string::npos;
             at = unit.find("/usr/local/bin/idemgate", at))
            unit.replace(at, std::string("/usr/local/bin/idemgate").size(), gateway_bin());
        auto path = dir.write_file("idemgate.service", unit);
        child_process verify("/usr/bin/systemd-analyze", {"verify", path});
        CHECK_MESSAGE(verify.wait_exit(30s) == 0, verify.output());
        CHECK_MESSAGE(verify.lines().empty(), verify.output()); // no warnings either
    } else {
        MESSAGE("systemd-analyze not installed: the unit was checked by this test's parser only");
    }
}

TEST_CASE("every metric the Grafana dashboard and the alert rules use is exported by a running gateway")
{
    boost::system::error_code ec;
    auto dashboard = boost::json::parse(read_text(deploy_dir / "grafana" / "idemgate.json"), ec);
    REQUIRE_MESSAGE(!ec, ec.message());
    std::set<std::string> queried;
    collect_queries(dashboard, queried);
    // Outcomes, latency, store errors, Redis, upstreams, as the issue asks.
    for (const char* needed : {"idemgate_requests_total", "idemgate_request_duration_seconds_bucket",
                               "idemgate_store_errors_total", "idemgate_redis_errors_total",
                               "idemgate_redis_command_duration_seconds_bucket",
                               "idemgate_upstream_errors_total", "idemgate_access_log_dropped_total"}) {
        CAPTURE(needed);
        CHECK(queried.count(needed));
    }

    // What the real binary exports: over the memory store, and over Redis (whose metrics exist
    // only there).
    std::set<std::string> exported;
    {
        gateway_process memory(minimal_gateway_yaml("store:\n  type: memory\n"));
        exported.merge(sample_names(http_request(memory.admin_port(), "GET", "/metrics").body));
    }
    {
        redis_server redis;
        gateway_process over_redis(minimal_gateway_yaml("store:\n  type: redis\n  redis:\n    address: \"" +
                                                        redis.address() + "\"\n"));
        exported.merge(sample_names(http_request(over_redis.admin_port(), "GET", "/metrics").body));
    }
    REQUIRE(exported.count("idemgate_requests_total"));
    REQUIRE(exported.count("idemgate_redis_commands_total"));

    // The check itself fails on a query of a metric nobody exports.
    CHECK(missing_from({"idemgate_requests_total", "idemgate_no_such_metric_total"}, exported) ==
          std::vector<std::string>{"idemgate_no_such_metric_total"});

    auto missing = missing_from(queried, exported);
    std::string list;
    for (const auto& m : missing)
        list += " " + m;
    CHECK_MESSAGE(missing.empty(), "queried by deploy/grafana/idemgate.json, not exported:" << list);

    // The alert rules' expressions too (deploy/prometheus/alerts.yaml): every idemgate_* name
    // they use. promtool checks their syntax and firing (tests/deploy/check_prometheus.sh).
    auto rules = read_text(deploy_dir / "prometheus" / "alerts.yaml");
    std::set<std::string> alerted;
    for (std::size_t at = rules.find("idemgate_"); at != std::string::npos;
         at = rules.find("idemgate_", at + 1)) {
        if (at > 0 && (std::isalnum(static_cast<unsigned char>(rules[at - 1])) || rules[at - 1] == '_'))
            continue;
        auto end = at;
        while (end < rules.size() &&
               (std::islower(static_cast<unsigned char>(rules[end])) || rules[end] == '_'))
            ++end;
        alerted.insert(rules.substr(at, end - at));
    }
    REQUIRE(alerted.count("idemgate_records_lost_total"));
    auto unalerted = missing_from(alerted, exported);
    list.clear();
    for (const auto& m : unalerted)
        list += " " + m;
    CHECK_MESSAGE(unalerted.empty(), "used by deploy/prometheus/alerts.yaml, not exported:" << list);
}

TEST_SUITE_END();
