// SPDX-License-Identifier: Apache-2.0
// What a route does with each upstream answer (keys.hpp): routes[].idempotency.on_status and
// reconcile.
#include "keys.hpp"

#include <algorithm>
#include <boost/describe/enum_from_string.hpp>
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

std::string method_problem(std::string_view text)
{
    return is_token(text) ? std::string() : quote(text) + " is not an HTTP method";
}

} // namespace

// A list of status codes 100-599, without duplicates.
void loader::load_status_list(const YAML::Node& node, const std::string& path, std::vector<unsigned>& out)
{
    if (!node.IsSequence() || node.size() == 0) {
        problem(path, node.IsSequence() ? std::string("must not be empty")
                                        : std::string("expected a list, got ") + kind_name(node));
        return;
    }
    std::vector<unsigned> codes;
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto item_path = path + "[" + std::to_string(i) + "]";
        auto text = scalar(node[i], item_path, "a status code");
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

const section<reconcile_config>& reconcile_keys()
{
    using r = reconcile_config;
    static const section<r> keys{
        {
            {"path", &r::path, a_string{.quoted = true}},
            {"method", &r::method, a_string{.expected = "an HTTP method", .problem = method_problem}},
            {"after", &r::after, a_duration{.zero = true}},
            {"every", &r::every, a_duration{}},
            {"give_up_after", &r::give_up_after, a_duration{}},
            {"found", &r::found, a_list{&loader::load_status_list}},
            {"not_found", &r::not_found, a_list{&loader::load_status_list}},
        },
        [](loader& l, const map_view& map, r& out) {
            if (out.path.empty())
                return;
            if (auto why = reconcile_path_problem(out.path); !why.empty())
                l.problem(map.path_of("path"), quote(out.path) + " " + why);
            for (auto code : out.found)
                if (std::find(out.not_found.begin(), out.not_found.end(), code) != out.not_found.end())
                    l.problem(map.path_of("not_found"), std::to_string(code) + " is also in found");
        }};
    return keys;
}

// A probe resolves a held key: something on the route must hold one.
void reconcile_holds(loader& l, const map_view& map, idempotency_config& idem)
{
    if (idem.reconcile.path.empty())
        return;
    bool can_hold = idem.on_unknown_outcome == unknown_outcome_mode::hold;
    for (unsigned status = 100; status < 600 && !can_hold; ++status)
        can_hold = idem.on_status.action_for(status) == status_action::hold;
    if (!can_hold)
        l.problem(map.path_of("reconcile") + ".path",
                  "nothing on this route holds a key (set on_unknown_outcome: "
                  "hold or an on_status entry to hold)");
}

// Entries over the defaults: "5xx": hold changes the class and keeps "429": release, since a
// code beats its class.
void status_map::read(loader& l, const map_view& m, std::string_view k, status_policy& out) const
{
    if (!m.find(k))
        return;
    auto path = m.path_of(k);
    map_view map(l, *m.find(k), path, {});
    auto classes = status_policy::default_classes;
    auto codes = status_policy::default_codes();
    for (const auto& [key, value] : map.entries()) {
        auto entry_path = path + ".\"" + key + "\"";
        l.remember(entry_path, value.Mark()); // a problem's line and column: the entry's value
        auto parsed = parse_status_key(key);
        if (parsed.code == 0 && parsed.status_class == 0) {
            l.problem(entry_path, "unknown status " + quote(key) +
                                      " (use a status code 100-599, e.g. \"429\", or a class, e.g. \"5xx\")");
            continue;
        }
        auto text = l.scalar(value, entry_path, "an action");
        if (!text)
            continue;
        status_action action;
        if (!boost::describe::enum_from_string(text->c_str(), action)) {
            l.problem(entry_path, "unknown action " + quote(*text) + " (use record, release or hold)");
            continue;
        }
        if (parsed.status_class)
            classes[parsed.status_class - 1] = action;
        else
            codes[parsed.code] = action;
    }
    out.resolve(classes, codes);
}

// Each class, then every code whose action differs from its class's.
void status_map::print(YAML::Emitter& out, const status_policy& policy) const
{
    out << YAML::BeginMap;
    for (unsigned c = 1; c <= 5; ++c) {
        out << YAML::Key << YAML::DoubleQuoted << (std::to_string(c) + "xx");
        out << YAML::Value << boost::describe::enum_to_string(policy.class_action(c), "");
    }
    for (unsigned status = 100; status < 600; ++status) {
        auto action = policy.action_for(status);
        if (action == policy.class_action(status / 100))
            continue;
        out << YAML::Key << YAML::DoubleQuoted << std::to_string(status);
        out << YAML::Value << boost::describe::enum_to_string(action, "");
    }
    out << YAML::EndMap;
}

void status_map::list(const std::string& path, bool restart, std::vector<key_description>& out) const
{
    out.push_back({path + ".<status>", restart});
}

} // namespace idemgate::config::detail
