// SPDX-License-Identifier: Apache-2.0
// The checks on an upstream's answer that Beast 1.81 does not make: framing the gateway cannot
// delimit exactly is refused (502), a status line without a reason phrase is read.
#include <doctest/doctest.h>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <string>
#include <utility>
#include <vector>

using namespace idemgate::gateway;

TEST_CASE("answer framing: only exactly chunked, or one Content-Length")
{
    struct row {
        const char* name;
        std::vector<std::pair<std::string, std::string>> fields;
        response_violation expected;
    };
    const row rows[] = {
        {"Content-Length", {{"Content-Length", "2"}}, response_violation::none},
        {"chunked", {{"Transfer-Encoding", "chunked"}}, response_violation::none},
        {"Chunked, spaces", {{"Transfer-Encoding", " Chunked "}}, response_violation::none},
        {"neither (read to close)", {{"Content-Type", "text/plain"}}, response_violation::none},
        {"chunked, chunked",
         {{"Transfer-Encoding", "chunked, chunked"}},
         response_violation::transfer_encoding_not_chunked},
        {"chunked, gzip",
         {{"Transfer-Encoding", "chunked, gzip"}},
         response_violation::transfer_encoding_not_chunked},
        {"gzip", {{"Transfer-Encoding", "gzip"}}, response_violation::transfer_encoding_not_chunked},
        {"gzip, chunked (coded bytes)",
         {{"Transfer-Encoding", "gzip, chunked"}},
         response_violation::transfer_encoding_not_chunked},
        {"two lines",
         {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}},
         response_violation::transfer_encoding_not_chunked},
        {"gzip with Content-Length: 0",
         {{"Transfer-Encoding", "gzip"}, {"Content-Length", "0"}},
         response_violation::content_length_and_transfer_encoding},
        {"Content-Length and chunked",
         {{"Content-Length", "2"}, {"Transfer-Encoding", "chunked"}},
         response_violation::content_length_and_transfer_encoding},
        {"Content-Length list", {{"Content-Length", "2, 2"}}, response_violation::conflicting_content_length},
        {"two Content-Length",
         {{"Content-Length", "2"}, {"Content-Length", "2"}},
         response_violation::conflicting_content_length},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        http::fields f;
        for (const auto& [n, v] : r.fields)
            f.insert(n, v);
        CHECK(check_response_framing(f) == r.expected);
        if (r.expected != response_violation::none)
            CHECK_FALSE(describe(r.expected).empty());
    }
}

TEST_CASE("answer head: obs-fold in a framing field is refused, elsewhere left to the parser")
{
    const std::pair<const char*, response_violation> rows[] = {
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n  abc\r\n\r\n",
         response_violation::obs_fold_in_framing},
        {"HTTP/1.1 200 OK\r\ntransfer-encoding:\r\n\tchunked\r\n\r\n",
         response_violation::obs_fold_in_framing},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 0\r\n\r\n", response_violation::obs_fold_in_framing},
        {"HTTP/1.1 200 OK\r\nX-Long: a\r\n b\r\nContent-Length: 2\r\n\r\n", response_violation::none},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Long: a\r\n b\r\n\r\n", response_violation::none},
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", response_violation::none},
    };
    for (const auto& [head, expected] : rows) {
        CAPTURE(head);
        const auto scan = scan_head(head);
        CHECK(scan.end == std::string_view(head).size());
        // the gateway calls check_response_head only for a folded head
        const std::string_view text(head);
        CHECK(scan.folded == (text.find("\n ") != text.npos || text.find("\n\t") != text.npos));
        CHECK(check_response_head(head) == expected);
    }
    CHECK(scan_head("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n").end == 0);
    CHECK(scan_head("HTTP/1.1 200 OK\r\n\r\nok").end == 19);
}

TEST_CASE("a status line without a reason phrase is recognised, nothing else")
{
    CHECK(lacks_reason_separator("HTTP/1.1 301\r\n\r\n"));
    CHECK(lacks_reason_separator("HTTP/1.0 200\r\nContent-Length: 2\r\n\r\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 301 \r\n\r\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 301 Moved\r\n\r\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 30\r\n\r\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 3011\r\n\r\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 301\n\n"));
    CHECK_FALSE(lacks_reason_separator("HTTP/1.1 301"));
}

TEST_CASE("an answer began once a whole final status line arrived")
{
    struct row {
        std::string_view bytes;
        unsigned status;
    };
    const row rows[] = {
        {"HTTP/1.1 201 Created\r\n", 201},
        {"HTTP/1.1 201 Created\r\nContent-Le", 201},          // cut in the head
        {"HTTP/1.1 201 Created\nContent-Length: 2\n\n", 201}, // bare LF
        {"HTTP/1.0 500 Oops\r\n", 500},
        {"HTTP/1.1 204\r\n", 204},                     // no reason, no SP
        {"HTTP/1.1 204 \r\n", 204},                    // empty reason
        {"HTTP/1.1 201 Cr\xe9\xe9 obs-text\r\n", 201}, // obs-text in the reason
        {"HTTP/1.1 201 Created", 0},                   // the line has not ended
        {"HTTP/1.1 2", 0},
        {"", 0},
        {"HTTP/1.1 100 Continue\r\n", 0}, // interim
        {"HTTP/1.1 103 Early Hints\r\n", 0},
        {"HTTP/1.1 600 Nope\r\n", 0},
        {"HTTP/1.1 099 Nope\r\n", 0},
        {"HTTP/2.0 200 OK\r\n", 0},
        {"HTTP/1.1 20x OK\r\n", 0},
        {"HTTP/1.1 2000 OK\r\n", 0},
        {"HTTP/1.1  200 OK\r\n", 0},
        {"HTTP/1.1 200OK\r\n", 0},
        {"HTTP/1.1 200 O\x01K\r\n", 0}, // a control character in the reason
        {"http/1.1 200 OK\r\n", 0},
        {"garbage\r\n", 0},
    };
    for (const auto& r : rows) {
        CAPTURE(r.bytes);
        CHECK(arrived_final_status(r.bytes) == r.status);
    }
}
