// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pieces --print-config is written with (print_config.cpp): value spellings the loader reads
// back, and the store block.
#include "idemgate/config/config.hpp"

#include <yaml-cpp/yaml.h>

namespace idemgate::config::print {

// The largest unit that divides exactly: 86400000 -> "1d", 1500 -> "1500ms".
std::string duration_text(duration d);
std::string size_text(std::size_t n);
std::string endpoint_text(const endpoint& e);
std::string number_text(double v);
void key(YAML::Emitter& out, const char* name);
void string_list(YAML::Emitter& out, const std::vector<std::string>& items);
void client_tls(YAML::Emitter& out, const client_tls_config& t);
void store(YAML::Emitter& out, const store_config& s);

} // namespace idemgate::config::print
