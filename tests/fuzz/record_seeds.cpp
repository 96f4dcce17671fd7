// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of fuzz_record_decode with the real encoder:
//   ninja -C build-fuzz fuzz_record_seeds
//   build-fuzz/bin/fuzz_record_seeds tests/fuzz/corpus/fuzz_record_decode
// One file per shape the gateway stores: in-flight and completed, packed and raw tokens and
// fingerprints, standard and custom reasons, common and unknown header names, empty and binary bodies.
#include <cstdio>
#include <fstream>
#include <idemgate/store/record_codec.hpp>
#include <string>
#include <utility>
#include <vector>

using namespace idemgate::store;

namespace {

const std::string hex_token = "0123456789abcdef0123456789abcdef";
const std::string hex_fingerprint = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

record in_flight(std::string token, std::string fp)
{
    record r;
    r.state = record_state::in_flight;
    r.owner_token = std::move(token);
    r.fingerprint = std::move(fp);
    r.created_unix_ms = 1764400000000;
    return r;
}

record completed(unsigned status, std::string reason, std::vector<header_field> headers, std::string body)
{
    record r = in_flight(hex_token, hex_fingerprint);
    r.state = record_state::completed;
    r.response.status = status;
    r.response.reason = std::move(reason);
    r.response.headers = std::move(headers);
    r.response.body = std::move(body);
    return r;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
        return 2;
    }
    std::vector<std::pair<std::string, record>> seeds = {
        {"in_flight_packed", in_flight(hex_token, hex_fingerprint)},
        {"in_flight_raw", in_flight("Not-Hex token", "not a sha256")},
        {"in_flight_empty", in_flight("", "")},
        {"created_json",
         completed(201, "Created", {{"Content-Type", "application/json"}, {"Location", "/orders/17"}},
                   R"({"id":17,"status":"accepted"})")},
        {"ok_lower_case_names",
         completed(200, "OK",
                   {{"content-type", "text/plain"}, {"etag", "\"abc\""}, {"x-correlation-id", "c-1"}},
                   "done\n")},
        {"custom_reason", completed(200, "Fine Thanks", {{"X-Custom", "1"}}, "")},
        {"unknown_status", completed(599, "", {}, "")},
        {"conflict_problem",
         completed(409, "Conflict", {{"Content-Type", "application/problem+json"}, {"Retry-After", "1"}},
                   R"({"type":"about:blank","title":"Conflict","status":409})")},
        {"binary_body", completed(200, "OK", {{"X-Bin", std::string("\0\r\n\xff", 4)}},
                                  std::string("\0\x01\x02\xfe\xff", 5))},
        {"no_content", completed(204, "No Content", {{"Date", "Sat, 29 Nov 2025 10:00:00 GMT"}}, "")},
    };
    for (const auto& [name, r] : seeds) {
        std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
        out << encode_record(r);
        if (!out) {
            std::fprintf(stderr, "cannot write %s\n", name.c_str());
            return 1;
        }
    }
    return 0;
}
