#include <array>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>
#include <limits>
#include <openssl/crypto.h>

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

// The response part (status, reason, headers, body) up to the end of `in`.
bool decode_response(reader& in, stored_response& response)
{
    std::uint64_t status_and_flag = 0;
    if (!in.varint(status_and_flag) || (status_and_flag >> 1) > std::numeric_limits<unsigned>::max())
        return false;
    response.status = static_cast<unsigned>(status_and_flag >> 1);
    if (status_and_flag & 1) {
        if (!in.bytes(response.reason))
            return false;
    } else {
        auto reason = standard_reason(response.status);
        if (reason.empty())
            return false; // the encoder never omits a reason it cannot restore
        response.reason.assign(reason);
    }
    std::uint64_t count = 0;
    // Each header costs at least two bytes, so a count above remaining/2 is garbage: this
    // bounds the reserve() below by the input size.
    if (!in.varint(count) || count > in.remaining() / 2)
        return false;
    response.headers.resize(static_cast<std::size_t>(count));
    for (auto& h : response.headers)
        if (!in.header_name(h.name) || !in.bytes(h.value))
            return false;
    if (!in.bytes(response.body))
        return false;
    return in.done();
}

// The authenticated data of a sealed response: the Redis key (or any binding the caller
// names), length-prefixed so no two (binding, head) pairs read alike, then the record's clear
// head (version through fingerprint). A ciphertext copied under another key or into another
// record (other token, fingerprint, state or time) does not open.
struct sealed_aad {
    sealed_aad(std::string_view binding, std::string_view head) : parts{std::string_view{}, binding, head}
    {
        put_varint(length, binding.size());
        parts[0] = length;
    }
    std::string length;
    std::array<std::string_view, 3> parts;
};

bool decode_into(std::string_view bytes, record& r, const record_cipher& cipher, std::string_view binding,
                 seal_fault& fault)
{
    fault = seal_fault::malformed;
    reader in(bytes);
    unsigned char version = 0;
    if (!in.byte(version) || (version != record_codec_version && version != record_codec_version_sealed))
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
        return version == record_codec_version && in.done(); // only responses are sealed
    if (version == record_codec_version)
        return decode_response(in, r.response);

    auto head = bytes.substr(0, bytes.size() - in.remaining());
    std::string_view sealed;
    in.raw(in.remaining(), sealed);
    sealed_aad aad(binding, head);
    std::string plaintext;
    if (cipher.open(sealed, aad.parts, plaintext, &fault))
        return false;
    reader inner(plaintext);
    if (!decode_response(inner, r.response)) {
        fault = seal_fault::malformed; // authentic, so written by a broken encoder
        return false;
    }
    return true;
}

void encode_head(const record& r, unsigned char version, std::string& out)
{
    out.push_back(static_cast<char>(version));
    put_token(out, r.owner_token);
    out.push_back(static_cast<char>(r.state));
    put_varint(out, static_cast<std::uint64_t>(r.created_unix_ms));
    out.push_back(static_cast<char>(fingerprint_packed_hex));
    if (r.fingerprint.size() != 2 * packed_hex_size || !try_put_packed_hex(out, r.fingerprint)) {
        out.back() = static_cast<char>(fingerprint_raw);
        put_bytes(out, r.fingerprint);
    }
}

void encode_response(const stored_response& response, std::string& out)
{
    auto reason = standard_reason(response.status);
    bool custom_reason = reason.empty() || response.reason != reason;
    put_varint(out, static_cast<std::uint64_t>(response.status) << 1 | (custom_reason ? 1 : 0));
    if (custom_reason)
        put_bytes(out, response.reason);
    put_varint(out, response.headers.size());
    for (const auto& h : response.headers) {
        put_header_name(out, h.name);
        put_bytes(out, h.value);
    }
    put_bytes(out, response.body);
}

std::size_t size_hint(const record& r)
{
    std::size_t hint = 16 + r.owner_token.size() + r.fingerprint.size();
    if (r.state == record_state::completed) {
        hint += 16 + r.response.reason.size() + r.response.body.size();
        for (const auto& h : r.response.headers)
            hint += 4 + h.name.size() + h.value.size();
    }
    return hint;
}

} // namespace

void encode_record(const record& r, std::string& out)
{
    out.reserve(out.size() + size_hint(r));
    encode_head(r, record_codec_version, out);
    if (r.state == record_state::completed)
        encode_response(r.response, out);
}

boost::system::error_code encode_record(const record& r, std::string& out, const record_cipher& cipher,
                                        std::string_view binding)
{
    if (r.state != record_state::completed || !cipher.seals()) {
        encode_record(r, out);
        return {};
    }
    const auto start = out.size();
    const auto hint = size_hint(r);
    out.reserve(start + hint + record_cipher::overhead);
    encode_head(r, record_codec_version_sealed, out);
    std::string plaintext;
    plaintext.reserve(hint);
    encode_response(r.response, plaintext);
    // `out` may hold other bytes before `start`; the head is what follows them.
    auto head = std::string(out, start);
    sealed_aad aad(binding, head);
    auto ec = cipher.seal(plaintext, aad.parts, out);
    OPENSSL_cleanse(plaintext.data(), plaintext.size());
    if (ec)
        out.resize(start);
    return ec;
}

std::string encode_record(const record& r)
{
    std::string out;
    encode_record(r, out);
    return out;
}

boost::system::error_code decode_record(std::string_view bytes, record& out)
{
    return decode_record(bytes, out, record_cipher{}, {});
}

boost::system::error_code decode_record(std::string_view bytes, record& out, const record_cipher& cipher,
                                        std::string_view binding, seal_fault* fault)
{
    record r;
    seal_fault why = seal_fault::none;
    bool ok = decode_into(bytes, r, cipher, binding, why);
    if (fault)
        *fault = ok ? seal_fault::none : why;
    if (!ok)
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
