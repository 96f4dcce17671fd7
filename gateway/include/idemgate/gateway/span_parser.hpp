// SPDX-License-Identifier: Apache-2.0
#pragma once
// Beast's HTTP/1 parser reading into a message whose fields are span_fields. Beast 1.81's
// http::parser holds a message over basic_fields<Allocator> only; this is the same parser
// (basic_parser's callbacks, a Body reader) over the gateway's fields, for the heads the plain
// readers leave to Beast. The subset the gateway uses: get, release, and the move from a parser
// of another body type that has read only the head.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional/optional.hpp>
#include <cstdint>
#include <idemgate/gateway/span_fields.hpp>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace idemgate::gateway {

template<bool isRequest, class Body>
class span_parser : public boost::beast::http::basic_parser<isRequest> {
    template<bool, class>
    friend class span_parser;
    using string_view = boost::beast::string_view;
    using error_code = boost::beast::error_code;

public:
    using value_type = boost::beast::http::message<isRequest, Body, span_fields>;

    span_parser() : rd_(m_.base(), m_.body()) {}
    span_parser(const span_parser&) = delete;
    span_parser& operator=(const span_parser&) = delete;
    span_parser(span_parser&&) = delete;

    // Takes over a parser of another body type that has read the head and no body.
    template<class OtherBody, class = std::enable_if_t<!std::is_same_v<Body, OtherBody>>>
    explicit span_parser(span_parser<isRequest, OtherBody>&& other)
        : boost::beast::http::basic_parser<isRequest>(std::move(other)), m_(other.release()),
          rd_(m_.base(), m_.body())
    {
        if (other.rd_inited_)
            throw std::invalid_argument{"moved-from parser has a body"};
    }

    value_type& get() noexcept { return m_; }
    const value_type& get() const noexcept { return m_; }
    value_type release() { return std::move(m_); }

private:
    void on_request_impl(boost::beast::http::verb method, string_view method_str, string_view target,
                         int version, error_code& ec) override
    {
        if constexpr (isRequest) {
            if (used_) {
                ec = boost::beast::http::error::stale_parser;
                return;
            }
            used_ = true;
            m_.target(target);
            if (method != boost::beast::http::verb::unknown)
                m_.method(method);
            else
                m_.method_string(method_str);
            m_.version(version);
        }
    }

    void on_response_impl(int code, string_view reason, int version, error_code& ec) override
    {
        if constexpr (!isRequest) {
            if (used_) {
                ec = boost::beast::http::error::stale_parser;
                return;
            }
            used_ = true;
            m_.result(code);
            m_.version(version);
            m_.reason(reason);
        }
    }

    void on_field_impl(boost::beast::http::field name, string_view name_string, string_view value,
                       error_code&) override
    {
        m_.append_line(name, name_string, value);
    }

    // The lines of one name together, as basic_fields keeps them (trailer fields: on_finish_impl).
    void on_header_impl(error_code& ec) override
    {
        m_.group_lines();
        ec = {};
    }

    void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code& ec) override
    {
        rd_.init(content_length, ec);
        rd_inited_ = true;
    }

    std::size_t on_body_impl(string_view body, error_code& ec) override
    {
        return rd_.put(boost::asio::buffer(body.data(), body.size()), ec);
    }

    void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}

    std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) override
    {
        return rd_.put(boost::asio::buffer(body.data(), body.size()), ec);
    }

    void on_finish_impl(error_code& ec) override
    {
        m_.group_lines();
        rd_.finish(ec);
    }

    value_type m_;
    typename Body::reader rd_;
    bool rd_inited_ = false;
    bool used_ = false;
};

template<class Body>
using span_request_parser = span_parser<true, Body>;
template<class Body>
using span_response_parser = span_parser<false, Body>;

} // namespace idemgate::gateway
