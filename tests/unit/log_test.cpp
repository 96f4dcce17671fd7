// SPDX-License-Identifier: Apache-2.0
// The application log's level threshold, its lifecycle lines and the coalescing of repeated
// lines, observed through a line sink (the hook the access log's writer uses).
#include <boost/json/parse.hpp>
#include <doctest/doctest.h>
#include <idemgate/common/log.hpp>
#include <string>
#include <vector>

namespace ilog = idemgate::log;

namespace {

class collected_lines : public ilog::line_sink {
public:
    collected_lines() { ilog::set_line_sink(this); }
    ~collected_lines()
    {
        ilog::set_line_sink(nullptr);
        ilog::set_level(ilog::level::info);
    }
    void take(std::string&& line) noexcept override { lines.push_back(std::move(line)); }

    boost::json::object at(std::size_t i) const { return boost::json::parse(lines.at(i)).as_object(); }

    std::vector<std::string> lines;
};

} // namespace

TEST_SUITE_BEGIN("log");

TEST_CASE("lines below the level are not written; lifecycle lines always are")
{
    collected_lines out;
    ilog::set_level(ilog::level::warn);
    ilog::info("below the level");
    ilog::warn("at the level", {{"k", 1}});
    ilog::error("above the level");
    ilog::lifecycle("listening");
    REQUIRE(out.lines.size() == 3);
    CHECK(out.at(0)["msg"] == "at the level");
    CHECK(out.at(0)["level"] == "warn");
    CHECK(out.at(0)["k"] == 1);
    CHECK(out.lines[0].back() == '\n');
    CHECK(out.at(1)["level"] == "error");
    CHECK(out.at(2)["msg"] == "listening");
    CHECK(out.at(2)["level"] == "info");
    CHECK_FALSE(ilog::enabled(ilog::level::info));
    ilog::set_level(ilog::level::debug);
    CHECK(ilog::enabled(ilog::level::debug));
}

TEST_CASE("a repeated line of a group is counted, and the count rides on the group's next line")
{
    collected_lines out;
    const std::string group = "test-group-" + std::to_string(ilog::now_unix_ms());
    for (int i = 0; i < 3; ++i)
        ilog::coalesced(ilog::level::warn, "connection lost", group, {{"address", group}});
    REQUIRE(out.lines.size() == 1);
    CHECK_FALSE(out.at(0).contains("repeated"));

    // Another group is not affected.
    ilog::coalesced(ilog::level::warn, "connection lost", group + "-other", {});
    REQUIRE(out.lines.size() == 2);

    // The state changed: written at once, with what was left out before.
    ilog::coalesced(ilog::level::info, "reconnected", group, {});
    REQUIRE(out.lines.size() == 3);
    CHECK(out.at(2)["msg"] == "reconnected");
    CHECK(out.at(2)["previous_repeated"] == 2);

    // After the window the same line is written again, with its own count.
    ilog::coalesced(ilog::level::info, "reconnected", group, {}, 0);
    REQUIRE(out.lines.size() == 4);
    CHECK_FALSE(out.at(3).contains("repeated"));
    ilog::coalesced(ilog::level::info, "reconnected", group, {}, 60000);
    ilog::coalesced(ilog::level::info, "reconnected", group, {}, 0);
    REQUIRE(out.lines.size() == 5);
    CHECK(out.at(4)["repeated"] == 1);

    // Below the level: neither written nor counted.
    ilog::set_level(ilog::level::error);
    ilog::coalesced(ilog::level::warn, "connection lost", group, {});
    ilog::set_level(ilog::level::info);
    ilog::coalesced(ilog::level::warn, "connection lost", group, {});
    REQUIRE(out.lines.size() == 6);
    CHECK_FALSE(out.at(5).contains("previous_repeated"));
}

TEST_SUITE_END();
