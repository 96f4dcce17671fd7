#pragma once
// HTTP/1.1 rules the gateway enforces itself: strict request framing (Beast 1.81's parser lets
// some smuggling shapes through) and hop-by-hop header removal (RFC 9110 7.6.1).
#include <boost/beast/http/fields.hpp>
#include <optional>
#include <span>
#include <string_view>

namespace idemgate::gateway {

namespace http = boost::beast::http;

// Why a request header is refused before its body is read.
enum class framing_violation {
    none,
    content_length_and_transfer_encoding, // RFC 9112 6.1: either order, smuggling shape
    transfer_encoding_not_chunked,        // anything but exactly "chunked" (one line)
    transfer_encoding_in_http10,          // RFC 9112 6.1: HTTP/1.0 has no TE
    conflicting_content_length,           // several Content-Length lines or a list
    missing_host,                         // RFC 9112 3.2: HTTP/1.1 needs exactly one Host
    bad_target,                           // only origin-form ("/...") is proxied
    non_canonical_method,                 // "post", "Post": a standard method not spelled in upper case
    connection_names_host,                // Connection: Host would strip Host on the way upstream
    bad_host,                             // Host is not host[:port] (a list, spaces, '@', '/', ...)
};

std::string_view describe(framing_violation v) noexcept;

// Checks the header as parsed. `version` is 10 or 11. `method` is the method as sent: methods
// are case-sensitive (RFC 9110 9.1) but legacy upstreams often normalise them, so "post" could
// run as POST while the gateway did not guard it; such spellings are refused (as nginx does).
framing_violation check_request_framing(const http::fields& fields, unsigned version, std::string_view target,
                                        std::string_view method = {});

// The first of `names` (case-insensitive; empty names ignored) that a Connection header lists,
// or "" when none. Host is always checked by check_request_framing; the idempotency filter
// checks the headers that form the scope (key, tenant).
std::string_view connection_names(const http::fields& fields, std::span<const std::string_view> names);

// Removes Connection and every header it names, and the fixed hop-by-hop set
// (Keep-Alive, Proxy-Connection, Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade).
// `also_expect` removes Expect too (the gateway answers 100-continue itself).
void strip_hop_by_hop(http::fields& fields, bool also_expect = false);

// Counts header lines named `name` and returns the first value.
struct header_lookup {
    int count = 0;
    std::string_view value;
};
header_lookup find_header(const http::fields& fields, std::string_view name);

// True for headers never kept in a replay record: hop-by-hop, framing and Set-Cookie.
bool excluded_from_record(std::string_view name) noexcept;

} // namespace idemgate::gateway
