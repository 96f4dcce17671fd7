// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes through the store's record decoder (what a Redis GET or a Lua
// script reply hands back). Garbage must end as record_corrupt without touching the output;
// a decoded record must re-encode to a canonical form that decodes to the same record, and
// seal and open again to the same record (store.encryption).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>
#include <string>
#include <string_view>

namespace {

using namespace idemgate;
using namespace idemgate::store;

void require(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_record_decode: invariant broken: %s\n", what);
        std::abort();
    }
}

// A record no decoder produces, to see that a failed decode leaves its output alone.
record sentinel()
{
    record r;
    r.state = record_state::completed;
    r.fingerprint = "sentinel";
    r.owner_token = "untouched";
    r.created_unix_ms = -1;
    r.response.status = 599;
    r.response.body = "left alone";
    return r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    record decoded = sentinel();
    // The same bytes through the decoder with keys (store.encryption): a sealed record under an
    // unknown key, or one that does not authenticate, is record_corrupt like any garbage; a
    // clear record decodes exactly as without keys.
    static const record_cipher cipher(std::string(32, 'k'));
    record opened = sentinel();
    auto opened_ec = decode_record(bytes, opened, cipher, "fuzz:key");
    if (auto ec = decode_record(bytes, decoded)) {
        require(ec == make_error_code(error::record_corrupt), "a decode failed with another error");
        require(decoded == sentinel(), "a failed decode changed its output");
        require(opened_ec || (!bytes.empty() && bytes[0] == char(record_codec_version_sealed)),
                "only a sealed record decodes with keys and not without");
        require(opened_ec || opened.state == record_state::completed, "a sealed record without a response");
        require(!opened_ec || opened == sentinel(), "a failed keyed decode changed its output");
        return 0;
    }
    require(!opened_ec && opened == decoded, "a clear record decodes differently with keys");

    // Sealing any decoded record and opening it again gives the record back.
    std::string sealed;
    require(!encode_record(decoded, sealed, cipher, "fuzz:key"), "sealing failed");
    record unsealed;
    require(!decode_record(sealed, unsealed, cipher, "fuzz:key") && unsealed == decoded,
            "decode(seal(r)) != r");
    require(decode_record(sealed, unsealed, cipher, "fuzz:other") == make_error_code(error::record_corrupt) ||
                decoded.state != record_state::completed,
            "a sealed record opened under another binding");
    if (decoded.state == record_state::in_flight)
        require(decoded.response == stored_response{}, "an in-flight record carries a response");

    // The input may be a non-canonical spelling (an unpacked hex token, a redundant reason);
    // its re-encoding is canonical: decoding it gives the same record and encoding is a fixpoint.
    auto encoded = encode_record(decoded);
    require(encoded.size() <= bytes.size(), "the canonical encoding is longer than the input");
    require(encoded.starts_with(owner_prefix(decoded.owner_token)),
            "the encoding does not start with the owner prefix the Lua scripts compare");
    record again;
    require(!decode_record(encoded, again), "a re-encoded record does not decode");
    require(again == decoded, "decode(encode(r)) != r");
    require(encode_record(again) == encoded, "encoding is not deterministic");

    // The decoder reads left to right, so no strict prefix and no extension is a record.
    record cut = sentinel();
    require(decode_record(std::string_view(encoded).substr(0, encoded.size() - 1), cut) ==
                make_error_code(error::record_corrupt),
            "a truncated record decoded");
    require(decode_record(encoded + '\0', cut) == make_error_code(error::record_corrupt),
            "a record with a trailing byte decoded");
    require(cut == sentinel(), "a failed decode changed its output");
    return 0;
}
