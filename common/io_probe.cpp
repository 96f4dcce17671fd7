// SPDX-License-Identifier: Apache-2.0
// idemgate-io-probe: exits 0 when Asio's io_uring backend could run here (io_uring_setup is
// allowed by the kernel and any seccomp profile), 1 with the reason otherwise. scripts/test.sh
// asks it before building the io_uring variant; operators can ask it before deploying one.
#include <cstdio>
#include <idemgate/common/io_backend.hpp>

int main()
{
    if (auto why = idemgate::io_backend_probe()) {
        std::fprintf(stderr, "idemgate-io-probe: %s\n", why->c_str());
        return 1;
    }
    std::printf("idemgate-io-probe: io_uring available\n");
    return 0;
}
