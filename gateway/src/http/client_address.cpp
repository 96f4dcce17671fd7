// SPDX-License-Identifier: Apache-2.0
#include <arpa/inet.h>
#include <boost/beast/core/string.hpp>
#include <idemgate/common/text.hpp>
#include <idemgate/gateway/client_address.hpp>
#include <netinet/in.h>

namespace idemgate::gateway {

namespace {

bool is_digits(std::string_view s)
{
    if (s.empty() || s.size() > 5)
        return false;
    for (char c : s)
        if (c < '0' || c > '9')
            return false;
    return true;
}

// An address with an optional port: "a.b.c.d", "a.b.c.d:port", "v6", "[v6]", "[v6]:port".
// Its normalized text and bytes, or nullopt.
std::optional<forwarded_hop> address_hop(std::string_view text)
{
    std::string_view host = text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos)
            return std::nullopt;
        host = text.substr(1, close - 1);
        auto rest = text.substr(close + 1);
        if (!rest.empty() && !(rest.front() == ':' && is_digits(rest.substr(1))))
            return std::nullopt;
        if (host.find(':') == std::string_view::npos)
            return std::nullopt; // brackets hold IPv6 only
    } else if (const auto colon = text.find(':');
               colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
        // One colon: IPv4 with a port.
        if (!is_digits(text.substr(colon + 1)))
            return std::nullopt;
        host = text.substr(0, colon);
        if (host.find('.') == std::string_view::npos)
            return std::nullopt;
    }
    auto bytes = config::parse_ip(host);
    if (!bytes)
        return std::nullopt;
    forwarded_hop hop;
    hop.bytes = *bytes;
    char buffer[INET6_ADDRSTRLEN] = {};
    static constexpr unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(mapped, mapped + 12, bytes->begin()) && host.find(':') == std::string_view::npos)
        inet_ntop(AF_INET, bytes->data() + 12, buffer, sizeof buffer);
    else
        inet_ntop(AF_INET6, bytes->data(), buffer, sizeof buffer);
    hop.address = buffer;
    return hop;
}

// RFC 7239 node names that are not addresses: "unknown" and obfuscated "_identifiers".
bool is_identifier(std::string_view text)
{
    if (text == "unknown" || text == "UNKNOWN")
        return true;
    if (text.size() < 2 || text.front() != '_')
        return false;
    for (char c : text.substr(1))
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    return true;
}

// A node, or the obfuscated/unknown identifier of one (optionally with a port, RFC 7239 6).
std::optional<forwarded_hop> node_hop(std::string_view text)
{
    if (auto hop = address_hop(text))
        return hop;
    auto name = text;
    if (const auto colon = text.rfind(':'); colon != std::string_view::npos && text.front() != '[')
        name = text.substr(0, colon);
    if (is_identifier(name))
        return forwarded_hop{};
    return std::nullopt;
}

bool is_tchar(char c)
{
    static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           extra.find(c) != std::string_view::npos;
}

// One Forwarded field value: elements separated by ',', pairs by ';', each token=value where
// value is a token or a quoted-string. Appends each element's for= hop to `hops`.
bool parse_forwarded(std::string_view s, std::vector<forwarded_hop>& hops)
{
    std::size_t i = 0;
    auto skip_space = [&] {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
            ++i;
    };
    bool in_element = false;
    std::optional<forwarded_hop> element_for;
    bool element_has_for = false;
    auto end_element = [&] {
        if (in_element)
            hops.push_back(element_has_for ? *element_for : forwarded_hop{});
        in_element = false;
        element_has_for = false;
        element_for.reset();
    };
    for (;;) {
        skip_space();
        if (i == s.size())
            break;
        if (s[i] == ',') { // an empty element, or the end of one
            end_element();
            ++i;
            continue;
        }
        if (s[i] == ';') {
            ++i;
            continue;
        }
        const auto name_start = i;
        while (i < s.size() && is_tchar(s[i]))
            ++i;
        const auto name = s.substr(name_start, i - name_start);
        if (name.empty() || i == s.size() || s[i] != '=')
            return false;
        ++i;
        std::string value;
        if (i < s.size() && s[i] == '"') {
            ++i;
            bool closed = false;
            while (i < s.size()) {
                char c = s[i++];
                if (c == '"') {
                    closed = true;
                    break;
                }
                if (c == '\\') {
                    if (i == s.size())
                        return false;
                    c = s[i++];
                }
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t')
                    return false;
                value.push_back(c);
            }
            if (!closed)
                return false;
        } else {
            const auto start = i;
            while (i < s.size() && is_tchar(s[i]))
                ++i;
            value = s.substr(start, i - start);
            if (value.empty())
                return false;
        }
        in_element = true;
        if (boost::beast::iequals(name, "for")) {
            if (element_has_for)
                return false; // RFC 7239 4: a parameter at most once per element
            element_has_for = true;
            element_for = node_hop(value);
            if (!element_for)
                return false;
        }
        skip_space();
        if (i < s.size() && s[i] != ';' && s[i] != ',')
            return false;
    }
    end_element();
    return true;
}

} // namespace

std::optional<std::vector<forwarded_hop>> x_forwarded_for_hops(std::span<const std::string_view> fields)
{
    std::vector<forwarded_hop> hops;
    for (auto field : fields) {
        while (!field.empty()) {
            const auto comma = field.find(',');
            auto item = trim_ows(field.substr(0, comma));
            field = comma == std::string_view::npos ? std::string_view{} : field.substr(comma + 1);
            if (item.empty())
                continue;
            if (item == "unknown") {
                hops.push_back({});
                continue;
            }
            auto hop = address_hop(item);
            if (!hop)
                return std::nullopt;
            hops.push_back(std::move(*hop));
        }
    }
    return hops;
}

std::optional<std::vector<forwarded_hop>> forwarded_hops(std::span<const std::string_view> fields)
{
    std::vector<forwarded_hop> hops;
    for (auto field : fields)
        if (!parse_forwarded(field, hops))
            return std::nullopt;
    return hops;
}

std::optional<std::string> client_from_hops(const std::vector<forwarded_hop>& hops,
                                            const std::vector<config::cidr>& trusted)
{
    for (auto hop = hops.rbegin(); hop != hops.rend(); ++hop) {
        if (hop->address.empty())
            return std::nullopt; // the client is not named: the peer's address stays
        if (!config::contains_address(trusted, hop->bytes))
            return hop->address;
    }
    if (hops.empty())
        return std::nullopt;
    return hops.front().address; // every hop trusted: the farthest one
}

std::optional<std::string> forwarded_client(std::span<const std::string_view> x_forwarded_for,
                                            std::span<const std::string_view> forwarded,
                                            const std::vector<config::cidr>& trusted)
{
    auto hops = !x_forwarded_for.empty() ? x_forwarded_for_hops(x_forwarded_for) : forwarded_hops(forwarded);
    if (!hops)
        return std::nullopt;
    return client_from_hops(*hops, trusted);
}

} // namespace idemgate::gateway
