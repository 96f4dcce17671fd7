// SPDX-License-Identifier: Apache-2.0
// Reading a --json summary back for `compare`. Boost.JSON's DOM parser (1.81) keeps a number only
// as an int64, a uint64 or a double, rounding what does not fit; its SAX parser hands over each
// number's text as well, which is what is kept here.
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <charconv>
#include <cmath>
#include <idemgate/loadtest/compare.hpp>

namespace idemgate::loadtest {

namespace json = boost::json;

namespace {

class summary_builder {
public:
    // The limits of the DOM parser, so that the same texts fail.
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    explicit summary_builder(run_summary& s) : s_(s) {}

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_object_begin(json::error_code&) { return open(false); }
    bool on_object_end(std::size_t, json::error_code&) { return close(); }
    bool on_array_begin(json::error_code&) { return open(true); }
    bool on_array_end(std::size_t, json::error_code&) { return close(); }
    bool on_key_part(json::string_view s, std::size_t, json::error_code&)
    {
        key_.append(s.data(), s.size());
        return true;
    }
    bool on_key(json::string_view s, std::size_t, json::error_code&)
    {
        key_.append(s.data(), s.size());
        if (!stack_.empty())
            stack_.back().key = std::move(key_);
        key_.clear();
        return true;
    }
    bool on_string_part(json::string_view s, std::size_t, json::error_code&)
    {
        text_.append(s.data(), s.size());
        return true;
    }
    bool on_string(json::string_view s, std::size_t, json::error_code&)
    {
        text_.append(s.data(), s.size());
        std::string v = std::move(text_);
        text_.clear();
        return text(std::move(v));
    }
    bool on_number_part(json::string_view s, json::error_code&)
    {
        number_.append(s.data(), s.size());
        return true;
    }
    bool on_int64(std::int64_t, json::string_view s, json::error_code&) { return number(s); }
    bool on_uint64(std::uint64_t, json::string_view s, json::error_code&) { return number(s); }
    bool on_double(double, json::string_view s, json::error_code&) { return number(s); }
    bool on_bool(bool b, json::error_code&) { return text(b ? "true" : "false"); }
    bool on_null(json::error_code&) { return text("null"); }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

    bool root_is_object() const { return root_object_; }

private:
    struct frame {
        bool array = false;
        std::size_t index = 0;
        std::string key;
    };

    std::string path() const
    {
        std::string p;
        for (std::size_t i = 0; i < stack_.size(); ++i) {
            if (stack_[i].array) {
                p += '[';
                p += std::to_string(stack_[i].index);
                p += ']';
            } else {
                if (!p.empty())
                    p += '.';
                p += stack_[i].key;
            }
        }
        return p;
    }
    // Inside "series": depth 3 is the root object, the array, a row's object.
    bool in_series() const
    {
        return stack_.size() == 3 && !stack_[0].array && stack_[0].key == "series" && stack_[1].array &&
               !stack_[2].array;
    }
    void advance()
    {
        if (!stack_.empty() && stack_.back().array)
            ++stack_.back().index;
    }
    bool open(bool array)
    {
        if (stack_.empty() && !seen_root_) {
            seen_root_ = true;
            root_object_ = !array;
        }
        stack_.push_back({array, 0, {}});
        return true;
    }
    bool close()
    {
        bool series_array = stack_.size() == 2 && stack_[0].key == "series" && stack_.back().array;
        if (series_array)
            s_.series_rows = stack_.back().index;
        stack_.pop_back();
        advance();
        return true;
    }
    bool text(std::string v)
    {
        if (!stack_.empty())
            s_.texts[path()] = std::move(v);
        advance();
        return true;
    }
    bool number(json::string_view last)
    {
        number_.append(last.data(), last.size());
        summary_figure f;
        f.text = std::move(number_);
        number_.clear();
        auto [ptr, ec] = std::from_chars(f.text.data(), f.text.data() + f.text.size(), f.value);
        (void)ptr;
        if (ec == std::errc::result_out_of_range)
            f.value = f.text.front() == '-' ? -HUGE_VAL : HUGE_VAL;
        if (in_series()) {
            const std::string& column = stack_[2].key;
            auto& values = s_.series[column];
            if (values.empty())
                s_.series_columns.push_back(column);
            // A column a row lacks (executions without --metrics) stays shorter; rows keep order.
            values.push_back(f.value);
        } else if (!stack_.empty() && !(stack_.size() >= 1 && stack_[0].key == "series")) {
            f.path = path();
            s_.figures.push_back(std::move(f));
        }
        advance();
        return true;
    }

    run_summary& s_;
    std::vector<frame> stack_;
    std::string key_, text_, number_;
    bool seen_root_ = false, root_object_ = false;
};

} // namespace

std::optional<run_summary> read_summary(std::string_view json_text, std::string& error)
{
    run_summary s;
    json::basic_parser<summary_builder> parser(json::parse_options{}, s);
    json::error_code ec;
    auto used = parser.write_some(false, json_text.data(), json_text.size(), ec);
    if (ec || used != json_text.size()) {
        error = "is not JSON (" + (ec ? ec.message() : std::string("text after the JSON value")) + ")";
        return std::nullopt;
    }
    auto tool = s.texts.find("tool");
    if (!parser.handler().root_is_object() || tool == s.texts.end() || tool->second != "idemgate-loadtest") {
        error = "is not an idemgate-loadtest --json summary (no \"tool\": \"idemgate-loadtest\")";
        return std::nullopt;
    }
    return s;
}

} // namespace idemgate::loadtest
