// SPDX-License-Identifier: Apache-2.0
// The admin console: its files over plain HTTP (no token, the content security policy, 404 with
// the admin API off), the API reads it shows (configuration, reloads, upstreams: behind the
// token), and the console itself in a real headless Chromium driven over the DevTools protocol
// (tests/support/cdp_driver.py): nothing before sign-in, a held key resolved with its button and then
// retried, a key made of markup shown as text. Store-neutral: run over the memory store only.
#include "gateway_fixture.hpp"
#include "reload_support.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <idemgate/test/chromium.hpp>
#include <regex>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

gateway_options console_options()
{
    gateway_options options;
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    // A route in shadow mode, for the shadow report.
    options.extra_routes = "  - path_prefix: \"/shadow/\"\n    upstream: orders\n    idempotency:\n"
                           "      methods: [POST]\n      mode: shadow\n";
    return options;
}

const std::vector<std::pair<std::string, std::string>>& console_auth()
{
    static const std::vector<std::pair<std::string, std::string>> h{
        {"Authorization", "Bearer " + admin_token}};
    return h;
}

http_response console_get(gateway_fixture& f, const std::string& path, bool token = true)
{
    static const std::vector<std::pair<std::string, std::string>> none;
    return http_request(f.gateway->admin_port(), "GET", path, token ? console_auth() : none, {}, io_timeout);
}

// `text` as a JavaScript string literal (JSON's is one).
std::string js_string(const std::string& text)
{
    return boost::json::serialize(boost::json::value(text));
}

// The steps run in Chromium: one object per step that ran, and what the page logged.
struct driver_run {
    std::vector<boost::json::object> steps;
    boost::json::array console;
};

driver_run drive_chromium(const boost::json::array& steps)
{
    // install-deps installs Chromium with everything the tests need: its absence is a failure.
    auto run = run_in_chromium(boost::json::serialize(steps));
    driver_run out;
    INFO("cdp_driver output:\n" << run.output);
    REQUIRE(run.exit_status.has_value());
    for (const auto& line : run.steps)
        out.steps.push_back(boost::json::parse(line).as_object());
    out.console = boost::json::parse(run.console).as_array();
    CHECK(*run.exit_status == 0);
    REQUIRE(out.steps.size() == steps.size());
    return out;
}

boost::json::object cdp_step(std::string_view op, std::string_view js_or_url, int timeout_ms = 0)
{
    boost::json::object s{{"op", op}};
    s[op == "goto" ? "url" : op == "screenshot" ? "path" : "js"] = js_or_url;
    if (timeout_ms)
        s["timeout_ms"] = timeout_ms;
    return s;
}

// The console messages that are errors: a refused inline script or style or a load from another
// origin (CSP, source "security"), an exception, a console.error. With `network`, the failed
// loads too (an answer >= 400).
std::vector<std::string> page_errors(const boost::json::array& console, bool network = false)
{
    std::vector<std::string> out;
    for (const auto& m : console) {
        const auto& o = m.as_object();
        auto kind = std::string(o.at("kind").as_string());
        bool from_network = o.contains("source") && o.at("source") == "network";
        // The browser's own request for /favicon.ico (the console has none) is not the console's.
        if (from_network && o.contains("url") &&
            std::string(o.at("url").as_string()).ends_with("/favicon.ico"))
            continue;
        if (kind == "exception" || kind == "console.error" ||
            ((kind == "log.error" || kind == "log.warning") && (network || !from_network)))
            out.push_back(kind + ": " + boost::json::serialize(o));
    }
    return out;
}

} // namespace

TEST_SUITE_BEGIN("admin console" * needs_store("memory"));

TEST_CASE("the console's files need no token and carry a content security policy; /admin leads to /admin/; "
          "the admin API off, 404")
{
    gateway_fixture f(console_options());
    auto page = console_get(f, "/admin/", false);
    CHECK(page.status == 200);
    CHECK(page.header("content-type") == "text/html; charset=utf-8");
    CHECK(page.header("content-security-policy") == "default-src 'self'; frame-ancestors 'none'");
    CHECK(page.header("x-content-type-options") == "nosniff");
    // Its script and style are files of its own origin, named relatively; nothing inline.
    CHECK(page.body.find("<script src=\"console.js\" defer></script>") != std::string::npos);
    CHECK(page.body.find("<link rel=\"stylesheet\" href=\"console.css\">") != std::string::npos);
    CHECK(std::regex_search(page.body, std::regex("<script[^>]*>[^<]")) == false);
    CHECK(std::regex_search(page.body, std::regex("<style|\\sstyle=|\\son[a-z]+=", std::regex::icase)) ==
          false);
    CHECK(std::regex_search(page.body, std::regex("(src|href)=\"(https?:)?//")) == false);
    for (const auto& [name, type] : {std::pair<std::string, std::string>{"console.js", "text/javascript"},
                                     {"console.css", "text/css"}}) {
        CAPTURE(name);
        auto file = console_get(f, "/admin/" + name, false);
        CHECK(file.status == 200);
        CHECK(file.header("content-type") == type + "; charset=utf-8");
        CHECK(file.header("content-security-policy") == "default-src 'self'; frame-ancestors 'none'");
        CHECK(file.body.find("SPDX-License-Identifier: Apache-2.0") != std::string::npos);
    }
    CHECK(console_get(f, "/admin/console.css", false).body.find("url(") == std::string::npos);
    auto post = http_request(f.gateway->admin_port(), "POST", "/admin/", {}, {}, io_timeout);
    CHECK(is_problem(post, 405));
    CHECK(post.header("allow") == "GET, HEAD");
    // The console's address without its slash leads to it: relative, the query kept.
    for (const char* method : {"GET", "HEAD"}) {
        CAPTURE(method);
        auto bare = http_request(f.gateway->admin_port(), method, "/admin?from=bookmark", {}, {}, io_timeout);
        CHECK(bare.status == 308);
        CHECK(bare.header("location") == "admin/?from=bookmark");
    }

    // An unknown API path is 404, its detail naming every endpoint there is.
    auto unknown = console_get(f, "/admin/v1/nothing");
    CHECK(is_problem(unknown, 404));
    const auto detail = std::string(parse_object(unknown.body)["detail"].as_string());
    for (const char* endpoint :
         {"records", "records/resolve", "held", "shadow", "config", "reloads", "upstreams", "reload"}) {
        CAPTURE(endpoint);
        CHECK(std::regex_search(detail, std::regex(std::string("/admin/v1/") + endpoint + "(,|$)")));
    }

    // Every data path still needs the token.
    for (const char* path :
         {"/admin/v1/config", "/admin/v1/reloads", "/admin/v1/upstreams", "/admin/secret.txt"}) {
        CAPTURE(path);
        CHECK(is_problem(console_get(f, path, false), 401));
    }

    gateway_options off = console_options();
    off.top_level.clear();
    gateway_fixture without_api(off);
    for (const char* path : {"/admin", "/admin/", "/admin/console.js", "/admin/console.css"}) {
        CAPTURE(path);
        CHECK(is_problem(console_get(without_api, path, false), 404));
    }
}

TEST_CASE("GET /admin/v1/config, /reloads and /upstreams: the running configuration, the last reloads, the "
          "fleet")
{
    gateway_fixture f(console_options());
    auto config = console_get(f, "/admin/v1/config");
    CHECK(config.status == 200);
    CHECK(config.header("content-type") == "application/yaml; charset=utf-8");
    CHECK(config.header("idemgate-config-generation") == "1");
    CHECK(config.body.find("token_env: IDEMGATE_TEST_ADMIN_TOKEN") != std::string::npos);
    CHECK(config.body.find(admin_token) == std::string::npos); // the secret as its variable only
    CHECK(config.body.find("path_prefix: /shadow/") != std::string::npos);

    CHECK(parse_object(console_get(f, "/admin/v1/reloads").body)["reloads"].as_array().empty());
    auto applied = parse_object(
        http_request(f.gateway->admin_port(), "POST", "/admin/v1/reload", console_auth(), {}, io_timeout)
            .body);
    REQUIRE(applied["reloaded"] == true);
    // A file with a problem is refused, and listed with its problem.
    auto good = read_text(f.gateway->config_path());
    write_text(f.gateway->config_path(), replaced(good, "threads: 2", "threads: 2\nlock_ttl_typo: 1"));
    auto refused =
        http_request(f.gateway->admin_port(), "POST", "/admin/v1/reload", console_auth(), {}, io_timeout);
    CHECK(is_problem(refused, 422));
    auto reloads = parse_object(console_get(f, "/admin/v1/reloads").body)["reloads"].as_array();
    REQUIRE(reloads.size() == 2);
    auto newest = reloads[0].as_object(), older = reloads[1].as_object();
    CHECK(newest["result"] == "refused");
    CHECK(newest["generation"] == 2); // the one kept
    REQUIRE(newest["problems"].as_array().size() == 1);
    CHECK(std::string(newest["problems"].as_array()[0].as_string()).find("lock_ttl_typo") !=
          std::string::npos);
    CHECK(newest["sha256"].as_string().size() == 64);
    CHECK(newest["sha256"] != applied["sha256"]);
    CHECK(older["result"] == "applied");
    CHECK(older["generation"] == 2);
    CHECK(older["sha256"] == applied["sha256"]);
    CHECK(older["problems"].as_array().empty());
    CHECK(older["trigger"] == "POST /admin/v1/reload");
    CHECK(std::regex_match(std::string(older["at"].as_string()),
                           std::regex("20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-9:]{8}\\.[0-9]{3}Z")));

    // Three refused connects eject the address nobody listens on (eject_after_failures: 3).
    for (int i = 0; i < 3; ++i)
        CHECK(is_problem(f.post("/down/orders", unique_key("console-down"), "{}"), 502));
    auto fleet = parse_object(console_get(f, "/admin/v1/upstreams").body);
    CHECK(fleet["generation"] == 2);
    std::map<std::string, boost::json::object> by_name;
    for (const auto& u : fleet["upstreams"].as_array())
        by_name[std::string(u.as_object().at("name").as_string())] = u.as_object();
    REQUIRE(by_name.size() == 2);
    auto orders = by_name["orders"]["endpoints"].as_array();
    REQUIRE(orders.size() == 1);
    CHECK(orders[0].as_object()["address"] == boost::json::value(f.upstream.address()));
    CHECK(orders[0].as_object()["healthy"] == true);
    CHECK(orders[0].as_object()["ejected"] == false);
    CHECK(orders[0].as_object()["ejections"] == 0);
    auto nowhere = by_name["nowhere"]["endpoints"].as_array();
    REQUIRE(nowhere.size() == 1);
    CHECK(nowhere[0].as_object()["healthy"] == false);
    CHECK(nowhere[0].as_object()["ejected"] == true);
    CHECK(nowhere[0].as_object()["ejections"] == 1);
    CHECK(by_name["nowhere"]["ejections_total"] == 1);
}

TEST_CASE("the console in Chromium: a sign-in form and no data without the token; the data after signing in")
{
    gateway_fixture f(console_options());
    REQUIRE(f.post("/api/orders", unique_key("console-traffic"), "{}").status == 201);
    const std::string url = "http://127.0.0.1:" + std::to_string(f.gateway->admin_port()) + "/admin/";
    boost::json::array steps{
        cdp_step("goto", url),
        cdp_step("wait", "document.readyState === 'complete' && !document.getElementById('sign-in').hidden"),
        // (a) nothing but the form: no row, no configuration, no counter, no call made yet.
        cdp_step("eval", "({rows: document.querySelectorAll('#console tbody tr, #console li').length,"
                         " hidden: document.getElementById('console').hidden,"
                         " text: document.getElementById('console').innerText,"
                         " config: document.getElementById('config-text').textContent,"
                         " stored: sessionStorage.length,"
                         " calls: performance.getEntriesByType('resource').map((e) => e.name)"
                         "   .filter((n) => n.includes('/v1/') || n.includes('metrics')).length})"),
        cdp_step("type", "document.getElementById('token')"),
        cdp_step("click", "document.getElementById('sign-in-button')"),
        // (b) signed in: the configuration, the fleet, the counters.
        cdp_step("wait", "document.getElementById('config-text').textContent.includes('routes:')"
                         " && document.querySelectorAll('#upstream-table tbody tr').length === 2"
                         " && document.querySelectorAll('#outcomes tbody td.n').length > 0"),
        cdp_step("eval", "({url: location.href, stored: sessionStorage.getItem('idemgate.admin.token'),"
                         " upstreams: document.getElementById('upstream-table').tBodies[0].innerText,"
                         " routes: document.getElementById('routes').tBodies[0].innerText,"
                         " signin_hidden: document.getElementById('sign-in').hidden})"),
        cdp_step("click", "document.getElementById('sign-out')"),
        cdp_step("eval",
                 "({rows: document.querySelectorAll('#console tbody tr').length,"
                 " config: document.getElementById('config-text').textContent, stored: sessionStorage.length,"
                 " signin_hidden: document.getElementById('sign-in').hidden})"),
    };
    steps[3].as_object()["text"] = admin_token;
    auto run = drive_chromium(steps);
    for (const auto& s : run.steps)
        CHECK_MESSAGE(s.at("ok") == true, boost::json::serialize(s));
    auto before = run.steps[2].at("value").as_object();
    CHECK(before["rows"] == 0);
    CHECK(before["hidden"] == true);
    CHECK(before["config"] == "");
    CHECK(before["stored"] == 0);
    CHECK(before["calls"] == 0);
    CHECK(std::string(before["text"].as_string()).find("orders") == std::string::npos);
    auto after = run.steps[6].at("value").as_object();
    CHECK(after["url"] == boost::json::value(url)); // the token never in a URL
    CHECK(after["stored"] == boost::json::value(admin_token));
    CHECK(after["signin_hidden"] == true);
    CHECK(std::string(after["upstreams"].as_string()).find(f.upstream.address()) != std::string::npos);
    CHECK(std::string(after["routes"].as_string()).find("/api/") != std::string::npos);
    auto out = run.steps[8].at("value").as_object();
    CHECK(out["rows"] == 0);
    CHECK(out["config"] == "");
    CHECK(out["stored"] == 0);
    CHECK(out["signin_hidden"] == false);
    INFO(boost::json::serialize(run.console));
    CHECK(page_errors(run.console).empty());
}

TEST_CASE("the console in Chromium: a held key resolved with its button and retried; a key of markup shown "
          "as text")
{
    gateway_fixture f(console_options());
    const std::string held = unique_key("console-held");
    // Client input that would run as script if it reached the page as markup.
    const std::string markup =
        "<script>window.__pwned=1</script><svg/onload=window.__pwned=2>" + unique_key("k");
    for (const auto& key : {held, markup}) {
        // The upstream reads the request and dies without running it: the key is held.
        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Drop", "1"}});
        CHECK(is_problem(first, 502));
        CHECK(first.header("idempotency-status") == "held");
    }
    CHECK(is_problem(f.post("/api/orders", held, "{}"), 409));
    // Some shadow traffic for the report: a retry the upstream runs again, a key reused.
    const std::string twice = unique_key("console-shadow");
    for (const char* body : {"{\"n\":1}", "{\"n\":1}", "{\"n\":2}"})
        CHECK(f.post("/shadow/orders", twice, body).status == 201);
    const long executed_before = f.executions();

    const std::string url = "http://127.0.0.1:" + std::to_string(f.gateway->admin_port()) + "/admin/";
    const auto row_of = [](const std::string& key) {
        return "[...document.querySelectorAll('#held-keys tr.held-row')].find((r) => "
               "r.querySelector('code.key')?.textContent === " +
               js_string(key) + ")";
    };
    temp_dir dir;
    const std::string shot = dir.path() + "/console.png";
    boost::json::array steps{
        cdp_step("goto", url),
        cdp_step("wait", "document.readyState === 'complete' && !document.getElementById('sign-in').hidden"),
        cdp_step("type", "document.getElementById('token')"),
        cdp_step("click", "document.getElementById('sign-in-button')"),
        // (c) the held key is listed, (d) so is the key of markup, as text.
        cdp_step("wait", row_of(held) + " && " + row_of(markup)),
        cdp_step(
            "eval",
            "({text: " + row_of(markup) +
                ".querySelector('code.key').textContent,"
                " children: " +
                row_of(markup) +
                ".querySelector('code.key').childElementCount,"
                " scripts: document.scripts.length, svg: document.querySelectorAll('#held-keys svg').length,"
                " pwned: typeof window.__pwned})"),
        // Every section filled, for the screenshot.
        cdp_step("wait", "document.getElementById('config-text').textContent.includes('routes:')"
                         " && document.querySelectorAll('#upstream-table tbody tr').length === 2"
                         " && document.querySelectorAll('#outcomes tbody td.n').length > 0"
                         " && document.querySelectorAll('#shadow-table tbody tr').length > 0"),
        cdp_step("screenshot", shot),
        // The chart's legend: every label drawn, none over another.
        cdp_step("eval",
                 "[...document.querySelectorAll('#shadow-chart g.legend-item')].map((g) => {"
                 " const r = g.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"),
        cdp_step("type", row_of(held) + ".querySelector('input.reason')"),
        cdp_step("click", row_of(held) + ".querySelector('button.resolve-not-executed')"),
        cdp_step("wait", "!" + row_of(held) + " && document.getElementById('banner').textContent"),
    };
    steps[2].as_object()["text"] = admin_token;
    steps[9].as_object()["text"] = "the order service has no order for this key";
    auto run = drive_chromium(steps);
    for (const auto& s : run.steps)
        CHECK_MESSAGE(s.at("ok") == true, boost::json::serialize(s));
    auto shown = run.steps[5].at("value").as_object();
    CHECK(shown["text"] == boost::json::value(markup));
    CHECK(shown["children"] == 0);
    CHECK(shown["scripts"] == 1); // console.js alone
    CHECK(shown["svg"] == 0);
    CHECK(shown["pwned"] == "undefined");
    CHECK(std::string(run.steps[11].at("value").as_string()).find("not_executed") != std::string::npos);
    const auto legend = run.steps[8].at("value").as_array();
    CHECK(legend.size() == 4);
    for (std::size_t i = 0; i < legend.size(); ++i) {
        const auto& a = legend[i].as_array();
        CHECK(a[2].to_number<double>() > a[0].to_number<double>() + 20); // a swatch and a label
        for (std::size_t j = i + 1; j < legend.size(); ++j) {
            const auto& b = legend[j].as_array();
            const bool apart = a[2].to_number<double>() <= b[0].to_number<double>() ||
                               b[2].to_number<double>() <= a[0].to_number<double>() ||
                               a[3].to_number<double>() <= b[1].to_number<double>() ||
                               b[3].to_number<double>() <= a[1].to_number<double>();
            CHECK_MESSAGE(apart, "legend items " << i << " and " << j << " overlap: " << legend);
        }
    }
    {
        INFO(boost::json::serialize(run.console));
        CHECK(page_errors(run.console, true).empty()); // every call answered, none refused
    }
    CHECK(read_text(shot).rfind("\x89PNG", 0) == 0);
    if (const char* keep = std::getenv("IDEMGATE_CONSOLE_SCREENSHOT"))
        std::filesystem::copy_file(shot, keep, std::filesystem::copy_options::overwrite_existing);

    // Released by the button: the next retry runs, once; the key of markup is still held.
    auto retry = f.post("/api/orders", held, "{}");
    CHECK(retry.status == 201);
    CHECK(f.executions() == executed_before + 1);
    auto again = f.post("/api/orders", held, "{}");
    CHECK(again.status == 201);
    CHECK(again.header("idempotent-replayed") == "true");
    CHECK(f.executions() == executed_before + 1);
    CHECK(is_problem(f.post("/api/orders", markup, "{}"), 409));
}

TEST_SUITE_END();
