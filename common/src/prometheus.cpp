// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <idemgate/common/prometheus.hpp>

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

} // namespace idemgate::prometheus
