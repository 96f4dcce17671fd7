// SPDX-License-Identifier: Apache-2.0
// gzip request bodies decoded for their fingerprint: whole members only, bounded output.
#include <doctest/doctest.h>
#include <idemgate/gateway/content_decoding.hpp>
#include <idemgate/test/gzip.hpp>
#include <string>

using namespace idemgate::gateway;

using idemgate::test::gzip_member;

namespace {

std::string gzip_of(const std::string& data, unsigned long mtime, const char* name = nullptr, int level = 6)
{
    return gzip_member(data, mtime, name, level);
}

} // namespace

TEST_CASE("gunzip: one gzip member decodes to its bytes, whatever its header and compression level")
{
    const std::string body = R"({"item":"book","qty":2})";
    std::string out;
    for (auto coded : {gzip_of(body, 1), gzip_of(body, 1700000000), gzip_of(body, 5, "order.json"),
                       gzip_of(body, 5, nullptr, 1), gzip_of(body, 5, nullptr, 9)}) {
        CHECK(gunzip(coded, 1024, out) == decode_result::decoded);
        CHECK(out == body);
    }
    CHECK(gzip_of(body, 1) != gzip_of(body, 2)); // the bytes differ, the decoded body does not
    CHECK(gunzip(gzip_of("", 1), 1024, out) == decode_result::decoded);
    CHECK(out.empty());
}

TEST_CASE("gunzip: the decoded size is bounded, a decompression bomb stops at the limit")
{
    const std::string zeros(10 * 1024 * 1024, '\0'); // about 10 KiB coded
    auto bomb = gzip_of(zeros, 1, nullptr, 9);
    CHECK(bomb.size() < 64 * 1024);
    std::string out;
    CHECK(gunzip(bomb, 1024 * 1024, out) == decode_result::too_large);
    CHECK(out.size() <= 1024 * 1024);
    CHECK(gunzip(bomb, zeros.size(), out) == decode_result::decoded); // exactly at the limit
    CHECK(out.size() == zeros.size());
}

TEST_CASE("gunzip: anything but one whole gzip member is invalid")
{
    const std::string body = "hello, retry";
    auto coded = gzip_of(body, 1);
    std::string out;
    CHECK(gunzip(body, 1024, out) == decode_result::invalid);                              // not gzip
    CHECK(gunzip(coded.substr(0, coded.size() - 4), 1024, out) == decode_result::invalid); // no length
    CHECK(gunzip(coded.substr(0, 10), 1024, out) == decode_result::invalid);               // header only
    CHECK(gunzip(coded + "x", 1024, out) == decode_result::invalid);                       // bytes after it
    auto bad_crc = coded;
    bad_crc[bad_crc.size() - 8] ^= 0x01;
    CHECK(gunzip(bad_crc, 1024, out) == decode_result::invalid);
    CHECK(gunzip("", 1024, out) == decode_result::invalid);
}
