// idemgate: a reverse-proxy idempotency gateway. Thin entry point over idemgate::gateway.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <idemgate/common/io_backend.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/server.hpp>
#include <idemgate/gateway/tls.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <string>
#include <vector>

namespace {

constexpr const char* usage = R"(usage: idemgate --config FILE [--check]
       idemgate --help | --version

  --config FILE   YAML configuration (see config/idemgate.example.yaml)
  --check         validate the configuration and exit: 0 if valid, 1 with messages otherwise
  --help          this text
  --version       print the version, the I/O backend (epoll, or io_uring in an
                  IDEMGATE_IO_URING build) and the allocator; exit 1 if that backend
                  cannot run here

Signals: SIGTERM/SIGINT stop accepting, let in-flight requests finish and be recorded
(up to timeouts.drain), then exit 0. SIGHUP reloads the configuration file (an invalid file
is logged and the running configuration kept).
)";

} // namespace

int main(int argc, char** argv)
{
    std::string config_path;
    bool check_only = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        }
        if (arg == "--version") {
            std::printf("idemgate %s (%s)\nallocator: %s\n", IDEMGATE_VERSION,
                        idemgate::io_backend_name().data(), IDEMGATE_ALLOCATOR);
            if (auto why = idemgate::io_backend_probe()) {
                std::fprintf(stderr, "idemgate: %s\n", why->c_str());
                return 1;
            }
            return 0;
        }
        if (arg == "--check") {
            check_only = true;
        } else if (arg == "--config" && i + 1 < argc) {
            config_path = argv[++i];
        } else if (arg.rfind("--config=", 0) == 0) {
            config_path = arg.substr(9);
        } else {
            std::fprintf(stderr, "idemgate: unknown argument \"%s\"\n\n%s", arg.c_str(), usage);
            return 2;
        }
    }
    if (config_path.empty()) {
        std::fprintf(stderr, "idemgate: --config FILE is required\n\n%s", usage);
        return 2;
    }

    idemgate::config::config cfg;
    std::vector<std::string> problems;
    try {
        cfg = idemgate::config::load_file(config_path);
        problems = idemgate::store::check_backend_config(cfg.store);  // e.g. TLS files OpenSSL refuses
        auto tls_problems = idemgate::gateway::check_tls_config(cfg); // tls.*, upstreams.*.tls.*
        problems.insert(problems.end(), tls_problems.begin(), tls_problems.end());
    } catch (const idemgate::config::config_error& e) {
        problems = e.problems();
    }
    if (!problems.empty()) {
        std::fprintf(stderr, "idemgate: invalid configuration %s:\n", config_path.c_str());
        for (const auto& p : problems)
            std::fprintf(stderr, "  %s\n", p.c_str());
        return 1;
    }
    auto warnings = idemgate::config::warnings(cfg);
    if (check_only) {
        for (const auto& w : warnings)
            std::fprintf(stderr, "idemgate: warning: %s\n", w.c_str());
        std::printf("idemgate: configuration %s is valid\n", config_path.c_str());
        return 0;
    }
    for (const auto& w : warnings)
        idemgate::log::warn("risky configuration", {{"warning", w}});
    if (auto why = idemgate::io_backend_probe()) {
        idemgate::log::error("start-up failed", {{"error", *why}});
        std::fprintf(stderr, "idemgate: %s\n", why->c_str());
        return 1;
    }

    try {
        // Redis publishes settlements only when some route waits for them (wait mode).
        bool any_route_waits = std::any_of(cfg.routes.begin(), cfg.routes.end(), [](const auto& r) {
            return r.idempotency.enabled &&
                   r.idempotency.on_in_flight == idemgate::config::in_flight_mode::wait;
        });
        auto backend = idemgate::store::make_backend(cfg.store, any_route_waits);
        auto extra = [backend](std::string& out) { backend->render_metrics(out); };
        idemgate::gateway::server srv(std::move(cfg), backend, std::move(extra));
        srv.set_config_path(config_path);
        srv.bind();
        return srv.run();
    } catch (const std::exception& e) {
        idemgate::log::error("start-up failed", {{"error", e.what()}});
        std::fprintf(stderr, "idemgate: %s\n", e.what());
        return 1;
    }
}
