// SPDX-License-Identifier: Apache-2.0
#include "listen_kinds.hpp"

namespace idemgate::config::detail {

// listen as a map: its address and who may say who the client is.
const section<config>& listen_keys()
{
    using p = listen_proxy_config;
    constexpr auto proxy = &config::listen_proxy;
    static const section<config> keys{
        {
            {"address", &config::listen, an_endpoint{}},
            {"trusted_proxies", member_of<proxy, &p::trusted_proxies>{}, a_network_list{}},
            {"proxy_protocol", member_of<proxy, &p::proxy_protocol>{}, a_bool{}},
        },
        [](loader& l, const map_view& map, config& cfg) {
            if (cfg.listen_proxy.proxy_protocol && cfg.listen_proxy.trusted_proxies.empty())
                l.problem(map.path_of("proxy_protocol"),
                          "needs listen.trusted_proxies (the balancers whose PROXY header is believed; "
                          "a connection from any other peer is closed)");
        }};
    return keys;
}

} // namespace idemgate::config::detail
