// SPDX-License-Identifier: Apache-2.0
// idemgate-test-upstream: an HTTP/1.1 server whose answers are scripted by request headers, so
// integration tests can see exactly what the gateway forwarded and how often.
//
//   --port N            listen on 127.0.0.1:N (0 = any free port); prints
//                       "listening 127.0.0.1:P" on stdout once accepting.
//   --tls-cert F --tls-key K   also serve HTTPS (TLS 1.2+) on a second free port with that
//                       certificate; prints "listening-tls 127.0.0.1:Q" after the line above.
//                       The counter is shared, so /__count on the plain port counts both.
//   --tls-client-ca F   HTTPS clients must present a certificate signed by this CA.
//   --host H            listen on H instead of 127.0.0.1 (e.g. 127.0.0.2: upstream fleets whose
//                       addresses differ only by IP); the line then reads "listening H:P".
//   --name N            every scripted answer carries X-Upstream-Name: N (which member of a
//                       fleet answered).
//   GET  /__count       {"executions":N}   (requests whose path does not start with /__)
//   GET  /__keys        {"<Idempotency-Key>":[execution numbers],...}: which executions each key
//                       got (a key that ran twice lists two)
//   POST /__reset       zeroes the counter (and forgets the keys)
//   ANY  /__lookup/N/... a lookup (a reconcile probe), not counted: answers status N with
//                       {"lookup":"<target>"} and X-Lookup: 1
//   GET  /__lookups     {"<lookup target>":["<Idempotency-Key> <X-Tenant>",...]}: each lookup
//   any other request   increments the counter, then answers per these request headers:
//     X-Test-Status: N      status (default 201)
//     X-Test-Delay-Ms: N    wait N ms (asynchronous timer) before answering
//     X-Test-Chunked: 1     chunked response body
//     X-Test-Close: 1       Connection: close after the response
//     X-Test-Abort: 1       count it, then close the connection without answering
//     X-Test-Body-Size: N   body of N 'x' bytes instead of the JSON echo
//     X-Test-Set-Cookie: 1  adds Set-Cookie: session=abc
//     X-Test-Interim: 1     sends "103 Early Hints" (with a Link header) before the answer
//     X-Test-Trailer: 1     chunked body followed by the trailer field "X-Trailer-Secret: t1"
//     X-Test-Break-After: N  announce the whole body (Content-Length, or chunked with
//                           X-Test-Chunked), send its first N bytes, then close the connection
//     X-Test-Echo-Request-Id: 1  answers with the request's X-Request-Id header (as many apps do)
//     X-Test-Header: Name: value  adds that field to the answer (repeatable: one field a line)
//     X-Test-Close-Idle-Ms: N  keep the connection after the answer (Connection: keep-alive),
//                           then close it without a word once it has been idle N ms
//     X-Test-Echo-Head: 1   the body is the request's head as received, byte for byte
//                           (request line through the empty line), as text/plain
//   Faults for the at-most-once tests (what an upstream dying at each point looks like):
//     X-Test-Drop-Next: 1   answer this one (keep-alive), then close the connection without
//                           reading the next request once its first bytes arrive (not counted)
//     X-Test-Drop: 1        read the request, then close without running it (not counted)
//     X-Test-Cut-Head: N    count it, send the first N bytes of the answer's head, then close
//     X-Test-Head-Bytes: N  the answer's head carries N bytes of 'h' in X-Big lines
//     X-Test-Bad-Framing: 1 count it, then answer with two different Content-Length fields
//     X-Test-Bare-LF: 1     count it, then answer with bare LF line ends (no CR)
//   Every answer carries X-Upstream-Execution, ETag, Location, Content-Type and the hop-by-hop
//   headers Keep-Alive, Connection: keep-alive, X-Hop and X-Hop that a proxy must strip.
//   The default body echoes {"execution","method","target","body","headers"}.
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

std::atomic<long> executions{0};
std::mutex keys_mutex;
boost::json::object executions_by_key; // Idempotency-Key -> [execution numbers]
boost::json::object lookups;           // lookup target -> ["<Idempotency-Key> <X-Tenant>", ...]
std::string instance_name;             // --name

long header_number(const http::request<http::string_body>& req, std::string_view name, long fallback)
{
    auto it = req.find(name);
    if (it == req.end())
        return fallback;
    long value = fallback;
    auto text = it->value();
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc{} ? value : fallback;
}

bool header_is_one(const http::request<http::string_body>& req, std::string_view name)
{
    auto it = req.find(name);
    return it != req.end() && it->value() == "1";
}

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

http::response<http::string_body> control_answer(const http::request<http::string_body>& req)
{
    http::response<http::string_body> res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    if (req.target() == "/__count" && req.method() == http::verb::get) {
        res.body() = boost::json::serialize(boost::json::object{{"executions", executions.load()}});
    } else if (req.target() == "/__keys" && req.method() == http::verb::get) {
        std::lock_guard lock(keys_mutex);
        res.body() = boost::json::serialize(executions_by_key);
    } else if (req.target().starts_with("/__lookup/")) {
        auto target = std::string(req.target());
        std::string seen = std::string(req["Idempotency-Key"]) + " " + std::string(req["X-Tenant"]);
        {
            std::lock_guard lock(keys_mutex);
            auto& list = lookups[target];
            if (!list.is_array())
                list = boost::json::array{};
            list.as_array().push_back(boost::json::string(seen));
        }
        unsigned status = 0;
        std::from_chars(target.data() + 10, target.data() + target.size(), status);
        res.result(status >= 200 && status < 600 ? status : 500);
        res.set("X-Lookup", "1");
        res.body() = boost::json::serialize(boost::json::object{{"lookup", target}});
    } else if (req.target() == "/__lookups" && req.method() == http::verb::get) {
        std::lock_guard lock(keys_mutex);
        res.body() = boost::json::serialize(lookups);
    } else if (req.target() == "/__reset" && req.method() == http::verb::post) {
        executions = 0;
        std::lock_guard lock(keys_mutex);
        executions_by_key.clear();
        lookups.clear();
        res.body() = R"({"executions":0})";
    } else {
        res.result(http::status::not_found);
        res.body() = R"({"error":"unknown control path"})";
    }
    res.prepare_payload();
    return res;
}

asio::awaitable<http::response<http::string_body>>
scripted_answer(const http::request<http::string_body>& req)
{
    long execution = ++executions;
    if (auto it = req.find("Idempotency-Key"); it != req.end()) {
        std::lock_guard lock(keys_mutex);
        auto& list = executions_by_key[std::string_view(it->value().data(), it->value().size())];
        if (!list.is_array())
            list = boost::json::array{};
        list.as_array().push_back(execution);
    }

    long delay_ms = header_number(req, "X-Test-Delay-Ms", 0);
    if (delay_ms > 0) {
        asio::steady_timer timer(co_await asio::this_coro::executor);
        timer.expires_after(std::chrono::milliseconds(delay_ms));
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }

    auto status = static_cast<unsigned>(header_number(req, "X-Test-Status", 201));
    http::response<http::string_body> res;
    res.version(11);
    res.result(status);
    res.set(http::field::content_type, "application/json");
    res.set("X-Upstream-Execution", std::to_string(execution));
    if (!instance_name.empty())
        res.set("X-Upstream-Name", instance_name);
    res.set(http::field::etag, "\"e" + std::to_string(execution) + "\"");
    res.set(http::field::location, "/api/orders/" + std::to_string(execution));
    res.set(http::field::keep_alive, "timeout=5");
    res.set("X-Hop", "secret");
    bool close = header_is_one(req, "X-Test-Close") || !req.keep_alive();
    res.set(http::field::connection, close ? "close, X-Hop" : "keep-alive, X-Hop");
    if (header_is_one(req, "X-Test-Set-Cookie"))
        res.set(http::field::set_cookie, "session=abc");
    for (const auto& field : req) {
        if (!beast::iequals(field.name_string(), "X-Test-Header"))
            continue;
        auto line = field.value();
        auto colon = line.find(':');
        if (colon == std::string_view::npos)
            continue;
        auto value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ')
            value.remove_prefix(1);
        res.insert(line.substr(0, colon), value);
    }
    if (header_is_one(req, "X-Test-Echo-Request-Id"))
        if (auto it = req.find("X-Request-Id"); it != req.end())
            res.set("X-Request-Id", it->value());

    long body_size = header_number(req, "X-Test-Body-Size", -1);
    if (body_size >= 0) {
        res.body().assign(static_cast<std::size_t>(body_size), 'x');
    } else {
        boost::json::object headers;
        for (auto& field : req) {
            auto name = lower(field.name_string());
            auto it = headers.find(name);
            if (it == headers.end())
                headers[name] = std::string(field.value());
            else
                it->value() = std::string(it->value().as_string()) + ", " + std::string(field.value());
        }
        boost::json::object echo{{"execution", execution},
                                 {"method", std::string(req.method_string())},
                                 {"target", std::string(req.target())},
                                 {"body", req.body()},
                                 {"headers", std::move(headers)}};
        res.body() = boost::json::serialize(echo);
    }
    bool bodiless_status = (status >= 100 && status < 200) || status == 204 || status == 304;
    if (bodiless_status)
        res.body().clear();
    if (header_is_one(req, "X-Test-Chunked") && !bodiless_status)
        res.chunked(true);
    else
        res.prepare_payload();
    // A HEAD answer announces the GET body's length but carries no body (RFC 9110 9.3.2).
    if (req.method() == http::verb::head && !res.chunked()) {
        auto length = res.body().size();
        res.body().clear();
        res.content_length(length);
    }
    co_return res;
}

// The answer's head as sent (status line through the empty line), with bare LF if asked.
std::string head_of(const http::response<http::string_body>& res, bool bare_lf)
{
    std::ostringstream wire;
    wire << res.base();
    auto head = wire.str();
    if (bare_lf) {
        std::string out;
        for (char c : head)
            if (c != '\r')
                out.push_back(c);
        head = std::move(out);
    }
    return head;
}

// Closes the connection once the next request's first bytes have arrived, without reading them:
// the kernel answers the unread bytes with a reset, as an upstream that closed in the middle of
// its keep-alive timeout does.
template<class Stream>
asio::awaitable<void> drop_when_readable(Stream& stream)
{
    auto& socket = beast::get_lowest_layer(stream).socket();
    co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
    beast::error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
}

template<class Stream>
asio::awaitable<void> serve(Stream& stream)
{
    beast::flat_buffer buffer;
    std::chrono::milliseconds idle_close{60000}; // how long the next request may take to arrive
    bool drop_next = false;
    for (;;) {
        if (drop_next && buffer.size() == 0) {
            co_await drop_when_readable(stream);
            co_return;
        }
        http::request_parser<http::string_body> parser;
        parser.header_limit(256 * 1024);
        parser.body_limit(64 * 1024 * 1024);
        beast::get_lowest_layer(stream).expires_after(idle_close);
        // The head's bytes as they arrived, for X-Test-Echo-Head (the parser reads them after).
        std::string head;
        while (buffer.size() <= 256 * 1024) {
            std::string_view pending(static_cast<const char*>(buffer.data().data()), buffer.size());
            if (auto end = pending.find("\r\n\r\n"); end != std::string_view::npos) {
                head = pending.substr(0, end + 4);
                break;
            }
            auto [some_ec, some_n] = co_await stream.async_read_some(buffer.prepare(16 * 1024),
                                                                     asio::as_tuple(asio::use_awaitable));
            if (some_ec)
                break; // the read below reports it
            buffer.commit(some_n);
        }
        auto [read_ec, read_n] =
            co_await http::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
        if (read_ec)
            break;
        auto req = parser.release();
        bool control = req.target().starts_with("/__");
        if (auto ms = header_number(req, "X-Test-Close-Idle-Ms", -1); !control && ms >= 0)
            idle_close = std::chrono::milliseconds(ms);
        // Read and never run: what an upstream that dies before its handler looks like.
        if (!control && header_is_one(req, "X-Test-Drop"))
            break;
        drop_next = !control && header_is_one(req, "X-Test-Drop-Next");
        http::response<http::string_body> res;
        if (control) {
            res = control_answer(req);
            res.keep_alive(req.keep_alive());
        } else {
            res = co_await scripted_answer(req);
            if (header_is_one(req, "X-Test-Echo-Head")) {
                res.body() = head;
                res.set(http::field::content_type, "text/plain");
                res.prepare_payload();
            }
        }
        // The request ran but its answer is lost: what a crash after commit looks like.
        if (!control && header_is_one(req, "X-Test-Abort"))
            break;
        // Beast keeps a field's value under 64 KiB: a larger head is several X-Big lines.
        for (long big = header_number(req, "X-Test-Head-Bytes", -1); !control && big > 0; big -= 8000)
            res.insert("X-Big", std::string(static_cast<std::size_t>(std::min(big, 8000L)), 'h'));
        if (!control && (header_number(req, "X-Test-Cut-Head", -1) >= 0 ||
                         header_is_one(req, "X-Test-Bad-Framing") || header_is_one(req, "X-Test-Bare-LF"))) {
            // An answer that began and cannot be read: cut in its head, framed two ways, or with
            // bare LF line ends.
            std::string bytes;
            if (header_is_one(req, "X-Test-Bad-Framing")) {
                res.set(http::field::content_length, std::to_string(res.body().size()));
                res.insert(http::field::content_length, std::to_string(res.body().size() + 1));
                bytes = head_of(res, false) + res.body();
            } else if (header_is_one(req, "X-Test-Bare-LF")) {
                bytes = head_of(res, true) + res.body();
            } else {
                bytes = head_of(res, false);
                bytes.resize(std::min(bytes.size(),
                                      static_cast<std::size_t>(header_number(req, "X-Test-Cut-Head", 0))));
            }
            co_await asio::async_write(stream, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
            // A cut head ends the connection; the others keep it open, as a live upstream does,
            // so a gateway that waits for more would wait for its timeout.
            if (header_number(req, "X-Test-Cut-Head", -1) >= 0)
                break;
            continue;
        }
        bool close = !req.keep_alive() || (!control && header_is_one(req, "X-Test-Close"));
        beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
        if (!control && header_is_one(req, "X-Test-Interim")) {
            static constexpr std::string_view hints =
                "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
            auto [hint_ec, hint_n] = co_await asio::async_write(
                stream, asio::buffer(hints.data(), hints.size()), asio::as_tuple(asio::use_awaitable));
            if (hint_ec)
                break;
        }
        if (auto cut = header_number(req, "X-Test-Break-After", -1); !control && cut >= 0) {
            // An answer that breaks off: the head as for the whole body, then a part of it.
            std::ostringstream wire;
            auto part = res.body().substr(0, static_cast<std::size_t>(cut));
            if (res.chunked()) {
                res.chunked(false);
                res.set(http::field::transfer_encoding, "chunked");
                wire << res.base() << std::hex << part.size() << "\r\n" << part;
            } else {
                wire << res.base() << part;
            }
            auto bytes = wire.str();
            co_await asio::async_write(stream, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
            break;
        }
        if (!control && header_is_one(req, "X-Test-Trailer")) {
            // Beast's serializer cannot emit trailers for a string body: write the bytes by hand.
            res.chunked(false);
            res.erase(http::field::content_length);
            res.set(http::field::transfer_encoding, "chunked");
            res.set(http::field::trailer, "X-Trailer-Secret");
            std::ostringstream wire;
            wire << res.base() << std::hex << res.body().size() << "\r\n"
                 << res.body() << "\r\n0\r\nX-Trailer-Secret: t1\r\n\r\n";
            auto bytes = wire.str();
            auto [raw_ec, raw_n] =
                co_await asio::async_write(stream, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
            if (raw_ec || close)
                break;
            continue;
        }
        auto [write_ec, write_n] =
            co_await http::async_write(stream, res, asio::as_tuple(asio::use_awaitable));
        if (write_ec || close)
            break;
    }
    beast::error_code ignored;
    beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_send, ignored);
}

asio::awaitable<void> session(tcp::socket socket)
{
    beast::tcp_stream stream(std::move(socket));
    co_await serve(stream);
}

asio::awaitable<void> tls_session(tcp::socket socket, asio::ssl::context& ctx)
{
    beast::ssl_stream<beast::tcp_stream> stream(std::move(socket), ctx);
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    auto [ec] =
        co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(asio::use_awaitable));
    if (ec) {
        std::cout << "tls handshake failed: " << ec.message() << std::endl;
        co_return;
    }
    co_await serve(stream);
}

asio::awaitable<void> tls_accept_loop(tcp::acceptor& acceptor, asio::ssl::context& ctx)
{
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec) {
            if (ec == asio::error::operation_aborted)
                co_return;
            continue;
        }
        asio::co_spawn(acceptor.get_executor(), tls_session(std::move(socket), ctx), asio::detached);
    }
}

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor)
{
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
        if (ec) {
            if (ec == asio::error::operation_aborted)
                co_return;
            continue;
        }
        asio::co_spawn(acceptor.get_executor(), session(std::move(socket)), asio::detached);
    }
}

} // namespace

int main(int argc, char** argv)
{
    unsigned short port = 0;
    std::string tls_cert, tls_key, tls_client_ca, host = "127.0.0.1";
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--port" && i + 1 < argc) {
            port = static_cast<unsigned short>(std::stoul(argv[++i]));
        } else if (arg == "--tls-cert" && i + 1 < argc) {
            tls_cert = argv[++i];
        } else if (arg == "--tls-key" && i + 1 < argc) {
            tls_key = argv[++i];
        } else if (arg == "--tls-client-ca" && i + 1 < argc) {
            tls_client_ca = argv[++i];
        } else if (arg == "--host" && i + 1 < argc) {
            host = argv[++i];
        } else if (arg == "--name" && i + 1 < argc) {
            instance_name = argv[++i];
        } else {
            std::cerr << "usage: idemgate-test-upstream [--port N] [--host H] [--name N] [--tls-cert F "
                         "--tls-key K [--tls-client-ca C]]\n";
            return 2;
        }
    }
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address(host), port));
    std::cout << "listening " << host << ":" << acceptor.local_endpoint().port() << std::endl;
    asio::co_spawn(io, accept_loop(acceptor), asio::detached);
    asio::ssl::context tls(asio::ssl::context::tls_server);
    tcp::acceptor tls_acceptor(io);
    if (!tls_cert.empty()) {
        SSL_CTX_set_min_proto_version(tls.native_handle(), TLS1_2_VERSION);
        tls.use_certificate_chain_file(tls_cert);
        tls.use_private_key_file(tls_key, asio::ssl::context::pem);
        static constexpr unsigned char session_context[] = "test-upstream";
        SSL_CTX_set_session_id_context(tls.native_handle(), session_context, sizeof session_context - 1);
        if (!tls_client_ca.empty()) {
            tls.load_verify_file(tls_client_ca);
            tls.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
        }
        tls_acceptor = tcp::acceptor(io, tcp::endpoint(asio::ip::make_address(host), 0));
        std::cout << "listening-tls " << host << ":" << tls_acceptor.local_endpoint().port() << std::endl;
        asio::co_spawn(io, tls_accept_loop(tls_acceptor, tls), asio::detached);
    }
    io.run();
    return 0;
}
