// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <cstdio>
#include <cstdlib>
#include <idemgate/common/prometheus.hpp>
#include <idemgate/common/text.hpp>
#include <set>

namespace idemgate::prometheus {

void sample(std::string& out, std::string_view name, std::string_view labels, double value)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    out.append(name);
    if (!labels.empty()) {
        out.push_back('{');
        out.append(labels);
        out.push_back('}');
    }
    out.push_back(' ');
    out.append(buf);
    out.push_back('\n');
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help)
{
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

std::string label_value(std::string_view value)
{
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\' || c == '"')
            out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out;
}

namespace {

std::string_view next_line(std::string_view& text)
{
    auto end = text.find('\n');
    auto line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return line;
}

} // namespace

exposition negotiate(std::string_view accept)
{
    // The highest q of each format's media ranges (RFC 9110 12.5.1); OpenMetrics in the versions
    // this answer is (1.0.0) or that Prometheus reads the same way (0.0.1).
    double openmetrics_q = 0, text_q = 0;
    while (!accept.empty()) {
        auto comma = accept.find(',');
        auto range = accept.substr(0, comma);
        accept.remove_prefix(comma == std::string_view::npos ? accept.size() : comma + 1);
        auto semi = range.find(';');
        auto type = trim_ows(range.substr(0, semi));
        double q = 1;
        std::string_view version;
        while (semi != std::string_view::npos) {
            range.remove_prefix(semi + 1);
            semi = range.find(';');
            auto param = trim_ows(range.substr(0, semi));
            auto eq = param.find('=');
            if (eq == std::string_view::npos)
                continue;
            auto name = trim_ows(param.substr(0, eq));
            auto value = trim_ows(param.substr(eq + 1));
            if (boost::beast::iequals(name, "q"))
                q = std::strtod(std::string(value).c_str(), nullptr);
            else if (boost::beast::iequals(name, "version"))
                version = value;
        }
        if (boost::beast::iequals(type, "application/openmetrics-text")) {
            if (version.empty() || version == "1.0.0" || version == "0.0.1")
                openmetrics_q = std::max(openmetrics_q, q);
        } else if (boost::beast::iequals(type, "text/plain") || boost::beast::iequals(type, "text/*") ||
                   boost::beast::iequals(type, "*/*")) {
            text_q = std::max(text_q, q);
        }
    }
    return openmetrics_q > 0 && openmetrics_q >= text_q ? exposition::openmetrics : exposition::text;
}

std::string_view content_type(exposition format)
{
    return format == exposition::openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                             : "text/plain; version=0.0.4; charset=utf-8";
}

std::string to_openmetrics(std::string_view text)
{
    // The counter families first: their HELP line comes before the TYPE line that says so.
    std::set<std::string_view> counters;
    for (auto rest = text; !rest.empty();) {
        auto line = next_line(rest);
        if (line.starts_with("# TYPE ") && line.ends_with(" counter"))
            counters.insert(line.substr(7, line.size() - 7 - 8));
    }
    auto family_name = [&](std::string_view name) {
        return counters.contains(name) && name.ends_with("_total") ? name.substr(0, name.size() - 6) : name;
    };
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    std::string_view family, type;
    for (auto rest = text; !rest.empty();) {
        auto line = next_line(rest);
        if (line.empty())
            continue;
        if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
            auto body = line.substr(7);
            auto space = body.find(' ');
            auto name = body.substr(0, space);
            auto value = space == std::string_view::npos ? std::string_view{} : body.substr(space + 1);
            out.append(line.substr(0, 7)).append(family_name(name)).push_back(' ');
            if (line[2] == 'T') {
                family = name;
                type = value;
                out.append(value == "untyped" ? std::string_view("unknown") : value);
            } else {
                // OpenMetrics escapes `"` in HELP too; `\` and `\n` come escaped already.
                for (std::size_t i = 0; i < value.size(); ++i) {
                    if (value[i] == '\\' && i + 1 < value.size()) {
                        out.push_back(value[i]);
                        out.push_back(value[++i]);
                        continue;
                    }
                    if (value[i] == '"')
                        out.push_back('\\');
                    out.push_back(value[i]);
                }
            }
            out.push_back('\n');
            continue;
        }
        if (line.front() == '#')
            continue; // another comment: OpenMetrics has none
        auto name_end = line.find_first_of("{ ");
        auto name = line.substr(0, name_end);
        out.append(name);
        if (type == "counter" && name == family && !name.ends_with("_total"))
            out.append("_total");
        auto rest_of_line = line.substr(name.size());
        // le="1" as le="1.0": OpenMetrics asks for canonical numbers in le.
        if (type == "histogram") {
            if (auto le = rest_of_line.find("le=\""); le != std::string_view::npos) {
                auto start = le + 4;
                auto end = rest_of_line.find('"', start);
                auto value = rest_of_line.substr(start, end - start);
                out.append(rest_of_line.substr(0, end));
                if (value.find_first_of(".eEIN") == std::string_view::npos)
                    out.append(".0");
                rest_of_line.remove_prefix(end);
            }
        }
        out.append(rest_of_line).push_back('\n');
    }
    out.append("# EOF\n");
    return out;
}

} // namespace idemgate::prometheus
