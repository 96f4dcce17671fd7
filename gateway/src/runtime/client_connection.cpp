// SPDX-License-Identifier: Apache-2.0
#include "runtime/client_connection.hpp"

#include "http1/http_connection.hpp"
#include "http2/h2_connection.hpp"
#include "transport/proxy_read.hpp"

#include <boost/beast/core/stream_traits.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

const std::vector<codec>& codecs()
{
    static const std::vector<codec> table{
        {"h2", &serve_h2_over_tls},
        {"http/1.1", &serve_http1_over_tls},
    };
    return table;
}

const std::string& alpn_protocols(bool with_h2)
{
    auto wire = [](bool h2) {
        std::string out;
        for (const auto& c : codecs()) {
            if (c.alpn == "h2" && !h2)
                continue;
            out.push_back(static_cast<char>(c.alpn.size()));
            out.append(c.alpn);
        }
        return out;
    };
    static const std::string both = wire(true), http1_only = wire(false);
    return with_h2 ? both : http1_only;
}

namespace {

// listen.proxy_protocol: the connection's PROXY header, under header_read; false: close it.
asio::awaitable<bool> proxy_header_read(gateway_context& ctx, worker& w, tcp::socket& socket,
                                        client_info& client)
{
    if (!ctx.boot.listen_proxy.proxy_protocol)
        co_return true;
    const auto timeout = w.current(ctx)->cfg().timeouts.header_read;
    // Counted while it waits, as the codecs count it (limits.max_connections).
    ctx.stats.connections_active.fetch_add(1);
    const proxy_header_rules rules{ctx.boot.listen_proxy.trusted_proxies, timeout, ctx.stats};
    const bool ok = co_await read_proxy_header(socket, client, rules);
    ctx.stats.connections_active.fetch_sub(1);
    if (!ok) {
        error_code ignored;
        socket.close(ignored);
    }
    co_return ok;
}

} // namespace

asio::awaitable<void> serve_plain_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                         client_info client)
{
    if (!co_await proxy_header_read(ctx, w, socket, client))
        co_return;
    // Prior-knowledge HTTP/2 (http2.cleartext): the first bytes say which protocol it is. They
    // are only peeked at, so either codec reads the connection from its start.
    auto first = first_bytes::http1;
    {
        auto env = w.current(ctx); // held across the wait: a reload may replace the worker's
        const auto& cfg = env->cfg();
        if (cfg.http2.enabled && cfg.http2.cleartext) {
            // Counted while it waits, as the codecs count it (limits.max_connections).
            ctx.stats.connections_active.fetch_add(1);
            // A new connection's first bytes: under header_read, as its first request.
            first = co_await peek_first_bytes(socket, cfg.timeouts.header_read);
            ctx.stats.connections_active.fetch_sub(1);
        }
    }
    if (first == first_bytes::none) {
        error_code ignored;
        socket.close(ignored);
        co_return;
    }
    if (first == first_bytes::h2) {
        co_await serve_h2_plain(ctx, w, std::move(socket), std::move(client));
        co_return;
    }
    co_await serve_plain_connection(ctx, w, std::move(socket), std::move(client));
}

asio::awaitable<void> serve_tls_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                       client_info client)
{
    if (!co_await proxy_header_read(ctx, w, socket, client)) // before TLS: the balancer's, in clear
        co_return;
    // Counted from accept, the handshake included (limits.max_connections).
    connection_guard conn(ctx.stats);
    // The live generation, held for the connection's life: a reload that renews the certificate
    // serves new connections with it and leaves this one alone. The handshake and close_notify
    // run under its timeouts; each request then reads the generation live when it begins.
    std::shared_ptr<const live_config> live = w.current(ctx)->live;
    tls_stream stream(std::move(socket), *live->listen_tls);
    auto accepted = co_await accept_tls(ctx.stats, stream, client, live->cfg.timeouts.header_read);
    if (accepted == tls_accept::plain_http)
        co_await refuse_plain_http(live->cfg, beast::get_lowest_layer(stream));
    if (accepted != tls_accept::ok)
        co_return;
    // No protocol offered: HTTP/1.1, as before ALPN. Otherwise the server context selected one
    // of ours (a client offering none of them failed the handshake).
    const auto protocol = negotiated_protocol(stream.native_handle());
    const codec* chosen = &codecs().back();
    for (const auto& c : codecs())
        if (c.alpn == protocol)
            chosen = &c;
    co_await chosen->serve_tls(ctx, w, stream, std::move(client));
    co_await close_tls(stream, w.current(ctx)->cfg().timeouts.client_write);
}

} // namespace idemgate::gateway::detail
