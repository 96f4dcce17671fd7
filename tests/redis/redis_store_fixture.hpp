// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the Redis store test files share: a backend with one session on its own I/O thread, a
// RESP integer, the healthy answers a fake server scripts its fault around, the start-up checks
// a fault must wait for, a key as the store names it, and stdout capture for the log checks.
#include "redis_test_support.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <fstream>
#include <idemgate/store/protected_backend.hpp>
#include <idemgate/store/redis_store.hpp>
#include <idemgate/test/harness.hpp>
#include <iterator>
#include <unistd.h>

namespace idemgate::test {

using namespace std::chrono_literals;

// A backend on a real or fake server, with one session on its own I/O thread; with `protection`
// (hash_keys, encryption) the session is the protection decorator's over it, as make_backend
// builds it.
struct store_fixture {
    explicit store_fixture(const config::redis_config& cfg, bool wait_ready = true,
                           const store::redis_options& options = {}, store::record_protection protection = {})
        : backend(store::make_redis_backend(cfg, with_protection(options, protection))),
          guarded(protection.enabled() ? store::protect_backend(backend, std::move(protection)) : backend),
          session(guarded->open_session(io.executor()))
    {
        if (wait_ready)
            REQUIRE(eventually([&] { return backend->ready(); }));
    }

    ~store_fixture()
    {
        session.reset();
        CHECK_MESSAGE(io.finish(), "a connection coroutine outlived its session");
    }

    store::reserve_result reserve(const std::string& tenant, const std::string& key, const store::record& rec,
                                  store::duration lock_ttl = 30s)
    {
        return io.run([&]() -> boost::asio::awaitable<store::reserve_result> {
            store::scope s{tenant, key};
            co_return co_await session->reserve(s, rec, lock_ttl);
        });
    }

    boost::system::error_code complete(const std::string& tenant, const std::string& key,
                                       const store::record& rec, store::duration record_ttl = 60s)
    {
        return io.run([&]() -> boost::asio::awaitable<boost::system::error_code> {
            store::scope s{tenant, key};
            co_return co_await session->complete(s, rec, record_ttl);
        });
    }

    boost::system::error_code release(const std::string& tenant, const std::string& key,
                                      const std::string& token)
    {
        return io.run([&]() -> boost::asio::awaitable<boost::system::error_code> {
            store::scope s{tenant, key};
            co_return co_await session->release(s, token);
        });
    }

    const store::redis_stats& stats() const { return backend->stats(); }

    static store::redis_options with_protection(store::redis_options options,
                                                const store::record_protection& protection)
    {
        options.keep_sealed = options.keep_sealed || protection.enabled();
        return options;
    }

    io_thread io;
    std::shared_ptr<store::redis_backend> backend;
    std::shared_ptr<store::backend> guarded; // the protection decorator over `backend`, or it
    std::unique_ptr<store::session> session;
};

// The integer of a RESP ":n\r\n" reply.
inline long long resp_integer(const std::string& reply)
{
    REQUIRE_MESSAGE(reply.starts_with(":"), reply);
    return std::stoll(reply.substr(1));
}

// The store's start-up checks (INFO, CONFIG GET) go through the same pipeline; a test that
// scripts a fault waits until they were asked so they cannot land behind the fault.
inline void wait_for_start_up_checks(const fake_redis& fake)
{
    REQUIRE(eventually([&] {
        for (const auto& cmd : fake.commands())
            if (cmd[0] == "CONFIG")
                return true;
        return false;
    }));
}

// What a healthy Redis answers to the commands a reserve needs (PING, CONFIG GET, SET NX GET on a
// free key); the fake-server tests script their fault around it.
inline std::string healthy_answer(const std::vector<std::string>& cmd)
{
    if (cmd[0] == "PING")
        return "+PONG\r\n";
    if (cmd[0] == "CONFIG")
        return resp_noeviction;
    if (cmd[0] == "SET")
        return resp_nil;
    return "-ERR unknown command\r\n";
}

inline std::string key_of(const std::string& tenant, const std::string& key)
{
    store::scope s{tenant, key};
    return store::redis_key("test", s);
}

// Redirects stdout (where idemgate logs) to a file while alive.
class stdout_capture {
public:
    stdout_capture() : path_(dir_.path() + "/stdout")
    {
        std::fflush(stdout);
        saved_ = ::dup(1);
        int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ::dup2(fd, 1);
        ::close(fd);
    }
    ~stdout_capture()
    {
        std::fflush(stdout);
        ::dup2(saved_, 1);
        ::close(saved_);
    }
    std::string text() const
    {
        std::fflush(stdout);
        std::ifstream in(path_);
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }

private:
    temp_dir dir_;
    std::string path_;
    int saved_ = -1;
};

} // namespace idemgate::test
