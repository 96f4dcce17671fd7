// SPDX-License-Identifier: Apache-2.0
// The percent decoders built on Boost.URL against the hand-written ones they replaced
// (percent_reference.hpp, kept verbatim): the same output and the same problem at the same
// position for every request target of the request corpus (tests/corpus) and every token of the
// fuzz corpora (tests/fuzz/corpus), for every two bytes after a '%', truncated escapes, every byte
// value, and every short string over the characters the path normal form reacts to.
#include "percent_reference.hpp"

#include <boost/url/parse.hpp>
#include <cstddef>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <idemgate/common/path_normal_form.hpp>
#include <idemgate/common/percent_coding.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

using namespace idemgate;

namespace {

namespace fs = std::filesystem;

struct comparison {
    std::size_t cases = 0;
    std::vector<std::string> differences; // the first few, printable
};

std::string printable(std::string_view bytes)
{
    std::string out;
    for (unsigned char c : bytes.substr(0, 200)) {
        if (c < 0x20 || c >= 0x7f || c == '\\') {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

template<class Result>
bool same_outcome(const Result& a, const Result& b)
{
    if (a.problem != b.problem || a.offset != b.offset)
        return false;
    return a.problem != path_problem::none || a.path == b.path;
}

// One input through every old and new decoder.
void compare(std::string_view input, comparison& c)
{
    ++c.cases;
    auto differs = [&](const char* what) {
        if (c.differences.size() < 20)
            c.differences.push_back(std::string(what) + ": \"" + printable(input) + "\"");
    };
    std::string old_storage, new_storage;
    auto old_target = reference::normalize_target(input, old_storage);
    auto new_target = normalize_target(input, new_storage);
    if (!same_outcome(old_target, new_target) ||
        (old_target.problem == path_problem::none && old_target.target != new_target.target))
        differs("normalize_target");
    if (!same_outcome(reference::normalize_path(input, old_storage), normalize_path(input, new_storage)))
        differs("normalize_path");
    std::string old_decoded, new_decoded;
    bool old_ok = reference::percent_decode(input, old_decoded);
    if (old_ok != percent_decode(input, new_decoded) || (old_ok && old_decoded != new_decoded))
        differs("percent_decode");
    old_ok = reference::form_decode(input, old_decoded);
    if (old_ok != form_decode(input, new_decoded) || (old_ok && old_decoded != new_decoded))
        differs("form_decode");
}

void report(const comparison& c, std::string_view source)
{
    MESSAGE(source << ": " << c.cases << " inputs compared");
    for (const auto& d : c.differences)
        FAIL_CHECK(d);
}

std::string read_file(const fs::path& file)
{
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The tokens of some bytes: runs without space or control bytes (bytes above 0x7F stay in).
std::vector<std::string> tokens(std::string_view bytes)
{
    std::vector<std::string> out;
    std::string token;
    for (unsigned char c : bytes) {
        if (c > 0x20 && c != 0x7f) {
            token += static_cast<char>(c);
        } else if (!token.empty()) {
            out.push_back(std::move(token));
            token.clear();
        }
    }
    if (!token.empty())
        out.push_back(std::move(token));
    return out;
}

// A corpus case's request bytes with its escapes expanded (tests/corpus/README.md), leniently:
// ${KEY...} is a fixed key, ${repeat:N:TEXT} repeats, ${await-100} and ${pause} are nothing.
std::string expand(std::string_view text)
{
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size()) {
            char e = text[++i];
            if (e == 'r')
                out += '\r';
            else if (e == 'n')
                out += '\n';
            else if (e == 't')
                out += '\t';
            else if (e == '0')
                out += '\0';
            else if (e == 'x' && i + 2 < text.size()) {
                out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
                i += 2;
            } else
                out += e;
        } else if (text.substr(i, 2) == "${") {
            int depth = 1;
            std::size_t end = i + 2;
            for (; end < text.size() && depth > 0; ++end)
                depth += text.substr(end, 2) == "${" ? 1 : text[end] == '}' ? -1 : 0;
            auto inner = text.substr(i + 2, end - 1 - (i + 2));
            if (inner.starts_with("repeat:")) {
                auto rest = inner.substr(7);
                auto colon = rest.find(':');
                auto once = expand(rest.substr(colon + 1));
                for (auto n = std::stoul(std::string(rest.substr(0, colon))); n > 0; --n)
                    out += once;
            } else if (inner.starts_with("KEY")) {
                out += "corpus-key";
            }
            i = end - 1;
        } else {
            out += text[i];
        }
    }
    return out;
}

struct case_inputs {
    std::vector<std::string> targets; // of every request line ("METHOD SP target SP HTTP/...")
    std::vector<std::string> tokens;  // every token of the request bytes and of the header block
};

case_inputs corpus_inputs(const std::string& file_text)
{
    case_inputs out;
    auto dashes = file_text.find("\n--\n");
    REQUIRE(dashes != std::string::npos);
    std::string raw; // the file's lines joined: line breaks in a case file are not request bytes
    std::string_view rest = std::string_view(file_text).substr(dashes + 4);
    for (std::size_t at = 0; at < rest.size();) {
        auto nl = std::min(rest.find('\n', at), rest.size());
        auto line = rest.substr(at, nl - at);
        raw += line.ends_with('\r') ? line.substr(0, line.size() - 1) : line;
        at = nl + 1;
    }
    auto bytes = expand(raw);
    for (std::size_t at = 0; at < bytes.size();) {
        auto nl = std::min(bytes.find('\n', at), bytes.size());
        auto line = std::string_view(bytes).substr(at, nl - at);
        auto sp1 = line.find(' ');
        auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
        if (sp2 != std::string_view::npos && line.substr(sp2 + 1).starts_with("HTTP/"))
            out.targets.emplace_back(line.substr(sp1 + 1, sp2 - sp1 - 1));
        at = nl + 1;
    }
    out.tokens = tokens(bytes);
    for (auto& t : tokens(file_text.substr(0, dashes)))
        out.tokens.push_back(std::move(t));
    return out;
}

const fs::path source_dir = IDEMGATE_SOURCE_DIR;

} // namespace

TEST_CASE("percent decoding by Boost.URL: the request corpus decodes as the hand-written decoders did")
{
    comparison c;
    std::size_t files = 0, targets = 0;
    for (const auto& entry : fs::directory_iterator(source_dir / "tests" / "corpus")) {
        if (entry.path().extension() != ".case")
            continue;
        ++files;
        auto inputs = corpus_inputs(read_file(entry.path()));
        targets += inputs.targets.size();
        for (const auto& input : inputs.targets)
            compare(input, c);
        for (const auto& input : inputs.tokens)
            compare(input, c);
    }
    MESSAGE("request corpus: " << files << " cases, " << targets << " request targets");
    CHECK(files > 150);
    CHECK(targets >= files);
    report(c, "request corpus (targets and tokens)");
}

TEST_CASE("percent decoding by Boost.URL: the fuzz corpora decode as the hand-written decoders did")
{
    comparison c;
    for (const auto& target : fs::directory_iterator(source_dir / "tests" / "fuzz" / "corpus")) {
        for (const auto& entry : fs::directory_iterator(target.path())) {
            auto bytes = read_file(entry.path());
            compare(bytes, c); // a key field's seed is one value
            for (const auto& t : tokens(bytes))
                compare(t, c);
        }
    }
    CHECK(c.cases > 1000);
    report(c, "fuzz corpora");
}

TEST_CASE("percent decoding by Boost.URL: generated escapes, bytes and short paths decode as before")
{
    comparison c;
    // Every two bytes after a '%' (hex digits of either case among them), in a segment, before a
    // query and in a segment that a ".." then removes.
    for (int hi = 0; hi < 256; ++hi) {
        for (int lo = 0; lo < 256; ++lo) {
            const std::string escape{'%', static_cast<char>(hi), static_cast<char>(lo)};
            compare(escape, c);
            compare("/a/" + escape + "b?q=" + escape, c);
            compare("/" + escape + "/../c", c);
        }
    }
    // Truncated and broken escapes where a path, a segment or the target ends.
    for (std::string_view before : {"", "/", "/a", "/a/", "/./", "/../", "//", "/a%41"}) {
        for (std::string_view escape :
             {"%", "%4", "%e", "%E", "%g", "%4g", "%%", "%%41", "%2", "%2F", "%2e"}) {
            for (std::string_view after : {"", "/", "?", "?%", "/..", "/.", "+", "%"}) {
                std::string input(before);
                input += escape;
                input += after;
                compare(input, c);
            }
        }
    }
    // Every byte value, alone, in a segment and after a '%'.
    for (int b = 0; b < 256; ++b) {
        const char byte = static_cast<char>(b);
        compare(std::string(1, byte), c);
        compare(std::string("/a") + byte + "/c", c);
        compare(std::string("%") + byte, c);
    }
    // Every string of up to five characters over those the path normal form reacts to.
    constexpr std::string_view alphabet = "/.%2eEfFa?+";
    std::vector<std::string> level{""};
    for (int length = 0; length <= 5; ++length) {
        std::vector<std::string> next;
        for (const auto& s : level) {
            compare(s, c);
            if (length < 5)
                for (char ch : alphabet)
                    next.push_back(s + ch);
        }
        level = std::move(next);
    }
    CHECK(c.cases > 300000);
    report(c, "generated");
}

TEST_CASE("Boost.URL's RFC 3986 grammar refuses targets the gateway forwards: target parsing stays its own")
{
    using gateway::framing_violation;
    using gateway::parse_request_target;
    // RFC 9112 3.2 lets a target hold any visible ASCII, as nginx forwards it; RFC 3986 does not.
    for (std::string_view target : {"/a|b", "/a{b}", "/a\"b", "/a^b", "/a`b", "/a\\b"}) {
        CAPTURE(target);
        CHECK(parse_request_target(target, "GET").violation == framing_violation::none);
        CHECK(boost::urls::parse_origin_form(target).has_error());
    }
    // A bad escape passes the request line; the path normal form answers it with its own problem.
    CHECK(parse_request_target("/a%zz", "GET").violation == framing_violation::none);
    CHECK(boost::urls::parse_origin_form("/a%zz").has_error());
    // An authority is host[:port] bytes (the Host header's rule), compared with Host, not parsed
    // (Boost.URL 1.81 even reads "http://h:x/a" as host "h", an empty port and the path "x/a").
    for (std::string_view target : {"http://gw.test/a|b", "http://%zz/a", "http://[gw/a"}) {
        CAPTURE(target);
        CHECK(parse_request_target(target, "GET").violation == framing_violation::none);
        CHECK(boost::urls::parse_absolute_uri(target).has_error());
    }
}
