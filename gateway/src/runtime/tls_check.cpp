// SPDX-License-Identifier: Apache-2.0
// check_tls_config: the TLS files of every hop (listener, upstreams, trace collector), as --check and
// start-up read them.
#include "observability/span_exporter.hpp"
#include "runtime/client_connection.hpp"
#include "transport/tls.hpp"
#include "upstream/upstream_tls.hpp"

#include <idemgate/gateway/tls.hpp>

namespace idemgate::gateway {

std::vector<std::string> check_tls_config(const config::config& cfg)
{
    std::vector<std::string> problems;
    auto collect = [&](auto&& make) {
        try {
            make();
        } catch (const config::config_error& e) {
            problems.insert(problems.end(), e.problems().begin(), e.problems().end());
        }
    };
    if (cfg.tls)
        collect(
            [&] { detail::make_server_tls_context(*cfg.tls, detail::alpn_protocols(cfg.http2.enabled)); });
    for (const auto& up : cfg.upstreams)
        collect([&] { detail::make_upstream_tls(up); });
    if (cfg.tracing.enabled())
        collect([&] { detail::make_otlp_tls(cfg.tracing); });
    return problems;
}

} // namespace idemgate::gateway
