// SPDX-License-Identifier: Apache-2.0
#include "idempotency/json_tree.hpp"

#include <algorithm>
#include <array>
#include <boost/json/serializer.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/fingerprint.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <memory>
#include <openssl/evp.h>
#include <optional>
#include <string>
#include <vector>

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

// The child of the container at `at` that `token` names, among those not removed: of a duplicate
// key the last, the one a reader takes.
std::optional<std::uint32_t> live_child(const json_tree& tree, std::uint32_t at, const std::string& token)
{
    const auto& container = tree.nodes[at];
    std::optional<std::uint32_t> found;
    std::optional<std::size_t> index;
    if (container.type == json_node::kind::array)
        index = array_index(token);
    else if (container.type != json_node::kind::object)
        return found;
    for (std::uint32_t c = at + 1; c < container.end; c = tree.nodes[c].end) {
        if (tree.nodes[c].removed)
            continue;
        if (container.type == json_node::kind::object) {
            if (tree.key(tree.nodes[c]) == token)
                found = c;
        } else if (index && (*index)-- == 0) {
            return c;
        }
    }
    return found;
}

// Removes the value `pointer` names, as erasing it from Boost.JSON's DOM would: every duplicate
// of a key goes, and a removed array element shifts the indices after it.
void remove_pointer(json_tree& tree, std::string_view pointer)
{
    auto tokens = pointer_tokens(pointer);
    if (tokens.empty() || tree.nodes.empty())
        return;
    std::uint32_t at = 0;
    for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        auto next = live_child(tree, at, tokens[i]);
        if (!next)
            return;
        at = *next;
    }
    const auto& container = tree.nodes[at];
    if (container.type == json_node::kind::object) {
        for (std::uint32_t c = at + 1; c < container.end; c = tree.nodes[c].end)
            if (tree.key(tree.nodes[c]) == tokens.back())
                tree.nodes[c].removed = true;
    } else if (auto element = live_child(tree, at, tokens.back())) {
        tree.nodes[*element].removed = true;
    }
}

// The canonical text: members sorted by their keys' bytes (of a duplicate key the last, as
// Boost.JSON keeps it), no insignificant whitespace, strings escaped as Boost.JSON serialises
// them, every number exactly as the client wrote it. A number is never read as a double, so
// digits beyond 64 bits, a fraction's spelling and a number beyond a double's range (1e400) all
// stay; 1, 1.0, 1e0 and -0 against 0 are different requests (a false mismatch is the safe side).
class canonical_writer {
public:
    canonical_writer(const json_tree& tree, std::string& out) : tree_(tree), out_(out) {}

    void write(std::uint32_t at)
    {
        const auto& n = tree_.nodes[at];
        switch (n.type) {
        case json_node::kind::object: write_object(at); break;
        case json_node::kind::array: {
            out_.push_back('[');
            bool first = true;
            for (std::uint32_t c = at + 1; c < n.end; c = tree_.nodes[c].end) {
                if (tree_.nodes[c].removed)
                    continue;
                if (!first)
                    out_.push_back(',');
                first = false;
                write(c);
            }
            out_.push_back(']');
            break;
        }
        case json_node::kind::string: write_string(tree_.text_of(n)); break;
        case json_node::kind::number: out_ += tree_.text_of(n); break;
        case json_node::kind::true_: out_ += "true"; break;
        case json_node::kind::false_: out_ += "false"; break;
        case json_node::kind::null: out_ += "null"; break;
        }
    }

private:
    void write_object(std::uint32_t at)
    {
        // The members of every open object share one list: this one's are [first, last).
        const auto& n = tree_.nodes[at];
        std::size_t first = members_.size();
        for (std::uint32_t c = at + 1; c < n.end; c = tree_.nodes[c].end)
            if (!tree_.nodes[c].removed)
                members_.push_back(c);
        std::size_t last = members_.size();
        auto key_of = [this](std::uint32_t c) { return tree_.key(tree_.nodes[c]); };
        std::stable_sort(members_.begin() + static_cast<std::ptrdiff_t>(first), members_.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return key_of(a) < key_of(b); });
        out_.push_back('{');
        bool written = false;
        for (std::size_t i = first; i < last; ++i) {
            if (i + 1 < last && key_of(members_[i]) == key_of(members_[i + 1]))
                continue; // a later duplicate of this key follows
            if (written)
                out_.push_back(',');
            written = true;
            write_string(key_of(members_[i]));
            out_.push_back(':');
            write(members_[i]);
        }
        out_.push_back('}');
        members_.resize(first);
    }

    void write_string(std::string_view s)
    {
        json::string_view view(s.data(), s.size());
        serializer_.reset(view);
        char buffer[256];
        while (!serializer_.done()) {
            auto part = serializer_.read(buffer, sizeof buffer);
            out_.append(part.data(), part.size());
        }
    }

    const json_tree& tree_;
    std::string& out_;
    std::vector<std::uint32_t> members_;
    json::serializer serializer_;
};

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
    unsigned char arena[4096];
    std::pmr::monotonic_buffer_resource resource(arena, sizeof arena);
    json_tree tree(&resource);
    if (!read_json(body, tree))
        return std::nullopt;
    for (const auto& pointer : ignore)
        remove_pointer(tree, pointer);
    std::string out;
    out.reserve(body.size());
    canonical_writer(tree, out).write(0);
    return out;
}

template<class Fields>
std::string fingerprint(fingerprint_input request, const config::fingerprint_config& options,
                        const Fields& fields)
{
    const auto method = request.method;
    const auto target = request.target;
    const auto body = request.body;
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

std::string fingerprint(fingerprint_input request, const config::fingerprint_config& options,
                        const boost::beast::http::fields& fields)
{
    return fingerprint<boost::beast::http::fields>(request, options, fields);
}

std::string fingerprint(fingerprint_input request, const config::fingerprint_config& options,
                        const span_fields& fields)
{
    return fingerprint<span_fields>(request, options, fields);
}

} // namespace idemgate::gateway
