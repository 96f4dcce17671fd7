// SPDX-License-Identifier: Apache-2.0
// The one translation unit that compiles Asio's OpenSSL layer (BOOST_ASIO_SEPARATE_COMPILATION),
// used by the Redis store's TLS transport.
#include <boost/asio/ssl/impl/src.hpp>
