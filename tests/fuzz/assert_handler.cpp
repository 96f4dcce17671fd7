// SPDX-License-Identifier: Apache-2.0
// BOOST_ASSERT in the fuzz build (BOOST_ENABLE_ASSERT_HANDLER, see CMakeLists.txt): the build
// keeps Boost's and Beast's own assertions on, and a failed one aborts so libFuzzer keeps the
// input, except the assertions listed here, known to be wrong in Boost 1.81 and harmless in the
// release builds the gateway ships (NDEBUG), so that fuzzing can go past them.
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

struct known_false_alarm {
    std::string_view file_suffix;
    std::string_view expression;
};

constexpr known_false_alarm known_false_alarms[] = {
    // basic_parser::parse_chunk_header re-entered for the final chunk with only "0\r\n" plus one
    // byte buffered (the bytes came in two reads). The code after the assertion returns need_more
    // as it should; boostorg/beast#2861 relaxed the assertion (Boost 1.86). Reproducer:
    // tests/fuzz/crashes/fuzz_request_parse-beast-final-chunk-assert.
    {"boost/beast/http/impl/basic_parser.ipp", "n >= 5"},
};

bool is_known_false_alarm(std::string_view expr, std::string_view file)
{
    for (const auto& k : known_false_alarms)
        if (expr == k.expression && file.ends_with(k.file_suffix))
            return true;
    return false;
}

} // namespace

namespace boost {

void assertion_failed_msg(const char* expr, const char* msg, const char* function, const char* file,
                          long line)
{
    if (is_known_false_alarm(expr, file))
        return;
    std::fprintf(stderr, "%s:%ld: %s: Assertion `%s' failed%s%s\n", file, line, function, expr,
                 msg ? ": " : "", msg ? msg : "");
    std::abort();
}

void assertion_failed(const char* expr, const char* function, const char* file, long line)
{
    assertion_failed_msg(expr, nullptr, function, file, line);
}

} // namespace boost
