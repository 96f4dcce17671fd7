// SPDX-License-Identifier: Apache-2.0
// Defaults of store::session's operator operations and of store::backend's optional parts, for
// backends that do not offer them.
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store {

boost::asio::awaitable<lookup_result> session::lookup(scope)
{
    lookup_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

boost::asio::awaitable<boost::system::error_code> session::remove(scope, bool& removed)
{
    removed = false;
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<admit_result> session::admit(std::string_view, std::string_view, const tenant_limits&,
                                                    duration)
{
    admit_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

boost::asio::awaitable<boost::system::error_code> session::leave(std::string_view, std::string_view)
{
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<boost::system::error_code> session::extend(scope, std::string_view, duration)
{
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<boost::system::error_code> session::bury(scope, const record&, duration)
{
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<tombstone_result> session::find_tombstone(scope)
{
    tombstone_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

boost::asio::awaitable<count_result> session::count_execution(scope, duration)
{
    count_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

boost::asio::awaitable<boost::system::error_code> session::schedule_probe(std::string_view, std::int64_t)
{
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<probe_claim> session::claim_probes(std::int64_t, duration, std::size_t)
{
    probe_claim out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

boost::asio::awaitable<boost::system::error_code> session::unschedule_probe(std::string_view)
{
    co_return make_error_code(error::store_unavailable);
}

boost::asio::awaitable<wait_result> session::wait_settled(scope, duration)
{
    wait_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

} // namespace idemgate::store

namespace idemgate::store {

std::string backend::record_id(scope s) const
{
    std::string out;
    out.reserve(s.tenant.size() + 1 + s.key.size());
    out.append(s.tenant);
    out.push_back('\0'); // tenants and keys are visible ASCII: no two scopes read alike
    out.append(s.key);
    return out;
}

void backend::render_metrics(std::string&) const {}

store_status backend::status() const
{
    return {};
}

void backend::set_refusal_policy(const refusal_policy&) {}

duration backend::full_retry_after() const
{
    return duration(1000);
}

namespace {

// Bit i of store_condition is its i-th described enumerator.
constexpr bool conditions_are_bits_in_order()
{
    std::size_t i = 0;
    bool ok = true;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<store_condition>>(
        [&](auto d) { ok = ok && static_cast<unsigned>(d.value) == 1u << i++; });
    return ok;
}
static_assert(conditions_are_bits_in_order(), "store_condition: bit i is the i-th described condition");

} // namespace

std::string_view store_condition_name(std::size_t index) noexcept
{
    return index < store_condition_count
               ? boost::describe::enum_to_string(static_cast<store_condition>(1u << index), "")
               : std::string_view{};
}

} // namespace idemgate::store
