// SPDX-License-Identifier: Apache-2.0
// Defaults of store::backend's optional parts, for backends that do not offer them, and the
// checks of the condition and capability bits.
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/store.hpp>

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

void backend::record_unreadable(std::string_view record_id, std::size_t bytes, std::string_view why) const
{
    log::coalesced(log::level::error, "stored record could not be opened; answered as corrupt", why,
                   {{"store", kind()}, {"record", record_id}, {"bytes", bytes}, {"why", why}});
}

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

// Bit i of a flag enumeration is its i-th described enumerator.
template<class Flags>
constexpr bool bits_in_order()
{
    std::size_t i = 0;
    bool ok = true;
    boost::mp11::mp_for_each<boost::describe::describe_enumerators<Flags>>(
        [&](auto d) { ok = ok && static_cast<unsigned>(d.value) == 1u << i++; });
    return ok;
}
static_assert(bits_in_order<store_condition>(), "store_condition: bit i is the i-th described condition");
static_assert(bits_in_order<capability>(), "capability: bit i is the i-th described capability");

} // namespace

std::string_view store_condition_name(std::size_t index) noexcept
{
    return index < store_condition_count
               ? boost::describe::enum_to_string(static_cast<store_condition>(1u << index), "")
               : std::string_view{};
}

} // namespace idemgate::store
