// SPDX-License-Identifier: Apache-2.0
// `idemgate-loadtest compare`: the --json summaries of two real runs against the real gateway
// (memory store), side by side; the reader's arithmetic without files; bad inputs refused.
#include "loadtest_harness.hpp"

#include <fstream>
#include <idemgate/loadtest/compare.hpp>
#include <sstream>

using namespace loadtest_harness;
namespace lt = idemgate::loadtest;

namespace {

// A run's --json line exactly as the binary printed it, saved to `path`; the parsed summary.
json::object save_summary(std::vector<std::string> args, const std::string& path)
{
    args.push_back("--json");
    child_process p(bin_dir() + "/idemgate-loadtest", std::move(args));
    auto status = p.wait_exit(120s);
    INFO(p.output());
    REQUIRE(status.has_value());
    REQUIRE(*status == 0);
    for (const auto& line : p.lines())
        if (!line.empty() && line.front() == '{') {
            std::ofstream(path, std::ios::binary) << line << "\n";
            return json::parse(line).as_object();
        }
    FAIL("no --json line");
    return {};
}

struct compared {
    int status = -1;
    std::string output;
};

compared compare(std::vector<std::string> args)
{
    args.insert(args.begin(), "compare");
    child_process p(bin_dir() + "/idemgate-loadtest", std::move(args));
    auto status = p.wait_exit(30s);
    REQUIRE(status.has_value());
    return {*status, p.output()};
}

// Every number of a summary outside its series, by the path compare prints.
void number_paths(const json::value& v, const std::string& path, std::vector<std::string>& out)
{
    if (v.is_object()) {
        for (const auto& [k, child] : v.as_object())
            if (!(path.empty() && k == "series"))
                number_paths(child, path.empty() ? std::string(k) : path + "." + std::string(k), out);
    } else if (v.is_array()) {
        for (std::size_t i = 0; i < v.as_array().size(); ++i)
            number_paths(v.as_array()[i], path + "[" + std::to_string(i) + "]", out);
    } else if (v.is_number()) {
        out.push_back(path);
    }
}

// Whether a line of `output` is marked as changed (its last word).
bool any_changed(const std::string& output)
{
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);)
        if (line.size() > 9 && line.compare(line.size() - 9, 9, "  changed") == 0)
            return true;
    return false;
}

// The line of `output` that starts with `figure` and a space.
std::string line_of(const std::string& output, const std::string& figure)
{
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
        auto start = line.find_first_not_of(' ');
        if (start != std::string::npos && line.compare(start, figure.size() + 1, figure + " ") == 0)
            return line.substr(start);
    }
    return "";
}

} // namespace

TEST_SUITE("loadtest compare")
{

    TEST_CASE("compare: the median and interquartile range of a series, and the change beyond spread")
    {
        auto s = lt::spread_of({5, 1, 4, 2, 3});
        CHECK(s.median == 3);
        CHECK(s.iqr == 2); // quartiles 2 and 4
        CHECK(lt::spread_of({7}).iqr == 0);
        CHECK(lt::spread_of({1, 2, 3, 4}).median == 2.5);
        CHECK(lt::changed({3, 2}, {5.5, 1}));     // 2.5 apart, the larger range 2
        CHECK_FALSE(lt::changed({3, 2}, {5, 1})); // 2 apart: within
        CHECK(lt::changed({3, 0.5}, {1, 1.5}));   // either direction
        CHECK_FALSE(lt::changed({3, 0}, {3, 0}));
        // Numbers are kept as written: Boost.JSON's DOM parser would round the second to a double.
        std::string error;
        auto summary =
            lt::read_summary(R"({"tool":"idemgate-loadtest","bytes":{"sent":18446744073709551615},)"
                             R"("big":123456789012345678901234567890,"series":[{"rps":1.5},{"rps":2}]})",
                             error);
        REQUIRE(summary);
        REQUIRE(summary->figures.size() == 2);
        CHECK(summary->figures[0].path == "bytes.sent");
        CHECK(summary->figures[0].text == "18446744073709551615");
        CHECK(summary->figures[1].text == "123456789012345678901234567890");
        CHECK(summary->series_rows == 2);
        CHECK(summary->series.at("rps") == std::vector<double>{1.5, 2});
    }

    TEST_CASE("compare: two real runs side by side, throughput marked as changed, a run against itself not")
    {
        loadtest_setup s;
        temp_dir dir;
        auto a_path = dir.path() + "/closed.json", b_path = dir.path() + "/open.json";
        // A: a closed loop, as fast as the gateway answers; B: an open loop at 50 req/s. A runs 20
        // intervals: with 5, one stalled interval on a busy machine (the suite runs beside others)
        // widened A's interquartile range past the difference of the medians.
        auto a = save_summary({s.url("/api/orders"), "--keys", "20", "-c", "4", "-d", "2s", "--interval",
                               "100ms", "--metrics", s.metrics_url()},
                              a_path);
        auto b = save_summary({s.url("/api/orders"), "--keys", "20", "-c", "2", "-d", "1s", "--interval",
                               "100ms", "-R", "50", "--metrics", s.metrics_url()},
                              b_path);
        auto r = compare({a_path, b_path});
        INFO(r.output);
        CHECK(r.status == 0);
        CHECK(contains(r.output, "A  " + a_path + ": " + s.url("/api/orders") + ", replay, closed loop, "));
        CHECK(contains(r.output, "B  " + b_path + ": " + s.url("/api/orders") + ", replay, open loop, "));
        // Every number of either summary has its line.
        std::vector<std::string> paths;
        number_paths(a, "", paths);
        number_paths(b, "", paths);
        REQUIRE(paths.size() > 40);
        for (const auto& p : paths)
            CHECK_MESSAGE(!line_of(r.output, p).empty(), p << " is not in the comparison");
        // The integers as written, and the ratio B/A.
        auto answers = line_of(r.output, "answers");
        std::istringstream fields(answers);
        std::string name, va, vb, ratio;
        fields >> name >> va >> vb >> ratio;
        CHECK(va == std::to_string(int_at(a, {"answers"})));
        CHECK(vb == std::to_string(int_at(b, {"answers"})));
        double expected =
            static_cast<double>(int_at(b, {"answers"})) / static_cast<double>(int_at(a, {"answers"}));
        CHECK(std::stod(ratio) == doctest::Approx(expected).epsilon(0.002));
        // 50 req/s against a closed loop: far beyond either run's spread.
        auto rps = line_of(r.output, "rps");
        CHECK(rps.size() > 9);
        CHECK(rps.compare(rps.size() - 9, 9, "  changed") == 0);
        // Figures without a series are shown, not judged.
        CHECK_FALSE(contains(line_of(r.output, "bytes.sent"), "changed"));
        CHECK(contains(line_of(r.output, "p50_us"), "("));

        auto same = compare({a_path, a_path});
        INFO(same.output);
        CHECK(same.status == 0);
        CHECK_FALSE(any_changed(same.output));
        CHECK(contains(line_of(same.output, "rps"), "1.000"));
        CHECK(contains(line_of(same.output, "rps"), "within spread"));
    }

    TEST_CASE("compare: an unreadable file, a file that is not JSON or not a summary exits 2 naming it")
    {
        temp_dir dir;
        auto missing = compare({dir.path() + "/none.json", dir.path() + "/none.json"});
        CHECK(missing.status == 2);
        CHECK(contains(missing.output, "cannot read \"" + dir.path() + "/none.json\""));
        auto directory = compare({dir.path(), dir.path()});
        CHECK(directory.status == 2);
        CHECK(contains(directory.output, "cannot read \"" + dir.path() + "\" (a directory)"));
        auto text = dir.write_file("text.json", "idemgate-loadtest http://127.0.0.1/\n  result       PASS\n");
        auto other = dir.write_file("other.json", R"({"answers": 5, "series": []})");
        auto not_json = compare({text, other});
        CHECK(not_json.status == 2);
        CHECK(contains(not_json.output, "\"" + text + "\" is not JSON"));
        auto not_summary = compare({other, other});
        CHECK(not_summary.status == 2);
        CHECK(contains(not_summary.output, "\"" + other + "\" is not an idemgate-loadtest --json summary"));
        auto one = compare({other});
        CHECK(one.status == 2);
        CHECK(contains(one.output, "idemgate-loadtest compare A.json B.json"));
    }

} // TEST_SUITE
