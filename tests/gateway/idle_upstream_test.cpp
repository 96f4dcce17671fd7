// SPDX-License-Identifier: Apache-2.0
// A pooled upstream connection that something happened to while idle: the upstream closed it (a
// FIN) or sent bytes nobody asked for. Once the gateway's event loop has had the chance to see it,
// a POST never goes out on it: it takes a new connection, runs once and is answered. A connection
// nothing happened to is reused. A raw upstream stands in, so that the test knows on which
// connection each request arrived and when its FIN or bytes reached the gateway's kernel.
#include "gateway_fixture.hpp"
#include "idemgate/test/raw_server.hpp"

#include <cctype>
#include <doctest/doctest.h>
#include <linux/sockios.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <vector>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// An HTTP/1.1 upstream on 127.0.0.1 that answers every request 201 with {"key":"<its
// Idempotency-Key>"} and keeps the connection, remembering on which connection (1, 2, ... in the
// order accepted) each key arrived.
class keepalive_upstream {
public:
    std::uint16_t port() const { return server_.port(); }

    // The connections a key arrived on, in order (one entry per execution).
    std::vector<int> arrivals(const std::string& key)
    {
        std::lock_guard lock(mutex_);
        return arrivals_[key];
    }

    // Sends the FIN on connection `n` and returns once the gateway's kernel has acknowledged it:
    // from then on the gateway's next poll of epoll reports its socket readable.
    void close_idle(int n)
    {
        const int fd = server_.connection(n);
        ::shutdown(fd, SHUT_WR);
        wait_until(
            "the gateway's kernel acknowledges the FIN", 5s,
            [fd] {
                tcp_info info{};
                socklen_t len = sizeof info;
                return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
                       info.tcpi_state != TCP_ESTABLISHED && info.tcpi_state != TCP_FIN_WAIT1;
            },
            1ms);
    }

    // Sends `bytes` on connection `n`, between answers, and returns once the gateway's kernel has
    // acknowledged them.
    void send_unasked(int n, const std::string& bytes)
    {
        const int fd = server_.connection(n);
        REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size()));
        wait_until(
            "the gateway's kernel acknowledges the bytes", 5s,
            [fd] {
                int unacknowledged = -1;
                return ::ioctl(fd, SIOCOUTQ, &unacknowledged) == 0 && unacknowledged == 0;
            },
            1ms);
    }

private:
    void serve(int fd, int n)
    {
        std::string buffer;
        while (auto head = raw_server::read_request(fd, buffer)) {
            std::string lower = *head;
            for (auto& c : lower)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            std::string key;
            if (auto at = lower.find("\r\nidempotency-key:"); at != std::string::npos) {
                auto from = head->find_first_not_of(' ', at + 18);
                key = head->substr(from, head->find("\r\n", from) - from);
            }
            {
                std::lock_guard lock(mutex_);
                arrivals_[key].push_back(n);
            }
            const std::string body = "{\"key\":\"" + key + "\"}";
            const std::string answer =
                "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body;
            if (::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(answer.size()))
                return;
        }
    }

    std::mutex mutex_;
    std::map<std::string, std::vector<int>> arrivals_;
    // Last: its threads stop before the members they use are gone.
    raw_server server_{"keep-alive upstream", 16, [this](int fd, int n) { serve(fd, n); }};
};

struct idle_gateway {
    idle_gateway() : store(make_store()), gateway(gateway_yaml(store, upstream.port(), free_port(), {}))
    {
        wait_until_ready(gateway);
    }
    keepalive_upstream upstream;
    store_under_test store;
    gateway_process gateway;
};

// A keyed POST on `client`: 201 with its own key's answer.
void post_answered(http_connection& client, const std::string& key)
{
    auto res = client.request("POST", "/api/orders", {{"Idempotency-Key", key}}, "{}");
    CHECK_MESSAGE(res.status == 201, res.raw);
    CHECK(res.body == "{\"key\":\"" + key + "\"}");
}

} // namespace

TEST_SUITE_BEGIN("proxy");

TEST_CASE("a POST after the upstream closed an idle pooled connection goes out once on a new one")
{
    idle_gateway g;
    // One client connection: every request is served by the same gateway thread and its pool.
    http_connection client(g.gateway.port(), io_timeout);
    const auto first = unique_key("idle-fin-1"), second = unique_key("idle-fin-2"),
               third = unique_key("idle-fin-3");
    post_answered(client, first);
    // Nothing happened to the pooled connection: the next POST takes it.
    post_answered(client, second);
    CHECK(g.upstream.arrivals(first) == std::vector<int>{1});
    CHECK(g.upstream.arrivals(second) == std::vector<int>{1});

    // The upstream closes it while idle. Its FIN is in the gateway's kernel before the next
    // request is sent, so the gateway's event loop polls it before it reads that request.
    g.upstream.close_idle(1);
    post_answered(client, third);
    CHECK(g.upstream.arrivals(third) == std::vector<int>{2});
}

TEST_CASE("an idle pooled connection on which the upstream sent bytes nobody asked for is not reused")
{
    idle_gateway g;
    http_connection client(g.gateway.port(), io_timeout);
    const auto first = unique_key("idle-bytes-1"), second = unique_key("idle-bytes-2");
    post_answered(client, first);
    // Read as the next answer, these bytes would answer the next POST with someone else's 200.
    g.upstream.send_unasked(1, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray");
    post_answered(client, second);
    CHECK(g.upstream.arrivals(first) == std::vector<int>{1});
    CHECK(g.upstream.arrivals(second) == std::vector<int>{2});
}

TEST_SUITE_END();
