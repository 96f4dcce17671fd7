// SPDX-License-Identifier: Apache-2.0
// The access log written to a file (access_log.path) and rotated the way logrotate does it:
// rename the file, then SIGUSR1. Every request's line lands once, whole, in one of the files.
#include "gateway_fixture.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <signal.h>
#include <sys/stat.h>
#include <thread>

using namespace idemgate::test;
namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count_lines_with(child_process& p, const std::string& text)
{
    std::size_t n = 0;
    for (const auto& l : p.lines())
        n += l.find(text) != std::string::npos;
    return n;
}

} // namespace

TEST_SUITE_BEGIN("access log file");

TEST_CASE("access_log.path: rotated under load (rename, SIGUSR1), every line lands once and whole" *
          needs_store("memory"))
{
    temp_dir logs;
    const std::string path = logs.path() + "/access.log";
    gateway_options options;
    // Small batches handed over often: the rotations fall between many writes.
    options.access_log =
        "access_log:\n  path: \"" + path + "\"\n  batch_bytes: 2KiB\n  flush_interval: 5ms\n";
    gateway_fixture f(options);
    REQUIRE(fs::exists(path));
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);

    const int clients = 4, per_client = 400;
    const std::string stem = unique_key("rotate");
    std::atomic<int> answered{0}, running{clients};
    std::vector<std::thread> threads;
    struct joiner { // a failed REQUIRE below still joins the clients
        std::vector<std::thread>& threads;
        ~joiner()
        {
            for (auto& t : threads)
                if (t.joinable())
                    t.join();
        }
    } join_clients{threads};
    for (int c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            try {
                http_connection conn(f.port(), io_timeout);
                for (int i = 0; i < per_client; ++i) {
                    const auto id = stem + "-" + std::to_string(c) + "-" + std::to_string(i);
                    auto res = conn.request("POST", "/api/orders",
                                            {{"Idempotency-Key", id}, {"X-Request-Id", id}}, "{}");
                    answered += res.status == 201;
                }
            } catch (const std::exception&) {
                // counted by `answered`
            }
            --running;
        });

    // logrotate's way, again and again while the clients send: rename, signal, wait until the
    // gateway says it reopened (and, while requests flow, until the new file has lines).
    int rotations = 0;
    while ((running > 0 || rotations < 5) && rotations < 40) {
        ++rotations;
        fs::rename(path, path + "." + std::to_string(rotations));
        f.process().signal(SIGUSR1);
        wait_until("access log reopened #" + std::to_string(rotations), 5s, [&] {
            return count_lines_with(f.process(), "\"msg\":\"access log reopened\"") ==
                   static_cast<std::size_t>(rotations);
        });
        REQUIRE(fs::exists(path)); // created again by the gateway
        poll_until(
            2s, [&] { return running == 0 || fs::file_size(path) > 0; }, 2ms);
    }
    for (auto& t : threads)
        t.join();
    CHECK(answered == clients * per_client);
    CHECK(f.process().running()); // SIGUSR1 never stops it
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);

    // Every file: whole lines, each an access line; each request's exactly once over all files.
    std::map<std::string, int> seen;
    std::size_t lines = 0, files_with_lines = 0;
    for (int k = 0; k <= rotations; ++k) {
        const auto file = k == 0 ? path : path + "." + std::to_string(k);
        REQUIRE(::stat(file.c_str(), &st) == 0);
        CHECK_MESSAGE((st.st_mode & 0777) == 0640, file);
        const auto text = read_all(file);
        if (text.empty())
            continue;
        ++files_with_lines;
        CHECK_MESSAGE(text.back() == '\n', file << " ends inside a line");
        std::size_t start = 0;
        while (start < text.size()) {
            auto end = text.find('\n', start);
            if (end == std::string::npos)
                end = text.size();
            const auto line = text.substr(start, end - start);
            start = end + 1;
            ++lines;
            auto obj = parse_object(line);
            auto* id = obj.if_contains("request_id");
            if (!obj.contains("msg") || obj.at("msg") != "access" || !id || !id->is_string()) {
                FAIL_CHECK(file << ": not a whole access line: " << line);
                continue;
            }
            ++seen[std::string(id->as_string())];
        }
    }
    MESSAGE(rotations << " rotations, " << lines << " lines in " << files_with_lines << " files");
    CHECK(lines == static_cast<std::size_t>(clients * per_client));
    int once = 0;
    for (int c = 0; c < clients; ++c)
        for (int i = 0; i < per_client; ++i) {
            auto it = seen.find(stem + "-" + std::to_string(c) + "-" + std::to_string(i));
            once += it != seen.end() && it->second == 1;
        }
    CHECK_MESSAGE(once == clients * per_client, "lines found exactly once: " << once);
    CHECK(files_with_lines > 1);
    // Nothing of the access log on stdout; the process's own lines stay there.
    CHECK(count_lines_with(f.process(), "\"msg\":\"access\"") == 0);
    CHECK(count_lines_with(f.process(), "\"msg\":\"stopped\"") == 1);
}

TEST_CASE("access_log.path that cannot be opened stops the start, naming it" * needs_store("memory"))
{
    temp_dir dir;
    const auto missing = dir.path() + "/missing/access.log";
    const auto config = dir.write_file("idemgate.yaml", R"(listen: "127.0.0.1:0"
admin_listen: "127.0.0.1:0"
store: { type: memory }
upstreams: { orders: { address: "127.0.0.1:1" } }
routes: [ { path_prefix: "/", upstream: orders } ]
access_log: { path: ")" + missing + "\" }\n");
    child_process proc(gateway_bin(), {"-c", config});
    auto status = proc.wait_exit(10s);
    REQUIRE(status);
    CHECK(*status != 0);
    CHECK_MESSAGE(proc.output().find("access_log.path " + missing) != std::string::npos, proc.output());
}

TEST_SUITE_END();
