// SPDX-License-Identifier: Apache-2.0
// A record as the store holds it: the clear head (version, owner token, state, created time,
// fingerprint), then the response (status, reason, headers, body), optionally sealed with
// record_cipher; and the owner prefix the Redis scripts compare. The primitives it is written
// with: record_format.hpp.
#include "record/record_format.hpp"

#include <array>
#include <cstdint>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>
#include <limits>
#include <openssl/crypto.h>

namespace idemgate::store {

namespace {

using namespace detail;

constexpr unsigned char fingerprint_raw = 0;
constexpr unsigned char fingerprint_packed_hex = 1;
constexpr std::size_t packed_hex_size = 32; // hex SHA-256: 64 chars -> 32 bytes

// Records that carry a response part: a completed one, and the body-less status_only and
// tombstone, whose part ends with the body's length and SHA-256.
bool has_response(record_state state) noexcept
{
    return state == record_state::completed || state == record_state::status_only ||
           state == record_state::tombstone;
}

bool decode_response(reader& in, stored_response& response);

// The response part of `r` up to the end of `in`.
bool decode_response_part(reader& in, record& r)
{
    if (r.state == record_state::completed)
        return decode_response(in, r.response) && in.done();
    if (!decode_response(in, r.response) || !r.response.body.empty())
        return false;
    std::string_view digest;
    std::uint64_t digest_size = 0;
    if (!in.varint(r.body_length) || !in.varint(digest_size) ||
        (digest_size != 0 && digest_size != packed_hex_size) || !in.raw_checked(digest_size, digest))
        return false;
    if (digest_size == 0)
        r.body_sha256.clear();
    else
        expand_hex(digest, r.body_sha256);
    return in.done();
}

// The response part (status, reason, headers, body).
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
    return in.bytes(response.body);
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
                 seal_fault& fault, bool keep_sealed = false)
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
    if (state < static_cast<unsigned char>(record_state::in_flight) ||
        state > static_cast<unsigned char>(record_state::tombstone))
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
    if (!has_response(r.state))
        return version == record_codec_version && in.done(); // only responses are sealed
    if (version == record_codec_version)
        return decode_response_part(in, r);

    auto head = bytes.substr(0, bytes.size() - in.remaining());
    std::string_view sealed;
    in.raw(in.remaining(), sealed);
    if (keep_sealed) {
        // Opened above the backend (open_record), against the head encode_head writes again.
        // Shorter than a sealed part can be: never handed up as a record without a response.
        if (sealed.size() < record_cipher::overhead)
            return false;
        r.sealed_response.assign(sealed);
        fault = seal_fault::none;
        return true;
    }
    sealed_aad aad(binding, head);
    std::string plaintext;
    if (cipher.open(sealed, aad.parts, plaintext, &fault))
        return false;
    reader inner(plaintext);
    if (!decode_response_part(inner, r)) {
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

void encode_response(const stored_response& response, std::string& out);

// The response part of `r` (has_response).
void encode_response_part(const record& r, std::string& out)
{
    if (r.state == record_state::completed) {
        encode_response(r.response, out);
        return;
    }
    stored_response head{r.response.status, r.response.reason, r.response.headers, {}};
    encode_response(head, out);
    put_varint(out, r.body_length);
    auto start = out.size();
    put_varint(out, packed_hex_size);
    if (r.body_sha256.size() != 2 * packed_hex_size || !try_put_packed_hex(out, r.body_sha256)) {
        out.resize(start);
        put_varint(out, 0);
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
    if (has_response(r.state)) {
        hint += 16 + 48 + r.response.reason.size() + r.response.body.size();
        for (const auto& h : r.response.headers)
            hint += 4 + h.name.size() + h.value.size();
    }
    return hint;
}

// Appends the sealed response part of `r` to `out`, authenticated with `binding` and `head` (the
// record's version-2 head).
boost::system::error_code seal_part(const record& r, std::string_view head, const record_cipher& cipher,
                                    std::string_view binding, std::string& out)
{
    std::string plaintext;
    plaintext.reserve(size_hint(r));
    encode_response_part(r, plaintext);
    sealed_aad aad(binding, head);
    auto ec = cipher.seal(plaintext, aad.parts, out);
    OPENSSL_cleanse(plaintext.data(), plaintext.size());
    return ec;
}

} // namespace

void encode_record(const record& r, std::string& out)
{
    if (has_response(r.state) && !r.sealed_response.empty()) {
        out.reserve(out.size() + 48 + r.owner_token.size() + r.fingerprint.size() + r.sealed_response.size());
        encode_head(r, record_codec_version_sealed, out);
        out.append(r.sealed_response);
        return;
    }
    out.reserve(out.size() + size_hint(r));
    encode_head(r, record_codec_version, out);
    if (has_response(r.state))
        encode_response_part(r, out);
}

boost::system::error_code encode_record(const record& r, std::string& out, const record_cipher& cipher,
                                        std::string_view binding)
{
    if (!has_response(r.state) || !cipher.seals()) {
        encode_record(r, out);
        return {};
    }
    if (!r.sealed_response.empty()) { // sealed already (seal_record)
        encode_record(r, out);
        return {};
    }
    const auto start = out.size();
    out.reserve(start + size_hint(r) + record_cipher::overhead);
    encode_head(r, record_codec_version_sealed, out);
    // `out` may hold other bytes before `start`; the head is what follows them.
    auto head = std::string(out, start);
    auto ec = seal_part(r, head, cipher, binding, out);
    if (ec)
        out.resize(start);
    return ec;
}

boost::system::error_code seal_record(record& r, const record_cipher& cipher, std::string_view binding)
{
    if (!has_response(r.state) || !cipher.seals() || !r.sealed_response.empty())
        return {};
    std::string head;
    encode_head(r, record_codec_version_sealed, head);
    std::string sealed;
    if (auto ec = seal_part(r, head, cipher, binding, sealed))
        return ec;
    r.response = {};
    r.body_length = 0;
    r.body_sha256.clear();
    r.sealed_response = std::move(sealed);
    return {};
}

boost::system::error_code open_record(record& r, const record_cipher& cipher, std::string_view binding,
                                      seal_fault* fault)
{
    if (fault)
        *fault = seal_fault::none;
    if (r.sealed_response.empty())
        return {};
    auto fail = [fault](seal_fault why) {
        if (fault)
            *fault = why;
        return make_error_code(error::record_corrupt);
    };
    if (!has_response(r.state))
        return fail(seal_fault::malformed);
    std::string head;
    encode_head(r, record_codec_version_sealed, head);
    sealed_aad aad(binding, head);
    std::string plaintext;
    seal_fault why = seal_fault::none;
    if (cipher.open(r.sealed_response, aad.parts, plaintext, &why))
        return fail(why);
    record opened = r;
    opened.sealed_response.clear();
    reader inner(plaintext);
    bool ok = decode_response_part(inner, opened);
    OPENSSL_cleanse(plaintext.data(), plaintext.size());
    if (!ok)
        return fail(seal_fault::malformed); // authentic, so written by a broken encoder
    r = std::move(opened);
    return {};
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

boost::system::error_code decode_stored_record(std::string_view bytes, record& out)
{
    record r;
    seal_fault why = seal_fault::none;
    if (!decode_into(bytes, r, record_cipher{}, {}, why, true))
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
