#include <array>
#include <idemgate/gateway/fingerprint.hpp>
#include <memory>
#include <openssl/evp.h>

namespace idemgate::gateway {

std::string fingerprint(std::string_view method, std::string_view target, std::string_view body)
{
    // OpenSSL 3 looks the algorithm up again (under a lock) on every EVP_DigestInit_ex with
    // EVP_sha256(): fetch it once. One context per thread, reused: EVP_MD_CTX_new per request
    // is an avoidable allocation.
    static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                                             &EVP_MD_CTX_free);
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int len = 0;
    EVP_DigestInit_ex2(ctx.get(), sha256 ? sha256 : EVP_sha256(), nullptr);
    EVP_DigestUpdate(ctx.get(), method.data(), method.size());
    EVP_DigestUpdate(ctx.get(), "\n", 1);
    EVP_DigestUpdate(ctx.get(), target.data(), target.size());
    EVP_DigestUpdate(ctx.get(), "\n", 1);
    EVP_DigestUpdate(ctx.get(), body.data(), body.size());
    EVP_DigestFinal_ex(ctx.get(), digest.data(), &len);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(len * 2, '0');
    for (unsigned i = 0; i < len; ++i) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 0xf];
    }
    return out;
}

} // namespace idemgate::gateway
