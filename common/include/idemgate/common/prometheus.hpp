#pragma once
// Prometheus text exposition: the lines every /metrics writer (the gateway, the store backends,
// histograms) appends.
#include <string>
#include <string_view>

namespace idemgate::prometheus {

// Appends `name{labels} value\n` (labels may be empty).
void sample(std::string& out, std::string_view name, std::string_view labels, double value);

// Appends the # HELP and # TYPE lines.
void header(std::string& out, std::string_view name, std::string_view type, std::string_view help);

} // namespace idemgate::prometheus
