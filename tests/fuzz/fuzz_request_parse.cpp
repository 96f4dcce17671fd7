// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a client's bytes through Beast's request parser the way the gateway reads
// them (header first with limits.max_header_bytes / max_request_body, framing checks, then the
// body, trailers refused), then the rules the gateway applies to a parsed request: key and
// tenant lookup, fingerprint, record exclusion and the hop-by-hop strip before forwarding.
//
// The input is one client connection (keep-alive, pipelined requests), parsed three times: in
// one piece and in small pieces with the default limits (the outcome must not depend on how TCP
// cut the bytes), and once with tiny limits so the limit paths run too; and the head scan must
// find the head's end and folds where their definitions put them. The head is also read as an
// upstream's answer and as a request: what the plain readers take, Beast's parsers must read the
// same way (plain_head.hpp). Every invariant failure aborts with a message, so libFuzzer keeps
// the input.
#include <algorithm>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/fingerprint.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/plain_head.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <idemgate/gateway/span_parser.hpp>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using namespace idemgate::gateway;

void require(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_request_parse: invariant broken: %s\n", what);
        std::abort();
    }
}

// The bytes as a stream delivers them: all at once, or in pieces of 1..16 bytes whose sizes
// follow the input's own bytes (so mutations also move the cuts).
class byte_source {
public:
    byte_source(std::string_view bytes, bool pieces) : all_(bytes), rest_(bytes), pieces_(pieces) {}

    // Appends the next piece to `buffer`; 0 at end of stream.
    std::size_t read_into(beast::flat_buffer& buffer)
    {
        std::size_t n = rest_.size();
        if (n == 0)
            return 0;
        if (pieces_)
            n = std::min<std::size_t>(n, 1 + static_cast<unsigned char>(all_[cut_++ % all_.size()]) % 16);
        auto space = buffer.prepare(n);
        std::memcpy(space.data(), rest_.data(), n);
        buffer.commit(n);
        rest_.remove_prefix(n);
        return n;
    }

private:
    std::string_view all_;
    std::string_view rest_;
    bool pieces_;
    std::size_t cut_ = 0;
};

using request_parser = http::request_parser<http::string_body>;

// What http::read_header (header_only) or http::read do with a parser over a stream: put what
// is buffered, read more on need_more, put_eof at end of stream.
beast::error_code read(request_parser& parser, beast::flat_buffer& buffer, byte_source& source,
                       bool header_only)
{
    parser.eager(!header_only);
    auto finished = [&] { return header_only ? parser.is_header_done() : parser.is_done(); };
    while (!finished()) {
        if (buffer.size() > 0) {
            beast::error_code ec;
            auto used = parser.put(buffer.data(), ec);
            buffer.consume(used);
            if (ec && ec != http::error::need_more)
                return ec;
            if (!ec && used > 0)
                continue;
        }
        if (source.read_into(buffer) == 0) {
            if (!parser.got_some())
                return http::error::end_of_stream;
            beast::error_code ec;
            parser.put_eof(ec);
            require(ec || parser.is_done(), "put_eof succeeded on an unfinished message");
            return ec;
        }
    }
    return {};
}

bool name_is(std::string_view name, std::string_view expected)
{
    return beast::iequals(name, expected);
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// The header rules, checked against a count of the raw lines made here independently of
// http_rules.cpp (by name string, not by Beast's field enum).
void check_framing(const http::fields& fields, unsigned version, std::string_view target,
                   std::string_view method, framing_violation violation)
{
    int content_length = 0, transfer_encoding = 0, host = 0;
    std::string_view cl_value, te_value;
    for (const auto& f : fields) {
        if (name_is(f.name_string(), "Content-Length")) {
            ++content_length;
            cl_value = f.value();
        } else if (name_is(f.name_string(), "Transfer-Encoding")) {
            ++transfer_encoding;
            te_value = f.value();
        } else if (name_is(f.name_string(), "Host")) {
            ++host;
        }
    }
    if (content_length > 0 && transfer_encoding > 0)
        require(violation == framing_violation::content_length_and_transfer_encoding,
                "a request with Content-Length and Transfer-Encoding was not refused as such");
    if (violation != framing_violation::none) {
        require(!describe(violation).empty(), "a violation has no description");
        return;
    }
    require(content_length <= 1 && cl_value.find(',') == std::string_view::npos,
            "several or a list of Content-Length passed the framing check");
    require(transfer_encoding <= 1, "several Transfer-Encoding lines passed the framing check");
    if (transfer_encoding == 1)
        require(version >= 11 && beast::iequals(trim(te_value), "chunked"),
                "a Transfer-Encoding other than HTTP/1.1 chunked passed the framing check");
    if (version >= 11)
        require(host == 1, "an HTTP/1.1 request without exactly one Host passed the framing check");
    for (char c : target)
        require(static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7f && c != '#',
                "a target with a byte outside visible ASCII or a fragment passed the framing check");
    bool absolute = (target.size() > 7 && beast::iequals(target.substr(0, 7), "http://")) ||
                    (target.size() > 8 && beast::iequals(target.substr(0, 8), "https://"));
    require((!target.empty() && target.front() == '/') || (target == "*" && method == "OPTIONS") || absolute,
            "a target not in origin-form, absolute-form or OPTIONS * passed the framing check");
}

// What is forwarded after to_origin_form: origin-form (or OPTIONS *) and exactly one Host when the
// target had an authority.
void check_origin_form(http::request_header<>& header)
{
    bool absolute = !header.target().empty() && header.target().front() != '/' && header.target() != "*";
    require(to_origin_form(header) == absolute, "to_origin_form did not convert exactly the absolute-form");
    auto target = header.target();
    require((!target.empty() && target.front() == '/') || target == "*",
            "a target not in origin-form is forwarded");
    if (absolute)
        require(header.count(http::field::host) == 1,
                "an absolute-form request is forwarded without one Host");
}

void check_find_header(const http::fields& fields, std::string_view name)
{
    header_lookup expected;
    for (const auto& f : fields)
        if (name_is(f.name_string(), name) && expected.count++ == 0)
            expected.value = f.value();
    auto found = find_header(fields, name);
    require(found.count == expected.count, "find_header miscounted");
    require(found.value == expected.value, "find_header returned another value than the first line");
}

bool fixed_hop_by_hop(std::string_view name)
{
    for (std::string_view h : {"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "TE",
                               "Trailer", "Transfer-Encoding", "Upgrade"})
        if (name_is(name, h))
            return true;
    return false;
}

// strip_hop_by_hop keeps exactly the end-to-end fields, in order.
void check_strip(const http::fields& original, bool also_expect)
{
    std::vector<std::string_view> named;
    for (const auto& f : original) {
        if (!name_is(f.name_string(), "Connection"))
            continue;
        std::string_view list = f.value();
        for (;;) {
            auto comma = list.find(',');
            auto token = trim(list.substr(0, comma));
            if (!token.empty())
                named.push_back(token);
            if (comma == std::string_view::npos)
                break;
            list.remove_prefix(comma + 1);
        }
    }
    auto is_named = [&](std::string_view name) {
        for (auto n : named)
            if (name_is(name, n))
                return true;
        return false;
    };
    std::vector<std::pair<std::string_view, std::string_view>> kept;
    for (const auto& f : original) {
        auto name = f.name_string();
        if (fixed_hop_by_hop(name) || is_named(name) || (also_expect && name_is(name, "Expect")))
            continue;
        kept.emplace_back(name, f.value());
    }

    http::fields stripped = original;
    strip_hop_by_hop(stripped, also_expect);
    std::size_t i = 0;
    for (const auto& f : stripped) {
        require(!name_is(f.name_string(), "Connection") && !name_is(f.name_string(), "Transfer-Encoding"),
                "Connection or Transfer-Encoding survived strip_hop_by_hop");
        require(!fixed_hop_by_hop(f.name_string()), "a hop-by-hop field survived strip_hop_by_hop");
        require(!is_named(f.name_string()), "a field named in Connection survived strip_hop_by_hop");
        require(i < kept.size() && kept[i].first == f.name_string() && kept[i].second == f.value(),
                "strip_hop_by_hop dropped or reordered an end-to-end field");
        ++i;
    }
    require(i == kept.size(), "strip_hop_by_hop dropped an end-to-end field");
}

void check_fingerprint_form(std::string_view fp)
{
    require(fp.size() == 64, "a fingerprint is not 64 characters");
    for (char c : fp)
        require((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'), "a fingerprint is not lower-case hex");
}

// A route's fingerprint options (routes[].idempotency.fingerprint) and the JSON canonicalisation
// they can ask for, which parses whatever body the client sent.
void check_fingerprint_options(const http::request<http::string_body>& req, std::string_view plain)
{
    namespace config = idemgate::config;
    // Default options give exactly the plain fingerprint: records made before options existed match.
    require(fingerprint({req.method_string(), req.target(), req.body()}, config::fingerprint_config{}, req) ==
                plain,
            "default fingerprint options change the fingerprint");

    config::fingerprint_config options;
    options.query = false;
    options.headers = {"Idempotency-Key", "X-Tenant-ID"};
    options.json = config::json_mode::canonical;
    options.ignore_json_fields = {"/id", "/items/0/ts", "/a~1b", "/0", "/"};
    check_fingerprint_form(fingerprint({req.method_string(), req.target(), req.body()}, options, req));

    // Pointers to object members only: removing them again finds nothing, so canonical JSON must
    // be a fixpoint (an array index would remove the next element on a second pass).
    static const std::vector<std::string> member_pointers{"/id", "/meta/ts", "/a~1b", "/~0x"};
    if (auto canonical = canonical_json(req.body(), member_pointers)) {
        auto again = canonical_json(*canonical, member_pointers);
        require(again.has_value(), "canonical JSON does not parse as JSON");
        // Numbers keep their source text, so no number is rounded on the way back in.
        require(*again == *canonical, "canonical JSON is not a fixpoint");
    }
}

void check_request(const http::request<http::string_body>& req)
{
    for (std::string_view name : {"Idempotency-Key", "X-Tenant-ID", "Host", "Expect", "X-Forwarded-For"})
        check_find_header(req, name);

    auto fp = fingerprint(req.method_string(), req.target(), req.body());
    check_fingerprint_form(fp);
    check_fingerprint_options(req, fp);

    for (const auto& f : req) {
        auto name = f.name_string();
        if (fixed_hop_by_hop(name) || name_is(name, "Content-Length") || name_is(name, "Set-Cookie"))
            require(excluded_from_record(name),
                    "a framing, hop-by-hop or Set-Cookie field would be recorded");
    }

    check_strip(req, true);
    check_strip(req, false);
}

// How one request on the connection ended, for comparing a whole-buffer parse with a piecewise one.
struct outcome {
    beast::error_code header_ec;
    framing_violation violation = framing_violation::none;
    beast::error_code body_ec;
    bool trailer_fields = false;
    std::optional<http::request<http::string_body>> request; // set: forwarded upstream
};

// The gateway's read path (http_connection) for one request; `buffer` keeps what follows it.
outcome read_request(beast::flat_buffer& buffer, byte_source& source, std::size_t max_header_bytes,
                     std::size_t max_body)
{
    outcome out;
    request_parser parser; // a new parser per message, limits set before the header is read
    parser.header_limit(static_cast<std::uint32_t>(max_header_bytes));
    parser.body_limit(max_body);

    out.header_ec = read(parser, buffer, source, true);
    if (out.header_ec)
        return out;
    auto& header = parser.get();
    out.violation = check_request_framing(header, header.version(), header.target(), header.method_string());
    check_framing(header, header.version(), header.target(), header.method_string(), out.violation);
    if (out.violation != framing_violation::none)
        return out;
    check_origin_form(header);

    auto fields_before_body = std::distance(header.begin(), header.end());
    out.body_ec = read(parser, buffer, source, false);
    if (out.body_ec)
        return out;
    // Beast merges chunked trailer fields into the header; the gateway refuses them.
    if (std::distance(parser.get().begin(), parser.get().end()) != fields_before_body) {
        out.trailer_fields = true;
        return out;
    }
    out.request.emplace(parser.release());
    check_request(*out.request);
    return out;
}

// One client connection: requests are read while the previous one was forwarded and kept the
// connection alive, as the gateway does. Where one request ends and the next begins is what
// request smuggling attacks, so the whole sequence is compared, not only the first request.
std::vector<outcome> read_connection(std::string_view bytes, bool pieces, std::size_t max_header_bytes,
                                     std::size_t max_body)
{
    constexpr std::size_t max_requests = 8;
    std::vector<outcome> out;
    byte_source source(bytes, pieces);
    beast::flat_buffer buffer;
    while (out.size() < max_requests) {
        out.push_back(read_request(buffer, source, max_header_bytes, max_body));
        const auto& last = out.back();
        if (!last.request || !last.request->keep_alive())
            break;
    }
    return out;
}

void print(const char* label, const std::vector<outcome>& requests)
{
    for (std::size_t i = 0; i < requests.size(); ++i) {
        const auto& o = requests[i];
        std::fprintf(stderr,
                     "%s #%zu: header: %s, framing: %d, body: %s, trailer fields: %d, forwarded: %d\n", label,
                     i, o.header_ec.message().c_str(), static_cast<int>(o.violation),
                     o.body_ec.message().c_str(), o.trailer_fields, o.request.has_value());
        if (o.request)
            std::fprintf(stderr, "    %.*s %.*s, %zu body bytes\n",
                         static_cast<int>(o.request->method_string().size()),
                         o.request->method_string().data(), static_cast<int>(o.request->target().size()),
                         o.request->target().data(), o.request->body().size());
    }
}

// Whether a request is refused must not depend on how TCP cut the bytes, nor what is forwarded.
// Which error refuses it may: Beast reports a malformed start line at once when the line arrives
// whole, but waits for the end of the header (and gets end of stream) when it arrives in pieces.
void check_same(const std::vector<outcome>& whole, const std::vector<outcome>& pieces)
{
    auto same = [&](bool ok, const char* what) {
        if (!ok) {
            print("in one piece", whole);
            print("in pieces   ", pieces);
        }
        require(ok, what);
    };
    for (std::size_t n = 0; n < whole.size() && n < pieces.size(); ++n) {
        const auto& w = whole[n];
        const auto& p = pieces[n];
        // Beast 1.81 applies header_limit per put() call, so the limit depends on segmentation
        // (enforced by the gateway itself): no comparison once either side hit it.
        if (w.header_ec == http::error::header_limit || p.header_ec == http::error::header_limit)
            return;
        same(!w.header_ec == !p.header_ec, "the header parse depends on segmentation");
        if (w.header_ec)
            break;
        same(w.violation == p.violation, "the framing verdict depends on segmentation");
        same(!w.body_ec == !p.body_ec, "the body parse depends on segmentation");
        same(w.trailer_fields == p.trailer_fields, "trailer detection depends on segmentation");
        same(w.request.has_value() == p.request.has_value(), "forwarding depends on segmentation");
        if (!w.request)
            break;
        const auto& a = *w.request;
        const auto& b = *p.request;
        same(a.method_string() == b.method_string() && a.target() == b.target() && a.version() == b.version(),
             "the request line depends on segmentation");
        same(a.body() == b.body(), "the body depends on segmentation");
        same(std::distance(a.begin(), a.end()) == std::distance(b.begin(), b.end()),
             "the field count depends on segmentation");
        for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
            same(i->name_string() == j->name_string() && i->value() == j->value(),
                 "a field depends on segmentation");
    }
    same(whole.size() == pieces.size(), "the number of requests read depends on segmentation");
}

// The plain reader's fields are Beast's: the same lines in order, names as sent.
template<class A, class B>
void require_same_fields(const A& plain, const B& beast)
{
    auto a = plain.begin();
    auto b = beast.begin();
    for (; a != plain.end() && b != beast.end(); ++a, ++b)
        require(a->name() == b->name() && a->name_string() == b->name_string() && a->value() == b->value(),
                "the plain reader's fields differ from Beast's");
    require(a == plain.end() && b == beast.end(), "the plain reader's field count differs from Beast's");
}

// The same bytes as an upstream's answer head: what the plain reader takes, Beast's response
// parser reads the same way (status, version, reason, fields in order, length, keep-alive).
void check_plain_answer(std::string_view head)
{
    constexpr std::size_t header_limit = 64 * 1024;
    http::response<http::string_body, span_fields> plain;
    plain_answer info;
    if (!read_plain_answer(head, {header_limit, ~std::uint64_t{0}}, plain.base(), info)) {
        require(plain.begin() == plain.end() && plain.result_int() == 200 && plain.version() == 11,
                "a head left to Beast was read in part");
        return;
    }
    http::response_parser<http::string_body> beast;
    beast.header_limit(header_limit);
    beast.body_limit(boost::none);
    boost::system::error_code ec;
    const auto used = beast.put(boost::asio::buffer(head.data(), head.size()), ec);
    require(!ec && beast.is_header_done() && used == head.size(),
            "Beast refuses a head the plain reader took");
    const auto& m = beast.get();
    require(plain.result_int() == m.result_int() && plain.version() == m.version() &&
                plain.reason() == m.reason(),
            "the plain reader's status line differs from Beast's");
    require(beast.content_length() && *beast.content_length() == info.content_length && !beast.chunked(),
            "the plain reader's length differs from Beast's");
    require(beast.keep_alive() == info.keep_alive, "the plain reader's keep-alive differs from Beast's");
    require_same_fields(plain, m);
}

// The same for a request head, with the gateway's default limits.
void check_plain_request(std::string_view head, const idemgate::config::limits_config& limits)
{
    http::request<http::string_body, span_fields> plain;
    plain_request info;
    if (!read_plain_request(head, {limits.max_header_bytes, limits.max_request_body}, plain.base(), info)) {
        require(plain.begin() == plain.end() && plain.target().empty(),
                "a request head left to Beast was read in part");
        return;
    }
    http::request_parser<http::string_body> beast;
    beast.header_limit(static_cast<std::uint32_t>(limits.max_header_bytes));
    beast.body_limit(limits.max_request_body);
    boost::system::error_code ec;
    const auto used = beast.put(boost::asio::buffer(head.data(), head.size()), ec);
    require(!ec && beast.is_header_done() && used == head.size(),
            "Beast refuses a request head the plain reader took");
    const auto& m = beast.get();
    require(plain.method() == m.method() && plain.method_string() == m.method_string() &&
                plain.target() == m.target() && plain.version() == m.version(),
            "the plain reader's request line differs from Beast's");
    require(beast.content_length().has_value() == info.content_length.has_value() &&
                beast.content_length().value_or(0) == info.content_length.value_or(0) && !beast.chunked(),
            "the plain reader's request length differs from Beast's");
    require(beast.keep_alive() == info.keep_alive,
            "the plain reader's request keep-alive differs from Beast's");
    require_same_fields(plain, m);
}

// The same head through Beast's parser into http::fields and into span_fields (the gateway's
// parser, span_parser.hpp): the same verdict, the same lines in order, the same framing read back
// through the fields, and a copy and a move of the span_fields that read the same.
template<bool isRequest>
void check_span_parser(std::string_view head, std::size_t header_limit)
{
    http::parser<isRequest, http::string_body> beast;
    span_parser<isRequest, http::string_body> spans;
    beast.header_limit(static_cast<std::uint32_t>(header_limit));
    spans.header_limit(static_cast<std::uint32_t>(header_limit));
    beast.eager(false);
    spans.eager(false);
    boost::system::error_code beast_ec, spans_ec;
    const auto beast_used = beast.put(boost::asio::buffer(head.data(), head.size()), beast_ec);
    const auto spans_used = spans.put(boost::asio::buffer(head.data(), head.size()), spans_ec);
    require(beast_ec == spans_ec && beast_used == spans_used &&
                beast.is_header_done() == spans.is_header_done(),
            "Beast's parser reads a head differently into span_fields");
    if (!beast.is_header_done())
        return;
    const auto& m = beast.get();
    const auto& s = spans.get();
    require(m.version() == s.version() && m.chunked() == s.chunked() && m.keep_alive() == s.keep_alive() &&
                m.has_content_length() == s.has_content_length(),
            "span_fields read the framing differently");
    if constexpr (isRequest)
        require(m.method() == s.method() && m.method_string() == s.method_string() &&
                    m.target() == s.target(),
                "span_fields hold another request line");
    else
        require(m.result_int() == s.result_int() && m.reason() == s.reason(),
                "span_fields hold another status line");
    require_same_fields(s, m);
    for (const auto& f : m)
        require(s.count(f.name_string()) == m.count(f.name_string()) &&
                    s[f.name_string()] == m[f.name_string()],
                "span_fields find a name differently");
    span_fields copy = s.base();
    require_same_fields(copy, m);
    span_fields moved = std::move(copy);
    require_same_fields(moved, m);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const idemgate::config::limits_config defaults;
    auto whole = read_connection(bytes, false, defaults.max_header_bytes, defaults.max_request_body);
    auto pieces = read_connection(bytes, true, defaults.max_header_bytes, defaults.max_request_body);
    check_same(whole, pieces);
    read_connection(bytes, true, 64, 32);
    // The head scan says what the definitions say: the first "\r\n\r\n", a fold before it.
    const auto scan = idemgate::gateway::scan_head(bytes);
    const auto end = bytes.find("\r\n\r\n");
    require(scan.end == (end == std::string_view::npos ? 0 : end + 4), "the head scan's end is wrong");
    bool folded = false;
    for (std::size_t q = 0; q + 1 < bytes.size() && (end == std::string_view::npos || q <= end); ++q)
        folded = folded || (bytes[q] == '\n' && (bytes[q + 1] == ' ' || bytes[q + 1] == '\t'));
    require(scan.folded == folded, "the head scan's fold is wrong");
    if (scan.end > 0) {
        check_plain_answer(bytes.substr(0, scan.end));
        check_plain_request(bytes.substr(0, scan.end), defaults);
        check_span_parser<true>(bytes.substr(0, scan.end), defaults.max_header_bytes);
        check_span_parser<false>(bytes.substr(0, scan.end), defaults.max_header_bytes);
    }
    return 0;
}
