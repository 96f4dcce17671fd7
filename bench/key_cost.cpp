// SPDX-License-Identifier: Apache-2.0
// bench-key-cost: the key field's parse and format check, N times, for callgrind: the
// instructions of a run with N calls minus those of a run with 0 calls, divided by N, are what
// one request pays for its key (bench/README.md, "The key's parse and format check").
//   bench-key-cost N FORMAT FIELD    FORMAT: default | uuid | an ECMAScript pattern
#include <cstdio>
#include <cstdlib>
#include <idemgate/config/key_pattern.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <string>

int main(int argc, char** argv)
{
    using namespace idemgate;
    if (argc != 4) {
        std::fprintf(stderr, "usage: bench-key-cost N default|uuid|PATTERN FIELD\n");
        return 2;
    }
    long n = std::atol(argv[1]);
    std::string format_name = argv[2];
    std::string field = argv[3];
    config::key_format_config format;
    if (format_name == "uuid") {
        format.uuid = true;
        format.pattern = format_name;
    } else if (format_name != "default") {
        std::string error;
        format.pattern = format_name;
        format.regex = config::key_pattern::compile(format_name, error);
        if (!format.regex) {
            std::fprintf(stderr, "bench-key-cost: %s\n", error.c_str());
            return 2;
        }
    }
    std::string storage;
    long accepted = 0;
    for (long i = 0; i < n; ++i) {
        asm volatile("" : : "r"(field.data()) : "memory"); // a fresh field every time
        auto parsed = gateway::parse_key_field(field, storage);
        accepted += parsed.error == gateway::key_syntax::ok &&
                    gateway::check_key_format(format, parsed.key) == gateway::key_format_check::ok;
    }
    std::printf("%ld of %ld accepted\n", accepted, n);
    return 0;
}
