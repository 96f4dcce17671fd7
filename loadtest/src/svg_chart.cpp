// SPDX-License-Identifier: Apache-2.0
#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <idemgate/common/text.hpp>

namespace idemgate::loadtest::detail {

std::string html_escape(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    append_html_escaped(out, text);
    return out;
}

std::string coord(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

void put(std::string& d, char command, double v)
{
    d += command;
    d += coord(v);
}

void put(std::string& d, char command, double x, double y)
{
    put(d, command, x);
    d += ' ';
    d += coord(y);
}

namespace {

// Tick values: 1, 2 or 5 times a power of ten apart on a linear axis (about five of them); the
// powers of ten on a logarithmic one, with 2 and 5 between them when it spans little.
std::vector<double> ticks(const chart_axis& a)
{
    std::vector<double> out;
    if (!(a.hi > a.lo))
        return out;
    if (a.log) {
        double lo = std::log10(a.lo), hi = std::log10(a.hi);
        bool fine = hi - lo < 2.5;
        for (double e = std::floor(lo); e <= std::ceil(hi); ++e)
            for (double m : {1.0, 2.0, 5.0}) {
                if (m != 1 && !fine)
                    continue;
                double v = m * std::pow(10.0, e);
                if (v >= a.lo * 0.999 && v <= a.hi * 1.001)
                    out.push_back(v);
            }
        return out;
    }
    double raw = (a.hi - a.lo) / 5;
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag * (raw / mag < 1.5 ? 1 : raw / mag < 3.5 ? 2 : raw / mag < 7.5 ? 5 : 10);
    for (double v = std::ceil(a.lo / step) * step; v <= a.hi + step * 1e-9; v += step)
        out.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
    return out;
}

double scale(const chart_axis& a, double v)
{
    if (a.log) {
        v = std::max(v, a.lo);
        return (std::log10(v) - std::log10(a.lo)) / (std::log10(a.hi) - std::log10(a.lo));
    }
    return a.hi > a.lo ? (v - a.lo) / (a.hi - a.lo) : 0;
}

} // namespace

svg_chart::svg_chart(std::string name, chart_axis x, chart_axis y)
    : name_(std::move(name)), x_(std::move(x)), y_(std::move(y))
{
}

double svg_chart::px(double x) const
{
    return left + std::clamp(scale(x_, x), 0.0, 1.0) * (width - left - right);
}

double svg_chart::py(double y) const
{
    return top + (1 - std::clamp(scale(y_, y), 0.0, 1.0)) * (height - top - bottom);
}

void svg_chart::add_path(const std::string& d, std::string css, std::string what)
{
    if (!d.empty())
        paths_.push_back({d, std::move(css), std::move(what)});
}

void svg_chart::add_marker(double x, std::string text)
{
    markers_.emplace_back(x, std::move(text));
}

std::string svg_chart::render() const
{
    std::string s = "<svg class=\"chart\" data-chart=\"" + html_escape(name_) + "\" viewBox=\"0 0 " +
                    coord(width) + " " + coord(height) +
                    "\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">\n";
    double x0 = left, x1 = width - right, y0 = top, y1 = base();
    for (double t : ticks(y_)) {
        std::string y = coord(py(t));
        s += "<line class=\"grid\" x1=\"" + coord(x0) + "\" x2=\"" + coord(x1) + "\" y1=\"" + y + "\" y2=\"" +
             y + "\"/><text class=\"tick\" x=\"" + coord(x0 - 6) + "\" y=\"" + y +
             "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + html_escape(y_.label(t)) + "</text>\n";
    }
    for (double t : ticks(x_)) {
        std::string x = coord(px(t));
        s += "<line class=\"grid\" x1=\"" + x + "\" x2=\"" + x + "\" y1=\"" + coord(y0) + "\" y2=\"" +
             coord(y1) + "\"/><text class=\"tick\" x=\"" + x + "\" y=\"" + coord(y1 + 16) +
             "\" text-anchor=\"middle\">" + html_escape(x_.label(t)) + "</text>\n";
    }
    s += "<rect class=\"frame\" x=\"" + coord(x0) + "\" y=\"" + coord(y0) + "\" width=\"" + coord(x1 - x0) +
         "\" height=\"" + coord(y1 - y0) + "\"/>\n";
    s += "<text class=\"axis\" x=\"" + coord((x0 + x1) / 2) + "\" y=\"" + coord(height - 6) +
         "\" text-anchor=\"middle\">" + html_escape(x_.title) + "</text>\n";
    s += "<text class=\"axis\" transform=\"translate(14 " + coord((y0 + y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + html_escape(y_.title) + "</text>\n";
    for (const auto& p : paths_)
        s += "<path class=\"" + html_escape(p.css) + "\" d=\"" + p.d + "\">" +
             (p.what.empty() ? std::string() : "<title>" + html_escape(p.what) + "</title>") + "</path>\n";
    for (const auto& [x, text] : markers_) {
        std::string at = coord(px(x));
        // The label on the side of the line with room for it.
        bool left_of = px(x) > x0 + (x1 - x0) * 0.6;
        s += "<line class=\"marker\" x1=\"" + at + "\" x2=\"" + at + "\" y1=\"" + coord(y0) + "\" y2=\"" +
             coord(y1) + "\"/><text class=\"marker-label\" x=\"" + coord(px(x) + (left_of ? -4 : 4)) +
             "\" y=\"" + coord(y0 + 12) + "\" text-anchor=\"" + (left_of ? "end" : "start") + "\">" +
             html_escape(text) + "</text>\n";
    }
    // The legend: one swatch per named path, above the plot on the right.
    double lx = x1;
    for (auto it = paths_.rbegin(); it != paths_.rend(); ++it) {
        if (it->what.empty())
            continue;
        double w = 7.0 * static_cast<double>(it->what.size()) + 30;
        lx -= w;
        s += "<rect class=\"swatch " + html_escape(it->css) + "\" x=\"" + coord(lx) + "\" y=\"" +
             coord(y0 - 19) + "\" width=\"12\" height=\"9\"/><text class=\"legend\" x=\"" + coord(lx + 16) +
             "\" y=\"" + coord(y0 - 10) + "\">" + html_escape(it->what) + "</text>\n";
    }
    s += "</svg>\n";
    return s;
}

} // namespace idemgate::loadtest::detail
