// SPDX-License-Identifier: Apache-2.0
// Blocking HTTP/1.1 client for tests: one TCP connection, raw bytes in and out, timeouts on
// every socket call (SO_RCVTIMEO / SO_SNDTIMEO).
#include "idemgate/test/harness.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace idemgate::test {

namespace detail {

std::string to_lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

std::string trim(const std::string& s)
{
    auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos)
        return {};
    auto e = s.find_last_not_of(" \t");
    return s.substr(b, e - b + 1);
}

int connect_loopback(std::uint16_t port, milliseconds timeout)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("http_connection: socket() failed");
    timeval tv{};
    tv.tv_sec = static_cast<long>(timeout.count() / 1000);
    tv.tv_usec = static_cast<long>((timeout.count() % 1000) * 1000);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        int err = errno;
        ::close(fd);
        throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) +
                                 " failed: " + std::strerror(err));
    }
    return fd;
}

} // namespace detail

std::string http_response::header(const std::string& lower_name) const
{
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string{} : it->second;
}

http_connection::http_connection(std::uint16_t port, milliseconds timeout)
    : fd_(detail::connect_loopback(port, timeout)), timeout_(timeout)
{
}

// One client TLS connection (OpenSSL over the blocking socket; SO_RCVTIMEO bounds each read).
struct http_connection::tls_state {
    std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx{nullptr, &SSL_CTX_free};
    std::unique_ptr<SSL, void (*)(SSL*)> ssl{nullptr, &SSL_free};
};

namespace {

// OpenSSL's error queue as one line (and cleared).
std::string openssl_errors()
{
    std::string out;
    while (unsigned long code = ERR_get_error()) {
        char text[256];
        ERR_error_string_n(code, text, sizeof text);
        out += (out.empty() ? "" : "; ") + std::string(text);
    }
    return out.empty() ? "no OpenSSL error queued" : out;
}

} // namespace

http_connection::http_connection(std::uint16_t port, const tls_client_options& options, milliseconds timeout)
    : http_connection(port, timeout)
{
    auto state = std::make_shared<tls_state>();
    state->ctx.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX* ctx = state->ctx.get();
    if (options.min_version)
        SSL_CTX_set_min_proto_version(ctx, options.min_version);
    if (options.max_version)
        SSL_CTX_set_max_proto_version(ctx, options.max_version);
    if (!options.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1)
            throw std::runtime_error("test TLS client: cannot load " + options.ca_file + ": " +
                                     openssl_errors());
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    }
    if (!options.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
            throw std::runtime_error("test TLS client: cannot load the client certificate: " +
                                     openssl_errors());
    }
    if (!options.alpn.empty()) {
        std::string wire;
        for (const auto& p : options.alpn)
            wire += static_cast<char>(p.size()) + p;
        SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size()));
    }
    state->ssl.reset(SSL_new(ctx));
    SSL* ssl = state->ssl.get();
    SSL_set_fd(ssl, fd_);
    if (!options.sni.empty())
        SSL_set_tlsext_host_name(ssl, options.sni.c_str());
    if (!options.ca_file.empty() && !options.verify_name.empty()) {
        auto* param = SSL_get0_param(ssl);
        if (X509_VERIFY_PARAM_set1_ip_asc(param, options.verify_name.c_str()) != 1)
            X509_VERIFY_PARAM_set1_host(param, options.verify_name.c_str(), options.verify_name.size());
    }
    if (options.session)
        SSL_set_session(ssl, static_cast<SSL_SESSION*>(options.session.get()));
    ERR_clear_error();
    if (SSL_connect(ssl) != 1)
        throw tls_error("TLS handshake failed: " + openssl_errors());
    tls_ = std::move(state);
}

bool http_connection::tls_session_reused() const
{
    return tls_ && SSL_session_reused(tls_->ssl.get()) == 1;
}

std::shared_ptr<void> http_connection::tls_session() const
{
    if (!tls_)
        return nullptr;
    SSL_SESSION* session = SSL_get1_session(tls_->ssl.get());
    if (!session)
        return nullptr;
    return std::shared_ptr<void>(session, [](void* s) { SSL_SESSION_free(static_cast<SSL_SESSION*>(s)); });
}

std::string http_connection::tls_alpn() const
{
    if (!tls_)
        return {};
    const unsigned char* data = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(tls_->ssl.get(), &data, &len);
    return std::string(reinterpret_cast<const char*>(data), len);
}

std::string http_connection::tls_version() const
{
    return tls_ ? SSL_get_version(tls_->ssl.get()) : "";
}

http_connection::~http_connection()
{
    close();
}

void http_connection::close()
{
    if (tls_ && fd_ >= 0)
        SSL_shutdown(tls_->ssl.get()); // close_notify; the peer's is not awaited
    tls_.reset();
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void http_connection::send_raw(const std::string& bytes)
{
    if (fd_ < 0)
        throw std::runtime_error("http_connection: send on a closed connection");
    std::size_t sent = 0;
    if (tls_) {
        while (sent < bytes.size()) {
            ERR_clear_error();
            int n = SSL_write(tls_->ssl.get(), bytes.data() + sent, static_cast<int>(bytes.size() - sent));
            if (n <= 0)
                throw tls_error("http_connection: TLS write failed: " + openssl_errors());
            sent += static_cast<std::size_t>(n);
        }
        return;
    }
    while (sent < bytes.size()) {
        ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw std::runtime_error(std::string("http_connection: send failed: ") +
                                     (n < 0 ? std::strerror(errno) : "closed"));
        sent += static_cast<std::size_t>(n);
    }
}

bool http_connection::read_more()
{
    char chunk[16384];
    if (tls_) {
        ERR_clear_error();
        int n = SSL_read(tls_->ssl.get(), chunk, sizeof chunk);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
        int err = SSL_get_error(tls_->ssl.get(), n);
        if (err == SSL_ERROR_ZERO_RETURN)
            return false;
        if (err == SSL_ERROR_WANT_READ)
            throw std::runtime_error("http_connection: TLS read timed out");
        if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
            return false; // EOF without close_notify (or a reset)
        throw tls_error("http_connection: TLS read failed: " + openssl_errors());
    }
    int fd = fd_;
    std::string& buffer = buffer_;
    for (;;) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n > 0) {
            buffer.append(chunk, static_cast<std::size_t>(n));
            return true;
        }
        if (n == 0)
            return false;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            throw std::runtime_error("http_connection: read timed out");
        if (errno == ECONNRESET)
            return false;
        throw std::runtime_error(std::string("http_connection: recv failed: ") + std::strerror(errno));
    }
}

http_response http_connection::read_response(bool head_request)
{
    if (fd_ < 0)
        throw std::runtime_error("http_connection: read on a closed connection");
    for (;;) {
        std::size_t header_end;
        while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
            if (!read_more())
                throw std::runtime_error("http_connection: connection closed before a response header" +
                                         (buffer_.empty() ? std::string{} : " (got: " + buffer_ + ")"));
        }
        http_response res;
        std::string head = buffer_.substr(0, header_end);
        std::size_t consumed = header_end + 4;

        std::size_t line_end = head.find("\r\n");
        std::string status_line = head.substr(0, line_end);
        // "HTTP/1.1 200 OK"
        auto sp1 = status_line.find(' ');
        if (sp1 == std::string::npos || status_line.compare(0, 5, "HTTP/") != 0)
            throw std::runtime_error("http_connection: bad status line: " + status_line);
        auto sp2 = status_line.find(' ', sp1 + 1);
        res.status = std::stoi(status_line.substr(sp1 + 1, sp2 - sp1 - 1));
        res.reason = sp2 == std::string::npos ? std::string{} : status_line.substr(sp2 + 1);

        std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
        while (pos < head.size()) {
            auto eol = head.find("\r\n", pos);
            if (eol == std::string::npos)
                eol = head.size();
            std::string line = head.substr(pos, eol - pos);
            auto colon = line.find(':');
            if (colon != std::string::npos)
                res.headers.emplace(detail::to_lower(line.substr(0, colon)),
                                    detail::trim(line.substr(colon + 1)));
            pos = eol + 2;
        }

        // Interim 1xx (other than 101) precede the real answer: skip them.
        if (res.status >= 100 && res.status < 200 && res.status != 101) {
            buffer_.erase(0, consumed);
            continue;
        }

        bool no_body =
            head_request || res.status == 204 || res.status == 304 || (res.status >= 100 && res.status < 200);
        std::string te = detail::to_lower(res.header("transfer-encoding"));
        if (no_body) {
            // nothing
        } else if (te.find("chunked") != std::string::npos) {
            for (;;) {
                std::size_t eol;
                while ((eol = buffer_.find("\r\n", consumed)) == std::string::npos)
                    if (!read_more())
                        throw std::runtime_error("http_connection: EOF inside chunked body");
                std::string size_line = buffer_.substr(consumed, eol - consumed);
                std::size_t size = std::stoul(size_line, nullptr, 16);
                consumed = eol + 2;
                if (size == 0) {
                    // Trailers until an empty line.
                    for (;;) {
                        while ((eol = buffer_.find("\r\n", consumed)) == std::string::npos)
                            if (!read_more())
                                throw std::runtime_error("http_connection: EOF inside chunked trailer");
                        bool empty = eol == consumed;
                        consumed = eol + 2;
                        if (empty)
                            break;
                    }
                    break;
                }
                while (buffer_.size() < consumed + size + 2)
                    if (!read_more())
                        throw std::runtime_error("http_connection: EOF inside chunk");
                res.body.append(buffer_, consumed, size);
                consumed += size + 2;
            }
        } else if (res.has_header("content-length")) {
            std::size_t length = std::stoul(res.header("content-length"));
            while (buffer_.size() < consumed + length)
                if (!read_more())
                    throw std::runtime_error("http_connection: EOF inside body (" +
                                             std::to_string(buffer_.size() - consumed) + " of " +
                                             std::to_string(length) + " bytes)");
            res.body = buffer_.substr(consumed, length);
            consumed += length;
        } else {
            while (read_more()) {
            }
            res.body = buffer_.substr(consumed);
            consumed = buffer_.size();
        }
        res.raw = buffer_.substr(0, consumed);
        buffer_.erase(0, consumed);
        return res;
    }
}

http_response http_connection::request(const std::string& method, const std::string& path,
                                       const std::vector<std::pair<std::string, std::string>>& headers,
                                       const std::string& body)
{
    bool has_host = false, has_length = false;
    for (auto& [name, value] : headers) {
        auto lower = detail::to_lower(name);
        has_host = has_host || lower == "host";
        has_length = has_length || lower == "content-length" || lower == "transfer-encoding";
    }
    std::string out = method + " " + path + " HTTP/1.1\r\n";
    if (!has_host)
        out += "Host: 127.0.0.1\r\n";
    for (auto& [name, value] : headers)
        out += name + ": " + value + "\r\n";
    bool bodyless_method = method == "GET" || method == "HEAD" || method == "DELETE" || method == "OPTIONS";
    if (!has_length && (!body.empty() || !bodyless_method))
        out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    out += "\r\n";
    out += body;
    send_raw(out);
    return read_response(method == "HEAD");
}

bool http_connection::closed_by_peer(milliseconds wait)
{
    if (fd_ < 0)
        return true;
    auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return false;
        if (tls_) {
            // Buffered TLS bytes first, then the socket; a TLS close or alert is a close.
            if (SSL_pending(tls_->ssl.get()) == 0) {
                pollfd tls_pfd{fd_, POLLIN, 0};
                int ready = ::poll(&tls_pfd, 1, static_cast<int>(left.count()));
                if (ready < 0 && errno == EINTR)
                    continue;
                if (ready <= 0)
                    return false;
            }
            try {
                if (!read_more())
                    return true;
            } catch (const tls_error&) {
                return true;
            } catch (const std::runtime_error&) {
                continue; // a partial record: wait for the rest
            }
            continue;
        }
        pollfd pfd{fd_, POLLIN, 0};
        int r = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        char chunk[4096];
        ssize_t n = ::recv(fd_, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (n == 0)
            return true;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return true; // ECONNRESET and friends: the peer is gone
        }
        // A response (e.g. the 400 before the close) may still arrive first: keep it.
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

void http_connection::shutdown_send()
{
    if (fd_ >= 0)
        ::shutdown(fd_, SHUT_WR);
}

std::string http_connection::read_until(const std::string& delimiter)
{
    if (fd_ < 0)
        throw std::runtime_error("http_connection: read on a closed connection");
    std::size_t end;
    while ((end = buffer_.find(delimiter)) == std::string::npos) {
        if (!read_more())
            throw std::runtime_error("http_connection: connection closed before the expected bytes" +
                                     (buffer_.empty() ? std::string{} : " (got: " + buffer_ + ")"));
    }
    end += delimiter.size();
    std::string out = buffer_.substr(0, end);
    buffer_.erase(0, end);
    return out;
}

http_response https_request(std::uint16_t port, const tls_client_options& tls, const std::string& method,
                            const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body, milliseconds timeout)
{
    http_connection conn(port, tls, timeout);
    return conn.request(method, path, headers, body);
}

http_response http_request(std::uint16_t port, const std::string& method, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body)
{
    http_connection conn(port);
    return conn.request(method, path, headers, body);
}

http_response http_request(std::uint16_t port, const std::string& method, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body, milliseconds timeout)
{
    http_connection conn(port, timeout);
    return conn.request(method, path, headers, body);
}

double metric(std::uint16_t admin_port, const std::string& series)
{
    auto text = http_request(admin_port, "GET", "/metrics").body;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(series + " ", 0) == 0)
            return std::stod(line.substr(series.size() + 1));
    return -1;
}

} // namespace idemgate::test
