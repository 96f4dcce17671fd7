// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <cstring>
#include <idemgate/gateway/plain_head.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <optional>
#include <type_traits>

namespace idemgate::gateway {

namespace {

// RFC 9110 5.6.2 tchar: the bytes of a field name (the same set as Beast's parser).
constexpr std::array<bool, 256> token_table = [] {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (int c = 'A'; c <= 'Z'; ++c)
        t[static_cast<std::size_t>(c)] = true;
    for (char c : std::string_view("!#$%&'*+-.^_`|~"))
        t[static_cast<unsigned char>(c)] = true;
    return t;
}();

// A byte Beast's parser takes in a reason phrase or a field value: HT, SP, VCHAR and obs-text.
constexpr bool text_byte(unsigned char c) noexcept
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

// Whether [p, end) holds only text bytes: eight at a time, a byte at a time around a control
// byte or DEL (then only HT passes).
bool all_text(const char* p, const char* end) noexcept
{
    constexpr std::uint64_t ones = 0x0101010101010101ULL;
    constexpr std::uint64_t highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        std::uint64_t w;
        std::memcpy(&w, p, 8);
        const std::uint64_t below_space = (w - ones * 0x20) & ~w & highs; // some byte < 0x20
        const std::uint64_t x = w ^ (ones * 0x7f);
        const std::uint64_t del = (x - ones) & ~x & highs; // some byte == 0x7f
        if ((below_space | del) != 0)
            for (int i = 0; i < 8; ++i)
                if (!text_byte(static_cast<unsigned char>(p[i])))
                    return false;
        p += 8;
    }
    for (; p != end; ++p)
        if (!text_byte(static_cast<unsigned char>(*p)))
            return false;
    return true;
}

bool digit(char c) noexcept
{
    return c >= '0' && c <= '9';
}

// `name` (of `lower`'s length) OR-ed with 0x20 byte by byte equals `lower`, a name of lower-case
// letters and '-': a case-insensitive match, since only a letter's two cases fold onto a letter
// and only '-' and CR onto '-' (a name holds no CR).
template<std::size_t N>
bool folded_equals(std::string_view name, const char (&lower)[N]) noexcept
{
    constexpr std::size_t n = N - 1;
    static_assert(n >= 4);
    if constexpr (n >= 8) {
        constexpr std::uint64_t fold = 0x2020202020202020ULL;
        auto word = [](const char* p) {
            std::uint64_t w;
            std::memcpy(&w, p, 8);
            return w;
        };
        for (std::size_t i = 0; i + 8 <= n; i += 8)
            if ((word(name.data() + i) | fold) != word(lower + i))
                return false;
        return n % 8 == 0 || (word(name.data() + n - 8) | fold) == word(lower + n - 8);
    } else {
        constexpr std::uint32_t fold = 0x20202020u;
        auto word = [](const char* p) {
            std::uint32_t w;
            std::memcpy(&w, p, 4);
            return w;
        };
        return (word(name.data()) | fold) == word(lower) &&
               (word(name.data() + n - 4) | fold) == word(lower + n - 4);
    }
}

} // namespace

http::field field_of_name(std::string_view name) noexcept
{
    using f = http::field;
    switch (name.size()) {
    case 4:
        if (folded_equals(name, "host"))
            return f::host;
        if (folded_equals(name, "date"))
            return f::date;
        if (folded_equals(name, "etag"))
            return f::etag;
        if (folded_equals(name, "vary"))
            return f::vary;
        break;
    case 6:
        if (folded_equals(name, "server"))
            return f::server;
        if (folded_equals(name, "accept"))
            return f::accept;
        break;
    case 8:
        if (folded_equals(name, "location"))
            return f::location;
        break;
    case 10:
        if (folded_equals(name, "connection"))
            return f::connection;
        if (folded_equals(name, "user-agent"))
            return f::user_agent;
        break;
    case 12:
        if (folded_equals(name, "content-type"))
            return f::content_type;
        break;
    case 13:
        if (folded_equals(name, "cache-control"))
            return f::cache_control;
        if (folded_equals(name, "authorization"))
            return f::authorization;
        break;
    case 14:
        if (folded_equals(name, "content-length"))
            return f::content_length;
        break;
    case 15:
        if (folded_equals(name, "accept-encoding"))
            return f::accept_encoding;
        break;
    default: break;
    }
    return http::string_to_field(name);
}

namespace {

// Trivial, so the array of them is not initialised on every call.
struct field_span {
    http::field name;
    const char* name_data;
    std::size_t name_size;
    const char* value_data;
    std::size_t value_size;
};

constexpr std::size_t max_fields = 64;

// The field lines of a head, from `p` (the line after the start line) to the empty line that
// ends `last`, and what Beast's parser reads from them for the framing.
struct field_lines {
    std::array<field_span, max_fields> fields; // NOLINT: filled before it is read
    std::size_t count = 0;
    bool has_length = false;
    std::uint64_t length = 0;
    bool close = false;
    bool keep = false;
};

// False when a line is not of the common shape (see plain_head.hpp).
bool read_field_lines(const char* p, const char* last, field_lines& out)
{
    namespace beast = boost::beast;
    while (!(p[0] == '\r' && p[1] == '\n')) {
        if (out.count == max_fields)
            return false;
        const char* name_first = p;
        while (token_table[static_cast<unsigned char>(*p)])
            ++p;
        if (*p != ':' || p == name_first)
            return false;
        const std::string_view name(name_first, static_cast<std::size_t>(p - name_first));
        ++p;
        while (*p == ' ' || *p == '\t')
            ++p;
        const char* eol = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(last - p)));
        // A folded next line (obs-fold) is Beast's to read: it joins the lines.
        if (eol == nullptr || eol[1] != '\n' || eol[2] == ' ' || eol[2] == '\t' || !all_text(p, eol))
            return false;
        const char* value_last = eol;
        while (value_last != p && (value_last[-1] == ' ' || value_last[-1] == '\t'))
            --value_last;
        const std::string_view value(p, static_cast<std::size_t>(value_last - p));
        // The fields hold a name or value of at most 65533 bytes (as basic_fields does): a longer
        // one is left to Beast's parser, whose fields refuse it.
        if (name.size() > 65533 || value.size() > 65533)
            return false;
        p = eol + 2;

        const auto f = field_of_name(name);
        switch (f) {
        case http::field::content_length:
            if (out.has_length || value.empty() || value.size() > 18)
                return false;
            for (char c : value) {
                if (!digit(c))
                    return false;
                out.length = out.length * 10 + static_cast<std::uint64_t>(c - '0');
            }
            out.has_length = true;
            break;
        case http::field::connection:
        case http::field::proxy_connection:
            if (beast::iequals(value, "close"))
                out.close = true;
            else if (beast::iequals(value, "keep-alive"))
                out.keep = true;
            else
                return false;
            break;
        case http::field::transfer_encoding:
        case http::field::upgrade: return false;
        default: break;
        }
        out.fields[out.count++] = {f, name.data(), name.size(), value.data(), value.size()};
    }
    return p + 2 == last;
}

// Views into `head` as views into `copy`, a copy of it.
struct rebase_into {
    std::string_view head;
    std::string_view copy;
    std::string_view operator()(std::string_view s) const noexcept
    {
        return {copy.data() + (s.data() - head.data()), s.size()};
    }
    std::string_view operator()(const char* p, std::size_t n) const noexcept { return (*this)({p, n}); }
};

struct no_rebase {
    std::string_view operator()(std::string_view s) const noexcept { return s; }
};

// Fills `h` from the lines: span_fields copy the head once and keep spans into the copy, other
// fields copy each field.
template<class Line, class Header>
void fill(std::string_view head, const Line& line, const field_lines& lines, Header& h)
{
    if constexpr (std::is_base_of_v<span_fields, Header>) {
        span_fields& fields = h;
        const rebase_into rebase{head, fields.adopt(head, lines.count)};
        line.set(h, rebase);
        for (std::size_t i = 0; i < lines.count; ++i) {
            const auto& f = lines.fields[i];
            fields.append_adopted(f.name, rebase(f.name_data, f.name_size),
                                  rebase(f.value_data, f.value_size));
        }
    } else {
        line.set(h, no_rebase{});
        for (std::size_t i = 0; i < lines.count; ++i) {
            const auto& f = lines.fields[i];
            h.insert(f.name, {f.name_data, f.name_size}, {f.value_data, f.value_size});
        }
    }
}

bool ends_head(std::string_view head)
{
    return head.size() >= 4 && head.substr(head.size() - 4) == "\r\n\r\n";
}

// An answer's status line: "HTTP/1.x 200 reason\r\n".
struct status_line {
    static constexpr std::size_t min_size = 17; // "HTTP/1.x 200 " and the head's empty line
    static constexpr bool length_required = true;
    unsigned version = 0;
    unsigned status = 0;
    std::string_view reason;

    // Where the field lines begin, or nullptr when the line is not of the common shape.
    const char* read(const char* p, const char* last) noexcept
    {
        if (std::memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
            !digit(p[9]) || !digit(p[10]) || !digit(p[11]) || p[12] != ' ')
            return nullptr;
        version = p[7] == '1' ? 11 : 10;
        status = static_cast<unsigned>((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
        if (status < 200 || status > 599 || status == 204 || status == 304)
            return nullptr;
        p += 13;
        const char* eol = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(last - p)));
        if (eol == nullptr || eol[1] != '\n' || !all_text(p, eol))
            return nullptr;
        reason = std::string_view(p, static_cast<std::size_t>(eol - p));
        return eol + 2;
    }
    template<class Fields, class Rebase>
    void set(http::response_header<Fields>& res, Rebase rebase) const
    {
        res.result(status);
        res.version(version);
        res.reason(rebase(reason));
    }
};

// A request line: "METHOD /origin-form HTTP/1.x\r\n".
struct request_line {
    static constexpr std::size_t min_size = 18; // "GET / HTTP/1.1" and the head's empty line
    static constexpr bool length_required = false;
    unsigned version = 0;
    http::verb verb = http::verb::unknown;
    std::string_view target;

    const char* read(const char* p, const char* last) noexcept
    {
        const char* method_first = p;
        while (token_table[static_cast<unsigned char>(*p)])
            ++p;
        verb =
            http::string_to_verb(std::string_view(method_first, static_cast<std::size_t>(p - method_first)));
        if (*p != ' ' || verb == http::verb::unknown)
            return nullptr;
        ++p;
        // An origin-form target of visible ASCII; other forms and bytes are Beast's to read.
        const char* target_first = p;
        if (*p != '/')
            return nullptr;
        while (*p > ' ' && *p < 0x7f)
            ++p;
        target = std::string_view(target_first, static_cast<std::size_t>(p - target_first));
        if (last - p < 11 || std::memcmp(p, " HTTP/1.", 8) != 0 || (p[8] != '0' && p[8] != '1') ||
            p[9] != '\r' || p[10] != '\n')
            return nullptr;
        version = p[8] == '1' ? 11 : 10;
        return p + 11;
    }
    template<class Fields, class Rebase>
    void set(http::request_header<Fields>& req, Rebase rebase) const
    {
        req.target(rebase(target));
        req.method(verb);
        req.version(version);
    }
};

// The one reader of both kinds of head: the start line (`Line`), then the field lines; `h` and
// `out` are written only when the whole head is of the common shape.
template<class Line, class Header>
bool read_plain_head(std::string_view head, head_limits limits, Header& h, head_facts& out)
{
    if (head.size() >= limits.header_bytes || head.size() < Line::min_size || !ends_head(head))
        return false;
    const char* const last = head.data() + head.size();
    Line line;
    const char* fields = line.read(head.data(), last);
    if (fields == nullptr)
        return false;
    field_lines lines;
    if (!read_field_lines(fields, last, lines) || (Line::length_required && !lines.has_length) ||
        (lines.has_length && lines.length > limits.body))
        return false;
    fill(head, line, lines, h);
    out = {};
    if (lines.has_length)
        out.content_length = lines.length;
    // Beast's parser.keep_alive(): HTTP/1.1 unless "close", HTTP/1.0 only with "keep-alive" (a
    // body of known length, or none, never ends with the connection).
    out.keep_alive = line.version == 11 ? !lines.close : lines.keep;
    out.body_pending = lines.length > 0;
    out.header_fields = lines.count;
    return true;
}

} // namespace

template<class Fields>
bool read_plain_answer(std::string_view head, head_limits limits, http::response_header<Fields>& res,
                       plain_answer& out)
{
    return read_plain_head<status_line>(head, limits, res, out);
}

template<class Fields>
bool read_plain_request(std::string_view head, head_limits limits, http::request_header<Fields>& req,
                        plain_request& out)
{
    return read_plain_head<request_line>(head, limits, req, out);
}

template bool read_plain_answer(std::string_view, head_limits, http::response_header<http::fields>&,
                                plain_answer&);
template bool read_plain_answer(std::string_view, head_limits, http::response_header<span_fields>&,
                                plain_answer&);
template bool read_plain_request(std::string_view, head_limits, http::request_header<http::fields>&,
                                 plain_request&);
template bool read_plain_request(std::string_view, head_limits, http::request_header<span_fields>&,
                                 plain_request&);

} // namespace idemgate::gateway
