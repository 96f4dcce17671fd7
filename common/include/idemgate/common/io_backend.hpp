// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which Asio reactor this binary was built with (epoll by default, io_uring with
// -DIDEMGATE_IO_URING=ON), and a start-up probe for the latter: Asio's io_uring backend has no
// fallback, so a kernel or seccomp profile that refuses io_uring must be caught before any
// io_context exists, with a message that says what to do.
#include <optional>
#include <string>
#include <string_view>

namespace idemgate {

// "epoll" or "io_uring".
std::string_view io_backend_name() noexcept;

// nullopt when the backend can be used here; otherwise why not (io_uring only).
std::optional<std::string> io_backend_probe();

} // namespace idemgate
