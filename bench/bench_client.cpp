// SPDX-License-Identifier: Apache-2.0
// bench-client: the exact-count HTTP work that wrk cannot do, for bench/run.sh.
//
//   bench-client fill  --port P --prefix X --keys N [--connections C] [--path /p] [--key-in body]
//       POSTs keys X-0 .. X-(N-1) once each (pre-warming replays, creating N records).
//   bench-client storm --port P --prefix X --keys K --repeats R [--connections C] [--path /p]
//       Sends every key R times, the R copies of a key back to back so they race on different
//       connections. A 409 while the first copy is in flight is retried (bounded). Afterwards
//       every key must have exactly one executed (not replayed) answer, and every answer for a
//       key must carry the same status and byte-identical body as the first.
//
// Both print one JSON line of counts; the exit status is 0 only when every check held.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

// The same body as bench/common.lua sends.
constexpr std::string_view request_body = R"({"item":"book","qty":1})";
constexpr auto io_deadline = 10s;
constexpr int max_attempts = 200; // per request, counting 409-in-flight retries

struct options {
    std::string mode;
    unsigned short port = 0;
    std::string prefix = "bench";
    std::string path = "/api/orders";
    int keys = 0;
    int repeats = 1;
    int connections = 16;
    // "header": the key in Idempotency-Key; "body": the key as the body's "client_ref" member and
    // no key header (a route with key_from: json, key_json_pointer: "/client_ref").
    std::string key_in = "header";
};

// The answer every copy of a key must repeat.
struct first_answer {
    unsigned status = 0;
    std::string body;
};

struct run_state {
    options opts;
    std::deque<int> work; // key indexes, a key repeated `repeats` times back to back
    std::vector<int> attempts;
    std::vector<std::optional<first_answer>> first;
    std::vector<int> executed; // answers without Idempotent-Replayed: true, per key
    std::map<unsigned, long> status_counts;
    long requests = 0;
    long in_flight_conflicts = 0;
    long mismatches = 0;
    long transport_errors = 0;
    long gave_up = 0;
    std::string first_mismatch;
};

std::string build_request(const options& opts, int key)
{
    std::string req;
    req.reserve(256);
    req += "POST " + opts.path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
    const std::string name = opts.prefix + "-" + std::to_string(key);
    if (opts.key_in == "body") {
        std::string body = R"({"client_ref":")" + name + "\",";
        body.append(request_body.substr(1));
        req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
        req += body;
        return req;
    }
    req += "Content-Length: " + std::to_string(request_body.size()) + "\r\n";
    req += "Idempotency-Key: " + name + "\r\n\r\n";
    req += request_body;
    return req;
}

void record_answer(run_state& st, int key, const http::response<http::string_body>& res)
{
    ++st.status_counts[res.result_int()];
    bool replayed = res["Idempotent-Replayed"] == "true";
    if (!replayed)
        ++st.executed[key];
    auto& first = st.first[key];
    if (!first) {
        first = first_answer{res.result_int(), res.body()};
        return;
    }
    if (first->status != res.result_int() || first->body != res.body()) {
        if (st.mismatches++ == 0)
            st.first_mismatch = "key " + std::to_string(key) + ": first " + std::to_string(first->status) +
                                " " + first->body + ", then " + std::to_string(res.result_int()) + " " +
                                res.body();
    }
}

asio::awaitable<void> worker(run_state& st, tcp::endpoint endpoint)
{
    auto executor = co_await asio::this_coro::executor;
    std::optional<beast::tcp_stream> stream;
    beast::flat_buffer buffer;
    asio::steady_timer backoff(executor);

    while (!st.work.empty()) {
        int key = st.work.front();
        st.work.pop_front();
        if (!stream) {
            stream.emplace(executor);
            stream->expires_after(io_deadline);
            auto [ec] = co_await stream->async_connect(endpoint, asio::as_tuple(asio::use_awaitable));
            if (ec) {
                ++st.transport_errors;
                stream.reset();
                continue;
            }
            buffer.clear();
        }
        std::string req = build_request(st.opts, key);
        stream->expires_after(io_deadline);
        auto [write_ec, written] =
            co_await asio::async_write(*stream, asio::buffer(req), asio::as_tuple(asio::use_awaitable));
        http::response<http::string_body> res;
        beast::error_code read_ec = write_ec;
        if (!write_ec) {
            stream->expires_after(io_deadline);
            auto [ec, n] =
                co_await http::async_read(*stream, buffer, res, asio::as_tuple(asio::use_awaitable));
            read_ec = ec;
        }
        ++st.requests;
        if (read_ec) {
            ++st.transport_errors;
            stream.reset();
            continue;
        }
        if (!res.keep_alive())
            stream.reset();
        // 409 with Retry-After: the first copy is still running upstream; ask again shortly.
        if (res.result_int() == 409 && res.count(http::field::retry_after) != 0) {
            ++st.in_flight_conflicts;
            if (++st.attempts[key] >= max_attempts) {
                ++st.gave_up;
                continue;
            }
            st.work.push_back(key);
            backoff.expires_after(1ms);
            co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
            continue;
        }
        record_answer(st, key, res);
    }
}

options parse_options(int argc, char** argv)
{
    if (argc < 2)
        throw std::runtime_error("usage: bench-client fill|storm --port P --prefix X --keys N ...");
    options opts;
    opts.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string_view name = argv[i];
        std::string value = argv[i + 1];
        if (name == "--port")
            opts.port = static_cast<unsigned short>(std::stoi(value));
        else if (name == "--prefix")
            opts.prefix = value;
        else if (name == "--path")
            opts.path = value;
        else if (name == "--keys")
            opts.keys = std::stoi(value);
        else if (name == "--repeats")
            opts.repeats = std::stoi(value);
        else if (name == "--connections")
            opts.connections = std::stoi(value);
        else if (name == "--key-in" && (value == "header" || value == "body"))
            opts.key_in = value;
        else
            throw std::runtime_error("unknown option " + std::string(name));
    }
    if ((opts.mode != "fill" && opts.mode != "storm") || opts.port == 0 || opts.keys <= 0 ||
        opts.repeats <= 0 || opts.connections <= 0)
        throw std::runtime_error("bad arguments (mode fill|storm, --port, --keys > 0)");
    if (opts.mode == "fill")
        opts.repeats = 1;
    return opts;
}

} // namespace

int main(int argc, char** argv)
{
    try {
        run_state st;
        st.opts = parse_options(argc, argv);
        for (int k = 0; k < st.opts.keys; ++k)
            for (int r = 0; r < st.opts.repeats; ++r)
                st.work.push_back(k);
        st.attempts.assign(st.opts.keys, 0);
        st.first.resize(st.opts.keys);
        st.executed.assign(st.opts.keys, 0);

        asio::io_context ioc(1);
        tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), st.opts.port);
        for (int c = 0; c < st.opts.connections; ++c)
            asio::co_spawn(ioc, worker(st, endpoint), asio::detached);
        auto started = std::chrono::steady_clock::now();
        ioc.run();
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

        long keys_executed_once = 0, keys_executed_twice = 0, keys_unanswered = 0;
        for (int k = 0; k < st.opts.keys; ++k) {
            if (st.executed[k] == 1)
                ++keys_executed_once;
            else if (st.executed[k] > 1)
                ++keys_executed_twice;
            if (!st.first[k])
                ++keys_unanswered;
        }
        long non_2xx = 0;
        std::string statuses;
        for (auto& [status, count] : st.status_counts) {
            if (status < 200 || status >= 300)
                non_2xx += count;
            statuses += (statuses.empty() ? "" : ",") + std::string("\"") + std::to_string(status) +
                        "\":" + std::to_string(count);
        }
        bool ok = st.transport_errors == 0 && st.gave_up == 0 && keys_unanswered == 0 && non_2xx == 0 &&
                  st.mismatches == 0;
        if (st.opts.mode == "storm")
            ok = ok && keys_executed_once == st.opts.keys && keys_executed_twice == 0;
        std::cout << "{\"mode\":\"" << st.opts.mode << "\",\"keys\":" << st.opts.keys
                  << ",\"repeats\":" << st.opts.repeats << ",\"connections\":" << st.opts.connections
                  << ",\"requests\":" << st.requests << ",\"seconds\":" << seconds << ",\"status\":{"
                  << statuses << "},\"in_flight_409\":" << st.in_flight_conflicts
                  << ",\"keys_executed_once\":" << keys_executed_once
                  << ",\"keys_executed_more_than_once\":" << keys_executed_twice
                  << ",\"keys_unanswered\":" << keys_unanswered << ",\"body_mismatches\":" << st.mismatches
                  << ",\"transport_errors\":" << st.transport_errors << ",\"gave_up\":" << st.gave_up
                  << ",\"ok\":" << (ok ? "true" : "false") << "}\n";
        if (!st.first_mismatch.empty())
            std::cerr << "bench-client: first mismatch: " << st.first_mismatch << "\n";
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "bench-client: " << e.what() << "\n";
        return 2;
    }
}
