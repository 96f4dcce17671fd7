// What a route does with each upstream answer: routes[].idempotency.on_status and
// replay_drop_headers.
#include "loader.hpp"

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

} // namespace

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
