// SPDX-License-Identifier: Apache-2.0
// bench-h2-load: HTTP/2 over TLS load with a new Idempotency-Key on every request, the one thing
// h2load cannot send (its header fields are fixed), for bench/run.sh's h2 first-execution rows.
//
//   bench-h2-load --port P --prefix X [--connections 16] [--streams 32] [--seconds 5]
//                 [--path /bench] [--body '{"amount":1}'] [--key K]
//
// Each connection runs on its own thread: TLS with ALPN h2 (no certificate check: the bench's
// own loopback servers), an nghttp2 client session, up to --streams requests in flight, each
// POST with key X-<connection>-<n> (--key: the same key on every request, a replay). Prints
// one JSON line: {"requests":..,"seconds":..,"rps":..,"statuses":{"201":..},"errors":..}.
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
    int port = 0;
    std::string prefix = "h2";
    int connections = 16;
    int streams = 32;
    double seconds = 5;
    std::string path = "/bench";
    std::string body = R"({"amount":1})";
    std::string key; // non-empty: every request carries it
};

struct totals {
    std::mutex m;
    std::map<int, long> statuses;
    long requests = 0;
    long errors = 0;
};

struct conn {
    const options* opt;
    int index;
    SSL* ssl = nullptr;
    nghttp2_session* session = nullptr;
    long counter = 0;
    int in_flight = 0;
    std::map<std::int32_t, int> status; // per open stream
    std::map<int, long> statuses;
    long done = 0;
    bool failed = false;
};

ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                  nghttp2_data_source* source, void*)
{
    auto* body = static_cast<const std::string*>(source->ptr);
    std::size_t n = std::min(length, body->size());
    std::memcpy(buf, body->data(), n);
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t namelen,
              const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user)
{
    auto* c = static_cast<conn*>(user);
    if (namelen == 7 && std::memcmp(name, ":status", 7) == 0)
        c->status[frame->hd.stream_id] =
            std::atoi(std::string(reinterpret_cast<const char*>(value), valuelen).c_str());
    return 0;
}

int on_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user)
{
    auto* c = static_cast<conn*>(user);
    auto it = c->status.find(id);
    int status = it == c->status.end() || error_code != 0 ? -1 : it->second;
    if (it != c->status.end())
        c->status.erase(it);
    ++c->statuses[status];
    ++c->done;
    --c->in_flight;
    return 0;
}

void submit(conn& c)
{
    const auto& o = *c.opt;
    std::string key =
        o.key.empty() ? o.prefix + "-" + std::to_string(c.index) + "-" + std::to_string(++c.counter) : o.key;
    std::string authority = "127.0.0.1:" + std::to_string(o.port);
    std::string length = std::to_string(o.body.size());
    auto nv = [](const char* n, const std::string& v) {
        return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(n)),
                          reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), std::strlen(n),
                          v.size(), NGHTTP2_NV_FLAG_NONE};
    };
    static const std::string post = "POST", https = "https", json = "application/json";
    nghttp2_nv fields[] = {nv(":method", post),         nv(":scheme", https),
                           nv(":authority", authority), nv(":path", o.path),
                           nv("idempotency-key", key),  nv("content-type", json),
                           nv("content-length", length)};
    nghttp2_data_provider provider{};
    provider.source.ptr = const_cast<std::string*>(&o.body);
    provider.read_callback = &read_body;
    if (nghttp2_submit_request(c.session, nullptr, fields, sizeof fields / sizeof fields[0], &provider,
                               nullptr) < 0)
        c.failed = true;
    else
        ++c.in_flight;
}

bool flush(conn& c)
{
    for (;;) {
        const std::uint8_t* data = nullptr;
        auto n = nghttp2_session_mem_send(c.session, &data);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        if (SSL_write(c.ssl, data, static_cast<int>(n)) <= 0)
            return false;
    }
}

void run(conn& c, SSL_CTX* ctx, clock_type::time_point until)
{
    const auto& o = *c.opt;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(o.port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        c.failed = true;
        ::close(fd);
        return;
    }
    c.ssl = SSL_new(ctx);
    SSL_set_fd(c.ssl, fd);
    const unsigned char alpn[] = {2, 'h', '2'};
    SSL_set_alpn_protos(c.ssl, alpn, sizeof alpn);
    const unsigned char* chosen = nullptr;
    unsigned chosen_len = 0;
    if (SSL_connect(c.ssl) == 1)
        SSL_get0_alpn_selected(c.ssl, &chosen, &chosen_len);
    if (chosen_len != 2 || std::memcmp(chosen, "h2", 2) != 0) {
        c.failed = true;
    } else {
        nghttp2_session_callbacks* cbs = nullptr;
        nghttp2_session_callbacks_new(&cbs);
        nghttp2_session_callbacks_set_on_header_callback(cbs, &on_header);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &on_close);
        nghttp2_session_client_new(&c.session, cbs, &c);
        nghttp2_session_callbacks_del(cbs);
        nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
        nghttp2_submit_settings(c.session, NGHTTP2_FLAG_NONE, settings, 1);
        std::vector<std::uint8_t> buf(64 * 1024);
        for (;;) {
            bool more = clock_type::now() < until;
            while (more && c.in_flight < o.streams)
                submit(c);
            if (!flush(c) || c.failed || (!more && c.in_flight == 0))
                break;
            int n = SSL_read(c.ssl, buf.data(), static_cast<int>(buf.size()));
            if (n <= 0 || nghttp2_session_mem_recv(c.session, buf.data(), static_cast<std::size_t>(n)) < 0) {
                c.failed = true;
                break;
            }
        }
        nghttp2_session_del(c.session);
    }
    SSL_shutdown(c.ssl);
    SSL_free(c.ssl);
    ::close(fd);
}

} // namespace

int main(int argc, char** argv)
{
    options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--port")
            o.port = std::atoi(v.c_str());
        else if (a == "--prefix")
            o.prefix = v;
        else if (a == "--connections")
            o.connections = std::atoi(v.c_str());
        else if (a == "--streams")
            o.streams = std::atoi(v.c_str());
        else if (a == "--seconds")
            o.seconds = std::atof(v.c_str());
        else if (a == "--path")
            o.path = v;
        else if (a == "--body")
            o.body = v;
        else if (a == "--key")
            o.key = v;
        else {
            std::fprintf(stderr, "bench-h2-load: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (o.port <= 0 || o.connections <= 0 || o.streams <= 0) {
        std::fprintf(stderr, "bench-h2-load: --port, --connections and --streams must be positive\n");
        return 2;
    }
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    std::vector<conn> conns(static_cast<std::size_t>(o.connections));
    auto started = clock_type::now();
    auto until =
        started + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.seconds));
    std::vector<std::thread> threads;
    for (int i = 0; i < o.connections; ++i) {
        conns[static_cast<std::size_t>(i)].opt = &o;
        conns[static_cast<std::size_t>(i)].index = i;
        threads.emplace_back([&, i] { run(conns[static_cast<std::size_t>(i)], ctx, until); });
    }
    for (auto& t : threads)
        t.join();
    double elapsed = std::chrono::duration<double>(clock_type::now() - started).count();
    std::map<int, long> statuses;
    long requests = 0, failed = 0;
    for (auto& c : conns) {
        for (auto [s, n] : c.statuses)
            statuses[s] += n;
        requests += c.done;
        failed += c.failed;
    }
    std::printf("{\"requests\":%ld,\"seconds\":%.3f,\"rps\":%.0f,\"failed_connections\":%ld,\"statuses\":{",
                requests, elapsed, requests / elapsed, failed);
    bool first = true;
    for (auto [s, n] : statuses) {
        std::printf("%s\"%d\":%ld", first ? "" : ",", s, n);
        first = false;
    }
    std::printf("}}\n");
    SSL_CTX_free(ctx);
    return failed == 0 ? 0 : 1;
}
