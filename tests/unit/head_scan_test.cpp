// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/head_scan.hpp>
#include <string>

using idemgate::gateway::head_scan;
using idemgate::gateway::scan_head;

namespace {

// What the scan must say, from the definitions: the first "\r\n\r\n", and a '\n' followed by SP
// or HT before its "\n\r\n" (anywhere when there is no end).
head_scan expected(const std::string& bytes)
{
    head_scan out;
    const auto at = bytes.find("\r\n\r\n");
    const std::size_t folds_before = at == std::string::npos ? bytes.size() : at + 1;
    for (std::size_t q = 0; q + 1 < bytes.size() && q < folds_before; ++q)
        if (bytes[q] == '\n' && (bytes[q + 1] == ' ' || bytes[q + 1] == '\t'))
            out.folded = true;
    out.end = at == std::string::npos ? 0 : at + 4;
    return out;
}

void check_all(const std::string& bytes)
{
    const auto want = expected(bytes);
    const auto got = scan_head(bytes);
    INFO("bytes: ", bytes.size(), " end ", want.end, " folded ", want.folded);
    CHECK(got.end == want.end);
    CHECK(got.folded == want.folded);
}

// Field lines of `length` bytes in all (the last line may be cut).
std::string lines(std::size_t length)
{
    std::string out;
    for (std::size_t i = 0; out.size() < length; ++i)
        out += (i % 3 == 0) ? "X-A: b\r\n" : "Host: h\r\n";
    out.resize(length);
    return out;
}

} // namespace

TEST_CASE("scan_head finds the head's end at every place, with and without bytes after it")
{
    for (std::size_t before = 0; before < 70; ++before)
        for (std::size_t after = 0; after < 20; after += 7) {
            auto bytes = lines(before) + "\r\n\r\n" + std::string(after, 'z');
            check_all(bytes);
            // a second end further on does not count
            check_all(bytes + "\r\n\r\n");
        }
    check_all("");
    check_all("\r\n\r\n");
    check_all("\n\r\n");
    check_all(lines(64)); // no end at all
}

TEST_CASE("scan_head finds a folded line at every place before the end, and none after it")
{
    for (std::size_t head = 20; head < 60; head += 13)
        for (std::size_t at = 0; at < head + 24; ++at)
            for (char fold : {' ', '\t'}) {
                auto bytes = lines(head) + "\r\n\r\n" + std::string(24, 'z');
                bytes.insert(at, std::string("\n") + fold);
                check_all(bytes);
                check_all(bytes.substr(0, head)); // cut before the end
            }
    // A fold right after the status line, a body that looks folded, a fold with no end.
    CHECK(scan_head("HTTP/1.1 200 OK\r\n X: y\r\n\r\n").folded);
    CHECK_FALSE(scan_head("Host: hhhhhhhhhhhhhhhhhhhh\r\n\r\nbody\n continued, not a field").folded);
    CHECK(scan_head("Host: hhhhhhhhhhhhhhhhhhhhhhhhhhhhhh\r\n\tfolded, no end yet").folded);
    CHECK(scan_head("Host: hhhhhhhhhhhhhhhhhhhhhhhhhhhhhh\r\n\tfolded, no end yet").end == 0);
    // The end is found after a fold too (an answer's head is cut there before it is checked).
    CHECK(scan_head("HTTP/1.1 200 OK\r\nA: b\r\n c\r\nD: eeeeeeeeeeeeeeeeeeeeeeeee\r\n\r\n").end == 59);
}
