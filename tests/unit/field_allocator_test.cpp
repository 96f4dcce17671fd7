// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/field_allocator.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace idemgate::gateway;

namespace {

template<class Fields>
Fields make(const std::vector<std::pair<std::string, std::string>>& lines)
{
    Fields f;
    for (const auto& [n, v] : lines)
        f.insert(n, v);
    return f;
}

template<class Fields>
std::vector<std::pair<std::string, std::string>> lines_of(const Fields& f)
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& field : f)
        out.emplace_back(std::string(field.name_string()), std::string(field.value()));
    return out;
}

} // namespace

TEST_CASE("field allocator: a freed block is handed out again for a request of its size class")
{
    if (!field_pool::pooling)
        return; // sanitizer builds hand every block to the allocator
    field_allocator<char> a;
    char* first = a.allocate(100);
    a.deallocate(first, 100);
    char* second = a.allocate(70); // the same 128-byte class
    CHECK(second == first);
    char* other_class = a.allocate(40); // 64-byte class: not the block above
    CHECK(other_class != first);
    a.deallocate(second, 70);
    a.deallocate(other_class, 40);
    // Larger than the largest class: straight to the allocator, never cached.
    char* big = a.allocate(4096);
    CHECK(big != nullptr);
    a.deallocate(big, 4096);
}

TEST_CASE("field allocator: blocks cross threads; each thread releases its cache at exit")
{
    pooled_fields made_here = make<pooled_fields>({{"Host", "h"}, {"X-Long", std::string(300, 'x')}});
    std::thread other([f = std::move(made_here)]() mutable {
        // Freed on the other thread (joins its cache), then that thread ends.
        f.clear();
        pooled_fields again = make<pooled_fields>({{"Host", "h2"}});
        CHECK(again[http::field::host] == "h2");
    });
    other.join();
    pooled_fields after = make<pooled_fields>({{"Host", "h3"}});
    CHECK(after[http::field::host] == "h3");
}

TEST_CASE("span fields: the rules give the same verdicts and edits as http::fields")
{
    const std::vector<std::pair<std::string, std::string>> lines = {{"Host", "example.test"},
                                                                    {"Connection", "keep-alive, X-Drop"},
                                                                    {"X-Drop", "1"},
                                                                    {"Keep-Alive", "timeout=5"},
                                                                    {"X-Keep", "2"},
                                                                    {"connection", "x-also"},
                                                                    {"X-Also", "3"},
                                                                    {"Expect", "100-continue"},
                                                                    {"Transfer-Encoding", "chunked"}};
    auto plain = make<http::fields>(lines);
    auto pooled = make<span_fields>(lines);
    CHECK(check_request_framing(pooled, 11, "/a", "POST") == check_request_framing(plain, 11, "/a", "POST"));
    CHECK(find_header(pooled, "x-drop").count == 1);
    static constexpr std::string_view names[] = {"X-Keep"};
    CHECK(connection_names(pooled, names).empty());
    strip_hop_by_hop(plain, true);
    strip_hop_by_hop(pooled, true);
    const std::vector<std::pair<std::string, std::string>> kept = {{"Host", "example.test"}, {"X-Keep", "2"}};
    CHECK(lines_of(plain) == kept);
    CHECK(lines_of(pooled) == kept);
}
