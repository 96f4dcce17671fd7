// SPDX-License-Identifier: Apache-2.0
// idemgate-loadtest: load-tests an idempotency gateway and checks every replay (see --help).
#include <boost/json/serialize.hpp>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <iostream>
#include <unistd.h>

#ifndef IDEMGATE_VERSION
#define IDEMGATE_VERSION "dev"
#endif

int main(int argc, char** argv)
{
    using namespace idemgate::loadtest;
    options opts;
    try {
        opts = parse_options(std::vector<std::string>(argv + 1, argv + argc));
    } catch (const usage_error& e) {
        std::cerr << "idemgate-loadtest: " << e.what() << "\n";
        return 2;
    }
    if (opts.help) {
        std::cout << usage_text();
        return 0;
    }
    if (opts.version) {
        std::cout << "idemgate-loadtest " << IDEMGATE_VERSION << "\n";
        return 0;
    }
    try {
        // The live progress line only on a terminal: logs and CI get the summary alone.
        std::ostream* progress = ::isatty(STDERR_FILENO) ? &std::cerr : nullptr;
        run_result result = run(opts, progress);
        if (opts.json)
            std::cout << boost::json::serialize(json_report(result)) << "\n";
        else
            write_text_report(std::cout, result);
        return result.ok() ? 0 : 1;
    } catch (const run_error& e) {
        std::cerr << "idemgate-loadtest: " << e.what() << "\n";
        return 2;
    }
}
