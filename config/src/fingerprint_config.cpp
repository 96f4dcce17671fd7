// SPDX-License-Identifier: Apache-2.0
// What a route's fingerprint options add to the fingerprint (fingerprint_config::describe). On its
// own: the request-parse fuzz target compiles it without the loader.
#include "idemgate/config/config.hpp"

#include <string>

namespace idemgate::config {

std::string fingerprint_config::describe() const
{
    // Today's defaults describe as "": fingerprints made before these options existed still match.
    if (query && headers.empty() && json == json_mode::raw && decode == body_decoding::none)
        return {};
    std::string out = "fp2";
    out += query ? ";q" : ";noq";
    for (const auto& h : headers) {
        out += ";h=";
        for (char c : h)
            out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    if (json == json_mode::canonical)
        out += ";json";
    for (const auto& p : ignore_json_fields)
        out += ";ignore=" + p;
    if (decode == body_decoding::gzip)
        out += ";gunzip";
    return out;
}

} // namespace idemgate::config
