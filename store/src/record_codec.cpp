#include <array>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>
#include <limits>

namespace idemgate::store {

namespace {

constexpr unsigned char fingerprint_raw = 0;
constexpr unsigned char fingerprint_packed_hex = 1;
constexpr std::size_t packed_hex_size = 32; // hex SHA-256: 64 chars -> 32 bytes

void put_varint(std::string& out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

void put_bytes(std::string& out, std::string_view bytes)
{
    put_varint(out, bytes.size());
    out.append(bytes);
}

// -1 for anything but 0-9 a-f: upper case is not packed, it would not round-trip.
constexpr std::array<signed char, 256> hex_table = [] {
    std::array<signed char, 256> t{};
    t.fill(-1);
    for (int c = '0'; c <= '9'; ++c)
        t[static_cast<std::size_t>(c)] = static_cast<signed char>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c)
        t[static_cast<std::size_t>(c)] = static_cast<signed char>(c - 'a' + 10);
    return t;
}();

// Appends the bytes `hex` (even length) spells if it is all lower-case hex; otherwise leaves
// `out` as it was and returns false. One pass: this runs for every reserve and complete.
bool try_put_packed_hex(std::string& out, std::string_view hex)
{
    auto start = out.size();
    out.resize(start + hex.size() / 2);
    char* p = out.data() + start;
    int invalid = 0;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        int hi = hex_table[static_cast<unsigned char>(hex[i])];
        int lo = hex_table[static_cast<unsigned char>(hex[i + 1])];
        invalid |= hi | lo; // negative once any digit is not hex
        *p++ = static_cast<char>((hi & 0xf) << 4 | (lo & 0xf));
    }
    if (invalid < 0) {
        out.resize(start);
        return false;
    }
    return true;
}

void expand_hex(std::string_view packed, std::string& out)
{
    static constexpr char digits[] = "0123456789abcdef";
    out.resize(2 * packed.size());
    for (std::size_t i = 0; i < packed.size(); ++i) {
        auto b = static_cast<unsigned char>(packed[i]);
        out[2 * i] = digits[b >> 4];
        out[2 * i + 1] = digits[b & 0xf];
    }
}

// The owner token: varint(n << 1 | 1) + n packed bytes when it is lower-case hex of even
// length (the gateway's tokens), else varint(len << 1) + the bytes. Deterministic, so the
// owner prefix of a token is always the same bytes.
void put_token(std::string& out, std::string_view token)
{
    if (!token.empty() && token.size() % 2 == 0) {
        auto start = out.size();
        put_varint(out, (token.size() / 2) << 1 | 1);
        if (try_put_packed_hex(out, token))
            return;
        out.resize(start);
    }
    put_varint(out, token.size() << 1);
    out.append(token);
}

// Header names seen on almost every response are one byte: varint(index << 1 | 1). Others are
// varint(len << 1) + the bytes. Names are stored exactly as received, so both spellings are
// listed. Append only: the index is part of the stored format.
constexpr std::array<std::string_view, 40> common_header_names{"Content-Type",
                                                               "Content-Length",
                                                               "Date",
                                                               "Server",
                                                               "Location",
                                                               "ETag",
                                                               "Cache-Control",
                                                               "Set-Cookie",
                                                               "Last-Modified",
                                                               "Vary",
                                                               "Content-Encoding",
                                                               "Content-Language",
                                                               "Expires",
                                                               "X-Request-Id",
                                                               "X-Request-ID",
                                                               "Link",
                                                               "Retry-After",
                                                               "Strict-Transport-Security",
                                                               "Access-Control-Allow-Origin",
                                                               "X-Content-Type-Options",
                                                               "content-type",
                                                               "content-length",
                                                               "date",
                                                               "server",
                                                               "location",
                                                               "etag",
                                                               "cache-control",
                                                               "set-cookie",
                                                               "last-modified",
                                                               "vary",
                                                               "content-encoding",
                                                               "content-language",
                                                               "expires",
                                                               "x-request-id",
                                                               "x-correlation-id",
                                                               "link",
                                                               "retry-after",
                                                               "strict-transport-security",
                                                               "access-control-allow-origin",
                                                               "x-content-type-options"};

void put_header_name(std::string& out, std::string_view name)
{
    for (std::size_t i = 0; i < common_header_names.size(); ++i)
        if (common_header_names[i] == name) {
            put_varint(out, i << 1 | 1);
            return;
        }
    put_varint(out, name.size() << 1);
    out.append(name);
}

// The reason phrase is omitted when it is the standard one for the status.
std::string_view standard_reason(unsigned status)
{
    namespace http = boost::beast::http;
    if (status > 999 || http::int_to_status(status) == http::status::unknown)
        return {};
    return http::obsolete_reason(http::int_to_status(status));
}

// Reads from a byte range; every read checks the remaining size first.
class reader {
public:
    explicit reader(std::string_view bytes) : rest_(bytes) {}

    bool byte(unsigned char& v)
    {
        if (rest_.empty())
            return false;
        v = static_cast<unsigned char>(rest_.front());
        rest_.remove_prefix(1);
        return true;
    }

    bool varint(std::uint64_t& v)
    {
        v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            unsigned char b = 0;
            if (!byte(b))
                return false;
            if (shift == 63 && (b & 0x7e))
                return false; // more than 64 bits
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80))
                return true;
        }
        return false;
    }

    bool bytes(std::string& out)
    {
        std::uint64_t n = 0;
        if (!varint(n) || n > rest_.size())
            return false;
        out.assign(rest_.data(), static_cast<std::size_t>(n));
        rest_.remove_prefix(static_cast<std::size_t>(n));
        return true;
    }

    // varint(n << 1 | packed) then n bytes; packed bytes are expanded to lower-case hex.
    bool token(std::string& out)
    {
        std::uint64_t v = 0;
        std::string_view bytes;
        if (!varint(v) || !raw_checked(v >> 1, bytes))
            return false;
        if (v & 1)
            expand_hex(bytes, out);
        else
            out.assign(bytes);
        return true;
    }

    bool header_name(std::string& out)
    {
        std::uint64_t v = 0;
        if (!varint(v))
            return false;
        if (v & 1) {
            if ((v >> 1) >= common_header_names.size())
                return false;
            out.assign(common_header_names[v >> 1]);
            return true;
        }
        std::string_view bytes;
        if (!raw_checked(v >> 1, bytes))
            return false;
        out.assign(bytes);
        return true;
    }

    bool raw_checked(std::uint64_t n, std::string_view& out)
    {
        if (n > rest_.size())
            return false;
        return raw(static_cast<std::size_t>(n), out);
    }

    bool raw(std::size_t n, std::string_view& out)
    {
        if (n > rest_.size())
            return false;
        out = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return true;
    }

    bool done() const { return rest_.empty(); }
    std::size_t remaining() const { return rest_.size(); }

private:
    std::string_view rest_;
};

bool decode_into(std::string_view bytes, record& r)
{
    reader in(bytes);
    unsigned char version = 0;
    if (!in.byte(version) || version != record_codec_version)
        return false;
    if (!in.token(r.owner_token))
        return false;

    unsigned char state = 0;
    if (!in.byte(state))
        return false;
    if (state != static_cast<unsigned char>(record_state::in_flight) &&
        state != static_cast<unsigned char>(record_state::completed) &&
        state != static_cast<unsigned char>(record_state::outcome_unknown))
        return false;
    r.state = static_cast<record_state>(state);

    std::uint64_t created = 0;
    if (!in.varint(created))
        return false;
    r.created_unix_ms = static_cast<std::int64_t>(created);

    unsigned char form = 0;
    if (!in.byte(form))
        return false;
    if (form == fingerprint_raw) {
        if (!in.bytes(r.fingerprint))
            return false;
    } else if (form == fingerprint_packed_hex) {
        std::string_view packed;
        if (!in.raw(packed_hex_size, packed))
            return false;
        expand_hex(packed, r.fingerprint);
    } else {
        return false;
    }

    r.response = {};
    if (r.state != record_state::completed)
        return in.done();

    std::uint64_t status_and_flag = 0;
    if (!in.varint(status_and_flag) || (status_and_flag >> 1) > std::numeric_limits<unsigned>::max())
        return false;
    r.response.status = static_cast<unsigned>(status_and_flag >> 1);
    if (status_and_flag & 1) {
        if (!in.bytes(r.response.reason))
            return false;
    } else {
        auto reason = standard_reason(r.response.status);
        if (reason.empty())
            return false; // the encoder never omits a reason it cannot restore
        r.response.reason.assign(reason);
    }
    std::uint64_t count = 0;
    // Each header costs at least two bytes, so a count above remaining/2 is garbage: this
    // bounds the reserve() below by the input size.
    if (!in.varint(count) || count > in.remaining() / 2)
        return false;
    r.response.headers.resize(static_cast<std::size_t>(count));
    for (auto& h : r.response.headers)
        if (!in.header_name(h.name) || !in.bytes(h.value))
            return false;
    if (!in.bytes(r.response.body))
        return false;
    return in.done();
}

} // namespace

void encode_record(const record& r, std::string& out)
{
    std::size_t size_hint = 16 + r.owner_token.size() + r.fingerprint.size();
    if (r.state == record_state::completed) {
        size_hint += 16 + r.response.reason.size() + r.response.body.size();
        for (const auto& h : r.response.headers)
            size_hint += 4 + h.name.size() + h.value.size();
    }
    out.reserve(out.size() + size_hint);

    out.push_back(static_cast<char>(record_codec_version));
    put_token(out, r.owner_token);
    out.push_back(static_cast<char>(r.state));
    put_varint(out, static_cast<std::uint64_t>(r.created_unix_ms));
    out.push_back(static_cast<char>(fingerprint_packed_hex));
    if (r.fingerprint.size() != 2 * packed_hex_size || !try_put_packed_hex(out, r.fingerprint)) {
        out.back() = static_cast<char>(fingerprint_raw);
        put_bytes(out, r.fingerprint);
    }
    if (r.state != record_state::completed)
        return;
    auto reason = standard_reason(r.response.status);
    bool custom_reason = reason.empty() || r.response.reason != reason;
    put_varint(out, static_cast<std::uint64_t>(r.response.status) << 1 | (custom_reason ? 1 : 0));
    if (custom_reason)
        put_bytes(out, r.response.reason);
    put_varint(out, r.response.headers.size());
    for (const auto& h : r.response.headers) {
        put_header_name(out, h.name);
        put_bytes(out, h.value);
    }
    put_bytes(out, r.response.body);
}

std::string encode_record(const record& r)
{
    std::string out;
    encode_record(r, out);
    return out;
}

boost::system::error_code decode_record(std::string_view bytes, record& out)
{
    record r;
    if (!decode_into(bytes, r))
        return make_error_code(error::record_corrupt);
    out = std::move(r);
    return {};
}

std::string owner_prefix(std::string_view owner_token)
{
    std::string out;
    out.push_back(static_cast<char>(record_codec_version));
    put_token(out, owner_token);
    return out;
}

} // namespace idemgate::store
