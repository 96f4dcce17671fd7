// SPDX-License-Identifier: Apache-2.0
#include "transport/proxy_read.hpp"

#include "transport/connection_deadline.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/gateway/proxy_protocol.hpp>
#include <vector>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

enum class refusal { untrusted, missing, invalid };

void refuse(metrics& stats, refusal why, const client_info& client, std::string_view detail)
{
    stats.proxy_protocol_refused[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
    // At most 10 lines a second per thread: a scan of the port must not flood the log.
    thread_local std::int64_t window = 0;
    thread_local int in_window = 0;
    const auto now = log::now_unix_ms() / 1000;
    if (now != window) {
        window = now;
        in_window = 0;
    }
    if (++in_window > 10)
        return;
    static constexpr const char* reasons[] = {"untrusted", "missing", "invalid"};
    log::warn("PROXY protocol: connection closed",
              {{"peer", client.peer}, {"reason", reasons[static_cast<int>(why)]}, {"detail", detail}});
}

} // namespace

bool is_trusted(const std::vector<config::cidr>& trusted, std::string_view address)
{
    if (trusted.empty())
        return false;
    auto bytes = config::parse_ip(address);
    return bytes && config::contains_address(trusted, *bytes);
}

asio::awaitable<bool> read_proxy_header(tcp::socket& socket, client_info& client, proxy_header_rules rules)
{
    auto& stats = rules.stats;
    const bool trusted_peer = is_trusted(rules.trusted, client.peer);
    deadline limit(socket.get_executor());
    limit.arm(socket, rules.timeout);
    asio::steady_timer pause(socket.get_executor());
    // Peeked at, not read: the header's bytes are taken once it is whole, and nothing after it.
    std::vector<unsigned char> bytes(proxy_v1_max);
    std::size_t seen = 0;
    proxy_header header;
    for (;;) {
        auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
        if (ec)
            break;
        error_code rec;
        const auto n = socket.receive(asio::buffer(bytes), tcp::socket::message_peek, rec);
        if (rec || n == 0)
            break;
        header = parse_proxy_header(std::span(bytes.data(), n));
        if (header.status != proxy_parse::need_more || !trusted_peer)
            break;                          // an untrusted peer is refused on its first bytes
        if (header.length > bytes.size()) { // v2: the length field says how much to peek at
            bytes.resize(header.length);
            continue;
        }
        if (n == seen) {
            // Nothing new since the last look: wait a little for the rest (the deadline applies).
            pause.expires_after(std::chrono::milliseconds(5));
            co_await pause.async_wait(use_tuple);
            if (limit.fired())
                break;
        }
        seen = n;
    }
    limit.disarm();
    if (header.status == proxy_parse::need_more) {
        header.status = proxy_parse::invalid;
        header.problem = seen == 0 ? "nothing came before the connection ended or timed out"
                                   : "the header was cut short (the connection ended or timed out)";
    }
    const bool looks_like_one = header.version != 0;
    if (!trusted_peer) {
        // Whatever it sent: a balancer's header is believed only from a trusted peer, and a
        // direct client has none to send.
        refuse(stats, looks_like_one ? refusal::untrusted : refusal::missing, client,
               looks_like_one ? "a PROXY header from a peer outside listen.trusted_proxies"
                              : "a peer outside listen.trusted_proxies");
        co_return false;
    }
    if (header.status == proxy_parse::invalid) {
        refuse(stats, looks_like_one ? refusal::invalid : refusal::missing, client, header.problem);
        co_return false;
    }
    // Take exactly the header's bytes; they are all there (peeked).
    std::vector<unsigned char> taken(header.length);
    error_code read_ec;
    asio::read(socket, asio::buffer(taken), read_ec);
    if (read_ec) {
        refuse(stats, refusal::missing, client, read_ec.message());
        co_return false;
    }
    if (!header.local) {
        client.ip = std::move(header.source);
        client.trusted = is_trusted(rules.trusted, client.ip);
    }
    co_return true;
}

} // namespace idemgate::gateway::detail
