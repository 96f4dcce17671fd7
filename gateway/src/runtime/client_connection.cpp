#include "runtime/client_connection.hpp"

#include "http1/http_connection.hpp"

#include <boost/beast/core/stream_traits.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;

const std::vector<codec>& codecs()
{
    static const std::vector<codec> table{
        {"http/1.1", &serve_http1_over_tls},
    };
    return table;
}

const std::string& alpn_protocols()
{
    static const std::string wire = [] {
        std::string out;
        for (const auto& c : codecs()) {
            out.push_back(static_cast<char>(c.alpn.size()));
            out.append(c.alpn);
        }
        return out;
    }();
    return wire;
}

asio::awaitable<void> serve_plain_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                         client_info client)
{
    co_await serve_plain_connection(ctx, w, std::move(socket), std::move(client));
}

asio::awaitable<void> serve_tls_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                       client_info client)
{
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
    const codec* chosen = &codecs().front();
    for (const auto& c : codecs())
        if (c.alpn == protocol)
            chosen = &c;
    co_await chosen->serve_tls(ctx, w, stream, std::move(client));
    co_await close_tls(stream, w.current(ctx)->cfg().timeouts.client_write);
}

} // namespace idemgate::gateway::detail
