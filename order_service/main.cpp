// SPDX-License-Identifier: Apache-2.0
// order-service: the sample upstream behind idemgate, with the domain payment guard and the
// message inbox (the seed's second and third layers). See order_service/README.md.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <idemgate/common/log.hpp>
#include <idemgate/order_service/http_api.hpp>
#include <idemgate/order_service/options.hpp>
#include <idemgate/order_service/order_store.hpp>
#include <idemgate/order_service/stream_consumer.hpp>
#include <memory>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace idemgate;
using namespace idemgate::order_service;

int main(int argc, char** argv)
{
    std::optional<service_options> options;
    try {
        options = parse_command_line(argc, argv);
    } catch (const usage_error& e) {
        std::fprintf(stderr, "order-service: %s\n%s", e.what(), usage());
        return 2;
    }
    if (!options) {
        std::fputs(usage(), stdout);
        return 0;
    }

    // hiredis writes with write(2): a Redis that went away must be an error code, not SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);

    try {
        order_store store(options->db_path);
        asio::io_context ioc(static_cast<int>(options->io_threads));
        asio::thread_pool db_pool(options->db_threads);
        api handler(store);

        boost::system::error_code ec;
        auto address = asio::ip::make_address(options->listen_host, ec);
        if (ec) {
            std::fprintf(stderr, "order-service: --listen: \"%s\" is not an IP address\n",
                         options->listen_host.c_str());
            return 2;
        }
        http_server server(ioc, db_pool, handler, {address, options->listen_port});
        server.start();

        std::unique_ptr<stream_consumer> consumer;
        if (options->consume) {
            consumer = std::make_unique<stream_consumer>(store, options->consumer);
            consumer->start();
        }

        auto bound = server.local_endpoint();
        log::write_raw_line(R"({"msg":"listening","listen":")" + bound.address().to_string() + ":" +
                            std::to_string(bound.port()) + R"("})");

        asio::signal_set signals(ioc, SIGINT, SIGTERM);
        signals.async_wait([&](const boost::system::error_code& wait_ec, int sig) {
            if (wait_ec)
                return;
            log::info("stopping", {{"signal", sig}});
            server.stop();
            ioc.stop();
        });

        std::vector<std::thread> io_threads;
        for (unsigned i = 1; i < options->io_threads; ++i)
            io_threads.emplace_back([&ioc] { ioc.run(); });
        ioc.run();
        for (auto& t : io_threads)
            t.join();
        if (consumer)
            consumer->stop();
        // Handlers still running finish against the store before it goes away.
        db_pool.join();
        log::info("stopped");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "order-service: %s\n", e.what());
        return 1;
    }
}
