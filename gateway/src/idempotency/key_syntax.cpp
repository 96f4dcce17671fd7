// SPDX-License-Identifier: Apache-2.0
// The idempotency key field (RFC 8941 String or the legacy bare key) and the route's key format.
#include <idemgate/config/key_pattern.hpp>
#include <idemgate/gateway/key_syntax.hpp>

namespace idemgate::gateway {

namespace {

bool is_digit(char c) noexcept
{
    return c >= '0' && c <= '9';
}

bool is_lcalpha(char c) noexcept
{
    return c >= 'a' && c <= 'z';
}

bool is_alpha(char c) noexcept
{
    return is_lcalpha(c) || (c >= 'A' && c <= 'Z');
}

// RFC 9110 tchar.
bool is_tchar(char c) noexcept
{
    if (is_alpha(c) || is_digit(c))
        return true;
    switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~': return true;
    default: return false;
    }
}

bool is_base64(char c) noexcept
{
    return is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=';
}

// A cursor over the field value.
struct reader {
    std::string_view s;
    std::size_t i = 0;
    bool done() const noexcept { return i >= s.size(); }
    char peek() const noexcept { return s[i]; }
};

// RFC 8941 4.2.5: the String at r.i (which is '"'). Appends the decoded characters to `out` when
// it is not null; on success r.i is past the closing quote.
key_syntax read_string(reader& r, std::string* out, std::size_t& error_at)
{
    ++r.i; // the opening quote
    for (;;) {
        if (r.done()) {
            error_at = r.s.size();
            return key_syntax::unterminated;
        }
        char c = r.s[r.i];
        if (c == '\\') {
            if (r.i + 1 >= r.s.size()) {
                error_at = r.s.size();
                return key_syntax::unterminated;
            }
            char next = r.s[r.i + 1];
            if (next != '"' && next != '\\') {
                error_at = r.i;
                return key_syntax::bad_escape;
            }
            if (out)
                out->push_back(next);
            r.i += 2;
            continue;
        }
        if (c == '"') {
            ++r.i;
            return key_syntax::ok;
        }
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e) {
            error_at = r.i;
            return key_syntax::bad_string_char;
        }
        if (out)
            out->push_back(c);
        ++r.i;
    }
}

// RFC 8941 4.2.4: an Integer (at most 15 digits) or a Decimal (at most 12 digits, '.', 1 to 3).
bool read_number(reader& r)
{
    if (r.peek() == '-')
        ++r.i;
    std::size_t int_digits = 0;
    while (!r.done() && is_digit(r.peek())) {
        ++r.i;
        ++int_digits;
    }
    if (int_digits == 0)
        return false;
    if (r.done() || r.peek() != '.')
        return int_digits <= 15;
    if (int_digits > 12)
        return false;
    ++r.i;
    std::size_t frac_digits = 0;
    while (!r.done() && is_digit(r.peek())) {
        ++r.i;
        ++frac_digits;
    }
    return frac_digits >= 1 && frac_digits <= 3;
}

// RFC 8941 4.2.3.1: a bare item (the value of a parameter).
bool read_bare_item(reader& r)
{
    if (r.done())
        return false;
    char c = r.peek();
    if (c == '-' || is_digit(c))
        return read_number(r);
    if (c == '"') {
        std::size_t ignored = 0;
        return read_string(r, nullptr, ignored) == key_syntax::ok;
    }
    if (is_alpha(c) || c == '*') {
        ++r.i;
        while (!r.done() && (is_tchar(r.peek()) || r.peek() == ':' || r.peek() == '/'))
            ++r.i;
        return true;
    }
    if (c == ':') {
        ++r.i;
        while (!r.done() && is_base64(r.peek()))
            ++r.i;
        if (r.done() || r.peek() != ':')
            return false;
        ++r.i;
        return true;
    }
    if (c == '?') {
        ++r.i;
        if (r.done() || (r.peek() != '0' && r.peek() != '1'))
            return false;
        ++r.i;
        return true;
    }
    return false;
}

// RFC 8941 4.2.3.2: ";" *SP key [ "=" bare-item ], repeated. Stops before anything else.
bool read_parameters(reader& r)
{
    while (!r.done() && r.peek() == ';') {
        ++r.i;
        while (!r.done() && r.peek() == ' ')
            ++r.i;
        if (r.done() || !(is_lcalpha(r.peek()) || r.peek() == '*'))
            return false;
        while (!r.done() && (is_lcalpha(r.peek()) || is_digit(r.peek()) || r.peek() == '_' ||
                             r.peek() == '-' || r.peek() == '.' || r.peek() == '*'))
            ++r.i;
        if (!r.done() && r.peek() == '=') {
            ++r.i;
            if (!read_bare_item(r))
                return false;
        }
    }
    return true;
}

} // namespace

key_field parse_key_field(std::string_view field, std::string& storage)
{
    key_field out;
    if (field.empty() || field.front() != '"') {
        out.key = field;
        return out;
    }
    out.quoted = true;
    reader r{field};
    // Most quoted keys have no escape: the key is then the text between the quotes, checked in
    // one pass, without a copy.
    std::size_t close = 1;
    for (; close < field.size(); ++close) {
        auto u = static_cast<unsigned char>(field[close]);
        if (u == '"' || u == '\\')
            break;
        if (u < 0x20 || u > 0x7e) {
            out.error = key_syntax::bad_string_char;
            out.offset = close;
            return out;
        }
    }
    if (close < field.size() && field[close] == '"') {
        out.key = field.substr(1, close - 1);
        r.i = close + 1;
    } else {
        storage.clear();
        out.error = read_string(r, &storage, out.offset);
        if (out.error != key_syntax::ok)
            return out;
        out.key = storage;
    }
    std::size_t params_at = r.i;
    if (!read_parameters(r)) {
        out.error = key_syntax::bad_parameters;
        out.offset = params_at;
        return out;
    }
    while (!r.done() && (r.peek() == ' ' || r.peek() == '\t'))
        ++r.i;
    if (!r.done()) {
        out.error = key_syntax::trailing_characters;
        out.offset = r.i;
        return out;
    }
    if (out.key.empty()) {
        out.error = key_syntax::empty_string;
        out.offset = 0;
    }
    return out;
}

std::string describe(key_syntax error, std::size_t offset, std::string_view header)
{
    std::string out(header);
    out += ": ";
    auto at = " at position " + std::to_string(offset + 1);
    switch (error) {
    case key_syntax::ok: return {};
    case key_syntax::empty_string:
        out += "the quoted string is empty; a key has at least one character";
        break;
    case key_syntax::unterminated: out += "the quoted string has no closing '\"'"; break;
    case key_syntax::bad_escape:
        out += "a '\\' inside the quoted string escapes only '\"' or '\\' (" + at.substr(1) + ")";
        break;
    case key_syntax::bad_string_char:
        out += "a quoted string holds only characters 0x20-0x7E (a byte outside" + at + ")";
        break;
    case key_syntax::bad_parameters:
        out += "malformed parameters after the quoted string" + at + " (RFC 8941: ;name or ;name=value)";
        break;
    case key_syntax::trailing_characters:
        out += "characters after the quoted string" + at +
               "; the field must be one quoted string, optionally with ;parameters";
        break;
    }
    return out;
}

bool is_uuid(std::string_view key) noexcept
{
    if (key.size() != 36)
        return false;
    for (std::size_t i = 0; i < key.size(); ++i) {
        char c = key[i];
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-')
                return false;
        } else if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
            return false;
        }
    }
    return true;
}

key_format_check check_key_format(const config::key_format_config& format, std::string_view key) noexcept
{
    if (key.size() < format.min_length)
        return key_format_check::too_short;
    if (key.size() > format.max_length)
        return key_format_check::too_long;
    // A space only where a pattern says where it may be.
    const unsigned char lowest = format.regex ? 0x20 : 0x21;
    for (char c : key) {
        auto u = static_cast<unsigned char>(c);
        if (u < lowest || u > 0x7e)
            return key_format_check::bad_character;
    }
    if (format.uuid)
        return is_uuid(key) ? key_format_check::ok : key_format_check::no_match;
    if (format.regex && !format.regex->matches(key))
        return key_format_check::no_match;
    return key_format_check::ok;
}

std::string describe(const config::key_format_config& format)
{
    if (format.uuid)
        return "a UUID (8-4-4-4-12 hexadecimal digits, e.g. 123e4567-e89b-12d3-a456-426614174000)";
    std::string out = format.min_length == format.max_length
                          ? "exactly " + std::to_string(format.min_length)
                          : std::to_string(format.min_length) + " to " + std::to_string(format.max_length);
    if (format.regex)
        return out + " characters 0x20-0x7E matching the pattern " + format.pattern;
    return out + " characters 0x21-0x7E";
}

} // namespace idemgate::gateway
