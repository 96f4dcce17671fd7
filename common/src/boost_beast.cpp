// SPDX-License-Identifier: Apache-2.0
// The one translation unit that compiles Beast (BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/beast/src.hpp>
