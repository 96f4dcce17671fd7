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

} // namespace idemgate::prometheus
