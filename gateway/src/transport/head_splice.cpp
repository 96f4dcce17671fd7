// SPDX-License-Identifier: Apache-2.0
#include "transport/head_splice.hpp"

#include <cstring>

namespace idemgate::gateway {

namespace {

constexpr std::string_view crlf = "\r\n";

// True when `at` holds "name: value\r\n".
bool holds_line(std::string_view at, std::string_view name, std::string_view value)
{
    const auto size = name.size() + value.size() + 4;
    if (at.size() < size)
        return false;
    const char* p = at.data();
    return std::memcmp(p, name.data(), name.size()) == 0 && p[name.size()] == ':' &&
           p[name.size() + 1] == ' ' && std::memcmp(p + name.size() + 2, value.data(), value.size()) == 0 &&
           p[size - 2] == '\r' && p[size - 1] == '\n';
}

} // namespace

head_splice::head_splice(std::string_view received, std::string& scratch) : scratch_(scratch)
{
    scratch_.clear();
    // Used only when whole: a request line, then field lines up to the empty line.
    auto first_end = received.find(crlf);
    if (first_end == std::string_view::npos || received.size() < 4 || !received.ends_with("\r\n\r\n"))
        return;
    received_ = received;
    cursor_ = first_end + 2;
}

void head_splice::request_line(std::string_view method, std::string_view target)
{
    static constexpr std::string_view version = " HTTP/1.1\r\n";
    const auto size = method.size() + 1 + target.size() + version.size();
    if (received_.size() >= size && received_.starts_with(method) && received_[method.size()] == ' ' &&
        received_.substr(method.size() + 1, target.size()) == target &&
        received_.substr(method.size() + 1 + target.size(), version.size()) == version) {
        push(true, 0, size);
        return;
    }
    const auto offset = scratch_.size();
    scratch_.append(method).append(" ").append(target).append(version);
    push(false, offset, size);
}

std::size_t head_splice::match(std::string_view name, std::string_view value)
{
    if (received_.empty())
        return std::string_view::npos;
    // The field lines end before the final empty line.
    const auto fields = received_.substr(0, received_.size() - 2);
    // Lines the parsed request no longer has (replaced before forwarding) are passed over.
    for (auto at = cursor_; at < fields.size();) {
        if (holds_line(fields.substr(at), name, value)) {
            cursor_ = at + name.size() + value.size() + 4;
            return at;
        }
        auto end = fields.find(crlf, at);
        if (end == std::string_view::npos)
            break;
        at = end + 2;
    }
    return std::string_view::npos;
}

void head_splice::push(bool received, std::size_t offset, std::size_t size)
{
    if (!pieces_.empty()) {
        auto& last = pieces_.back();
        if (last.received == received && last.offset + last.size == offset) {
            last.size += size;
            return;
        }
    }
    pieces_.push_back({received, offset, size});
}

void head_splice::render(std::string_view name, std::string_view value)
{
    const auto offset = scratch_.size();
    scratch_.append(name).append(": ").append(value).append(crlf);
    push(false, offset, scratch_.size() - offset);
}

void head_splice::keep(std::string_view name, std::string_view value)
{
    if (auto at = match(name, value); at != std::string_view::npos)
        push(true, at, name.size() + value.size() + 4);
    else
        render(name, value);
}

void head_splice::skip(std::string_view name, std::string_view value)
{
    match(name, value);
}

void head_splice::add(std::string_view name, std::string_view value)
{
    render(name, value);
}

void head_splice::add(std::string_view name, std::initializer_list<std::string_view> value)
{
    const auto offset = scratch_.size();
    scratch_.append(name).append(": ");
    for (auto part : value)
        scratch_.append(part);
    scratch_.append(crlf);
    push(false, offset, scratch_.size() - offset);
}

request_buffers head_splice::finish(std::string_view body)
{
    // The empty line: the received one when the last received line kept is the last one sent.
    if (!pieces_.empty() && pieces_.back().received &&
        pieces_.back().offset + pieces_.back().size == received_.size() - 2) {
        pieces_.back().size += 2;
    } else {
        scratch_.append(crlf);
        push(false, scratch_.size() - 2, 2);
    }
    request_buffers out;
    for (const auto& p : pieces_)
        out.push_back(p.received ? boost::asio::buffer(received_.data() + p.offset, p.size)
                                 : boost::asio::buffer(scratch_.data() + p.offset, p.size));
    if (!body.empty())
        out.push_back(boost::asio::buffer(body.data(), body.size()));
    return out;
}

} // namespace idemgate::gateway
