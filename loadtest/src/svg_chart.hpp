// SPDX-License-Identifier: Apache-2.0
#pragma once
// A chart of the HTML report: one <svg> with its axes, grid, tick labels, legend and the data's
// paths, drawn from the data alone (no script, no external file). Axes are linear or logarithmic.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest::detail {

// Text and attribute values, escaped for HTML (& < > " ').
std::string html_escape(std::string_view text);

struct chart_axis {
    double lo = 0, hi = 1;
    bool log = false;
    std::function<std::string(double)> label; // a tick's text
    std::string title;                        // the axis' name, under or beside it
};

class svg_chart {
public:
    static constexpr double width = 760, height = 270;
    static constexpr double left = 74, right = 16, top = 30, bottom = 44; // the legend above

    svg_chart(std::string name, chart_axis x, chart_axis y);

    // Where a value lands, in the SVG's coordinates.
    double px(double x) const;
    double py(double y) const;
    double base() const { return height - bottom; } // the plot's bottom edge

    // A path of the data; `css` picks its colour and fill, `what` is its legend entry and tooltip.
    // An empty `d` is left out.
    void add_path(const std::string& d, std::string css, std::string what);
    // A vertical marker at x (a percentile in the distribution), labelled.
    void add_marker(double x, std::string text);

    std::string render() const;

private:
    struct path {
        std::string d, css, what;
    };
    std::string name_;
    chart_axis x_, y_;
    std::vector<path> paths_;
    std::vector<std::pair<double, std::string>> markers_;
};

// A coordinate as path data writes it: "12.3".
std::string coord(double v);
// Appends a path command with one coordinate ("H12.3") or two ("M12.3 45.6"). Appended piece by
// piece: GCC 12 warns falsely (-Wrestrict) on "..." + std::string.
void put(std::string& d, char command, double v);
void put(std::string& d, char command, double x, double y);

} // namespace idemgate::loadtest::detail
