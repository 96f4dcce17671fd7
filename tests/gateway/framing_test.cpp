// SPDX-License-Identifier: Apache-2.0
// Strict request framing (request smuggling shapes) and size limits: rejected before anything
// is reserved or forwarded.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>

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
