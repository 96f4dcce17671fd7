// SPDX-License-Identifier: Apache-2.0
// Private to the config library: the value checks parse_values.cpp defines and the loader, the
// YAML walk behind parse, load_file and load_text: a map's keys checked against the ones it
// knows, every problem collected with its key path and position. Which keys there are and what
// each one is are the key tables (keys.hpp); the kinds of value they read, kinds.hpp.
#pragma once

#include "idemgate/config/config.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace idemgate::config::detail {

// parse_values.cpp
std::optional<std::uint64_t> parse_decimal(std::string_view text);
bool is_digit(char c);
bool is_tenant_name(std::string_view text);
std::optional<double> parse_rate(std::string_view text);
bool is_token(std::string_view text);
// An RFC 6901 pointer to a field of a JSON document (not "", the whole document).
bool is_field_pointer(std::string_view text);
bool is_host_name_char(char c);
// Requests are matched on the normal form of their path (<idemgate/common/path_normal_form.hpp>),
// so a route's prefix spelled otherwise would match none of them: what is wrong with `prefix`
// (words to follow it quoted), or "" when it is in normal form.
std::string prefix_not_normal(std::string_view prefix);
bool is_ipv6_char(char c);

// parse_endpoint with the reason for a refusal, so a config problem can say what is wrong.
struct endpoint_check {
    std::optional<endpoint> value;
    std::string problem;
};

endpoint_check check_endpoint(std::string_view text);

// loader.cpp
const char* kind_name(const YAML::Node& node);
std::string quote(std::string_view text);
std::string child_path(const std::string& parent, std::string_view key);
// ` (did you mean "x"?)` for the known key closest to `key` within two edits, or "".
std::string did_you_mean(std::string_view key, std::span<const std::string_view> known);

// Walks the YAML tree once, filling the config and collecting every problem on the way, so the
// operator fixes a file in one round instead of one error per start (config messages).
class loader {
public:
    loader(std::string source, const char* (*getenv_fn)(const char*))
        : source_(std::move(source)), getenv_(getenv_fn)
    {
    }

    std::vector<std::string>& problems() { return problems_; }

    // A path written in the file: relative ones are relative to the folder of the file that names
    // them (as the file is read the same from any working directory), absolute ones are kept.
    std::string file_path(const std::string& written) const
    {
        if (written.empty() || written.front() == '/' || base_dir_.empty())
            return written;
        return base_dir_ + written;
    }
    void set_base_dir(std::string dir) { base_dir_ = std::move(dir); }
    std::vector<text_position>& positions() { return positions_; }

    // A problem at a key path; its position in the file is the key's, or its nearest parent's.
    void problem(const std::string& path, const std::string& message)
    {
        problems_.push_back((path.empty() ? source_ : path) + ": " + message);
        positions_.push_back(position_of(path));
    }

    // Where the key at `path` was written (map_view records every key it reads).
    void remember(const std::string& path, const YAML::Mark& mark)
    {
        if (!mark.is_null())
            marks_.emplace_back(path, text_position{mark.line + 1, mark.column + 1});
    }

    text_position position_of(std::string path) const;

    // The entries of one YAML map, checked against the keys this level knows.
    class map_view {
    public:
        map_view(loader& owner, const YAML::Node& node, std::string path,
                 std::span<const std::string_view> known)
            : path_(std::move(path))
        {
            if (!node.IsDefined() || node.IsNull())
                return;                         // `store:` with every child commented out: all defaults.
            owner.remember(path_, node.Mark()); // a list item's map has no key of its own
            if (!node.IsMap()) {
                is_map_ = false;
                owner.problem(path_, std::string("expected a map, got ") + kind_name(node));
                return;
            }
            for (const auto& entry : node) {
                if (!entry.first.IsScalar()) {
                    owner.problem(path_, "keys must be plain names");
                    continue;
                }
                const auto& key = entry.first.Scalar();
                auto key_path = child_path(path_, key);
                owner.remember(key_path, entry.first.Mark());
                if (find(key)) {
                    owner.problem(key_path, "duplicate key");
                    continue;
                }
                bool is_known = known.size() == 0;
                for (auto k : known)
                    is_known = is_known || k == key;
                if (!is_known) {
                    owner.problem(key_path, "unknown key" + did_you_mean(key, known));
                    continue;
                }
                entries_.emplace_back(key, entry.second);
            }
        }

        const std::string& path() const { return path_; }
        // False when the node was there but not a map (a problem already).
        bool is_map() const { return is_map_; }
        std::string path_of(std::string_view key) const { return child_path(path_, key); }
        const std::vector<std::pair<std::string, YAML::Node>>& entries() const { return entries_; }

        const YAML::Node* find(std::string_view key) const
        {
            for (const auto& [k, v] : entries_)
                if (k == key)
                    return &v;
            return nullptr;
        }

    private:
        std::string path_;
        bool is_map_ = true;
        std::vector<std::pair<std::string, YAML::Node>> entries_;
    };

    // The node at `key` of `map`, or an undefined node (a map with every key left out).
    static YAML::Node child(const map_view& map, std::string_view key)
    {
        const auto* node = map.find(key);
        return node ? *node : YAML::Node(YAML::NodeType::Undefined);
    }

    // The scalar text at `key`, or nullopt (absent, or wrong type, which is then a problem).
    std::optional<std::string> scalar(const map_view& map, std::string_view key, const char* expected)
    {
        const auto* node = map.find(key);
        if (!node)
            return std::nullopt;
        return scalar(*node, map.path_of(key), expected);
    }

    std::optional<std::string> scalar(const YAML::Node& node, const std::string& path, const char* expected)
    {
        if (!node.IsScalar()) {
            problem(path, std::string("expected ") + expected + ", got " + kind_name(node));
            return std::nullopt;
        }
        return node.Scalar();
    }

    // Reads the whole document into `cfg` (config_keys(), keys.hpp).
    void load(const YAML::Node& root, config& cfg);
    // The configuration being read, for a key that names something read before it (a route's
    // upstream).
    const config& so_far() const { return *cfg_; }

    // The value of an environment variable (secrets), or null when it is not set.
    const char* env(const std::string& name) const { return getenv_(name.c_str()); }

    // Where a file named by a key must be readable and not empty; a problem at `path` otherwise.
    void check_readable(const std::string& path, const std::string& file);

    // Lists of values (keys.hpp's a_list): the node at `path`, items checked one by one.
    void load_header_list(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    void load_methods(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    void load_header_patterns(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    void load_field_pointers(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    void load_status_list(const YAML::Node& node, const std::string& path, std::vector<unsigned>& out);
    void load_endpoint_list(const YAML::Node& node, const std::string& path, std::vector<endpoint>& out);
    static std::string lower_ascii(std::string_view text);

private:
    std::string source_;   // names the whole document when a problem has no key path
    std::string base_dir_; // the configuration file's folder with its '/' ("" = the working directory)
    const char* (*getenv_)(const char*);
    const config* cfg_ = nullptr;
    std::vector<std::string> problems_;
    std::vector<text_position> positions_;                     // one per problem
    std::vector<std::pair<std::string, text_position>> marks_; // key path, where it was written
};

} // namespace idemgate::config::detail
