// SPDX-License-Identifier: Apache-2.0
// idemgate-loadtest: load-tests an idempotency gateway and checks every replay (see --help).
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <idemgate/loadtest/compare.hpp>
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
    if (argc >= 2 && std::string_view(argv[1]) == "compare")
        return compare_command(std::vector<std::string>(argv + 2, argv + argc), std::cout, std::cerr);
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
    // The report's file is opened before the run, so that a path that cannot be written stops
    // the run before it sends anything.
    std::ofstream report;
    if (!opts.report_path.empty()) {
        report.open(opts.report_path, std::ios::binary | std::ios::trunc);
        if (!report) {
            std::cerr << "idemgate-loadtest: --report: cannot write \"" << opts.report_path << "\"\n";
            return 2;
        }
    }
    try {
        // The live progress line only on a terminal: logs and CI get the summary alone.
        std::ostream* progress = ::isatty(STDERR_FILENO) ? &std::cerr : nullptr;
        run_result result = run(opts, progress);
        if (report.is_open()) {
            write_html_report(report, result);
            report.close();
            if (!report)
                result.failures.push_back("--report: writing \"" + opts.report_path + "\" failed");
        }
        if (opts.json)
            std::cout << boost::json::serialize(json_report(result)) << "\n";
        else
            write_text_report(std::cout, result);
        return result.ok() ? 0 : 1;
    } catch (const run_error& e) {
        if (report.is_open()) { // nothing ran: no page rather than an empty one
            report.close();
            std::error_code ignored;
            std::filesystem::remove(opts.report_path, ignored);
        }
        std::cerr << "idemgate-loadtest: " << e.what() << "\n";
        return 2;
    }
}
