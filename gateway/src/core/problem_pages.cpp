// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <idemgate/common/text.hpp>
#include <idemgate/gateway/problem_pages.hpp>

namespace idemgate::gateway {

namespace {

namespace p = problems;

// One entry per type of problem_types.hpp; a type two refusals share appears once.
constexpr std::array docs{
    problem_doc{&p::bad_request,
                "The request could not be read as HTTP/1.1. Fix the request; sending it again "
                "unchanged gets the same answer."},
    problem_doc{&p::plain_http_to_tls, "This port serves HTTPS only. Send the request with https://."},
    problem_doc{&p::bad_framing, "The request's length was ambiguous (for example both Content-Length and "
                                 "Transfer-Encoding). Send one framing; nothing was executed."},
    problem_doc{
        &p::bad_connection_header,
        "The Connection header named the idempotency key or tenant header, which would have removed it "
        "on the way. Remove that name from Connection; nothing was executed."},
    problem_doc{&p::missing_key,
                "This route requires an idempotency key on this method. Generate a unique key "
                "for the operation, send it, and reuse it for every retry of that operation."},
    problem_doc{
        &p::invalid_key,
        "The key was malformed or outside the published key format (the detail says which). Send a key "
        "of the format in /.well-known/idempotency; nothing was executed."},
    problem_doc{&p::missing_tenant,
                "This route keeps keys per tenant and the tenant header was missing. Send "
                "it; nothing was executed."},
    problem_doc{&p::missing_client_certificate,
                "This route takes the tenant from a verified client certificate. Connect with one."},
    problem_doc{&p::invalid_tenant,
                "The tenant was malformed or given twice. Send it once, as visible ASCII."},
    problem_doc{&p::unauthorized, "The operator's admin API needs its bearer token."},
    problem_doc{&p::record_not_found, "No record exists for this scope and key."},
    problem_doc{&p::record_not_held,
                "Only a held key (state outcome_unknown) is resolved, and this key holds something else, "
                "or its record changed while it was being resolved (a probe or a retry settled it). Look "
                "it up again before deciding."},
    problem_doc{&p::no_route, "No route of the gateway covers this path. Check the URL."},
    problem_doc{&p::method_not_allowed,
                "The path exists but not for this method; the Allow field lists the methods it answers."},
    problem_doc{&p::invalid_configuration,
                "The reload was refused and the running configuration is kept: fix each entry of "
                "problems (each names its key path, line and column), then reload again."},
    problem_doc{&p::method_not_supported,
                "CONNECT asks for a tunnel, which the gateway does not open: nothing was forwarded. "
                "Send the request itself to the gateway."},
    problem_doc{&p::invalid_path,
                "The path has a '%' not followed by two hexadecimal digits, or a '..' segment that climbs "
                "above the root, so no route can be told for it (the detail says where). Fix the path; "
                "nothing was executed."},
    problem_doc{&p::in_flight,
                "The first request with this key is still being processed. Retry after the Retry-After "
                "seconds with the same key and body: you will get its answer, and it runs only once."},
    problem_doc{&p::outcome_unknown,
                "The first request with this key was sent on and no answer came back, so it may or may not "
                "have taken effect. Do not send it again under a new key: check the resource (or the "
                "client lookup path, if the API has one) and contact the operator."},
    problem_doc{&p::released,
                "The first request with this key failed and the key was freed. Retry after Retry-After with "
                "the same key; the retry executes."},
    problem_doc{&p::tenant_quota,
                "Your tenant started too many new operations. Retry after Retry-After with the same key; "
                "nothing was executed."},
    problem_doc{
        &p::too_many_waiting,
        "Too many duplicates are waiting for first answers. Retry after Retry-After with the same key."},
    problem_doc{&p::mismatch,
                "This key was already used for a different request (method, path or body). Reusing a key "
                "for another operation is a client bug: use a new key for a new operation. The first "
                "answer's Location, if any, is in the problem's location member and a Link rel=original."},
    problem_doc{&p::answer_not_replayable,
                "The first request with this key ran, but its answer was too large to record (or an operator "
                "confirmed that it ran), so it cannot be sent again. Its status and time are in "
                "original_status and original_time; fetch the "
                "resource it made instead of retrying. Nothing was executed this time."},
    problem_doc{&p::record_expired,
                "The first request with this key ran, and its record has expired (the route keeps a "
                "tombstone for a while after record_ttl). Its status and time are in original_status and "
                "original_time; nothing was executed this time. Check the resource; use a new key only "
                "for a new operation."},
    problem_doc{&p::body_too_large, "The request body was over the gateway's limit; nothing was executed."},
    problem_doc{&p::header_too_large,
                "The request header was over the gateway's limit; nothing was executed."},
    problem_doc{&p::request_timeout,
                "The request did not arrive in time; nothing was executed. Send it again "
                "with the same key."},
    problem_doc{
        &p::bad_gateway,
        "The service behind the gateway could not be reached or answered invalid HTTP. Retry with the "
        "same key: the gateway makes sure the operation runs at most once."},
    problem_doc{&p::gateway_timeout,
                "The service behind the gateway did not answer in time; the operation may have taken effect. "
                "Retry with the same key: it is replayed or refused, never run twice."},
    problem_doc{&p::store_unavailable,
                "The gateway's idempotency store is unavailable, so it cannot guarantee a single execution; "
                "nothing was executed. Retry later with the same key."},
    problem_doc{&p::store_full,
                "The gateway's idempotency store has no room for a new key until older records expire; "
                "nothing was executed. Retry after the Retry-After seconds with the same key."},
    problem_doc{&p::shutting_down, "The gateway is shutting down. Retry with the same key; another instance "
                                   "answers."},
};

} // namespace

std::span<const problem_doc> problem_docs() noexcept
{
    return docs;
}

const problem_doc* find_problem_doc(std::string_view slug) noexcept
{
    for (const auto& d : docs)
        if (d.type->slug == slug)
            return &d;
    return nullptr;
}

std::optional<std::string> problem_page(std::string_view slug)
{
    const auto* doc = find_problem_doc(slug);
    if (!doc)
        return std::nullopt;
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>";
    append_html_escaped(out, doc->type->title);
    out += "</title></head>\n<body>\n<h1>";
    append_html_escaped(out, doc->type->title);
    out += "</h1>\n<p>Problem type <code>";
    append_html_escaped(out, doc->type->slug);
    out += "</code>, HTTP status " + std::to_string(static_cast<unsigned>(doc->type->status)) +
           " (a reused key may be answered 422 where the route says so).</p>\n<h2>What to do</h2>\n<p>";
    append_html_escaped(out, doc->advice);
    out += "</p>\n<p>The gateway's idempotency contract: <a href=\"/.well-known/idempotency\">"
           "/.well-known/idempotency</a>.</p>\n</body></html>\n";
    return out;
}

} // namespace idemgate::gateway
