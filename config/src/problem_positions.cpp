// SPDX-License-Identifier: Apache-2.0
// Where in the file a problem found after loading is (a name that does not resolve, a TLS file
// OpenSSL refuses, what the store does not offer): its key path looked up in the YAML, so every
// problem --check, start-up and a reload report carries the same FILE:LINE:COLUMN.
#include "idemgate/config/config.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <yaml-cpp/yaml.h>

namespace idemgate::config {

namespace {

bool is_path_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '[' || c == ']' || c == '"';
}

// The key path a problem starts with ("routes[0].idempotency.record_ttl: ..."), or "".
std::string_view path_of_problem(std::string_view problem)
{
    auto colon = problem.find(": ");
    if (colon == std::string_view::npos || colon == 0)
        return {};
    auto path = problem.substr(0, colon);
    for (char c : path)
        if (!is_path_char(c))
            return {};
    return path;
}

text_position position_of(const YAML::Mark& mark)
{
    if (mark.is_null())
        return {};
    return {mark.line + 1, mark.column + 1};
}

// The position of the key at `path`, or of its nearest written parent. A map's key may itself
// hold dots (a tenant, an upstream's name): the longest key that matches is taken.
text_position locate(const YAML::Node& root, std::string_view path)
{
    text_position found;
    YAML::Node node = root;
    while (!path.empty() && node.IsDefined()) {
        if (path.front() == '.') {
            path.remove_prefix(1);
            continue;
        }
        if (path.front() == '[') {
            auto close = path.find(']');
            if (close == std::string_view::npos || !node.IsSequence())
                break;
            std::size_t index = 0;
            for (char c : path.substr(1, close - 1))
                index = c >= '0' && c <= '9' ? index * 10 + static_cast<std::size_t>(c - '0') : node.size();
            if (index >= node.size())
                break;
            node.reset(node[index]);
            found = position_of(node.Mark());
            path.remove_prefix(close + 1);
            continue;
        }
        if (!node.IsMap())
            break;
        YAML::Node best_value;
        std::size_t best = 0;
        for (const auto& entry : node) {
            if (!entry.first.IsScalar())
                continue;
            std::string key = entry.first.Scalar();
            std::string quoted = "\"" + key + "\"";
            for (const auto& spelled : {key, quoted}) {
                if (spelled.size() <= best || !path.starts_with(spelled))
                    continue;
                auto next = path.size() == spelled.size() ? '.' : path[spelled.size()];
                if (next != '.' && next != '[')
                    continue;
                best = spelled.size();
                best_value.reset(entry.second);
                found = position_of(entry.first.Mark());
            }
        }
        if (best == 0)
            break;
        node.reset(best_value); // rebinds: yaml-cpp's operator= would overwrite the node's value
        path.remove_prefix(best);
    }
    return found;
}

} // namespace

std::vector<text_position> locate_problems(std::string_view yaml_text,
                                           const std::vector<std::string>& problems)
{
    std::vector<text_position> out(problems.size());
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml_text));
    } catch (const YAML::Exception&) {
        return out;
    }
    for (std::size_t i = 0; i < problems.size(); ++i)
        if (auto path = path_of_problem(problems[i]); !path.empty())
            out[i] = locate(root, path);
    return out;
}

std::vector<std::string> located_problems(const std::string& file, std::string_view yaml_text,
                                          const std::vector<std::string>& problems,
                                          std::vector<text_position> positions)
{
    positions.resize(problems.size());
    auto looked_up = locate_problems(yaml_text, problems);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < problems.size(); ++i) {
        auto at = positions[i].line > 0 ? positions[i] : looked_up[i];
        // FILE:LINE:COLUMN: as compilers write it, so editors jump to the key.
        if (at.line > 0)
            out.push_back(file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " +
                          problems[i]);
        else
            out.push_back(problems[i]);
    }
    return out;
}

} // namespace idemgate::config
