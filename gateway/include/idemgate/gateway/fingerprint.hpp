#pragma once
// Request fingerprint: SHA-256 over `method \n path-with-query \n decoded-body`, lower-case hex.
#include <string>
#include <string_view>

namespace idemgate::gateway {

std::string fingerprint(std::string_view method, std::string_view target, std::string_view body);

} // namespace idemgate::gateway
