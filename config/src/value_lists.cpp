// SPDX-License-Identifier: Apache-2.0
// The loader's lists of values (keys.hpp's a_list): each item checked, its problem at its index
// (`routes[0].idempotency.methods[1]`).
#include "loader.hpp"

#include <string>
#include <utility>

namespace idemgate::config::detail {

// RFC 6901: "" (the whole document) is not a field; every other pointer starts with '/', and '~'
// is only followed by 0 or 1.
bool is_field_pointer(std::string_view text)
{
    bool ok = !text.empty() && text.front() == '/';
    for (std::size_t k = 0; ok && k < text.size(); ++k)
        if (text[k] == '~')
            ok = k + 1 < text.size() && (text[k + 1] == '0' || text[k + 1] == '1');
    return ok;
}

// A list of header names (RFC 9110 tokens), without duplicates (case-insensitive).
void loader::load_header_list(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
{
    if (node.IsNull())
        return;
    if (!node.IsSequence()) {
        problem(path, std::string("expected a list, got ") + kind_name(node));
        return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "a header name");
        if (!text)
            continue;
        if (!is_token(*text)) {
            problem(item_path, quote(*text) + " is not a header name");
            continue;
        }
        bool seen = false;
        for (const auto& h : out)
            seen = seen || lower_ascii(h) == lower_ascii(*text);
        if (seen)
            problem(item_path, quote(*text) + " is listed twice");
        else
            out.push_back(std::move(*text));
    }
}

std::string loader::lower_ascii(std::string_view text)
{
    std::string out(text);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

void loader::load_methods(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
{
    if (!node.IsNull() && !node.IsSequence()) {
        problem(path, std::string("expected a list, got ") + kind_name(node));
        return;
    }
    if (node.IsNull() || node.size() == 0) {
        problem(path, "must not be empty");
        return;
    }
    std::vector<std::string> methods;
    bool ok = true;
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "an HTTP method");
        if (!text) {
            ok = false;
            continue;
        }
        if (!is_token(*text)) {
            problem(item_path, quote(*text) + " is not an HTTP method");
            ok = false;
            continue;
        }
        // Method names are case-sensitive on the wire (RFC 9110 9.1), but every standard one is
        // upper case and a lower-case entry in the file is a typo, not a custom method.
        for (auto& c : *text)
            if (c >= 'a' && c <= 'z')
                c = static_cast<char>(c - 'a' + 'A');
        bool seen = false;
        for (const auto& m : methods)
            seen = seen || m == *text;
        if (!seen)
            methods.push_back(std::move(*text));
    }
    if (ok)
        out = std::move(methods);
}

// Header names, each optionally ending in '*' (a prefix), without duplicates (case-insensitive).
void loader::load_header_patterns(const YAML::Node& node, const std::string& path,
                                  std::vector<std::string>& out)
{
    if (!node.IsNull() && !node.IsSequence()) {
        problem(path, std::string("expected a list, got ") + kind_name(node));
        return;
    }
    std::vector<std::string> patterns;
    bool ok = true;
    for (std::size_t i = 0; !node.IsNull() && i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "a header name");
        if (!text) {
            ok = false;
            continue;
        }
        std::string_view name(*text);
        if (!name.empty() && name.back() == '*')
            name.remove_suffix(1);
        if (!is_token(name) || name.find('*') != std::string_view::npos) {
            problem(item_path, quote(*text) + " is not a header name (a trailing * matches a prefix)");
            ok = false;
            continue;
        }
        bool seen = false;
        for (const auto& p : patterns)
            seen = seen || lower_ascii(p) == lower_ascii(*text);
        if (seen) {
            problem(item_path, quote(*text) + " is listed twice");
            ok = false;
            continue;
        }
        patterns.push_back(std::move(*text));
    }
    if (ok)
        out = std::move(patterns);
}

// JSON Pointers to fields (fingerprint.ignore_json_fields).
void loader::load_field_pointers(const YAML::Node& node, const std::string& path,
                                 std::vector<std::string>& out)
{
    if (!node.IsSequence()) {
        problem(path, std::string("expected a list, got ") + kind_name(node));
        return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "a JSON Pointer");
        if (!text)
            continue;
        if (!is_field_pointer(*text))
            problem(item_path, quote(*text) + " is not a JSON Pointer to a field (e.g. \"/client_sent_at\")");
        else
            out.push_back(std::move(*text));
    }
}

// host:port each (store.redis.nodes).
void loader::load_endpoint_list(const YAML::Node& node, const std::string& path, std::vector<endpoint>& out)
{
    if (!node.IsSequence()) {
        problem(path, std::string("expected a list of host:port, got ") + kind_name(node));
        return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "an endpoint (host:port)");
        if (!text)
            continue;
        auto checked = check_endpoint(*text);
        if (!checked.value)
            problem(item_path, checked.problem);
        else
            out.push_back(std::move(*checked.value));
    }
}

} // namespace idemgate::config::detail
