// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <idemgate/gateway/head_splice.hpp>

namespace idemgate::gateway {

namespace {

constexpr std::string_view crlf = "\r\n";

// True when `at` begins with "name: value\r\n". A parsed field usually holds its line in one
// block (Beast lays an element out so): then one comparison.
bool holds_line(std::string_view at, std::string_view name, std::string_view value)
{
    const auto size = name.size() + value.size() + 4;
    if (at.size() < size)
        return false;
    const char* line = name.data();
    const char* value_end = value.data() + value.size();
    if (value.data() == line + name.size() + 2 && line[name.size()] == ':' && line[name.size() + 1] == ' ' &&
        value_end[0] == '\r' && value_end[1] == '\n')
        return std::memcmp(at.data(), line, size) == 0;
    const char* p = at.data();
    return std::memcmp(p, name.data(), name.size()) == 0 && p[name.size()] == ':' &&
           p[name.size() + 1] == ' ' && std::memcmp(p + name.size() + 2, value.data(), value.size()) == 0 &&
           p[size - 2] == '\r' && p[size - 1] == '\n';
}

} // namespace

head_splice::head_splice(std::string_view received, std::string& out) : out_(out)
{
    out_.clear();
    out_.reserve(received.size() + 256);
    // Used only when whole: a request line, then field lines up to the empty line.
    auto first_end = received.find(crlf);
    if (first_end == std::string_view::npos || received.size() < 4 || !received.ends_with("\r\n\r\n"))
        return;
    fields_ = received.substr(0, received.size() - 2);
    cursor_ = first_end + 2;
}

void head_splice::request_line(std::string_view method, std::string_view target)
{
    static constexpr std::string_view version = " HTTP/1.1\r\n";
    const auto size = method.size() + 1 + target.size() + version.size();
    if (cursor_ == size && fields_.starts_with(method) && fields_[method.size()] == ' ' &&
        fields_.substr(method.size() + 1, target.size()) == target &&
        fields_.substr(method.size() + 1 + target.size(), version.size()) == version) {
        run_ = 0;
        return;
    }
    out_.append(method).append(" ").append(target).append(version);
}

std::size_t head_splice::match(std::string_view name, std::string_view value)
{
    if (cursor_ >= fields_.size())
        return none; // past the received lines: a field added before forwarding
    // Lines the parsed request no longer has (replaced before forwarding) are passed over.
    for (auto at = cursor_; at < fields_.size();) {
        if (holds_line(fields_.substr(at), name, value))
            return at;
        auto end = fields_.find(crlf, at);
        if (end == std::string_view::npos)
            break;
        at = end + 2;
    }
    return none;
}

void head_splice::flush()
{
    if (run_ == none)
        return;
    out_.append(fields_.data() + run_, cursor_ - run_);
    run_ = none;
}

void head_splice::render(std::string_view name, std::string_view value)
{
    const char* line = name.data();
    const char* value_end = value.data() + value.size();
    if (value.data() == line + name.size() + 2 && line[name.size()] == ':' && line[name.size() + 1] == ' ' &&
        value_end[0] == '\r' && value_end[1] == '\n')
        out_.append(line, static_cast<std::size_t>(value_end + 2 - line));
    else
        out_.append(name).append(": ").append(value).append(crlf);
}

void head_splice::keep(std::string_view name, std::string_view value)
{
    const auto at = match(name, value);
    if (at == none) {
        flush();
        render(name, value);
        return;
    }
    if (at != cursor_)
        flush();
    if (run_ == none)
        run_ = at;
    cursor_ = at + name.size() + value.size() + 4;
}

void head_splice::skip(std::string_view name, std::string_view value)
{
    flush();
    if (const auto at = match(name, value); at != none)
        cursor_ = at + name.size() + value.size() + 4;
}

void head_splice::add(std::span<const std::string_view> pieces)
{
    flush();
    std::size_t size = 0;
    for (auto piece : pieces)
        size += piece.size();
    auto at = out_.size();
    out_.resize(at + size);
    for (auto piece : pieces) {
        std::memcpy(out_.data() + at, piece.data(), piece.size());
        at += piece.size();
    }
}

std::string_view head_splice::finish()
{
    flush();
    out_.append(crlf);
    return out_;
}

} // namespace idemgate::gateway
