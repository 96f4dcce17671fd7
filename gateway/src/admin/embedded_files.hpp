// SPDX-License-Identifier: Apache-2.0
#pragma once
// The console's files (gateway/src/admin/console/), embedded at build time by
// cmake/embed_files.cmake: the gateway serves them from memory, with nothing to install beside it.
#include <string_view>
#include <vector>

namespace idemgate::gateway::detail {

struct embedded_file {
    std::string_view name; // "index.html", "console.js", ...
    std::string_view content;
};

const std::vector<embedded_file>& embedded_files();

} // namespace idemgate::gateway::detail
