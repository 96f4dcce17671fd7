// SPDX-License-Identifier: Apache-2.0
// The one translation unit that compiles Boost.URL (its headers come with Boost's; no library
// to link).
#include <boost/url/src.hpp>
