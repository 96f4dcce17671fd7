// SPDX-License-Identifier: Apache-2.0
// bare-beast: the physical limit for a Beast/Asio coroutine server on this machine.
//
// It answers every request with the same 201 and small JSON body as the bench's nginx upstream,
// over HTTP/1.1 keep-alive, threaded like the gateway (one io_context per thread, each with its
// own SO_REUSEPORT acceptor so the kernel spreads connections), with a deadline on every read
// and write as the gateway has. Nothing else: a replay through idemgate can only approach it.
//
//   bare-beast [--port P] [--threads N]      (port 0 = any free port)
// Prints {"msg":"listening","listen":"127.0.0.1:P"} once every acceptor is bound.
#include <idemgate/common/log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// The same answer as bench/conf/upstream.conf.
constexpr std::string_view response_body = R"({"id":"ord_1","status":"created"})";
constexpr auto io_deadline = 30s;
constexpr std::size_t max_request_body = 1024 * 1024;

struct options {
    unsigned short port = 0;
    unsigned threads = 2;
};

asio::awaitable<void> serve_connection(tcp::socket socket)
{
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    http::response<http::string_body> response{http::status::created, 11};
    response.set(http::field::server, "bare-beast");
    response.set(http::field::content_type, "application/json");
    response.body() = response_body;
    response.prepare_payload();

    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(max_request_body);
        stream.expires_after(io_deadline);
        auto [read_ec, read_n] =
            co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        if (read_ec)
            break;
        response.keep_alive(parser.get().keep_alive());
        stream.expires_after(io_deadline);
        auto [write_ec, write_n] =
            co_await http::async_write(stream, response, asio::as_tuple(asio::use_awaitable));
        if (write_ec || !response.keep_alive())
            break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> accept_loop(tcp::acceptor acceptor)
{
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec == asio::error::operation_aborted)
            co_return;
        if (ec)
            continue; // EMFILE and friends: keep serving the connections we have
        socket.set_option(tcp::no_delay(true), ec);
        asio::co_spawn(acceptor.get_executor(), serve_connection(std::move(socket)), asio::detached);
    }
}

tcp::acceptor open_acceptor(asio::io_context& ioc, unsigned short port)
{
    tcp::acceptor acceptor(ioc);
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    acceptor.open(endpoint.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    int one = 1;
    if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        throw std::runtime_error("SO_REUSEPORT: " + std::string(std::strerror(errno)));
    acceptor.bind(endpoint);
    acceptor.listen(asio::socket_base::max_listen_connections);
    return acceptor;
}

options parse_options(int argc, char** argv)
{
    options opts;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if ((arg == "--port" || arg == "--threads") && i + 1 < argc) {
            long value = std::strtol(argv[++i], nullptr, 10);
            if (arg == "--port" && value >= 0 && value <= 65535)
                opts.port = static_cast<unsigned short>(value);
            else if (arg == "--threads" && value >= 1 && value <= 256)
                opts.threads = static_cast<unsigned>(value);
            else
                throw std::runtime_error(std::string(arg) + ": out of range");
        } else {
            throw std::runtime_error("usage: bare-beast [--port P] [--threads N]");
        }
    }
    return opts;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        options opts = parse_options(argc, argv);
        std::vector<std::unique_ptr<asio::io_context>> contexts;
        for (unsigned i = 0; i < opts.threads; ++i)
            contexts.push_back(std::make_unique<asio::io_context>(1));

        // The first acceptor may pick the port; the others share it through SO_REUSEPORT.
        unsigned short port = opts.port;
        for (auto& ioc : contexts) {
            tcp::acceptor acceptor = open_acceptor(*ioc, port);
            port = acceptor.local_endpoint().port();
            asio::co_spawn(*ioc, accept_loop(std::move(acceptor)), asio::detached);
        }

        asio::signal_set signals(*contexts.front(), SIGINT, SIGTERM);
        signals.async_wait([&](const beast::error_code&, int) {
            for (auto& ioc : contexts)
                ioc->stop();
        });

        idemgate::log::info("listening", {{"listen", "127.0.0.1:" + std::to_string(port)},
                                          {"threads", opts.threads}});

        std::vector<std::thread> threads;
        for (std::size_t i = 1; i < contexts.size(); ++i)
            threads.emplace_back([&ioc = *contexts[i]] { ioc.run(); });
        contexts.front()->run();
        for (auto& t : threads)
            t.join();
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "bare-beast: " << e.what() << "\n";
        return 1;
    }
}
