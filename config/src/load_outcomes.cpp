// SPDX-License-Identifier: Apache-2.0
// What a route does with each upstream answer: routes[].idempotency.on_status,
// replay_drop_headers and reconcile.
#include "loader.hpp"

#include <algorithm>
#include <string>

namespace idemgate::config::detail {

namespace {

// "429" -> 429; "5xx" (or "5XX") -> 5, as a class; anything else -> 0.
struct status_key {
    unsigned code = 0;
    unsigned status_class = 0;
};

status_key parse_status_key(std::string_view text)
{
    if (text.size() != 3 || text[0] < '1' || text[0] > '5')
        return {};
    if ((text[1] == 'x' || text[1] == 'X') && (text[2] == 'x' || text[2] == 'X'))
        return {0, static_cast<unsigned>(text[0] - '0')};
    if (!is_digit(text[1]) || !is_digit(text[2]))
        return {};
    return {static_cast<unsigned>((text[0] - '0') * 100 + (text[1] - '0') * 10 + (text[2] - '0')), 0};
}

// The problem with a reconcile path's placeholders, or "" when it is usable: it starts with '/',
// has at least one placeholder, and each is {key}, {tenant} or {json:<pointer to a field>}.
std::string reconcile_path_problem(std::string_view path)
{
    if (path.empty() || path.front() != '/')
        return "must start with '/'";
    bool any = false;
    for (std::size_t i = 0; i < path.size(); ++i) {
        auto c = static_cast<unsigned char>(path[i]);
        if (c <= 0x20 || c >= 0x7f || c == '#')
            return "must be visible ASCII without '#'";
        if (c == '}')
            return "has a '}' that closes no placeholder";
        if (c != '{')
            continue;
        auto end = path.find('}', i);
        if (end == std::string_view::npos)
            return "has a '{' that is never closed";
        auto name = path.substr(i + 1, end - i - 1);
        if (name.find('{') != std::string_view::npos)
            return "has a '{' inside a placeholder";
        if (name.starts_with("json:")) {
            if (!is_field_pointer(name.substr(5)))
                return "placeholder {" + std::string(name) +
                       "} does not name a JSON Pointer to a field (e.g. {json:/client_ref})";
        } else if (name != "key" && name != "tenant") {
            return "unknown placeholder {" + std::string(name) +
                   "} (use {key}, {tenant} or {json:<JSON Pointer>})";
        }
        any = true;
        i = end;
    }
    if (!any)
        return "has no placeholder: every held key would probe the same resource (use {key}, {tenant} or "
               "{json:<JSON Pointer>})";
    return {};
}

} // namespace

// A list of status codes 100-599, without duplicates.
void loader::load_status_list(const map_view& map, std::string_view key, std::vector<unsigned>& out)
{
    const auto* node = map.find(key);
    if (!node)
        return;
    auto path = map.path_of(key);
    if (!node->IsSequence() || node->size() == 0) {
        problem(path, node->IsSequence() ? std::string("must not be empty")
                                         : std::string("expected a list, got ") + kind_name(*node));
        return;
    }
    std::vector<unsigned> codes;
    for (std::size_t i = 0; i < node->size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar((*node)[i], item_path, "a status code");
        if (!text)
            return;
        auto parsed = parse_status_key(*text);
        if (parsed.code == 0) {
            problem(item_path, quote(*text) + " is not a status code (100-599)");
            return;
        }
        if (std::find(codes.begin(), codes.end(), parsed.code) != codes.end()) {
            problem(item_path, quote(*text) + " is listed twice");
            return;
        }
        codes.push_back(parsed.code);
    }
    out = std::move(codes);
}

void loader::load_reconcile(const YAML::Node& node, const std::string& path, const idempotency_config& idem,
                            reconcile_config& out)
{
    map_view map(*this, node, path,
                 {"path", "method", "after", "every", "give_up_after", "found", "not_found"});
    read_string(map, "path", out.path);
    if (auto text = scalar(map, "method", "an HTTP method")) {
        if (!is_token(*text))
            problem(map.path_of("method"), quote(*text) + " is not an HTTP method");
        else
            out.method = std::move(*text);
    }
    read_duration(map, "after", out.after, true);
    read_duration(map, "every", out.every);
    read_duration(map, "give_up_after", out.give_up_after);
    load_status_list(map, "found", out.found);
    load_status_list(map, "not_found", out.not_found);
    if (out.path.empty())
        return;
    if (auto why = reconcile_path_problem(out.path); !why.empty())
        problem(map.path_of("path"), quote(out.path) + " " + why);
    for (auto code : out.found)
        if (std::find(out.not_found.begin(), out.not_found.end(), code) != out.not_found.end())
            problem(map.path_of("not_found"), std::to_string(code) + " is also in found");
    bool can_hold = idem.on_unknown_outcome == unknown_outcome_mode::hold;
    for (unsigned status = 100; status < 600 && !can_hold; ++status)
        can_hold = idem.on_status.action_for(status) == status_action::hold;
    if (!can_hold)
        problem(map.path_of("path"), "nothing on this route holds a key (set on_unknown_outcome: hold or an "
                                     "on_status entry to hold)");
}

// Entries over the defaults: "5xx": hold changes the class and keeps "429": release, since a
// code beats its class.
void loader::load_on_status(const YAML::Node& node, const std::string& path, status_policy& out)
{
    map_view map(*this, node, path, {});
    auto classes = status_policy::default_classes;
    auto codes = status_policy::default_codes();
    for (const auto& [key, value] : map.entries()) {
        auto entry_path = path + ".\"" + key + "\"";
        remember(entry_path, value.Mark()); // a problem's line and column: the entry's value
        auto parsed = parse_status_key(key);
        if (parsed.code == 0 && parsed.status_class == 0) {
            problem(entry_path, "unknown status " + quote(key) +
                                    " (use a status code 100-599, e.g. \"429\", or a class, e.g. \"5xx\")");
            continue;
        }
        auto text = scalar(value, entry_path, "an action");
        if (!text)
            continue;
        status_action action;
        if (*text == "record")
            action = status_action::record;
        else if (*text == "release")
            action = status_action::release;
        else if (*text == "hold")
            action = status_action::hold;
        else {
            problem(entry_path, "unknown action " + quote(*text) + " (use record, release or hold)");
            continue;
        }
        if (parsed.status_class)
            classes[parsed.status_class - 1] = action;
        else
            codes[parsed.code] = action;
    }
    out.resolve(classes, codes);
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

} // namespace idemgate::config::detail
