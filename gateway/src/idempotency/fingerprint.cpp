// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/field_allocator.hpp>
#include <idemgate/gateway/fingerprint.hpp>
#include <memory>
#include <openssl/evp.h>

namespace idemgate::gateway {

namespace json = boost::json;

namespace {

// OpenSSL 3 looks the algorithm up again (under a lock) on every EVP_DigestInit_ex with
// EVP_sha256(): fetch it once. One context per thread, reused: EVP_MD_CTX_new per request is an
// avoidable allocation.
class sha256_hasher {
public:
    sha256_hasher()
    {
        static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
        EVP_DigestInit_ex2(ctx().get(), sha256 ? sha256 : EVP_sha256(), nullptr);
    }
    void update(std::string_view part) { EVP_DigestUpdate(ctx().get(), part.data(), part.size()); }
    // A part with its length in front, so that no two sequences of parts hash alike.
    void update_framed(std::string_view part)
    {
        update(std::to_string(part.size()));
        update(":");
        update(part);
    }
    std::string hex()
    {
        std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
        unsigned int len = 0;
        EVP_DigestFinal_ex(ctx().get(), digest.data(), &len);
        std::string out;
        append_hex(out, digest.data(), len);
        return out;
    }

private:
    static std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>& ctx()
    {
        thread_local std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> c(EVP_MD_CTX_new(),
                                                                               &EVP_MD_CTX_free);
        return c;
    }
};

// RFC 6901 reference tokens of a pointer ("/a/b~1c" -> "a", "b/c").
std::vector<std::string> pointer_tokens(std::string_view pointer)
{
    std::vector<std::string> tokens;
    std::size_t pos = 1;
    while (pos <= pointer.size()) {
        auto next = pointer.find('/', pos);
        auto raw = pointer.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos);
        std::string token;
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '~' && i + 1 < raw.size()) {
                token.push_back(raw[i + 1] == '1' ? '/' : '~');
                ++i;
            } else {
                token.push_back(raw[i]);
            }
        }
        tokens.push_back(std::move(token));
        if (next == std::string_view::npos)
            break;
        pos = next + 1;
    }
    return tokens;
}

std::optional<std::size_t> array_index(const std::string& token)
{
    if (token.empty() || token.size() > 9 || (token.size() > 1 && token[0] == '0'))
        return std::nullopt;
    std::size_t n = 0;
    for (char c : token) {
        if (c < '0' || c > '9')
            return std::nullopt;
        n = n * 10 + static_cast<std::size_t>(c - '0');
    }
    return n;
}

void remove_pointer(json::value& root, std::string_view pointer)
{
    auto tokens = pointer_tokens(pointer);
    if (tokens.empty())
        return;
    json::value* at = &root;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        if (auto* obj = at->if_object()) {
            auto it = obj->find(tokens[i]);
            if (it == obj->end())
                return;
            at = &it->value();
        } else if (auto* arr = at->if_array()) {
            auto index = array_index(tokens[i]);
            if (!index || *index >= arr->size())
                return;
            at = &(*arr)[*index];
        } else {
            return;
        }
    }
    if (auto* obj = at->if_object()) {
        obj->erase(tokens.back());
    } else if (auto* arr = at->if_array()) {
        auto index = array_index(tokens.back());
        if (index && *index < arr->size())
            arr->erase(arr->begin() + static_cast<std::ptrdiff_t>(*index));
    }
}

// False when the document holds a number a double cannot represent (1e400): Boost.JSON reads it
// as infinity and would write "Infinity", which is not JSON and would make 1e400 and 2e400 one
// fingerprint; such a body is fingerprinted by its bytes instead.
bool write_canonical(const json::value& v, std::string& out)
{
    if (const auto* obj = v.if_object()) {
        std::vector<const json::key_value_pair*> members;
        members.reserve(obj->size());
        for (const auto& kv : *obj)
            members.push_back(&kv);
        std::sort(members.begin(), members.end(),
                  [](const auto* a, const auto* b) { return a->key() < b->key(); });
        out.push_back('{');
        for (std::size_t i = 0; i < members.size(); ++i) {
            if (i)
                out.push_back(',');
            out += json::serialize(json::string_view(members[i]->key()));
            out.push_back(':');
            if (!write_canonical(members[i]->value(), out))
                return false;
        }
        out.push_back('}');
    } else if (const auto* arr = v.if_array()) {
        out.push_back('[');
        for (std::size_t i = 0; i < arr->size(); ++i) {
            if (i)
                out.push_back(',');
            if (!write_canonical((*arr)[i], out))
                return false;
        }
        out.push_back(']');
    } else {
        if (v.is_double() && !std::isfinite(v.get_double()))
            return false;
        out += json::serialize(v);
    }
    return true;
}

} // namespace

std::string fingerprint(std::string_view method, std::string_view target, std::string_view body)
{
    sha256_hasher h;
    h.update(method);
    h.update("\n");
    h.update(target);
    h.update("\n");
    h.update(body);
    return h.hex();
}

std::optional<std::string> canonical_json(std::string_view body, const std::vector<std::string>& ignore)
{
    boost::system::error_code ec;
    json::value root = json::parse(json::string_view(body.data(), body.size()), ec);
    if (ec)
        return std::nullopt;
    for (const auto& pointer : ignore)
        remove_pointer(root, pointer);
    std::string out;
    out.reserve(body.size());
    if (!write_canonical(root, out))
        return std::nullopt;
    return out;
}

template<class Allocator>
std::string fingerprint(std::string_view method, std::string_view target, std::string_view body,
                        const config::fingerprint_config& options,
                        const boost::beast::http::basic_fields<Allocator>& fields)
{
    auto describe = options.describe();
    if (describe.empty())
        return fingerprint(method, target, body);
    sha256_hasher h;
    h.update_framed(describe);
    h.update_framed(method);
    h.update_framed(options.query ? target : target.substr(0, target.find('?')));
    for (const auto& name : options.headers) {
        auto range = fields.equal_range(name);
        std::size_t count = 0;
        for (auto it = range.first; it != range.second; ++it)
            ++count;
        h.update_framed(std::to_string(count));
        for (auto it = range.first; it != range.second; ++it)
            h.update_framed(it->value());
    }
    std::optional<std::string> canonical;
    if (options.json == config::json_mode::canonical)
        canonical = canonical_json(body, options.ignore_json_fields);
    h.update(canonical ? "j" : "r");
    h.update_framed(canonical ? std::string_view(*canonical) : body);
    return h.hex();
}

template std::string fingerprint(std::string_view, std::string_view, std::string_view,
                                 const config::fingerprint_config&, const boost::beast::http::fields&);
template std::string fingerprint(std::string_view, std::string_view, std::string_view,
                                 const config::fingerprint_config&, const pooled_fields&);

} // namespace idemgate::gateway
