// SPDX-License-Identifier: Apache-2.0
// The sending side of an HTTP/2 stream: the filter's answer (or a local-tier copy, or a refusal)
// as a HEADERS frame and DATA. The fields are those the HTTP/1.1 connection writes for the same
// answer, names in lower case, without the connection-specific ones (RFC 9113 8.2.2).
#include "core/http_date.hpp"
#include "http2/h2_session.hpp"
#include "http2/h2_sink.hpp"
#include "tier/local_tier.hpp"

#include <array>
#include <boost/beast/core/string.hpp>
#include <deque>
#include <nghttp2/nghttp2.h>
#include <vector>

namespace idemgate::gateway::detail {

namespace {

bool connection_specific(std::string_view name)
{
    static constexpr std::array<std::string_view, 6> names{
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"};
    for (auto n : names)
        if (boost::beast::iequals(name, n))
            return true;
    return false;
}

bool bodyless(unsigned status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

// The header block being built: names lower-cased into owned strings (nghttp2 copies them).
class header_block {
public:
    void add(std::string_view name, std::string_view value)
    {
        auto& n = names_.emplace_back(name);
        for (auto& c : n)
            c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
        auto& v = values_.emplace_back(value);
        nv_.push_back({reinterpret_cast<std::uint8_t*>(n.data()), reinterpret_cast<std::uint8_t*>(v.data()),
                       n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
    }
    const nghttp2_nv* data() const { return nv_.data(); }
    std::size_t size() const { return nv_.size(); }

private:
    std::deque<std::string> names_, values_;
    std::vector<nghttp2_nv> nv_;
};

ssize_t read_streamed(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                      std::uint32_t* flags, nghttp2_data_source*, void*)
{
    auto* s = static_cast<h2_stream*>(nghttp2_session_get_stream_user_data(session, id));
    if (!s || !s->sink)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; // resets the stream: the answer is cut
    return s->sink->take(buf, length, flags);
}

ssize_t read_body(nghttp2_session* session, std::int32_t id, std::uint8_t* buf, std::size_t length,
                  std::uint32_t* flags, nghttp2_data_source*, void*)
{
    auto* s = static_cast<h2_stream*>(nghttp2_session_get_stream_user_data(session, id));
    if (!s)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    auto n = std::min(length, s->body.size() - s->sent);
    std::copy_n(s->body.data() + s->sent, n, buf);
    s->sent += n;
    if (s->sent == s->body.size())
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
}

// The header block of an answer: the fields the HTTP/1.1 connection writes for it.
unsigned answer_headers(header_block& block, const config::config& cfg, const h2_stream& s, const handled& h)
{
    unsigned status = h.prerendered ? h.prerendered->record.status : h.response.result_int();
    block.add(":status", std::to_string(status));
    bool has_date = false;
    auto field = [&](std::string_view name, std::string_view value) {
        if (connection_specific(name) || boost::beast::iequals(name, h.status_header) ||
            boost::beast::iequals(name, cfg.request_id_header))
            return; // replaced below, as the HTTP/1.1 connection replaces them
        has_date = has_date || boost::beast::iequals(name, "date");
        block.add(name, value);
    };
    if (h.prerendered) {
        const auto& record = h.prerendered->record;
        for (const auto& f : record.fields)
            field(record.name(f), record.value(f));
    } else {
        for (const auto& f : h.response)
            field(f.name_string(), f.value());
    }
    if (!s.ex.ids.request_id.empty())
        block.add(cfg.request_id_header, s.ex.ids.request_id);
    if (!h.status_header.empty())
        block.add(h.status_header, to_string(h.key_state));
    if (!has_date)
        block.add("date", http_date_now());
    return status;
}

} // namespace

void h2_session::submit(h2_stream& s)
{
    const auto& cfg = s.ex.env->cfg();
    const auto& h = s.ex.answer;
    header_block block;
    unsigned status = answer_headers(block, cfg, s, h);
    s.body =
        h.prerendered ? std::string_view(h.prerendered->record.body) : std::string_view(h.response.body());
    if (s.req.method() == http::verb::head || bodyless(status))
        s.body = {};
    s.state = h2_stream::phase::responding;
    s.due = clock::now() + cfg.timeouts.client_write;
    nghttp2_session_set_stream_user_data(session_, s.id, &s);
    nghttp2_data_provider provider{};
    provider.read_callback = &read_body;
    nghttp2_submit_response(session_, s.id, block.data(), block.size(), s.body.empty() ? nullptr : &provider);
    wake();
}

bool h2_session::submit_streamed(h2_stream& s, const handled& h)
{
    header_block block;
    answer_headers(block, s.ex.env->cfg(), s, h);
    nghttp2_session_set_stream_user_data(session_, s.id, &s);
    nghttp2_data_provider provider{};
    provider.read_callback = &read_streamed;
    int rv = nghttp2_submit_response(session_, s.id, block.data(), block.size(), &provider);
    wake();
    return rv == 0;
}

} // namespace idemgate::gateway::detail
