// SPDX-License-Identifier: Apache-2.0
#pragma once
// HTTP/1.1 rules the gateway enforces itself: strict request framing (Beast 1.81's parser lets
// some smuggling shapes through) and hop-by-hop header removal (RFC 9110 7.6.1).
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/container/small_vector.hpp>
#include <idemgate/gateway/span_fields.hpp>
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
    bad_target,                           // not origin-form, http(s) absolute-form, or "*" for OPTIONS
    target_bytes,                         // a byte outside visible ASCII in the target (RFC 9112 3)
    target_fragment,                      // "#..." in the target: a fragment is never sent
    target_userinfo,                      // absolute-form with userinfo ("http://user@host/")
    host_mismatch,                        // absolute-form whose authority is not the Host header
    non_canonical_method,                 // "post", "Post": a standard method not spelled in upper case
    connection_names_host,                // Connection: Host would strip Host on the way upstream
    bad_host,                             // Host is not host[:port] (a list, spaces, '@', '/', ...)
};

std::string_view describe(framing_violation v) noexcept;

// Checks the header as parsed. `version` is 10 or 11. `method` is the method as sent: methods
// are case-sensitive (RFC 9110 9.1) but legacy upstreams often normalise them, so "post" could
// run as POST while the gateway did not guard it; such spellings are refused (as nginx does).
// The functions over fields take http::fields or span_fields (span_fields.hpp).
framing_violation check_request_framing(const http::fields& fields, unsigned version, std::string_view target,
                                        std::string_view method = {});
framing_violation check_request_framing(const span_fields& fields, unsigned version, std::string_view target,
                                        std::string_view method = {});

// The forms of request target the gateway accepts (RFC 9112 3.2); authority-form (CONNECT) is
// refused.
enum class target_form { origin, absolute, asterisk };

struct request_target {
    framing_violation violation = framing_violation::none;
    target_form form = target_form::origin;
    bool https = false;              // absolute-form: the scheme is https
    std::string_view authority;      // absolute-form: host[:port], never empty
    std::string_view path_and_query; // absolute-form: what follows the authority ("", "/..." or "?...")
};

// Reads a target as sent. Every byte must be visible ASCII (0x21-0x7E) and none a '#': a client
// never sends a fragment, and a target holding one (or raw UTF-8) would be forwarded and
// fingerprinted as something the origin reads otherwise. "*" is accepted for OPTIONS only.
request_target parse_request_target(std::string_view target, std::string_view method);

// For a request that passed check_request_framing: an absolute-form target becomes origin-form
// (its path, "/" when empty, then its query) and its authority becomes Host when the request
// had none (HTTP/1.0). Returns false (and changes nothing) for the other forms.
template<class Fields>
bool to_origin_form(http::request_header<Fields>& header);

// The first of `names` (case-insensitive; empty names ignored) that a Connection header lists,
// or "" when none. Host is always checked by check_request_framing; the idempotency filter
// checks the headers that form the scope (key, tenant).
std::string_view connection_names(const http::fields& fields, std::span<const std::string_view> names);
std::string_view connection_names(const span_fields& fields, std::span<const std::string_view> names);

// Removes Connection and every header it names, and the fixed hop-by-hop set
// (Keep-Alive, Proxy-Connection, Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade).
// `also_expect` removes Expect too (the gateway answers 100-continue itself).
void strip_hop_by_hop(http::fields& fields, bool also_expect = false);
void strip_hop_by_hop(span_fields& fields, bool also_expect = false);

// The lines strip_hop_by_hop removes, asked line by line without changing the fields (the
// forwarded head is written from the received lines). Holds views into the Connection lines.
class hop_by_hop_filter {
public:
    hop_by_hop_filter(const http::fields& fields, bool also_expect);
    hop_by_hop_filter(const span_fields& fields, bool also_expect);
    bool drops(http::field name, std::string_view name_string) const;

private:
    template<class Fields>
    void read(const Fields& fields);
    boost::container::small_vector<std::string_view, 8> named_;
    bool also_expect_;
};

// True when two field names are the same name (case-insensitive). Lengths are compared first:
// most names differ in length, and a request has a handful of fields; then the bytes as they
// are (a name usually arrives spelt as configured), and only then letter by letter.
inline bool same_field_name(std::string_view a, std::string_view b) noexcept
{
    return a.size() == b.size() && (a == b || boost::beast::iequals(a, b));
}

// Counts header lines named `name` and returns the first value.
struct header_lookup {
    int count = 0;
    std::string_view value;

    // One more line of that name: counted, its value kept when it is the first.
    void add(std::string_view line_value) noexcept
    {
        if (count++ == 0)
            value = line_value;
    }
};
header_lookup find_header(const http::fields& fields, std::string_view name);
header_lookup find_header(const span_fields& fields, std::string_view name);

// True for headers never kept in a replay record: hop-by-hop, framing and Set-Cookie.
bool excluded_from_record(std::string_view name) noexcept;
// The same for a parsed line: `name` is its field enum (unknown for a name Beast does not list),
// `name_string` its name as received. Looked up by enum where there is one.
bool excluded_from_record(http::field name, std::string_view name_string) noexcept;

// True when an unconsumed header line of a request begins with SP or HT (obs-fold, refused:
// RFC 9112 5.2 lets a server reject it, and Beast would join it into the previous value).
// `line_start` says whether the bytes before `pending` ended a line. Only the header part (up to
// the empty line) is scanned.
bool has_obs_fold(std::string_view pending, bool line_start) noexcept;

} // namespace idemgate::gateway
