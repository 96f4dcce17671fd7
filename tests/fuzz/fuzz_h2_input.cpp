// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: a client's bytes on an HTTP/2 connection, after the connection preface, fed
// to the gateway's session (nghttp2 with the gateway's callbacks, budgets and limits) in pieces
// whose sizes follow the input, the way the connection reads them. Every request stream it
// opens runs through the real idempotency filter (memory store; the upstream refuses
// connections, so a forwarded request is a 502) on the same io_context, polled between pieces.
//
// Bounded state out: after each piece the session holds at most max_concurrent_streams open
// streams and at most twice that many requests running; each batch it writes is bounded; once
// the connection ends (its deadlines run an hour ahead, then it is detached) every stream's
// request finishes and none is left counted in flight. Invariant failures abort with a message.
#include "http2/h2_session.hpp"
#include "runtime/reload.hpp"
#include "state/worker.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <idemgate/config/config.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace {

using namespace idemgate::gateway::detail;
namespace config = idemgate::config;

void require(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_h2_input: invariant broken: %s\n", what);
        std::abort();
    }
}

constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr unsigned max_streams = 8;
// What one collect() may return: its bound plus one frame of the largest size the client may
// ask for (16 MiB) would be legal, but the gateway's answers here are small.
constexpr std::size_t batch = 64 * 1024;
constexpr std::size_t batch_limit = batch + 64 * 1024;

const char* const yaml = R"(listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
threads: 1
log_level: error
access_log: false
store:
  type: memory
upstreams:
  nowhere:
    address: "127.0.0.1:9"
routes:
  - path_prefix: "/api/"
    upstream: nowhere
    idempotency:
      methods: [POST, PATCH]
  - path_prefix: "/strict/"
    upstream: nowhere
    idempotency:
      methods: [POST]
      required: true
limits:
  max_request_body: 4KiB
  max_header_bytes: 4KiB
http2:
  cleartext: true
  max_concurrent_streams: 8
  initial_window_size: 64KiB
  max_header_list_size: 4KiB
)";

// The process a connection lives in: made once, reused by every input.
struct process {
    config::config cfg = config::parse(yaml);
    gateway_context ctx{cfg, idemgate::store::make_backend(cfg.store)};
    boost::asio::io_context control;
    reloader reload{ctx, control};
    worker w;

    process()
    {
        reload.publish_first(cfg);
        w.store = ctx.backend->open_session(w.ioc.get_executor());
    }
};

// Drains the session's output in batches as the connection's writer does.
void drain(h2_session& session)
{
    for (int i = 0; i < 1024; ++i) {
        std::string out;
        if (!session.collect(out, batch) || out.empty())
            return;
        require(out.size() <= batch_limit, "a batch of output past its bound");
    }
}

void check_bounds(const h2_session& session)
{
    require(session.open_streams() <= max_streams, "more open streams than max_concurrent_streams");
    require(session.running_requests() <= 2 * max_streams, "more requests running than the budget");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static process& p = *new process();
    auto session = std::make_shared<h2_session>(p.ctx, p.w, client_info{"192.0.2.1", false, ""});
    require(session->start(), "the session did not start");
    bool alive = session->receive(reinterpret_cast<const unsigned char*>(preface.data()), preface.size());
    require(alive, "the preface was refused");
    std::size_t at = 0;
    while (alive && at < size) {
        // Pieces of 1..4096 bytes, their sizes taken from the input itself.
        std::size_t n = std::min<std::size_t>(size - at, 1 + (data[at] * 17u + size) % 4096);
        alive = session->receive(data + at, n);
        at += n;
        drain(*session);
        p.w.ioc.poll();
        p.w.ioc.restart();
        drain(*session);
        check_bounds(*session);
    }
    // The connection's deadlines, an hour on: timeouts, the idle GOAWAY.
    session->sweep(h2_session::clock::now() + std::chrono::hours(1));
    drain(*session);
    session->detach();
    // Every request started finishes without the connection (502 from the refusing upstream).
    for (int i = 0; i < 2000 && p.ctx.stats.requests_in_flight.load() != 0; ++i) {
        p.w.ioc.run_for(std::chrono::milliseconds(5));
        p.w.ioc.restart();
    }
    require(p.ctx.stats.requests_in_flight.load() == 0, "a request left counted in flight");
    require(session->running_requests() == 0, "a request left running");
    return 0;
}
