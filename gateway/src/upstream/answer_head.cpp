// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <cstring>
#include <idemgate/gateway/answer_head.hpp>
#include <idemgate/gateway/field_allocator.hpp>

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

// Trivial, so the array of them is not initialised on every call.
struct field_span {
    http::field name;
    const char* name_data;
    std::size_t name_size;
    const char* value_data;
    std::size_t value_size;
};

constexpr std::size_t max_fields = 64;

} // namespace

template<class Fields>
bool read_plain_answer(std::string_view head, std::size_t header_limit, std::uint64_t max_body,
                       http::response_header<Fields>& res, plain_answer& out)
{
    namespace beast = boost::beast;
    // "HTTP/1.x 200 " at least, and the head's empty line.
    if (head.size() >= header_limit || head.size() < 17 || head.substr(head.size() - 4) != "\r\n\r\n")
        return false;
    const char* p = head.data();
    const char* const last = p + head.size();
    if (std::memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' || !digit(p[9]) ||
        !digit(p[10]) || !digit(p[11]) || p[12] != ' ')
        return false;
    const unsigned version = p[7] == '1' ? 11 : 10;
    const unsigned status = static_cast<unsigned>((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
    if (status < 200 || status > 599 || status == 204 || status == 304)
        return false;
    p += 13;
    const char* eol = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(last - p)));
    if (eol == nullptr || eol[1] != '\n' || !all_text(p, eol))
        return false;
    const std::string_view reason(p, static_cast<std::size_t>(eol - p));
    p = eol + 2;

    std::array<field_span, max_fields> fields; // NOLINT: filled before it is read
    std::size_t count = 0;
    bool has_length = false;
    std::uint64_t length = 0;
    bool close = false;
    bool keep = false;
    while (!(p[0] == '\r' && p[1] == '\n')) {
        if (count == max_fields)
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
        eol = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(last - p)));
        // A folded next line (obs-fold) is Beast's to read: it joins the lines.
        if (eol == nullptr || eol[1] != '\n' || eol[2] == ' ' || eol[2] == '\t' || !all_text(p, eol))
            return false;
        const char* value_last = eol;
        while (value_last != p && (value_last[-1] == ' ' || value_last[-1] == '\t'))
            --value_last;
        const std::string_view value(p, static_cast<std::size_t>(value_last - p));
        p = eol + 2;

        const auto f = http::string_to_field(name);
        switch (f) {
        case http::field::content_length:
            if (has_length || value.empty() || value.size() > 18)
                return false;
            for (char c : value) {
                if (!digit(c))
                    return false;
                length = length * 10 + static_cast<std::uint64_t>(c - '0');
            }
            has_length = true;
            break;
        case http::field::connection:
        case http::field::proxy_connection:
            if (beast::iequals(value, "close"))
                close = true;
            else if (beast::iequals(value, "keep-alive"))
                keep = true;
            else
                return false;
            break;
        case http::field::transfer_encoding:
        case http::field::upgrade: return false;
        default: break;
        }
        fields[count++] = {f, name.data(), name.size(), value.data(), value.size()};
    }
    if (p + 2 != last || !has_length || length > max_body)
        return false;

    res.result(status);
    res.version(version);
    res.reason(reason);
    for (std::size_t i = 0; i < count; ++i)
        res.insert(fields[i].name, {fields[i].name_data, fields[i].name_size},
                   {fields[i].value_data, fields[i].value_size});
    out.content_length = length;
    // Beast's parser.keep_alive(): HTTP/1.1 unless "close", HTTP/1.0 only with "keep-alive"
    // (the body has a length, so it never ends with the connection).
    out.keep_alive = version == 11 ? !close : keep;
    return true;
}

template bool read_plain_answer(std::string_view, std::size_t, std::uint64_t,
                                http::response_header<http::fields>&, plain_answer&);
template bool read_plain_answer(std::string_view, std::size_t, std::uint64_t,
                                http::response_header<pooled_fields>&, plain_answer&);

} // namespace idemgate::gateway
