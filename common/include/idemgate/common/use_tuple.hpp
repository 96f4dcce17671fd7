// SPDX-License-Identifier: Apache-2.0
#pragma once
// The completion token of the coroutines that await an Asio operation's results as a tuple
// rather than as an exception: `auto [ec, n] = co_await socket.async_read_some(buffer, use_tuple);`
// (the data path reports errors as error_code). Defined once here for every file: the unity build
// (IDEMGATE_UNITY) compiles several source files as one translation unit.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace idemgate {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

} // namespace idemgate
