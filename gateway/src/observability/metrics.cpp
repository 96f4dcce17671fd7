// SPDX-License-Identifier: Apache-2.0
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/prometheus.hpp>
#include <idemgate/gateway/metrics.hpp>

namespace idemgate::gateway {

std::string metric::outcome_label(std::size_t index)
{
    return "outcome=\"" + std::string(to_string(static_cast<outcome>(index))) + "\"";
}

std::string metric::upstream_outcome_label(std::size_t index)
{
    static constexpr std::string_view classes[] = {"1xx", "2xx", "3xx", "4xx", "5xx"};
    auto action = boost::describe::enum_to_string(static_cast<completion_action>(index / 5), "");
    return "action=\"" + std::string(action) + "\",code=\"" + std::string(classes[index % 5]) + "\"";
}

std::string metric::shadow_label(std::size_t index)
{
    if (index == static_cast<std::size_t>(shadow_finding::none))
        return {};
    auto name = to_string(static_cast<shadow_finding>(index));
    name.remove_prefix(std::string_view("would_").size());
    return "would=\"" + std::string(name) + "\"";
}

namespace {

// One member's series in the family `name`, by the member's kind (IDEMGATE_GATEWAY_METRICS).
void series(std::string& out, std::string_view name, std::string_view labels, const metric::counter& value,
            bool)
{
    prometheus::sample(out, name, labels, static_cast<double>(value.load()));
}

void series(std::string& out, std::string_view name, std::string_view labels, const metric::gauge& value,
            bool)
{
    prometheus::sample(out, name, labels, static_cast<double>(value.load()));
}

void series(std::string& out, std::string_view name, std::string_view labels, const latency_histogram& value,
            bool exemplars)
{
    value.render(out, name, labels, exemplars);
}

template<class T, std::size_t N>
void series(std::string& out, std::string_view name, const metric::labels<N>& labels,
            const std::array<T, N>& values, bool exemplars)
{
    for (std::size_t i = 0; i < N; ++i)
        series(out, name, labels[i], values[i], exemplars);
}

template<class T, std::size_t N>
void series(std::string& out, std::string_view name, metric::labeler labels, const std::array<T, N>& values,
            bool exemplars)
{
    for (std::size_t i = 0; i < N; ++i)
        if (auto text = labels(i); !text.empty())
            series(out, name, text, values[i], exemplars);
}

} // namespace

std::string metrics::render(bool ready, const std::function<void(std::string&)>& extra, bool exemplars) const
{
    std::string out;
    out.reserve(8192);
    std::string_view family;
#define IDEMGATE_METRICS_FAMILY(name, type, help)                                                            \
    family = name;                                                                                           \
    prometheus::header(out, family, type, help);
#define IDEMGATE_METRICS_MEMBER(type, member, labels) series(out, family, labels, member, exemplars);
    IDEMGATE_GATEWAY_METRICS(IDEMGATE_METRICS_FAMILY, IDEMGATE_METRICS_MEMBER)
#undef IDEMGATE_METRICS_FAMILY
#undef IDEMGATE_METRICS_MEMBER
    prometheus::header(out, "idemgate_ready", "gauge",
                       "1 when the gateway is ready (not draining; the store reachable and without a "
                       "condition, unless readiness.store is ignore).");
    prometheus::sample(out, "idemgate_ready", "", ready ? 1.0 : 0.0);
    if (extra)
        extra(out);
    return out;
}

} // namespace idemgate::gateway
