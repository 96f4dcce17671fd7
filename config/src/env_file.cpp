// SPDX-License-Identifier: Apache-2.0
// idemgate --env-file: the variables of a file in systemd's EnvironmentFile= format, so that a
// check or a start by hand sees what the service sees (systemd.exec(5), "EnvironmentFile=").
#include "idemgate/config/config.hpp"

#include <string>
#include <string_view>

namespace idemgate::config {

namespace {

bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

bool is_name(std::string_view name)
{
    if (name.empty() || (name.front() >= '0' && name.front() <= '9'))
        return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    return true;
}

std::string_view trimmed(std::string_view s)
{
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

} // namespace

std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text,
                                                                const std::string& file)
{
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t line_number = 0;
    while (!text.empty()) {
        // One logical line: a backslash at the end of a line joins the next (outside quotes).
        auto first_line = ++line_number;
        std::string line;
        for (;;) {
            auto end = text.find('\n');
            auto part = text.substr(0, end);
            text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
            if (!part.empty() && part.back() == '\r')
                part.remove_suffix(1);
            auto bare = trimmed(part);
            bool comment = line.empty() && (bare.empty() || bare.front() == '#' || bare.front() == ';');
            if (!comment && !part.empty() && part.back() == '\\' && !text.empty()) {
                line.append(part.substr(0, part.size() - 1));
                ++line_number;
                continue;
            }
            if (!comment)
                line.append(part);
            break;
        }
        auto content = trimmed(line);
        if (content.empty())
            continue;
        auto at = file + ":" + std::to_string(first_line) + ": ";
        auto eq = content.find('=');
        auto name = trimmed(content.substr(0, eq));
        if (eq == std::string_view::npos || !is_name(name))
            throw config_error({at + "expected NAME=value (a variable name of letters, digits and '_')"});
        auto raw = trimmed(content.substr(eq + 1));
        std::string value;
        if (!raw.empty() && (raw.front() == '"' || raw.front() == '\'')) {
            char quote = raw.front();
            std::size_t i = 1;
            for (; i < raw.size() && raw[i] != quote; ++i) {
                // In double quotes a backslash keeps the next character as it is (\" \\ \$ \`).
                if (quote == '"' && raw[i] == '\\' && i + 1 < raw.size())
                    ++i;
                value += raw[i];
            }
            if (i >= raw.size())
                throw config_error({at + "a quoted value is not closed"});
            if (!trimmed(raw.substr(i + 1)).empty())
                throw config_error({at + "text after the closing quote"});
        } else {
            value = raw;
        }
        out.emplace_back(std::string(name), std::move(value));
    }
    return out;
}

} // namespace idemgate::config
