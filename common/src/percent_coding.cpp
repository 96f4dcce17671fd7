// SPDX-License-Identifier: Apache-2.0
#include <boost/url/encoding_opts.hpp>
#include <boost/url/grammar/string_token.hpp>
#include <boost/url/pct_string_view.hpp>
#include <idemgate/common/percent_coding.hpp>

namespace idemgate {

namespace {

namespace urls = boost::urls;

bool decode(std::string_view in, std::string& out, urls::encoding_opts options)
{
    auto encoded = urls::make_pct_string_view(in);
    if (!encoded)
        return false;
    encoded->decode(options, urls::string_token::assign_to(out));
    return true;
}

} // namespace

bool percent_decode(std::string_view in, std::string& out)
{
    return decode(in, out, urls::encoding_opts{});
}

bool form_decode(std::string_view in, std::string& out)
{
    urls::encoding_opts options;
    options.space_as_plus = true;
    return decode(in, out, options);
}

} // namespace idemgate
