// SPDX-License-Identifier: Apache-2.0
#include "core/http_date.hpp"

#include <ctime>

namespace idemgate::gateway {

namespace {

constexpr std::size_t date_length = 29; // "Sun, 06 Nov 1994 08:49:37 GMT"

void two_digits(char* out, int value)
{
    out[0] = static_cast<char>('0' + value / 10);
    out[1] = static_cast<char>('0' + value % 10);
}

void format(std::time_t t, char* out)
{
    std::tm tm{};
    gmtime_r(&t, &tm);
    static constexpr char days[] = "SunMonTueWedThuFriSat";
    static constexpr char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
    std::string_view day(days + 3 * tm.tm_wday, 3);
    std::string_view month(months + 3 * tm.tm_mon, 3);
    int year = tm.tm_year + 1900;
    day.copy(out, 3);
    out[3] = ',';
    out[4] = ' ';
    two_digits(out + 5, tm.tm_mday);
    out[7] = ' ';
    month.copy(out + 8, 3);
    out[11] = ' ';
    two_digits(out + 12, year / 100 % 100);
    two_digits(out + 14, year % 100);
    out[16] = ' ';
    two_digits(out + 17, tm.tm_hour);
    out[19] = ':';
    two_digits(out + 20, tm.tm_min);
    out[22] = ':';
    two_digits(out + 23, tm.tm_sec);
    std::string_view(" GMT").copy(out + 25, 4);
}

} // namespace

std::string http_date(std::int64_t unix_ms)
{
    char text[date_length];
    format(static_cast<std::time_t>(unix_ms / 1000), text);
    return std::string(text, date_length);
}

std::string_view http_date_now() noexcept
{
    // time() is a vDSO read; the text is rebuilt only when the second changes.
    thread_local std::time_t second = -1;
    thread_local char text[date_length];
    std::time_t now = std::time(nullptr);
    if (now != second) {
        format(now, text);
        second = now;
    }
    return {text, date_length};
}

} // namespace idemgate::gateway
