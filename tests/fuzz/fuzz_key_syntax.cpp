// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes as the value of an idempotency key field. The parser must accept
// exactly what an independent reading of the grammar (a regular expression of RFC 8941's String
// and parameters) accepts; a bare value is the key untouched; a decoded quoted key is non-empty,
// 0x20-0x7E, and its canonical String starts the field; the format checks never fail on it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <idemgate/config/key_pattern.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <regex>
#include <string>
#include <string_view>

namespace {

using namespace idemgate;
using namespace idemgate::gateway;

void require(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_key_syntax: invariant broken: %s\n", what);
        std::abort();
    }
}

// RFC 8941 sf-string, then parameters, then trailing spaces, written from the ABNF.
const std::regex& grammar()
{
    static const std::string chr = R"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\]))";
    static const std::string string = "\"" + chr + "*\"";
    static const std::string bare_item =
        "(?:-?[0-9]{1,15}|-?[0-9]{1,12}\\.[0-9]{1,3}|" + string +
        "|[A-Za-z*][!#$%&'*+\\-.^_`|~0-9A-Za-z:/]*|:[A-Za-z0-9+/=]*:|\\?[01])";
    static const std::string parameters = "(?:; *[a-z*][a-z0-9_\\-.*]*(?:=" + bare_item + ")?)*";
    static const std::regex re(string + parameters + "[ \\t]*",
                               std::regex::ECMAScript | std::regex_constants::__polynomial);
    return re;
}

std::string serialize(std::string_view key)
{
    std::string out = "\"";
    for (char c : key) {
        if (c == '"' || c == '\\')
            out.push_back('\\');
        out.push_back(c);
    }
    out.push_back('"');
    return out;
}

const config::key_format_config& uuid_format()
{
    static const config::key_format_config f = [] {
        config::key_format_config c;
        c.pattern = "uuid";
        c.uuid = true;
        return c;
    }();
    return f;
}

const config::key_format_config& pattern_format()
{
    static const config::key_format_config f = [] {
        config::key_format_config c;
        c.pattern = "[a-z]+( [0-9a-f-]+)*";
        std::string error;
        c.regex = config::key_pattern::compile(c.pattern, error);
        return c;
    }();
    return f;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string_view field(reinterpret_cast<const char*>(data), size);
    std::string storage = "stale";
    auto parsed = parse_key_field(field, storage);

    if (field.empty() || field.front() != '"') {
        require(!parsed.quoted, "a bare value is not quoted");
        require(parsed.error == key_syntax::ok, "a bare value is never a syntax error");
        require(parsed.key.data() == field.data() && parsed.key.size() == field.size(),
                "a bare key is the field");
    } else {
        require(parsed.quoted, "a value starting with '\"' is a String");
        if (size <= 512) {
            bool grammatical = std::regex_match(field.begin(), field.end(), grammar());
            bool empty = size >= 2 && field[1] == '"';
            require((parsed.error == key_syntax::ok) == (grammatical && !empty), "parser and grammar agree");
        }
        if (parsed.error == key_syntax::ok) {
            require(!parsed.key.empty(), "a decoded key is not empty");
            for (char c : parsed.key)
                require(c >= 0x20 && c <= 0x7e, "a decoded key is 0x20-0x7E");
            auto canonical = serialize(parsed.key);
            require(field.substr(0, canonical.size()) == canonical, "the canonical String starts the field");
            std::string again_storage;
            auto again = parse_key_field(canonical, again_storage);
            require(again.error == key_syntax::ok && again.key == parsed.key,
                    "the canonical String round-trips");
        } else {
            require(parsed.offset <= field.size(), "the problem's position is inside the field");
            require(!describe(parsed.error, parsed.offset, "Idempotency-Key").empty(),
                    "a problem is described");
        }
    }

    if (parsed.error == key_syntax::ok) {
        config::key_format_config plain;
        auto verdict = check_key_format(plain, parsed.key);
        require((verdict == key_format_check::ok) ==
                    (!parsed.key.empty() && parsed.key.size() <= 255 &&
                     parsed.key.find_first_of(" \t") == std::string_view::npos &&
                     [&] {
                         for (char c : parsed.key)
                             if (c < 0x21 || c > 0x7e)
                                 return false;
                         return true;
                     }()),
                "the default format is 1 to 255 characters 0x21-0x7E");
        if (check_key_format(uuid_format(), parsed.key) == key_format_check::ok)
            require(parsed.key.size() == 36 && is_uuid(parsed.key), "a UUID has 36 characters");
        (void)check_key_format(pattern_format(), parsed.key);
    }
    return 0;
}
