// SPDX-License-Identifier: Apache-2.0
// Strict request framing (request smuggling shapes) and size limits: rejected before anything
// is reserved or forwarded.
#include "gateway_fixture.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace idemgate::test;

namespace {

struct smuggling_shape {
    const char* name;
    std::string head; // request line + header lines, without the final CRLF
    std::string body;
    bool allow_501 = false;
};

} // namespace

TEST_SUITE_BEGIN("framing");

TEST_CASE("every request smuggling shape gets 400 and the connection is closed")
{
    gateway_fixture f;
    const std::string key = unique_key("smuggle");
    const std::string start =
        "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key + "\r\n";
    const std::string chunked_body = "5\r\nhello\r\n0\r\n\r\n";
    std::vector<smuggling_shape> shapes{
        {"Content-Length then Transfer-Encoding",
         start + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", chunked_body},
        {"Transfer-Encoding then Content-Length",
         start + "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", chunked_body},
        {"Transfer-Encoding gzip, chunked", start + "Transfer-Encoding: gzip, chunked\r\n", chunked_body,
         true},
        {"Transfer-Encoding chunked, chunked", start + "Transfer-Encoding: chunked, chunked\r\n",
         chunked_body, true},
        {"Transfer-Encoding on two lines",
         start + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", chunked_body, true},
        {"Transfer-Encoding identity", start + "Transfer-Encoding: identity\r\n", "hello", true},
        {"Transfer-Encoding xchunked", start + "Transfer-Encoding: xchunked\r\n", chunked_body, true},
        {"HTTP/1.0 with Transfer-Encoding",
         "POST /api/orders HTTP/1.0\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
             "\r\nTransfer-Encoding: chunked\r\n",
         chunked_body},
        {"conflicting Content-Length lines", start + "Content-Length: 5\r\nContent-Length: 6\r\n", "hello!"},
        {"Content-Length list", start + "Content-Length: 5, 6\r\n", "hello!"},
        {"chunked trailer fields", start + "Transfer-Encoding: chunked\r\n",
         "5\r\nhello\r\n0\r\nIdempotency-Key: evil\r\nX-Tenant-ID: other\r\n\r\n"},
        {"chunked trailer field of any name", start + "Transfer-Encoding: chunked\r\n",
         "5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n"},
    };
    for (auto& shape : shapes) {
        CAPTURE(shape.name);
        http_connection conn(f.port(), io_timeout);
        std::string response_error;
        http_response res;
        try {
            conn.send_raw(shape.head + "\r\n" + shape.body);
            res = conn.read_response();
        } catch (const std::exception& e) {
            response_error = e.what();
        }
        INFO("error: ", response_error, " raw: ", res.raw);
        bool rejected = is_problem(res, 400) || (shape.allow_501 && is_problem(res, 501));
        CHECK(rejected);
        CHECK(conn.closed_by_peer());
    }
    CHECK(f.executions() == 0);

    // Nothing was reserved: the key still runs normally.
    auto clean = f.post("/api/orders", key, "hello");
    CHECK(clean.status == 201);
    CHECK(clean.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("a smuggled second request is never forwarded")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    // Classic CL.TE: a front end trusting Content-Length would forward the tail as a request.
    const std::string smuggled =
        "0\r\n\r\nPOST /api/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n";
    std::string error;
    http_response res;
    try {
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                      std::to_string(smuggled.size()) + "\r\nTransfer-Encoding: chunked\r\n\r\n" + smuggled);
        res = conn.read_response();
    } catch (const std::exception& e) {
        error = e.what();
    }
    INFO("error: ", error, " raw: ", res.raw);
    CHECK(is_problem(res, 400));
    CHECK(conn.closed_by_peer());
    CHECK(f.executions() == 0);
}

TEST_CASE("oversize body gets 413 before anything is reserved")
{
    gateway_options options;
    options.limits = "  max_request_body: 1KiB\n";
    gateway_fixture f(options);
    const std::string key = unique_key("big");

    SUBCASE("declared by Content-Length")
    {
        auto res = f.post("/api/orders", key, std::string(2000, 'b'));
        CHECK(is_problem(res, 413));
    }
    SUBCASE("chunked")
    {
        http_connection conn(f.port(), io_timeout);
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                      "\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + std::string(1024, 'b') +
                      "\r\n400\r\n" + std::string(1024, 'b') + "\r\n0\r\n\r\n");
        CHECK(is_problem(conn.read_response(), 413));
    }
    SUBCASE("without a key")
    {
        CHECK(is_problem(f.post("/api/orders", "", std::string(2000, 'b')), 413));
    }
    CHECK(f.executions() == 0);

    // At the limit it passes, and the key was never reserved by the rejected attempt.
    auto ok = f.post("/api/orders", key, std::string(1024, 'b'));
    CHECK(ok.status == 201);
    CHECK(ok.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 1);
}

namespace {

// What a client that goes on sending after the gateway answered sees: the answer's bytes, whether
// its later sends were accepted, and how the connection ended (0: an orderly close; otherwise the
// errno of the failed read).
struct cut_short_result {
    std::string received;
    int send_errno = -1; // of the last send after the answer arrived (0: accepted)
    int end_errno = -1;
};

cut_short_result send_cut_short(std::uint16_t port, const std::string& head, std::size_t body_bytes)
{
    cut_short_result result;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    std::string bytes = head + std::string(body_bytes, 'b');
    REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
    // Read until the answer is complete (its Content-Length) or the connection ends.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto answered = [&] {
        auto end = result.received.find("\r\n\r\n");
        auto cl = result.received.find("Content-Length: ");
        if (end == std::string::npos || cl == std::string::npos)
            return false;
        return result.received.size() >= end + 4 + std::stoul(result.received.substr(cl + 16));
    };
    char buf[4096];
    while (!answered() && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0)
            continue;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        result.received.append(buf, static_cast<std::size_t>(n));
    }
    // The client is still sending its body when the answer arrives: these bytes reach a gateway
    // that will not read them as a request. Had it closed the socket, the kernel would answer them
    // with a reset, and the next send fails with ECONNRESET or EPIPE.
    std::string more(16 * 1024, 'm');
    for (int i = 0; i < 2; ++i) {
        result.send_errno = ::send(fd, more.data(), more.size(), MSG_NOSIGNAL) < 0 ? errno : 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ::shutdown(fd, SHUT_WR);
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 3000) <= 0) {
            result.end_errno = ETIMEDOUT;
            break;
        }
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            result.received.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        result.end_errno = n == 0 ? 0 : errno;
        break;
    }
    ::close(fd);
    return result;
}

} // namespace

TEST_CASE("an answer to a request read only in part ends with an orderly close, not a reset")
{
    // Closing over unread request bytes would make the kernel reset the connection, which can
    // destroy the answer before the client reads it: the gateway half-closes and drains instead.
    gateway_options options;
    options.limits = "  max_request_body: 1KiB\n";
    gateway_fixture f(options);
    const std::string key = unique_key("cut-short");
    struct cut_short_case {
        const char* name;
        std::string fields; // after the key's line, up to the empty line
        const char* status_line;
    };
    const cut_short_case cases[] = {
        {"413: the declared body is over the limit, part of it already sent", "Content-Length: 100000\r\n",
         "HTTP/1.1 413 "},
        {"400: a smuggling shape followed by more bytes",
         "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "HTTP/1.1 400 "},
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        auto r = send_cut_short(f.port(),
                                "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                                    "\r\n" + c.fields + "\r\n",
                                32 * 1024);
        INFO("received: ", r.received);
        CHECK(r.received.rfind(c.status_line, 0) == 0);
        CHECK(r.send_errno == 0);
        CHECK(r.end_errno == 0);
    }
    CHECK(f.executions() == 0);
}

TEST_CASE("big header gets 431 before anything is reserved")
{
    gateway_options options;
    options.limits = "  max_header_bytes: 2KiB\n";
    gateway_fixture f(options);
    const std::string key = unique_key("header");
    auto res = f.post("/api/orders", key, "{}", {{"X-Big", std::string(3000, 'h')}});
    CHECK(is_problem(res, 431));
    CHECK(f.executions() == 0);

    auto ok = f.post("/api/orders", key, "{}", {{"X-Small", std::string(100, 'h')}});
    CHECK(ok.status == 201);
    CHECK(ok.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 1);
}

TEST_SUITE_END();
