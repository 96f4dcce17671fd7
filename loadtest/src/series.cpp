// SPDX-License-Identifier: Apache-2.0
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <idemgate/loadtest/series.hpp>

namespace idemgate::loadtest {

namespace json = boost::json;

void interval_window::answer(std::uint64_t latency_ns, unsigned status)
{
    unsigned cls = status / 100;
    std::lock_guard lock(mutex_);
    latency_.record(latency_ns);
    ++status_class_[cls >= 2 && cls <= 5 ? cls : 0];
}

void interval_window::error()
{
    std::lock_guard lock(mutex_);
    ++errors_;
}

void interval_window::drain(log_histogram& latency, std::array<std::uint64_t, 6>& status_class,
                            std::uint64_t& errors)
{
    std::lock_guard lock(mutex_);
    latency.merge(latency_);
    latency_ = log_histogram{};
    for (std::size_t i = 0; i < status_class.size(); ++i)
        status_class[i] += status_class_[i];
    status_class_ = {};
    errors += errors_;
    errors_ = 0;
}

std::optional<series_format> series_format_of(const std::string& path)
{
    auto ends_with = [&](std::string_view ext) {
        return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
    };
    if (ends_with(".ndjson") || ends_with(".json"))
        return series_format::ndjson;
    if (ends_with(".csv"))
        return series_format::csv;
    return std::nullopt;
}

namespace {

double us(std::uint64_t ns)
{
    return static_cast<double>(ns) / 1000.0;
}

} // namespace

json::object series_row_json(const series_row& row)
{
    json::object o;
    o["t_s"] = row.t_s;
    o["interval_s"] = row.interval_s;
    o["answers"] = row.answers;
    o["rps"] = row.rps;
    o["p50_us"] = us(row.p50_ns);
    o["p99_us"] = us(row.p99_ns);
    o["max_us"] = us(row.max_ns);
    o["2xx"] = row.status_class[2];
    o["3xx"] = row.status_class[3];
    o["4xx"] = row.status_class[4];
    o["5xx"] = row.status_class[5];
    o["other_status"] = row.status_class[0] + row.status_class[1];
    o["errors"] = row.errors;
    o["replays_checked"] = row.replays_checked;
    o["mismatches"] = row.mismatches;
    if (row.executions)
        o["executions"] = *row.executions;
    return o;
}

std::string series_csv_header()
{
    return "t_s,interval_s,answers,rps,p50_us,p99_us,max_us,2xx,3xx,4xx,5xx,other_status,errors,"
           "replays_checked,mismatches,executions\n";
}

std::string series_csv_line(const series_row& row)
{
    char buf[512];
    std::snprintf(
        buf, sizeof buf, "%.3f,%.3f,%llu,%.1f,%.1f,%.1f,%.1f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,",
        row.t_s, row.interval_s, static_cast<unsigned long long>(row.answers), row.rps, us(row.p50_ns),
        us(row.p99_ns), us(row.max_ns), static_cast<unsigned long long>(row.status_class[2]),
        static_cast<unsigned long long>(row.status_class[3]),
        static_cast<unsigned long long>(row.status_class[4]),
        static_cast<unsigned long long>(row.status_class[5]),
        static_cast<unsigned long long>(row.status_class[0] + row.status_class[1]),
        static_cast<unsigned long long>(row.errors), static_cast<unsigned long long>(row.replays_checked),
        static_cast<unsigned long long>(row.mismatches));
    std::string line = buf;
    if (row.executions) {
        std::snprintf(buf, sizeof buf, "%.0f", *row.executions);
        line += buf;
    }
    line += "\n";
    return line;
}

bool series_sink::open(const std::string& path, series_format format, std::string& error)
{
    format_ = format;
    file_ = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
    if (!*file_) {
        error = "--series: cannot write \"" + path + "\"";
        file_.reset();
        return false;
    }
    if (format_ == series_format::csv)
        *file_ << series_csv_header() << std::flush;
    return true;
}

void series_sink::add(const series_row& row)
{
    rows_.push_back(row);
    if (!file_)
        return;
    if (format_ == series_format::csv)
        *file_ << series_csv_line(row);
    else
        *file_ << json::serialize(series_row_json(row)) << "\n";
    file_->flush(); // a row is readable (tail -f) as soon as it is made
    if (!*file_)
        failed_ = true;
}

} // namespace idemgate::loadtest
