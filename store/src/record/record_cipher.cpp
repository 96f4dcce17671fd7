// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_cipher.hpp>
#include <limits>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <optional>
#include <stdexcept>

namespace idemgate::store {

namespace {

struct cipher_ctx_deleter {
    void operator()(EVP_CIPHER_CTX* ctx) const noexcept { EVP_CIPHER_CTX_free(ctx); }
};
using cipher_ctx_ptr = std::unique_ptr<EVP_CIPHER_CTX, cipher_ctx_deleter>;

struct evp_cipher_deleter {
    void operator()(EVP_CIPHER* c) const noexcept { EVP_CIPHER_free(c); }
};

const unsigned char* bytes_of(std::string_view s)
{
    return reinterpret_cast<const unsigned char*>(s.data());
}

// EVP takes int lengths; a record is bounded by max_response_body, far below this.
bool fits_int(std::size_t n)
{
    return n <= static_cast<std::size_t>(std::numeric_limits<int>::max());
}

bool add_aad(EVP_CIPHER_CTX* ctx, std::span<const std::string_view> aad, bool encrypt)
{
    for (auto part : aad) {
        if (part.empty())
            continue;
        int n = 0;
        if (!fits_int(part.size()))
            return false;
        int ok = encrypt ? EVP_EncryptUpdate(ctx, nullptr, &n, bytes_of(part), static_cast<int>(part.size()))
                         : EVP_DecryptUpdate(ctx, nullptr, &n, bytes_of(part), static_cast<int>(part.size()));
        if (ok != 1)
            return false;
    }
    return true;
}

} // namespace

struct record_cipher::impl {
    struct key {
        std::string bytes;
        key_id_type id{};
    };
    std::unique_ptr<EVP_CIPHER, evp_cipher_deleter> aes;
    std::optional<key> current;
    std::optional<key> previous;

    const key* find(std::string_view id) const
    {
        for (const auto* k : {&current, &previous})
            if (*k && std::string_view(reinterpret_cast<const char*>((*k)->id.data()), key_id_size) == id)
                return &**k;
        return nullptr;
    }

    // AES-256-GCM fetched once (OpenSSL 3 would otherwise look it up on every init).
    const EVP_CIPHER* algorithm() const { return aes ? aes.get() : EVP_aes_256_gcm(); }
};

std::string_view to_string(seal_fault f) noexcept
{
    switch (f) {
    case seal_fault::none: return "none";
    case seal_fault::malformed: return "malformed";
    case seal_fault::unknown_key:
        return "encrypted under a key that is neither the current nor the previous key";
    case seal_fault::not_authentic: return "fails authentication (wrong key, or altered)";
    }
    return "unknown";
}

record_cipher::record_cipher(std::string_view current, std::string_view previous)
{
    auto make_key = [](std::string_view bytes) -> std::optional<impl::key> {
        if (bytes.empty())
            return std::nullopt;
        if (bytes.size() != key_size)
            throw std::invalid_argument("record_cipher: a key must be 32 bytes");
        return impl::key{std::string(bytes), key_id(bytes)};
    };
    auto state = std::make_shared<impl>();
    state->current = make_key(current);
    state->previous = make_key(previous);
    state->aes.reset(EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr));
    if (state->current || state->previous)
        impl_ = std::move(state);
}

bool record_cipher::seals() const noexcept
{
    return impl_ && impl_->current.has_value();
}

bool record_cipher::opens() const noexcept
{
    return impl_ != nullptr;
}

record_cipher::key_id_type record_cipher::key_id(std::string_view key)
{
    std::string input = "idemgate record key";
    input.append(key);
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256(bytes_of(input), input.size(), digest.data());
    OPENSSL_cleanse(input.data(), input.size());
    key_id_type id{};
    std::copy_n(digest.begin(), id.size(), id.begin());
    return id;
}

boost::system::error_code record_cipher::seal(std::string_view plaintext,
                                              std::span<const std::string_view> aad, std::string& out) const
{
    const auto failed = make_error_code(error::record_seal_failed);
    if (!seals() || !fits_int(plaintext.size()))
        return failed;
    const auto& key = *impl_->current;
    const auto start = out.size();
    out.resize(start + overhead + plaintext.size());
    auto* p = reinterpret_cast<unsigned char*>(out.data() + start);
    std::copy(key.id.begin(), key.id.end(), p);
    unsigned char* nonce = p + key_id_size;
    unsigned char* body = nonce + nonce_size;
    unsigned char* tag = body + plaintext.size();

    cipher_ctx_ptr ctx(EVP_CIPHER_CTX_new());
    int n = 0;
    int tail = 0;
    // A random 96-bit nonce per record: records under one key stay far below the 2^32 that NIST
    // SP 800-38D 8.3 allows for random nonces.
    bool ok = ctx && RAND_bytes(nonce, static_cast<int>(nonce_size)) == 1 &&
              EVP_EncryptInit_ex(ctx.get(), impl_->algorithm(), nullptr, bytes_of(key.bytes), nonce) == 1 &&
              add_aad(ctx.get(), aad, true) &&
              EVP_EncryptUpdate(ctx.get(), body, &n, bytes_of(plaintext),
                                static_cast<int>(plaintext.size())) == 1 &&
              EVP_EncryptFinal_ex(ctx.get(), body + n, &tail) == 1 &&
              static_cast<std::size_t>(n + tail) == plaintext.size() &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag_size), tag) == 1;
    if (!ok) {
        out.resize(start);
        return failed;
    }
    return {};
}

boost::system::error_code record_cipher::open(std::string_view sealed, std::span<const std::string_view> aad,
                                              std::string& plaintext, seal_fault* fault) const
{
    auto fail = [fault](seal_fault why) {
        if (fault)
            *fault = why;
        return make_error_code(error::record_corrupt);
    };
    if (sealed.size() < overhead || !fits_int(sealed.size()))
        return fail(seal_fault::malformed);
    const impl::key* key = impl_ ? impl_->find(sealed.substr(0, key_id_size)) : nullptr;
    if (!key)
        return fail(seal_fault::unknown_key);
    auto nonce = sealed.substr(key_id_size, nonce_size);
    auto body = sealed.substr(key_id_size + nonce_size, sealed.size() - overhead);
    auto tag = sealed.substr(sealed.size() - tag_size);

    plaintext.resize(body.size());
    auto* out = reinterpret_cast<unsigned char*>(plaintext.data());
    cipher_ctx_ptr ctx(EVP_CIPHER_CTX_new());
    int n = 0;
    int tail = 0;
    // The tag is compared by EVP_DecryptFinal_ex in constant time.
    bool ok = ctx &&
              EVP_DecryptInit_ex(ctx.get(), impl_->algorithm(), nullptr, bytes_of(key->bytes),
                                 bytes_of(nonce)) == 1 &&
              add_aad(ctx.get(), aad, false) &&
              EVP_DecryptUpdate(ctx.get(), out, &n, bytes_of(body), static_cast<int>(body.size())) == 1 &&
              EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(tag_size),
                                  const_cast<char*>(tag.data())) == 1 &&
              EVP_DecryptFinal_ex(ctx.get(), out + n, &tail) == 1;
    if (!ok) {
        plaintext.clear(); // never hand out bytes that did not authenticate
        return fail(seal_fault::not_authentic);
    }
    if (fault)
        *fault = seal_fault::none;
    return {};
}

} // namespace idemgate::store
