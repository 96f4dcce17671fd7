#pragma once
// Writing messages on the hot path. Beast's generic serializer walks nested buffer-sequence
// views (about a quarter of the gateway's instructions in a callgrind profile of first
// executions); the gateway's messages are always Content-Length framed string bodies, so it
// renders the head into one reusable string and sends head + body in one gather write.
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <string>

namespace idemgate::gateway {

namespace http = boost::beast::http;

// Appends "METHOD target HTTP/x.y\r\n" + fields + "\r\n".
void render_head(const http::request_header<>& h, std::string& out);
// Appends "HTTP/x.y code reason\r\n" + fields + "\r\n".
void render_head(const http::response_header<>& h, std::string& out);

// Writes head and body with a deadline. The message must already be framed (Content-Length
// set, or no body). `scratch` is reused between calls to avoid an allocation per message.
boost::asio::awaitable<boost::system::error_code> write_message(boost::beast::tcp_stream& stream,
                                                                const http::request<http::string_body>& msg,
                                                                std::string& scratch,
                                                                std::chrono::milliseconds timeout);
boost::asio::awaitable<boost::system::error_code>
write_message(boost::beast::tcp_stream& stream, const http::response<http::string_body>& msg,
              std::string& scratch, std::chrono::milliseconds timeout, bool send_body = true);

} // namespace idemgate::gateway
