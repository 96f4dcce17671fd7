// SPDX-License-Identifier: Apache-2.0
#include <idemgate/common/digest.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace idemgate {

sha256_digest sha256(std::string_view text)
{
    sha256_digest out{};
    unsigned int len = 0;
    EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr);
    return out;
}

std::string sha256_hex(std::string_view text)
{
    auto d = sha256(text);
    std::string out;
    append_hex(out, d.data(), d.size());
    return out;
}

sha256_digest hmac_sha256(std::string_view key, std::string_view text)
{
    sha256_digest out{};
    unsigned int len = 0;
    static const char empty_key = 0; // OpenSSL wants a key pointer even for an empty key
    HMAC(EVP_sha256(), key.empty() ? &empty_key : key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data(), &len);
    return out;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view text)
{
    auto d = hmac_sha256(key, text);
    std::string out;
    append_hex(out, d.data(), d.size());
    return out;
}

} // namespace idemgate
