// SPDX-License-Identifier: Apache-2.0
// The upstream-answer corpus (tests/corpus/upstream/*.case, format in its README.md): a raw TCP
// upstream sends each file's bytes back as the answer to a keyed POST through one real gateway;
// the client's status and body and whether the key was recorded (a retry replays, or executes
// again) are checked. A raw server stands in for the upstream because no real HTTP server can be
// made to send these malformed answers.
#include "gateway_fixture.hpp"
#include "idemgate/test/raw_server.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>

using namespace idemgate::test;

namespace {

namespace fs = std::filesystem;

const std::string target_prefix = "/api/upstream-corpus/";

struct answer_case {
    std::string name;
    int status = 0;
    bool recorded = false;
    bool status_only = false; // refused after its status line: a status-only record, the retry 422
    std::optional<std::string> body;
    bool keep_open = false;         // the fake upstream keeps the connection open after its bytes
    std::vector<std::string> parts; // what the upstream sends back, 50 ms apart (${pause})
};

std::string unescape(std::string_view text)
{
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (++i >= text.size())
            throw std::runtime_error("a backslash ends the text");
        switch (text[i]) {
        case 'r': out += '\r'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case '\\': out += '\\'; break;
        case 'x':
            if (i + 2 >= text.size() || !std::isxdigit(static_cast<unsigned char>(text[i + 1])) ||
                !std::isxdigit(static_cast<unsigned char>(text[i + 2])))
                throw std::runtime_error("\\x needs two hex digits");
            out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
            i += 2;
            break;
        default: throw std::runtime_error(std::string("unknown escape \\") + text[i]);
        }
    }
    return out;
}

answer_case load_case(const fs::path& file)
{
    answer_case c;
    c.name = file.stem().string();
    std::ifstream in(file, std::ios::binary);
    bool separated = false;
    bool has_status = false, has_recorded = false;
    std::string raw;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (separated) {
            raw += line;
            continue;
        }
        if (line == "--") {
            separated = true;
            continue;
        }
        if (line.empty() || line.front() == '#')
            continue;
        auto colon = line.find(':');
        if (colon == std::string::npos)
            throw std::runtime_error("field line without a colon: " + line);
        std::string name = line.substr(0, colon);
        std::string value = line.substr(colon + 1);
        if (!value.empty() && value.front() == ' ')
            value.erase(0, 1);
        if (name == "expect") {
            c.status = std::stoi(value);
            has_status = true;
        } else if (name == "recorded") {
            if (value != "yes" && value != "no" && value != "status-only")
                throw std::runtime_error("recorded: is yes, no or status-only");
            c.recorded = value == "yes";
            c.status_only = value == "status-only";
            has_recorded = true;
        } else if (name == "body") {
            c.body = unescape(value);
        } else if (name == "after") {
            if (value != "close" && value != "keep-open")
                throw std::runtime_error("after: is close or keep-open");
            c.keep_open = value == "keep-open";
        } else if (name != "note") {
            throw std::runtime_error("unknown field \"" + name + "\"");
        }
    }
    if (!separated || !has_status || !has_recorded)
        throw std::runtime_error("needs expect:, recorded: and a \"--\" line before the answer bytes");
    const std::string bytes = unescape(raw), pause = "${pause}";
    for (std::size_t from = 0;;) {
        auto at = bytes.find(pause, from);
        c.parts.push_back(bytes.substr(from, at == std::string::npos ? std::string::npos : at - from));
        if (at == std::string::npos)
            break;
        from = at + pause.size();
    }
    return c;
}

// A raw HTTP/1.1 upstream on 127.0.0.1: reads each request (header and Content-Length body),
// counts it under its target and writes the scripted bytes for that target, then closes the
// connection or keeps reading it.
class scripted_upstream {
public:
    explicit scripted_upstream(std::map<std::string, const answer_case*> scripts)
        : scripts_(std::move(scripts))
    {
    }

    std::uint16_t port() const { return server_.port(); }

    long executions(const std::string& target)
    {
        std::lock_guard lock(mutex_);
        return executions_[target];
    }

private:
    void serve(int fd)
    {
        std::string buffer;
        while (auto head = raw_server::read_request(fd, buffer)) {
            auto sp1 = head->find(' ');
            auto sp2 = head->find(' ', sp1 + 1);
            const std::string target = head->substr(sp1 + 1, sp2 - sp1 - 1);
            const answer_case* script = nullptr;
            {
                std::lock_guard lock(mutex_);
                ++executions_[target];
                auto it = scripts_.find(target);
                script = it == scripts_.end() ? nullptr : it->second;
            }
            static const std::vector<std::string> not_found{
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"};
            const auto& parts = script ? script->parts : not_found;
            bool sent = true;
            for (std::size_t i = 0; sent && i < parts.size(); ++i) {
                if (i > 0)
                    std::this_thread::sleep_for(50ms); // the gateway has read what came so far
                sent = ::send(fd, parts[i].data(), parts[i].size(), MSG_NOSIGNAL) ==
                       static_cast<ssize_t>(parts[i].size());
            }
            if (!sent)
                return;
            if (!script || !script->keep_open) {
                // The FIN, then read until the gateway closes: nothing left unread turns the end into
                // a reset.
                ::shutdown(fd, SHUT_WR);
                char sink[512];
                while (::recv(fd, sink, sizeof sink, 0) > 0) {
                }
                return;
            }
        }
    }

    std::map<std::string, const answer_case*> scripts_;
    std::mutex mutex_;
    std::map<std::string, long> executions_;
    // Last: its threads stop before the members they use are gone.
    raw_server server_{"scripted upstream", 64, [this](int fd, int) { serve(fd); }};
};

// The status line as received, well formed: "HTTP/1.1 NNN " then a reason (maybe empty).
bool well_formed_status_line(const http_response& res)
{
    auto eol = res.raw.find("\r\n");
    auto line = res.raw.substr(0, eol);
    return eol != std::string::npos && line.size() >= 13 && line.rfind("HTTP/1.1 ", 0) == 0 &&
           line.substr(9, 3) == std::to_string(res.status) && line[12] == ' ';
}

std::vector<std::string> run_case(const answer_case& c, std::uint16_t port, scripted_upstream& upstream)
{
    std::vector<std::string> failures;
    auto fail = [&](std::string what) { failures.push_back(std::move(what)); };
    const std::string target = target_prefix + c.name;
    const std::string key = unique_key("upstream-corpus-" + c.name);
    const std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", key}};

    auto first = gateway_request(port, "POST", target, headers, "{}");
    if (first.status != c.status)
        fail("the client got " + std::to_string(first.status) + ", expected " + std::to_string(c.status) +
             ": " + first.raw.substr(0, 300));
    if (!well_formed_status_line(first))
        fail("the status line is not well formed: " + first.raw.substr(0, first.raw.find('\n')));
    if (c.body && first.body != *c.body)
        fail("the client got the body \"" + first.body + "\", expected \"" + *c.body + "\"");
    if (c.status == 502 && !is_problem(first, 502))
        fail("the 502 is not a problem+json");
    if (upstream.executions(target) != 1)
        fail("the upstream executed " + std::to_string(upstream.executions(target)) + " time(s), expected 1");

    auto retry = gateway_request(port, "POST", target, headers, "{}");
    long executed = upstream.executions(target);
    if (c.recorded) {
        if (retry.status != c.status || retry.header("idempotent-replayed") != "true")
            fail("the retry was not a replay: " + retry.raw.substr(0, 300));
        if (!well_formed_status_line(retry))
            fail("the replay's status line is not well formed: " + retry.raw.substr(0, retry.raw.find('\n')));
        if (retry.body != first.body)
            fail("the replay's body differs from the first answer's");
        if (executed != 1)
            fail("the retry of a recorded answer executed again upstream");
    } else if (c.status_only) {
        if (!is_problem(retry, 422) ||
            parse_object(retry.body)["type"] != "/.well-known/idempotency/problems/answer-not-replayable")
            fail("the retry of an answer that began was not refused 422 answer-not-replayable: " +
                 retry.raw.substr(0, 300));
        if (executed != 1)
            fail("the retry of an answer that began executed again upstream");
    } else {
        if (retry.header("idempotent-replayed") == "true")
            fail("the retry was replayed: the answer was recorded");
        if (executed != 2)
            fail("the retry of an answer not recorded executed " + std::to_string(executed - 1) +
                 " time(s), expected once");
    }
    return failures;
}

} // namespace

TEST_SUITE_BEGIN("corpus");

TEST_CASE("every upstream answer in the corpus gets its expected status and record")
{
    const fs::path dir = fs::path(IDEMGATE_SOURCE_DIR) / "tests" / "corpus" / "upstream";
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".case")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::vector<answer_case> cases;
    for (const auto& file : files) {
        try {
            cases.push_back(load_case(file));
        } catch (const std::exception& e) {
            FAIL_CHECK("upstream corpus file " << file.filename().string()
                                               << " does not parse: " << e.what());
        }
    }
    CHECK(cases.size() >= 15);
    std::map<std::string, const answer_case*> scripts;
    for (const auto& c : cases)
        scripts[target_prefix + c.name] = &c;
    scripted_upstream upstream(scripts);

    gateway_options options;
    // An answer the gateway waited on until this timeout would come back as 504, not 502.
    options.timeouts = "  upstream_response: 3s\n";
    auto store = make_store(options);
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), options));
    wait_until_ready(gateway);

    int passed = 0;
    for (const auto& c : cases) {
        std::vector<std::string> failures;
        try {
            failures = run_case(c, gateway.port(), upstream);
        } catch (const std::exception& e) {
            failures.push_back(std::string("the driver failed: ") + e.what());
        }
        if (failures.empty()) {
            ++passed;
            continue;
        }
        std::string text;
        for (const auto& f : failures)
            text += "\n  - " + f;
        FAIL_CHECK("upstream corpus case " << c.name << ":" << text);
    }
    MESSAGE(cases.size() << " upstream answers: " << passed << " as expected");
}

TEST_CASE("an answer refused for its framing went by its status: on_status hold holds the key")
{
    answer_case gzip;
    gzip.name = "held";
    gzip.keep_open = true;
    gzip.parts = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00"};
    const std::string target = target_prefix + gzip.name;
    scripted_upstream upstream({{target, &gzip}});

    gateway_options options;
    // The answer began (HTTP/1.1 200): its status decides, here held by on_status.
    options.idempotency_extra = "      on_status: { \"200\": hold }\n";
    auto store = make_store(options);
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), options));
    wait_until_ready(gateway);

    const std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", unique_key("held")}};
    CHECK(is_problem(gateway_request(gateway.port(), "POST", target, headers, "{}"), 502));
    auto logged = gateway.process().wait_for_line(
        [](const std::string& l) {
            return l.find("upstream answer refused") != std::string::npos &&
                   l.find("Transfer-Encoding") != std::string::npos;
        },
        5s);
    CHECK(logged);
    auto retry = gateway_request(gateway.port(), "POST", target, headers, "{}");
    CHECK(is_problem(retry, 409));
    CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(upstream.executions(target) == 1);
}

TEST_CASE("bytes an upstream sends after an answer's body are never read as the next answer")
{
    // An answer with more bytes after its body: in the same segment as the head, or with the rest
    // of the body 50 ms later. The connection must not go back to the pool with them: a GET (sent
    // on a recently used connection without a check) would read them as its own answer.
    answer_case whole;
    whole.name = "stray-whole";
    whole.keep_open = true;
    whole.parts = {
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"};
    answer_case split;
    split.name = "stray-split";
    split.keep_open = true;
    split.parts = {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\no",
                   "kHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray"};
    answer_case next;
    next.name = "next";
    next.keep_open = true;
    next.parts = {"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnext"};
    scripted_upstream upstream({{target_prefix + whole.name, &whole},
                                {target_prefix + split.name, &split},
                                {target_prefix + next.name, &next}});

    gateway_options options;
    auto store = make_store(options);
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), options));
    wait_until_ready(gateway);

    // One client connection: every request is served by the same gateway thread and its pool.
    http_connection client(gateway.port());
    for (const auto* first : {&whole, &split, &whole, &split}) {
        CAPTURE(first->name);
        auto a = client.request("GET", target_prefix + first->name);
        CHECK(a.status == 200);
        CHECK(a.body == "ok");
        auto b = client.request("GET", target_prefix + next.name);
        CHECK(b.status == 200);
        CHECK(b.body == "next");
    }
    CHECK(upstream.executions(target_prefix + next.name) == 4);
}

TEST_SUITE_END();
