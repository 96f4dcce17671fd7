// SPDX-License-Identifier: Apache-2.0
#include "upstream/name_lookup.hpp"

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <netdb.h>
#include <sys/socket.h>
#include <system_error>
#include <thread>

namespace idemgate::gateway {

name_lookup lookup_name(const std::string& host, std::uint16_t port, std::chrono::milliseconds deadline)
{
    struct shared {
        std::mutex mutex;
        std::condition_variable done_cv;
        bool done = false;
        name_lookup result;
    };
    auto state = std::make_shared<shared>();
    try {
        std::thread([state, host, port] {
            addrinfo hints{};
            hints.ai_family = AF_UNSPEC;
            hints.ai_socktype = SOCK_STREAM;
            hints.ai_flags = AI_ADDRCONFIG;
            addrinfo* list = nullptr;
            int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
            name_lookup found;
            if (rc != 0) {
                found.error = ::gai_strerror(rc);
            } else {
                for (auto* a = list; a; a = a->ai_next) {
                    boost::asio::ip::tcp::endpoint ep;
                    if (a->ai_addrlen > ep.capacity())
                        continue;
                    std::memcpy(ep.data(), a->ai_addr, a->ai_addrlen);
                    ep.resize(a->ai_addrlen);
                    found.endpoints.push_back(ep);
                }
                ::freeaddrinfo(list);
            }
            std::lock_guard lock(state->mutex);
            state->result = std::move(found);
            state->done = true;
            state->done_cv.notify_all();
        }).detach();
    } catch (const std::system_error& e) {
        return {{}, std::string("cannot start a lookup: ") + e.what()};
    }
    std::unique_lock lock(state->mutex);
    if (!state->done_cv.wait_for(lock, deadline, [&] { return state->done; }))
        return {{}, "no answer within " + std::to_string(deadline.count()) + "ms"};
    return std::move(state->result);
}

} // namespace idemgate::gateway
