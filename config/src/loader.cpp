// SPDX-License-Identifier: Apache-2.0
#include "keys.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace idemgate::config::detail {

const char* kind_name(const YAML::Node& node)
{
    switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "nothing";
    }
}

std::string quote(std::string_view text)
{
    // Built with +=: GCC 12 warns falsely (-Wrestrict) on "..." + std::string(...) once inlined.
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return out;
}

std::string child_path(const std::string& parent, std::string_view key)
{
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

namespace {

// Optimal string alignment distance (Levenshtein with adjacent transpositions), capped: the
// keys are short and only distances up to 2 matter.
std::size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

} // namespace

std::string did_you_mean(std::string_view key, std::span<const std::string_view> known)
{
    std::string_view best;
    std::size_t best_distance = 3;
    for (auto k : known) {
        auto distance = edit_distance(key, k);
        if (distance < best_distance) {
            best = k;
            best_distance = distance;
        }
    }
    return best.empty() ? std::string() : " (did you mean " + quote(best) + "?)";
}

text_position loader::position_of(std::string path) const
{
    // The key itself, or the nearest parent that was written ("routes[0].x" -> "routes[0]" ->
    // "routes").
    while (!path.empty()) {
        for (auto it = marks_.rbegin(); it != marks_.rend(); ++it)
            if (it->first == path)
                return it->second;
        auto cut = path.find_last_of(".[");
        if (cut == std::string::npos)
            break;
        path.resize(cut);
    }
    return {};
}

void loader::load(const YAML::Node& root, config& cfg)
{
    cfg_ = &cfg;
    config_keys().read(*this, root, "", cfg, true); // a document that is not a map: nothing to read
}

void loader::check_readable(const std::string& path, const std::string& file)
{
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
    char byte = 0;
    if (!f || (std::fread(&byte, 1, 1, f.get()) != 1 && std::ferror(f.get()))) {
        problem(path, "cannot read " + quote(file) + ": " + std::strerror(errno));
        return;
    }
    if (std::feof(f.get()))
        problem(path, quote(file) + " is empty");
}

} // namespace idemgate::config::detail

namespace idemgate::config {

std::string print_config(const config& c)
{
    YAML::Emitter out;
    detail::config_keys().print(out, c);
    return std::string(out.c_str()) + "\n";
}

std::vector<key_description> describe_keys()
{
    std::vector<key_description> out;
    detail::config_keys().list("", false, out);
    return out;
}

} // namespace idemgate::config
