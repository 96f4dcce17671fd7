// SPDX-License-Identifier: Apache-2.0
#pragma once
// One host name looked up with the system resolver under a deadline. getaddrinfo cannot be
// cancelled: it runs on a thread of its own, which is left to finish alone past the deadline
// (a resolver that hangs costs one idle thread, never a stalled start, check or reload).
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace idemgate::gateway {

struct name_lookup {
    std::vector<boost::asio::ip::tcp::endpoint> endpoints; // every A/AAAA result
    std::string error;                                     // "" = found
};

// How long one lookup may take at start-up, in --check and on a reload.
inline constexpr std::chrono::milliseconds start_lookup_deadline{2000};

name_lookup lookup_name(const std::string& host, std::uint16_t port, std::chrono::milliseconds deadline);

} // namespace idemgate::gateway
