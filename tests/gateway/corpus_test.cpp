// SPDX-License-Identifier: Apache-2.0
// The request-parsing corpus (tests/corpus/*.case, format in tests/corpus/README.md): each file's
// bytes go over a fresh connection to one real gateway, and the answers, the connection's fate and
// what the upstream executed are checked against the file's expectation.
#include "gateway_fixture.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

using namespace idemgate::test;

namespace {

namespace fs = std::filesystem;

// One entry of `expect:`.
enum class answer { forwarded, bad_request, bad_request_close, body_too_large, header_too_large, closed };

struct expected_forward {
    std::string method;
    std::string target;
    std::string body;
};

struct corpus_case {
    std::string name;
    std::vector<answer> expect;
    std::vector<expected_forward> forwards;
    std::vector<int> or_status;
    std::vector<std::string> upstream_absent; // lower-case names
    // (lower-case name, value) the upstream must have received; "${UPSTREAM}" in the value
    // stands for the test upstream's host:port.
    std::vector<std::pair<std::string, std::string>> upstream_has;
    bool half_close = false;
    bool keep_alive = true;
    std::string pending; // "defect-N", "finding" or empty
    // Request bytes, split where the client awaits 100 Continue or pauses; `then_await_100[i]`
    // says which comes after segments[i].
    std::vector<std::string> segments;
    std::vector<bool> then_await_100;
    std::vector<std::string> keys; // the keys ${KEY...} stood for
};

// The sizes the corpus files are written against (tests/corpus/README.md).
const std::string corpus_limits = "  max_header_bytes: 16KiB\n  max_request_body: 4KiB\n";
// A catch-all route, for targets whose path is "/" (OPTIONS *, an absolute-form URI without a path).
const std::string corpus_routes = "  - path_prefix: \"/\"\n    upstream: orders\n";
constexpr milliseconds case_timeout = 2s;
constexpr milliseconds pause_between_segments = 50ms; // ${pause}
const std::string sentinel_target = "/plain/corpus-sentinel";

fs::path corpus_dir()
{
    if (const char* dir = std::getenv("IDEMGATE_CORPUS_DIR"))
        return dir;
    // The source tree's, named by the build (__FILE__ is relative under a compiler cache's base
    // directory).
    return fs::path(IDEMGATE_SOURCE_DIR) / "tests" / "corpus";
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// Bytes as a reader can see them in a failure message: escapes for control bytes, bounded.
std::string printable(std::string_view bytes, std::size_t limit = 600)
{
    std::string out;
    for (unsigned char c : bytes.substr(0, limit)) {
        if (c == '\r')
            out += "\\r";
        else if (c == '\n')
            out += "\\n";
        else if (c == '\\')
            out += "\\\\";
        else if (c < 0x20 || c >= 0x7f) {
            static constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (bytes.size() > limit)
        out += "...(" + std::to_string(bytes.size()) + " bytes)";
    return out;
}

// Expands escapes and ${...} placeholders (not ${await-100}, which splits the raw bytes first).
class expander {
public:
    explicit expander(corpus_case& c) : case_(c) {}

    std::string expand(std::string_view text)
    {
        std::string out;
        for (std::size_t i = 0; i < text.size();) {
            char c = text[i];
            if (c == '\\') {
                if (i + 1 >= text.size())
                    throw std::runtime_error("a backslash ends the text");
                char e = text[i + 1];
                i += 2;
                switch (e) {
                case 'r': out += '\r'; break;
                case 'n': out += '\n'; break;
                case 't': out += '\t'; break;
                case '0': out += '\0'; break;
                case '\\': out += '\\'; break;
                case 'x': {
                    if (i + 2 > text.size() || !std::isxdigit(static_cast<unsigned char>(text[i])) ||
                        !std::isxdigit(static_cast<unsigned char>(text[i + 1])))
                        throw std::runtime_error("\\x needs two hex digits");
                    out += static_cast<char>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16));
                    i += 2;
                    break;
                }
                default: throw std::runtime_error(std::string("unknown escape \\") + e);
                }
            } else if (text.substr(i, 2) == "${") {
                std::size_t end = matching_brace(text, i + 2);
                out += placeholder(text.substr(i + 2, end - (i + 2)));
                i = end + 1;
            } else {
                out += c;
                ++i;
            }
        }
        return out;
    }

private:
    static std::size_t matching_brace(std::string_view text, std::size_t from)
    {
        int depth = 1;
        for (std::size_t i = from; i < text.size(); ++i) {
            if (text.substr(i, 2) == "${") {
                ++depth;
                ++i;
            } else if (text[i] == '}' && --depth == 0) {
                return i;
            }
        }
        throw std::runtime_error("unclosed ${");
    }

    std::string placeholder(std::string_view inner)
    {
        if (inner.substr(0, 3) == "KEY" && std::all_of(inner.begin() + 3, inner.end(), [](char d) {
                return std::isdigit(static_cast<unsigned char>(d));
            })) {
            auto& key = keys_[std::string(inner)];
            if (key.empty()) {
                key = unique_key("corpus-" + case_.name +
                                 (inner.size() > 3 ? "-" + std::string(inner.substr(3)) : ""));
                case_.keys.push_back(key);
            }
            return key;
        }
        if (inner.substr(0, 7) == "repeat:") {
            auto rest = inner.substr(7);
            auto colon = rest.find(':');
            if (colon == std::string_view::npos)
                throw std::runtime_error("${repeat:N:TEXT} needs N and TEXT");
            std::size_t count = std::stoul(std::string(rest.substr(0, colon)));
            std::string once = expand(rest.substr(colon + 1));
            std::string out;
            out.reserve(once.size() * count);
            for (std::size_t n = 0; n < count; ++n)
                out += once;
            return out;
        }
        throw std::runtime_error("unknown placeholder ${" + std::string(inner) + "}");
    }

    corpus_case& case_;
    std::map<std::string, std::string> keys_;
};

answer parse_answer(const std::string& word)
{
    static const std::map<std::string, answer> words{
        {"forwarded", answer::forwarded},         {"400", answer::bad_request},
        {"400-close", answer::bad_request_close}, {"413", answer::body_too_large},
        {"431", answer::header_too_large},        {"close", answer::closed}};
    auto it = words.find(word);
    if (it == words.end())
        throw std::runtime_error("unknown expectation \"" + word + "\"");
    return it->second;
}

bool is_terminal(answer a)
{
    return a != answer::forwarded && a != answer::bad_request;
}

corpus_case load_case(const fs::path& file)
{
    corpus_case c;
    c.name = file.stem().string();
    std::ifstream in(file, std::ios::binary);
    std::string line;
    std::vector<std::string> head;
    bool separated = false;
    std::string raw;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (separated)
            raw += line;
        else if (line == "--")
            separated = true;
        else
            head.push_back(line);
    }
    if (!separated)
        throw std::runtime_error("no \"--\" line between the fields and the request bytes");

    expander x(c);
    std::vector<std::string> forward_lines;
    for (auto& h : head) {
        auto end = h.find_last_not_of(" \t");
        h.erase(end == std::string::npos ? 0 : end + 1);
        if (h.empty() || h.front() == '#')
            continue;
        auto colon = h.find(':');
        if (colon == std::string::npos)
            throw std::runtime_error("field line without a colon: " + h);
        std::string name = h.substr(0, colon);
        std::string value = h.substr(colon + 1);
        if (!value.empty() && value.front() == ' ')
            value.erase(0, 1);
        if (name == "expect") {
            std::istringstream words(value);
            for (std::string w; words >> w;)
                c.expect.push_back(parse_answer(w));
        } else if (name == "forward") {
            forward_lines.push_back(value);
        } else if (name == "or-status") {
            c.or_status.push_back(std::stoi(value));
        } else if (name == "upstream-absent") {
            c.upstream_absent.push_back(lower(value));
        } else if (name == "upstream-has") {
            auto sep = value.find(':');
            if (sep == std::string::npos)
                throw std::runtime_error("upstream-has: needs NAME: VALUE");
            auto header_value = value.substr(sep + 1);
            if (!header_value.empty() && header_value.front() == ' ')
                header_value.erase(0, 1);
            c.upstream_has.emplace_back(lower(value.substr(0, sep)), header_value);
        } else if (name == "half-close") {
            c.half_close = value == "yes";
        } else if (name == "keep-alive") {
            c.keep_alive = value != "no";
        } else if (name == "pending") {
            c.pending = value;
        } else if (name != "note") {
            throw std::runtime_error("unknown field \"" + name + "\"");
        }
    }
    if (c.expect.empty())
        throw std::runtime_error("no expect: line");
    for (std::size_t i = 0; i + 1 < c.expect.size(); ++i)
        if (is_terminal(c.expect[i]))
            throw std::runtime_error("a closing expectation must come last");
    auto forwarded = std::count(c.expect.begin(), c.expect.end(), answer::forwarded);
    if (static_cast<std::size_t>(forwarded) != forward_lines.size())
        throw std::runtime_error("one forward: line is needed per forwarded answer");
    for (const auto& f : forward_lines) {
        auto sp1 = f.find(' ');
        if (sp1 == std::string::npos)
            throw std::runtime_error("forward: needs METHOD TARGET [BODY]");
        auto sp2 = f.find(' ', sp1 + 1);
        expected_forward e;
        e.method = x.expand(f.substr(0, sp1));
        e.target = x.expand(f.substr(sp1 + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp1 - 1));
        e.body = sp2 == std::string::npos ? std::string{} : x.expand(f.substr(sp2 + 1));
        c.forwards.push_back(std::move(e));
    }

    static const std::string await_marker = "${await-100}", pause_marker = "${pause}";
    std::string_view rest = raw;
    for (;;) {
        auto await_at = rest.find(await_marker), pause_at = rest.find(pause_marker);
        auto at = std::min(await_at, pause_at);
        c.segments.push_back(x.expand(rest.substr(0, at)));
        if (at == std::string_view::npos)
            break;
        c.then_await_100.push_back(at == await_at);
        rest.remove_prefix(at + (at == await_at ? await_marker : pause_marker).size());
    }
    return c;
}

struct corpus {
    std::vector<corpus_case> cases;
    std::vector<std::string> errors; // files that do not parse
};

corpus load_corpus()
{
    corpus out;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(corpus_dir()))
        if (entry.path().extension() == ".case")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    const char* only = std::getenv("IDEMGATE_CORPUS_CASE");
    for (const auto& file : files) {
        if (only && file.stem() != only)
            continue;
        try {
            out.cases.push_back(load_case(file));
        } catch (const std::exception& e) {
            out.errors.push_back(file.filename().string() + ": " + e.what());
        }
    }
    return out;
}

// What happened to one case: every way it differed from its expectation.
class case_run {
public:
    case_run(gateway_fixture& f, const corpus_case& c) : f_(f), c_(c) {}

    std::vector<std::string> run()
    {
        long before = f_.executions();
        http_connection conn(f_.port(), case_timeout);
        bool sent = send(conn);
        bool as_expected = sent && read_answers(conn);
        long executed = f_.executions() - before;
        auto forwarded = std::count(c_.expect.begin(), c_.expect.end(), answer::forwarded);
        if (executed != forwarded)
            fail("the upstream executed " + std::to_string(executed) + " request(s), expected " +
                 std::to_string(forwarded));
        if (as_expected && failures_.empty()) {
            check_connection_after(conn);
            check_keys();
        }
        return failures_;
    }

    // Follow-up checks this case made (reported in the summary, so a reader sees they ran).
    int replays_checked() const { return replays_checked_; }
    int keys_checked_unreserved() const { return keys_checked_unreserved_; }

private:
    void fail(std::string what) { failures_.push_back(std::move(what)); }

    static std::string summary(const http_response& res)
    {
        std::string out = "\"";
        out += printable(res.raw);
        out += '"';
        return out;
    }

    bool send(http_connection& conn)
    {
        for (std::size_t i = 0; i < c_.segments.size(); ++i) {
            if (i > 0 && !c_.then_await_100[i - 1]) {
                // The next bytes come later, in a segment of their own: the gateway has read what
                // came before and waits for the rest.
                std::this_thread::sleep_for(pause_between_segments);
            } else if (i > 0) {
                try {
                    auto head = conn.read_until("\r\n\r\n");
                    if (head.rfind("HTTP/1.1 100 ", 0) != 0) {
                        fail("expected HTTP/1.1 100 Continue, got \"" + printable(head) + "\"");
                        return false;
                    }
                } catch (const std::exception& e) {
                    fail(std::string("no 100 Continue: ") + e.what());
                    return false;
                }
            }
            try {
                conn.send_raw(c_.segments[i]);
            } catch (const std::exception&) {
                // The gateway may close before it read everything (a limit): read its answer.
                break;
            }
        }
        if (c_.half_close)
            conn.shutdown_send();
        return true;
    }

    bool read_answers(http_connection& conn)
    {
        std::size_t next_forward = 0;
        for (answer a : c_.expect) {
            if (a == answer::closed) {
                bool closed = conn.closed_by_peer();
                try {
                    auto res = conn.read_response();
                    if (res.status < 400 || res.status >= 500 || !is_problem(res, res.status))
                        fail("expected no answer or a 4xx problem, got " + summary(res));
                } catch (const std::exception&) {
                    // No answer: allowed for a request the client abandoned.
                }
                if (!closed)
                    fail("the gateway did not close the connection");
                return failures_.empty();
            }
            http_response res;
            try {
                res = conn.read_response();
            } catch (const std::exception& e) {
                fail(std::string("no answer: ") + e.what());
                return false;
            }
            if (a == answer::forwarded) {
                if (!check_forwarded(res, c_.forwards[next_forward++]))
                    return false;
                continue;
            }
            int status = a == answer::body_too_large ? 413 : a == answer::header_too_large ? 431 : 400;
            bool ok = is_problem(res, status);
            for (int alternative : c_.or_status)
                ok = ok || is_problem(res, alternative);
            if (!ok) {
                fail("expected a " + std::to_string(status) + " problem+json, got " + summary(res));
                return false;
            }
            if (a != answer::bad_request && !conn.closed_by_peer()) {
                fail("the gateway answered " + std::to_string(res.status) + " but left the connection open");
                return false;
            }
        }
        return true;
    }

    bool check_forwarded(const http_response& res, const expected_forward& want)
    {
        if (res.status != 201) {
            fail("expected the upstream's 201 echo, got " + summary(res));
            return false;
        }
        std::size_t before = failures_.size();
        if (res.raw.rfind("HTTP/1.1 ", 0) != 0 && res.raw.rfind("HTTP/1.0 ", 0) != 0)
            fail("the answer's status line is not HTTP/1.1 or HTTP/1.0: " + summary(res));
        auto echo = parse_object(res.body);
        auto text = [&](const char* name) {
            auto* v = echo.if_contains(name);
            return v && v->is_string() ? std::string(v->as_string()) : std::string("<missing>");
        };
        if (text("method") != want.method)
            fail("the upstream saw method \"" + printable(text("method")) + "\", expected \"" +
                 printable(want.method) + "\"");
        if (text("target") != want.target)
            fail("the upstream saw target \"" + printable(text("target")) + "\", expected \"" +
                 printable(want.target) + "\"");
        std::string body = text("body");
        if (body != want.body)
            fail("the upstream saw body \"" + printable(body) + "\", expected \"" + printable(want.body) +
                 "\"");
        boost::json::object headers;
        if (auto* h = echo.if_contains("headers"); h && h->is_object())
            headers = h->as_object();
        auto header = [&](const char* name) -> std::optional<std::string> {
            auto* v = headers.if_contains(name);
            if (!v || !v->is_string())
                return std::nullopt;
            return std::string(v->as_string());
        };
        // The test upstream joins repeated fields with ", ".
        if (header("transfer-encoding"))
            fail("the upstream got Transfer-Encoding: " + printable(*header("transfer-encoding")));
        if (auto length = header("content-length")) {
            if (*length != std::to_string(body.size()))
                fail("the upstream got Content-Length: " + printable(*length) + " for a " +
                     std::to_string(body.size()) + "-byte body");
        } else if (!body.empty()) {
            fail("the upstream got a body without Content-Length");
        }
        if (auto host = header("host"); host && host->find(',') != std::string::npos)
            fail("the upstream got several Host values: " + printable(*host));
        else if (!host)
            fail("the upstream got an HTTP/1.1 request without Host");
        for (const auto& name : c_.upstream_absent)
            if (header(name.c_str()))
                fail("the upstream got " + name + ": " + printable(*header(name.c_str())));
        for (auto [name, value] : c_.upstream_has) {
            static const std::string upstream_marker = "${UPSTREAM}";
            if (auto at = value.find(upstream_marker); at != std::string::npos)
                value.replace(at, upstream_marker.size(), f_.upstream.address());
            auto got = header(name.c_str());
            if (got != value)
                fail("the upstream got " + name + ": " + (got ? printable(*got) : "<none>") + ", expected " +
                     printable(value));
        }
        if (failures_.size() != before)
            return false;

        // A guarded request that carried a key was reserved under the fingerprint of its decoded
        // body: the same request framed plainly must replay it.
        auto key = header("idempotency-key");
        bool guarded =
            (want.target.rfind("/api/", 0) == 0 && (want.method == "POST" || want.method == "PATCH")) ||
            (want.target.rfind("/tenant/", 0) == 0 && want.method == "POST");
        if (key && guarded) {
            replay_checks_.push_back({want, *key, header("x-tenant-id").value_or("")});
            replayed_keys_.insert(*key);
        }
        return true;
    }

    // After the last answer: closed when it must be, else still in step with the client.
    void check_connection_after(http_connection& conn)
    {
        answer last = c_.expect.back();
        if (is_terminal(last))
            return;
        if (last == answer::forwarded && !c_.keep_alive) {
            if (!conn.closed_by_peer())
                fail("the gateway kept the connection open after a request without keep-alive");
            return;
        }
        http_response res;
        try {
            conn.send_raw("GET " + sentinel_target + " HTTP/1.1\r\nHost: gw.test\r\n\r\n");
            res = conn.read_response();
        } catch (const std::exception& e) {
            // After a 400 the gateway may close; after an answered request it must not.
            if (last == answer::forwarded)
                fail(std::string("the connection did not serve a next request: ") + e.what());
            return;
        }
        auto echo = parse_object(res.body);
        auto* target = echo.if_contains("target");
        if (res.status != 201 || !target || !target->is_string() || target->as_string() != sentinel_target)
            fail("the next request on the connection got " + summary(res) + " (desync)");
    }

    void check_keys()
    {
        for (const auto& r : replay_checks_) {
            std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", r.key}};
            if (!r.tenant.empty())
                headers.emplace_back("X-Tenant-ID", r.tenant);
            long before = f_.executions();
            http_response res;
            try {
                res = gateway_request(f_.port(), r.request.method, r.request.target, headers, r.request.body);
            } catch (const std::exception& e) {
                fail(std::string("the plain retry got no answer: ") + e.what());
                continue;
            }
            if (res.status != 201 || res.header("idempotent-replayed") != "true")
                fail("the same request framed with Content-Length was not replayed: " + summary(res));
            if (f_.executions() != before)
                fail("the plain retry executed again upstream");
            ++replays_checked_;
        }
        // Keys that reached no guarded execution must not have been reserved.
        for (const auto& key : c_.keys) {
            if (replayed_keys_.count(key))
                continue;
            for (const auto& path : {std::string("/tenant/orders"), std::string("/api/orders")}) {
                std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", key}};
                if (path == "/tenant/orders")
                    headers.emplace_back("X-Tenant-ID", "acme");
                http_response res;
                try {
                    res = gateway_request(f_.port(), "POST", path, headers, "{}");
                } catch (const std::exception& e) {
                    fail(std::string("a clean request with the case's key got no answer: ") + e.what());
                    continue;
                }
                if (res.status != 201 || res.header("idempotent-replayed") == "true")
                    fail("key " + key + " on " + path + " was left reserved: " + summary(res));
            }
            ++keys_checked_unreserved_;
        }
    }

    struct replay_check {
        expected_forward request;
        std::string key;
        std::string tenant;
    };

    gateway_fixture& f_;
    const corpus_case& c_;
    std::vector<std::string> failures_;
    std::vector<replay_check> replay_checks_;
    std::set<std::string> replayed_keys_;
    int replays_checked_ = 0;
    int keys_checked_unreserved_ = 0;
};

std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& l : lines)
        out += "\n  - " + l;
    return out;
}

} // namespace

TEST_SUITE_BEGIN("corpus");

TEST_CASE("every request shape in the corpus gets its expected outcome")
{
    auto loaded = load_corpus();
    INFO("corpus folder: ", corpus_dir().string());
    for (const auto& error : loaded.errors)
        FAIL_CHECK("corpus file does not parse: " << error);
    if (!std::getenv("IDEMGATE_CORPUS_CASE"))
        CHECK(loaded.cases.size() >= 60);

    gateway_options options;
    options.limits = corpus_limits;
    options.extra_routes = corpus_routes;
    gateway_fixture f(options);

    int passed = 0, failed = 0, pending_failing = 0, pending_passing = 0, replays = 0, unreserved = 0;
    for (const auto& c : loaded.cases) {
        std::vector<std::string> failures;
        case_run run(f, c);
        try {
            failures = run.run();
        } catch (const std::exception& e) {
            failures.push_back(std::string("the driver failed: ") + e.what());
        }
        replays += run.replays_checked();
        unreserved += run.keys_checked_unreserved();
        if (c.pending.empty()) {
            if (failures.empty()) {
                ++passed;
            } else {
                ++failed;
                FAIL_CHECK("corpus case " << c.name << ":" << joined(failures));
            }
        } else if (failures.empty()) {
            ++pending_passing;
            MESSAGE("pending (" << c.pending << ") corpus case " << c.name
                                << " passes now: remove its pending: line");
        } else {
            ++pending_failing;
            MESSAGE("pending (" << c.pending << ") corpus case " << c.name
                                << " still fails:" << joined(failures));
        }
    }
    MESSAGE(loaded.cases.size() << " corpus cases: " << passed << " passed, " << failed << " failed, "
                                << pending_failing << " pending and failing, " << pending_passing
                                << " pending but passing; " << replays
                                << " keyed requests replayed by a plain retry, " << unreserved
                                << " keys found unreserved after a refusal");
}

TEST_SUITE_END();
