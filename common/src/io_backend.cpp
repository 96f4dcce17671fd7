// SPDX-License-Identifier: Apache-2.0
#include <idemgate/common/io_backend.hpp>

#ifdef IDEMGATE_IO_URING
#include <cstring>
#include <liburing.h>
#endif

namespace idemgate {

std::string_view io_backend_name() noexcept
{
#ifdef IDEMGATE_IO_URING
    return "io_uring";
#else
    return "epoll";
#endif
}

std::optional<std::string> io_backend_probe()
{
#ifdef IDEMGATE_IO_URING
    io_uring ring;
    int rc = io_uring_queue_init(8, &ring, 0);
    if (rc < 0) {
        return std::string("this build uses io_uring (IDEMGATE_IO_URING=ON) and io_uring_setup failed: ") +
               std::strerror(-rc) +
               (rc == -EPERM || rc == -ENOSYS ? " (a seccomp profile, e.g. a container runtime's default, or "
                                                "kernel.io_uring_disabled, refuses it)"
                                              : "") +
               "; run the default (epoll) build here";
    }
    io_uring_queue_exit(&ring);
#endif
    return std::nullopt;
}

} // namespace idemgate
