// SPDX-License-Identifier: Apache-2.0
// idemgate: a reverse-proxy idempotency gateway. Thin entry point over idemgate::gateway.
#include "idemgate_commit.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <idemgate/common/io_backend.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/prometheus.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/contract.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/server.hpp>
#include <idemgate/gateway/tls.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* default_config_path = "/etc/idemgate/idemgate.yaml";

constexpr const char* usage =
    R"(usage: idemgate [-c FILE] [--env-file FILE]... [--check | --print-config | --contract]
       idemgate --print-keys | --help | --version

  -c, --config FILE  YAML configuration (default /etc/idemgate/idemgate.yaml; see
                     config/idemgate.example.yaml)
  --env-file FILE    set the NAME=value lines of FILE (systemd EnvironmentFile= format:
                     # comments, blank lines, optional quotes) in the environment before
                     the configuration is read; may be given more than once
  --check            validate the configuration as start-up would (upstream names with
                     resolve: start are looked up, 2 s each) and exit: 0 if valid (risky
                     settings printed as "warning:" lines on stderr), 1 with messages
                     (each with its line and column in the file) otherwise
  --print-config     print the effective configuration (every key, defaults filled in,
                     secrets as the variables they come from) as YAML and exit
  --print-keys       print every configuration key the loader accepts, one a line, with
                     "reloadable" or "restart-only" (what a reload does with it), and exit
  --contract         print the idempotency contract (an OpenAPI 3.1 document, the same as
                     GET /.well-known/idempotency) and exit
  --help             this text
  --version          print the version, the commit it was built from, the I/O backend
                     (epoll, or io_uring in an IDEMGATE_IO_URING build) and the allocator;
                     exit 3 if that backend cannot run here

Exit status: 0 stopped cleanly (or --check: valid); 1 invalid configuration; 2 bad command
line; 3 cannot start (a port in use, the I/O backend refused, a store that cannot be made).

Signals: SIGTERM/SIGINT stop accepting, let in-flight requests finish and be recorded
(up to timeouts.drain), then exit 0. SIGHUP reloads the configuration file (an invalid file
is logged and the running configuration kept).
)";

// Exit statuses (documented in --help and the README).
constexpr int exit_invalid_config = 1;
constexpr int exit_usage = 2;
constexpr int exit_cannot_start = 3;

// "bind 127.0.0.1:80: Address already in use: Address already in use" says the cause twice:
// a system_error's what() ends with its code's message, which a caller may already have added.
std::string say_once(std::string text)
{
    auto colon = text.rfind(": ");
    if (colon != std::string::npos) {
        std::string_view last = std::string_view(text).substr(colon + 2);
        std::string_view before = std::string_view(text).substr(0, colon);
        if (!last.empty() && before.size() >= last.size() &&
            before.substr(before.size() - last.size()) == last)
            text.resize(colon);
    }
    return text;
}

// --env-file: every NAME=value of the file in the environment (over what is set already, as
// systemd's EnvironmentFile= does over Environment=), before the configuration is read.
// "" or why it cannot.
std::string read_env_file(const std::string& file)
{
    try {
        for (const auto& [name, value] :
             idemgate::config::parse_env_file(idemgate::config::read_file(file), file))
            if (::setenv(name.c_str(), value.c_str(), 1) != 0)
                return file + ": cannot set " + name + ": " + std::strerror(errno);
    } catch (const idemgate::config::config_error& e) {
        return e.what();
    }
    return {};
}

} // namespace

int main(int argc, char** argv)
{
    std::string config_path;
    bool check_only = false;
    bool print_only = false;
    bool contract_only = false;
    std::vector<std::string> env_files;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        }
        if (arg == "--print-keys") {
            for (const auto& k : idemgate::config::describe_keys())
                std::printf("%s %s\n", k.path.c_str(), k.restart_only ? "restart-only" : "reloadable");
            return 0;
        }
        if (arg == "--version") {
            std::printf("idemgate %s (commit %s, %s)\nallocator: %s\n", IDEMGATE_VERSION, IDEMGATE_COMMIT,
                        idemgate::io_backend_name().data(), IDEMGATE_ALLOCATOR);
            if (auto why = idemgate::io_backend_probe()) {
                std::fprintf(stderr, "idemgate: %s\n", why->c_str());
                return exit_cannot_start;
            }
            return 0;
        }
        if (arg == "--check") {
            check_only = true;
        } else if (arg == "--print-config") {
            print_only = true;
        } else if (arg == "--contract") {
            contract_only = true;
        } else if ((arg == "--config" || arg == "-c") && i + 1 < argc) {
            config_path = argv[++i];
        } else if (arg == "--env-file" && i + 1 < argc) {
            env_files.emplace_back(argv[++i]);
        } else if (arg.rfind("--env-file=", 0) == 0) {
            env_files.push_back(arg.substr(11));
        } else if (arg == "--env-file") {
            std::fprintf(stderr, "idemgate: --env-file needs a file\n\n%s", usage);
            return exit_usage;
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else if (arg == "--config" || arg == "-c") {
            std::fprintf(stderr, "idemgate: %s needs a file\n\n%s", arg.c_str(), usage);
            return exit_usage;
        } else {
            std::fprintf(stderr, "idemgate: unknown argument \"%s\"\n\n%s", arg.c_str(), usage);
            return exit_usage;
        }
    }
    if (config_path.empty())
        config_path = default_config_path;

    for (const auto& file : env_files)
        if (auto why = read_env_file(file); !why.empty()) {
            std::fprintf(stderr, "idemgate: --env-file %s\n", why.c_str());
            return exit_invalid_config;
        }

    idemgate::config::config cfg;
    std::string text;
    std::vector<std::string> problems;
    std::vector<idemgate::config::text_position> positions;
    try {
        text = idemgate::config::read_file(config_path);
        cfg = idemgate::config::load_text(text, config_path);
        problems = idemgate::store::check_backend_config(cfg.store); // e.g. TLS files OpenSSL refuses
        auto missing = idemgate::store::check_store_capabilities(cfg, cfg.store.type()); // asks of the store
        problems.insert(problems.end(), missing.begin(), missing.end());
        auto tls_problems =
            idemgate::gateway::check_tls_config(cfg); // tls.*, upstreams.*.tls.*, tracing.tls.*
        problems.insert(problems.end(), tls_problems.begin(), tls_problems.end());
        // What start-up would refuse: upstream names that do not resolve (resolve: start).
        if (!print_only && !contract_only) {
            auto unresolved = idemgate::gateway::check_upstream_names(cfg);
            problems.insert(problems.end(), unresolved.begin(), unresolved.end());
        }
    } catch (const idemgate::config::config_error& e) {
        problems = e.problems();
        positions = e.positions();
    }
    if (!problems.empty()) {
        // FILE:LINE:COLUMN: before each problem, as compilers write it, so editors jump to the key
        // (a reload logs and answers the same lines).
        std::fprintf(stderr, "idemgate: invalid configuration %s:\n", config_path.c_str());
        for (const auto& p : idemgate::config::located_problems(config_path, text, problems, positions))
            std::fprintf(stderr, "  %s\n", p.c_str());
        return exit_invalid_config;
    }
    if (print_only) {
        std::fputs(idemgate::config::print_config(cfg).c_str(), stdout);
        return 0;
    }
    if (contract_only) {
        std::puts(idemgate::gateway::contract_json(cfg).c_str());
        return 0;
    }
    auto warnings = idemgate::store::backend_warnings(cfg.store); // the chosen backend's, then the rest
    for (auto& w : idemgate::config::warnings(cfg))
        warnings.push_back(std::move(w));
    if (check_only) {
        for (const auto& w : warnings)
            std::fprintf(stderr, "idemgate: warning: %s\n", w.c_str());
        if (auto g = idemgate::store::consistency_guarantee(cfg.store); !g.empty())
            std::printf("idemgate: %s\n", g.c_str());
        std::printf("idemgate: configuration %s is valid\n", config_path.c_str());
        return 0;
    }
    for (const auto& w : warnings)
        idemgate::log::warn("risky configuration", {{"warning", w}});
    if (auto g = idemgate::store::consistency_guarantee(cfg.store); !g.empty())
        idemgate::log::info("store consistency", {{"guarantee", g}});
    if (auto why = idemgate::io_backend_probe()) {
        idemgate::log::error("start-up failed", {{"error", *why}});
        std::fprintf(stderr, "idemgate: %s\n", why->c_str());
        return exit_cannot_start;
    }

    try {
        // Redis publishes settlements only when some route waits for them (wait mode).
        bool any_route_waits = std::any_of(cfg.routes.begin(), cfg.routes.end(), [](const auto& r) {
            return r.idempotency.enabled &&
                   r.idempotency.on_in_flight == idemgate::config::in_flight_mode::wait;
        });
        auto backend = idemgate::store::make_backend(cfg.store, any_route_waits);
        // Beside the gateway's own families: the store's, what this binary is, and the process.
        std::string build_info =
            "version=\"" + idemgate::prometheus::label_value(IDEMGATE_VERSION) + "\",commit=\"" +
            idemgate::prometheus::label_value(IDEMGATE_COMMIT) + "\",io_backend=\"" +
            idemgate::prometheus::label_value(idemgate::io_backend_name()) + "\",allocator=\"" +
            idemgate::prometheus::label_value(IDEMGATE_ALLOCATOR) + "\"";
        auto extra = [backend, build_info](std::string& out) {
            backend->render_metrics(out);
            idemgate::prometheus::header(out, "idemgate_build_info", "gauge",
                                         "1, labelled with the version, commit, I/O backend and allocator.");
            idemgate::prometheus::sample(out, "idemgate_build_info", build_info, 1);
            idemgate::prometheus::process_metrics(out);
        };
        idemgate::gateway::server srv(std::move(cfg), backend, std::move(extra));
        srv.set_config_path(config_path);
        srv.bind();
        return srv.run();
    } catch (const std::exception& e) {
        auto why = say_once(e.what());
        idemgate::log::error("start-up failed", {{"error", why}});
        std::fprintf(stderr, "idemgate: %s\n", why.c_str());
        return exit_cannot_start;
    }
}
