// SPDX-License-Identifier: Apache-2.0
#include "core/problem.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <string>

namespace idemgate::gateway {

http::response<http::string_body, span_fields>
make_problem(std::string_view type_base, const problem_answer& a, unsigned version, bool keep_alive)
{
    const problem& p = a.type;
    unsigned status = a.status_override ? a.status_override : static_cast<unsigned>(p.status);
    boost::json::object body;
    std::string type;
    type.reserve(type_base.size() + p.slug.size());
    type += type_base;
    type += p.slug;
    body["type"] = std::move(type);
    body["title"] = p.title;
    body["status"] = status;
    body["detail"] = a.detail;
    if (!a.instance.empty())
        body["instance"] = a.instance;
    for (const auto& [name, value] : a.members)
        body[name] = value;
    http::response<http::string_body, span_fields> res{http::int_to_status(status), version};
    res.set(http::field::content_type, "application/problem+json");
    res.set(http::field::cache_control, "no-store");
    res.body() = boost::json::serialize(body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

} // namespace idemgate::gateway
