// SPDX-License-Identifier: Apache-2.0
#pragma once
// Arrays with one entry per enumerator (names, metric labels and series, table rows), tied to
// their enumeration. An enumeration defined with BOOST_DEFINE_ENUM_CLASS carries its list of
// enumerators, so enum_count is right whatever is added to it, and one_per<Enum>({...}) does not
// compile unless it is given exactly one entry per enumerator. Where the names are the
// enumerators' own, boost::describe::enum_to_string gives them and there is no array at all.
#include <array>
#include <boost/describe/enumerators.hpp>
#include <boost/mp11/algorithm.hpp>
#include <cstddef>

namespace idemgate {

template<class Enum>
inline constexpr std::size_t enum_count = boost::mp11::mp_size<boost::describe::describe_enumerators<Enum>>::value;

// `entries`, in the enumerators' order, as an array of enum_count<Enum>.
template<class Enum, class T, std::size_t N>
constexpr std::array<T, N> one_per(const T (&entries)[N])
{
    static_assert(N == enum_count<Enum>, "one entry per enumerator, in their order");
    return std::to_array(entries);
}

} // namespace idemgate
